"""Why one run beat another, in sentences: the explorer's question on the Runs page.

:func:`explain_comparison` reads the runs' listing rows (settings, metrics, status, number
of iterations) and their traces, and says, for a metric: which run is best and by how much;
the settings in which each other run differs from it; how each fit ended (converged, or cut
at its iteration limit while still improving); when the curves parted (the best run ahead
from the first iteration, or overtaking at iteration t); whether the loser fitted its
training part better but generalized worse; the warnings its trace holds; and, for runs
that differ only in their seed, that the difference is the spread of the fit itself.
Nothing here needs Streamlit.
"""

from __future__ import annotations

import math

import numpy as np

#: Metric names ending so are errors (smaller is better); any other metric is maximized.
ERROR_SUFFIXES = ("rmse", "nrmse", "nmse", "mse", "mae", "loss", "objective")
#: The seed setting: runs differing only in it are repeats of one configuration.
SEED = "random_state"


def lower_is_better(metric: str) -> bool:
    """Whether smaller values of ``metric`` are better (an error or a loss)."""
    return str(metric).endswith(ERROR_SUFFIXES)


def _num(x) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v


def _fmt(x) -> str:
    if isinstance(x, (float, np.floating)):
        return f"{x:.4g}"
    return str(x)


def _curve(trace, metric: str) -> np.ndarray:
    """The trace's per-iteration values of ``metric`` (its trace column: the metric name,
    or ``validation_*`` columns as recorded), NaN where absent."""
    if trace is None or not getattr(trace, "rows", None):
        return np.zeros(0)
    return np.array([_num(r.get(metric)) for r in trace.rows], dtype=float)


def _ended(row, trace) -> str:
    status = str(row.get("status") or getattr(trace, "stop_reason", "") or "")
    n = int(_num(row.get("n_iter"))) if not math.isnan(_num(row.get("n_iter"))) else None
    its = f"{n} iteration{'s' if n != 1 else ''}" if n is not None else "its iterations"
    if status == "converged":
        return f"converged after {its}"
    if status == "max_iter":
        return f"was cut at its iteration limit after {its}, before its stopping criterion"
    if status in ("callback", "stopped"):
        return f"was stopped by the user after {its}"
    return f"ended ({status or 'unknown'}) after {its}"


def _parting(best: np.ndarray, other: np.ndarray, smaller: bool) -> str | None:
    n = min(best.size, other.size)
    if n == 0:
        return None
    b, o = best[:n], other[:n]
    ok = ~(np.isnan(b) | np.isnan(o))
    if not ok.any():
        return None
    ahead = np.where(ok, (b < o) if smaller else (b > o), False)
    idx = np.flatnonzero(ok)
    if ahead[idx].all():
        return "ahead from the first iteration on"
    behind = idx[~ahead[idx]]
    last_behind = int(behind.max())
    if last_behind == idx.max():
        return f"behind at iteration {last_behind + 1} (the last both ran), ahead only after"
    return f"behind until iteration {last_behind + 1}, ahead from iteration {last_behind + 2}"


def explain_comparison(runs, traces: dict, metric: str, *, settings=()) -> list[str]:
    """Sentences on why the best of ``runs`` (for ``metric``) beat each other run.

    Parameters
    ----------
    runs : pandas.DataFrame
        One row per run, indexed by run id, with ``label``, ``status``, ``n_iter``, the
        metric columns and the settings (the Runs page's listing).
    traces : dict
        Run id -> :class:`kmviz.trace.Trace` (a missing one: no sentence about its curve).
    metric : str
        The metric to rank by (``validation_nrmse``, ``validation_precision_at_5`` ...).
    settings : sequence of str
        The settings to compare (default: every column the rows share that is not a metric
        or a listing field).
    """
    if metric not in runs or len(runs) < 2:
        return []
    values = runs[metric].map(_num)
    known = values.dropna()
    if len(known) < 2:
        return [f"Fewer than two of these runs have {metric}: nothing to rank."]
    smaller = lower_is_better(metric)
    best_id = known.idxmin() if smaller else known.idxmax()
    best = runs.loc[best_id]
    name = lambda rid: f"“{runs.loc[rid].get('label') or rid}”"  # noqa: E731
    settings = [s for s in settings if s in runs] or []
    out = []
    others = [r for r in known.index if r != best_id]
    word = "lowest" if smaller else "highest"
    out.append(f"{name(best_id)} has the {word} {metric}: {_fmt(values[best_id])}; it "
               f"{_ended(best, traces.get(best_id))}.")
    best_curve = _curve(traces.get(best_id), metric)
    for rid in others:
        row = runs.loc[rid]
        a, b = values[best_id], values[rid]
        if smaller and a > 0:
            by = f"{b / a:.2f}× the best's" if b / a >= 1.01 else "about the best's"
        elif not smaller and b > 0:
            by = (f"the best's is {a / b:.2f}× as high" if a / b >= 1.01
                  else "about the best's")
        else:
            by = f"a difference of {abs(a - b):.3g}"
        diff = [s for s in settings if _fmt(row.get(s)) != _fmt(best.get(s))]
        parts = [f"{name(rid)}: {metric} {_fmt(b)} ({by})"]
        if diff == [SEED] or (not diff and settings):
            parts.append("same settings as the best but the seed"
                         if diff else "the same settings")
            parts.append("so the gap is the spread of the fit over seeds, not a setting")
        elif diff:
            parts.append("differs in " + ", ".join(
                f"{s} = {_fmt(row.get(s))} (best: {_fmt(best.get(s))})" for s in diff))
        parts.append(f"it {_ended(row, traces.get(rid))}")
        parting = _parting(best_curve, _curve(traces.get(rid), metric), smaller)
        if parting:
            parts.append(f"the best run was {parting}")
        train = metric.replace("validation_", "train_", 1)
        if train != metric and train in runs:
            ta, tb = _num(best.get(train)), _num(row.get(train))
            if not (math.isnan(ta) or math.isnan(tb)) and (
                    (tb < ta) if lower_is_better(train) else (tb > ta)):
                parts.append(f"it fits its training part better ({train} {_fmt(tb)} against "
                             f"{_fmt(ta)}) but generalizes worse: a sign of overfitting")
        warned = [e.get("message", "") for e in getattr(traces.get(rid), "events", []) or []
                  if e.get("kind") == "warning"]
        if warned:
            parts.append(f"its trace warns: {warned[0]}")
        out.append("; ".join(parts) + ".")
    missing = [r for r in runs.index if r not in known.index]
    if missing:
        out.append(f"{', '.join(name(r) for r in missing)} ha{'ve' if len(missing) > 1 else 's'}"
                   f" no {metric}: not ranked.")
    return out
