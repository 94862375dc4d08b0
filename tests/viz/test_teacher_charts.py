"""The charts and sentences a teacher tripped over (issue 20, item 6): each as a check on
the figure or the text, so the slip cannot come back unseen."""

import math
import re

import numpy as np
import pandas as pd
import pytest

from kmviz import families
from kmviz.trace import Trace
from kmviz.viz import convergence_figure
from kmviz.viz.convergence import dual_gap_figure, iteration_dtick
from kmviz.viz.data import count_bins, count_distribution_figure
from kmviz.viz._theme import plural

TEX = re.compile(r"[_^]\{|\$|\\[a-z]+")


def _ticks(axis, x0, x1):
    return len(np.arange(axis.tick0 or 0, x1 + 1e-9, axis.dtick))


# --------------------------------------------------------------------- convergence ticks
def test_convergence_x_ticks_stay_few_and_level_in_four_panels():
    t = Trace(solver="x")
    for k in range(22):  # iterations 0..21: "0 1 2 ... 21" in four narrow panels overlapped
        t.record(objective=1.0 / (k + 1), train_rmse=1.0, train_nrmse=0.2,
                 validation_nrmse=0.3)
    fig = convergence_figure({"run": t})
    axes = [fig.layout[k] for k in fig.layout if k.startswith("xaxis")]
    assert len(axes) == 4
    for ax in axes:
        assert ax.tickangle == 0
        assert float(ax.dtick).is_integer() and ax.dtick >= 5
        assert _ticks(ax, 0, 21) <= 6


