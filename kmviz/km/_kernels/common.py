"""Codes, statistics and basics shared by the binary-QP kernels (4).

Codes shared with ``solvers.py``:

- method: 0 = "gd" (Alg. 1), 1 = "enhanced" (Alg. 2), 2 = "fast" BB variant (Alg. 2 + BB
  steps), 3 = "fast" Newton variant (``newton.py``)
- evd: 0 = exact (``_eigen.eigh_into``: own QL solver, LAPACK above DENSE_N), 1 = Lanczos
  (Alg. 5 with the threshold of eq. (20))
- Lanczos rule of the Newton method: 0 = the paper's (Alg. 5, eq. (20)), 1 = certified
- phase: 0 = I-A, 1 = I-B, 2 = II-A, 3 = II-B
- side (which eigenpairs of C(u) a spectrum holds, see ``newton.py``): 0 = all, 1 = the
  positive ones, -1 = the negative ones
- ``stats`` row: see the ``ST_*`` indices below.

The settings of a dual solve travel as one ``DualOptions`` (build it with ``dual_options``);
a batch's per-item outputs are allocated as one ``BatchOutputs``.
"""

import math
from typing import NamedTuple

import numpy as np

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from kmviz._jit import JIT

GD, ENHANCED, FAST = 0, 1, 2
NEWTON = 3
EVD_EXACT, EVD_LANCZOS = 0, 1
LZ_PAPER, LZ_CERTIFIED = 0, 1
PHASE_IA, PHASE_IB, PHASE_IIA, PHASE_IIB = 0, 1, 2, 3
SIDE_ALL, SIDE_POS, SIDE_NEG = 0, 1, -1

# per-item statistics written by the dual solver and the randomization
ST_N_EVD = 0  # EVDs or Lanczos runs (line-search evaluations and the one at u* included)
ST_LZ_M = 1  # sum of Lanczos dimensions m
ST_LZ_BETA = 2  # sum of final beta_{m+1}
ST_LZ_N = 3  # number of Lanczos runs
ST_EVD_CYC = 4  # cycles spent inside dense eigh calls
ST_ALL_CYC = 5  # cycles of the whole per-item dual solve (or randomization)
ST_N_ITER = 6
ST_STATUS = 7  # 0 = iteration cap, 1 = converged, 2 = line search failed
ST_H = 8  # h_gamma at the returned u
ST_LZ_CYC = 9  # cycles inside Lanczos runs (Alg. 5 or certified; their tridiagonal EVD too)
# ST_PH_CYC + phase: cycles of the dual iterations labelled with that phase (I-A ... II-B),
# EVD / Lanczos cycles excluded; set-up before the first iteration goes to the first one's
# label, the final stopping test to the label of the returned u
ST_PH_CYC = 10
ST_CG_ITER = 14  # CG steps of the matrix-free Newton systems (``_newton_pcg``)
N_STATS = 15

MAX_BACKTRACK = 60


class DualOptions(NamedTuple):
    """Settings of a dual solve, the same for every item of a batch (a Numba named tuple)."""

    gamma: float  # regularization gamma of (11)
    eps: float  # stopping tolerance on the step norm
    max_iter: int  # dual iterations (Newton steps for NEWTON)
    method: int  # GD, ENHANCED, FAST or NEWTON
    evd: int  # EVD_EXACT or EVD_LANCZOS
    lz_rule: int  # LZ_PAPER or LZ_CERTIFIED (NEWTON only)
    a: float  # control parameter of the Lanczos threshold (20)
    initial_step: bool  # Sec. IV-A initial step from a cold start
    c_armijo: float  # Armijo constant of the line search
    shrink: float  # backtracking factor of the line search
    nm_window: int  # FAST: the line search's reference is the max of this many values
    ls_restart: bool  # GD, ENHANCED: every line search starts at t = 1
    # NEWTON, warm start (u not all equal), exact EVDs: bound lambda_max(-A) by Gershgorin
    # instead of an EVD of -A (False: the EVD, as before; kept as the tests' oracle)
    warm_bound: bool


