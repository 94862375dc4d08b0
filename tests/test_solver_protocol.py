"""One solver protocol (kmviz.solver.Solver) and one fit-state type (kmviz._state.FitStateBase)
for the families with several methods: the registries satisfy the protocol, the fit loops
drive them through it, the checks run once at the entry, and a broken solver is refused with
a message naming what it lacks."""

import importlib
import math
import warnings

import numpy as np
import pytest

from kmviz import families
from kmviz._state import FitStateBase
from kmviz.data.synthetic import planted_lowrank
from kmviz.solver import Solver, SolverProtocolError, check_registry, check_solver

#: family -> (its solvers module, the parameter choosing the method, options not solvers)
MULTI_SOLVER = {"kmc": ("kmviz.kmc.solvers", "method", ()),
                "similarity": ("kmviz.similarity.solvers", "solver", ()),
                "ocmf": ("kmviz.ocmf.solvers", "solver", ()),
                "gfm": ("kmviz.gfm.solvers", "solver", ("auto",))}


def _estimator(family):
    return families.get(family).estimator_class()


@pytest.fixture(scope="module")
def tiny():
    return planted_lowrank(n_users=14, n_items=11, rank=2, observed=0.5, random_state=0)


@pytest.mark.parametrize("family", sorted(MULTI_SOLVER))
def test_every_registered_solver_satisfies_the_protocol(family):
    module, param, not_solvers = MULTI_SOLVER[family]
    registry = importlib.import_module(module).REGISTRY
    check_registry(registry, family)
    for solver in registry.values():
        assert isinstance(solver, Solver)
    # one solver per declared option, no more, no fewer
    options = set(_estimator(family)._parameter_constraints[param].options)
    assert set(registry) == options - set(not_solvers)


def test_every_family_package_with_a_registry_passes_the_check():
    seen = []
    for fam in families.all_families():
        package = fam.estimator.partition(":")[0].rpartition(".")[0]
        try:
            solvers = importlib.import_module(f"{package}.solvers")
        except ImportError:
            continue
        registry = getattr(solvers, "REGISTRY", None)
        if registry is not None:
            check_registry(registry, fam.name)
            seen.append(fam.name)
    assert set(MULTI_SOLVER) <= set(seen)


# -- a broken toy solver is refused, naming what is wrong ----------------------------------
class _Good:
    def start(self, state, rng):
        pass

    def step(self, state, trace, iteration):
        pass

    def publish(self, state):
        return {}


class _NoPublish:
    def start(self, state, rng):
        pass

    def step(self, state, trace, iteration):
        pass


class _StepWithoutTrace(_Good):
    def step(self, state):  # the loop calls step(state, trace, iteration)
        pass


class _StartNeedsKeyword(_Good):
    def start(self, state, rng, *, settings):
        pass


class _EstimateTakesTwo(_Good):
    def estimate(self, state, extra):
        pass


def test_a_good_toy_solver_passes():
    check_solver(_Good(), "toy")
    assert isinstance(_Good(), Solver)


@pytest.mark.parametrize("broken, member", [
    (_NoPublish(), "publish"), (_StepWithoutTrace(), "step"),
    (_StartNeedsKeyword(), "start"), (_EstimateTakesTwo(), "estimate")])
def test_a_broken_toy_solver_fails_naming_the_member(broken, member):
    with pytest.raises(SolverProtocolError, match=rf"toy.*'?{member}'?") as info:
        check_solver(broken, "toy")
    assert member in str(info.value) and "Fix:" in str(info.value)
    assert isinstance(info.value, TypeError)


def test_a_registry_with_a_broken_entry_names_the_entry():
    with pytest.raises(SolverProtocolError, match=r"toyfamily\.second.*publish"):
        check_registry({"first": _Good(), "second": _NoPublish()}, "toyfamily")
    with pytest.raises(SolverProtocolError, match="empty"):
        check_registry({}, "toyfamily")


# -- every family's fit state is one type ---------------------------------------------------
@pytest.mark.parametrize("family, params", [
    ("kmc", {"method": "kkmcex"}), ("kmc", {"method": "als", "jitter": 1e-4}),
    ("similarity", {"k": 2}), ("ocmf", {"k": 2}), ("gfm", {"rank": 2})])
