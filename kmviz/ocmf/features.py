"""Side information of one-class MF: feature matrices, their encoding, and user graphs.

The OCMF model embeds user i as ``b_i = W^T x_i`` (OCMF paper, Sec. 2): row x_i of the
user matrix X (m x d) maps through W (d x k). :class:`SideMatrix` is that X, built as

    X = [ I_m[:, identity_rows] | F ]

an identity block with one column per user that has training positives (the paper's plain
one-class MF is X = I) and the encoded side features F. Items get the same treatment with
``H = Z W_2`` (the paper's "easy generalization" to item side information).

:func:`encode_features` turns a DataFrame (the loaders' ``user_features`` / ``item_features``)
into F: text, categorical and boolean columns become one-hot indicator columns, numeric
columns are standardized (mean 0, standard deviation 1). :func:`check_feature_matrix`
validates arrays a caller passes in.

User graphs for the regularizer ``lambda_g tr(B^T L B)`` (eq. (2)): :func:`cointeraction_graph`
(users who like the same items), :func:`knn_graph` (users with similar features) and
:func:`laplacian` (L = D - S).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..exceptions import DataValueError

MISSING_POLICIES = ("error", "zero")


# ----------------------------------------------------------------------------- encoding
def _is_indicator(s) -> bool:
    values = pd.unique(pd.to_numeric(s, errors="coerce").dropna())
    return len(values) > 0 and set(np.asarray(values, dtype=np.float64).tolist()) <= {0.0, 1.0}


def encode_features(df, *, missing="error", what="features", bins=None, normalize=None,
                    bias=False):
    """A DataFrame of side information as a numeric CSR matrix and its column names.

    Rules
    -----
    - object, string, categorical and boolean columns: one indicator column per distinct
      value, named ``"<column>=<value>"``; a missing value sets none of them.
    - numeric columns holding only 0 and 1 (flags such as MovieLens genres): kept as they
      are, sparse indicators named after the column; a missing flag counts as 0.
    - other numeric columns: standardized, ``(x - mean) / std`` (a constant column becomes
      0), named after the column. Missing numbers follow ``missing``: ``"error"`` refuses
      them (the message names the column and the count), ``"zero"`` puts the column mean (0
      after standardizing) in their place.
    - a row with no value at all (every column missing, for example an id the feature table
      does not list) is a row of zeros: an entity "without features" (see
      :class:`kmviz.ocmf.OneClassMF` for how such users and items are scored).

    Three options shape the matrix for :class:`kmviz.ocmf.OneClassMF` (LightFM's feature
    recipe; all off by default):

    - ``bins``: numeric columns to cut into intervals, each interval one indicator column
      ``"<column>=[lo, hi)"`` (a missing value sets none), instead of one standardized
      column: ``{"year": 10}`` (decades: intervals of width 10 aligned on multiples of 10),
      ``{"age": [18, 25, 35, 45, 56]}`` (edges; values below the first or from the last
      edge get the open intervals ``(-inf, 18)`` and ``[56, inf)``). A linear score in a
      standardized number can only rise or fall with it; bins let each interval have its
      own effect.
    - ``normalize``: ``"l1"`` scales each row so its absolute values sum to 1 (LightFM's
      advice for its feature matrices), ``"l2"`` to unit Euclidean norm; rows of zeros stay
      zero. Without it an entity with many flags (a film in five genres) gets an embedding
      five flags long, and one with a single flag one flag long.
    - ``bias``: append a constant column ``"bias"`` equal to 1 in EVERY row (after the
      normalization, so it is not rescaled; rows without features get it too). On the user
      side of the OCMF model, ``s_ij = b_i^T h_j`` with ``b_i = W^T x_i``, the bias column
      adds one shared vector ``w_0`` to every user, so ``w_0^T h_j`` is a learned item
      popularity term; with item features and no item identity it is a popularity prior
      by features, the only way a model without ratings of an item can rank it by how
      popular films like it are. On the item side it gives each user an activity term
      (no effect on a user's ranking).

    Parameters
    ----------
    df : DataFrame
        One row per entity, in index order.
    missing : {"error", "zero"}, default="error"
    what : str
        Name used in messages ("user_features").
    bins : dict or None
        ``{column: width (int or float) or increasing edges (sequence)}``.
    normalize : {None, "l1", "l2"}, default=None
    bias : bool, default=False

    Returns
    -------
    X : scipy.sparse.csr_matrix, shape (len(df), n_columns)
    names : list of str
    info : dict
        ``{"n_missing_filled": int, "n_rows_without_features": int}``.
    """
    if missing not in MISSING_POLICIES:
        raise ValueError(f"missing must be one of {MISSING_POLICIES}; got {missing!r}")
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{what} must be a pandas DataFrame here; got {type(df).__name__}")
    n = len(df)
    empty_rows = df.isna().all(axis=1).to_numpy() if df.shape[1] else np.ones(n, bool)
    blocks, names = [], []
    filled = 0
    bins = dict(bins or {})
    unknown = [c for c in bins if c not in df.columns]
    if unknown:
        raise ValueError(f"bins names column(s) {unknown} that {what} does not have; its "
                         f"columns are {list(map(str, df.columns))}")
    for col in df.columns:
        s = df[col]
        numeric = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
        if col in bins:
            block, labels = _binned(s, bins[col], col, what)
            blocks.append(block)
            names.extend(labels)
            continue
        if numeric and _is_indicator(s):
            # a 0/1 flag (a genre) stays a sparse indicator: centring it would make it
            # dense and couple it with every identity column (an ill-conditioned block)
            x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64)
            filled += int((np.isnan(x) & ~empty_rows).sum())
            blocks.append(sp.csr_matrix(np.nan_to_num(x, nan=0.0)[:, None]))
            names.append(str(col))
        elif numeric:
            x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64)
            if np.isinf(x).any():
                raise DataValueError(f"{what} column {col!r} holds infinite values",
                                     expected="finite numbers")
            nan = np.isnan(x) & ~empty_rows
            if nan.any() and missing == "error":
                first = int(np.flatnonzero(nan)[0])
                raise DataValueError(
                    f"{what} column {col!r} has {int(nan.sum())} missing value(s) (the first "
                    f"in row {first})", expected="a value in every row that has features",
                    fix="fill them, or encode with kmviz.ocmf.encode_features(df, "
                        "missing='zero') and pass the matrix")
            filled += int(nan.sum())
            ok = ~np.isnan(x)
            mean = float(x[ok].mean()) if ok.any() else 0.0
            std = float(x[ok].std()) if ok.any() else 0.0
            z = np.where(ok, (x - mean) / std if std > 0 else 0.0, 0.0)
            blocks.append(sp.csr_matrix(z[:, None]))
            names.append(str(col))
        else:
            values = s.astype("object").where(s.notna(), None)
            cats = sorted({v for v in values if v is not None}, key=lambda v: str(v))
            if not cats:
                continue
            codes = {v: c for c, v in enumerate(cats)}
            rows = np.array([r for r, v in enumerate(values) if v is not None], dtype=np.int64)
            cols = np.array([codes[v] for v in values if v is not None], dtype=np.int64)
            blocks.append(sp.csr_matrix((np.ones(rows.size), (rows, cols)),
                                        shape=(n, len(cats))))
            names.extend(f"{col}={v}" for v in cats)
    if blocks:
        X = sp.hstack(blocks, format="csr")
    else:
        X = sp.csr_matrix((n, 0))
    X = X.tocsr()  # rows without any value are zero already (no indicator, 0 for numbers)
    X.eliminate_zeros()
    X = normalize_rows(X, normalize)
    if bias:
        X = sp.hstack([X, sp.csr_matrix(np.ones((n, 1)))], format="csr")
        names.append("bias")
    info = {"n_missing_filled": filled, "n_rows_without_features": int(empty_rows.sum())}
    return X, names, info


NORMALIZE = (None, "l1", "l2")


def normalize_rows(F, normalize):
    """``F`` (CSR) with each nonzero row scaled to unit l1 (``"l1"``) or l2 (``"l2"``) norm;
    None returns it unchanged. Rows of zeros stay zero."""
    if normalize not in NORMALIZE:
        raise ValueError(f"normalize must be one of {NORMALIZE}; got {normalize!r}")
    F = sp.csr_matrix(F, dtype=np.float64)
    if normalize is None or F.shape[1] == 0:
        return F
    if normalize == "l1":
        norms = np.asarray(abs(F).sum(axis=1)).ravel()
    else:
        norms = np.sqrt(np.asarray(F.multiply(F).sum(axis=1)).ravel())
    scale = np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0)
    return (sp.diags(scale) @ F).tocsr()


def _binned(s, spec, col, what):
    """One indicator column per interval of a numeric column (see ``bins`` of
    :func:`encode_features`)."""
    x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64)
    if np.isinf(x).any():
        raise DataValueError(f"{what} column {col!r} holds infinite values",
                             expected="finite numbers")
    ok = ~np.isnan(x)
    n = x.size
    if np.ndim(spec) == 0:
        width = float(spec)
        if not width > 0:
            raise ValueError(f"bins[{col!r}] = {spec!r}: a width must be positive")
        lo = np.floor(x[ok] / width) * width if ok.any() else np.zeros(0)
        starts = np.unique(lo)
        code = np.searchsorted(starts, np.floor(x / width) * width)
        labels = [f"{col}=[{a:g}, {a + width:g})" for a in starts]
    else:
        edges = np.asarray(spec, dtype=np.float64)
        if edges.ndim != 1 or edges.size == 0 or np.any(np.diff(edges) <= 0):
            raise ValueError(f"bins[{col!r}] must be a positive width or increasing edges; "
                             f"got {spec!r}")
        bounds = np.concatenate([[-np.inf], edges, [np.inf]])
        code = np.searchsorted(edges, x, side="right")   # 0 .. len(edges)
        used = np.unique(code[ok])
        remap = np.full(bounds.size - 1, -1)
        remap[used] = np.arange(used.size)
        labels = [f"{col}={'(' if u == 0 else '['}{bounds[u]:g}, {bounds[u + 1]:g})"
                  for u in used]
        code = remap[np.minimum(code, bounds.size - 2)]
    rows = np.flatnonzero(ok)
    block = sp.csr_matrix((np.ones(rows.size), (rows, code[ok])), shape=(n, len(labels)))
    return block, labels


#: Largest feature value accepted: squares and Gram sums of larger ones overflow float64.
MAX_FEATURE_MAGNITUDE = 1e100


def check_feature_matrix(F, n_rows, what, *, n_users_word="rows"):
    """A validated CSR copy of an array or sparse matrix of side features, with names.

    Raises :class:`~kmviz.exceptions.DataValueError` on a wrong number of rows, a non-2-D or
    non-numeric array, or NaN / infinite entries (the message gives the count and the first
    position). DataFrames are encoded by :func:`encode_features` (``missing="error"``).
    """
    if isinstance(F, pd.DataFrame):
        if len(F) != n_rows:
            raise DataValueError(
                f"{what} has {len(F)} rows but there are {n_rows} {n_users_word}",
                expected=f"one row per {n_users_word[:-1]} in index order",
                fix="reindex the table on the interactions' ids")
        X, names, _ = encode_features(F, missing="error", what=what)
        return X, names
    if sp.issparse(F):
        X = sp.csr_matrix(F, dtype=np.float64)
    else:
        try:
            X = np.asarray(F, dtype=np.float64)
        except (TypeError, ValueError):
            raise DataValueError(f"{what} is not numeric", expected="a numeric 2-D array, a "
                                 "scipy.sparse matrix or a DataFrame") from None
        if X.ndim != 2:
            raise DataValueError(f"{what} has shape {X.shape}",
                                 expected=f"a 2-D array ({n_rows}, n_features)")
    if X.shape[0] != n_rows:
        raise DataValueError(
            f"{what} has {X.shape[0]} rows but there are {n_rows} {n_users_word}",
            expected=f"shape ({n_rows}, n_features)",
            fix="give one row per index of the interactions, in index order")
    data = X.data if sp.issparse(X) else X
    bad = ~np.isfinite(data)
    if bad.any():
        if sp.issparse(X):
            coo = X.tocoo()
            k = int(np.flatnonzero(~np.isfinite(coo.data))[0])
            r, c = int(coo.row[k]), int(coo.col[k])
        else:
            r, c = (int(v) for v in np.argwhere(bad)[0])
        raise DataValueError(
            f"{what} holds {int(bad.sum())} NaN or infinite value(s), the first at row {r}, "
            f"column {c}", expected="finite numbers",
            fix="fill or drop them; a row of zeros means 'no features'")
    huge = np.abs(data) > MAX_FEATURE_MAGNITUDE
    if huge.any():  # their squares and Gram sums overflow float64 in the block solves
        coo = sp.coo_matrix(X)
        k = int(np.flatnonzero(np.abs(coo.data) > MAX_FEATURE_MAGNITUDE)[0])
        raise DataValueError(
            f"{what} holds {int(huge.sum())} value(s) larger than {MAX_FEATURE_MAGNITUDE:g} "
            f"in magnitude, the first {coo.data[k]:g} at row {int(coo.row[k])}, column "
            f"{int(coo.col[k])}", expected=f"numbers of at most {MAX_FEATURE_MAGNITUDE:g} "
                                           "in magnitude (their products must stay finite)",
            fix="rescale the features (standardize each column, or take the log of counts)")
    X = sp.csr_matrix(X)
    X.eliminate_zeros()
    return X, [f"f{c}" for c in range(X.shape[1])]


# ----------------------------------------------------------------------------- X = [I | F]
class SideMatrix:
    """``X = [I[:, identity_rows] | F]``, the linear map from one side's variables W (d x k)
    to its embeddings ``E = X W`` (n_rows x k), kept in factored form.

    Parameters
    ----------
    n_rows : int
    identity_rows : array of int or None
        Rows that get their own identity column (in this order), None for none.
    features : scipy.sparse matrix (n_rows x f) or None
    names : list of str
        Feature column names (``f`` of them).
    """

    def __init__(self, n_rows, identity_rows=None, features=None, names=()):
        self.n_rows = int(n_rows)
        self.identity_rows = (np.zeros(0, dtype=np.int64) if identity_rows is None
                              else np.asarray(identity_rows, dtype=np.int64))
        self.n_identity = int(self.identity_rows.size)
        if features is None or features.shape[1] == 0:
            self.F = None
            self.FT = None
            self.n_features = 0
        else:
            self.F = sp.csr_matrix(features, dtype=np.float64)
            self.FT = self.F.T.tocsr()
            self.n_features = self.F.shape[1]
        self.names = list(names) if self.F is not None else []
        self.d = self.n_identity + self.n_features
        self.pure_identity = self.F is None and self.n_identity == self.n_rows and np.array_equal(
            self.identity_rows, np.arange(self.n_rows))

    @property
    def nnz(self) -> int:
        return self.n_identity + (0 if self.F is None else int(self.F.nnz))

    def empty_rows(self) -> np.ndarray:
        """Rows of X that are all zero (no identity column and no features)."""
        has = np.zeros(self.n_rows, dtype=bool)
        has[self.identity_rows] = True
        if self.F is not None:
            has |= np.diff(self.F.indptr) > 0
        return ~has

    def apply(self, W) -> np.ndarray:
        """``X W`` (n_rows x k) in O(nnz(X) k)."""
        if self.pure_identity:
            return np.array(W, dtype=np.float64, order="C")
        k = W.shape[1]
        if self.F is not None:
            E = np.ascontiguousarray(self.F @ W[self.n_identity:])
        else:
            E = np.zeros((self.n_rows, k))
        if self.n_identity:
            E[self.identity_rows] += W[:self.n_identity]
        return E

    def adjoint(self, G) -> np.ndarray:
        """``X^T G`` (d x k) in O(nnz(X) k)."""
        if self.pure_identity:
            return np.array(G, dtype=np.float64, order="C")
        out = np.empty((self.d, G.shape[1]))
        if self.n_identity:
            out[:self.n_identity] = G[self.identity_rows]
        if self.F is not None:
            out[self.n_identity:] = self.FT @ G
        return out

    def adjoint_squares(self, R) -> np.ndarray:
        """``(X o X)^T R`` (d x k), X o X the entrywise square: maps per-row Hessian
        diagonals to the diagonal in W (the cross terms of a row vanish on the diagonal)."""
        if self.pure_identity:
            return np.array(R, dtype=np.float64, order="C")
        out = np.empty((self.d, R.shape[1]))
        if self.n_identity:
            out[:self.n_identity] = R[self.identity_rows]
        if self.F is not None:
            if not hasattr(self, "_F2T"):
                self._F2T = self.F.multiply(self.F).T.tocsr()
            out[self.n_identity:] = self._F2T @ R
        return out

    def laplacian_diag(self, L) -> np.ndarray:
        """The diagonal of ``X^T L X`` (d)."""
        out = np.empty(self.d)
        if self.n_identity:
            out[:self.n_identity] = L.diagonal()[self.identity_rows]
        if self.F is not None:
            out[self.n_identity:] = np.asarray(self.F.multiply(L @ self.F).sum(axis=0)).ravel()
        return out

    def weighted_gram(self, a) -> np.ndarray:
        """``X^T diag(a) X`` (d x d, dense): the small-d variant's M-bar (Supp-1.2)."""
        a = np.asarray(a, dtype=np.float64)
        M = np.zeros((self.d, self.d))
        ni = self.n_identity
        if ni:
            M[np.arange(ni), np.arange(ni)] = a[self.identity_rows]
        if self.F is not None:
            Fa = sp.diags(a) @ self.F
            M[ni:, ni:] = (self.FT @ Fa).toarray()
            if ni:
                cross = Fa[self.identity_rows].toarray()   # (ni x f): x_identity^T diag(a) F
                M[:ni, ni:] = cross
                M[ni:, :ni] = cross.T
        return M

    def weighted_colsum(self, a) -> np.ndarray:
        """``X^T a`` (d): the paper's d = X^T p."""
        return self.adjoint(np.asarray(a, dtype=np.float64)[:, None])[:, 0]

    def row_terms(self, i):
        """Columns and values of row i: ``(column indices, values)``."""
        cols, vals = [], []
        pos = np.flatnonzero(self.identity_rows == i)
        if pos.size:
            cols.append(pos.astype(np.int64))
            vals.append(np.ones(pos.size))
        if self.F is not None:
            lo, hi = self.F.indptr[i], self.F.indptr[i + 1]
            cols.append(self.F.indices[lo:hi].astype(np.int64) + self.n_identity)
            vals.append(self.F.data[lo:hi])
        if not cols:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return np.concatenate(cols), np.concatenate(vals)

    def column_name(self, c) -> str:
        if c < self.n_identity:
            return "identity"
        return self.names[c - self.n_identity]

    # -- persistence ---------------------------------------------------------------------
    def to_arrays(self, prefix) -> dict:
        F = self.F if self.F is not None else sp.csr_matrix((self.n_rows, 0))
        return {f"{prefix}_identity_rows": self.identity_rows.astype(np.int64),
                f"{prefix}_feat_indptr": F.indptr.astype(np.int64),
                f"{prefix}_feat_indices": F.indices.astype(np.int64),
                f"{prefix}_feat_data": F.data.astype(np.float64),
                f"{prefix}_feat_shape": np.array(F.shape, dtype=np.int64),
                f"{prefix}_feat_names": np.array(self.names if self.names else [], dtype=str)}

    @classmethod
    def from_arrays(cls, arrays, prefix) -> "SideMatrix":
        shape = tuple(int(v) for v in arrays[f"{prefix}_feat_shape"])
        F = sp.csr_matrix((arrays[f"{prefix}_feat_data"], arrays[f"{prefix}_feat_indices"],
                           arrays[f"{prefix}_feat_indptr"]), shape=shape)
        names = [str(v) for v in arrays[f"{prefix}_feat_names"]]
        return cls(shape[0], arrays[f"{prefix}_identity_rows"], F if shape[1] else None, names)


# ----------------------------------------------------------------------------- graphs
def _symmetric_top_k(S, n_neighbors):
    """Keep each row's ``n_neighbors`` largest off-diagonal entries, then symmetrize by max."""
    S = sp.csr_matrix(S, dtype=np.float64)
    S.setdiag(0.0)
    S.eliminate_zeros()
    rows, cols, vals = [], [], []
    for i in range(S.shape[0]):
        lo, hi = S.indptr[i], S.indptr[i + 1]
        if hi == lo:
            continue
        v = S.data[lo:hi]
        c = S.indices[lo:hi]
        keep = np.argsort(-v, kind="stable")[:n_neighbors]
        keep = keep[v[keep] > 0]
        rows.append(np.full(keep.size, i))
        cols.append(c[keep])
        vals.append(v[keep])
    n = S.shape[0]
    if not rows:
        return sp.csr_matrix((n, n))
    G = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n, n))
    return G.maximum(G.T).tocsr()


