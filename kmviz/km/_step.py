"""One BCD iteration of the Kolmogorov model (Algorithm 4), on whichever backend the fit chose.

:func:`choose_step` picks the half-steps once per fit, at its start (:meth:`KolmogorovModel.
_fit_start`): :class:`InProcessStep` (Numba threads in this process) or :class:`ClusterStep`
(block tasks on a :mod:`kmviz.parallel` backend, :mod:`kmviz.km._dist`). Both psi half-steps
return a :class:`kmviz.km.solvers.BatchResult` for the known items, and both theta half-steps
the sum of squared errors at the new (theta, psi), so :func:`bcd_iteration` reads one type
whatever the backend. The BQP settings were checked once, at the fit's start
(``st.bqp``, :func:`kmviz.km.solvers.batch_settings`): the half-steps call the unchecked core.
"""

from __future__ import annotations

import math

import numpy as np

from . import _dist
from ._kernels import simplex as _simplex
from ._scale import _nanmean
from .solvers import TIME_PARTS, BatchResult, _solve_bqp_batch_core, join_results

# Frank-Wolfe settings for the theta block (see kmviz.km._kernels.simplex for the measurements
# behind the pairwise default). The gap tolerance is relative to each user's rho_u.
FW_VARIANT = "pairwise"
FW_TOL = 1e-7
FW_MAX_ITER = 1000


def known_psi(st):
    """The incumbent psi of the known items (a copy)."""
    return st.psi.copy() if st.all_items else st.psi[st.kitems]


class InProcessStep:
    """The half-steps in this process: Numba threads over items, then over users."""

    where = "in process"

    def prepare(self, st, trace, no_likes) -> None:
        """Nothing to set up: the ratings are in this process."""

    def psi(self, st, trace):
        """(a) S_i, v_i of every known item at the current theta, (b) their BQPs; returns
        (BatchResult, the incumbent psi of the known items). The parts of ``t_bqp_s``
        (``solvers.TIME_PARTS``, non-overlapping) go to the trace; ``t_bqp_dual_s`` is the
        sum of the four ``t_dual_*_s`` phase parts."""
        cfg, mu = st.bqp, st.prm["mu_psi"]
        with trace.phase("build"):
            _simplex.build_item_stats(st.i_ptr, st.i_idx, st.i_p, st.theta, st.S, st.v, st.rho)
            Sk, vk = (st.S, st.v) if st.all_items else (st.S[st.kitems], st.v[st.kitems])
            if mu > 0.0:
                vk = vk - 0.5 * mu  # mu ||psi||^2 = mu 1^T psi for binary psi
            psi_k = known_psi(st)
        # in chunks of items, each drawing its part of the same Gaussian stream (issue 36:
        # the draws of all items at once were 520 MB at 25M ratings, D = 20, the fit's peak);
        # S from build_item_stats is symmetric bit for bit, psi binary: no checks
        with trace.phase("bqp"):
            n_known, chunk, n = Sk.shape[0], st.bqp_chunk, st.D + 1
            parts = []
            for lo in range(0, n_known, chunk):
                hi = min(lo + chunk, n_known)
                xi = (np.ascontiguousarray(st.rng.standard_normal((hi - lo, cfg.n_rand, n)))
                      if cfg.draws else None)
                parts.append(_solve_bqp_batch_core(
                    np.ascontiguousarray(Sk[lo:hi]), np.ascontiguousarray(vk[lo:hi]),
                    np.ascontiguousarray(psi_k[lo:hi]),
                    None if st.u_prev is None else st.u_prev[lo:hi], cfg, xi))
            res = join_results(parts)
        times = res.times or {}
        for name in ("dual", *TIME_PARTS):
            trace.add_time("bqp_dual" if name == "dual" else name, float(times.get(name, 0.0)))
        return res, psi_k

    def theta(self, st, trace) -> float:
        """(c) Frank-Wolfe per user from the current theta, (d) the squared error."""
        with trace.phase("lcqp"):
            _simplex.fw_users(st.u_ptr, st.u_idx, st.u_p, st.psi, st.prm["lambda_theta"],
                              FW_TOL, FW_MAX_ITER, st.fw_code, st.theta, st.fw_gap,
                              st.fw_iter, st.fw_obj)
        with trace.phase("objective"):
            return _simplex.squared_error(st.users, st.items, st.p, st.theta, st.psi)


class ClusterStep:
    """The same half-steps as blocks on a cluster (:mod:`kmviz.km._dist`); the phase times
    are the backend's (scatter, compute, gather), worker seconds are not added to the BQP's
    parts."""

    where = "cluster"

    def __init__(self, backend):
        self.backend = backend
        self._timer = {}

    def prepare(self, st, trace, no_likes) -> None:
        """Put the blocks' ratings on the workers (the first iteration only; 0 s later)."""
        with trace.phase("scatter_data"):
            if st.dask is None:
                _dist.setup(self.backend, st)
                if st.prm["threshold"] is not None and not st.mean_p > 0:
                    no_likes(st.prm["threshold"], *st.partitions.value_range)

    def psi(self, st, trace):
        psi_k = known_psi(st)
        self._timer = {}
        return _dist.psi_step(self.backend, st, psi_k, self._timer), psi_k

    def theta(self, st, trace) -> float:
        sse = _dist.theta_step(self.backend, st, st.prm["lambda_theta"], FW_TOL, FW_MAX_ITER,
                               self._timer)
        for name, seconds in self._timer.items():
            if not name.endswith(("_task_max", "_task_sum", "_calls")):
                trace.add_time(name, seconds)
        return sse


