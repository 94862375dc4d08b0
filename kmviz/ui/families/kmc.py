"""Streamlit glue of the Kernel MC Nyström page (``app_pages/kmc_nystrom.py``): one function
per block (the kernel studied, the leverage-score map, exact against approximate scores, the
Kronecker kernel's entry scores, the sampled landmarks and the error curves). The
computations are in :mod:`kmviz.kmc.analysis` and :mod:`kmviz.kmc.nystrom_view`."""

from __future__ import annotations

import numpy as np
import streamlit as st

from kmviz.kmc import analysis as an
from kmviz.kmc import figures as fg
from kmviz.kmc import nystrom_view as nv

from ..errors import user_errors
from ..replay import replay_run
from ..text import md_escape
from ..views import require_run, run_options

DATA = "kmc_nystrom_data"        # (source, gamma, run_id) -> KernelData
CURVES = "kmc_nystrom_curves"    # (source, gamma, run_id) -> error curve frame


OPENED = "kmc_ny_opened"       # run_id -> the Opening the page chose for it
SOURCE = "kmc_ny_source"


def kernel_source():
    """The kernel studied: a run's row or column kernel, or a point data set with its γ.
    Until the user picks one, a run opens on the first of its kernels whose scores are not
    flat (:func:`kmviz.kmc.nystrom_view.opening_source`), and the page says why.
    Returns (source, run or None, gamma or None)."""
    has_run = bool(run_options(family="kmc"))
    run = require_run(family="kmc", need_model=True) if has_run else None
    sources = nv.nystrom_sources(has_run)
    opening = _opening(run) if run is not None else None
    source = st.selectbox("Data", sources, format_func=an.NYSTROM_SOURCES.get,
                          key=SOURCE,
                          help="The kernel matrix studied below: a trained run's row or "
                               "column kernel, or a Gaussian kernel on a point data set.")
    notes = nv.source_notes(has_run)
    if opening is not None and opening.switched and source == opening.source:
        st.info(md_escape(opening.reason), icon=":material/swap_horiz:")
    if notes:
        st.caption(" ".join(notes))
    gamma = None
    if source not in ("row_kernel", "col_kernel"):
        run = None
        gamma = st.select_slider(
            "γ of the Gaussian kernel exp(−γ‖x − x′‖²)", key=f"kmc_ny_gamma_{source}",
            options=nv.GAMMA_OPTIONS, value=nv.DEFAULT_GAMMA[source],
            help="Small γ: a wide kernel, smooth and nearly low rank (few landmarks suffice, "
                 "scores near uniform); large γ: a narrow kernel, every point its own island.")
    return source, run, gamma


def _opening(run):
    """The run's opening kernel, chosen once per run (when the user has not picked a kernel
    for it yet) and put in the Data picker; None once the user has picked."""
    opened = st.session_state.setdefault(OPENED, {})
    if run.run_id in opened:
        choice = opened[run.run_id]
        if st.session_state.get(SOURCE) != choice.source:
            return None  # the user picked another kernel: no more notes about the rule
        return choice
    with user_errors("choosing the kernel to open on") as outcome:
        choice = nv.opening_source(lambda source: _prepare(source, run, None,
                                                           (source, None, run.run_id)))
    if not outcome.ok:
        return None
    opened[run.run_id] = choice
    st.session_state[SOURCE] = choice.source
    return choice


def _prepare(source, run, gamma, key):
    """The kernel of ``key`` with its eigendecomposition, prepared once (one kernel kept at
    a time, with a Stop button while it is prepared)."""
    store = st.session_state.setdefault(DATA, {})
    if key in store:
        return store[key]
    holder = st.empty()  # the status goes once the kernel is ready
    with holder.status("Preparing the kernel (a sample of at most 1,500 points, then its "
                       "eigendecomposition: a few seconds) ...", expanded=False) as status:
        st.button("Stop", key=f"kmc_ny_stop_{key[0]}", icon=":material/stop:",
                  help="Any click stops this page's work; nothing is kept.")
        if run is not None:
            data = an.run_kernel_data(run.model, run.split, source.split("_")[0])
        else:
            data = an.points_data(source, gamma=gamma)
        status.update(label=f"Eigendecomposition of {data.n:,} x {data.n:,} ...")
        data.eigen()
        store.clear()  # one kernel at a time: they are n x n
        store[key] = data
        status.update(label="Kernel ready.", state="complete")
    holder.empty()
    return data