def cointeraction_graph(interactions, n_neighbors=10):
    """A kNN user graph from shared positives: cosine similarity of the users' item sets.

    ``S_uv = |I_u ∩ I_v| / sqrt(|I_u| |I_v|)`` for users u != v, each user's ``n_neighbors``
    most similar kept, symmetrized by the maximum. Built from the TRAINING positives only
    (a graph from held-out data would leak it).

    Parameters
    ----------
    interactions : Ratings or scipy.sparse matrix (n_users x n_items)
    n_neighbors : int, default=10

    Returns
    -------
    scipy.sparse.csr_matrix (n_users x n_users), symmetric, nonnegative, zero diagonal.
    """
    if hasattr(interactions, "users"):
        Y = sp.csr_matrix((np.ones(len(interactions.users)),
                           (np.asarray(interactions.users), np.asarray(interactions.items))),
                          shape=(interactions.n_users, interactions.n_items))
    else:
        Y = sp.csr_matrix(interactions, dtype=np.float64)
    Y.data[:] = 1.0
    counts = np.asarray(Y.sum(axis=1)).ravel()
    inv = np.where(counts > 0, 1.0 / np.sqrt(np.maximum(counts, 1.0)), 0.0)
    Yn = sp.diags(inv) @ Y
    return _symmetric_top_k(Yn @ Yn.T, int(n_neighbors))


