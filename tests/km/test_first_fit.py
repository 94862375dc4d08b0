"""What a first KM fit compiles: the default (exact EVD) never types the Lanczos kernels."""

import numpy as np
import pytest
from numba import njit
from numba.core.dispatcher import Dispatcher

from kmviz._jit import JIT
from kmviz.km import _kernels as K
from kmviz.km._kernels import newton


def _ssn_eval_args(evd):
    rng = np.random.default_rng(3)
    n = 6
    B = rng.standard_normal((n, n))
    negA = -(B + B.T)
    wA, VA = np.linalg.eigh(negA)
    w, V, C, g = np.empty(n), np.empty((n, n)), np.empty((n, n)), np.empty(n)
    work = (negA, wA, np.ascontiguousarray(VA), np.empty((6, n)), np.empty((3, n, n)),
            np.zeros(1, np.int64))
    opts = K.dual_options(100.0, 1e-6, 50, K.NEWTON, evd, lz_rule=K.LZ_CERTIFIED)
    u = rng.uniform(-3.0, -1.0, n)  # C(u) = -A - diag(u) has eigenvalues of both signs
    return [u, False, opts, np.int64(K.SIDE_POS), (w, V, np.int64(0), np.int64(K.SIDE_ALL)),
            (C, w, V, g), work, np.zeros(K.N_STATS)]


@pytest.mark.slow
def test_exact_evd_eval_never_types_lanczos(monkeypatch):
    """``_ssn_eval`` with lz=None (evd exact) prunes the Lanczos branch before typing, and
    gives the same numbers as the full spectrum code with evd exact."""
    typed = []
    template = Dispatcher.get_call_template

    def spy(self, args, kws):
        typed.append(self.py_func.__name__)
        return template(self, args, kws)

    monkeypatch.setattr(Dispatcher, "get_call_template", spy)
    fresh = njit(**dict(JIT, cache=False))(newton._ssn_eval.py_func)  # compiled here
    lanczos = {"lanczos_side_capped", "lanczos_positive_pairs", "lanczos_threshold"}

    pruned = _ssn_eval_args(K.EVD_EXACT)
    res_pruned = fresh(*pruned, None)
    assert "eigh_into" in typed and not lanczos & set(typed), typed

    typed.clear()
    full = _ssn_eval_args(K.EVD_EXACT)
    res_full = fresh(*full, True)
    assert lanczos <= set(typed), typed
    assert res_pruned == res_full and res_pruned[1] == K.PHASE_IIB
    for a, b in zip(pruned[5], full[5]):  # C, w, V, g: bit for bit
        assert np.array_equal(a, b)
    # the stats agree but for the cycle counters (wall-clock cycles, never equal twice)
    cycles = [K.ST_EVD_CYC, K.ST_ALL_CYC, K.ST_LZ_CYC, *range(K.ST_PH_CYC, K.ST_CG_ITER)]
    counts = np.setdiff1d(np.arange(K.N_STATS), cycles)
    assert np.array_equal(pruned[7][counts], full[7][counts])
    assert pruned[7][K.ST_N_EVD] >= 1
