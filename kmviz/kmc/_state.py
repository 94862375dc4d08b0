"""What every Kernel MC method shares before and after its own iterations: the checked
data, the side information, the kernels of both sides, which rows and columns can be
predicted, and the comparison with the training mean.

:func:`start` builds the fit's state, a :class:`KMCState` (the solvers of
:mod:`kmviz.kmc.solvers` then add their own work arrays to it); nothing of a fit is kept
on the estimator.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .._state import FitStateBase
from ..exceptions import ConvergenceWarning, DataValueError, InvalidParameterError
from . import rkhs as kn
from . import krr
from .params import KERNEL_METHODS


@dataclass
class KMCState(FitStateBase):
    """One fit of :class:`~kmviz.kmc.KernelMatrixCompletion` (``method`` is the solver's key
    in :data:`kmviz.kmc.solvers.REGISTRY`).

    Attributes
    ----------
    N, L : int
        Rows and columns.
    rows, cols, values : ndarray
        The checked training entries; ``m`` is ``values - offset``.
    offset : float
        The training mean when ``center``, else 0.
    known_rows, known_cols, predictable_rows, predictable_cols : ndarray of bool
        Rows / columns with training entries, and those the model can predict.
    graphs : dict
        ``{"row": adjacency or None, "col": ...}``, the side information given.
    row_side, col_side : krr.SideKernel or None; row_kernel, col_kernel : ndarray or None
        The two sides' kernels (dense ones also as arrays).
    truth : ndarray or None
        The whole true matrix (``truth_nmse`` per row).
    iterative : bool
        The method takes more than one step (set by the solver's ``start``).
    solver : str
        The resolved inner solver (KKMCEX: "direct" or "cg"), else the method.
    engine : object
        A factor method's ALS / SGD / PG engine.
    prev_obj : float
        The last objective (the relative-decrease test of :func:`solvers._common.decrease_step`).
    validation : tuple or None
        The checked validation entries ``(users, items, values)``, for every row's metrics.

    A solver's ``start`` adds the arrays of its method (``coef``, ``features``, ``cg`` ...).
    """

    N: int = 0
    L: int = 0
    rows: np.ndarray | None = None
    cols: np.ndarray | None = None
    values: np.ndarray | None = None
    m: np.ndarray | None = None
    offset: float = 0.0
    known_rows: np.ndarray | None = None
    known_cols: np.ndarray | None = None
    predictable_rows: np.ndarray | None = None
    predictable_cols: np.ndarray | None = None
    graphs: dict = field(default_factory=dict)
    row_side: object = None
    col_side: object = None
    row_kernel: np.ndarray | None = None
    col_kernel: np.ndarray | None = None
    truth: np.ndarray | None = None
    iterative: bool = False
    solver: str = ""
    engine: object = None
    prev_obj: float = math.inf
    validation: tuple | None = None


def numeric_features(df):
    """The numeric columns of a side-feature table as a float array (None without any)."""
    if df is None:
        return None
    import pandas as pd

    if isinstance(df, pd.DataFrame):
        num = df.select_dtypes(include=[np.number, bool])
        if num.shape[1] == 0:
            return None
        return num.to_numpy(dtype=np.float64)
    return np.asarray(df, dtype=np.float64)


def check_ratings(ratings, what="ratings"):
    for attr in ("users", "items", "values", "n_users", "n_items"):
        if not hasattr(ratings, attr):
            raise DataValueError(f"{what} has no attribute {attr!r}",
                                 expected="a kmviz.data.Ratings",
                                 fix="load data with kmviz.data.load or Ratings.from_arrays")
    users = np.asarray(ratings.users, dtype=np.int64)
    items = np.asarray(ratings.items, dtype=np.int64)
    values = np.asarray(ratings.values, dtype=np.float64)
    N, L = int(ratings.n_users), int(ratings.n_items)
    if not (users.shape == items.shape == values.shape) or users.ndim != 1:
        raise DataValueError(f"{what} has users, items and values of different shapes")
    if users.size == 0:
        from ..exceptions import EmptyDataError

        raise EmptyDataError(f"{what} holds no entries", expected="at least one rating")
    if users.min() < 0 or users.max() >= N or items.min() < 0 or items.max() >= L:
        raise DataValueError(f"{what} has indices outside its {N} x {L} index space")
    bad = ~np.isfinite(values)
    if bad.any():
        raise DataValueError(f"{what} holds {int(bad.sum())} non-finite value(s)",
                             expected="finite values")
    return users, items, values, N, L


def side_kernel(side, N, given, graph, features, prm, *, factor=None,
                 factored=False, rank=None, rng=None):
    """One side's kernel as a :class:`krr.SideKernel` and a sentence saying where it came
    from. ``factored``: keep an exact low-rank form (or a ``rank`` approximation) as a
    factor instead of the dense kernel (KKMCEX only)."""
    who = "row" if side == "row" else "column"
    name = f"{side}_kernel"
    jitter = prm["jitter"]
    if isinstance(factor, krr.SideKernel):
        if factor.n != N:
            raise DataValueError(f"{name}_factor is a kernel on {factor.n} entities",
                                 expected=f"{N}, one per entity")
        what = (f"{who} kernel: given ({factor.kind}, rank {factor.rank}"
                + (f", plus {factor.shift:g} I" if factor.shift else "") + ")")
        if factored:
            return factor, what
        return krr.SideKernel(N, dense=kn.check_kernel(factor.dense(), name, n=N,
                                                       jitter=jitter)), what
    if factor is not None:
        F = np.asarray(factor, dtype=np.float64)
        if F.ndim != 2 or F.shape[0] != N:
            raise DataValueError(f"{name}_factor has shape {F.shape}",
                                 expected=f"({N}, r): one row per entity, K = F F^T")
        if not np.isfinite(F).all():
            raise DataValueError(f"{name}_factor holds non-finite values",
                                 expected="finite numbers")
        what = f"{who} kernel: given as a factor F F^T of rank {F.shape[1]}"
        if factored:
            return krr.SideKernel(N, factor=F), what
        return krr.SideKernel(N, dense=kn.check_kernel(F @ F.T, name, n=N,
                                                       jitter=jitter)), what
    if given is not None:
        return (krr.SideKernel(N, dense=kn.check_kernel(given, name, n=N, jitter=jitter)),
                f"{who} kernel: given")
    prior = prm[f"{side}_prior"]
    entity = "user" if side == "row" else "item"
    if prior == "auto":
        prior = "graph" if graph is not None else (
            "features" if features is not None else "identity")
    F = None
    exact = True
    if prior == "graph":
        if graph is None:
            raise InvalidParameterError(
                f"{side}_prior='graph' but there is no {entity} graph: the ratings have no "
                f"{entity}_graph and no {side}_graph was passed to fit. Pass one, or "
                f"choose {side}_prior='features' or 'identity'.")
        A = kn.check_adjacency(graph, f"{side}_graph", n=N)
        what = f"{who} kernel: {prm['graph_kernel']} kernel of the {entity} graph"
        if factored and (prm["graph_kernel"] == "bandlimited" or rank is not None):
            F, exact, note = kn.graph_kernel_factor(A, prm["graph_kernel"], eta=prm["eta"],
                                                    bandwidth=prm["bandwidth"], rank=rank)
        if F is None:
            K = kn.graph_kernel(A, prm["graph_kernel"], eta=prm["eta"],
                                bandwidth=prm["bandwidth"])
    elif prior == "features":
        if features is None:
            raise InvalidParameterError(
                f"{side}_prior='features' but there are no numeric {entity} features: "
                f"the ratings have no {entity}_features and no {side}_features was passed "
                f"to fit. Pass them, or choose {side}_prior='graph' or 'identity'.")
        X = kn._features(features, f"{side}_features")
        if X.shape[0] != N:
            raise DataValueError(f"{side}_features has {X.shape[0]} rows",
                                 expected=f"{N}, one per {entity}")
        what = f"{who} kernel: {prm['feature_kernel']} kernel of the {entity} features"
        if factored:
            F, exact, note = kn.feature_kernel_factor(
                X, prm["feature_kernel"], gamma=prm["gamma"], rank=rank,
                random_state=rng)
        if F is None:
            K = kn.feature_kernel(X, prm["feature_kernel"], gamma=prm["gamma"])
    else:
        what = f"{who} kernel: identity (no prior information)"
        if factored:
            return krr.SideKernel(N, identity=True), what
        K = np.eye(N)
    if F is not None:
        return (krr.SideKernel(N, factor=F, exact=exact, note=note),
                f"{what}, factored: {note}")
    return krr.SideKernel(N, dense=kn.check_kernel(K, name, n=N, jitter=jitter)), what


def plus_constant(sk):
    """``K + 1 1^T`` in the same form: a factor gains a column of ones, the identity
    becomes the shifted factor ``I + 1 1^T``, a dense kernel gets 1 added."""
    ones = np.ones((sk.n, 1))
    if sk.kind == "identity":
        return krr.SideKernel(sk.n, factor=ones, shift=1.0, note=sk.note)
    if sk.kind == "factor":
        return krr.SideKernel(sk.n, factor=np.hstack([sk.F, ones]), shift=sk.shift,
                              exact=sk.exact, note=sk.note)
    return krr.SideKernel(sk.n, dense=sk.K + 1.0)


def start(ratings, prm, rng, *, validation=None, truth=None, row_kernel=None,
          col_kernel=None, row_graph=None, col_graph=None, row_features=None,
          col_features=None, row_kernel_factor=None, col_kernel_factor=None):
    """The state of one fit, before its method's own start: the checked data (``rows``,
    ``cols``, ``values``; ``m`` the values minus ``offset``), the side information
    (``graphs``), the kernels of both sides (``row_side`` / ``col_side`` as
    :class:`krr.SideKernel`, ``row_kernel`` / ``col_kernel`` when dense), which rows and
    columns can be predicted, and the timings (``pending``) and messages (``events``) the
    first trace row gets. ``rng`` draws Nyström landmarks (``kernel_rank``)."""
    rows, cols, values, N, L = check_ratings(ratings, "training ratings")
    if truth is not None:
        truth = np.asarray(truth, dtype=np.float64)
        if truth.shape != (int(ratings.n_users), int(ratings.n_items)):
            raise DataValueError(f"truth has shape {truth.shape}",
                                 expected=f"the whole matrix, ({N}, {L})")
        if not np.isfinite(truth).all():
            raise DataValueError("truth holds non-finite values", expected="finite values")
    method = prm["method"]
    st = KMCState(prm=prm, method=method, rng=rng, tol=prm["tol"],
                  owner="KernelMatrixCompletion", N=N, L=L, rows=rows, cols=cols,
                  truth=truth, values=values, solver=method)
    st.offset = float(values.mean()) if prm["center"] else 0.0
    m = values - st.offset
    st.m = m
    st.known_rows = np.bincount(rows, minlength=N) > 0
    st.known_cols = np.bincount(cols, minlength=L) > 0
    if validation is not None:
        st.validation = check_ratings(validation, "validation ratings")[:3]
        if (int(validation.n_users), int(validation.n_items)) != (N, L):
            raise DataValueError(
                f"validation has shape ({validation.n_users}, {validation.n_items}) but "
                f"the training ratings have ({N}, {L})",
                fix="split one Ratings so both share the index space")
    graphs = {"row": row_graph if row_graph is not None else getattr(
        ratings, "user_graph", None),
              "col": col_graph if col_graph is not None else getattr(
        ratings, "item_graph", None)}
    feats = {"row": numeric_features(row_features if row_features is not None else
                                      getattr(ratings, "user_features", None)),
             "col": numeric_features(col_features if col_features is not None else
                                      getattr(ratings, "item_features", None))}
    for side, entity in (("row", "user"), ("col", "item")):
        X = feats[side]
        if X is not None and not np.isfinite(X).all():
            # missing side information (MovieLens films without a year) would make every
            # kernel value of that entity NaN: fill with the feature's mean, and say so
            bad = ~np.isfinite(X)
            means = np.nanmean(np.where(bad, np.nan, X), axis=0)
            X = np.where(bad, np.where(np.isfinite(means), means, 0.0)[None, :], X)
            feats[side] = X
            st.note(f"{int(bad.sum())} missing {entity} feature value(s) filled with "
                    f"their feature's mean")
    st.graphs = graphs
    linear_rr = method in ("rrmcex", "online_rrmcex") and prm["rr_features"] == "linear"

    t0 = time.perf_counter()
    if method in KERNEL_METHODS and not linear_rr:
        factored = bool(method == "kkmcex" and prm["factor_kernels"]
                        and not prm["jitter"])
        rank = prm["kernel_rank"] if method == "kkmcex" else None
        sides = {}
        for side, n, given, fac in (("row", N, row_kernel, row_kernel_factor),
                                    ("col", L, col_kernel, col_kernel_factor)):
            sides[side], what = side_kernel(
                side, n, given, graphs[side], feats[side], prm, factor=fac,
                factored=factored, rank=rank, rng=rng)
            if prm["add_constant"]:
                sides[side] = plus_constant(sides[side])
                what += " + the all-ones kernel"
            st.note(what)
        st.row_side, st.col_side = sides["row"], sides["col"]
        st.row_kernel = st.row_side.K
        st.col_kernel = st.col_side.K
    elif linear_rr:
        for side, n, ent in (("row", N, "user"), ("col", L, "item")):
            if feats[side] is None:
                raise InvalidParameterError(
                    f"rr_features='linear' needs {ent} features (numeric "
                    f"{ent}_features in the ratings or {side}_features= in fit); use "
                    f"rr_features='eigen' to work from kernels.")
            if feats[side].shape[0] != n:
                raise DataValueError(f"{side}_features has {feats[side].shape[0]} rows",
                                     expected=f"{n}, one per {ent}")
        st.X_row = kn._features(feats["row"], "row_features")
        st.X_col = kn._features(feats["col"], "col_features")
        st.row_kernel = st.X_row @ st.X_row.T
        st.col_kernel = st.X_col @ st.X_col.T
        st.note("row kernel: linear kernel of the user features (SVD features)")
        st.note("column kernel: linear kernel of the item features (SVD features)")
    st.pending["kernels"] = time.perf_counter() - t0

    # which rows / columns can be predicted
    if st.row_side is not None:
        st.predictable_rows = st.row_side.linked(st.known_rows)
        st.predictable_cols = st.col_side.linked(st.known_cols)
    elif st.row_kernel is not None:
        st.predictable_rows = kn.linked(st.row_kernel, st.known_rows)
        st.predictable_cols = kn.linked(st.col_kernel, st.known_cols)
    else:
        st.predictable_rows = st.known_rows.copy()
        st.predictable_cols = st.known_cols.copy()
    return st


def check_predictable(users, items, prow, pcol, method, what="the requested pairs"):
    """ValueError naming the first row or column of the pairs that the model cannot predict
    (no training entries and no kernel or graph link to one with entries)."""
    for name, idx, ok, side, ent in (("users", users, prow, "row", "user"),
                                     ("items", items, pcol, "column", "item")):
        bad = ~ok[idx]
        if bad.any():
            first = int(np.asarray(idx)[bad].ravel()[0])
            n_bad = int(np.unique(np.asarray(idx)[bad]).shape[0])
            if method == "pg":
                why = ("nuclear-norm MC (method='pg') cannot extrapolate"
                       + (" columns" if side == "column" else
                          " rows without lap_weight > 0 and a graph linking them to "
                          "observed rows"))
                fix = ("use a kernel method (kkmcex, rrmcex, als) with a kernel on this "
                       "side, or leave these entities out")
            else:
                why = (f"its {side} kernel links it to no {ent} with training entries "
                       f"(identity kernel or an isolated graph node)")
                fix = (f"give a {side} kernel that relates it to others ({side}_kernel=, "
                       f"a {ent} graph or {ent} features), or leave it out")
            raise ValueError(
                f"Cannot predict {what}: {ent} {first} has no training entries and {why} "
                f"({n_bad} such {name} in all). Fix: {fix}.")


def compare_with_mean(st, trace, validation):
    """Warn (trace and ConvergenceWarning) when the fit is no better than predicting the
    training mean on the validation entries (or, without them, on the training ones)."""
    if not trace.rows:
        return
    last = trace.rows[-1]
    mean = float(st.values.mean())
    if validation is not None and last.get("validation_rmse") is not None:
        v = np.asarray(validation.values, dtype=np.float64)
        ours, where = float(last["validation_rmse"]), "validation"
    elif last.get("train_rmse") is not None:
        v, ours, where = st.values, float(last["train_rmse"]), "training"
    else:
        return
    base = math.sqrt(float(np.mean((v - mean) ** 2)))
    if not (math.isfinite(ours) and ours >= base):
        return
    hint, fix = "", {}
    if not st.prm["center"] and abs(mean) > float(np.std(st.values)):
        hint = (f" The values are not centered (mean {mean:.3g}): the method shrinks its "
                f"estimate toward 0, so try center=True")
        hint += " and a larger mu (1-10 on ratings)." if st.method == "kkmcex" else "."
        fix = {"fix_center": True}
        if st.method == "kkmcex" and float(st.prm["mu"]) < 1.0:
            fix["fix_mu"] = 3.0
    msg = (f"{st.method}'s {where} RMSE {ours:.4g} is no better than predicting the "
           f"training mean ({base:.4g}).{hint}")
    trace.event("warning", msg, **fix)
    warnings.warn(msg, ConvergenceWarning, stacklevel=3)