def test_every_family_fit_state_is_a_fit_state_base(family, params, tiny):
    model = _estimator(family)(random_state=0, **params)
    state = model._fit_start(tiny, model._validate_params())
    assert isinstance(state, FitStateBase)
    assert state.prm["random_state"] == 0
    assert state.method in importlib.import_module(MULTI_SOLVER[family][0]).REGISTRY
    assert state.owner == type(model).__name__
    assert isinstance(state.rng, np.random.Generator)


def test_fit_state_flush_writes_notes_and_times_once():
    from kmviz.trace import Trace

    st = FitStateBase(prm={})
    st.note("kernel chosen")
    st.note("slow", kind="warning")
    st.pending["setup"] = 0.25
    trace = Trace(solver="toy")
    st.flush(trace)
    st.flush(trace)  # nothing left the second time
    assert [(e["kind"], e["message"]) for e in trace.events] == [
        ("info", "kernel chosen"), ("warning", "slow")]
    row = trace.record(objective=1.0)
    assert row["t_setup_s"] == pytest.approx(0.25)
    assert st.events == [] and st.pending == {}


# -- the fit loops drive the solvers through the protocol -----------------------------------
class _Spy:
    """Wraps a registered solver, counting the loop's calls."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def start(self, state, rng):
        self.calls.append("start")
        return self.inner.start(state, rng)

    def step(self, state, trace, iteration):
        self.calls.append(("step", iteration))
        return self.inner.step(state, trace, iteration)

    def publish(self, state):
        self.calls.append("publish")
        return self.inner.publish(state)

    def name(self, state):
        return self.inner.name(state)

    def __getattr__(self, name):  # predict / completed / estimate of Kernel MC's modules
        return getattr(self.inner, name)


@pytest.mark.slow
@pytest.mark.parametrize("family, key, params", [
    ("kmc", "als", {"method": "als", "rank": 2, "max_iter": 3, "tol": 0, "jitter": 1e-4}),
    ("similarity", "gd", {"k": 2, "solver": "gd", "max_iter": 3, "tol": 0}),
    ("ocmf", "gd", {"k": 2, "solver": "gd", "max_iter": 3}),
    ("gfm", "als", {"rank": 2, "solver": "als", "n_passes": 3, "tol": 0})])
def test_the_fit_loop_calls_start_step_publish(family, key, params, tiny, monkeypatch):
    registry = importlib.import_module(MULTI_SOLVER[family][0]).REGISTRY
    spy = _Spy(registry[key])
    monkeypatch.setitem(registry, key, spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _estimator(family)(random_state=0, **params).fit(tiny)
    assert spy.calls[0] == "start" and spy.calls.count("start") == 1
    assert [c for c in spy.calls if isinstance(c, tuple)] == [("step", 1), ("step", 2),
                                                              ("step", 3)]
    assert spy.calls[-1] == "publish"
    assert model.trace_.n_iter == 3


# -- checks once, at the entry -------------------------------------------------------------
@pytest.mark.slow
def test_kmc_validation_metrics_of_the_loop_match_evaluate(tiny):
    from kmviz.data.splits import make_split

    split = make_split(tiny, val_size=0.0, test_size=0.25, seed=1)
    model = _estimator("kmc")(method="kkmcex", solver="cg", max_iter=5, tol=0,
                              random_state=0).fit(split.train, validation=split.test)
    last = model.trace_.rows[-1]
    checked = model.evaluate(split.test)   # the public, checked path
    assert last["validation_nmse"] == checked["nmse"]
    assert last["validation_rmse"] == checked["rmse"]
    # the oracle: the metrics from the whole completed matrix
    full = model.completed_matrix()
    u, i = np.asarray(split.test.users), np.asarray(split.test.items)
    y = np.asarray(split.test.values, dtype=float)
    e = full[u, i] - y
    assert checked["nmse"] == pytest.approx(float(e @ e) / float(y @ y), rel=1e-10)
    assert checked["rmse"] == pytest.approx(math.sqrt(float(e @ e) / e.size), rel=1e-10)


def test_gfm_validation_with_other_columns_fails_before_the_first_step():
    from kmviz.gfm.synthetic import make_gfm

    prob = make_gfm(d=6, k=2, n=600, random_state=0)
    rows = []
    model = _estimator("gfm")(rank=2, solver="onepass", n_batches=3, random_state=0)
    with pytest.raises(ValueError, match="validation X has 5 features but the model has 6"):
        model.fit(prob.X, prob.y, validation=(prob.X[:50, :5], prob.y[:50]),
                  callback=rows.append)
    assert rows == []


@pytest.mark.slow
def test_gfm_validation_metrics_of_the_loop_match_evaluate():
    from kmviz.gfm.synthetic import make_gfm

    prob = make_gfm(d=6, k=2, n=1200, noise=0.1, random_state=0)
    val = (prob.X[:200], prob.y[:200])
    model = _estimator("gfm")(rank=2, solver="onepass", n_batches=4, random_state=0).fit(
        prob.X[200:], prob.y[200:], validation=val)
    last = model.trace_.rows[-1]
    checked = model.evaluate(val)
    err = model.predict(val[0]) - val[1]
    assert last["validation_rmse"] == checked["rmse"]
    assert checked["rmse"] == pytest.approx(math.sqrt(float(np.mean(err ** 2))), rel=1e-12)


def test_gfm_partial_fit_refuses_a_rank_changed_mid_stream():
    from kmviz.exceptions import InvalidParameterError
    from kmviz.gfm.synthetic import make_gfm

    prob = make_gfm(d=6, k=2, n=800, random_state=0)
    model = _estimator("gfm")(rank=2, solver="onepass", random_state=0)
    model.partial_fit(prob.X[:400], prob.y[:400])
    model.set_params(rank=3)
    with pytest.raises(InvalidParameterError, match="changed from 2 to 3 during a stream"):
        model.partial_fit(prob.X[400:], prob.y[400:])
    assert model.trace_.n_iter == 1


def test_ocmf_tron_public_entry_checks_and_the_core_agrees():
    from kmviz.ocmf.solvers import _tron, tron

    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 6))
    H = A @ A.T + np.eye(6)
    b = rng.standard_normal(6)

    class Quadratic:
        parts = {}

        def fun(self, x):
            return 0.5 * float(x @ H @ x) - float(b @ x)

        def grad(self, x):
            return H @ x - b

        def hess_vec(self, v):
            return H @ v

        def diag_hessian(self):
            return np.diag(H).copy()

    with pytest.raises(ValueError, match=r"pcg_alpha must lie in \(0, 1\]"):
        tron(Quadratic(), np.zeros(6), pcg_alpha=0.0)
    kw = dict(eps=1e-8, max_iter=50, max_cg=None, gnorm0="zero", precondition=True,
              pcg_alpha=0.5)
    public, core = tron(Quadratic(), np.zeros(6), **kw), _tron(Quadratic(), np.zeros(6), **kw)
    np.testing.assert_array_equal(public.x, core.x)
    # the oracle: the minimizer of the quadratic
    np.testing.assert_allclose(core.x, np.linalg.solve(H, b), rtol=1e-6, atol=1e-8)


def test_ocmf_checks_the_block_solver_setting_once_at_the_start(tiny, monkeypatch):
    from kmviz.ocmf import estimator as est

    monkeypatch.setattr(est, "TRON_PCG_ALPHA", 1.5)
    rows = []
    with pytest.raises(ValueError, match="pcg_alpha must lie"):
        _estimator("ocmf")(k=2, random_state=0).fit(tiny, callback=rows.append)
    assert rows == []


# -- KM: one outer method (BCD), its inner BQP methods behind one protocol -----------------
def test_km_bqp_methods_are_one_registry_checked_member_by_member():
    from kmviz.km import solvers as km_solvers
    from kmviz.solver import check_members

    km_solvers.check_bqp_methods(km_solvers.BQP_METHODS)
    options = _estimator("km")._parameter_constraints["bqp_solver"].options
    assert tuple(km_solvers.BQP_METHODS) == tuple(options)

    class NoSolveBatch:
        name, draws, batch_max_D = "toy", True, None

        def kernel_options(self, owner, settings):
            return None

        def solve(self, S, v, psi_prev, u0, cfg, xi):
            return None

    with pytest.raises(SolverProtocolError, match=r"BQP method 'toy' has no 'solve_batch'"):
        km_solvers.check_bqp_method(NoSolveBatch(), "toy")
    # the generic check names what it was told to: attributes and argument counts
    with pytest.raises(SolverProtocolError, match=r"thing has no 'size'.*Fix: define size"):
        check_members(NoSolveBatch(), {"name": None, "size": None}, "thing", "Toy")
    with pytest.raises(SolverProtocolError, match=r"solve\(a\), the call made to it"):
        check_members(NoSolveBatch(), {"solve": ("a",)}, "thing", "Toy")
