"""What the analyst does with a relation table: filter it, sort it, select from it, export it.

Pure functions over a table of relations ``antecedent => consequent`` (one row per rule),
without Streamlit, so that the Implications page, the CLI and a notebook filter and export
the same rows. They work on both tables kmviz produces, which share their counts' names:

* the relation table of the default mining path (:func:`kmviz.km.relations.mine_relations`):
  ``antecedent`` (a tuple of item indices), ``consequent``, ``antecedent_name``,
  ``consequent_name`` (a multi-item side's names joined with " & "), ``size``, ``support``
  and ``antecedent_support`` (users who like every antecedent item), ``n_known`` (those who
  rated the consequent), ``co_support`` (those who like it), ``confidence``,
  ``confidence_lower``, ``classic_confidence``, ``lift``, held-out columns, ``stability``,
  ``score``, ``rank``;
* the implication table of :func:`kmviz.km.mine_implications` (pairs, ``antecedent`` an
  int), with ``support``, ``n_known``, ``co_support`` in the same meaning and
  ``confidence_lo`` for the lower bound.

:func:`normalize` gives the second what the first has (``antecedent_support``,
``confidence_lower``, ``size``, ``classic_confidence``), keeping the row index, so that a
row keeps one key from the table to the chart, the selection and the export. Helpers take
an antecedent as an int or a tuple of ints (:func:`antecedent_items`).

The two confidences
-------------------
``confidence`` is counted among the antecedent's fans *who rated the consequent*: of the
users who like every antecedent item and whose opinion of the consequent is known, the
share who like it (``co_support / n_known``). ``classic_confidence`` is the association-rule
textbook's: among *all* the antecedent's fans, the share who like the consequent
(``co_support / support``; a fan who never rated it counts as not liking it). On 0/1 data
(every entry a like) the two are equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from ..exceptions import InvalidParameterError
from ..tabular_export import table_bytes

__all__ = ["RelationFilter", "antecedent_items", "normalize", "statistic_columns",
           "filter_mask", "apply_filter", "filter_frame", "sort_rows", "select_rows",
           "selected_keys", "items_in", "export_frame", "export_bytes", "export_name",
           "rule_counts", "CONFIDENCE_WORDS", "EXPORT_FORMATS", "MATCH"]

#: Ways several required items combine: "any" (at least one of them is on that side) or
#: "all" (every one of them is).
MATCH = ("any", "all")
#: What the page's download buttons write (the names of :func:`kmviz.tabular_export.table_bytes`).
EXPORT_FORMATS = {"csv": "text/csv", "parquet": "application/vnd.apache.parquet"}
#: The two confidences in words (the page shows it beside the table).
CONFIDENCE_WORDS = (
    "**confidence**: among the users who like the antecedent and rated the consequent, the "
    "share who like the consequent (users who never rated it do not count). "
    "**classic_confidence**: the association-rule textbook's, among *all* the antecedent's "
    "fans (one who never rated the consequent counts as not liking it). "
    "**co_support**: users who like the antecedent and the consequent (the rule's support "
    "in association-rule terms); **support** = **antecedent_support**: users who like the "
    "antecedent (every item of it).")
#: Columns that identify a row, never filtered as statistics.
_KEYS = ("antecedent", "consequent", "antecedent_group", "consequent_group")


def antecedent_items(value) -> tuple[int, ...]:
    """The items of one side of a rule as a tuple of ints: an int is a one-item side, a
    tuple, list or array a multi-item one."""
    if isinstance(value, (tuple, list, np.ndarray)):
        return tuple(int(x) for x in value)
    if isinstance(value, (int, np.integer)) or (isinstance(value, float) and
                                                 float(value).is_integer()):
        return (int(value),)
    raise InvalidParameterError(
        f"a rule side must be an item index or a tuple of item indices; got {value!r}.")


def _sides(table: pd.DataFrame, column: str) -> list[tuple[int, ...]]:
    return [antecedent_items(v) for v in table[column].tolist()]


def _ratio(a, b) -> np.ndarray:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return np.divide(a, b, out=np.full(a.shape, np.nan), where=b > 0)


def normalize(table: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``table`` with the relation table's columns (module docstring), the same
    index and order: ``antecedent_support`` (= ``support``), ``confidence_lower`` (from
    ``confidence_lo``), ``size`` (items on the antecedent side) and ``classic_confidence``
    (``co_support / support``) added when missing."""
    out = table.copy()
    if "antecedent_support" not in out and "support" in out:
        at = out.columns.get_loc("support") + 1
        out.insert(at, "antecedent_support", out["support"].to_numpy())
    renames = {"confidence_lo": "confidence_lower", "confidence_hi": "confidence_upper"}
    out = out.rename(columns={k: v for k, v in renames.items() if k in out and v not in out})
    if "size" not in out and "antecedent" in out:
        out["size"] = np.array([len(s) for s in _sides(out, "antecedent")], dtype=np.int64)
    if "classic_confidence" not in out and {"co_support", "support"} <= set(out):
        conf = _ratio(out["co_support"], out["support"])
        at = out.columns.get_loc("confidence") + 1 if "confidence" in out else len(out.columns)
        out.insert(at, "classic_confidence", conf)
    out.attrs = dict(table.attrs)
    return out


