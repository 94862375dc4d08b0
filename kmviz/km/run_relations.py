"""The relation miner's default path on a saved or session run: one code path for the
``kmviz implications --run`` command and the Implications page's "Relations in the data".

    from kmviz.km.run_relations import mine_run_relations
    table = mine_run_relations(run)          # its training part, validation held out

:func:`kmviz.km.relations.mine_relations` on the run's training part, its validation part
for the held-out columns, and, for a KM run, the run's D, regularization and likes
threshold as the refits' settings (:func:`settings_of_run`). When the run's own fit is no
better than the mean on validation (its trace says so), its supports carry no evidence, so
the miner chooses its settings on the training part as for a plain dataset, and says so;
other families likewise.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd

__all__ = ["settings_of_run", "run_warnings", "mine_run_relations"]

#: The KM parameters a run hands to the refits.
_KEPT = ("D", "lambda_theta", "mu_psi", "threshold", "probability", "gamma", "bqp_solver")


def settings_of_run(run) -> dict | None:
    """A KM run's settings for the refits (None for other families or without a model)."""
    from .relations import FIT_ITER

    model = getattr(run, "model", None)
    if model is None or type(model).__name__ != "KolmogorovModel":
        return None
    params = {k: v for k, v in model.get_params().items() if k in _KEPT}
    return {**params, "max_iter": FIT_ITER}


def run_warnings(run) -> list[str]:
    """The run's own fit warnings that bear on its relations: a KM no better than the mean
    on validation (the estimator's trace event), said again beside the table, since the
    refits take that fit's settings."""
    trace = getattr(getattr(run, "model", None), "trace_", None)
    out = []
    for event in getattr(trace, "events", None) or []:
        message = str(event.get("message", ""))
        if event.get("kind") == "warning" and "no better than predicting" in message:
            out.append("The run's own fit: " + message + " So the refits do not take its "
                       "settings: the miner chose its own on the training part (above).")
    return out


def mine_run_relations(run, *, liked=None, max_antecedent: int = 2,
                       n_refits: int | None = None, rank: str = "score", random_state=0,
                       progress: Callable | None = None,
                       stop: Callable[[], bool] | None = None) -> pd.DataFrame:
    """:func:`kmviz.km.relations.mine_relations` of ``run`` (an opened run: ``split`` and
    ``model``) on its training part, held-out columns from its validation part, the run's
    KM settings for the refits (:func:`run_warnings` joins ``attrs["chosen"]["warnings"]``).
    Raises ``ValueError`` when the run carries no data."""
    from .relations import mine_relations

    split = getattr(run, "split", None)
    if split is None:
        raise ValueError(getattr(run, "problem", None)
                         or f"run {getattr(run, 'run_id', '?')} carries no data to mine")
    weak = run_warnings(run)
    given = None if weak else settings_of_run(run)
    table = mine_relations(split.train, liked=liked, max_antecedent=max_antecedent,
                           n_refits=n_refits, validation=split.validation, rank=rank,
                           random_state=random_state, settings=given,
                           progress=progress, stop=stop)
    chosen = table.attrs.setdefault("chosen", {})
    caller = "settings given by the caller"
    if given is not None and str(chosen.get("summary", "")).startswith(caller + " "):
        words = ", ".join(f"{k}={given[k]:g}" for k in ("D", "lambda_theta")
                          if isinstance(given.get(k), (int, float)))
        chosen["summary"] = (f"{caller} (the run's KM: {words})." +
                             chosen["summary"][len(caller):])
    chosen["warnings"] = list(chosen.get("warnings") or []) + weak
    return table
