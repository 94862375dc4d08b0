"""KM tables kept with a saved run: the stability of its implications over refits
(:func:`kmviz.km.stable_implications`) and relation tables with multi-item rules (the default
path's), computed once and reopened with the run on the Implications page, after a restart,
and from Python or the CLI::

    from kmviz.km.saved_tables import save_stability, saved_stability
    save_stability(run_id, table, liked=4.0, min_ratings=5)
    found = saved_stability(run_id)           # the newest, whatever its settings
    found.table, found.notice                 # None and why, when none can be used
    save_relations(run_id, relations)         # a mine_relations table of the run
    saved_relations(run_id).table

The stability of a run depends on what "liked" means and on the items taken into account
(the items with ``min_ratings`` training ratings), so each pair of settings has its own
attachment (:func:`stability_name`); the refit settings are in the attachment's ``meta``.
Storage is :mod:`kmviz.runs.artifacts` (Parquet + a JSON header, never pickled).
"""

from __future__ import annotations

import pandas as pd

from ..runs import artifacts
from ..runs.artifacts import TableRead

__all__ = ["STABILITY", "RELATIONS", "stability_name", "save_stability", "saved_stability",
           "saved_stabilities", "save_relations", "saved_relations"]

#: The prefix of the stability attachments' names.
STABILITY = "stability"
#: The default name of a relation table attached to a run.
RELATIONS = "relations"


def _liked_tag(liked) -> str:
    if isinstance(liked, str):
        if liked != "interacted":
            raise ValueError(f"liked must be a number or 'interacted'; got {liked!r}.")
        return liked
    return f"{float(liked):g}"


def _same_liked(a, b) -> bool:
    try:
        return a is not None and _liked_tag(a) == _liked_tag(b)
    except (TypeError, ValueError):
        return False


def stability_name(liked, min_ratings: int) -> str:
    """The attachment name of the stability computed with these settings."""
    return f"{STABILITY}-liked-{_liked_tag(liked)}-min-{int(min_ratings)}"


def save_stability(run_id: str, table: pd.DataFrame, *, liked, min_ratings: int,
                   store=None):
    """Keep a :func:`kmviz.km.stable_implications` table of run ``run_id`` with the run
    (replacing the one of the same settings). Returns the header's path."""
    attrs = table.attrs
    meta = {"kind": STABILITY, "liked": liked, "min_ratings": int(min_ratings),
            "n_refits": int(attrs.get("n_refits", 0)), "settings": attrs.get("settings", {})}
    return artifacts.save_table(run_id, stability_name(liked, min_ratings), table,
                                store=store, meta=meta)


def saved_stabilities(run_id: str, *, store=None) -> pd.DataFrame:
    """The stability tables saved with a run (``name``, ``rows``, ``created``, ``meta``),
    newest first."""
    listed = artifacts.list_tables(run_id, store=store)
    listed = listed[listed["name"].str.startswith(f"{STABILITY}-")]
    return listed.sort_values("created", ascending=False, kind="stable").reset_index(drop=True)


def saved_stability(run_id: str, *, liked=None, min_ratings: int | None = None,
                    store=None) -> TableRead:
    """The stability saved with run ``run_id`` for these settings (either None: the newest
    saved one that matches the others). Never raises for a missing or damaged table: its
    ``table`` is then None and ``notice`` says why (None when simply none was saved)."""
    if liked is not None and min_ratings is not None:
        return artifacts.read_table(run_id, stability_name(liked, min_ratings), store=store)
    try:
        listed = saved_stabilities(run_id, store=store)
    except (ValueError, OSError) as exc:
        return TableRead(None, str(exc))
    for _, row in listed.iterrows():
        meta = row["meta"] if isinstance(row["meta"], dict) else {}
        if liked is not None and not _same_liked(meta.get("liked"), liked):
            continue
        if min_ratings is not None and meta.get("min_ratings") != int(min_ratings):
            continue
        return artifacts.read_table(run_id, row["name"], store=store)
    return TableRead(None, None)


def save_relations(run_id: str, table: pd.DataFrame, *, name: str = RELATIONS, store=None,
                   meta: dict | None = None):
    """Keep a relation table of run ``run_id`` (e.g. :func:`kmviz.km.relations.
    mine_relations` on its training part; tuple antecedents, its ``attrs`` with how the
    defaults were chosen and which refits held each row) with the run, under ``name``."""
    return artifacts.save_table(run_id, name, table, store=store,
                                meta={"kind": RELATIONS, **(meta or {})})


def saved_relations(run_id: str, *, name: str = RELATIONS, store=None) -> TableRead:
    """The relation table saved with a run (None and a notice when there is none usable)."""
    return artifacts.read_table(run_id, name, store=store)
