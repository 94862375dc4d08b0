"""Diagnostics of one item's dual (14): C(u) of Lemma 1, h_gamma(u) and its gradient, and the
per-iteration record of one dual solve (paper Figs. 1-2). Public through
:mod:`kmviz.km.solvers`."""

from __future__ import annotations

import numpy as np

from .._threads import single_blas_thread
from kmviz._validation import check_number, check_option

from . import _kernels as K
from ._bqp_common import PHASES
from ._dual_checks import DUAL_METHODS, EVDS, _check_items, _dual_options


def dual_matrix(S, v, u):
    """C(u) = -A - diag(u) of Lemma 1 for the BQP (S, v) (e.g. at an item's u*)."""
    S, v, D = _check_items(S, v, "dual_matrix", batch=False)
    u = np.asarray(u, dtype=np.float64)
    if u.shape != (D + 1,):
        raise ValueError(f"dual_matrix: u must have shape {(D + 1,)}; got shape {u.shape}.")
    A = np.empty((D + 1, D + 1))
    K.homogenize(S, v, A)
    return -A - np.diag(u)


def dual_objective(S, v, u, gamma=100.0):
    """h_gamma(u) of (14) and its gradient (13), by a full EVD."""
    S, v, D = _check_items(S, v, "dual_objective", batch=False)
    gamma = check_number("dual_objective", "gamma", gamma, low=0, closed="neither")
    u = np.ascontiguousarray(u, dtype=np.float64)
    g = np.empty(D + 1)
    h = K.dual_value_grad(S, v, u, gamma, g)
    return float(h), g



def dual_trajectory(S, v, method="enhanced", gamma=100.0, *, evd="exact", initial_step=False,
                    u0=None, eps=1e-6, max_iter=5000, a=1.0, c_armijo=1e-4, shrink=0.5,
                    nm_window=10, ls_restart=False):
    """Per-iteration record of one dual solve (paper Figs. 1-2).

    Returns a dict of arrays over the iterates u_0..u_N: ``iteration``, ``u`` (N+1, D+1),
    ``u_norm``, ``h`` (h_gamma(u_i)), ``gap`` (h(u_i) - h(u*)), ``phase`` (labels "I-A" ...
    of Alg. 2 at u_i), ``step`` (accepted t_i; NaN at the last iterate), ``n_evd``
    (cumulative EVDs before step i, the one of -A included), plus ``h_star``, ``u_star`` and
    ``converged``. u* comes from a long tight run (fast method, eps = 1e-12, from the
    trajectory's last iterate); h(u*) is taken as the minimum of that run and the recorded
    values, so gaps are >= 0.
    """
    owner = "dual_trajectory"
    check_option(owner, "method", method, tuple(DUAL_METHODS))
    check_option(owner, "evd", evd, tuple(EVDS))
    gamma = check_number(owner, "gamma", gamma, low=0, closed="neither")
    a, eps, max_iter, c_armijo, shrink, nm_window = _dual_options(
        owner, a, eps, max_iter, c_armijo, shrink, nm_window)
    S, v, D = _check_items(S, v, owner, batch=False)
    n = D + 1
    u = np.ones(n) if u0 is None else np.array(u0, dtype=np.float64).reshape(n)
    t_first = 1.0 if u0 is None or np.all(u == u[0]) else 1.0 / gamma
    traj = K.Trajectory.allocate(max_iter, n)
    phase = np.zeros(4, dtype=np.int64)
    stats = np.zeros(K.N_STATS)
    opts = K.dual_options(gamma, eps, max_iter, DUAL_METHODS[method], EVDS[evd], a=a,
                          initial_step=initial_step, c_armijo=c_armijo, shrink=shrink,
                          nm_window=nm_window, ls_restart=ls_restart)
    # u*: a long tight run of the BB variant from the trajectory's last iterate
    opts_star = K.dual_options(gamma, 1e-12, 100000, K.FAST, K.EVD_EXACT, a=1.0,
                               initial_step=False, c_armijo=1e-4, shrink=0.5, nm_window=10,
                               ls_restart=False)
    with single_blas_thread():
        n_iter = int(K.dual_solve_item(S, v, u, t_first, opts, phase, stats, traj))
        u_star = u.copy()
        st2 = np.zeros(K.N_STATS)
        K.dual_solve_item(S, v, u_star, 1.0 / gamma, opts_star, np.zeros(4, np.int64), st2,
                          K.Trajectory.skip())
    traj_h, traj_u, traj_step, traj_phase, traj_nevd = traj
    N = n_iter + 1
    h = traj_h[:N]
    h_star = min(float(st2[K.ST_H]), float(np.min(h)))
    return {
        "iteration": np.arange(N),
        "u": traj_u[:N],
        "u_norm": np.linalg.norm(traj_u[:N], axis=1),
        "h": h,
        "gap": h - h_star,
        "phase": np.array([PHASES[p] for p in traj_phase[:N]]),
        "step": traj_step[:N],
        "n_evd": traj_nevd[:N].astype(np.int64),
        "h_star": h_star,
        "u_star": u_star,
        "converged": bool(stats[K.ST_STATUS] == 1),
    }
