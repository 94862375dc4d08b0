"""Streamlit glue of similarity learning's Explore pages: the Optimizers race (the paper's
Figure 2: every chosen solver from the same starting point, an equal time budget each, run
once per session on the first visit as a page job (:mod:`kmviz.ui.page_jobs`: in the fit
queue, with progress and Stop) and its figure; the Embeddings page's replay."""

from __future__ import annotations

import streamlit as st

from kmviz.similarity import analysis as an
from kmviz.similarity.figures import embedding_figure, solver_comparison_figure
from kmviz.similarity.optimizers import compare_solvers, time_to_reach
from kmviz.similarity.solvers import SOLVER_LABELS, SOLVERS

from .. import page_jobs
from ..errors import user_errors
from ..replay import replay_run
from ..text import md_escape

#: The race's page job (:mod:`kmviz.ui.page_jobs`) and the flag of its automatic first run.
RESULT, AUTO = "similarity_race", "similarity_race_auto"
#: Seconds of optimization every solver gets by default (see :func:`budget_words`).
BUDGET_S = 5
#: The iteration cap of the race: the Param's upper bound, so that the budget, not the cap,
#: ends every solver (GD makes hundreds of cheap iterations in a few seconds).
RACE_MAX_ITER = 100_000
DEFAULT_SOLVERS = ["newton", "gd", "gd-diag", "sogram-diag"]


def race_params(params: dict) -> dict:
    """The Train form's ``params`` as the race runs them: no solver stops on its own
    criterion (``tol`` = 0) and the iteration cap never binds, so the time budget ends each
    one and every curve spans the same time."""
    return {**params, "tol": 0.0, "max_iter": RACE_MAX_ITER}


def budget_words(limit: float) -> str:
    """What the budget is and how it was chosen, for the page."""
    return (f"Every solver gets the same budget: **{limit:g} s of optimization** (the "
            "validation rankings are not counted), and only the budget ends it: the race "
            f"turns each solver's own stopping rule off (tol = 0) and lets it make up to "
            f"{RACE_MAX_ITER:,} iterations, so that GD's many cheap steps and SOGram's few long "
            "ones span the same time axis. A solver stops after the iteration that passes the "
            f"budget. {BUDGET_S} s is the default because at the form's settings on the "
            "built-in data it lets the slowest solver (SOGram-diag, whose iteration is a pass "
            "of 1/ρ stochastic steps) draw a few points while the whole race, rankings "
            "included, ends within a minute or two; the fastest ones have long flattened by "
            "then.")


def _race(split, chosen, params, limit):
    def work(progress):
        names = list(chosen)

        def step(solver, row):
            done = names.index(solver) if solver in names else 0
            progress(done, len(names), f"{SOLVER_LABELS.get(solver, solver)}, iteration "
                                       f"{int(row['iteration'])}")

        return compare_solvers(split.train, split.validation, names, race_params(params),
                               time_limit=float(limit), progress=step)
    return work


def optimizers_race(split, params: dict) -> None:
    """The solvers and the time budget; the race is run once per session on the first
    visit (a page job: in the fit queue, with progress and Stop), again on Compare; then
    the figure, the time-to-reach table and how each fit ended."""
    c = st.columns([3, 1])
    chosen = c[0].multiselect("solvers", list(SOLVERS), default=DEFAULT_SOLVERS,
                              format_func=SOLVER_LABELS.get, key="similarity_opt_solvers",
                              help="Each one is a separate fit from the same starting point.")
    limit = c[1].number_input("seconds per solver", 1, 600, BUDGET_S, key="similarity_opt_limit",
                              help="The time budget, the same for every solver; it alone "
                                   "ends each one.")
    st.markdown(budget_words(float(limit)))  # our own words: no user text in them
    job = st.session_state.get(page_jobs.JOBS, {}).get(RESULT)
    go = st.button("Compare again" if job is not None and job.done else "Compare",
                   type="primary", icon=":material/play_arrow:", key="similarity_opt_run",
                   disabled=not chosen or page_jobs.running(RESULT))
    # the page opens on the race drawn: run once per session on the first visit
    first = not st.session_state.get(AUTO) and RESULT not in st.session_state.get(
        page_jobs.JOBS, {})
    st.session_state[AUTO] = True
    if (go or first) and chosen:
        with user_errors("starting the comparison"):
            page_jobs.start(RESULT, _race(split, chosen, params, limit),
                            what=f"the race of {len(chosen)} solvers, {limit:g} s each")
    _results(page_jobs.result(RESULT, stop_help="Ends the race at the next iteration; "
                                                "nothing of it is kept."), limit)


def _results(result, limit) -> None:
    if result is None or not len(result.frame):
        if not page_jobs.running(RESULT):
            st.info("Choose solvers and press Compare.")
        return
    fig = solver_comparison_figure(result.frame)
    st.plotly_chart(fig, key="similarity_opt_fig")
    st.caption(f"L* = {result.best_objective:,.6g}. Down and to the left is better on the left "
               "panel; up and to the left on the right. A line-search solver never raises L; "
               "the stochastic ones are noisy and their step is fixed.")
    st.dataframe(time_to_reach(result.frame), hide_index=True)
    with st.expander("How each fit ended"):
        for solver, note in result.notes.items():
            st.markdown(f"**{md_escape(SOLVER_LABELS.get(solver, solver))}**: {md_escape(note)}")


# --------------------------------------------------------------------- Embeddings: replay
def replayed(run):
    """The Embeddings page's replay slider: ``run`` as it was after the iteration picked
    (its theta, hence its embeddings), drawn by the same figures."""
    return replay_run(run, key="similarity_replay",
                      redrawn_from="its embeddings p = f(u) and q = g(v) (theta)")


def embedding_map(model, train, side: str, colour: str):
    """The 2-D map of ``model``'s ``side`` embeddings coloured by ``colour`` (pure: the
    same model, the same figure)."""
    xy, ratio = an.embedding_pca(model, side)
    labels = an.side_labels(train, side, colour, counts=an.positives_per(model, side))
    label = train.item_label if side == "items" else train.user_label
    return embedding_figure(xy, labels, [label(i) for i in range(xy.shape[0])], ratio=ratio)


def no_towers_note(run) -> str:
    """Why the tower sections are not shown for ``run`` (whose model has no towers)."""
    if getattr(run, "replay_iteration", None) is not None:
        return ("The replay keeps each iteration's embeddings, not its towers: move the "
                "slider back to the last iteration to score from features and look inside "
                "the towers.")
    return ("This run was opened from the run store, which keeps the embeddings but not the "
            "towers; train it again to score from features and look inside the towers.")
