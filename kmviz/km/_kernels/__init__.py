"""Numba kernels of the binary QP (4), one module per algorithm.

- ``common``: the codes shared with ``solvers.py`` (method, evd, phase, side), the per-item
  ``stats`` row (``ST_*``), the cycle counter, the homogenized problem (10) and its objective
- ``lanczos``: the modified Lanczos method (Alg. 5) with the threshold of eq. (20)
- ``dual``: the dual h_gamma (14) and its gradient methods, Algs. 1 and 2 and a
  Barzilai-Borwein variant
- ``randomize``: randomization (Alg. 3)
- ``exact``: exact enumeration and branch-and-bound
- ``newton_hessian`` and ``newton``: the "fast" method, semismooth Newton on the same dual,
  fused with Alg. 3

Every kernel is an array-in/array-out ``@njit(cache=True)`` function; per-item outputs only.
The plain-NumPy twins live in ``kmviz/km/_reference.py``. The names below are the package's
interface (``from kmviz.km import _kernels as K``); helpers stay in their modules.
"""

from .common import (  # noqa: F401
    ENHANCED, EVD_EXACT, EVD_LANCZOS, FAST, GD, LZ_CERTIFIED, LZ_PAPER, MAX_BACKTRACK,
    N_STATS, NEWTON, PHASE_IA, PHASE_IB, PHASE_IIA, PHASE_IIB, SIDE_ALL, SIDE_NEG, SIDE_POS,
    ST_ALL_CYC, ST_CG_ITER, ST_EVD_CYC, ST_H, ST_LZ_BETA, ST_LZ_CYC, ST_LZ_M, ST_LZ_N,
    ST_N_EVD, ST_N_ITER, ST_PH_CYC, ST_STATUS, bqp_objective, homogenize, lanczos_start,
    BatchOutputs, DualOptions, dual_options, read_cycle_counter,
)
from .dual import Trajectory, dual_solve_batch, dual_solve_item, dual_value_grad  # noqa: F401
from .exact import bnb_batch, bnb_bqp, enumerate_batch, enumerate_bqp  # noqa: F401
from .lanczos import lanczos_positive_pairs, lanczos_threshold, lanczos_tridiag  # noqa: F401
from .newton import (  # noqa: F401
    LZ_CAP_DIV, LZ_DENSE_N, LZ_SWITCH_ITER, newton_randomize_batch, newton_randomize_rows,
    newton_solve_item,
    positive_factor,
)
from .randomize import randomize_batch, randomize_from_pairs, randomize_item  # noqa: F401