def kernel_data(source, run, gamma, key):
    """The kernel of ``key`` (:func:`_prepare`); stops the page when it failed."""
    data = None
    with user_errors("preparing the data"):
        data = _prepare(source, run, gamma, key)
    if data is None:
        st.stop()
    st.caption(f"{md_escape(data.name)}: n = {data.n:,}. {md_escape(data.note)}")
    return data


def leverage_map(data, key, run_id):
    """The number of landmarks m, α and the map of the scores; returns (m, α, scores)."""
    st.subheader("Leverage-score map")
    m_ref = st.slider("landmarks m", 5, max(6, min(400, data.n)),
                      min(nv.default_landmarks(data.n), data.n), 5, key="kmc_ny_m",
                      help="Used by the views below; α starts where d_eff(α) = m.")
    grid = an.alpha_grid(data)
    a0 = an.alpha_for_landmarks(data, m_ref)
    alpha = st.select_slider("α (ridge)", options=list(grid),
                             key=f"kmc_ny_alpha_{key}_{m_ref}",
                             value=nv.nearest_alpha(grid, a0),
                             format_func=lambda a: f"{a:.3g}",
                             help="The ridge α of the leverage scores ℓᵢ = (K (K + αI)⁻¹)ᵢᵢ: "
                                  "larger α, fewer effective dimensions.")
    scores, d_eff = an.leverage_scores(data, alpha)
    c = st.columns(4)
    c[0].metric("d_eff(α)", f"{d_eff:.1f}", help="Σ of the scores: about how many landmarks "
                "this kernel needs at this α.")
    c[1].metric("largest score", f"{scores.max():.3f}")
    c[2].metric("median score", f"{np.median(scores):.3g}")
    c[3].metric("uniform would be", f"{d_eff / data.n:.3g}", help="d_eff / n for every point.")
    st.plotly_chart(fg.leverage_map_figure(data, scores), key="kmc_ny_map")
    st.caption(f"Each dot is a point on its first two principal components "
               f"({'kernel PCA of the kernel' if run_id else 'PCA of the features'}); colour "
               "and size show its leverage score. Larger α blurs the kernel's small "
               "eigenvalues away, so d_eff falls and the scores flatten; smaller α lets every "
               "point count. Points with high scores are the ones uniform sampling is likely "
               "to miss. α starts where d_eff = m; the leverage samplers below pick their own, "
               "larger α, which spreads their landmarks more evenly.")
    return m_ref, alpha, scores


def score_agreement(data, scores, alpha, m_ref) -> None:
    """Exact against approximate leverage scores."""
    st.subheader("Exact against approximate scores")
    with user_errors("estimating the scores") as outcome:
        approx = an.approximate_scores(data, alpha, m_ref)
        agree = an.score_agreement(scores, approx)
    if outcome.ok:
        c = st.columns(3)
        c[0].metric("Pearson r", f"{agree['pearson']:.3f}")
        c[1].metric("Spearman ρ", f"{agree['spearman']:.3f}")
        c[2].metric("median approx / exact", f"{agree['median_ratio']:.2f}")
        st.plotly_chart(fg.score_scatter_figure(scores, approx, groups=data.groups,
                                                group_name=data.group_name),
                        key="kmc_ny_scatter")
        st.caption(f"Exact scores need an n × n eigendecomposition (O(n³)). The approximate "
                   f"ones come from a uniform sketch of m = {m_ref} points in O(n m²) (Musco "
                   "and Musco), as the approximate-leverage sampler computes them. On the "
                   "dashed line they agree; what matters for sampling is the order "
                   "(Spearman ρ), not the exact values.")


