"""How kernel matrix completion's trace columns are shown, for the generic :mod:`kmviz.viz`
figures (the ``telemetry`` module of the family registry entry).

Plain data only, like :mod:`kmviz.km.telemetry`.
"""

from __future__ import annotations

#: Column -> (panel title, y-axis title) of the per-iteration metrics.
METRIC_LABELS = {
    # the y axis names the quantity, not the methods' equations (3.40), (3.58), (3.28), (2.15)
    "objective": ("Objective of the method", "objective value"),
    # CG lowers the error in the K_OO + mu I norm, not this: it can jump before it settles
    # (kmviz.kmc.teaching.convergence_note says why, for a run whose curve does)
    "train_rmse": ("Training RMSE (can rise under CG)", "RMSE"),
    "validation_rmse": ("Validation RMSE", "RMSE"),
    "validation_nmse": ("Validation NMSE (3.68)", "Σ(F̂ − F)² / ΣF²"),
    "truth_nmse": ("NMSE of the whole matrix (3.68)", "‖F̂ − F‖²_F / ‖F‖²_F"),
    "cg_residual": ("CG relative residual", "‖m − (K_OO + μI)c‖ / ‖m‖"),
    "mu": ("μ of the PG schedule (Table 2.1)", "μ"),
    "rank": ("Rank of F after the shrinkage", "rank"),
    "rel_change": ("Relative change of F", "‖F_k − F_k−1‖ / ‖F_k−1‖"),
    "step_size": ("SGD step tₙ (3.63)", "tₙ"),
}

#: Display names of the timed parts (trace columns ``t_<name>_s``).
PHASE_LABELS = {
    "t_kernels_s": "kernels (build and PSD check)",
    "t_eig_s": "eigendecompositions of the kernels",
    "t_invert_s": "kernel inverses (ALS, SGD)",
    "t_features_s": "Kronecker features (ΦᵀΦ)",
    "t_gram_s": "K_OO (s × s)",
    "t_setup_s": "CG set-up (preconditioner)",
    "t_init_s": "PG initialization (2.42)",
    "t_solve_s": "solve (Cholesky)",
    "t_cg_s": "CG iteration (vec trick)",
    "t_sgd_s": "SGD updates",
    "t_als_s": "ALS sweep",
    "t_prox_s": "proximal step (SVD)",
    "t_objective_s": "objective and RMSE",
    "t_truth_s": "whole-matrix NMSE (bookkeeping)",
}

#: Columns on a log scale in convergence panels.
LOG_COLUMNS = ("objective", "train_rmse", "validation_rmse", "validation_nmse", "truth_nmse",
               "cg_residual", "mu", "rel_change")

#: What one row of the trace is, for the figures' x axes.
ITERATION = "iteration"

FIGURE_OPTIONS = {
    "convergence": dict(labels=METRIC_LABELS, iteration=ITERATION),
    "phase_time": dict(iteration=ITERATION, labels=PHASE_LABELS),
}


def convergence_note(trace) -> str | None:
    """Why a Kernel MC run's training RMSE rises before it settles, when it does
    (:func:`kmviz.kmc.teaching.convergence_note`), for the Convergence page."""
    from .teaching import convergence_note as note

    params = getattr(trace, "params", {}) or {}
    if getattr(trace, "n_iter", 0) == 1:
        return ("One point per curve: this run solved its system in one step (KKMCEX's "
                "direct solve, used up to a few thousand observed values), so there is no "
                "iteration to follow. The iterative methods (KKMCEX with conjugate "
                "gradients on more data, RRMCEX, ALS, SGD, proximal gradient) draw a curve.")
    return note(trace.to_frame(), str(params.get("method", "kkmcex")))
