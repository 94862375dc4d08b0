"""The one bound mechanism (kmviz._memory) refuses before it allocates, for every family,
and similarity's estimate covers what its fits allocate (issue 35, defects 9, 12, 15)."""

import gc
import tracemalloc
import warnings

import numpy as np
import pytest

import kmviz
from kmviz import _memory, families
from kmviz._memory import FitTooLargeError
from kmviz.data import load
from kmviz.data.splits import make_split
from kmviz.exceptions import DataError, InvalidParameterError


@pytest.fixture(autouse=True)
def _limit(monkeypatch):
    monkeypatch.delenv(_memory.ENV_VAR, raising=False)
    kmviz.set_memory_limit("2G")
    yield
    kmviz.set_memory_limit(None)


def _train(fam, scale=1):
    spec = dict(fam.contract_data)
    source = spec.pop("source")
    for key in ("n_users", "n_items"):
        if key in spec:
            spec[key] = int(spec[key]) * scale
    whole = load(source, **spec)
    return make_split(whole, val_size=0.1, test_size=0.2, seed=0).train


def _traced(call):
    """(what ``call()`` raised or None, its peak of traced allocations in bytes)."""
    gc.collect()
    tracemalloc.start()
    try:
        try:
            call()
            raised = None
        except Exception as exc:  # noqa: BLE001 - the caller checks it
            raised = exc
        return raised, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("name", families.names())
