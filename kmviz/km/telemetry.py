"""How the Kolmogorov model's trace columns are shown: names, colours, phases of Alg. 2.

:mod:`kmviz.viz` is generic (kernel matrix completion, one-class MF and gFM share it): its
figures name a trace column after the column itself (``t_build_s`` -> "build") unless they
are given labels. This module holds the KM vocabulary to pass them. Each figure's options are
gathered in :data:`FIGURE_OPTIONS` (key: the function's name without "_figure")::

    from kmviz.km.telemetry import FIGURE_OPTIONS
    from kmviz.viz import phase_time_figure

    fig = phase_time_figure(trace, **FIGURE_OPTIONS["phase_time"])

Plain data only: the figures stay free of KM imports, and a new family adds its own module
like this one.
"""

from __future__ import annotations

#: The phases of the enhanced dual GD (paper Alg. 2, Table II), as in the ``phase`` column of
#: :func:`kmviz.km.solvers.dual_trajectory`.
PHASES = ("I-A", "I-B", "II-A", "II-B")

#: Colour of each phase; "GD" is the original GD of Alg. 1 (no phases).
PHASE_COLORS = {"I-A": "#4c78a8", "I-B": "#72b7b2", "II-A": "#f58518", "II-B": "#e45756",
                "GD": "#7f7f7f"}

#: Trace count columns: dual GD iterations spent in each phase.
PHASE_COUNT_COLUMNS = {"I-A": "n_phase_1a", "I-B": "n_phase_1b", "II-A": "n_phase_2a",
                       "II-B": "n_phase_2b"}

#: Trace time columns: dual GD seconds spent in each phase (EVD and Lanczos time excluded).
PHASE_TIME_COLUMNS = {"I-A": "t_dual_1a_s", "I-B": "t_dual_1b_s", "II-A": "t_dual_2a_s",
                      "II-B": "t_dual_2b_s"}

#: Display names of the timed parts of one BCD iteration (trace columns ``t_<name>_s``), in
#: drawing order. ``t_bqp_other_s`` is the part of ``t_bqp_s`` outside its named parts.
PHASE_LABELS = {
    "t_lcqp_s": "LCQP (Frank-Wolfe, θ)",
    "t_build_s": "build S_i, v_i",
    "t_dual_1a_s": "BQP dual GD, phase I-A",
    "t_dual_1b_s": "BQP dual GD, phase I-B",
    "t_dual_2a_s": "BQP dual GD, phase II-A",
    "t_dual_2b_s": "BQP dual GD, phase II-B (EVD excluded)",
    "t_bqp_dual_s": "BQP dual GD (all phases)",
    "t_evd_s": "dense EVD (eigh)",
    "t_lanczos_s": "Lanczos (Alg. 5)",
    "t_randomization_s": "randomization (Alg. 3)",
    "t_bqp_other_s": "other BQP work (set-up, draws)",
    "t_objective_s": "objective and RMSE",
}

#: One colour per timed part, no two alike: the dual GD parts take their phase's colour.
PART_COLORS = {
    "t_lcqp_s": "#54a24b",
    "t_build_s": "#b279a2",
    **{col: PHASE_COLORS[p] for p, col in PHASE_TIME_COLUMNS.items()},
    "t_bqp_dual_s": "#eeca3b",
    "t_evd_s": "#9d755d",
    "t_lanczos_s": "#ff9da6",
    "t_randomization_s": "#1f3b73",
    "t_bqp_other_s": "#bab0ac",
    "t_objective_s": "#17becf",
}

#: Timers that contain others: t_bqp_s is the whole BQP step (its parts below plus the rest,
#: drawn as t_bqp_other_s); t_bqp_dual_s is the sum of the four phase parts.
NESTED_TIMERS = {
    "t_bqp_s": ("t_bqp_dual_s", "t_evd_s", "t_lanczos_s", "t_randomization_s"),
    "t_bqp_dual_s": tuple(PHASE_TIME_COLUMNS.values()),
}

#: Phase names of the phase count columns (figures and metrics say "phase I-A").
PHASE_COUNT_LABELS = {col: p for p, col in PHASE_COUNT_COLUMNS.items()}
PHASE_COUNT_COLORS = {col: PHASE_COLORS[p] for p, col in PHASE_COUNT_COLUMNS.items()}

#: Phases whose dual GD iterations need no EVD for their direction (Alg. 2).
NO_EVD_PHASES = {PHASE_COUNT_COLUMNS[p]: p for p in ("I-A", "I-B", "II-A")}

#: What one row of a KM trace is (the x-axis of the figures): the paper's BCD iteration τ.
ITERATION = "BCD iteration τ"

#: KM's names for the BCD metric panels: column -> (panel title, y-axis title).
#: ``train_rmse`` is the column of older KM traces for today's ``train_nrmse``.
METRIC_LABELS = {
    "train_nrmse": ("Training NRMSE", "NRMSE (probability scale)"),
    "train_rmse": ("Training RMSE", "RMSE (probability scale)"),
    "objective": ("Objective of (2)", "sum of squared errors"),
    "validation_nrmse": ("Validation NRMSE", "NRMSE (probability scale)"),
}

#: Keyword options of each :mod:`kmviz.viz` figure for a KM run, keyed by the function's name
#: without "_figure".
FIGURE_OPTIONS = {
    "convergence": dict(labels=METRIC_LABELS, iteration=ITERATION),
    "dual_gap": dict(phase_colors=PHASE_COLORS),
    "phase_share": dict(labels=PHASE_COUNT_LABELS, colors=PHASE_COUNT_COLORS,
                        title="Share of dual GD iterations per phase (Table II)",
                        y="share of dual iterations (%)", iteration=ITERATION),
    "phase_time": dict(labels=PHASE_LABELS, colors=PART_COLORS, nested=NESTED_TIMERS,
                       iteration=ITERATION),
    "evd_savings": dict(no_evd=NO_EVD_PHASES, title="EVD elimination of Alg. 2",
                        iteration=ITERATION),
}


def convergence_note(trace) -> str | None:
    """Why a KM run's curves go flat, for the Convergence page: block coordinate descent
    stops moving once no item's binary ψ changes (a fixed point: the θ steps then return the
    same θ). A run flat from its first point found that fixed point in one iteration, which
    looks like nothing happened; the page says so. None when no curve is flat."""
    rows = list(getattr(trace, "rows", []) or [])
    if len(rows) < 2 or "n_psi_changed" not in rows[0]:
        return None
    still = next((r["iteration"] for r in rows[1:] if r.get("n_psi_changed") == 0), None)
    if still is None:
        return None
    end = rows[-1]
    held = ""
    if end.get("validation_nrmse") is not None:
        held = f" Validation NRMSE {float(end['validation_nrmse']):.3g} at the end."
    if still == 2:
        return ("Flat from the first point: after iteration 1 no item's ψ changed, so block "
                "coordinate descent was already at a fixed point (ψ is binary; with ψ fixed "
                "the θ steps give the same θ, and the objective stays at "
                f"{float(end['objective']):.4g}). Iteration 1's θ and ψ steps did all the "
                "work from the random start, which the curve does not draw." + held)
    return (f"Flat from iteration {still}: no item's ψ changed there, so block coordinate "
            "descent stopped moving (a fixed point of its binary ψ steps; the θ steps then "
            "give the same θ)." + held)