def kron_entry_scores(run) -> None:
    """The leverage scores of the Kronecker kernel's entries (which entries to observe)."""
    st.subheader("Which entries to observe: scores of the Kronecker kernel")
    st.caption("KKMCEX regresses the matrix's entries on the Kronecker kernel K_col ⊗ K_row "
               "(one point per entry). Its leverage scores say which entries are the most "
               "informative to observe: the thesis (Ch. 5) samples entries by them. The exact "
               "map needs only the two kernels' eigendecompositions, never the NL × NL "
               "kernel; the approximation (5.23) multiplies the row and column kernels' own "
               "scores at √α and costs the same here, but is what scales to large kernels.")
    with user_errors("sampling the kernels") as sampled:
        kron = an.kron_sample(run.model)  # the size guard runs first: a stated sample
    if not sampled.ok:
        return
    if kron.note:
        st.caption(md_escape(kron.note))
    kgrid = an.kron_alpha_grid(kron)
    kalpha = st.select_slider("α for the entries", options=list(kgrid), value=kgrid[20],
                              key=f"kmc_ny_kalpha_{run.run_id}",
                              format_func=lambda a: f"{a:.3g}",
                              help="The ridge α of the entries' leverage scores (as α "
                                   "above, for the Kronecker kernel).")
    with user_errors("computing the entry scores") as outcome:
        exact, approx, k_deff = an.kron_scores(kron, kalpha)
        kagree = an.score_agreement(exact.ravel(), approx.ravel())
    if outcome.ok:
        c = st.columns(3)
        c[0].metric("d_eff of the entries", f"{k_deff:.1f}",
                    help=f"of {exact.size:,} entries")
        c[1].metric("Pearson r, exact vs (5.23)", f"{kagree['pearson']:.3f}")
        c[2].metric("Spearman ρ", f"{kagree['spearman']:.3f}")
        train = run.split.train
        st.plotly_chart(fg.kron_scores_figure(
            exact, approx, [train.user_label(int(u)) for u in kron.rows],
            [train.item_label(int(i)) for i in kron.cols]), key="kmc_ny_kron")


def sampled_landmarks(data, m_ref) -> None:
    """One draw of m landmarks by the chosen scheme, on the map, with its trace error."""
    st.subheader("The sampled landmarks")
    sampling = st.radio("sampling", list(an.SAMPLING_LABELS)[:4], horizontal=True,
                        format_func=an.SAMPLING_LABELS.get, key="kmc_ny_sampling",
                        help="How the m landmarks are drawn: uniformly, or in proportion "
                             "to the (exact, approximate or recursively estimated) ridge "
                             "leverage scores.")
    seed = st.number_input("seed", 0, 10_000, 0, key="kmc_ny_seed",
                           help="Seed of the draw: another seed, other landmarks.")
    with user_errors("sampling the landmarks") as outcome:
        idx, counts, err = an.sample_landmarks(data, m_ref, sampling, random_state=int(seed))
    if outcome.ok:
        st.plotly_chart(fg.landmarks_figure(data, idx, counts), key="kmc_ny_landmarks")
        extra = ""
        if data.groups is not None:
            extra = " Landmarks per " + md_escape(data.group_name) + " group: " + ", ".join(
                f"{md_escape(str(v))} {n}" for v, n in nv.landmark_groups(data.groups, idx)
            ) + "."
        st.caption(f"{len(idx)} landmarks (red). Uniform sampling spreads them like the data; "
                   "the leverage schemes favour the points that stick out. Relative trace "
                   f"error Tr(K − K̂) / Tr K of this draw: **{err:.4f}** (0: K is rebuilt "
                   f"exactly).{extra}")