def test_iteration_dtick_is_whole_and_bounded():
    for span in (1, 3, 9, 21, 50, 99, 200, 1234):
        for n in (1, 2, 4):
            step = iteration_dtick(span, n)
            assert step == int(step) >= 1
            assert span / step <= max(5, 20 // n)
    assert iteration_dtick(3, 4) == 1  # short runs keep every iteration


# --------------------------------------------------------------------- dual GD legends
@pytest.mark.parametrize("n_methods", [1, 3, 5])
def test_dual_gap_legends_fit_inside_the_figure(n_methods):
    df = pd.DataFrame({"iteration": np.arange(30), "gap": np.logspace(0, -6, 30),
                       "phase": ["I-A"] * 10 + ["I-B"] * 10 + ["II-A"] * 10})
    fig = dual_gap_figure({f"a rather long method name number {k}": df
                           for k in range(n_methods)}, title="t", subtitle="item")
    lay = fig.layout
    plot_h = lay.height - lay.margin.t - lay.margin.b
    # legends sit below the plot (y < 0, anchored at their top), in the bottom margin:
    # each entry about 20 px plus its title, and the second below the first
    top1 = -lay.legend.y * plot_h
    bottom1 = top1 + 20 * (n_methods + 1)
    top2 = -lay.legend2.y * plot_h
    assert lay.legend.yanchor == lay.legend2.yanchor == "top"
    assert top1 >= 45  # below the x axis's tick labels and title
    assert top2 >= bottom1
    assert top2 + 2 * 20 + 10 <= lay.margin.b  # title row and a row of phases, not clipped


# --------------------------------------------------------------------- Lanczos legend
def test_lanczos_legend_has_no_tex_markup():
    from kmviz.km.figures.lanczos import lanczos_bounds_figure, ritz_values_figure

    m = np.arange(1, 6)
    diag = pd.DataFrame({"m": m, "beta": 1.0 / m, "beta_q_min": 0.1 / m, "max_err": 0.5 / m,
                         "min_err": 0.05 / m, "dominant_err": 0.01 / m,
                         "lemma3_bound": 2.0 / m})
    fig = lanczos_bounds_figure(diag, delta=0.1, m_chosen=3)
    names = [t.name for t in fig.data]
    assert len(names) == 7
    for name in names:
        assert not TEX.search(name), name
    ritz = ritz_values_figure([1.0, 2.0], pd.DataFrame({"m": [1, 2], "value": [1.5, 1.9]}))
    for t in ritz.data:
        assert not TEX.search(t.name) and not TEX.search(t.hovertemplate or "")


# --------------------------------------------------------------------- implications prose
def test_heldout_sentence_never_says_nan():
    from kmviz.km.analysis import heldout_sentence

    nan = float("nan")
    text = heldout_sentence({"confidence": 0.0, "lift": nan, "lift_lo": nan,
                             "lift_hi": nan, "heldout_n": 120})
    assert "nan" not in text.lower()
    assert "lift not defined" in text and "120 held-out ratings" in text
    full = heldout_sentence({"confidence": 0.5, "lift": 1.25, "lift_lo": 1.0,
                             "lift_hi": 1.5, "heldout_n": 1000})
    assert "lift 1.25 (95% interval 1.00-1.50" in full and "1,000" in full
    assert "nan" not in heldout_sentence({"confidence": nan, "lift": 2.0,
                                          "heldout_n": 3}).lower()


# --------------------------------------------------------------------- axis titles
@pytest.mark.parametrize("name", families.names())
def test_convergence_axis_titles_name_a_quantity(name):
    """A y-axis title names what is drawn, not only equation numbers ("(3.40) / (3.58)")."""
    labels = families.get(name).figure_options("convergence").get("labels", {})
    for column, value in labels.items():
        y = value[1] if isinstance(value, (tuple, list)) and len(value) > 1 else str(value)
        assert re.sub(r"\(\d+(\.\d+)*\)|[\s/]", "", y), (column, y)


def test_kmc_objective_axis_is_titled_by_the_metric():
    t = Trace(solver="kmc")
    for k in range(3):
        t.record(objective=1.0 / (k + 1))
    opts = families.get("kmc").figure_options("convergence")
    fig = convergence_figure({"run": t}, metrics=["objective"], **opts)
    assert fig.layout.yaxis.title.text == "objective value"


# --------------------------------------------------------------------- influence bars
def test_tied_influence_scores_share_a_bar_so_bars_differ():
    from kmviz.km.figures import influence_figure

    scores = np.r_[np.ones(40), np.linspace(0.1, 0.9, 30)]  # 40 items with ς = 1
    fig = influence_figure(scores, top=15)
    x = list(fig.data[0].x)
    assert len(x) == 15 and len(set(x)) == 15  # not 15 bars of one length
    assert x[0] == 1.0 and fig.data[0].y[0].endswith("+39 tied")
    assert "tied items share a bar" in fig.layout.title.text


# --------------------------------------------------------------------- count histograms
def test_count_bins_are_one_per_count_when_few():
    left, right, number = count_bins([3, 3, 4, 7, 7, 7])
    assert list(left) == [3, 4, 7] and list(right - left) == [1, 1, 1]
    assert list(number) == [2, 1, 3]
    left, right, number = count_bins(np.arange(1, 1001))
    assert len(left) <= 50 and number.sum() == 1000
    assert len(set(right - left)) == 1  # equal whole-number widths


def test_constant_counts_are_said_not_drawn_as_a_block():
    fig = count_distribution_figure(np.full(185, 57), what="country")
    assert fig.layout.title.text == "Every country: 57 ratings"
    assert list(fig.data[0].x) == [57] and list(fig.data[0].y) == [185]
    assert fig.layout.yaxis.title.text == "number of countries"
    one = count_distribution_figure([506], what="target")
    assert one.layout.title.text == "The one target: 506 ratings"
    spread = count_distribution_figure([1, 2, 2, 5], what="user")
    assert spread.layout.title.text.startswith("Ratings per user (median")
    assert list(spread.data[0].x) == [1, 2, 5]


def test_plural_of_dataset_nouns():
    assert [plural(w) for w in ("user", "item", "country", "year", "tract", "target",
                                "movie", "box")] == [
        "users", "items", "countries", "years", "tracts", "targets", "movies", "boxes"]


def test_ratings_carry_their_nouns_through_subsets_and_splits():
    from kmviz.data import Ratings, make_split

    r = Ratings.from_arrays(np.repeat(np.arange(6), 4), np.tile(np.arange(4), 6),
                            np.arange(24.0))
    assert r.nouns == ("user", "item")
    r.nouns = ("country", "year")
    assert r.subset(np.arange(5)).nouns == ("country", "year")
    split = make_split(r, seed=0)
    assert split.train.nouns == ("country", "year")
    with pytest.raises(ValueError, match="nouns must be two"):
        Ratings(r.users, r.items, r.values, n_users=6, n_items=4, r_min=0, r_max=23,
                nouns=("country",))


@pytest.mark.parametrize("name, nouns", [("gapminder", ("country", "year")),
                                         ("boston", ("tract", "target")),
                                         ("km-toy", ("user", "item"))])
def test_catalogue_sets_the_dataset_nouns(name, nouns):
    from kmviz.data import get_dataset

    assert tuple(get_dataset(name).nouns) == nouns


def test_gapminder_loads_with_countries_and_years():
    from kmviz.data import load

    r = load("gapminder")
    assert r.nouns == ("country", "year")
    fig = count_distribution_figure(r.user_counts(), what=r.nouns[0])
    assert "countr" in fig.layout.title.text and "user" not in fig.layout.title.text


# --------------------------------------------------------------------- sidebar, titles
def test_family_section_titles_fit_the_sidebar():
    for fam in families.all_families():
        assert 0 < len(fam.section_title()) <= families.SHORT_TITLE_MAX, fam.section_title()


def test_ocmf_objective_rows_have_their_own_titles():
    from kmviz.ocmf.analysis import objective_panel_title

    loss = objective_panel_title(["objective", "l_plus", "l_minus"])
    reg = objective_panel_title(["reg_w", "reg_h"])
    assert loss != reg and "loss" in loss and "regularizer" in reg
    t = Trace(solver="ocmf")
    t.record(objective=1.0, reg_w=0.5)
    fig = convergence_figure({"run": t}, metrics=["reg_w"], title=reg)
    assert fig.layout.title.text == reg


# --------------------------------------------------------------------- gFM spectrum
def test_gfm_spectrum_pairs_each_learned_eigenvalue_with_the_true_one_it_matches():
    from kmviz.gfm.analysis import match_spectra

    learned, true = match_spectra([-1.01, 0.99], [1.0, -1.0])
    assert list(np.sign(learned)) == list(np.sign(true))
    assert list(true) == [1.0, -1.0]  # by |value|, positive first on ties
    learned, true = match_spectra([2.0, -0.5, 0.1], [-2.1, 1.9])  # extra learned: beside 0
    assert list(true) == sorted(true, key=lambda v: (-abs(v), -v))
    pairs = dict(zip(true, learned))
    assert pairs[1.9] == 2.0 and pairs[0.0] == 0.1 and pairs[-2.1] == -0.5


# --------------------------------------------------------------------- runs, CLI, labels
def test_unique_labels_tell_runs_of_one_name_apart():
    from kmviz.ui.views import unique_labels

    opts = {"20261126-1-aaaaaaaa": "KM · saved 2026-11-26 14:00",
            "20261126-2-bbbbbbbb": "KM · saved 2026-11-26 14:00",
            "20261126-3-cccccccc": "other"}
    out = unique_labels(opts)
    assert len(set(out.values())) == 3
    assert out["20261126-3-cccccccc"] == "other"
    assert out["20261126-1-aaaaaaaa"].endswith("aaaaaaaa")


def test_runs_tables_show_each_familys_own_metrics_without_empty_cells():
    from kmviz.ui import runs as ru

    df = pd.DataFrame({
        "run_id": ["a", "b", "c"], "label": ["km run", "ocmf run", "km 2"],
        "family": ["km", "ocmf", "km"], "dataset": ["d"] * 3, "status": ["max_iter"] * 3,
        "n_iter": [2, 3, 4], "duration_s": [1.0, 2.0, 3.0],
        "created": ["2026-11-26T14:00:00Z"] * 3, "note": ["", "", ""],
        "validation_nrmse": [0.2, math.nan, 0.3], "test_nrmse": [0.25, math.nan, 0.3],
        "train_nrmse": [0.1, math.nan, 0.2], "test_rmse": [1.0, math.nan, 1.1],
        "validation_precision_at_5": [math.nan, 0.3, math.nan],
        "test_precision_at_5": [math.nan, 0.31, math.nan],
        "test_ndcg_at_5": [math.nan, 0.4, math.nan]})
    parts = ru.family_tables(df)
    assert [t for t, _ in parts] == ["KM (2)", "OCMF (1)"]
    for _, part in parts:
        shown = ru.table(part)
        metrics = [c for c in shown if c in ru.metric_columns(df)]
        assert metrics and not shown[metrics].isna().any().any()  # no "None" cells
    assert "validation_precision_at_5" in ru.table(parts[1][1])
    assert "validation_nrmse" not in ru.table(parts[1][1])


def test_runs_list_fits_the_terminal_width(capsys, monkeypatch, tmp_path):
    from kmviz.cli import main
    from kmviz.runs import RunStore

    store = RunStore(tmp_path / "store")
    for name in ("km", "ocmf", "kmc"):
        fam = families.get(name)
        trace = Trace(f"{name}.x", {})
        trace.record(objective=1.0)
        trace.stop_reason = "max_iter"
        store.save(name, trace, {}, dataset="a dataset with a rather long name, for class",
                   params={}, metrics={m: 0.5 for m in fam.metrics},
                   label=f"a long run name for the {name} family, saved for class")
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["runs", "list", "--dir", str(store.path)]) == 0
    out = capsys.readouterr().out
    table = out.split("\n\n")[0].splitlines()
    assert max(len(line) for line in table) <= 100
    assert table[0].split()[:3] == ["RUN_ID", "CREATED", "FAMILY"]
    ids = set(store.list()["run_id"])
    assert {line.split()[0] for line in table[2:]} == ids  # run ids whole, to copy
    assert "val_nrmse 0.5" in out and "val_precision_at_5 0.5" in out  # each its own
    assert "Narrowed to 100 columns" in out
    monkeypatch.delenv("COLUMNS")  # piped (not a terminal): every column
    assert main(["runs", "list", "--dir", str(store.path)]) == 0
    assert "TEST_NDCG_AT_5" in capsys.readouterr().out.splitlines()[0]


# --------------------------------------------------------------------- warm-up words
def test_compile_message_says_loading_when_the_kernels_are_on_disk():
    from kmviz.ui.views import compile_message

    status = {"state": "compiling", "title": "KM", "seconds": 2.0, "after": [],
              "before": [], "error": "", "cached": True}
    assert compile_message(status).startswith("Loading the compiled Numba kernels of KM")
    assert compile_message({**status, "cached": False}).startswith("Compiling")


def test_cached_on_disk_looks_in_numba_cache_dir(tmp_path, monkeypatch):
    from pathlib import Path

    import kmviz.km
    from kmviz.ui.warmup import cached_on_disk

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert not cached_on_disk("kmviz.km.warmup")
    folder = Path(kmviz.km.__file__).parent.resolve()
    place = tmp_path / folder.relative_to(folder.anchor)
    place.mkdir(parents=True)
    (place / "_kernels.f-10.py312.nbi").write_bytes(b"")
    assert cached_on_disk("kmviz.km.warmup")


# --------------------------------------------------------------------- memory
def test_release_memory_runs_anywhere():
    from kmviz.ui.memory import release_memory

    assert release_memory() in (True, False)
