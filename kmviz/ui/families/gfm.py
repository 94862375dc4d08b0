"""Streamlit glue of gFM's Explore pages: the Recovery page's planted fit and phase diagram
(each a page job: in the fit queue, with progress and Stop, :mod:`kmviz.ui.page_jobs`) and
their figures. The numbers come from :mod:`kmviz.gfm.analysis`, the figures from
:mod:`kmviz.gfm.figures`."""

from __future__ import annotations

import streamlit as st

from kmviz.gfm.analysis import (HEATMAP_MAX_D, dense_pair, first_order_table,
                                held_out_predictions, interaction_spectrum, phase_diagram,
                                recovery_experiment, spectra)
from kmviz.gfm.figures import (angle_contraction_figure, heatmaps_figure, phase_figure,
                               predictions_figure, recovery_figure, spectrum_figure,
                               weights_figure)
from kmviz.gfm.synthetic import PRESET_LABELS

from .. import page_jobs
from ..replay import replay_run
from ..text import md_escape

#: The page jobs' session keys: the planted fit and the phase diagram.
RESULT, PHASE = "gfm_recovery_result", "gfm_recovery_phase"
#: Set once the default problem was fitted on the first visit of the session.
AUTO = "gfm_recovery_auto"


def recovery_section() -> None:
    """The planted problem's form (Fit starts a page job) and, once fitted, its figures:
    the error per batch against the linear rate, the angle and contraction, M against M*,
    and the spectra."""
    with st.form("gfm_recovery_form"):
        c = st.columns(4)
        preset = c[0].selectbox("Problem", list(PRESET_LABELS), format_func=PRESET_LABELS.get,
                                key="gfm_rec_preset",
                                help="The planted model (w\\*, M\\*) the data are drawn from; a "
                                     "classic FM can only represent the PSD one.")
        d = c[1].slider("d (features)", 10, 200, 50, 10, key="gfm_rec_d",
                      help="Dimension of x (and M* is d × d).")
        k = c[2].slider("k (rank; 1 for phase retrieval)", 1, 5, 2, key="gfm_rec_k",
                      help="Rank of the planted M*; the model is fitted with this rank.")
        ratio = c[3].slider("batch size n / (k d)", 2, 100, 20, key="gfm_rec_ratio",
                          help="Instances per batch, in units of k·d (the number of unknowns "
                               "of U): the theory needs n of order k d (up to log factors).")
        c = st.columns(4)
        batches = c[0].slider("batches (T + 1)", 3, 30, 12, key="gfm_rec_batches",
                            help="Fresh batches, each used once: the first initializes, each "
                                 "later one is one step of Algorithm 1.")
        noise = c[1].slider("label noise ξ", 0.0, 0.5, 0.0, 0.01, key="gfm_rec_noise",
                          help="Standard deviation of the Gaussian noise added to y; with "
                               "noise the error stops falling at a floor.")
        condition = c[2].slider("condition σ₁\\*/σₖ\\*", 1.0, 10.0, 1.0, 0.5, key="gfm_rec_cond",
                              help="Ratio of the largest to the smallest nonzero singular "
                                   "value of M*: larger is harder (slower contraction).")
        seed = c[3].number_input("seed", 0, 10_000, 0, key="gfm_rec_seed",
                                help="Seed of the planted problem and its data: the same seed "
                                     "gives the same curves.")
        go = st.form_submit_button("Fit", type="primary", icon=":material/play_arrow:")
    # the page opens on what it teaches: the default problem is fitted once per session on
    # the first visit (a second or two), as if Fit had been pressed
    first = not st.session_state.get(AUTO) and RESULT not in st.session_state.get(
        page_jobs.JOBS, {})
    st.session_state[AUTO] = True
    if go or first:
        page_jobs.start(RESULT, lambda progress: recovery_experiment(
            preset, d=d, k=k, ratio=ratio, n_batches=batches, noise=noise, condition=condition,
            random_state=int(seed), progress=lambda i, n: progress(i, n, f"batch {i} of {n}")),
            what="fitting the planted problem")
    res = page_jobs.result(RESULT)
    if res is None:
        if not page_jobs.running(RESULT):
            st.info("Choose a problem and press Fit (a second or two at the defaults).")
    else:
        st.subheader("Error per batch, against the linear rate")
        st.caption(f"Batches of n = {res.batch_size:,} instances, {res.seconds:.2f} s in all. "
                   "On a log scale a linear rate is a straight line. The fitted rate q is the "
                   "slope over the batches that still contract; the dotted line is the "
                   "theory's scaling δᵗ with δ = √(kd/n) (Theorem 1 proves δ = O(√(k³d/n)) up to "
                   "a constant): bigger batches, faster contraction. With noise the error "
                   "levels off at a floor.")
        st.plotly_chart(recovery_figure(res.table, fitted_rate=res.fitted_rate,
                                        predicted_rate=res.predicted_rate))
        st.plotly_chart(angle_contraction_figure(res.table))
        st.caption(md_escape("Left: the angle between the learned subspace U and the true U* "
                             "(Lemma 11's αₜ); it falls with the error. Right: each batch's error "
                             "over the previous one; below 1 the method contracts, about constant "
                             "means a linear rate."))
        st.subheader("The learned M against M\\*")
        pair = dense_pair(res)
        if pair is None:
            st.info(f"Heat maps are drawn up to d = {HEATMAP_MAX_D}.")
        else:
            st.plotly_chart(heatmaps_figure(*pair))
            st.caption(md_escape("Left the planted M*, right the learned M, on one colour "
                                 "scale (red positive, blue negative): when recovery works the two "
                                 "look alike, entry by entry."))
        st.plotly_chart(spectrum_figure(spectra(res)))
        st.caption(md_escape("M is symmetric of rank ≤ 2k with eigenvalues of either sign (no PSD "
                             "constraint); after recovery its k largest eigenvalues sit on those "
                             "of M* and the others near 0."))


