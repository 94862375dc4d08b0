"""Kernel MC · Completion: truth / mask / estimate / error maps with cold start marked, the
errors of warm and cold-start entries, NMSE and time against the fraction observed (on
request), and the singular values of F and F̂."""

import pandas as pd
import streamlit as st

from kmviz.kmc import analysis as an
from kmviz.kmc import figures as fg
from kmviz.kmc.teaching import convergence_note
from kmviz.ui import page_jobs
from kmviz.ui.errors import user_errors
from kmviz.ui.families.kmc import MAPS, cached_results, completion_figures, replayed
from kmviz.ui.state import init_state
from kmviz.ui.text import md_escape
from kmviz.ui.views import collect_finished_job, require_run, run_metrics

RESULTS = "kmc_completion_results"  # (kind, run_id) -> result computed on request

init_state()
collect_finished_job("kmc")
st.title("Kernel MC: the completed matrix")
fitted = require_run(family="kmc", need_model=True)
run = replayed(fitted)  # the model after the iteration picked (default: the last)
model, split = run.model, run.split
results = st.session_state.setdefault(RESULTS, {})
replaying = getattr(run, "replay_iteration", None) is not None  # the replay, not the refit
if not replaying:  # the finished run's numbers; a replayed iteration's are in the table below
    run_metrics(run)
rise = convergence_note(fitted.trace.to_frame(), model.method_)  # the whole fit's curve
if rise:  # it rises before it settles: why (the early replayed estimates overshoot too)
    st.caption(("Early iterations overshoot" if replaying else "On the Convergence page")
               + ": " + md_escape(rise))
kernels = [e["message"] for e in run.trace.events if "kernel:" in str(e.get("message", ""))]
n_cold_r, n_cold_c = int((~model.known_rows_).sum()), int((~model.known_cols_).sum())
cold_words = (f"Cold start: **{n_cold_r} rows and {n_cold_c} columns** have no training "
              "value, so their estimates come from the kernels alone." if n_cold_r + n_cold_c
              else "Every row and column has training values (no cold start; *Hide and "
                   "refit* below makes some).")
st.markdown(
    f"**{model.n_rows_:,} rows × {model.n_cols_:,} columns**, {split.train.n_ratings:,} "
    f"training values ({split.train.n_ratings / (model.n_rows_ * model.n_cols_):.1%} of the "
    f"matrix). {cold_words} " + (md_escape("; ".join(kernels)) + "." if kernels else ""))

st.subheader("Truth, mask, estimate and error")
cold = results.get(("cold", run.run_id))
c1, c2 = st.columns([2, 1])
c1.caption("Hide whole rows (and columns) of the training data and refit this run's settings "
           "with its kernels, to see how the kernels fill rows nobody observed.")
n_hide = c2.number_input("rows to hide", 0, 50, 8, key="kmc_hide_rows",
                         help="Rows with training values that lose all of them to the test "
                              "part (0: show the run as trained).")
if c2.button("Hide and refit", key="kmc_cold_refit", icon=":material/ac_unit:"):
    page_jobs.start("kmc_cold", lambda progress, rid=run.run_id, n=int(n_hide): (
        rid, an.cold_start_refit(model, split, n_rows=n)), what="refitting with hidden rows")
if (done := page_jobs.result("kmc_cold")) is not None and done[0] == run.run_id:
    results[("cold", run.run_id)] = cold = done[1]
shown_model, shown_split = ((cold[0], cold[1]) if cold and n_hide and not replaying
                            else (model, split))
cached = cached_results(results, run, shown_model, model)  # once per model shown


if shown_model is not model:
    st.info(f"Showing the refit with {len(cold[2])} rows hidden (❄): "
            + md_escape(", ".join(shown_split.train.user_label(int(u)) for u in cold[2]))
            + ". Set 0 rows to see the run as trained.", icon=":material/ac_unit:")
with user_errors("drawing the maps") as outcome:
    drawn = cached("view", lambda: completion_figures(shown_model, shown_split))
