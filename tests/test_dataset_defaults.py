"""Each family's defaults for a dataset (Family.defaults_for, Family.dataset_defaults): the
rules the families state, the measured settings on top, refusals before any fit."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from kmviz import families
from kmviz.data import Ratings, load, suggested_settings
from kmviz.data.catalogue import one_class_defaults

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _stars(n_users=30, n_items=3000, seed=0):
    rng = np.random.default_rng(seed)
    u = rng.integers(0, n_users, 12_000)
    i = np.concatenate([np.arange(n_items), rng.integers(0, n_items, 12_000 - n_items)])
    return Ratings.from_arrays(u, i, rng.integers(1, 11, 12_000) / 2.0, r_min=0.5,
                               r_max=5.0, duplicates="first")


def test_kernel_mc_centres_ratings_and_factors_a_large_side():
    found = families.get("kmc").dataset_defaults(_stars())
    p = found.params
    assert p["center"] is True and p["mu"] == 3.0 and p["add_constant"] is True
    assert p["kernel_rank"] == 300 and p["tol"] == 1e-3
    assert "rank-300" in found.note


def test_kernel_mc_keeps_the_thesis_defaults_on_centred_data_with_features():
    ratings = load("planted-lowrank")
    p = families.get("kmc").dataset_defaults(ratings).params
    assert p == families.get("kmc").default_params()


def test_measured_settings_go_on_top_of_the_rule():
    fam = families.get("kmc")
    found = fam.dataset_defaults(load("gapminder"), "gapminder")
    for k, v in suggested_settings("gapminder", "kmc").params.items():
        assert found.params[k] == v
    assert "measured on gapminder" in found.note


def test_one_class_threshold_only_on_graded_values():
    assert one_class_defaults(_stars()).params == {"threshold": 4.0}
    implicit = load("planted-lowrank").binarize(0.0)
    assert implicit.implicit
    assert one_class_defaults(implicit).params == {"threshold": None}
    graded = load("gapminder")
    t = one_class_defaults(graded).params["threshold"]
    assert np.mean(np.asarray(graded.values) >= t) == pytest.approx(0.25, abs=0.02)
    for name in ("ocmf", "similarity"):
        assert families.get(name).dataset_defaults(implicit).params["threshold"] is None


@pytest.mark.parametrize("name", ["km", "ocmf", "similarity"])
def test_one_item_data_is_refused_before_the_click(name):
    with pytest.raises(ValueError, match="1 item"):
        families.get(name).dataset_defaults(load("boston"), "boston")


def test_every_family_gives_defaults_its_estimator_accepts():
    for ratings, name in ((load("planted-km"), "planted-km"), (_stars(), None)):
        for fam in families.all_families():
            try:
                found = fam.dataset_defaults(ratings, name)
            except ValueError:
                continue
            fam.make(found.params)._validate_params()
            assert found.note


def _bench(name="defaults_table"):
    """The module bench/<area>/<name>.py (the benches import their bench/_common.py)."""
    path, = BENCH.glob(f"*/{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    dirs = [str(BENCH), str(path.parent)]      # the shared modules, the area's own
    sys.path[:0] = dirs
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for d in dirs:
            sys.path.remove(d)
    return module


#: The small catalogue sets (every one but MovieLens latest-small, whose cells take 7-30 s
#: each and are left to ``python bench/data/defaults_table.py``).
SMALL_SETS = ("km-toy", "planted-km", "planted-lowrank", "gapminder", "boston",
              "planted-relations", "planted-towers")
#: Cells whose fit takes more than about a second (slow-marked).
SLOW_CELLS = {("gapminder", "kmc")}
def _marks(cell):
    return [pytest.mark.slow] if cell in SLOW_CELLS else []


CELLS = [pytest.param(d, f, marks=_marks((d, f))) for d in SMALL_SETS for f in families.names()]
#: Cells where the family's best measured settings only tie the baseline, and the note the
#: Train page shows says so (OCMF on planted-relations: the planted pairwise rules are what
#: popularity among an item's fans already ranks): within 2 % of it, not below.
TIES = {("planted-relations", "ocmf"): "about as well as the popularity ranking"}


def test_the_small_cells_are_every_cell_of_the_table_but_movielens():
    from kmviz.data import list_datasets

    table = {(e.name, f) for e in list_datasets() for f in families.names()}
    assert {tuple(c.values) for c in CELLS} == {c for c in table if c[0] != "movielens-small"}


@pytest.mark.parametrize("dataset,family", CELLS)
def test_train_page_defaults_beat_the_baseline_on_small_sets(dataset, family):
    """Each cell of bench/data/defaults_table.py on a small set: the Train page's defaults fit
    in 60 s and beat the baseline, or the family refuses the data before any fit."""
    row = _bench().cell(family, dataset)
    if row["passed"] is None:
        # Boston has one item; planted-towers' values are all 1 (a family of values)
        assert row["note"].startswith(("cannot use: it has 1 item",
                                       "cannot use: every value is 1")), row
        assert "fit s" not in row
    elif (dataset, family) in TIES:
        assert row["model"] >= 0.98 * row["baseline"], row
        note = families.dataset_suggestions(dataset)[family].note
        assert TIES[(dataset, family)] in note, note
    else:
        assert row["passed"], row


def test_noise_law_of_p_at_5_matches_random_rankings():
    """bench/defaults_table.chance_p5 (the law every ranking's p@5 follows on km-toy) against
    random rankings drawn on the same split: mean and spread agree."""
    from kmviz import metrics
    from kmviz.data.splits import make_split

    bench = _bench()
    ratings = load("km-toy")
    threshold = families.get("ocmf").dataset_defaults(ratings, "km-toy").params["threshold"]
    split = make_split(ratings)
    mean, sd = bench.chance_p5(split.train, split.test, threshold)
    tr, te = split.train.binarize(threshold), split.test.binarize(threshold)
    relevant = [set() for _ in range(ratings.n_users)]
    for u, i in zip(np.asarray(te.users), np.asarray(te.items)):
        relevant[int(u)].add(int(i))
    rng = np.random.default_rng(0)
    draws = [metrics.precision_at_k(metrics.rank_items(
        rng.random((ratings.n_users, ratings.n_items)), 5, exclude=tr.csr), relevant, 5)
        for _ in range(600)]
    assert 0 < sd < mean
    assert np.mean(draws) == pytest.approx(mean, abs=3 * sd / np.sqrt(600))
    assert np.std(draws) == pytest.approx(sd, rel=0.15)


def _settings_bench():
    return _bench("small_set_settings")


def test_measured_small_set_settings_are_the_train_page_defaults():
    """Each (dataset, family) the selection bench measures has catalogue settings, and only
    those small-set cells do (besides the settings measured on the real sets)."""
    measured = set(_settings_bench().GRIDS) | {("gapminder", "kmc")}  # kmc: kmc_gapminder.py
    for d in SMALL_SETS:
        for f in families.names():
            assert (suggested_settings(d, f) is not None) == ((d, f) in measured), (d, f)


@pytest.mark.slow
@pytest.mark.parametrize("dataset,family", [c for c in _settings_bench().GRIDS
                                             if c[0] in SMALL_SETS])
def test_selection_on_validation_picks_the_catalogue_settings(dataset, family):
    """The grid point bench/data/small_set_settings.py chooses on validation parts (never a test
    part) is what the Train page starts from on that small set (1-40 s a cell; MovieLens's
    cell takes minutes and is left to the bench)."""
    rows = _settings_bench().grid_rows(dataset, family)
    chosen = next(r for r in rows if r.get("chosen"))
    found = families.get(family).dataset_defaults(load(dataset), dataset).params
    for k, v in chosen["params"].items():
        assert found[k] == v, (k, chosen, found)


def test_planted_set_settings_hold_for_any_seed_of_that_shape_only():
    from kmviz.data import get_dataset
    from kmviz.data.catalogue import (PLANTED_KM_SHAPE, PLANTED_LOWRANK_SHAPE,
                                      PLANTED_TOWERS_SHAPE)

    for name, shape in (("planted-km", PLANTED_KM_SHAPE),
                        ("planted-lowrank", PLANTED_LOWRANK_SHAPE),
                        ("planted-towers", PLANTED_TOWERS_SHAPE)):
        defaults = get_dataset(name).parameters
        assert all(defaults[k] == v for k, v in shape.items())  # the catalogue's own shape
        for family in ("ocmf", "similarity"):
            assert suggested_settings(name, family, {"random_state": 7}) is not None
            assert suggested_settings(name, family, {"n_users": 50}) is None


@pytest.mark.parametrize("family", ["ocmf", "similarity"])
def test_model_p_at_5_follows_the_protocol_of_the_popularity_baseline(family):
    """The one-class cells compare like with like: the model's own evaluate() equals the
    bench's protocol (kmviz.metrics.rank_items with the training positives at the same
    threshold left out, hits / 5 over users with a test positive) applied to its scores."""
    from kmviz import metrics
    from kmviz.data.splits import make_split

    ratings = load("planted-km")
    params = families.get(family).dataset_defaults(ratings, "planted-km").params
    split = make_split(ratings)
    model = families.get(family).make({**params, "random_state": 0}).fit(split.train)
    thr = params["threshold"]
    assert thr is not None and model.threshold == thr
    tr, te = split.train.binarize(thr), split.test.binarize(thr)
    ranked = metrics.rank_items(model.user_factors_ @ model.item_factors_.T, 5,
                                exclude=tr.csr)
    relevant = [set() for _ in range(ratings.n_users)]
    for u, i in zip(np.asarray(te.users), np.asarray(te.items)):
        relevant[int(u)].add(int(i))
    assert model.evaluate(split.test)["precision_at_5"] == pytest.approx(
        metrics.precision_at_k(ranked, relevant, 5), abs=1e-12)
