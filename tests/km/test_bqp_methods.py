"""KM's BQP methods as one registry (issue #31, item 2): every method of ``solve_bqp`` /
``solve_bqp_batch`` / ``KolmogorovModel(bqp_solver=...)`` is an object of
``solvers.BQP_METHODS`` satisfying one protocol, looked up once where the settings are
built and called by the entries and the BCD loop.

Oracles: the kernels and baselines called directly the way the entries' string branches
called them before the registry (the same draws, so the same bits), brute-force enumeration
of {0, 1}^D for the exact methods, and the protocol check on broken toy methods."""

import itertools

import numpy as np
import pytest

from kmviz.exceptions import InvalidParameterError
from kmviz.km import KolmogorovModel
from kmviz.km import _kernels as K
from kmviz.km import baselines
from kmviz.km import solvers
from kmviz.km.solvers import BQP_METHODS, BQPMethod, batch_settings, check_bqp_method
from kmviz.solver import SolverProtocolError

pytestmark = pytest.mark.filterwarnings("ignore::kmviz.exceptions.ConvergenceWarning")

ALL = ("gd", "enhanced", "fast", "exact", "bnb", "sdr", "bfgs")


def _problems(D, n_items=5, seed=0, warm=True):
    """Random item BQPs as a BCD iterate builds them (S = sum theta theta^T), incumbents,
    draws and warm starts (half the rows NaN: cold)."""
    rng = np.random.default_rng(seed + 10 * D)
    theta = rng.dirichlet(np.ones(D), (n_items, 12))
    S = np.ascontiguousarray(np.einsum("iud,iue->ide", theta, theta))
    v = np.ascontiguousarray(np.einsum("iud,iu->id", theta, rng.random((n_items, 12))))
    psi0 = (rng.random((n_items, D)) < 0.4).astype(np.float64)
    xi = rng.standard_normal((n_items, 8, D + 1))
    u_prev = None
    if warm:
        u_prev = np.where(rng.random((n_items, 1)) < 0.5, np.nan,
                          1.0 + rng.random((n_items, D + 1)))
    return S, v, psi0, xi, u_prev


def _brute_force(S, v):
    """min psi^T S psi - 2 psi^T v over every psi in {0, 1}^D, in plain NumPy."""
    D = v.shape[0]
    cands = np.array(list(itertools.product((0.0, 1.0), repeat=D)))
    f = np.einsum("kd,de,ke->k", cands, S, cands) - 2.0 * cands @ v
    return float(f.min()), cands[f == f.min()]


# -- the registry and its protocol -----------------------------------------------------------
def test_every_bqp_method_is_registered_once_and_satisfies_the_protocol():
    assert tuple(BQP_METHODS) == ALL == solvers.METHODS
    solvers.check_bqp_methods(BQP_METHODS)
    for name, method in BQP_METHODS.items():
        assert isinstance(method, BQPMethod) and method.name == name
    # the estimator offers exactly the registered methods
    assert KolmogorovModel._parameter_constraints["bqp_solver"].options == ALL
    # only the exact enumeration has a batch limit; only the exact methods take no draws
    assert {n for n, m in BQP_METHODS.items() if m.batch_max_D is not None} == {"exact"}
    assert {n for n, m in BQP_METHODS.items() if not m.draws} == {"exact", "bnb"}


class _Toy:
    name, draws, batch_max_D = "toy", True, None

    def kernel_options(self, owner, settings):
        return None

    def solve_batch(self, S, v, psi_prev, u_prev, cfg, xi):
        raise AssertionError("not called")

    def solve(self, S, v, psi_prev, u0, cfg, xi):
        raise AssertionError("not called")


class _NoSolve(_Toy):
    solve = None


class _BatchWithoutDraws(_Toy):
    def solve_batch(self, S, v, psi_prev, u_prev, cfg):  # the core passes xi as well
        pass


class _SettingsNeedsKeyword(_Toy):
    def kernel_options(self, owner, settings, *, evd):
        return None


class _NoDrawsAttribute:
    name, batch_max_D = "toy", None
    kernel_options, solve_batch, solve = (_Toy.kernel_options, _Toy.solve_batch,
                                          _Toy.solve)


def test_a_good_toy_method_passes_the_check():
    check_bqp_method(_Toy(), "toy")
    assert isinstance(_Toy(), BQPMethod)


@pytest.mark.parametrize("broken, member", [
    (_NoSolve(), "solve"), (_BatchWithoutDraws(), "solve_batch"),
    (_SettingsNeedsKeyword(), "kernel_options"), (_NoDrawsAttribute(), "draws")])
def test_a_broken_toy_method_fails_naming_the_member(broken, member):
    with pytest.raises(SolverProtocolError, match=rf"BQP method 'toy'.*'?{member}") as info:
        check_bqp_method(broken, "toy")
    assert "Fix:" in str(info.value)