def dual_options(gamma, eps, max_iter, method, evd, *, lz_rule=LZ_PAPER, a=1.0,
                 initial_step=True, c_armijo=1e-4, shrink=0.5, nm_window=10,
                 ls_restart=False, warm_bound=True):
    """``DualOptions`` with each field converted to its type, so that every call of a kernel
    has the same Numba signature (one compilation) whatever numbers the caller passes."""
    return DualOptions(float(gamma), float(eps), int(max_iter), int(method), int(evd),
                       int(lz_rule), float(a), bool(initial_step), float(c_armijo),
                       float(shrink), int(nm_window), bool(ls_restart), bool(warm_bound))


class BatchOutputs(NamedTuple):
    """Per-item outputs of the batch kernels; row i belongs to item i.

    Allocated and read in Python; the kernels take its arrays as separate arguments.
    """

    psi: np.ndarray  # (n_items, D) float64 0/1, the randomization's psi
    obj: np.ndarray  # (n_items,) its objective (4)
    improved: np.ndarray  # (n_items,) bool, better than the incumbent
    phase: np.ndarray  # (n_items, 4) int64, dual iterations per phase I-A ... II-B
    st_dual: np.ndarray  # (n_items, N_STATS) stats of the dual solve
    st_rand: np.ndarray  # (n_items, N_STATS) stats of the randomization

    @classmethod
    def empty(cls, n_items, D):
        """Outputs for n_items items of dimension D, statistics and counts at zero."""
        return cls(np.empty((n_items, D)), np.empty(n_items), np.zeros(n_items, np.bool_),
                   np.zeros((n_items, 4), np.int64), np.zeros((n_items, N_STATS)),
                   np.zeros((n_items, N_STATS)))


@intrinsic
def _read_cycles(typingctx):
    """LLVM ``llvm.readcyclecounter`` (rdtsc on x86); 0 where the target has no counter."""
    sig = types.uint64()

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(64), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.readcyclecounter")
        return builder.call(fn, [])

    return sig, codegen


@njit(**JIT)
def _charge_phase(stats, phase, c_mark, e_mark):
    """Add the cycles since c_mark, less the EVD/Lanczos cycles since e_mark, to ``phase``.

    Returns the new marks (now, EVD + Lanczos cycles so far), so consecutive charges tile the
    solve without overlap.
    """
    now = _read_cycles()
    e_now = stats[ST_EVD_CYC] + stats[ST_LZ_CYC]
    stats[ST_PH_CYC + phase] += float(now - c_mark) - (e_now - e_mark)
    return now, e_now


@njit(**JIT)
def read_cycle_counter():
    """Current value of the CPU cycle counter (calibrated against perf_counter in solvers.py)."""
    return _read_cycles()


# ----------------------------------------------------------------------------- basics


@njit(**JIT)
def homogenize(S, v, out_A):
    """A of eq. (10): [[0, a^T/2], [a/2, A0]] with A0 = S/4 and a = S^T 1 / 2 - v (eq. (8))."""
    D = S.shape[0]
    out_A[0, 0] = 0.0
    for j in range(D):
        s = 0.0
        for k in range(D):
            s += S[k, j]
        half_a = 0.5 * (0.5 * s - v[j])
        out_A[0, j + 1] = half_a
        out_A[j + 1, 0] = half_a
        for k in range(D):
            out_A[j + 1, k + 1] = 0.25 * S[j, k]


@njit(**JIT)
def bqp_objective(S, v, psi):
    """psi^T S psi - 2 psi^T v of the BQP (4) (rho_i dropped)."""
    D = S.shape[0]
    f = 0.0
    for j in range(D):
        if psi[j] != 0.0:
            f -= 2.0 * v[j]
            for k in range(D):
                if psi[k] != 0.0:
                    f += S[j, k]
    return f


@njit(**JIT)
def _all_equal(u):
    for j in range(1, u.shape[0]):
        if u[j] != u[0]:
            return False
    return True


@njit(**JIT)
def lanczos_start(n, out_p):
    """Deterministic unit start vector: ones plus a small aperiodic perturbation.

    The ones vector alone can be orthogonal to eigenvectors of structured C(u); the sine
    term makes the overlap with every eigenvector non-zero in practice.
    """
    s = 0.0
    for i in range(n):
        out_p[i] = 1.0 + 0.25 * math.sin(1.0 + 1.618033988749895 * i)
        s += out_p[i] * out_p[i]
    s = math.sqrt(s)
    for i in range(n):
        out_p[i] /= s
