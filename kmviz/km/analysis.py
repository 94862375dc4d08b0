"""What the KM Explore views compute, as plain functions of a fitted model and its split.

No Streamlit here: the app's pages call these through thin cached wrappers
(:mod:`kmviz.ui.families.km`), and they work the same from Python on a reopened run::

    opened = kmviz.runs.open_run(run_id)
    precision_table(opened.model, opened.split)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..rules import INTERACTED
from .estimator import to_probability
from .interpret import relation_mining_accuracy


def items_by_count(ratings) -> list[int]:
    """Items with at least one rating, most rated first."""
    counts = ratings.item_counts()
    order = np.argsort(-counts, kind="stable")
    return [int(i) for i in order if counts[i] > 0]


def typical_item(ratings, min_ratings: int = 10) -> int | None:
    """The one default item of the per-item views: the median item by rating count among
    those with at least ``min_ratings`` ratings, breaking ties toward the best mean rating
    (a well-rated item with a typical amount of data; the paper's dual GD needs thousands of
    iterations on the most rated items). None when no item has ratings."""
    order = items_by_count(ratings)
    if not order:
        return None
    counts = ratings.item_counts()
    pool = [i for i in order if counts[i] >= min_ratings] or order
    # the middle third by count, then the best mean rating among them
    k = len(pool)
    middle = pool[k // 3: max(k // 3 + 1, (2 * k) // 3)]
    sums = np.bincount(np.asarray(ratings.items), weights=np.asarray(ratings.values),
                       minlength=ratings.n_items)
    means = sums / np.maximum(counts, 1)
    return int(max(middle, key=lambda i: (means[i], counts[i], -i)))


def item_names(ratings) -> list[str]:
    """Display names of the items (titles when the data has them)."""
    return [ratings.item_label(i) for i in range(ratings.n_items)]


def item_dual_matrix(model, train, item: int, u_star) -> np.ndarray:
    """C(u*) of eq. (12) for ``item``'s dual at the model's theta (the matrix Alg. 5 sees)."""
    from .solvers import dual_matrix

    S, v = model.item_problem(train, int(item))
    return dual_matrix(S, v, u_star)


def _frame(result: dict) -> pd.DataFrame:
    """A dual trajectory (dict of per-iterate arrays) as a DataFrame, one row per iterate."""
    n = len(result["iteration"])
    cols = {k: np.asarray(v) for k, v in result.items()
            if np.ndim(v) == 1 and len(v) == n and k != "u_star"}
    return pd.DataFrame(cols)


def dual_trajectories(S: np.ndarray, v: np.ndarray, gamma: float) -> dict:
    """Fig. 1 (Alg. 1 vs Alg. 2) and Fig. 2 (Alg. 2 without / with the initial step of
    Sec. IV-A), all from the same start, plus u* of the item's dual."""
    from .solvers import dual_trajectory

    gd = dual_trajectory(S, v, "gd", gamma)
    enh = dual_trajectory(S, v, "enhanced", gamma, initial_step=False)
    enh0 = dual_trajectory(S, v, "enhanced", gamma, initial_step=True)
    return {
        "fig1": {"original GD (Alg. 1)": _frame(gd), "enhanced GD (Alg. 2)": _frame(enh)},
        "fig2": {"enhanced GD (Alg. 2)": _frame(enh),
                 "enhanced GD + initial step (Sec. IV-A)": _frame(enh0)},
        "u_star": np.asarray(enh["u_star"], dtype=float),
        "converged": {"gd": bool(gd["converged"]), "enhanced": bool(enh["converged"]),
                      "enhanced + initial step": bool(enh0["converged"])},
    }


def dual_summary(traj: dict) -> pd.DataFrame:
    """Iterations and EVDs per dual method (Alg. 1 and 2 share iterates, not EVD counts)."""
    rows = {}
    for label, df in {**traj["fig1"], **traj["fig2"]}.items():
        rows[label] = {"dual iterations": max(len(df) - 1, 0),
                       "EVDs": int(df["n_evd"].iloc[-1]) if "n_evd" in df and len(df) else None,
                       "final gap": float(df["gap"].iloc[-1]) if len(df) else None}
    return pd.DataFrame.from_dict(rows, orient="index")


def lanczos_view(C: np.ndarray, a: float) -> dict:
    """Diagnostics of Alg. 5 on C for m = 1..D+1, and the Ritz values of every T_m."""
    from .lanczos import lanczos_diagnostics

    d = lanczos_diagnostics(C, a=a)
    n = len(d["m"])
    per_m = {k: np.asarray(d[k]) for k in d if k not in ("eigenvalues", "ritz_m", "ritz_values")
             and np.ndim(d[k]) == 1 and len(d[k]) == n}
    return {"diag": pd.DataFrame(per_m).dropna(subset=["beta"]), "delta": float(d["delta"]),
            "m_threshold": int(d["m_threshold"]), "eigenvalues": np.asarray(d["eigenvalues"]),
            "ritz": pd.DataFrame({"m": d["ritz_m"], "value": d["ritz_values"]})}


# ---------------------------------------------------------------------------- implications
#: Training ratings above which the Implications view hides rarely rated items by default.
LARGE_DATA_RATINGS = 10_000
#: The default minimum number of training ratings per item on large data.
LARGE_DATA_MIN_RATINGS = 20
MIN_RATINGS_HELP = (
    "Items with fewer training ratings are hidden from the influence list, the graph, the "
    "tables and the CSV: with one to three ratings the model can put such an item on every "
    f"event (ψ_i all ones, ς_i = 1) at no cost. Default: {LARGE_DATA_MIN_RATINGS} when the "
    f"training part has more than {LARGE_DATA_RATINGS:,} ratings, else 1 (show every item). "
    "The scores ς_i themselves are always computed over all items, as in eq. (21).")