def error_curves(data, key) -> None:
    """The error against the number of landmarks per scheme, computed on request."""
    st.subheader("Error against the number of landmarks")
    st.caption("Each scheme draws m landmarks several times; the line is the median relative "
               "error, the band runs from the 10 % to the 90 % quantile of the draws. Trace "
               "error is the total of the per-point errors (Theorem 5.1 bounds the regression "
               "error by it); Frobenius and spectral errors take an n × n product per draw "
               "(slower).")
    chosen = st.multiselect("sampling schemes", list(an.SAMPLING_LABELS)[:4],
                            default=list(an.SAMPLING_LABELS)[:4],
                            format_func=an.SAMPLING_LABELS.get, key="kmc_ny_schemes")
    c = st.columns(2)
    repeats = c[0].slider("draws per point", 2, 20, 5, key="kmc_ny_repeats",
                          help="Independent draws of the landmarks per scheme and m (the "
                               "band spans their 10-90 % quantiles).")
    measures = c[1].multiselect("errors", ["trace", "frobenius", "spectral"],
                                default=["trace"], key="kmc_ny_measures",
                                help="trace: Tr(K − K̂) / Tr K; frobenius and spectral: the "
                                     "norms of K − K̂ relative to those of K (slower).")
    sk_ok = an.sklearn_available() and data.X is not None
    with_sklearn = st.checkbox("add scikit-learn's Nystroem (uniform)", value=sk_ok,
                               disabled=not sk_ok, key="kmc_ny_sklearn",
                               help="scikit-learn's Nystroem takes feature vectors: offered "
                                    "for the point data sets (same Gaussian kernel), when "
                                    "installed.")
    ms = nv.curve_landmarks(data.n)
    if st.button("Compute the error curves", key="kmc_ny_curve", icon=":material/query_stats:",
                 disabled=not chosen):
        bar = st.progress(0.0, text="sampling ...")
        with user_errors("computing the error curves"):
            curves = st.session_state.setdefault(CURVES, {})
            curves.clear()
            curves[key] = an.nystrom_error_curve(
                data, ms, samplings=tuple(chosen), n_repeats=repeats,
                include_sklearn=with_sklearn, measures=tuple(measures) or ("trace",),
                progress=lambda done, total, msg: bar.progress(done / total,
                                                               text=f"{done}/{total}: {msg}"))
            bar.empty()
    curve = st.session_state.get(CURVES, {}).get(key)
    if curve is None:
        return
    bands = an.error_bands(curve)
    for measure in bands["measure"].unique():
        st.plotly_chart(fg.nystrom_error_figure(bands, measure), key=f"kmc_ny_err_{measure}")
    st.caption("Lower is better. Leverage sampling pays off where the scores are far from "
               "uniform (a small far cluster, narrow kernels); where they are nearly uniform "
               "all schemes perform alike.")
    with st.expander("Numbers"):
        st.dataframe(bands, hide_index=True)


# --------------------------------------------------------------------- Completion: replay
MAPS = ("truth", "mask", "estimate", "error")


def replayed(run):
    """The Completion page's replay slider: ``run`` as it was after the iteration picked,
    drawn by the same figures (the kernels are the run's; the estimate is the iteration's)."""
    return replay_run(run, key="kmc_replay",
                      redrawn_from="its completed matrix F̂ (the fitted coefficients or "
                                   "factors of that iteration; the kernels do not change)")


def completion_figures(model, split) -> dict:
    """The Completion page's maps of ``model`` (pure: the same model, the same figures):
    the ``view`` they are drawn from and one figure per name in :data:`MAPS`."""
    view = an.completion_view(model, split)
    return {"view": view, "maps": {w: fg.completion_map_figure(view, w) for w in MAPS}}


def cached_results(results: dict, run, shown_model, model):
    """``cached(kind, compute)`` for the Completion page: a result computed once per model
    shown (the run, one replayed iteration, or the cold-start refit). Only the latest
    replayed iteration's results are kept besides the run's own."""
    t = getattr(run, "replay_iteration", None)
    tag = ("refit", id(shown_model)) if shown_model is not model else ("iteration", t)

    def cached(kind, compute):
        key = (kind, run.run_id, tag)
        if key not in results:
            for old in [k for k in results if len(k) == 3 and k[:2] == (kind, run.run_id)
                        and k[2][0] == "iteration" and k[2][1] is not None]:
                del results[old]   # another replayed iteration's: recomputed if wanted
            results[key] = compute()
        return results[key]

    return cached
