"""The parallel (prange) loops of the kernels give what the serial ones give."""

import numpy as np
import pytest

from kmviz.similarity import _kernels as K

from .conftest import tiny_problem


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_parallel_and_serial_loops_agree(loss):
    prob, theta = tiny_problem(loss, "identity", m=9, n=7, weights=True, prior=True)
    ev = prob.evaluate(theta)
    p = prob.pairs
    P, Q = ev.P, ev.Q
    outs = []
    for fn in (K._pair_terms_seq, K._pair_terms_par):
        arrays = [np.empty(p.nnz) for _ in range(3)] + [np.empty(p.n_rows)]
        fn(p.row_ptr, p.cols, p.labels, P, Q, prob.a, prob.b, prob.Pt, prob.Qt, prob.omega,
           K.LOSS_CODES[loss], *arrays)
        outs.append(arrays)
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-14)
    rng = np.random.default_rng(0)
    W, H = rng.standard_normal(P.shape), rng.standard_normal(Q.shape)
    res = []
    for fn in (K._gn_pairs_seq, K._gn_pairs_par):
        z, out = np.empty(p.nnz), np.empty_like(P)
        fn(p.row_ptr, p.cols, ev.cplus, P, Q, W, H, z, out)
        res.append((z, out))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-14)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-14)
    for fn in (K._csr_times_seq, K._csr_times_par):
        out = np.empty((p.n_cols, P.shape[1]))
        fn(p.col_ptr, p.col_rows, p.col_perm, ev.dplus, P, out)
        res.append(out)
    np.testing.assert_allclose(res[2], res[3], rtol=1e-14)
    dense = np.zeros((p.n_rows, p.n_cols))
    dense[p.rows, p.cols] = ev.dplus
    np.testing.assert_allclose(res[2], dense.T @ P, rtol=1e-12, atol=1e-14)
