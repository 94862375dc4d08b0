"""Checks of the mined implications against what lies outside the model: the strong
pairwise rules a model misses, with the refit-free bounds on the D that could state them
(:func:`missed_rules`, :func:`order_dimension`), and recovery of a planted model's true
implications (:func:`planted_truth`, :func:`recovery_table`). Re-exported by
:mod:`kmviz.km.mining`."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..rules import pairwise_rules, recovery_scores
from ._groups import _considered, _group_pairs, support_groups
from .interpret import _psi_of


# ----------------------------------------------------------------------------- missed rules
def order_dimension(antecedent, consequent) -> dict:
    """How many events D a Kolmogorov model needs to state exactly the relations
    ``antecedent[k] => consequent[k]`` (and what follows from them, and nothing more) as
    nested supports: bounds, without a refit.

    The rules generate a preorder on their items (transitive closure; items that imply each
    other form one class, as an equivalence group of KM). Nested supports state it exactly
    when classes get distinct supports, ordered by inclusion as the classes are:

    * a chain of c classes (each implying the next) needs c distinct nested non-empty sets,
      so D >= c;
    * w classes none of which implies another need w sets none inside another; by Sperner's
      theorem at most C(D, floor(D / 2)) such sets exist in D events, so D >= the smallest
      such D;
    * one event per class, each class's support the events of the classes that imply it
      (itself included), states the order exactly: D <= the number of classes.

    Returns a dict with ``items``, ``classes``, ``chain`` (classes in the longest chain),
    ``width`` (largest set of mutually unrelated classes, Dilworth's theorem via a maximum
    bipartite matching), ``d_lower`` (the larger of the two lower bounds) and ``d_upper``.
    """
    from math import comb

    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components, maximum_bipartite_matching

    j = np.asarray(antecedent, dtype=np.int64)
    i = np.asarray(consequent, dtype=np.int64)
    if j.size == 0:
        return {"items": 0, "classes": 0, "chain": 0, "width": 0, "d_lower": 0, "d_upper": 0}
    items, idx = np.unique(np.concatenate([j, i]), return_inverse=True)
    n = items.size
    A = sp.csr_matrix((np.ones(j.size), (idx[:j.size], idx[j.size:])), shape=(n, n))
    n_cls, cls = connected_components(A, directed=True, connection="strong")
    # the class graph's transitive closure by repeated squaring of reachability
    R = np.eye(n_cls, dtype=bool)
    R[cls[idx[:j.size]], cls[idx[j.size:]]] = True
    while True:
        R2 = R | ((R.astype(np.float64) @ R.astype(np.float64)) > 0)
        if (R2 == R).all():
            break
        R = R2
    strict = R & ~np.eye(n_cls, dtype=bool)  # strict[a, b]: class a implies class b
    # longest chain: classes sorted by how many imply them is a linear extension
    order = np.argsort(strict.sum(axis=0), kind="stable")
    length = np.ones(n_cls, dtype=np.int64)
    for b in order:
        below = np.flatnonzero(strict[:, b])
        if below.size:
            length[b] = 1 + length[below].max()
    match = maximum_bipartite_matching(sp.csr_matrix(strict.astype(np.int8)), perm_type="column")
    width = int(n_cls - (match >= 0).sum())
    sperner = 1
    while comb(sperner, sperner // 2) < width:
        sperner += 1
    chain = int(length.max())
    return {"items": int(n), "classes": int(n_cls), "chain": chain, "width": width,
            "d_lower": max(chain, sperner), "d_upper": int(n_cls)}


def missed_rules(model, rules: pd.DataFrame, *, strong: int = 100) -> pd.DataFrame:
    """The strong rules the model does not imply, why not, and what D would hold them.

    Parameters
    ----------
    model : fitted KolmogorovModel, or psi (n_items, D)
    rules : DataFrame
        Rules j => i in their ranking (:func:`kmviz.rules.pairwise_rules`).
    strong : int, default=100
        The first ``strong`` rows are the strong rules.

    Returns
    -------
    DataFrame
        The strong rules with ``supp(psi_j)`` not inside ``supp(psi_i)`` (the model does not
        say that everyone who likes j likes i), with the rules' columns and:
        ``outside_events`` (events of supp(psi_j) outside supp(psi_i): users of those events
        like j but not i under the model), ``antecedent_events`` (|supp psi_j|),
        ``model_confidence`` (the model's own P(like i | like j) over the training users,
        ``sum_u theta_u . (psi_j and psi_i) / sum_u theta_u . psi_j``; 1 would be an
        implication; NaN when psi was passed without theta) and ``why`` in words.
        ``attrs``: ``strong``, ``held`` (strong rules the model implies), ``D`` and
        ``dimension``, the :func:`order_dimension` bounds of the strong rules: a model that
        states them (and nothing more among their items) as nested supports needs at least
        ``d_lower`` and at most ``d_upper`` events. These bounds come without refitting;
        whether a fit at such a D finds those supports is another matter (bench/
        implications_ranking.py measures the share held after refits at larger D).
    """
    b = _psi_of(model)
    top = rules.head(int(strong))
    j = top["antecedent"].to_numpy(np.int64)
    i = top["consequent"].to_numpy(np.int64)
    sj, si = b[j], b[i]
    outside = (sj & ~si).sum(axis=1)
    n_j = sj.sum(axis=1)
    held = (outside == 0) & (n_j > 0)
    theta = getattr(model, "theta_", None)
    if theta is not None:
        known = getattr(model, "known_users_", np.ones(theta.shape[0], bool))
        mass = np.asarray(theta, dtype=np.float64)[np.asarray(known, bool)].sum(axis=0)
        num = (sj & si).astype(np.float64) @ mass
        den = sj.astype(np.float64) @ mass
        model_conf = np.divide(num, den, out=np.full(j.size, np.nan), where=den > 0)
    else:
        model_conf = np.full(j.size, np.nan)
    why = [("the model gives j an empty support (it predicts nobody likes j)" if nj == 0 else
            f"{o} of supp(ψ_j)'s {nj} events lie outside supp(ψ_i): users of "
            f"{'that event' if o == 1 else 'those events'} like j but not i under the model")
           for o, nj in zip(outside, n_j)]
    out = top.assign(outside_events=outside.astype(np.int64),
                     antecedent_events=n_j.astype(np.int64), model_confidence=model_conf,
                     why=why)[~held].reset_index(drop=True)
    out.attrs.update(strong=int(len(top)), held=int(held.sum()), D=int(b.shape[1]),
                     dimension=order_dimension(j, i))
    return out


def missed_caption(missed: pd.DataFrame) -> str:
    """What :func:`missed_rules` found, in words: how many strong rules the model holds, why
    it misses the others, and the D that would state them (the refit-free bounds)."""
    a = missed.attrs
    strong, held, D = a.get("strong", 0), a.get("held", 0), a.get("D", 0)
    if not strong:
        return "No rule to compare with."
    dim = a.get("dimension", {})
    text = (f"The model (D = {D}) implies {held:,} of the {strong:,} strongest rules. A rule "
            "j ⇒ i is missed when supp(ψ_j) has events outside supp(ψ_i) ('outside_events'): "
            "users of those events like j but not i under the model; 'model_confidence' is "
            "the model's own P(like i | like j).")
    if dim.get("classes"):
        text += (f" To state these {strong:,} rules exactly as nested supports, a model needs "
                 f"at least {dim['d_lower']} and at most {dim['d_upper']} events (their "
                 f"longest chain has {dim['chain']} steps, {dim['width']} of their items are "
                 "mutually unrelated); that bounds D without a refit, not what a fit finds.")
    return text


# ----------------------------------------------------------------------------- ground truth
_SUPPORT = re.compile(r"\(support \{([0-9, ]*)\}\)\s*$")


def planted_truth(ratings) -> np.ndarray | None:
    """The true implications (rows (j, i)) of planted-KM data, or None for other data.

    Planted KM data (:func:`kmviz.data.make_planted_km`) names each item after its planted
    support ("item 3 (support {0, 2})"), so the truth travels with the ratings and with a
    saved run's item names; MovieLens-format planted data carries the supports as genre
    columns "support 0", "support 1", ... (``sample_data/planted-ml100k``).
    """
    from ..data.synthetic import implication_pairs

    n = ratings.n_items
    psi = None
    names = ratings.item_names
    if names is not None and len(names) == n:
        found = [_SUPPORT.search(str(x)) if x is not None else None for x in names]
        if all(found):
            sets = [[int(t) for t in m.group(1).replace(" ", "").split(",") if t]
                    for m in found]
            D = max((max(s) for s in sets if s), default=-1) + 1
            psi = np.zeros((n, max(D, 1)), dtype=np.int64)
            for k, s in enumerate(sets):
                psi[k, s] = 1
    feats = getattr(ratings, "item_features", None)
    if psi is None and feats is not None:
        cols = [f"support {d}" for d in range(64) if f"support {d}" in feats.columns]
        if cols:
            psi = np.nan_to_num(feats[cols].to_numpy(dtype=float)).astype(np.int64)
    if psi is None:
        return None
    return implication_pairs(psi)[0]


def km_claims(model, ratings, *, items=None) -> np.ndarray:
    """Every directed item pair (j, i), j != i, with supp(psi_j) ⊆ supp(psi_i) among the
    items considered (equivalent items both ways): the model's claims, for scoring."""
    groups = support_groups(model, ratings, items=items)
    A, C, E = _group_pairs(groups, merge=False)
    pairs = np.concatenate([np.column_stack([A, C]), np.column_stack([C[E], A[E]])])
    return pairs.astype(np.int64).reshape(-1, 2)


def recovery_table(model, ratings, truth, *, liked=None, items=None, min_support: int = 5,
                   min_confidence: float = 0.5) -> pd.DataFrame:
    """Precision and recall of the true implications (among the items considered) for the
    model's claims and for the association rules, the rules cut at the model's count (equal
    counts) and at their own thresholds."""
    claims = km_claims(model, ratings, items=items)
    keep = _considered(_psi_of(model), ratings, items)
    truth = np.asarray(truth, dtype=np.int64).reshape(-1, 2)
    truth = truth[keep[truth[:, 0]] & keep[truth[:, 1]]] if truth.size else truth
    rules = pairwise_rules(ratings, liked=liked, min_support=min_support,
                           min_confidence=min_confidence, items=keep)
    rp = rules[["antecedent", "consequent"]].to_numpy()
    rows = [{"method": "Kolmogorov model (every implication)", **recovery_scores(claims, truth)},
            {"method": f"association rules, top {len(claims):,} (equal count)",
             **recovery_scores(rp[:len(claims)], truth)},
            {"method": f"association rules (co-support >= {min_support}, confidence >= "
                       f"{min_confidence:g})", **recovery_scores(rp, truth)}]
    return pd.DataFrame(rows)