def knn_graph(features, n_neighbors=10, *, chunk=1024):
    """A kNN graph on feature rows by cosine similarity (positive similarities only).

    Parameters
    ----------
    features : array or sparse matrix (n x d); rows of zeros get no edges
    n_neighbors : int, default=10

    Returns
    -------
    scipy.sparse.csr_matrix (n x n), symmetric, nonnegative, zero diagonal.
    """
    F = sp.csr_matrix(features, dtype=np.float64)
    norms = np.sqrt(np.asarray(F.multiply(F).sum(axis=1)).ravel())
    Fn = sp.diags(np.where(norms > 0, 1.0 / np.maximum(norms, 1e-300), 0.0)) @ F
    n = F.shape[0]
    kk = int(n_neighbors)
    rows, cols, vals = [], [], []
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        sim = (Fn[lo:hi] @ Fn.T).toarray()
        sim[np.arange(hi - lo), np.arange(lo, hi)] = -np.inf
        take = min(kk, n - 1)
        if take <= 0:
            break
        idx = np.argpartition(-sim, take - 1, axis=1)[:, :take]
        v = np.take_along_axis(sim, idx, axis=1)
        keep = v > 0
        r = np.repeat(np.arange(lo, hi)[:, None], take, axis=1)
        rows.append(r[keep])
        cols.append(idx[keep])
        vals.append(v[keep])
    if not rows:
        return sp.csr_matrix((n, n))
    G = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n, n))
    return G.maximum(G.T).tocsr()