def statistic_columns(table: pd.DataFrame) -> list[str]:
    """The numeric columns a user can filter and sort by (every statistic; not the item
    indices or group ids, not flags)."""
    return [c for c in table.columns if c not in _KEYS
            and pd.api.types.is_numeric_dtype(table[c])
            and not pd.api.types.is_bool_dtype(table[c])]


@dataclass(frozen=True)
class RelationFilter:
    """Which rules pass.

    ``require_antecedent`` / ``require_consequent``: item indices of which any (``match=
    "any"``) or every (``"all"``) must be on that side; ``exclude_antecedent`` /
    ``exclude_consequent``: items none of which may be on that side. ``ranges`` maps a
    statistic to ``(low, high)`` (either None: unbounded); a row whose value is undefined
    (NaN) fails an active range. ``hubs=False`` drops rows whose consequent is a hub.
    ``sort_by`` (a column, or None for the table's own order) and ``descending`` order the
    rows that pass, undefined values last.
    """

    require_antecedent: tuple = ()
    exclude_antecedent: tuple = ()
    require_consequent: tuple = ()
    exclude_consequent: tuple = ()
    match: str = "any"
    ranges: Mapping[str, tuple] = field(default_factory=dict)
    hubs: bool = True
    sort_by: str | None = None
    descending: bool = True

    def __post_init__(self):
        if self.match not in MATCH:
            raise InvalidParameterError(f"match must be one of {MATCH}; got {self.match!r}.")
        for name in ("require_antecedent", "exclude_antecedent", "require_consequent",
                     "exclude_consequent"):
            object.__setattr__(self, name, tuple(int(x) for x in getattr(self, name)))
        for col, bounds in dict(self.ranges).items():
            if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
                raise InvalidParameterError(
                    f"ranges[{col!r}] must be (low, high), either None; got {bounds!r}.")
            lo, hi = bounds
            if lo is not None and hi is not None and float(lo) > float(hi):
                raise InvalidParameterError(
                    f"ranges[{col!r}]: the low end {lo:g} is above the high end {hi:g}; "
                    "swap them or clear one.")


def _side_mask(sides, require, exclude, match) -> np.ndarray:
    keep = np.ones(len(sides), bool)
    if require:
        req = set(require)
        test = (lambda s: bool(req & set(s))) if match == "any" else \
            (lambda s: req <= set(s))
        keep &= np.fromiter((test(s) for s in sides), bool, len(sides))
    if exclude:
        exc = set(exclude)
        keep &= np.fromiter((not (exc & set(s)) for s in sides), bool, len(sides))
    return keep


def filter_mask(table: pd.DataFrame, spec: RelationFilter) -> np.ndarray:
    """Per row of a :func:`normalize`-d table: whether it passes ``spec``."""
    keep = np.ones(len(table), bool)
    if len(table) == 0:
        return keep
    if spec.require_antecedent or spec.exclude_antecedent:
        keep &= _side_mask(_sides(table, "antecedent"), spec.require_antecedent,
                           spec.exclude_antecedent, spec.match)
    if spec.require_consequent or spec.exclude_consequent:
        keep &= _side_mask(_sides(table, "consequent"), spec.require_consequent,
                           spec.exclude_consequent, spec.match)
    for col, (lo, hi) in dict(spec.ranges).items():
        if lo is None and hi is None:
            continue
        if col not in table:
            raise InvalidParameterError(
                f"cannot filter by {col!r}: the table has no such column (it has "
                f"{', '.join(statistic_columns(table))}).")
        v = pd.to_numeric(table[col], errors="coerce").to_numpy(dtype=float)
        ok = ~np.isnan(v)
        if lo is not None:
            ok &= v >= float(lo) - 1e-12
        if hi is not None:
            ok &= v <= float(hi) + 1e-12
        keep &= ok
    if not spec.hubs and "hub" in table:
        keep &= ~table["hub"].fillna(False).to_numpy(bool)
    return keep


def sort_rows(table: pd.DataFrame, by: str | None, descending: bool = True) -> pd.DataFrame:
    """The rows by ``by`` (None: unchanged), undefined values last, ties in the table's
    order (a stable sort)."""
    if by is None or len(table) == 0:
        return table
    if by not in table:
        raise InvalidParameterError(f"cannot sort by {by!r}: the table has no such column.")
    return table.sort_values(by, ascending=not descending, kind="stable", na_position="last")


