"""Streamlit glue of the OCMF page: the objective split (6)-(7) over the iterations with
TRON's steps, one user's top-k with each score's attribution, and the rho x lambda grid of
validation p@5 (a page job: in the fit queue, with progress and Stop). Numbers from
:mod:`kmviz.ocmf.analysis`, figures from :mod:`kmviz.ocmf.figures` and :mod:`kmviz.viz`."""

from __future__ import annotations

import numpy as np
import streamlit as st

from kmviz.ocmf.analysis import (objective_panel_title, objective_panels, tron_trace,
                                 user_recommendations, validation_grid)
from kmviz.ocmf.figures import grid_figure
from kmviz.viz import convergence_figure, phase_time_figure

from .. import page_jobs
from ..errors import user_errors
from ..replay import hold_iteration_axis, replay_run

GRIDS = "ocmf_grids"  # (run_id, rhos, lambdas) -> rho x lambda table of validation p@5
GRID_JOB = "ocmf_grid_job"  # the page job computing it


def replayed(run):
    """The page's replay slider: ``run`` as it was after the iteration picked (its W, H and
    the trace up to then), drawn by the same figures."""
    return replay_run(run, key="ocmf_replay",
                      redrawn_from="its W and H, and the objective's terms up to then")


def objective_figures(run, fam, *, whole=None) -> tuple[list, list]:
    """The objective's panels of ``run``'s trace (a replayed trace keeps the x axis of
    ``whole``, the fit's trace, so the curves grow) and the terms that stayed 0."""
    rows, always_zero = objective_panels(run.trace)
    figures = []
    for row in rows:
        fig = convergence_figure({run.label: run.trace}, metrics=row,
                                 title=objective_panel_title(row),
                                 **fam.figure_options("convergence"))
        if whole is not None and whole is not run.trace:
            fig = hold_iteration_axis(fig, {run.label: whole}, whole_figure=convergence_figure(
                {run.label: whole}, metrics=row, title=objective_panel_title(row),
                **fam.figure_options("convergence")))
        figures.append(fig)
    return figures, always_zero


def objective_section(run, fam, *, whole=None) -> None:
    """The objective's terms per iteration, the time per phase and TRON's inner steps
    (``whole``: the fit's trace when ``run`` is replayed at an earlier iteration)."""
    model = run.model
    st.subheader("The objective, split (6)-(7)")
    st.caption("L+ sums the loss over the observed positives; L- is the weighted squared loss "
               "toward ā over all m × n pairs, computed in closed form without forming them.")
    labels = fam.metric_labels()
    figures, always_zero = objective_figures(run, fam, whole=whole)
    for fig in figures:
        st.plotly_chart(fig)
    if always_zero:
        st.caption(" and ".join(labels.get(c, (c,))[0] for c in always_zero) +
                   " stayed 0 at every iteration (with λ_g = 0 or no user graph there is no "
                   "graph term), so it is not drawn.")
    st.plotly_chart(phase_time_figure(run.trace, **fam.figure_options("phase_time")))
    with st.expander("TRON: every Newton step of every block"):
        if getattr(model, "inner_trace_", None) is not None and len(model.inner_trace_):
            st.dataframe(tron_trace(model), hide_index=True)
        else:
            st.info("This run kept no inner trace.")


def recommendations_section(run) -> None:
    """One user's top-k (training positives left out) with the held-out ✓ and each score's
    split over the user's side features."""
    model, split = run.model, run.split
    threshold = run.params.get("threshold")
    st.subheader("Recommendations for one user")
    held = split.held_out()
    if held is not None and threshold is not None:
        held = held.binarize(float(threshold))
    train = split.train
    users = np.unique(np.asarray(held.users)) if held is not None and held.n_ratings else \
        np.arange(train.n_users)
    c1, c2 = st.columns([3, 1])
    user = c1.selectbox("User", [int(u) for u in users], key="ocmf_user",
                        format_func=lambda u: f"{train.user_label(u)} [{u}]",
                        help="Users with held-out positives first; the ✓ column marks them.")
    k = c2.slider("k", 5, 30, 10, key="ocmf_k", help="How many items to recommend.")
    with user_errors("ranking the items"):
        recs = user_recommendations(model, user, k, train=train, held_out=held)
        if len(recs) and float(np.abs(recs["score"]).max()) < 1e-3:
            st.warning("Every score here is below 0.001 in size: the model has shrunk this "
                       "user's factors to about zero, so its ranking says little. On data that "
                       "is not 0/1, set the positive threshold on the Train page (empty counts "
                       "every observed entry as a positive); smaller λ_w, λ_h also help.",
                       icon=":material/warning:")
        st.dataframe(recs, hide_index=True, column_config={
            "score": st.column_config.NumberColumn(format="%.3g"),
            "held_out": st.column_config.CheckboxColumn("held-out positive ✓")})
        st.caption("Training positives are left out of the ranking. user_terms splits each "
                   "score over the user's side features and identity part.")


def grid_section(run) -> None:
    """The rho x lambda grid of validation p@5, computed on request as a page job."""
    split, train = run.split, run.split.train
    st.subheader("ρ × λ grid of validation p@5")
    if split.validation is None:
        st.info("The split has no validation part; set one on the Data page to tune ρ and λ.")
    else:
        st.caption("Each cell refits the model with this run's other settings (λ_w = λ_h = λ) "
                   "and keeps its best iteration's validation p@5, as the paper selects models.")
        c1, c2 = st.columns(2)
        rhos = c1.multiselect("ρ", [2.0 ** e for e in (-9, -7, -5, -3, -1, 0)],
                              default=[2.0 ** -7, 2.0 ** -3, 1.0], key="ocmf_rhos",
                              help="ρ: the weight of the unobserved pairs in the loss.",
                              format_func=lambda r: f"2^{np.log2(r):.0f}")
        lambdas = c2.multiselect("λ", [2.0 ** e for e in (-2, 0, 2, 4, 6)],
                                 default=[1.0, 4.0], key="ocmf_lambdas",
                                 help="λ = λ_w = λ_h: the weight of the ‖W‖² and ‖H‖² "
                                      "regularizers.",
                                 format_func=lambda r: f"2^{np.log2(r):.0f}")
        key = (run.run_id, tuple(sorted(rhos)), tuple(sorted(lambdas)))
        grids = st.session_state.setdefault(GRIDS, {})
        if st.button("Compute the grid", key="ocmf_grid", icon=":material/grid_on:",
                     disabled=not (rhos and lambdas) or page_jobs.running(GRID_JOB),
                     help="Fits one model per cell: pick at least one ρ and one λ."):
            others = {p: v for p, v in run.params.items()
                      if p not in ("rho", "lambda_w", "lambda_h")}
            page_jobs.start(GRID_JOB, lambda progress: (key, validation_grid(
                train, split.validation, rhos, lambdas, params=others,
                progress=lambda done, total, row: progress(done, total, f"{done} of {total} fits")
            ).pivot(index="rho", columns="lambda", values="best")), what="computing the grid")
        finished = page_jobs.result(GRID_JOB)
        if finished is not None and finished[0] not in grids:
            grids.clear()  # one grid kept: the last one computed
            grids[finished[0]] = finished[1]
        table = grids.get(key)
        if table is not None:
            st.plotly_chart(grid_figure(table))
            st.caption("Kept while this run, ρ and λ stay as they are (another user, k or page "
                       "does not clear it).")
        elif grids:
            st.caption("The grid computed before was for other ρ, λ or another run; press "
                       "Compute the grid for these.")