if outcome.ok:
    view = drawn["view"]
    st.caption("Rows are the matrix's rows (users, countries), columns its columns (items, "
               "years). **Truth** holds every value the data knows, **mask** says which part "
               "each one is in (only *train* was seen by the model), **estimate** is the "
               "completed matrix F̂ and **error** is estimate − truth where the truth is "
               "known. Rows and columns with ❄ and a teal frame had no training value (cold "
               "start). " + md_escape(view.note))
    for pair in (MAPS[:2], MAPS[2:]):
        for col, which in zip(st.columns(2), pair):
            col.plotly_chart(drawn["maps"][which], key=f"kmc_map_{which}")

st.subheader("Errors: warm and cold-start entries")
with user_errors("computing the errors") as outcome:
    table = cached("table", lambda: an.error_table(shown_model, shown_split))
if outcome.ok:
    st.caption("NMSE (3.68) = Σ(F̂ − F)² / ΣF² over the entries, RMSE in the data's units. "
               "An entry is *cold start* when its row or its column has no training value. "
               "The last column is the NMSE of predicting the training mean everywhere: a "
               "model is useful where it is clearly below that.")
    st.dataframe(table, hide_index=True, column_config={
        "n": st.column_config.NumberColumn("values"),
        "nmse": st.column_config.NumberColumn("NMSE", format="%.4g"),
        "rmse": st.column_config.NumberColumn("RMSE", format="%.4g"),
        "mean_predictor_nmse": st.column_config.NumberColumn("NMSE of the training mean",
                                                             format="%.4g")})
    if not table["entries"].str.contains("cold start").any():
        st.info("No held-out entry is cold start in this split. Use *Hide and refit* above, "
                "or split by *whole users (cold start)* on the Data page and train again.")

st.subheader("NMSE and time against the fraction observed")
st.caption("Each method is refitted on growing random shares of this run's training values, "
           "with the run's kernels, and scored on the held-out values (the thesis's Figs. "
           "3.5-3.6). KKMCEX's direct solve grows like s³ in the observed count s, RRMCEX "
           "like s; ALS/SGD get a small jitter on the kernels they invert. Big matrices are "
           "cut to their most-observed 150 × 150 block, and fits stop after 40 s.")
methods = st.multiselect("methods", list(an.CURVE_METHODS), default=list(an.CURVE_DEFAULT),
                         format_func=lambda m: fg.METHOD_NAMES.get(m, m), key="kmc_methods",
                         help="The completion methods refitted at each fraction (the "
                              "thesis's alternatives; the slow ones are left out by "
                              "default).")
if st.button("Compute the curves", key="kmc_curve", icon=":material/query_stats:",
             disabled=not methods or page_jobs.running("kmc_curves")):
    page_jobs.start("kmc_curves", lambda progress, rid=run.run_id: (
        rid, an.fraction_observed_curve(model, split, methods=tuple(methods), progress=(
            lambda done, total, msg: progress(done, total, f"{done}/{total}: {msg}")))),
        what="computing the curves")
if (done := page_jobs.result("kmc_curves")) is not None and done[0] == run.run_id:
    results[("curve", run.run_id)] = done[1]
curve = results.get(("curve", run.run_id))
if curve is not None:
    frame, note = curve
    st.plotly_chart(fg.fraction_curve_figure(frame), key="kmc_curve_fig")
    st.caption("Left: lower is better; the held-out values are the same for every point. "
               "Right: seconds per fit on this machine. " + md_escape(note))
    failed = frame[frame["error"] != ""]
    if len(failed):
        st.warning("Some fits failed: " + md_escape("; ".join(
            f"{r.method} at {r.fraction_of_training:.0%}: {r.error}"
            for r in failed.itertuples())))

st.subheader("Singular values of F and F̂")
with user_errors("computing the spectra") as outcome:
    spectra, note = cached("spectra",
                           lambda: an.singular_value_spectra(shown_model, shown_split))
if outcome.ok:
    st.plotly_chart(fg.spectra_figure(spectra), key="kmc_spectra")
    st.caption("How much of each matrix lies along its k-th direction. A matrix that is "
               "nearly low rank has a few large values and a fast drop; F̂ usually drops "
               "faster than F, because the ridge μ and the kernels smooth the estimate. "
               + md_escape(note))
    with st.expander("Numbers"):
        st.dataframe(pd.pivot_table(spectra, index="k", columns="matrix", values="sigma"))
