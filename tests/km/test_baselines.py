"""Baselines: enumeration vs brute force, branch-and-bound vs enumeration, SDR, BFGS."""

import itertools

import numpy as np
import pytest

from kmviz.exceptions import InvalidParameterError
from kmviz.km import _kernels as K
from kmviz.km import _reference as R
from kmviz.km import baselines
from kmviz.km import solvers as bqp

from tests.km.instances import km_instance


def brute_force(S, v):
    """A python loop over all 2^D binary vectors."""
    best = np.inf
    for bits in itertools.product((0, 1), repeat=S.shape[0]):
        psi = np.array(bits, dtype=float)
        best = min(best, psi @ S @ psi - 2 * psi @ v)
    return best


@pytest.mark.parametrize("D", [1, 2, 5, 8, 10])
def test_enumeration_matches_brute_force(D):
    for seed in range(3):
        S, v = km_instance(D, seed)
        psi, f, info = baselines.exact_bqp(S, v)
        assert f == pytest.approx(brute_force(S, v), rel=1e-12, abs=1e-12)
        assert f == pytest.approx(R.bqp_objective(S, v, psi), rel=1e-12, abs=1e-12)
        assert f == pytest.approx(R.enumerate_bqp(S, v)[1], rel=1e-12, abs=1e-12)
        assert info["n_candidates"] == 2**D


def test_enumeration_on_indefinite_and_negative_entries():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((7, 7))
    S, v = (X + X.T) / 2, rng.standard_normal(7)
    assert baselines.exact_bqp(S, v)[1] == pytest.approx(brute_force(S, v))


@pytest.mark.parametrize("D", [3, 6, 10, 14])
def test_branch_and_bound_equals_enumeration(D):
    for seed in range(4):
        S, v = km_instance(D, 100 + seed)
        f_enum = baselines.exact_bqp(S, v)[1]
        psi, f, info = baselines.bnb_bqp(S, v)
        assert f == pytest.approx(f_enum, rel=1e-12, abs=1e-12)
        assert info["n_nodes"] >= 1
    # general symmetric S with negative off-diagonal entries exercises the n_k term
    rng = np.random.default_rng(D)
    X = rng.standard_normal((D, D))
    S, v = (X + X.T) / 2, rng.standard_normal(D)
    assert baselines.bnb_bqp(S, v)[1] == pytest.approx(baselines.exact_bqp(S, v)[1])


def test_branch_and_bound_reaches_d20():
    S, v = km_instance(20, 5)
    psi, f, info = baselines.bnb_bqp(S, v)
    assert f == pytest.approx(baselines.exact_bqp(S, v)[1], rel=1e-12)
    assert info["n_nodes"] < 2**20


def test_enumeration_guard_message():
    with pytest.raises(InvalidParameterError,
                       match=r"D=25 is too large for exact enumeration \(2\^25 candidates\); "
                             r"use method='bnb' or a dual method"):
        baselines.exact_bqp(np.eye(25), np.zeros(25))
    with pytest.raises(InvalidParameterError, match="D=21 is too large"):
        bqp.solve_bqp(np.eye(21), np.zeros(21), method="exact")


def test_enumeration_batch_kernel():
    data = [km_instance(6, s) for s in range(4)]
    S = np.array([d[0] for d in data])
    v = np.array([d[1] for d in data])
    psi, obj = np.empty((4, 6)), np.empty(4)
    K.enumerate_batch(S, v, psi, obj)
    for i in range(4):
        assert obj[i] == pytest.approx(R.enumerate_bqp(S[i], v[i])[1])


def test_sdr_with_randomization():
    pytest.importorskip("cvxpy")
    S, v = km_instance(6, 3)
    f_opt = baselines.exact_bqp(S, v)[1]
    r = bqp.solve_bqp(S, v, method="sdr", random_state=0)
    assert r.info["status"] == "optimal"
    X = r.info["X"]
    np.testing.assert_allclose(np.diag(X), 1.0, atol=1e-6)
    # the SDP value is a lower bound on (8); objective >= optimum >= bound (up to a constant)
    assert r.objective >= f_opt - 1e-9
    assert r.objective <= f_opt + 0.05 * abs(f_opt)
    r2 = bqp.solve_bqp(S, v, method="sdr", random_state=0, psi_prev=r.psi)
    assert r2.objective <= r.objective


def test_sdr_reuses_its_problem_across_items_and_sizes():
    # the SDP is built once per size with A as a parameter: each item must get its own
    # optimum (checked against a fresh cvxpy problem), also when sizes alternate
    cp = pytest.importorskip("cvxpy")
    from kmviz.km import _kernels as K

    for D, seed in [(6, 1), (4, 2), (6, 3), (6, 4)]:
        S, v = km_instance(D, seed)
        r = bqp.solve_bqp(S, v, method="sdr", random_state=0)
        A = np.empty((D + 1, D + 1))
        K.homogenize(S, v, A)
        X = cp.Variable((D + 1, D + 1), PSD=True)
        fresh = cp.Problem(cp.Minimize(cp.trace(A @ X)), [cp.diag(X) == 1])
        fresh.solve(solver=r.info["solver"])
        assert r.info["sdp_value"] == pytest.approx(fresh.value, rel=1e-5, abs=1e-6)
        assert r.info["solve_time"] >= 0.0


def test_bfgs_dual_matches_fast_dual():
    S, v = km_instance(8, 4)
    r_b = bqp.solve_bqp(S, v, method="bfgs", random_state=0)
    r_f = bqp.solve_bqp(S, v, method="fast", eps=1e-10, random_state=0)
    np.testing.assert_allclose(r_b.u, r_f.u, atol=1e-4)
    assert r_b.n_evd > 0 and r_b.method == "bfgs"
