"""How the gFM's trace columns are shown: names of the metric and phase columns, for the
generic :mod:`kmviz.viz` figures (the ``telemetry`` module of the family registry entry).

Plain data only, like :mod:`kmviz.km.telemetry`.
"""

from __future__ import annotations

#: Column -> (panel title, y-axis title) of the per-batch metrics.
METRIC_LABELS = {
    "objective": ("Loss of eq. (3): on the fresh batch (one-pass), + ridge on all data (ALS)",
                  "||r||² / 2n"),
    "train_rmse": ("Batch RMSE before the step", "RMSE"),
    "validation_rmse": ("Validation RMSE", "RMSE"),
    "validation_nmse": ("Validation NMSE", "MSE / var(y)"),
    "eps": ("εₜ = ‖w* − w‖ + ‖M* − M‖_F", "error"),
    "eps_spec": ("εₜ of the paper (spectral norm)", "error"),
    "err_w": ("βₜ = ‖w* − w‖", "error"),
    "err_M": ("‖M* − M‖_F", "error"),
    "err_M_spec": ("γₜ = ‖M* − M‖₂", "error"),
    "rel_err": ("Relative error", "ε / (‖w*‖ + ‖M*‖_F)"),
    "tan_theta": ("αₜ = tan θ(U, U*)", "tan θ"),
    "contraction": ("Contraction εₜ / εₜ₋₁", "ratio"),
}

#: Display names of the timed parts of one batch (trace columns ``t_<name>_s``).
PHASE_LABELS = {
    "t_init_s": "initialization (Lanczos, line 2)",
    "t_residual_s": "statistics pass (r, H₁U, h₂, h₃)",
    "t_qr_s": "power step and QR (lines 5-6)",
    "t_v_update_s": "V pass (H₁U_new, line 8)",
    "t_truth_s": "recovery errors (bookkeeping)",
    "t_caches_s": "ALS: residual and projections Z U, Z V",
    "t_solve_U_s": "ALS: coordinate sweeps over (w, U), V fixed",
    "t_solve_V_s": "ALS: coordinate sweeps over (w, V), U fixed",
    "t_sweep_s": "ALS: one sweep over (w, U, V) together",
    "t_objective_s": "ALS: objective on all the data",
}

#: Columns on a log scale in convergence panels.
LOG_COLUMNS = ("eps", "eps_spec", "err_w", "err_M", "err_M_spec", "rel_err", "tan_theta",
               "objective", "train_rmse", "validation_rmse", "validation_nmse")

#: x axis of the recovery curves: instances consumed.
X_COLUMN = "n_seen"

#: What one row of the trace is, for the figures' x axes.
ITERATION = "iteration"

FIGURE_OPTIONS = {
    "convergence": dict(labels=METRIC_LABELS, iteration=ITERATION),
    "phase_time": dict(iteration=ITERATION, labels=PHASE_LABELS),
}