def default_min_ratings(train) -> int:
    """The Implications view's default item filter: see :data:`MIN_RATINGS_HELP`."""
    return LARGE_DATA_MIN_RATINGS if train.n_ratings > LARGE_DATA_RATINGS else 1


def shown_items(train, min_ratings: int) -> np.ndarray:
    """Boolean mask of the items with at least ``min_ratings`` (>= 1) training ratings."""
    return train.item_counts() >= max(1, int(min_ratings))


def liked_step(train) -> float:
    """Step of the "liked when rating >=" input: the data's rating step, else a twentieth
    of the scale (rounded)."""
    from ..rules import rating_step

    return rating_step(train) or round((train.r_max - train.r_min) / 20, 6)


def default_rule_support(train) -> int:
    """The Implications view's default least co-support of an association rule."""
    return 20 if train.n_ratings > LARGE_DATA_RATINGS else 3


def shown_by_count(train, keep: np.ndarray) -> list[int]:
    """The items of the mask ``keep``, most rated first (:func:`items_by_count`)."""
    return [i for i in items_by_count(train) if keep[i]]


def influence_summary(scores: np.ndarray, keep: np.ndarray) -> dict:
    """Counts for the view: items shown and hidden, and how many of each have ς = 1."""
    one = np.isclose(scores, 1.0)
    shown = np.flatnonzero(keep)
    top = shown[np.argsort(-scores[shown], kind="stable")[:3]]
    return {"shown": int(keep.sum()), "hidden": int((~keep).sum()),
            "one_shown": int((one & keep).sum()), "one_hidden": int((one & ~keep).sum()),
            "top3": [int(i) for i in top]}


def _number(x, spec: str) -> str | None:
    """``format(x, spec)``, or None for a missing or not-a-number value."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return format(x, spec) if np.isfinite(x) else None


def heldout_sentence(pooled: dict) -> str:
    """The page's sentence on the implications too rare for a rule, on held-out data
    (:func:`kmviz.km.mining.heldout_summary`). A confidence, lift or interval that is not a
    number (no held-out like of the consequents: lift divides by their base rate) is said
    in words, never printed as "nan"."""
    conf = _number(pooled.get("confidence"), ".2f")
    lift = _number(pooled.get("lift"), ".2f")
    lo, hi = _number(pooled.get("lift_lo"), ".2f"), _number(pooled.get("lift_hi"), ".2f")
    n = int(pooled.get("heldout_n", 0) or 0)
    parts = [f"confidence {conf}" if conf is not None else
             "confidence not defined (no held-out rating of their antecedents)"]
    if lift is None:
        parts.append("lift not defined (no held-out like of their consequents to compare "
                     "with)")
    elif lo is not None and hi is not None:
        parts.append(f"lift {lift} (95% interval {lo}-{hi}, users resampled)")
    else:
        parts.append(f"lift {lift}")
    return ("Those too rare for a rule, on held-out data: " + ", ".join(parts) +
            f" over {n:,} held-out ratings.")


def filter_caption(summary: dict, min_ratings: int) -> str:
    """One sentence on what the minimum-ratings filter hides."""
    total = summary["shown"] + summary["hidden"]
    if summary["hidden"] == 0:
        return f"Showing all {total:,} items."
    why = "without training ratings" if min_ratings <= 1 else \
        f"with fewer than {min_ratings} training ratings"
    return (f"Showing {summary['shown']:,} of {total:,} items: {summary['hidden']:,} hidden "
            f"{why}, {summary['one_hidden']:,} of them with ς = 1.")


def default_liked(model, train):
    """The page's default meaning of "liked": the threshold the model was trained on likes
    with (``KolmogorovModel(threshold=...)``), else :func:`kmviz.rules.liked_threshold` of
    the training data (4 on a 1-5 scale; "interacted" for 0/1 data)."""
    from ..rules import liked_threshold

    threshold = getattr(model, "threshold_", None)
    if threshold is None:
        threshold = getattr(model, "threshold", None)
    if threshold is not None and not train.implicit:
        return float(min(max(float(threshold), train.r_min), train.r_max))
    return liked_threshold(train)


def liked_probability(model, train, liked) -> float:
    """The probability-scale cut of "liked" (a rating threshold in the data's units, or
    :data:`kmviz.rules.INTERACTED`), as the paper's measures take it."""
    if liked == INTERACTED:
        return 0.0
    return float(to_probability([liked], train.r_min, train.r_max, model.probability_)[0])


def table_vi(model, train, items, *, threshold: float = 0.5, users=None,
             liked=None) -> pd.DataFrame:
    """The paper's Table VI measure for the chosen items (and users, if given).

    ``threshold`` is on the model's probability scale; ``liked`` (a rating in the data's
    units, as elsewhere in kmviz) overrides it when given."""
    if liked is not None:
        threshold = liked_probability(model, train, liked) - 1e-9
    names = item_names(train)
    frames = []
    for i in items:
        df = relation_mining_accuracy(np.asarray(model.psi_), train, int(i),
                                      threshold=threshold, probability=model.probability_)
        df.insert(1, "item_name", names[int(i)])
        frames.append(df)
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    if users:
        out = out[out["user"].isin([int(u) for u in users])]
    return out


def raters_of(train, items) -> list[int]:
    """Users who rated any of ``items`` in the training ratings."""
    mask = np.isin(np.asarray(train.items), [int(i) for i in items])
    return [int(u) for u in np.unique(np.asarray(train.users)[mask])]
