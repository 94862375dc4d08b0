"""How one-class MF's trace columns are shown: names and colours for :mod:`kmviz.viz`.

Plain data only (see :mod:`kmviz.km.telemetry` for the pattern): the registry entry of the
family points at this module, and the generic figures read :data:`FIGURE_OPTIONS`::

    from kmviz.ocmf.telemetry import FIGURE_OPTIONS
    from kmviz.viz import phase_time_figure

    fig = phase_time_figure(model.trace_, **FIGURE_OPTIONS["phase_time"])
"""

from __future__ import annotations

from .problem import PHASES

#: Display names of a block's timed phases (``t_w_<phase>_s``, ``t_h_<phase>_s``).
_PHASE_NAMES = {
    "precompute": "Gramians O_c, O^T b (and M-bar)",
    "function": "function values (Alg. 1)",
    "gradient": "gradients (Alg. 2)",
    "hessian_vector": "Hessian-vector products and preconditioner (Alg. 3)",
    "line_search": "line-search trials (Alg. 6)",
}

#: Trace timer -> display name, in drawing order: the W block's phases, the H block's, then
#: the objective split.
PHASE_LABELS = {
    **{f"t_w_{p}_s": f"W step: {_PHASE_NAMES[p]}" for p in PHASES},
    **{f"t_h_{p}_s": f"H step: {_PHASE_NAMES[p]}" for p in PHASES},
    "t_objective_s": "objective split",
}

_W_COLORS = ("#c6dbef", "#6baed6", "#2171b5", "#08306b", "#9ecae1")
_H_COLORS = ("#fdd0a2", "#fd8d3c", "#d94801", "#7f2704", "#fdae6b")
#: One colour per timer: blues for the W step, oranges for the H step.
PART_COLORS = {
    **{f"t_w_{p}_s": c for p, c in zip(PHASES, _W_COLORS)},
    **{f"t_h_{p}_s": c for p, c in zip(PHASES, _H_COLORS)},
    "t_objective_s": "#7f7f7f",
}

#: Metric panels: column -> (panel title, y-axis title).
METRIC_LABELS = {
    "objective": ("Objective of (2)", "f(W, H)"),
    "l_plus": ("L+ (observed positives, split loss (6))", "L+"),
    "l_minus": ("L- (all m x n pairs, closed form (7))", "L-"),
    "reg_w": ("λ_w ‖W‖²", "regularizer"),
    "reg_graph": ("λ_w λ_g tr(BᵀLB)", "graph term"),
    "reg_h": ("λ_h ‖H‖²", "regularizer"),
    "w_grad_norm": ("W block: final gradient norm", "‖∇‖"),
    "h_grad_norm": ("H block: final gradient norm", "‖∇‖"),
    "w_trust_radius": ("W block: trust radius Δ", "Δ"),
    "h_trust_radius": ("H block: trust radius Δ", "Δ"),
    "n_w_cg": ("W block: CG steps", "CG steps"),
    "n_h_cg": ("H block: CG steps", "CG steps"),
    **{f"validation_precision_at_{k}": (f"Validation p@{k}", f"p@{k}") for k in (1, 3, 5)},
    **{f"validation_ndcg_at_{k}": (f"Validation nDCG@{k}", f"nDCG@{k}") for k in (1, 3, 5)},
    "validation_recall_at_5": ("Validation recall@5", "recall@5"),
    "validation_capped_precision_at_5": ("Validation p@5, implicit's min(k, |R|) form",
                                         "capped p@5"),
}

#: The columns of the objective split, for a stacked view (they sum to ``objective``).
OBJECTIVE_PARTS = ("l_plus", "l_minus", "reg_w", "reg_graph", "reg_h")

#: Keyword options of each :mod:`kmviz.viz` figure for an OCMF run.
#: What one row of the trace is, for the figures' x axes.
ITERATION = "outer iteration"

FIGURE_OPTIONS = {
    "convergence": dict(labels=METRIC_LABELS, iteration=ITERATION),
    "phase_time": dict(iteration=ITERATION, labels=PHASE_LABELS, colors=PART_COLORS),
}
