"""Training replayed: an iteration slider with a play toggle, and the run (or the traces) as
they stood at the chosen iteration.

The pages draw a replayed iteration with their usual code: :func:`replay_run` returns a copy
of the run whose model is the fit's model after that iteration (rebuilt from the run's
:class:`kmviz.history.History` by the family's own ``_from_fitted_arrays``), so a figure of
the replay is the figure the live page would draw on a fit stopped there. The copy keeps the
run's id (the item picked and the page's settings carry over) and carries
``replay_iteration``, which the cached views add to their key.

Play advances the slider by one kept iteration every :data:`PLAY_SECONDS` (a timed
fragment asks for a rerun of the page), and stops at the last one.
"""

from __future__ import annotations

import copy
import dataclasses

import streamlit as st

from kmviz.history import History, load_history, trace_until
from kmviz.runs import RunStore
from kmviz.viz.convergence import iteration_dtick

from .state import RunRecord

#: Seconds between two iterations while playing.
PLAY_SECONDS = 1.5
#: Opacity of the whole fit's curves behind a replayed convergence figure.
GHOST_OPACITY = 0.2
_HISTORIES = "replay_histories"   # session state: run id -> History or None (saved runs)


def history_of(run: RunRecord) -> History | None:
    """The history of ``run``'s fit: kept by the fit of this session, else the one saved
    with the run (read once per session); None when the run has none."""
    model = getattr(run, "model", None)
    history = getattr(model, "history_", None)
    if history is not None:
        return history
    if not getattr(run, "saved", True) or str(run.run_id).startswith("session-"):
        return None
    cache = st.session_state.setdefault(_HISTORIES, {})
    if run.run_id not in cache:
        try:
            cache[run.run_id] = load_history(run.run_id, store=RunStore())
        except (ValueError, OSError) as exc:  # damaged: said once, the page goes on
            st.warning(str(exc), icon=":material/warning:")
            cache[run.run_id] = None
    return cache[run.run_id]


def _advance(key: str, options: list) -> None:
    """The timer's tick (before the widgets exist): the next kept iteration, or stop."""
    state = st.session_state
    current = state.get(key, options[-1])
    later = [o for o in options if o > current]
    if later:
        state[key] = later[0]
    if len(later) <= 1:
        state[f"{key}_play"] = False


def _on_play(key: str, options: list) -> None:
    # pressing play on the last iteration starts from the first
    if st.session_state.get(f"{key}_play") and st.session_state.get(key) == options[-1]:
        st.session_state[key] = options[0]


def iteration_picker(options: list, *, key: str, label: str = "iteration",
                     help: str | None = None):
    """A slider over ``options`` (iterations, ascending) starting at the last one, and a
    play toggle beside it; returns the chosen iteration."""
    state = st.session_state
    options = [int(o) for o in options]
    if state.pop(f"{key}_tick", False) and state.get(f"{key}_play"):
        _advance(key, options)
    if state.get(key) not in options or (
            state.get(key) == state.get(f"{key}_end") != options[-1]):
        state[key] = options[-1]   # new, or at the end of a fit that has grown: the end
    state[f"{key}_end"] = options[-1]
    # one per page; its key keeps it shown in lesson mode (kmviz.ui.lesson)
    c1, c2 = st.container(key="kmviz_replay").columns([6, 1], vertical_alignment="bottom")
    chosen = c1.select_slider(label, options=options, key=key, help=help)
    playing = c2.toggle("play", key=f"{key}_play", on_change=_on_play, args=(key, options),
                        help=f"Step through the iterations, one every {PLAY_SECONDS:g} s.")
    if playing:
        state[f"{key}_inline"] = True

        @st.fragment(run_every=PLAY_SECONDS)
        def _timer():
            if st.session_state.pop(f"{key}_inline", False):
                return  # the run that drew the page: the next tick comes from the timer
            st.session_state[f"{key}_tick"] = True
            st.rerun(scope="app")

        _timer()
    return int(chosen)


def replay_run(run: RunRecord, *, key: str,
               redrawn_from: str = "its psi and theta") -> RunRecord:
    """The replay slider of a page that draws ``run``'s fitted model; returns ``run`` at
    the last iteration, else a copy whose model is the one after the chosen iteration
    (and whose trace holds the rows up to it). ``redrawn_from`` names, in the family's
    words, the arrays the page's figures are drawn from (the slider's help)."""
    history = history_of(run)
    if history is None or len(history) < 2:
        note = getattr(history, "note", "") or (
            "This run keeps no history of its iterations (it was trained before kmviz kept "
            "them, or elsewhere): train it again to replay its training.")
        how = f" ({run.trace.stop_message})" if run.trace.stop_message else ""
        st.caption(f"Replay: {note}" if history is None or not len(history) else
                   f"Replay: the fit made one iteration{how}; there is nothing to step "
                   "through.")
        return run
    kept = history.iterations
    t = iteration_picker(
        kept, key=f"{key}_{run.run_id}", label="iteration (replay the training)",
        help="The model after this iteration of the fit: every figure below is redrawn "
             f"from {redrawn_from}. " + (history.note or "Every iteration is kept."))
    if t == kept[-1] and t >= run.trace.n_iter:
        return run
    model = history.model_at(run.model, t)
    st.caption(f"Replaying iteration {t} of {run.trace.n_iter}: the figures below show the "
               "model as it was then.")
    return dataclasses.replace(run, model=model, trace=model.trace_, replay_iteration=t)


def replay_traces(traces: dict, *, key: str) -> tuple[dict, int | None]:
    """The Convergence page's slider: ``traces`` (label -> Trace) cut at the chosen
    iteration, and that iteration (None when there is nothing to step through)."""
    longest = max((t.n_iter for t in traces.values()), default=0)
    if longest < 2:
        return traces, None
    t = iteration_picker(list(range(1, longest + 1)), key=key,
                         label="iteration (replay the training)",
                         help="The curves as they stood after this iteration.")
    if t >= longest:
        return traces, None
    return {label: trace_until(trace, t) for label, trace in traces.items()}, t


def hold_iteration_axis(fig, traces: dict, *, whole_figure=None):
    """Keep the x axes of a replayed convergence figure on the whole fit's iterations
    (``traces``: the uncut ones), so the curves grow instead of the axes shrinking. With
    ``whole_figure`` (the same builder's figure of the uncut traces), its curves are drawn
    faintly behind the replayed ones: the y axes then hold still too (they range over the
    whole fit), and the iterations still to come show where the curves are going."""
    longest = max((t.n_iter for t in traces.values()), default=0)
    if longest >= 2:
        # the ticks of the whole range too (the figure spaced them for the cut one: "1 2 3
        # ... 15" in a narrow panel ran together)
        panels = sum(1 for name in fig.layout if name.startswith("xaxis")) or 1
        fig.update_xaxes(range=[0.75, longest + 0.25], autorange=False, tick0=0,
                         dtick=iteration_dtick(longest, panels))
    if whole_figure is not None:
        ghosts = []
        for trace in whole_figure.data:
            ghost = copy.deepcopy(trace)
            ghost.update(opacity=GHOST_OPACITY, showlegend=False, hoverinfo="skip",
                         hovertemplate=None, name=f"{trace.name or ''} (later iterations)")
            ghosts.append(ghost)
        fig.add_traces(ghosts)
        fig.data = fig.data[-len(ghosts):] + fig.data[:-len(ghosts)]  # drawn underneath
    return fig
