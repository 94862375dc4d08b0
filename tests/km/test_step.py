"""KM's BCD step (issue 31, item 2): the half-steps chosen once per fit, the in-process and
the cluster psi steps returning one result type, the BQP checks run once at the public entry
and never inside the loop.

Oracles: the in-process fit (a fit whose half-steps run as block tasks must equal it, row by
row), call counts of the checks, and the public entry's own errors."""

import dataclasses

import numpy as np
import pytest

import kmviz
from kmviz._cluster import Resident, cut_blocks
from kmviz.data.synthetic import make_planted_km
from kmviz.exceptions import InvalidParameterError
from kmviz.km import KolmogorovModel, _step
from kmviz.km import estimator as E
from kmviz.km import solvers
from kmviz.km.solvers import BatchResult, solve_bqp_batch

pytestmark = pytest.mark.filterwarnings("ignore::kmviz.exceptions.ConvergenceWarning")


class SerialBackend:
    """The part of :class:`kmviz.parallel.DaskBackend` KM's half-steps use, run here block
    after block: the cluster step's code path without a cluster."""

    def __init__(self, n_blocks=3):
        self.n_blocks = n_blocks
        self.calls = 0

    def warm(self, key, fn):
        pass

    def plan(self, row_weights, seconds_per_weight, **_):
        return cut_blocks(np.asarray(row_weights, dtype=np.float64), self.n_blocks)

    def scatter_blocks(self, blocks, ranges=()):
        return Resident(list(blocks), list(blocks), list(ranges))

    def map_blocks(self, fn, resident, shared=None, extras=None, *, timer=None, name="step",
                   **_):
        self.calls += 1
        if timer is not None:
            timer[f"{name}_compute"] = timer.get(f"{name}_compute", 0.0)
        return [fn(block, shared, extra) for block, extra in zip(resident.blocks, extras)]


def _data():
    ratings, _ = make_planted_km(60, 40, 4, noise=0.1, observed=0.5, random_state=5)
    return ratings


def _km(**kw):
    return KolmogorovModel(**{"D": 4, "max_iter": 3, "tol": 0.0, "random_state": 7, **kw})


def _record_psi_results(monkeypatch, shape=None):
    """Wrap both psi half-steps; returns the list their results are appended to (with
    ``shape``, only those of fits of that users x items shape: a cluster's warm-up runs a
    small fit of its own, in process, the first time a process starts a Dask fit)."""
    seen = []
    for cls in (_step.InProcessStep, _step.ClusterStep):
        def wrapped(self, st, trace, _orig=cls.psi):
            res, psi_k = _orig(self, st, trace)
            if shape is None or (st.theta.shape[0], st.psi.shape[0]) == shape:
                seen.append((type(self).__name__, res))
            return res, psi_k
        monkeypatch.setattr(cls, "psi", wrapped)
    return seen


@pytest.mark.parametrize("solver", ["fast", "enhanced", "exact"])
def test_in_process_and_cluster_psi_steps_return_the_same_type_and_values(monkeypatch,
                                                                          solver):
    data = _data()
    seen = _record_psi_results(monkeypatch)
    ref = _km(bqp_solver=solver).fit(data)
    backend = SerialBackend()
    monkeypatch.setattr(E, "active_backend", lambda: backend)
    got = _km(bqp_solver=solver).fit(data)
    assert backend.calls == 2 * got.n_iter_          # items and users, every iteration
    assert [name for name, _ in seen] == ["InProcessStep"] * 3 + ["ClusterStep"] * 3
    names = [f.name for f in dataclasses.fields(BatchResult)]
    for (_, a), (_, b) in zip(seen[:3], seen[3:]):
        assert type(a) is BatchResult and type(b) is BatchResult
        for name in names:
            if name == "times":
                assert set(b.times) <= set(a.times) | {"dual"}
                continue
            x, y = getattr(a, name), getattr(b, name)
            assert x.dtype == y.dtype and x.shape == y.shape, name
            np.testing.assert_array_equal(x, y, err_msg=name)
    np.testing.assert_array_equal(got.psi_, ref.psi_)
    np.testing.assert_array_equal(got.theta_, ref.theta_)
    for col in ("n_evd", "n_dual_iter", "n_psi_changed", "bqp_improved", "n_phase_2b"):
        assert got.trace_.column(col).tolist() == ref.trace_.column(col).tolist(), col
    np.testing.assert_allclose(got.trace_.column("objective"), ref.trace_.column("objective"),
                               rtol=1e-12)


def test_the_step_is_chosen_once_at_the_start_of_the_fit(monkeypatch):
    calls = []
    choose = _step.choose_step
    monkeypatch.setattr(_step, "choose_step", lambda b: calls.append(b) or choose(b))
    model = _km(max_iter=4).fit(_data())
    assert model.n_iter_ == 4 and calls == [None]


