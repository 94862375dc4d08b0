"""Side features as numeric matrices: encoding a feature table, checking a given matrix.

Shared by the model families that take user or item side information:

- :func:`encode_features` turns a DataFrame (the loaders' ``user_features`` /
  ``item_features``) into a CSR matrix F: text, categorical and boolean columns become
  one-hot indicator columns, 0/1 flags stay as they are, other numeric columns are
  standardized (mean 0, standard deviation 1); options bin numbers, normalize rows and add a
  bias column;
- :func:`normalize_rows` scales the rows of such a matrix to unit l1 or l2 norm;
- :func:`check_feature_matrix` validates an array, sparse matrix or DataFrame a caller
  passes in (one row per user or item, finite numbers).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..exceptions import DataValueError

#: What encode_features does with missing numbers.
MISSING_POLICIES = ("error", "zero")


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
      does not list) is a row of zeros: an entity "without features" (each model family
      says how it scores such users and items).

    Three options shape the matrix for a linear model of the features (LightFM's feature
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
      side of a model ``s_ij = b_i^T h_j`` with ``b_i = W^T x_i``, the bias column
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
                    fix="fill them, or encode with kmviz.data.encode_features(df, "
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
