"""Solvers: monotone Newton / GD, the line-search fix, unbiased stochastic gradients."""

import numpy as np
import pytest

from kmviz.similarity.solvers import SOLVERS, Settings, solver_module
from kmviz.similarity.solvers import stochastic
from kmviz.similarity.solvers._line_search import armijo, initial_step
from kmviz.similarity.solvers.newton import conjugate_gradient

from .conftest import tiny_problem


def _run(problem, theta, name, iters, **kw):
    cfg = Settings(diag=name.endswith("-diag"), **kw)
    mod = solver_module(name)
    st = mod.start(problem, theta, cfg, np.random.default_rng(0), name=name)
    rows = [mod.step(problem, st) for _ in range(iters)]
    return mod.publish(st), rows


@pytest.mark.parametrize("tower", ["identity", "mlp_elu", "ids_and_features"])
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_newton_decreases_the_objective_monotonically(tower, loss):
    prob, theta = tiny_problem(loss, tower, m=8, n=7)
    f0 = prob.objective(prob.evaluate(theta))
    _, rows = _run(prob, theta, "newton", 8)
    objs = [f0] + [r.values["objective"] for r in rows]
    assert all(b <= a + 1e-12 for a, b in zip(objs, objs[1:]))
    assert objs[-1] < f0
    assert all(r.values["n_cg"] <= 30 for r in rows)


def test_newton_beats_gd_on_identity_towers():
    prob, theta = tiny_problem("logistic", "identity", m=12, n=10, k=4)
    _, newton = _run(prob, theta, "newton", 10)
    _, gd = _run(prob, theta, "gd", 10)
    assert newton[-1].values["objective"] <= gd[-1].values["objective"]


def test_cg_residual_criterion():
    prob, theta = tiny_problem("logistic", "mlp_tanh")
    ev = prob.evaluate(theta)
    g = prob.gradient(ev)
    s, n_cg, ratio = conjugate_gradient(prob, ev, g, 0.1, 30)
    assert ratio <= 0.1 or n_cg == 30
    r = -g - prob.gnvp(ev, s)
    assert np.isclose(np.linalg.norm(r) / np.linalg.norm(g), ratio, rtol=1e-6)
    assert g @ s < 0


def test_failed_line_search_rejects_the_step_and_keeps_the_cache():
    prob, theta = tiny_problem("logistic", "identity")
    ev = prob.evaluate(theta)
    g = prob.gradient(ev)
    res = armijo(prob, ev, g, g, 1.0, 1e-4, 5)     # an ascent direction: never accepted
    assert not res.accepted and res.delta == 0.0 and res.evaluation is ev
    assert res.evaluation.theta is ev.theta


def test_step_warm_start():
    assert initial_step(None, 1, 5, cap=1.0) == 1.0
    assert initial_step(0.25, 4, 5, cap=1.0) == 0.25
    assert initial_step(0.25, 5, 5, cap=1.0) == 0.5
    assert initial_step(0.75, 10, 5, cap=1.0) == 1.0


@pytest.mark.parametrize("name", ["gd", "gd-diag"])
def test_line_search_solvers_are_monotone(name):
    prob, theta = tiny_problem("logistic", "mlp_elu")
    _, rows = _run(prob, theta, name, 6)
    objs = [r.values["objective"] for r in rows]
    assert all(b <= a + 1e-12 for a, b in zip(objs, objs[1:]))


@pytest.mark.slow  # 20,000 draws; test_unbiased_exact.py checks it exactly
def test_sampling_gradient_is_unbiased():
    prob, theta = tiny_problem("logistic", "identity", m=6, n=5, weights=True, prior=True)
    full = prob.gradient(prob.evaluate(theta))
    rng = np.random.default_rng(1)
    draws = 20000
    est = sum(stochastic.sampling_gradient(prob, theta, rng, 0.4) for _ in range(draws)) / draws
    assert np.linalg.norm(est - full) / np.linalg.norm(full) < 0.03


@pytest.mark.slow  # 20,000 draws; test_unbiased_exact.py checks it exactly
def test_sogram_estimate_without_averaging_is_unbiased():
    prob, theta = tiny_problem("logistic", "mlp_tanh", m=6, n=5, weights=True, prior=True,
                               cover=True)
    full = prob.gradient(prob.evaluate(theta))
    p = prob.pairs
    assert (p.row_counts() > 0).all() and (p.col_counts() > 0).all()
    st = stochastic.start(prob, theta, Settings(rho=0.3, learning_rate=0.1),
                          np.random.default_rng(0), name="sogram")
    rng = np.random.default_rng(2)
    draws = 20000
    est = sum(stochastic.sogram_gradient(prob, theta, rng, 0.3, st.grams, st.abar, st.bbar,
                                         1.0) for _ in range(draws)) / draws
    assert np.linalg.norm(est - full) / np.linalg.norm(full) < 0.03


@pytest.mark.parametrize("name", SOLVERS)
def test_every_solver_lowers_the_objective(name):
    prob, theta = tiny_problem("logistic", "identity", m=10, n=8, k=3)
    f0 = prob.objective(prob.evaluate(theta))
    # plain SOGram / Sampling need a small fixed step on 30 pairs (high variance)
    rate = 0.02 if name in ("sogram", "sampling") else None
    _, rows = _run(prob, theta, name, 4, rho=0.3, learning_rate=rate)
    assert rows[-1].values["objective"] < f0
