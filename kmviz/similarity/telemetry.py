"""How the similarity family's trace columns are shown: names and colours for :mod:`kmviz.viz`.

Plain data only (the pattern of :mod:`kmviz.ocmf.telemetry`): the registry entry points at
this module and the generic figures read :data:`FIGURE_OPTIONS`.
"""

from __future__ import annotations

#: Trace timer -> display name (the paper's cost terms (15), (28), (40)); disjoint phases.
PHASE_LABELS = {
    "t_tower_forward_s": "tower forward passes P = f(U), Q = g(V)",
    "t_vjp_s": "tower VJPs <J, M> (gradient, G d)",
    "t_jvp_s": "tower JVPs W, H (G d)",
    "t_gramians_s": "k x k Gramians P_c, Q_c, W_c, H_c",
    "t_observed_pairs_s": "observed-pair sums (L+, X Q, Z Q, ...)",
    "t_dense_terms_s": "dense (m + n) x k terms M, N",
}

PART_COLORS = {
    "t_tower_forward_s": "#1f77b4",
    "t_vjp_s": "#ff7f0e",
    "t_jvp_s": "#2ca02c",
    "t_gramians_s": "#d62728",
    "t_observed_pairs_s": "#9467bd",
    "t_dense_terms_s": "#8c564b",
}

#: Metric panels: column -> (panel title, y-axis title).
METRIC_LABELS = {
    "objective": ("Objective L(θ), eq. (4)", "L(θ)"),
    "l_plus": ("L+ (observed pairs, split (11))", "L+"),
    "l_minus": ("ω L- (all m x n pairs, (13))", "ω L-"),
    "regularizer": ("0.5 λ ‖θ‖²", "regularizer"),
    "relative_decrease": ("Relative decrease of L", "(L_prev − L) / L_prev"),
    "grad_norm": ("Gradient norm", "‖∇L‖"),
    "stochastic_grad_norm": ("Stochastic gradient norm (mean)", "‖g‖"),
    "n_cg": ("CG steps (Alg. 3)", "CG steps"),
    "cg_residual_ratio": ("CG relative residual", "‖r‖ / ‖∇L‖"),
    "n_line_search": ("Line-search trials", "trials"),
    "step_size": ("Step size δ", "δ"),
    **{f"validation_precision_at_{k}": (f"Validation p@{k}", f"p@{k}") for k in (1, 3, 5)},
    "validation_map_at_5": ("Validation MAP@5 (eq. 52)", "MAP@5"),
    "validation_ndcg_at_5": ("Validation nDCG@5", "nDCG@5"),
    "validation_recall_at_5": ("Validation recall@5", "recall@5"),
}

#: The columns of the objective split (they sum to ``objective``).
OBJECTIVE_PARTS = ("l_plus", "l_minus", "regularizer")

ITERATION = "iteration"

FIGURE_OPTIONS = {
    "bcd_convergence": dict(labels=METRIC_LABELS, iteration=ITERATION),
    "phase_time": dict(iteration=ITERATION, labels=PHASE_LABELS, colors=PART_COLORS),
}
