"""What a similarity fit will allocate, estimated from the settings and the input shapes
before anything is allocated, and the checks of the arrays ``fit`` is given.

:func:`memory_parts` is :meth:`SimilarityLearning._memory_estimate
<kmviz.similarity.SimilarityLearning>`: the shared loop refuses a fit whose total passes the
per-fit limit (:mod:`kmviz._memory`) before ``_fit_start``. Its parts follow the arrays of
:mod:`kmviz.similarity.allpairs` and the solvers:

- the k x k Gramians ``P_c, Q_c`` of an evaluation (two evaluations are alive during a line
  search), the Gauss-Newton product's ``W_c, H_c`` and SOGram's running estimates and
  their draws: :data:`GRAMIANS` k x k matrices (k = 20,000 is 3.2 GB each);
- the imputation's ``Phat_c, Qhat_c`` (kt x k) and ``Ptilde, Qtilde`` when
  ``imputed_factors`` is given;
- the parameter vector theta and the solver's vectors of its length (CG's s, r, z, d, G d,
  the gradient, a line-search trial, AdaGrad's accumulator);
- the towers' outputs P, Q and the MLPs' activations, with the gradient's and the
  Gauss-Newton product's matrices of the same shapes;
- the towers' CSR inputs ``[one-hot ids | features]``;
- the observed pairs (CSR and CSC indices, labels, and per evaluation yhat, X, c).
"""

from __future__ import annotations

import numpy as np

from .._memory import F8, data_sizes, feature_width
from ..exceptions import DataError

#: k x k matrices alive at once at most: P_c, Q_c of two evaluations (line search), the
#: Gauss-Newton product's W_c, H_c, a BLAS temporary, SOGram's four running estimates and
#: the four estimates of one draw (Phat/Qhat ones are kt x k, counted apart).
GRAMIANS = 8
#: Copies of the towers' outputs (m x k, n x k) and activations: two evaluations, the
#: gradient's M_u, M_v and their dense terms, the product's W, H, N_u, N_v and temporaries.
EMBEDDING_COPIES = 8
#: Vectors of theta's length: theta, the gradient, CG's s, r, z, d, G d, a trial point,
#: the search direction, AdaGrad's accumulator, the preconditioner, temporaries.
PARAMETER_COPIES = 12
#: Arrays over the observed pairs: rows, cols, labels, col_rows, col_perm, the sort's
#: permutations, and yhat, X, c of two evaluations plus the product's z.
PAIR_ARRAYS = 14


def _shape2(x):
    shape = getattr(x, "shape", None)
    if shape is None:
        try:
            shape = np.shape(x)
        except Exception:  # noqa: BLE001 - ragged input: shape checks report it
            return None
    return tuple(int(s) for s in shape)


def check_imputed_factors(imputed_factors, m: int, n: int):
    """``(Ptilde, Qtilde)`` as float64 arrays (m x kt, n x kt), or :class:`DataError`
    naming what is wrong (not a pair, not 2-D, wrong rows, kt differing, not finite)."""
    fix = ("pass imputed_factors=(Ptilde, Qtilde) with Ptilde of shape (n_users, kt) and "
           "Qtilde of shape (n_items, kt), such as a fitted model's (user_factors_, "
           "item_factors_); or leave it out to impute the constant `imputed`")
    if isinstance(imputed_factors, np.ndarray) or not isinstance(imputed_factors,
                                                                (tuple, list)):
        raise DataError(f"imputed_factors is a {type(imputed_factors).__name__}, not a pair "
                        "of arrays", expected="(Ptilde, Qtilde)", fix=fix)
    if len(imputed_factors) != 2:
        raise DataError(f"imputed_factors holds {len(imputed_factors)} item(s)",
                        expected="two arrays (Ptilde, Qtilde)", fix=fix)
    out = []
    for name, value, rows, who in (("Ptilde", imputed_factors[0], m, "users"),
                                   ("Qtilde", imputed_factors[1], n, "items")):
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise DataError(f"imputed_factors' {name} is not numeric",
                            expected=f"a numeric ({rows}, kt) array", fix=fix) from None
        if arr.ndim != 2:
            raise DataError(f"imputed_factors' {name} has shape {arr.shape}",
                            expected=f"a 2-D array ({rows}, kt), one row per {who[:-1]}",
                            fix=fix)
        if arr.shape[0] != rows:
            raise DataError(f"imputed_factors' {name} has {arr.shape[0]} rows but there are "
                            f"{rows} {who}", expected=f"shape ({rows}, kt)", fix=fix)
        if not np.all(np.isfinite(arr)):
            raise DataError(f"imputed_factors' {name} holds NaN or infinite values",
                            expected="finite numbers", fix=fix)
        out.append(arr)
    if out[0].shape[1] != out[1].shape[1]:
        raise DataError(f"imputed_factors' Ptilde has {out[0].shape[1]} columns and Qtilde "
                        f"{out[1].shape[1]}", expected="the same kt for both", fix=fix)
    return out[0], out[1]


def _imputation_width(imputed_factors, imputed) -> int:
    if imputed_factors is None:
        return 0 if imputed == 0 else 1
    if isinstance(imputed_factors, (tuple, list)) and len(imputed_factors) == 2:
        shape = _shape2(imputed_factors[0])
        if shape is not None and len(shape) == 2:
            return shape[1]
    return 0  # malformed: _fit_start refuses it with its message


def memory_parts(prm, data, *, user_features=None, item_features=None,
                 imputed_factors=None, **inputs) -> dict:
    """``{what: bytes}`` of a fit with settings ``prm`` on ``data`` (module docstring)."""
    from .towers import parse_tower

    m, n, s = data_sizes(data)
    k, side = int(prm["k"]), prm["side_features"]
    kt = _imputation_width(imputed_factors, prm["imputed"])
    weights = acts = input_nnz = 0
    for spec, rows, given, who in ((prm["user_tower"], m, user_features, "user"),
                                   (prm["item_tower"], n, item_features, "item")):
        if isinstance(spec, str):
            kind, hidden = parse_tower(spec)
        else:  # a tower object: its own parameter count, outputs of width k
            kind, hidden = "object", ()
        width = feature_width(given, data, who, side in (who, "both"))
        if kind == "identity":
            weights += rows * k
            acts += rows * k
            continue
        if kind == "object":
            weights += int(getattr(spec, "n_params", 0) or 0)
            acts += rows * k
            continue
        ids = rows if prm[f"{who}_ids"] != "none" else 0
        sizes = (ids + width, *hidden, k)
        weights += sum((a + 1) * b for a, b in zip(sizes, sizes[1:]))
        acts += 2 * rows * sum(hidden) + rows * k   # pre- and post-activation per layer
        input_nnz += rows * (1 + width) if ids else rows * width
    gram = f"{GRAMIANS} k x k Gramians (k={k})"
    return {
        gram: GRAMIANS * F8 * k * k,
        f"the imputation's factors and Gramians (kt={kt})": F8 * kt * (2 * (m + n) + 4 * k),
        f"theta and the solver's vectors ({weights:,} parameters: k={k}, towers "
        f"{prm['user_tower']!r}, {prm['item_tower']!r})": PARAMETER_COPIES * F8 * weights,
        f"tower outputs and activations of {m} users and {n} items (k={k})":
            EMBEDDING_COPIES * F8 * acts,
        "the towers' inputs (one-hot ids and features)": 2 * 12 * input_nnz,
        f"the {s} observed pairs": PAIR_ARRAYS * F8 * s,
    }