def test_a_registry_entry_under_another_name_is_refused():
    with pytest.raises(SolverProtocolError, match="'other' is named 'toy'"):
        solvers.check_bqp_methods({"other": _Toy()})


@pytest.mark.parametrize("call", [
    lambda: solvers.solve_bqp(np.eye(2), np.ones(2), method="newton"),
    lambda: solvers.solve_bqp_batch(np.eye(2)[None], np.ones((1, 2)), np.zeros((1, 2)),
                                    method="newton"),
    lambda: batch_settings("owner", method="newton")])
def test_an_unknown_method_still_gets_the_error_listing_the_valid_names(call):
    with pytest.raises(InvalidParameterError, match="method") as info:
        call()
    assert all(repr(name) in str(info.value) or name in str(info.value) for name in ALL)
    assert "newton" in str(info.value)


@pytest.mark.parametrize("method", ALL)
def test_the_settings_hold_the_registered_object_looked_up_once(method):
    cfg = batch_settings("test", method=method, D=4)
    assert cfg.solver is BQP_METHODS[method]
    assert cfg.draws == BQP_METHODS[method].draws
    assert (cfg.opts is None) == (method not in solvers.DUAL_METHODS)


def test_the_fit_calls_the_method_it_looked_up_every_iteration(monkeypatch):
    from kmviz.data.synthetic import make_planted_km

    calls = []

    class Spy:
        def __init__(self, inner):
            self.inner = inner
            self.name, self.draws, self.batch_max_D = inner.name, inner.draws, None

        def kernel_options(self, owner, settings):
            calls.append("options")
            return self.inner.kernel_options(owner, settings)

        def solve_batch(self, S, v, psi_prev, u_prev, cfg, xi):
            calls.append("batch")
            return self.inner.solve_batch(S, v, psi_prev, u_prev, cfg, xi)

        def solve(self, S, v, psi_prev, u0, cfg, xi):
            return self.inner.solve(S, v, psi_prev, u0, cfg, xi)

    monkeypatch.setitem(BQP_METHODS, "enhanced", Spy(BQP_METHODS["enhanced"]))
    data, _ = make_planted_km(n_users=30, n_items=12, D=3, observed=0.6, random_state=0)
    model = KolmogorovModel(D=3, bqp_solver="enhanced", max_iter=4, tol=0, n_rand=8,
                            random_state=0).fit(data)
    assert model.n_iter_ == 4
    assert calls == ["options"] + ["batch"] * 4


# -- each method gives what the string branches gave -----------------------------------------
def _old_branch_batch(method, S, v, psi_prev, u_prev, xi, **kw):
    """psi, objective and u of a batch, from the kernels / baselines called directly the
    way ``_solve_bqp_batch_core``'s ``if method == ...`` branches called them."""
    n_items, D = v.shape
    if method in ("exact", "bnb"):
        psi, obj = np.empty((n_items, D)), np.empty(n_items)
        if method == "exact":
            K.enumerate_batch(S, v, psi, obj)
        else:
            K.bnb_batch(S, v, psi_prev, psi, obj, np.empty(n_items, dtype=np.int64))
        prev = np.array([K.bqp_objective(S[i], v[i], psi_prev[i]) for i in range(n_items)])
        better = obj < prev
        psi[~better] = psi_prev[~better]
        return psi, np.where(better, obj, prev), np.full((n_items, D + 1), np.nan)
    if method in ("sdr", "bfgs"):
        fn = baselines.sdr_bqp if method == "sdr" else baselines.bfgs_bqp
        extra = {} if method == "sdr" else {"gamma": 100.0, "u0": None}
        res = [fn(S[i], v[i], xi=xi[i], psi_prev=psi_prev[i], **extra) for i in range(n_items)]
        return (np.array([r.psi for r in res]), np.array([r.objective for r in res]),
                np.array([r.u for r in res]))
    code = {"gd": K.GD, "enhanced": K.ENHANCED, "fast": K.NEWTON}[method]
    if kw.get("fast_variant") == "bb":
        code = K.FAST
    evd = K.EVD_LANCZOS if kw.get("evd") == "lanczos" else K.EVD_EXACT
    rule = K.LZ_CERTIFIED if code == K.NEWTON else K.LZ_PAPER
    opts = K.dual_options(100.0, 1e-6, 5000, code, evd, lz_rule=rule)
    u, t_first = np.ones((n_items, D + 1)), np.ones(n_items)
    if u_prev is not None:
        ok = np.all(np.isfinite(u_prev), axis=1)
        u[ok], t_first[ok] = u_prev[ok], 1.0 / 100.0
    out = K.BatchOutputs.empty(n_items, D)
    if code == K.NEWTON:
        K.newton_randomize_batch(S, v, u, opts, xi, psi_prev, True, *out)
    else:
        K.dual_solve_batch(S, v, u, t_first, opts, out.phase, out.st_dual)
        K.randomize_batch(S, v, u, opts, xi, psi_prev, True, out.psi, out.obj, out.improved,
                          out.st_rand)
    return out.psi, out.obj, u


