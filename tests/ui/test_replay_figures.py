"""The replay of the Explore pages of gFM, OCMF, Kernel MC and similarity learning: the
figures a page draws from the model rebuilt at iteration t of the fit's history
(:meth:`kmviz.history.History.model_at`, what :func:`kmviz.ui.replay.replay_run` hands the
page) equal, JSON for JSON, the figures drawn from a fit of the same settings stopped
there (``max_iter`` = t, or gFM's ``n_passes`` = t), and differ from the last iteration's
(the replay shows something else)."""

from __future__ import annotations

import types
import warnings

import pytest

from kmviz import families
from kmviz.history import History, recording
from kmviz.testing import FamilyChecker

pytestmark = pytest.mark.slow   # three fits per family (the first compiles its kernels)

#: The setting that stops a fit after t iterations, per family.
STOP_AT = {"gfm": "n_passes", "ocmf": "max_iter", "kmc": "max_iter", "similarity": "max_iter"}
#: Settings that give every family a few iterations that change its arrays.
SETTINGS = {"gfm": {"n_passes": 4, "tol": 0.0}, "ocmf": {"max_iter": 4, "tol": 0.0},
            "kmc": {"max_iter": 4, "tol": 0.0}, "similarity": {"max_iter": 4, "tol": 0.0}}


def _fit(c, params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return c.make(params).fit(c.split.train, validation=c.split.validation)


def _figures(name, model, split) -> list[str]:
    """The JSON of the figures the family's replayed page draws from ``model``."""
    fam = families.get(name)
    if name == "gfm":
        from kmviz.ui.families.gfm import interaction_figures
        figs = interaction_figures(model, split)
        out = [figs["predictions"], figs["spectrum"], figs["weights"]]
    elif name == "ocmf":
        from kmviz.ocmf.analysis import user_recommendations
        from kmviz.ui.families.ocmf import objective_figures
        run = types.SimpleNamespace(trace=model.trace_, label="run")
        out, _ = objective_figures(run, fam)
        recs = user_recommendations(model, 0, 10, train=split.train,
                                    held_out=split.held_out())
        return [f.to_json() for f in out] + [recs.to_json()]
    elif name == "kmc":
        from kmviz.kmc import analysis as an
        from kmviz.kmc import figures as fg
        from kmviz.ui.families.kmc import completion_figures
        out = list(completion_figures(model, split)["maps"].values())
        out.append(fg.spectra_figure(an.singular_value_spectra(model, split)[0]))
    else:
        from kmviz.ui.families.similarity import embedding_map
        from kmviz.similarity.analysis import ACTIVITY
        out = [embedding_map(model, split.train, side, ACTIVITY)
               for side in ("items", "users")]
    return [f.to_json() for f in out]


@pytest.mark.parametrize("name", sorted(STOP_AT))
def test_a_replayed_iteration_draws_the_figures_of_a_fit_stopped_there(name):
    c = FamilyChecker(families.get(name))
    history = History()
    with recording(history):
        model = _fit(c, SETTINGS[name])
    assert history.iterations == list(range(1, model.trace_.n_iter + 1)), history.note
    last = _figures(name, model, c.split)
    for t in history.iterations[:-1]:
        replayed = _figures(name, history.model_at(model, t), c.split)
        stopped = _fit(c, {**SETTINGS[name], STOP_AT[name]: t})
        assert stopped.trace_.n_iter == t
        live = _figures(name, stopped, c.split)
        assert len(replayed) == len(live)
        for k, (a, b) in enumerate(zip(replayed, live)):
            assert a == b, f"{name}: figure {k} at iteration {t} differs from the live fit's"
    early = _figures(name, history.model_at(model, history.iterations[0]), c.split)
    assert early != last, f"{name}: iteration 1 draws what the last one draws"