@pytest.mark.parametrize("fraction", [0.0, 0.5, 0.999])
def test_every_family_refuses_over_the_limit_before_allocating(name, fraction):
    """For any limit below a fit's estimate the fit is refused with FitTooLargeError, and
    the refused call allocates a small constant (its message), not a share of the work."""
    fam = families.get(name)
    train = _train(fam, scale=4)
    model = fam.make(fam.quick_params)
    needed = _memory.check_fit_memory(model, model._validate_params(), train)
    assert needed > _memory.OVERHEAD_BYTES, f"{name} gives no memory estimate"
    work = needed - _memory.OVERHEAD_BYTES
    kmviz.set_memory_limit(max(1, int(needed * fraction)))
    model = fam.make(fam.quick_params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # once untraced: a first fit in a fresh process imports the modules it uses lazily
        # (1.25 MB for KM when this file runs alone), which is not the fit's work
        with pytest.raises(FitTooLargeError):
            fam.make(fam.quick_params).fit(train)
        raised, peak = _traced(lambda: model.fit(train))
    assert isinstance(raised, FitTooLargeError), raised
    assert raised.needed == needed and raised.limit < needed
    assert not hasattr(model, "trace_")
    assert peak < min(64 * 1024, work / 4), (name, peak, work)


SIMILARITY_CASES = [
    dict(k=1500),                                        # the Gramians dominate
    dict(k=400, solver="sogram", sample_ratio=0.2, learning_rate=1e-3),
    dict(k=300, solver="gd-diag"),
    dict(k=16, user_tower="mlp:256,256", item_tower="linear", side_features="both"),
    dict(k=8, imputed=0.0),
]


@pytest.mark.slow
@pytest.mark.parametrize("settings", SIMILARITY_CASES, ids=lambda s: ",".join(map(str, s.values())))
def test_similarity_estimate_covers_what_a_fit_allocates(settings):
    """The traced peak of a real fit is at most the estimate (k x k Gramians included:
    they were left out, so k = 20,000 passed a 3 GiB limit and died at 3.2 GB)."""
    from kmviz.similarity import SimilarityLearning
    from kmviz.similarity.synthetic import make_planted_towers

    ratings, _ = make_planted_towers(100, 80, random_state=0)
    model = SimilarityLearning(max_iter=2, random_state=0, **settings)
    needed = _memory.check_fit_memory(model, model._validate_params(), ratings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raised, peak = _traced(lambda: model.fit(ratings))
    assert raised is None, raised
    assert peak <= needed, (peak, needed)
    assert peak >= needed / 40   # and it is not wildly above what is used


def test_similarity_k_20000_is_refused_by_its_gramians():
    from kmviz.similarity import SimilarityLearning
    from kmviz.similarity.synthetic import make_planted_towers

    ratings, _ = make_planted_towers(100, 80, random_state=0)
    kmviz.set_memory_limit("3G")
    model = SimilarityLearning(k=20_000, max_iter=1)
    raised, peak = _traced(lambda: model.fit(ratings))
    assert isinstance(raised, FitTooLargeError)
    assert "k x k Gramians (k=20000)" in str(raised) and "per-fit limit of 3 GiB" in str(raised)
    assert peak < 64 * 1024


def test_cli_train_similarity_k_20000_is_one_line_and_exit_2(capsys, monkeypatch):
    from kmviz.cli import main

    kmviz.set_memory_limit(None)
    monkeypatch.setenv(_memory.ENV_VAR, "3G")
    code = main(["train", "similarity", "--data", "planted-lowrank", "--k", "20000"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert "k=20000" in err and "KMVIZ_MAX_FIT_BYTES=3G" in err and "Traceback" not in err


# ------------------------------------------------------------------------ similarity inputs
@pytest.fixture(scope="module")
def small():
    from kmviz.similarity.synthetic import make_planted_towers

    return make_planted_towers(30, 20, random_state=0)[0]


@pytest.mark.parametrize("factors, match", [
    (lambda m, n: (np.ones(m), np.ones(n)), r"Ptilde has shape \(30,\); expected a 2-D"),
    (lambda m, n: np.ones((m, 2)), "not a pair of arrays"),
    (lambda m, n: (np.ones((m, 2)),), "holds 1 item"),
    (lambda m, n: (np.ones((m + 1, 2)), np.ones((n, 2))), "Ptilde has 31 rows but there are 30"),
    (lambda m, n: (np.ones((m, 2)), np.ones((n, 3))), "Ptilde has 2 columns and Qtilde 3"),
    (lambda m, n: (np.ones((m, 2)), np.full((n, 2), np.nan)), "Qtilde holds NaN"),
    (lambda m, n: (np.full((m, 2), "a"), np.ones((n, 2))), "Ptilde is not numeric"),
])
def test_imputed_factors_are_checked(small, factors, match):
    from kmviz.similarity import SimilarityLearning

    with pytest.raises(DataError, match=match) as info:
        SimilarityLearning(k=3, max_iter=1).fit(
            small, imputed_factors=factors(small.n_users, small.n_items))
    assert "Fix: pass imputed_factors=(Ptilde, Qtilde)" in str(info.value)


def test_tower_objects_that_do_not_fit_the_data_are_refused(small):
    from kmviz.similarity import IdentityTower, LinearTower, SimilarityLearning

    class Short:   # the protocol's members, but embeddings for 7 rows
        k, n_params = 3, 5

        def init(self, rng):
            return np.zeros(5)

        def forward(self, theta, X, cache=None):
            return np.zeros((7, 3))

        vjp = jvp = forward

    for tower, match in ((IdentityTower(35, 3), r"shape \(35, 3\) for 30 users"),
                         (LinearTower(4, 3), "cannot embed the 30 users: this linear tower "
                                             "takes 4 input columns; got 30"),
                         (Short(), r"gives embeddings of shape \(7, 3\)")):
        with pytest.raises(InvalidParameterError, match=match):
            SimilarityLearning(k=3, max_iter=1, user_tower=tower).fit(small)
    model = SimilarityLearning(k=3, max_iter=1, user_tower=IdentityTower(30, 3)).fit(small)
    assert model.user_factors_.shape == (30, 3)


def test_tower_methods_check_their_inputs():
    from kmviz.similarity import IdentityTower, LinearTower, MLPTower, tower_input

    with pytest.raises(ValueError, match="vector of 15 numbers"):
        IdentityTower(5, 3).forward(np.zeros(4))
    with pytest.raises(ValueError, match=r"row ids of this identity tower lie in 0..4"):
        IdentityTower(5, 3).forward(np.zeros(15), np.array([7]))
    with pytest.raises(ValueError, match="takes a 2-D input"):
        LinearTower(4, 3).forward(np.zeros(12), np.ones(4))
    with pytest.raises(ValueError, match="vector of 12 numbers"):
        LinearTower(4, 3).forward(np.zeros(5), np.ones((2, 4)))
    mlp = MLPTower(4, (5,), 3)
    with pytest.raises(ValueError, match="MLP tower takes 4 input columns; got 5"):
        mlp.forward(np.zeros(mlp.n_params), np.ones((2, 5)))
    with pytest.raises(ValueError, match="ids are row indices in 0..2"):
        tower_input(3, ids=[5])
    with pytest.raises(ValueError, match="features must be 2-D"):
        tower_input(3, np.ones(3))