def phase_section() -> None:
    """The phase diagram's form (a page job) and the diagram once computed."""
    st.subheader("Phase diagram: where one-pass recovery starts to work")
    st.caption("Final relative error after the batches above, over batch size and rank (or "
               "condition number), median of fresh problems; each cell's text gives the share "
               "of seeds below 1e-2. Computed on request (d, seeds and the grid are capped so "
               "it finishes in well under a minute).")
    with st.form("gfm_phase_form"):
        c = st.columns(4)
        ratios = c[0].multiselect("n / (k d)", [1, 2, 3, 5, 10, 20, 40], [2, 5, 10, 20],
                                  key="gfm_phase_ratios",
                                  help="Batch sizes n / (k d) on the first axis.")
        axis = c[1].radio("second axis", ["rank k", "condition number"], key="gfm_phase_axis",
                          help="What varies along the second axis: the rank (condition 1) "
                               "or the condition number (at the first rank chosen).")
        pd_d = c[2].slider("d", 10, 60, 30, 5, key="gfm_phase_d",
                           help="Dimension of x in every cell.")
        seeds = c[3].slider("seeds per cell", 1, 4, 2, key="gfm_phase_seeds",
                            help="Fresh problems per cell; the cell shows their median error.")
        ks = c[1].multiselect("ranks k", [1, 2, 3, 4, 5], [1, 2, 3], key="gfm_phase_ks",
                             help="The ranks on the second axis (when it is the rank k).")
        conds = c[2].multiselect("condition numbers (at the first k)", [1, 2, 4, 8], [1, 4],
                                 key="gfm_phase_conds",
                                 help="The condition numbers σ₁/σₖ on the second axis (when "
                                      "it is the condition number), at the first rank chosen.")
        go_phase = st.form_submit_button("Compute the phase diagram", icon=":material/grid_on:")
    if go_phase:
        page_jobs.start(PHASE, lambda progress: (axis, phase_diagram(
            sorted(ratios), sorted(ks), d=pd_d, n_batches=10, seeds=seeds,
            conditions=sorted(conds) if axis == "condition number" else None,
            progress=lambda i, n: progress(i, n, f"{i} of {n} fits"))),
            what="computing the phase diagram")
    if (phase := page_jobs.result(PHASE)) is not None:
        axis, table = phase
        st.plotly_chart(phase_figure(table, second="k" if axis == "rank k" else "condition"))
        st.caption("Teal to yellow cells recovered M\\* and w\\* (small error); dark purple "
                   "cells did not. Within ten batches, recovery sets in at about 10 k d "
                   "instances per batch, far below the theory's worst case (a constant times "
                   "k³ d); at a given batch size the error grows with the condition number.")


# --------------------------------------------------------------------- a trained run
def replayed(run):
    """The Interactions page's replay slider: ``run`` as it was after the iteration picked
    (one pass over the batches per iteration), drawn by the same figures."""
    return replay_run(run, key="gfm_replay", redrawn_from="its w, U and V (M = (UVᵀ + VUᵀ)/2)")


def interaction_figures(model, split) -> dict:
    """The Interactions page's figures of ``model`` (pure: the same model, the same
    figures): ``predictions`` (None without a held-out part) with its ``summary``, the
    ``spectrum`` of M and the first-order ``weights``."""
    frame, summary = held_out_predictions(model, split)
    return {"predictions": None if frame is None else
            predictions_figure(frame, mean=summary["mean"]), "summary": summary,
            "spectrum": spectrum_figure(interaction_spectrum(model), color="sign",
                                        title="Eigenvalues of M"),
            "weights": weights_figure(first_order_table(model, 15))}