def apply_filter(table: pd.DataFrame, spec: RelationFilter) -> pd.DataFrame:
    """The rows of a :func:`normalize`-d table that pass ``spec``, in its order."""
    return sort_rows(table[filter_mask(table, spec)], spec.sort_by, spec.descending)


def filter_frame(frame: pd.DataFrame, spec: RelationFilter) -> pd.DataFrame:
    """The rows of ``frame`` (either shape, its own column names) that pass ``spec``, in
    the order ``spec`` asks for: how the page applies the table's filters to its other
    views (the graph, the sentences, the rules side by side)."""
    view = apply_filter(normalize(frame), spec)
    return frame.loc[view.index]


def select_rows(table: pd.DataFrame, keys: Iterable | None) -> pd.DataFrame:
    """The rows of ``table`` whose index is in ``keys`` (in the table's order); every row
    when ``keys`` is None or empty (no selection)."""
    keys = [] if keys is None else list(keys)
    if not keys:
        return table
    return table[table.index.isin(keys)]


def selected_keys(selection_state) -> list:
    """The row keys (``customdata``) of the points selected in a Plotly chart, from its
    Streamlit selection state (``{"selection": {"points": [...]}}``), in the order given,
    without repeats; [] when nothing is selected."""
    points = ((selection_state or {}).get("selection") or {}).get("points") or []
    out, seen = [], set()
    for p in points:
        key = p.get("customdata") if isinstance(p, dict) else None
        if isinstance(key, (list, tuple)):
            key = key[0] if key else None
        if isinstance(key, float) and key.is_integer():
            key = int(key)
        if key is not None and key not in seen:
            seen.add(key)
            out.append(key)
    return out


def items_in(table: pd.DataFrame, column: str) -> list[int]:
    """Every item that appears on one side (``"antecedent"`` or ``"consequent"``), sorted."""
    if column not in table or not len(table):
        return []
    return sorted({i for s in _sides(table, column) for i in s})


def _side_text(sides) -> list[str]:
    return [" & ".join(str(i) for i in s) for s in sides]


def export_frame(table: pd.DataFrame, liked_phrase: str = "") -> pd.DataFrame:
    """The rows as written to a file: every column, a multi-item side's indices as text
    ("3 & 7", like its names) when the table has one, and the meaning of "liked" in a
    ``liked`` column so the file explains itself."""
    out = table.reset_index(drop=True)
    for col in ("antecedent", "consequent"):
        if col in out and len(out):
            sides = _sides(out, col)
            if any(len(s) != 1 for s in sides):
                out[col] = _side_text(sides)
            else:
                out[col] = np.array([s[0] for s in sides], dtype=np.int64)
    if liked_phrase:
        out["liked"] = liked_phrase
    out.attrs = {}
    return out


def export_bytes(table: pd.DataFrame, fmt: str = "csv", liked_phrase: str = "") -> bytes:
    """Every row of ``table`` as a CSV or Parquet file (:func:`export_frame`), formulas
    neutralized (:func:`kmviz.tabular_export.table_bytes`)."""
    if fmt not in EXPORT_FORMATS:
        raise InvalidParameterError(
            f"unknown export format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}.")
    return table_bytes(export_frame(table, liked_phrase), fmt)


def export_name(run_id: str, fmt: str) -> str:
    """The download's file name."""
    return f"implications-{run_id}.{fmt}"


def rule_counts(ratings, antecedents, consequents, liked=None) -> pd.DataFrame:
    """Counted from the ratings, per rule ``antecedents[k] => consequents[k]`` (an item or a
    tuple of items each): ``support`` (users who like every antecedent item), ``n_known``
    (those who rated the consequent), ``co_support`` (those who like it), ``confidence``
    (co_support / n_known) and ``classic_confidence`` (co_support / support). Plain set
    arithmetic on the users: the oracle of the tables' columns."""
    from ..rules import LikeCounts

    c = LikeCounts.of(ratings, liked)
    L, R = c.L.tocsc(), c.R.tocsc()
    fans = [set(L.indices[L.indptr[i]:L.indptr[i + 1]].tolist()) for i in range(L.shape[1])]
    if c.interactions:
        raters = [set(range(ratings.n_users))] * L.shape[1]
    else:
        raters = [set(R.indices[R.indptr[i]:R.indptr[i + 1]].tolist())
                  for i in range(R.shape[1])]
    rows = []
    for a, b in zip(antecedents, consequents):
        both = set.intersection(*(fans[i] for i in antecedent_items(a)))
        (i,) = antecedent_items(b)
        rows.append({"support": len(both), "n_known": len(both & raters[i]),
                     "co_support": len(both & fans[i])})
    df = pd.DataFrame(rows, columns=["support", "n_known", "co_support"])
    df["confidence"] = _ratio(df["co_support"], df["n_known"])
    df["classic_confidence"] = _ratio(df["co_support"], df["support"])
    return df
