"""Preconditioned CG for the Gauss-Newton step: the exact diagonal of G and Jacobi PCG."""

import numpy as np
import pytest

from kmviz.similarity import _reference as ref
from kmviz.similarity.solvers import Settings, solver_module
from kmviz.similarity.solvers._precondition import (block_means, gauss_newton_diagonal,
                                                    tower_diagonal)
from kmviz.similarity.solvers.newton import conjugate_gradient

from .conftest import TOWERS, tiny_problem


def _dense_G(prob, ev):
    """G column by column from Gauss-Newton products (symmetrized)."""
    G = np.stack([prob.gnvp(ev, e) for e in np.eye(prob.n_params)], axis=1)
    return 0.5 * (G + G.T)


@pytest.mark.parametrize("tower", TOWERS)
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_diagonal_equals_dense_jacobian_diagonal(tower, loss):
    prob, theta = tiny_problem(loss, tower, m=5, n=4, k=2, weights=True)
    ev = prob.evaluate(theta)
    G = ref.gauss_newton_matrix(prob, theta)          # J^T H J + lambda I, J by differences
    diag = gauss_newton_diagonal(prob, ev)
    np.testing.assert_allclose(diag, np.diag(G), rtol=1e-6, atol=1e-8)
    # and to rounding against the fast products: every tower here has its exact diagonal
    assert tower_diagonal(prob, ev, "user") is not None
    assert tower_diagonal(prob, ev, "item") is not None
    np.testing.assert_allclose(diag, np.diag(_dense_G(prob, ev)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("tower", ["mlp_elu", "ids_and_features", "linear_csr"])
def test_diagonal_with_prior_imputation_and_negative_curvatures(tower):
    # omega large: many c_ij < 0 on O, yet the diagonal (and G) stays >= lambda
    prob, theta = tiny_problem("logistic", tower, m=6, n=5, k=3, omega=3.0, prior=True)
    ev = prob.evaluate(theta)
    assert (ev.cplus < 0).any()
    diag = gauss_newton_diagonal(prob, ev)
    np.testing.assert_allclose(diag, np.diag(_dense_G(prob, ev)), rtol=1e-10, atol=1e-12)
    assert diag.min() >= prob.lam


def test_mlp_diagonal_is_the_same_in_small_row_chunks(monkeypatch):
    from kmviz.similarity.solvers import _precondition

    prob, theta = tiny_problem("logistic", "mlp_elu", m=9, n=7, k=3)
    ev = prob.evaluate(theta)
    whole = gauss_newton_diagonal(prob, ev)
    monkeypatch.setattr(_precondition, "CHUNK_FLOATS", 1)       # one row per chunk
    np.testing.assert_allclose(gauss_newton_diagonal(prob, ev), whole, rtol=1e-12)


class _Opaque:
    """A user-supplied tower (no ``kind``): the preconditioner falls back to a block mean."""

    def __init__(self, tower):
        self._t = tower
        self.k, self.n_params = tower.k, tower.n_params

    def init(self, rng):
        return self._t.init(rng)

    def forward(self, theta, X, cache=None):
        return self._t.forward(theta, X, cache)

    def vjp(self, theta, X, cache, M):
        return self._t.vjp(theta, X, cache, M)

    def jvp(self, theta, X, cache, d):
        return self._t.jvp(theta, X, cache, d)


def test_user_tower_gets_a_hutchinson_block_mean():
    prob, theta = tiny_problem("logistic", "mlp_elu", m=6, n=5, k=3)
    prob.fu = _Opaque(prob.fu)
    ev = prob.evaluate(theta)
    assert tower_diagonal(prob, ev, "user") is None
    exact = np.diag(_dense_G(prob, ev)) - prob.lam
    mean = block_means(prob, ev, [(0, prob.Du)], np.random.default_rng(1), probes=400)[0]
    # Hutchinson: E[z o Gz] = diag(G); 400 probes put the block mean within a few percent
    assert mean == pytest.approx(exact[:prob.Du].mean(), rel=0.1)
    diag = gauss_newton_diagonal(prob, ev, np.random.default_rng(0))
    assert np.ptp(diag[:prob.Du]) == 0.0 and diag[0] >= prob.lam
    np.testing.assert_allclose(diag[prob.Du:], exact[prob.Du:] + prob.lam, rtol=1e-10)


@pytest.mark.parametrize("tower", ["identity", "mlp_elu", "ids_and_features"])
def test_pcg_solves_the_newton_system_to_its_tolerance(tower):
    prob, theta = tiny_problem("logistic", tower, m=8, n=7, k=3)
    ev = prob.evaluate(theta)
    g = prob.gradient(ev)
    G = _dense_G(prob, ev)
    exact = np.linalg.solve(G, -g)
    inverse = 1.0 / gauss_newton_diagonal(prob, ev)
    for xi in (0.1, 1e-3):
        s, n_cg, ratio = conjugate_gradient(prob, ev, g, xi, 500, inverse)
        r = -g - G @ s
        assert np.linalg.norm(r) <= xi * np.linalg.norm(g) * (1 + 1e-8)
        assert np.isclose(np.linalg.norm(r) / np.linalg.norm(g), ratio, rtol=1e-6)
        assert g @ s < 0
    s, _, _ = conjugate_gradient(prob, ev, g, 1e-10, 500, inverse)
    np.testing.assert_allclose(s, exact, rtol=1e-6, atol=1e-9 * np.abs(exact).max())


@pytest.mark.parametrize("tower", ["identity", "mlp_elu", "ids_and_features"])
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_preconditioned_newton_decreases_the_objective_monotonically(tower, loss):
    prob, theta = tiny_problem(loss, tower, m=8, n=7)
    f0 = prob.objective(prob.evaluate(theta))
    mod = solver_module("newton")
    st = mod.start(prob, theta, Settings(preconditioner="diag"), np.random.default_rng(0))
    objs = [f0]
    for _ in range(8):
        row = mod.step(prob, st)
        objs.append(row.values["objective"])
        assert row.values["precondition_seconds"] >= 0
        if row.converged:
            break
    assert all(b <= a + 1e-12 for a, b in zip(objs, objs[1:]))
    assert objs[-1] < f0


def test_unknown_preconditioner_is_refused():
    prob, theta = tiny_problem()
    with pytest.raises(ValueError, match="preconditioner"):
        solver_module("newton").start(prob, theta, Settings(preconditioner="ilu"), None)


@pytest.mark.slow
def test_estimator_passes_the_option_and_the_form_shows_it_for_newton_only():
    from kmviz.ocmf import make_planted_pu
    from kmviz.similarity import SimilarityLearning
    from kmviz.ui.forms import form_layout

    ratings, _ = make_planted_pu(60, 40, 3, n_user_features=4, n_item_features=3,
                                 density=0.1, random_state=0)
    kw = dict(k=4, user_tower="mlp:6", item_tower="mlp:6", side_features="both",
              max_iter=4, tol=0.0, random_state=0)
    model = SimilarityLearning(preconditioner="diag", **kw).fit(ratings)
    rows = model.trace_.rows
    assert all("precondition_seconds" in r for r in rows)
    objs = [r["objective"] for r in rows]
    assert all(b <= a + 1e-9 for a, b in zip(objs, objs[1:]))
    plain = SimilarityLearning(**kw).fit(ratings)
    assert not any("precondition_seconds" in r for r in plain.trace_.rows)
    constraints = SimilarityLearning._parameter_constraints
    values = {**SimilarityLearning().get_params(), "solver": "newton"}
    assert "preconditioner" in form_layout(constraints, values)["more"]
    values["solver"] = "gd-diag"
    assert "preconditioner" not in sum(form_layout(constraints, values).values(), [])
