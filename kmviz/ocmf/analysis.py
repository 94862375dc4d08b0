"""Analyses of one-class MF for people: the rho x lambda validation grid, a user's top-k with
each score's side-feature attribution, the TRON trace, and the all-pairs trick on demand.

Pure functions of data and fitted models (no Streamlit): the app's OCMF page only wires
widgets to them.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from .telemetry import ITERATION, OBJECTIVE_PARTS


#: The objective and its loss terms: the first row of the objective panels
LOSS_PARTS = ("objective", "l_plus", "l_minus")


def objective_panels(trace) -> tuple[list[list[str]], list[str]]:
    """Which columns of the objective's split (6)-(7) to draw, and which to leave out.

    Returns ``(rows, always_zero)``: at most two rows of panels, the objective and its loss
    terms (L+, L-) first, then the regularizers (only rows with a column), and the terms
    that stayed 0 at every iteration (the graph term without a graph), which are not drawn.
    Columns the trace lacks or never filled are skipped.
    """
    frame = trace.to_frame()
    parts = [c for c in ("objective", *OBJECTIVE_PARTS)
             if c in frame and frame[c].notna().any()]
    always_zero = [c for c in parts if c != "objective" and not frame[c].fillna(0).any()]
    parts = [c for c in parts if c not in always_zero]
    rows = [[c for c in parts if c in LOSS_PARTS], [c for c in parts if c not in LOSS_PARTS]]
    return [r for r in rows if r], always_zero


def objective_panel_title(row) -> str:
    """The title of one row of :func:`objective_panels`: each row says what it shows (the
    objective and its loss terms, or the regularizers), so two rows never share a title."""
    what = ("The objective (2) and its loss terms (6)-(7)" if any(c in LOSS_PARTS for c in row)
            else "The regularizers of (2)")
    return f"{what} per {ITERATION}"


def validation_grid(train, validation, rhos, lambdas, *, params=None, metric="precision_at_5",
                    progress=None) -> pd.DataFrame:
    """Validation ``metric`` over a rho x lambda grid (lambda_w = lambda_h = lambda).

    Each cell fits :class:`~kmviz.ocmf.OneClassMF` with ``params`` (the other settings) and
    keeps the best outer iteration's value, as the paper selects its 15-iteration models.

    Parameters
    ----------
    train, validation : Ratings
    rhos, lambdas : sequences of float
    params : dict, optional
        Other estimator parameters (k, loss, max_iter, side_features ...).
    metric : str
        A key of :meth:`OneClassMF.evaluate`.
    progress : callable, optional
        ``progress(done, total, row)`` after each cell (the app draws a progress bar).

    Returns
    -------
    DataFrame with columns rho, lambda, best (the metric), iteration (1-based), last,
    seconds; one row per cell.
    """
    from .estimator import OneClassMF

    base = dict(params or {})
    cells = [(float(r), float(lam)) for r in rhos for lam in lambdas]
    rows = []
    for done, (rho, lam) in enumerate(cells, start=1):
        t0 = time.perf_counter()
        model = OneClassMF(**{**base, "rho": rho, "lambda_w": lam, "lambda_h": lam})
        model.fit(train, validation=validation)
        values = model.trace_.column(f"validation_{metric}")
        best = int(np.nanargmax(values))
        row = {"rho": rho, "lambda": lam, "best": float(values[best]), "iteration": best + 1,
               "last": float(values[-1]), "seconds": time.perf_counter() - t0}
        rows.append(row)
        if progress is not None:
            progress(done, len(cells), row)
    return pd.DataFrame(rows)


def user_recommendations(model, user, k=10, *, train=None, held_out=None, top_terms=3):
    """A user's top-k (training positives left out) with each score's attribution.

    Parameters
    ----------
    model : fitted OneClassMF
    user : int
    k : int
    train : Ratings, optional
        For item names (``item_label``).
    held_out : Ratings, optional
        Held-out interactions: their pairs are marked ``held_out=True``.
    top_terms : int
        How many user-side terms to spell out per item (largest |contribution| first).

    Returns
    -------
    DataFrame: rank, item, name, score, held_out, user_terms (text, e.g.
    "identity +0.81; age -0.12") and one column per user-side feature with its contribution
    (features absent from this user's row are 0).
    """
    items = model.recommend(int(user), k=k)
    items = items[items >= 0]
    positives = set()
    if held_out is not None:
        u = np.asarray(held_out.users)
        positives = set(np.asarray(held_out.items)[u == int(user)].tolist())
    rows, contrib = [], []
    for rank, j in enumerate(items.tolist(), start=1):
        e = model.explain(int(user), j)
        terms = e.user_terms
        text = "; ".join(f"{f} {c:+.3g}" for f, c in zip(terms["feature"][:top_terms],
                                                        terms["contribution"][:top_terms]))
        name = train.item_label(j) if train is not None else f"item {j}"
        rows.append({"rank": rank, "item": j, "name": name, "score": e.score,
                     "held_out": j in positives, "user_terms": text})
        contrib.append(dict(zip(terms["feature"], terms["contribution"])))
    out = pd.DataFrame(rows)
    if contrib:
        C = pd.DataFrame(contrib).fillna(0.0)
        out = pd.concat([out, C.add_prefix("contribution: ")], axis=1)
    return out


def tron_trace(model) -> pd.DataFrame:
    """The inner iterations of every block (``model.inner_trace_``) with readable columns:
    outer iteration, block ("W" or "H"), Newton step, objective before and after, gradient
    norm, trust radius, CG steps, boundary reached, predicted and actual reduction, their
    ratio and whether the step was accepted."""
    df = model.inner_trace_.copy()
    df["block"] = np.where(df["block"] == 0, "W", "H")
    for col in ("iteration", "step", "cg_iter", "trials"):
        df[col] = df[col].astype(int)
    df["boundary"] = df["boundary"].astype(bool)
    df["accepted"] = df["accepted"].astype(bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        df["ratio"] = df["actred"] / df["prered"]
    return df


def allpairs_check(sizes=(100, 200, 400), k=16, *, density=0.05, loss="logistic", seed=0):
    """The all-pairs trick in numbers: the naive O(mn) objective, gradient and Hessian-vector
    product against the fast path, for square problems of the given sizes.

    Returns a DataFrame: m (= n), pairs, relative differences of f / gradient / Hv, and
    seconds of each path (one evaluation of all three).
    """
    import scipy.sparse as sp

    from . import _reference as R
    from ..pairs import ObservedPairs
    from .allpairs import AllPairsLoss
    from .features import SideMatrix
    from .problem import BlockProblem

    rng = np.random.default_rng(seed)
    rows = []
    for m in sizes:
        Y = sp.random(m, m, density=density, random_state=rng, format="csr")
        Y.data[:] = 1.0
        pairs = ObservedPairs.from_matrix(Y)
        p, q = np.full(m, 0.1), np.ones(m)
        loss_ = AllPairsLoss(pairs, loss, p, q, -1.0)
        X = SideMatrix(m, np.arange(m))
        W = rng.standard_normal((m, k)) * 0.3
        H = rng.standard_normal((m, k)) * 0.3
        S = rng.standard_normal((m, k))
        I = np.eye(m)
        t0 = time.perf_counter()
        fn = R.objective(W, H, I, I, Y, loss, p, q, -1.0, 1.0, 1.0)
        gn = R.grad_user(W, H, I, I, Y, loss, p, q, -1.0, 1.0)
        hn = R.hess_vec_user(W, H, S, I, I, Y, loss, p, q, -1.0, 1.0)
        t_naive = time.perf_counter() - t0
        t0 = time.perf_counter()
        prob = BlockProblem(loss_.block("rows", H), X, 1.0)
        ff = prob.fun(W.ravel()) + loss_.constant + float(np.sum(H * H))
        gf = prob.grad(W.ravel()).reshape(W.shape)
        hf = prob.hess_vec(S.ravel()).reshape(S.shape)
        t_fast = time.perf_counter() - t0
        rows.append({"m = n": m, "pairs": pairs.nnz,
                     "f rel. diff": abs(ff - fn) / abs(fn),
                     "grad rel. diff": float(np.abs(gf - gn).max() / np.abs(gn).max()),
                     "Hv rel. diff": float(np.abs(hf - hn).max() / np.abs(hn).max()),
                     "naive s": t_naive, "fast s": t_fast})
    return pd.DataFrame(rows)
