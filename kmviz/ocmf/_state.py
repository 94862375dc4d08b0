"""Preparing one-class MF's fit: positives, side matrices X = [I | F], the user graph and
the all-pairs loss (the set-up half of :meth:`~kmviz.ocmf.OneClassMF._fit_start`; the
solver's ``start`` draws the initial W), and the fit state :class:`OCMFState`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._state import FitStateBase
from ..exceptions import DataError, EmptyDataError, InvalidParameterError
from ..pairs import ObservedPairs
from .allpairs import AllPairsLoss
from .features import (
    SideMatrix,
    check_feature_matrix,
    cointeraction_graph,
    encode_features,
    knn_graph,
    laplacian,
)


@dataclass
class OCMFState(FitStateBase):
    """One fit of :class:`~kmviz.ocmf.OneClassMF` (``method``: the ``solver=`` name, the key
    of :data:`kmviz.ocmf.solvers.REGISTRY`).

    Attributes
    ----------
    m, n : int
        Users and items.
    pairs : ObservedPairs
        The positives trained on; ``known_users`` / ``known_items`` those with one.
    loss : AllPairsLoss
        The loss over all m x n pairs.
    X, Z : SideMatrix
        The user and item side matrices ``[I | F]``.
    L : sparse matrix or None
        The user graph's Laplacian (None without a graph term); ``lam_graph`` its weight
        ``lambda_w lambda_g``.
    Wu, Wv : ndarray or None
        W and W_2 (drawn by the solver's ``start``).
    inner : list
        One tuple per inner (Newton or GD) iteration of every block.
    dist : DistPairs or None
        On a cluster: the pairs on the workers (made by the first step); ``on_cluster``: the
        current step runs there.
    max_cg, tron_basis, tron_pcg_alpha : the block solvers' settings (read from the
        estimator's module constants when the fit starts); ``timer_phases`` the block
        timers' phase names that the trace gets.
    """

    m: int = 0
    n: int = 0
    pairs: ObservedPairs | None = None
    loss: AllPairsLoss | None = None
    X: SideMatrix | None = None
    Z: SideMatrix | None = None
    L: object = None
    Wu: np.ndarray | None = None
    Wv: np.ndarray | None = None
    known_users: np.ndarray | None = None
    known_items: np.ndarray | None = None
    inner: list = field(default_factory=list)
    lam_graph: float = 0.0
    dist: object = None
    on_cluster: bool = False
    max_cg: int | None = None
    tron_basis: str | None = None
    tron_pcg_alpha: float = math.nan
    timer_phases: tuple = ()


class SetupMixin:
    """Data checks and the fit's starting state for :class:`~kmviz.ocmf.OneClassMF` (it
    checks the interactions and takes their positives by
    :class:`~kmviz.serving.FactorServing`, mixed in through the serving mixin)."""

    def _memory_estimate(self, prm, data, *, user_features=None, item_features=None,
                         **inputs):
        from .._memory import F8, data_sizes, feature_width

        m, n, s = data_sizes(data)
        k, side = prm["k"], prm["side_features"]
        d = (m + n + feature_width(user_features, data, "user", side in ("user", "both"))
             + feature_width(item_features, data, "item", side in ("item", "both")))
        return {f"W, H and the Newton vectors: {d} variables x k={k}": 10 * F8 * d * k,
                f"user and item embeddings: ({m} + {n}) x k={k}": 4 * F8 * (m + n) * k,
                f"the k x k all-pairs terms (k={k})": 6 * F8 * k * k,
                f"the {s} observed pairs": 6 * F8 * s,
                f"the user graph: {m} users x graph_neighbors={prm['graph_neighbors']}":
                    3 * F8 * m * prm["graph_neighbors"] if prm["graph"] != "none" else 0}

    def _fit_setup(self, data, prm, *, validation=None, user_features=None,
                   item_features=None, user_graph=None) -> OCMFState:
        """The checked data and everything the fit works on but W (the solver's start)."""
        self._check_interactions(data)
        m, n = int(data.n_users), int(data.n_items)
        events = []
        thr = prm["threshold"]
        users, items = self._positives(data, thr)
        if users.size == 0:
            total = len(np.asarray(data.values))
            raise EmptyDataError(
                f"the interactions hold no positives ({total} entries"
                + (f", none with value >= threshold={thr:g})" if thr is not None else ")"),
                expected="at least one positive (user, item) pair",
                fix="lower threshold or check the data" if thr is not None else
                    "check the split or the file")
        values = np.asarray(data.values, dtype=np.float64)
        if thr is None and not getattr(data, "implicit", True) and values.size and \
                float(values.min()) != float(values.max()):
            events.append(("warning", f"all {values.size} entries are used as positives; "
                                      "set threshold (e.g. 4) to keep only high ratings"))
        pairs = ObservedPairs(users, items, m, n)
        known_users = pairs.row_counts() > 0
        known_items = pairs.col_counts() > 0
        if validation is not None:
            self._check_interactions(validation, "validation")
            if (int(validation.n_users), int(validation.n_items)) != (m, n):
                raise DataError(
                    f"validation has shape ({validation.n_users}, {validation.n_items}) but the "
                    f"interactions have ({m}, {n})",
                    fix="split one Ratings so both parts share the index space")

        # -- side matrices X = [I | F_u], Z = [I | F_v]
        Fu, names_u = self._side_features(data, user_features, "user", m, prm, events)
        Fv, names_v = self._side_features(data, item_features, "item", n, prm, events)
        X = self._side_matrix(m, known_users, Fu, names_u, prm["user_identity"], "user")
        Z = self._side_matrix(n, known_items, Fv, names_v, prm["item_identity"], "item")

        # -- the user graph
        L = self._user_laplacian(data, user_graph, Fu, pairs, m, prm, events)

        weights_u = np.full(m, prm["rho"])   # p = rho 1_m, q = 1_n: p_i q_j = rho
        weights_v = np.ones(n)
        loss = AllPairsLoss(pairs, prm["loss"], weights_u, weights_v, prm["a_bar"])
        return OCMFState(
            prm=prm, method=prm["solver"], tol=prm["tol"], owner=type(self).__name__,
            events=events, m=m, n=n, pairs=pairs, loss=loss, X=X, Z=Z, L=L,
            known_users=known_users, known_items=known_items,
            lam_graph=prm["lambda_w"] * prm["lambda_g"] if L is not None else 0.0)

    def _side_features(self, data, given, who, n_rows, prm, events):
        what = f"{who}_features"
        if given is not None:
            F, names = check_feature_matrix(given, n_rows, what, n_users_word=f"{who}s")
            return F, names
        if prm["side_features"] not in (who, "both"):
            return None, []
        df = getattr(data, what, None)
        if df is None:
            raise DataError(
                f"side_features={prm['side_features']!r} asks for the {who} features of the "
                f"interactions, but they have none",
                fix=f"pass {what}= to fit, or choose side_features without '{who}'")
        if not isinstance(df, pd.DataFrame):
            F, names = check_feature_matrix(df, n_rows, what, n_users_word=f"{who}s")
            return F, names
        if len(df) != n_rows:
            raise DataError(f"the interactions' {what} have {len(df)} rows for {n_rows} {who}s")
        F, names, info = encode_features(df, missing="zero", what=what)
        if info["n_missing_filled"]:
            events.append(("info", f"{what}: {info['n_missing_filled']} missing number(s) "
                                   "set to the column mean"))
        if info["n_rows_without_features"]:
            events.append(("info", f"{what}: {info['n_rows_without_features']} {who}(s) "
                                   "without features"))
        return F, names

    @staticmethod
    def _side_matrix(n_rows, known, F, names, identity, who):
        has_features = F is not None and F.shape[1] > 0 and F.nnz > 0
        if identity == "none" and not has_features:
            raise DataError(f"{who}_identity='none' leaves the {who}s without any variable: "
                            f"there are no {who} features (or they are all zero)",
                            fix=f"give {who} features or set {who}_identity to 'known' or "
                                "'all'")
        rows = {"known": np.flatnonzero(known), "all": np.arange(n_rows), "none": None}[identity]
        if F is None or F.shape[1] == 0:
            return SideMatrix(n_rows, rows)
        return SideMatrix(n_rows, rows, F, names)

    def _user_laplacian(self, data, user_graph, Fu, pairs, m, prm, events):
        kind = prm["graph"]
        S = None
        if user_graph is not None:
            S = user_graph
        elif kind == "cointeraction":
            S = cointeraction_graph(pairs.to_csr(), prm["graph_neighbors"])
        elif kind == "features":
            if Fu is None or Fu.shape[1] == 0:
                raise DataError("graph='features' builds a kNN graph on the user features, "
                                "but there are none",
                                fix="pass user_features= or set side_features to 'user' or "
                                    "'both'")
            S = knn_graph(Fu, prm["graph_neighbors"])
        elif kind == "ratings":
            S = getattr(data, "user_graph", None)
            if S is None:
                raise DataError("graph='ratings' asks for the interactions' user graph, but "
                                "they have none", fix="pass user_graph= to fit")
        if S is None:
            if prm["lambda_g"] > 0:
                raise InvalidParameterError(
                    f"lambda_g={prm['lambda_g']:g} weights a user graph, but there is none: "
                    "pass user_graph= to fit, set graph= or set lambda_g=0.")
            return None
        L = laplacian(S, m)
        if prm["lambda_g"] == 0:
            events.append(("info", "a user graph is given but lambda_g = 0: it is unused"))
            return None
        return L