def choose_step(backend):
    """The half-steps of a fit: on ``backend`` (the active :mod:`kmviz.parallel` backend at
    the fit's start), or in process when it is None."""
    return InProcessStep() if backend is None else ClusterStep(backend)


def bcd_iteration(st, trace, no_likes) -> dict:
    """One BCD iteration of Algorithm 4 with the fit's half-steps ``st.step``: psi for all
    known items, then theta for all users; returns the trace row's values."""
    step = st.step
    step.prepare(st, trace, no_likes)
    res, psi_k = step.psi(st, trace)
    new_psi = np.asarray(res.psi, dtype=np.float64)
    n_changed = int(np.any(new_psi != psi_k, axis=1).sum())
    st.u_prev = np.array(res.u, dtype=np.float64)
    if st.all_items:
        st.psi = np.ascontiguousarray(new_psi)
        st.dual_u = st.u_prev
    else:
        st.psi[st.kitems] = new_psi
        st.dual_u[st.kitems] = st.u_prev
    sse = step.theta(st, trace)
    lam, mu = st.prm["lambda_theta"], st.prm["mu_psi"]
    with trace.phase("objective"):
        obj = sse
        if lam > 0.0:
            obj += lam * float(np.sum(st.theta[st.known_users] ** 2))
        if mu > 0.0:
            obj += mu * float(st.psi[st.kitems].sum())
    return row_values(st, res, obj, sse, n_changed)


def row_values(st, res: BatchResult, obj, sse, n_changed) -> dict:
    """The trace row of one BCD iteration from its psi step's result and the state."""
    phase_tot = res.phase_counts.reshape(-1, 4).sum(axis=0) if res.phase_counts.size else \
        np.zeros(4)
    fw_known = st.known_users
    return dict(
        objective=obj,
        train_nrmse=math.sqrt(sse / st.n_ratings),  # RMSE on the probability scale
        n_phase_1a=int(phase_tot[0]), n_phase_1b=int(phase_tot[1]),
        n_phase_2a=int(phase_tot[2]), n_phase_2b=int(phase_tot[3]),
        n_evd=int(np.sum(res.n_evd)),
        n_dual_iter=int(np.sum(res.n_iter)),
        n_psi_changed=n_changed,
        bqp_improved=int(np.sum(res.improved)),
        lanczos_m_mean=_nanmean(res.lanczos_m),
        lanczos_beta_mean=_nanmean(res.lanczos_beta),
        fw_gap_max=float(st.fw_gap[fw_known].max()) if fw_known.any() else 0.0,
        n_fw_iter=int(st.fw_iter.sum()),
    )


def warn_if_no_better_than_mean(model, trace, validation) -> None:
    """Warn (trace event and :class:`~kmviz.exceptions.NoBetterThanMeanWarning`) when the
    validation NRMSE is no better than predicting the training mean probability, with
    the change to try: train on the likes (the top quarter of the scale) and pull theta
    toward uniform (lambda_theta = 1), as kmviz.km.relations.choose_settings measures."""
    import warnings

    from ..exceptions import NoBetterThanMeanWarning

    last = trace.rows[-1] if trace.rows else {}
    ours = last.get("validation_nrmse")
    if validation is None or ours is None or not math.isfinite(float(ours)):
        return
    p = model._targets(np.asarray(validation.values, dtype=np.float64))
    base = float(np.sqrt(np.mean((p - model.mean_p_) ** 2))) if p.size else math.nan
    if not (math.isfinite(base) and float(ours) >= base):
        return
    if getattr(validation, "implicit", False) and base < 1e-12:
        # one-class data: only ones, which the training mean (1) predicts exactly
        msg = ("These are one-class data (only what each user has, every value 1): KM "
               "models ratings, and the training mean already predicts every 1 exactly, "
               "so it has nothing to learn (every support holds every event). Fix: load "
               "the file with 'Absent pairs as 0' (absent=\"zero\"), or train one-class MF "
               "or similarity learning on it; the relation miner on the Implications page "
               "reads absent pairs as 0 by itself.")
        trace.event("warning", msg)
        warnings.warn(msg, NoBetterThanMeanWarning, stacklevel=4)
        return
    fix, words = {}, []
    v = np.asarray(validation.values)
    if v.size and np.all((v == 0.0) | (v == 1.0)):
        # 0/1 data: the likes are the ratings; a strong pull toward uniform theta is what
        # beat the mean (INTERACTION_CANDIDATES of kmviz.km.relations: lambda_theta = 100)
        if float(model.lambda_theta) < 100.0:
            fix["fix_lambda_theta"] = 100.0
            words.append("set lambda_theta = 100")
    elif model.threshold_ is None and not getattr(validation, "implicit", False):
        from ..rules import liked_threshold

        liked = liked_threshold(validation)   # the top quarter, rounded to the step
        if not isinstance(liked, str):
            fix["fix_threshold"] = float(liked)
            words.append(f"train on the likes (threshold {liked:g})")
    if float(model.lambda_theta) == 0.0 and "fix_lambda_theta" not in fix:
        fix["fix_lambda_theta"] = 1.0
        words.append("set lambda_theta = 1")
    advice = " and ".join(words) or "try another D or more ratings per user"
    msg = (f"KM's validation NRMSE {float(ours):.4g} is no better than predicting the "
           f"training mean ({base:.4g}): its supports (and their implications) are not "
           f"supported by the data. Fix: {advice}.")
    trace.event("warning", msg, **fix)
    warnings.warn(msg, NoBetterThanMeanWarning, stacklevel=4)