VARIANTS = [("gd", {}), ("enhanced", {}), ("fast", {}), ("fast", {"fast_variant": "bb"}),
            ("fast", {"evd": "lanczos"}), ("enhanced", {"evd": "lanczos"}), ("exact", {}),
            ("bnb", {}), ("sdr", {}), ("bfgs", {})]


@pytest.mark.parametrize("method, kw", VARIANTS)
@pytest.mark.parametrize("D", [3, 6])
def test_each_registered_method_gives_what_its_branch_gave(method, kw, D):
    if method == "sdr":
        pytest.importorskip("cvxpy")
    S, v, psi0, xi, u_prev = _problems(D)
    if method in ("exact", "bnb", "sdr", "bfgs"):
        u_prev = None
    cfg = batch_settings("test", method=method, n_rand=xi.shape[1], D=D, **kw)
    got = cfg.solver.solve_batch(S, v, psi0.copy(), u_prev, cfg,
                                 xi if cfg.draws else None)
    psi, obj, u = _old_branch_batch(method, S, v, psi0.copy(), u_prev, xi, **kw)
    np.testing.assert_array_equal(got.psi, psi)
    np.testing.assert_array_equal(got.objective, obj)
    np.testing.assert_array_equal(got.u, u)
    # the public entry routes through the same object
    pub = solvers.solve_bqp_batch(S, v, psi0, u_prev, method=method, n_rand=xi.shape[1],
                                  xi=xi, **kw)
    np.testing.assert_array_equal(pub.psi, psi)
    np.testing.assert_array_equal(pub.objective, obj)
    # never worse than the incumbent, and the objective is that of the returned psi
    prev = np.einsum("id,ide,ie->i", psi0, S, psi0) - 2 * np.einsum("id,id->i", psi0, v)
    assert np.all(got.objective <= prev + 1e-12)
    f = np.einsum("id,ide,ie->i", got.psi, S, got.psi) - 2 * np.einsum("id,id->i", got.psi, v)
    np.testing.assert_allclose(got.objective, f, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("method, kw", VARIANTS)
def test_solve_bqp_gives_the_registered_methods_batch_rows(method, kw):
    if method == "sdr":
        pytest.importorskip("cvxpy")
    D = 5
    S, v, psi0, xi, _ = _problems(D, n_items=3, seed=4, warm=False)
    cfg = batch_settings("test", method=method, n_rand=xi.shape[1], D=D, **kw)
    batch = cfg.solver.solve_batch(S, v, psi0, None, cfg, xi if cfg.draws else None)
    for i in range(3):
        one = solvers.solve_bqp(S[i], v[i], method=method, n_rand=xi.shape[1], xi=xi[i],
                                psi_prev=psi0[i], **kw)
        assert one.method == method
        np.testing.assert_array_equal(one.psi, batch.psi[i])
        assert one.objective == pytest.approx(float(batch.objective[i]), rel=1e-12, abs=1e-14)
        direct = cfg.solver.solve(S[i], v[i], psi0[i], None, cfg, xi[i])
        np.testing.assert_array_equal(direct.psi, one.psi)
        assert direct.objective == one.objective


# -- the exact methods against brute force ---------------------------------------------------
@pytest.mark.parametrize("method", ["exact", "bnb"])
@pytest.mark.parametrize("D", range(1, 9))
def test_exact_methods_agree_with_brute_force(method, D):
    S, v, _, _, _ = _problems(D, n_items=4, seed=2, warm=False)
    # a negative-curvature-free but indefinite-in-v problem: shift v so supports vary
    v = v + np.linspace(-0.2, 0.2, D)
    zeros = np.zeros((4, D))
    cfg = batch_settings("test", method=method, D=D)
    res = cfg.solver.solve_batch(S, np.ascontiguousarray(v), zeros, None, cfg, None)
    for i in range(4):
        f_star, argmins = _brute_force(S[i], v[i])
        want = min(f_star, 0.0)   # psi = 0 is the incumbent, kept unless strictly beaten
        assert res.objective[i] == pytest.approx(want, rel=1e-12, abs=1e-13)
        if f_star < 0.0:
            assert any(np.array_equal(res.psi[i], a) for a in argmins)
        one = cfg.solver.solve(S[i], v[i], None, None, cfg, None)   # no incumbent
        assert one.objective == pytest.approx(f_star, rel=1e-12, abs=1e-13)
        assert any(np.array_equal(one.psi, a) for a in argmins)
