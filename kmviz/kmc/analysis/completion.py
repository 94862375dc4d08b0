"""The Completion page's views: truth, mask, estimate and error maps with cold start
marked, errors by part, singular-value spectra, and a refit with rows hidden (cold start on
demand)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..._validation import check_random_state
from ...exceptions import ConvergenceWarning
from .matrix import PARTS, _counts, _labels, _nmse, _parts, block_estimate, known_matrix


def _pick(n, limit, cold, known_count):
    """At most ``limit`` indices out of n: all when n <= limit; else the cold ones (up to a
    quarter) and the ones with the most known entries. Sorted."""
    if n <= limit:
        return np.arange(n), False
    cold_idx = np.flatnonzero(cold)
    keep_cold = cold_idx[np.argsort(-known_count[cold_idx], kind="stable")][:limit // 4]
    rest = np.setdiff1d(np.arange(n), keep_cold)
    rest = rest[np.argsort(-known_count[rest], kind="stable")][:limit - keep_cold.shape[0]]
    return np.sort(np.concatenate([keep_cold, rest])), True


@dataclass
class CompletionView:
    """The blocks of truth / mask / estimate / error the Completion page draws.

    ``truth`` holds every value the split knows (NaN elsewhere), ``part`` where each entry
    is (:data:`PARTS`), ``estimate`` the model's F_hat (NaN where it cannot predict) and
    ``error = estimate - truth``. ``cold_rows`` / ``cold_cols`` flag the shown rows /
    columns with no training entry (cold start: predicted through the kernels only).
    """

    rows: np.ndarray
    cols: np.ndarray
    truth: np.ndarray
    part: np.ndarray
    estimate: np.ndarray
    error: np.ndarray
    cold_rows: np.ndarray
    cold_cols: np.ndarray
    row_labels: list
    col_labels: list
    n_rows: int
    n_cols: int
    sampled: bool
    note: str = ""


def completion_view(model, split, *, max_rows=80, max_cols=80) -> CompletionView:
    """Truth, mask, estimate and error on the whole matrix, or on a readable block of it.

    A matrix with more than ``max_rows`` rows (``max_cols`` columns) is shown on a sample:
    its cold-start rows first (up to a quarter of the block), then the rows with the most
    known values; ``note`` says so.
    """
    values, part = known_matrix(split)
    N, L = values.shape
    tr_r, tr_c, all_r, all_c = _counts(split)
    rows, s_r = _pick(N, max_rows, tr_r == 0, all_r)
    cols, s_c = _pick(L, max_cols, tr_c == 0, all_c)
    truth = values[np.ix_(rows, cols)]
    est = block_estimate(model, rows, cols)
    notes = []
    if s_r:
        notes.append(f"{rows.shape[0]} of {N} rows")
    if s_c:
        notes.append(f"{cols.shape[0]} of {L} columns")
    note = ""
    if notes:
        note = (f"Showing {' and '.join(notes)}: the cold-start ones first (up to a quarter), "
                f"then those with the most known values; in their original order.")
    return CompletionView(rows=rows, cols=cols, truth=truth, part=part[np.ix_(rows, cols)],
                          estimate=est, error=est - truth, cold_rows=tr_r[rows] == 0,
                          cold_cols=tr_c[cols] == 0,
                          row_labels=_labels(split.train, rows, "row"),
                          col_labels=_labels(split.train, cols, "col"), n_rows=N, n_cols=L,
                          sampled=bool(s_r or s_c), note=note)


def error_table(model, split) -> pd.DataFrame:
    """NMSE (3.68) and RMSE per part of the split, for all its entries and for the warm and
    cold-start ones apart, with the training-mean predictor's NMSE beside.

    An entry is *cold start* when its row or its column has no training entry; the warm and
    cold-start rows are given for the parts that hold both kinds. Entries the model cannot
    predict (no kernel link to a trained row or column) are counted in
    ``unpredictable`` and left out of the errors.
    """
    train = split.train
    tr_r, tr_c, _, _ = _counts(split)
    mean = float(np.mean(np.asarray(train.values)))
    pr, pc = np.asarray(model.predictable_rows_), np.asarray(model.predictable_cols_)
    out = []
    for name, r in _parts(split).items():
        u, i, y = np.asarray(r.users), np.asarray(r.items), np.asarray(r.values)
        cold = (tr_r[u] == 0) | (tr_c[i] == 0)
        ok = pr[u] & pc[i]
        pred = np.full(y.shape[0], np.nan)
        if ok.any():
            pred[ok] = model.predict(u[ok], i[ok])
        mixed = bool(cold.any() and (~cold).any())
        everything = "all" if mixed or not cold.any() else "all (every one cold start)"
        for which, sel in ((everything, np.ones_like(cold)), ("warm", ~cold),
                           ("cold start", cold)):
            if not sel.any() or (which in ("warm", "cold start") and not mixed):
                continue  # one kind only: its row would repeat "all"
            s = sel & ok
            e = pred[s] - y[s]
            out.append({
                "part": name, "entries": which, "n": int(sel.sum()),
                "unpredictable": int((sel & ~ok).sum()),
                "nmse": _nmse(pred[s], y[s]) if s.any() else math.nan,
                "rmse": float(np.sqrt(np.mean(e * e))) if s.any() else math.nan,
                "mean_predictor_nmse": _nmse(np.full(int(sel.sum()), mean), y[sel]),
            })
    return pd.DataFrame(out, columns=["part", "entries", "n", "unpredictable", "nmse", "rmse",
                                      "mean_predictor_nmse"])


def _truth_for_spectrum(values, part, coverage_min):
    known = ~np.isnan(values)
    coverage = float(known.mean()) if known.size else 0.0
    if coverage >= coverage_min:
        F = values.copy()
        n_missing = int((~known).sum())
        if n_missing:
            col_mean = np.nanmean(np.where(known, values, np.nan), axis=0)
            col_mean = np.where(np.isfinite(col_mean), col_mean, np.nanmean(values))
            F = np.where(known, values, col_mean[None, :])
            return F, (f"F, the data ({coverage:.0%} known; {n_missing:,} missing values "
                       f"filled with their column's mean)")
        return F, "F, the data (complete)"
    train = part == PARTS["train"]
    p = float(train.mean())
    F = np.where(train, values, 0.0) / max(p, 1e-12)
    return F, (f"P_Ω(F) / p: the training values divided by the observed share p = {p:.3g}, "
               f"zero elsewhere (the data covers only {coverage:.0%} of F)")


def singular_value_spectra(model, split, *, max_side=400, coverage_min=0.9,
                           max_values=100) -> tuple[pd.DataFrame, str]:
    """The singular values of F and of the estimate F_hat, largest first.

    F is the data when it covers at least ``coverage_min`` of the matrix (missing values
    filled with column means), else ``P_Ω(F) / p``, the training values scaled by the
    inverse observed share (an unbiased stand-in for F). Rows and columns the model cannot
    predict are left out of both. Matrices larger than ``max_side`` on a side are reduced to
    the ``max_side`` most-observed rows / columns (the returned note says so).

    Returns ``(frame, note)`` with columns matrix, k (1-based), sigma.
    """
    values, part = known_matrix(split)
    N, L = values.shape
    _, _, all_r, all_c = _counts(split)
    pr = np.flatnonzero(np.asarray(model.predictable_rows_))
    pc = np.flatnonzero(np.asarray(model.predictable_cols_))
    note = ""
    if pr.shape[0] > max_side:
        pr = np.sort(pr[np.argsort(-all_r[pr], kind="stable")][:max_side])
        note += f"the {max_side} most-observed rows of {N}"
    if pc.shape[0] > max_side:
        pc = np.sort(pc[np.argsort(-all_c[pc], kind="stable")][:max_side])
        note += (" and " if note else "") + f"the {max_side} most-observed columns of {L}"
    sub_v, sub_p = values[np.ix_(pr, pc)], part[np.ix_(pr, pc)]
    F, what = _truth_for_spectrum(sub_v, sub_p, coverage_min)
    F_hat = block_estimate(model, pr, pc)
    frames = []
    for name, M in ((what, F), ("F̂, the estimate", F_hat)):
        sv = np.linalg.svd(M, compute_uv=False)[:max_values]
        frames.append(pd.DataFrame({"matrix": name, "k": np.arange(1, sv.shape[0] + 1),
                                    "sigma": sv}))
    if note:
        note = f"Computed on {note}."
    return pd.concat(frames, ignore_index=True), note


def cold_start_refit(model, split, *, n_rows=5, n_cols=0, max_train=40_000, random_state=0):
    """Refit the run's settings with whole rows (and columns) hidden: cold start on demand.

    ``n_rows`` rows and ``n_cols`` columns that have training entries are drawn at random and
    lose all of them to the test part, which also keeps the split's held-out entries; the
    model is refitted with the run's parameters and its kernels (so that a reopened run,
    whose side information is not saved, refits the same problem). Returns
    ``(model, split, hidden_rows, hidden_cols)``. Raises ValueError for a method that cannot
    extrapolate (nuclear-norm PG) and above ``max_train`` training entries (size guard).
    """
    from ...data.ratings import Ratings
    from ...data.splits import Split
    from ..estimator import KernelMatrixCompletion

    if model.method_ == "pg":
        raise ValueError("nuclear-norm PG cannot predict rows or columns without training "
                         "entries; open a run of a kernel method (kkmcex, rrmcex, als) to see "
                         "cold start")
    train = split.train
    if train.n_ratings > max_train:
        raise ValueError(f"{train.n_ratings:,} training entries: refitting here is limited "
                         f"to {max_train:,}; hide rows in the data before training instead")
    rng = check_random_state(random_state)
    known_r = np.flatnonzero(np.bincount(np.asarray(train.users), minlength=train.n_users))
    known_c = np.flatnonzero(np.bincount(np.asarray(train.items), minlength=train.n_items))
    n_rows = int(min(max(0, n_rows), max(0, known_r.shape[0] - 2)))
    n_cols = int(min(max(0, n_cols), max(0, known_c.shape[0] - 2)))
    hide_r = np.sort(rng.choice(known_r, n_rows, replace=False)) if n_rows else \
        np.zeros(0, np.int64)
    hide_c = np.sort(rng.choice(known_c, n_cols, replace=False)) if n_cols else \
        np.zeros(0, np.int64)
    u, i, v = np.asarray(train.users), np.asarray(train.items), np.asarray(train.values)
    moved = np.isin(u, hide_r) | np.isin(i, hide_c)
    held = [r for r in (split.validation, split.test) if r is not None and r.n_ratings]
    tu = np.concatenate([u[moved]] + [np.asarray(r.users) for r in held])
    ti = np.concatenate([i[moved]] + [np.asarray(r.items) for r in held])
    tv = np.concatenate([v[moved]] + [np.asarray(r.values) for r in held])
    common = dict(n_users=train.n_users, n_items=train.n_items, r_min=train.r_min,
                  r_max=train.r_max, user_ids=train.user_ids, item_ids=train.item_ids,
                  user_names=train.user_names, item_names=train.item_names)
    new_train = Ratings(u[~moved], i[~moved], v[~moved], name=f"{train.name} (rows hidden)",
                        **common)
    new_test = Ratings(tu, ti, tv, name="held out and hidden", **common)
    new_split = Split(train=new_train, validation=None, test=new_test, val_size=0.0,
                      test_size=split.test_size, by="hidden rows", seed=int(random_state))
    params = model.get_params()
    kernels = {}
    sides = {side: model.side_kernel(side) for side in ("row", "col")}
    if all(sk is not None for sk in sides.values()):
        # the kept kernels already carry the run's jitter; linear RRMCEX features become the
        # eigen features of the same (linear) kernels; factors stay factors
        for side, sk in sides.items():
            if sk.kind == "dense":
                kernels[f"{side}_kernel"] = sk.K
            else:
                kernels[f"{side}_kernel_factor"] = sk
        params.update(jitter=None, rr_features="eigen", kernel_rank=None, add_constant=False)
    refit = KernelMatrixCompletion(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        refit.fit(new_train, **kernels)
    return refit, new_split, hide_r, hide_c


__all__ = ["CompletionView", "cold_start_refit", "completion_view", "error_table",
           "singular_value_spectra"]
