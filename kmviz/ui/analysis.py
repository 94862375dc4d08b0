"""Per-item diagnostics for the Explore pages: an item's BQP (S_i, v_i), C(u*), dual runs.

The per-item statistics come from the fitted model itself
(:meth:`kmviz.km.KolmogorovModel.item_problem`, the fit's own kernel); heavy results are
cached per (run, item, settings) with bounded caches.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st


def items_by_count(ratings) -> list[int]:
    """Items with at least one rating, most rated first."""
    counts = ratings.item_counts()
    order = np.argsort(-counts, kind="stable")
    return [int(i) for i in order if counts[i] > 0]


def item_bqp_problem(run, item: int) -> tuple[np.ndarray, np.ndarray]:
    """S_i and v_i of ``item``'s binary QP (4) at the run's theta, exactly as the fit builds
    them (:meth:`kmviz.km.KolmogorovModel.item_problem` on the run's training ratings)."""
    if run.model is None or not hasattr(run.model, "item_problem"):
        raise ValueError(f"Run {run.label!r} has no fitted Kolmogorov model to rebuild the "
                         "item's binary QP from.")
    return run.model.item_problem(run.split.train, int(item))


def item_dual_matrix(run, item: int) -> np.ndarray:
    """C(u*) of eq. (12) for ``item``'s dual at the run's theta (the matrix Alg. 5 sees)."""
    from kmviz.km.bqp import dual_matrix

    S, v = item_bqp_problem(run, item)
    return dual_matrix(S, v, optimal_dual(run, item, S, v))


def _frame(result: dict) -> pd.DataFrame:
    """A dual trajectory (dict of per-iterate arrays) as a DataFrame, one row per iterate."""
    n = len(result["iteration"])
    cols = {k: np.asarray(v) for k, v in result.items()
            if np.ndim(v) == 1 and len(v) == n and k != "u_star"}
    return pd.DataFrame(cols)


@st.cache_data(max_entries=32, show_spinner="Running the dual gradient descent ...")
def dual_trajectories(S: np.ndarray, v: np.ndarray, gamma: float) -> dict:
    """Fig. 1 (Alg. 1 vs Alg. 2) and Fig. 2 (Alg. 2 without / with the initial step of
    Sec. IV-A), all from the same start, plus u* of the item's dual."""
    from kmviz.km.bqp import dual_trajectory

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


def optimal_dual(run, item: int, S, v) -> np.ndarray:
    """u* of this item's dual at the run's final theta (a tight solve of the same S_i, v_i;
    the fit's stored dual belongs to the theta before its last update)."""
    return dual_trajectories(S, v, float(run.params.get("gamma", 100.0)))["u_star"]


@st.cache_data(max_entries=64, show_spinner=False)
def lanczos_view(C: np.ndarray, a: float) -> dict:
    """Diagnostics of Alg. 5 on C for m = 1..D+1, and the Ritz values of every T_m."""
    from kmviz.km.lanczos import lanczos_diagnostics

    d = lanczos_diagnostics(C, a=a)
    n = len(d["m"])
    per_m = {k: np.asarray(d[k]) for k in d if k not in ("eigenvalues", "ritz_m", "ritz_values")
             and np.ndim(d[k]) == 1 and len(d[k]) == n}
    return {"diag": pd.DataFrame(per_m).dropna(subset=["beta"]), "delta": float(d["delta"]),
            "m_threshold": int(d["m_threshold"]), "eigenvalues": np.asarray(d["eigenvalues"]),
            "ritz": pd.DataFrame({"m": d["ritz_m"], "value": d["ritz_values"]})}


# ---------------------------------------------------------------------------- implications
def item_names(run) -> list[str]:
    """Display names of the run's items (titles when the data has them)."""
    if run.split is not None:
        train = run.split.train
        return [train.item_label(i) for i in range(train.n_items)]
    return [f"item {i}" for i in range(np.asarray(run.psi).shape[0])]


@st.cache_data(max_entries=16, show_spinner="Building the implication graph ...")
def implication_graph_cached(psi: np.ndarray, names: tuple):
    from kmviz.km.interpret import implication_graph

    return implication_graph(psi, list(names), transitive_reduction=False)


#: Training ratings above which the Implications page hides rarely rated items by default.
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
    """The Implications page's default item filter: see :data:`MIN_RATINGS_HELP`."""
    return LARGE_DATA_MIN_RATINGS if train.n_ratings > LARGE_DATA_RATINGS else 1


def shown_items(train, min_ratings: int) -> np.ndarray:
    """Boolean mask of the items with at least ``min_ratings`` (>= 1) training ratings."""
    return train.item_counts() >= max(1, int(min_ratings))


def influence_summary(scores: np.ndarray, keep: np.ndarray) -> dict:
    """Counts for the page: items shown and hidden, and how many of each have ς = 1."""
    one = np.isclose(scores, 1.0)
    shown = np.flatnonzero(keep)
    top = shown[np.argsort(-scores[shown], kind="stable")[:3]]
    return {"shown": int(keep.sum()), "hidden": int((~keep).sum()),
            "one_shown": int((one & keep).sum()), "one_hidden": int((one & ~keep).sum()),
            "top3": [int(i) for i in top]}


def filter_caption(summary: dict, min_ratings: int) -> str:
    """One sentence on what the minimum-ratings filter hides."""
    total = summary["shown"] + summary["hidden"]
    if summary["hidden"] == 0:
        return f"Showing all {total:,} items."
    why = "without training ratings" if min_ratings <= 1 else \
        f"with fewer than {min_ratings} training ratings"
    return (f"Showing {summary['shown']:,} of {total:,} items: {summary['hidden']:,} hidden "
            f"{why}, {summary['one_hidden']:,} of them with ς = 1.")


def restrict_graph(G, keep: np.ndarray):
    """The implication graph over the kept items only: hidden items leave their nodes; a
    node with no kept member is dropped. Supports (so the edges) and ς are unchanged."""
    H = G.copy()
    for n, d in list(H.nodes(data=True)):
        pairs = [(m, nm) for m, nm in zip(d.get("members", ()), d.get("names", ()))
                 if keep[int(m)]]
        if not pairs:
            H.remove_node(n)
            continue
        members, names = [m for m, _ in pairs], [nm for _, nm in pairs]
        H.nodes[n].update(members=members, names=names,
                          label=names[0] if len(names) == 1 else
                          f"{names[0]} (+{len(names) - 1})")
    return H


def clicked_item(selection_state) -> int | None:
    """The item of the node clicked in the implication graph, from the chart's selection
    state (``st.session_state[<chart key>]``), or None when no node is selected."""
    points = ((selection_state or {}).get("selection") or {}).get("points") or []
    for point in points:
        data = point.get("customdata")
        if isinstance(data, list):  # some front-ends wrap a scalar customdata in a list
            data = data[0] if data else None
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            return int(data)
    return None


def node_of_item(G, item: int):
    for n, d in G.nodes(data=True):
        if int(item) in d.get("members", ()):
            return n
    return None


def plain_words(run, item: int, names: list[str], limit: int = 15,
                keep: np.ndarray | None = None) -> tuple[str, str]:
    """What liking ``item`` implies, and what implies liking it, as sentences (only items
    in ``keep`` are named; the others are counted)."""
    from kmviz.km.interpret import implied_by_liking, implies

    psi = np.asarray(run.psi)
    a = names[int(item)]
    hidden = {"out": 0, "in": 0}

    def listing(idx):
        shown = ", ".join(f"**{names[j]}**" for j in idx[:limit])
        return shown + (f" and {len(idx) - limit} more" if len(idx) > limit else "")

    out = implied_by_liking(psi, item)
    inn = implies(psi, item)
    if keep is not None:
        hidden = {"out": int((~keep[out]).sum()), "in": int((~keep[inn]).sum())}
        out, inn = out[keep[out]], inn[keep[inn]]
    if not psi[int(item)].any():
        msg = f"**{a}** has an empty support (no training ratings or never liked): no implications."
        return msg, msg

    def note(k):
        return f" ({k} rarely rated item(s) hidden)" if k else ""

    s1 = (f"Everyone who likes **{a}** also likes {listing(out)}." if len(out) else
          f"Liking **{a}** implies nothing about the items shown.") + note(hidden["out"])
    s2 = (f"Everyone who likes any of {listing(inn)} also likes **{a}**." if len(inn) else
          f"No other item shown implies liking **{a}**.") + note(hidden["in"])
    return s1, s2


def precision_table(run, *, threshold: float = 0.5, min_users: int = 3,
                    keep: np.ndarray | None = None) -> pd.DataFrame:
    """Precision of each implication on the training and the held-out ratings, side by side
    (cached per run, threshold and item filter); only pairs of items in ``keep`` when given."""
    return _precision_table(run.run_id, float(threshold), int(min_users), keep, _run=run)


@st.cache_data(max_entries=16, show_spinner="Checking the implications against the ratings ...")
def _precision_table(run_id: str, threshold: float, min_users: int, keep, *, _run) -> pd.DataFrame:
    run = _run
    from kmviz.km.interpret import implication_precision

    psi = np.asarray(run.psi)
    mode = run.params.get("probability", "minmax")
    kw = dict(threshold=threshold, probability=mode, names=item_names(run), subset=keep)
    key = ["antecedent", "consequent"]
    train = implication_precision(psi, run.split.train, min_users=min_users, **kw)
    out = train.rename(columns={"n_users": "train_users", "precision": "train_precision",
                                "lift": "train_lift", "base_rate": "train_base_rate"})
    held = run.split.test if run.split.test is not None else run.split.validation
    if held is not None:
        test = implication_precision(psi, held, min_users=1, **kw)[key + ["n_users", "precision", "lift"]]
        test = test.rename(columns={"n_users": "heldout_users", "precision": "heldout_precision",
                                    "lift": "heldout_lift"})
        out = out.merge(test, on=key, how="left")
    columns = ["antecedent_name", "consequent_name", "train_users", "train_precision",
               "train_lift", "heldout_users", "heldout_precision", "heldout_lift", "equivalent",
               "antecedent", "consequent"]
    return out[[c for c in columns if c in out]].reset_index(drop=True)


def table_vi(run, items, *, threshold: float = 0.5, users=None) -> pd.DataFrame:
    """The paper's Table VI measure for the chosen items (and users, if given)."""
    from kmviz.km.interpret import relation_mining_accuracy

    names = item_names(run)
    frames = []
    for i in items:
        df = relation_mining_accuracy(np.asarray(run.psi), run.split.train, int(i),
                                      threshold=threshold,
                                      probability=run.params.get("probability", "minmax"))
        df.insert(1, "item_name", names[int(i)])
        frames.append(df)
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    if users:
        out = out[out["user"].isin([int(u) for u in users])]
    return out


def dual_summary(traj: dict) -> pd.DataFrame:
    """Iterations and EVDs per dual method (Alg. 1 and 2 share iterates, not EVD counts)."""
    rows = {}
    for label, df in {**traj["fig1"], **traj["fig2"]}.items():
        rows[label] = {"dual iterations": max(len(df) - 1, 0),
                       "EVDs": int(df["n_evd"].iloc[-1]) if "n_evd" in df and len(df) else None,
                       "final gap": float(df["gap"].iloc[-1]) if len(df) else None}
    return pd.DataFrame.from_dict(rows, orient="index")


def raters_of(run, items) -> list[int]:
    """Users who rated any of ``items`` in the training ratings."""
    train = run.split.train
    mask = np.isin(np.asarray(train.items), [int(i) for i in items])
    return [int(u) for u in np.unique(np.asarray(train.users)[mask])]


@st.cache_data(max_entries=16, show_spinner=False)
def influence_cached(run_id: str, psi: np.ndarray) -> np.ndarray:
    from kmviz.km.interpret import influence_scores

    return influence_scores(psi)


#: Largest item-level implications table offered for download (rows).
MAX_EXPORT_ROWS = 1_000_000


def implications_csv(run, names: list[str], keep_mask: np.ndarray | None = None
                     ) -> tuple[str, str]:
    """(CSV text, note) of the item-level implications among the items in ``keep_mask``
    (all by default); capped to the most rated items when the table would exceed
    :data:`MAX_EXPORT_ROWS` rows."""
    from kmviz.km.interpret import implications_frame, support_matrix

    psi = np.asarray(run.psi)
    n = psi.shape[0]
    note = ""
    keep = np.arange(n) if keep_mask is None else np.flatnonzero(keep_mask)
    if int(support_matrix(psi[keep]).sum()) > MAX_EXPORT_ROWS and run.split is not None:
        counts = run.split.train.item_counts()
        keep = np.sort(keep[np.argsort(-counts[keep], kind="stable")[:1000]])
        note = ("The full table is too large to download; this file covers the 1,000 most "
                "rated items.")
    frame = implications_frame(psi[keep], [names[i] for i in keep])
    frame["antecedent"] = keep[frame["antecedent"].to_numpy()]
    frame["consequent"] = keep[frame["consequent"].to_numpy()]
    return frame.to_csv(index=False), note