def test_a_fit_checks_the_bqp_settings_once_and_never_inside_the_loop(monkeypatch):
    from kmviz.km import _bqp_methods

    counts = {"settings": 0, "common": 0, "items": 0, "public": 0, "core": 0, "params": 0}

    def counting(key, fn):
        def wrapped(*a, **k):
            counts[key] += 1
            return fn(*a, **k)
        return wrapped

    monkeypatch.setattr(E, "batch_settings", counting("settings", E.batch_settings))
    monkeypatch.setattr(_bqp_methods, "_common", counting("common", _bqp_methods._common))
    monkeypatch.setattr(solvers, "_check_items", counting("items", solvers._check_items))
    monkeypatch.setattr(solvers, "solve_bqp_batch", counting("public", solvers.solve_bqp_batch))
    monkeypatch.setattr(_step, "_solve_bqp_batch_core",
                        counting("core", _step._solve_bqp_batch_core))
    monkeypatch.setattr(KolmogorovModel, "_validate_params",
                        counting("params", KolmogorovModel._validate_params))
    model = _km(max_iter=5).fit(_data())
    assert model.n_iter_ == 5
    assert counts == {"settings": 1, "common": 1, "items": 0, "public": 0, "core": 5,
                      "params": 1}


def test_the_core_gives_what_the_public_entry_gives():
    rng = np.random.default_rng(0)
    n_items, D = 9, 5
    theta = rng.dirichlet(np.ones(D), (n_items, 12))
    S = np.einsum("iud,iue->ide", theta, theta)
    v = np.einsum("iud,iu->id", theta, rng.random((n_items, 12)))
    psi0 = np.zeros((n_items, D))
    xi = rng.standard_normal((n_items, 10, D + 1))
    for method in ("fast", "enhanced", "bnb"):
        a = solve_bqp_batch(S, v, psi0, method=method, n_rand=10, xi=xi)
        cfg = solvers.batch_settings("test", method=method, n_rand=10, D=D)
        b = solvers._solve_bqp_batch_core(np.ascontiguousarray(S), v, psi0, None, cfg,
                                          xi if cfg.draws else None)
        for name in ("psi", "u", "objective", "n_evd", "improved"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("bad, match", [
    (lambda S: S[:, :, :-1], r"solve_bqp_batch: S must have shape \(n_items, D, D\)"),
    (lambda S: np.where(np.eye(S.shape[1], dtype=bool), np.nan, S), "NaN or infinite"),
    (lambda S: S + np.triu(np.ones(S.shape[1:]), 1), "S must be symmetric"),
])
def test_a_malformed_S_at_the_public_entry_still_gets_its_clear_error(bad, match):
    rng = np.random.default_rng(1)
    theta = rng.dirichlet(np.ones(4), (3, 6))
    S = np.einsum("iud,iue->ide", theta, theta)
    v, psi0 = np.zeros((3, 4)), np.zeros((3, 4))
    with pytest.raises(ValueError, match=match):
        solve_bqp_batch(bad(S), v, psi0, n_rand=4)
    with pytest.raises(ValueError, match="u_prev must have shape"):
        solve_bqp_batch(S, v, psi0, np.zeros((3, 4)), n_rand=4)


def test_too_large_an_enumeration_is_refused_at_the_start_before_any_iteration(monkeypatch):
    core = []
    monkeypatch.setattr(_step, "_solve_bqp_batch_core", lambda *a: core.append(a))
    ratings, _ = make_planted_km(30, 20, 3, random_state=1)
    model = KolmogorovModel(D=17, bqp_solver="exact", max_iter=2)
    with pytest.raises(InvalidParameterError, match="too large for exact enumeration"):
        model.fit(ratings)
    assert core == [] and not hasattr(model, "theta_")


@pytest.mark.slow
def test_on_a_dask_cluster_the_psi_step_returns_the_in_process_type(monkeypatch):
    data = _data()
    seen = _record_psi_results(monkeypatch, shape=data.shape)
    ref = _km().fit(data)
    with kmviz.parallel_backend("dask", client="threads:2", n_blocks=3):
        got = _km().fit(data)
    kinds = [name for name, _ in seen]
    assert kinds == ["InProcessStep"] * 3 + ["ClusterStep"] * 3
    for (_, a), (_, b) in zip(seen[:3], seen[3:]):
        assert type(a) is type(b) is BatchResult
        np.testing.assert_array_equal(a.psi, b.psi)
        np.testing.assert_array_equal(a.n_evd, b.n_evd)
    np.testing.assert_array_equal(got.psi_, ref.psi_)