def laplacian(S, n_rows=None, what="user_graph"):
    """``L = D - S`` (CSR) of a symmetric nonnegative similarity graph S.

    Raises :class:`~kmviz.exceptions.DataValueError` if S is not square with ``n_rows``
    rows, not symmetric, has negative or non-finite weights.
    """
    try:
        S = sp.csr_matrix(S, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataValueError(f"{what} is not a numeric matrix",
                             expected="a square scipy.sparse or NumPy matrix") from None
    if S.shape[0] != S.shape[1] or (n_rows is not None and S.shape[0] != n_rows):
        raise DataValueError(f"{what} has shape {S.shape}",
                             expected=f"a square ({n_rows}, {n_rows}) matrix, one row and "
                                      "column per user")
    if not np.isfinite(S.data).all():
        raise DataValueError(f"{what} holds NaN or infinite weights", expected="finite weights")
    if (S.data < 0).any():
        raise DataValueError(f"{what} holds negative weights",
                             expected="nonnegative similarities (L = D - S must be PSD)")
    S = S.copy()
    S.setdiag(0.0)
    S.eliminate_zeros()
    asym = abs(S - S.T)
    if asym.nnz and asym.max() > 1e-12 * max(1.0, abs(S).max()):
        raise DataValueError(f"{what} is not symmetric", expected="S == S.T",
                             fix="symmetrize it, e.g. (S + S.T) / 2")
    deg = np.asarray(S.sum(axis=1)).ravel()
    return (sp.diags(deg) - S).tocsr()
