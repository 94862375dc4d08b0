"""What the Kernel MC pages show, computed here: completion maps with cold start marked,
errors by part, NMSE and time against the fraction observed, singular-value spectra, and
the Nyström views (leverage-score maps, exact vs approximate scores, landmarks, error
against the number of landmarks).

Pure functions of a fitted :class:`~kmviz.kmc.KernelMatrixCompletion`, its split and plain
arrays; no Streamlit. Long computations take ``progress(done, total, message)`` and a size
guard, so that a page can run them on request and finish in well under a minute.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._validation import check_random_state
from ..exceptions import ConvergenceWarning
from .nystrom import ridge as ny
from .nystrom import (SAMPLINGS, approximate_ridge_leverage_scores, recursive_rls_sample,
                      sample_distinct, tail_alpha)

#: Codes of the mask map: where each entry of the matrix is.
PARTS = {"unobserved": 0, "train": 1, "validation": 2, "test": 3}


# ----------------------------------------------------------------------------- helpers
def _parts(split) -> dict:
    return {name: r for name, r in split.parts().items() if r is not None and r.n_ratings}


def known_matrix(split):
    """``(values, part)``: the N x L matrix of every value the split holds (NaN elsewhere)
    and the part each entry belongs to (codes of :data:`PARTS`, 0 = unobserved)."""
    train = split.train
    N, L = int(train.n_users), int(train.n_items)
    values = np.full((N, L), np.nan)
    part = np.zeros((N, L), dtype=np.int8)
    for name, r in _parts(split).items():
        u, i = np.asarray(r.users), np.asarray(r.items)
        values[u, i] = np.asarray(r.values)
        part[u, i] = PARTS[name]
    return values, part


def _counts(split):
    """Entries per row and per column: in training, and in all parts."""
    train = split.train
    N, L = int(train.n_users), int(train.n_items)
    tr_r = np.bincount(np.asarray(train.users), minlength=N)
    tr_c = np.bincount(np.asarray(train.items), minlength=L)
    all_r, all_c = np.zeros(N, np.int64), np.zeros(L, np.int64)
    for r in _parts(split).values():
        all_r += np.bincount(np.asarray(r.users), minlength=N)
        all_c += np.bincount(np.asarray(r.items), minlength=L)
    return tr_r, tr_c, all_r, all_c


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


#: Values held at once by the chunked products below (about 64 MB of float64).
_CHUNK = 8_000_000


def _kron_parts(model):
    """``(K_row, K_col, rows, cols, coef)`` of a KKMCEX model, or None for other methods."""
    if getattr(model, "method_", None) != "kkmcex" or getattr(model, "coef_", None) is None:
        return None
    if any(sk is not None and sk.kind != "dense" for sk in (model.side_kernel("row"),
                                                            model.side_kernel("col"))):
        return None  # kept as factors: the model's own predictions never form the kernels
    return (np.asarray(model.row_kernel_), np.asarray(model.col_kernel_),
            np.asarray(model.train_rows_, np.int64), np.asarray(model.train_cols_, np.int64),
            np.asarray(model.coef_, np.float64))


def block_estimate(model, rows, cols) -> np.ndarray:
    """The model's estimate on the block ``rows x cols`` (NaN where it cannot predict); for
    KKMCEX one product ``(K_row[R, a] c) K_col[b, C]``, chunked over the observations."""
    rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
    out = np.full((rows.shape[0], cols.shape[0]), np.nan)
    pr = np.asarray(model.predictable_rows_)[rows]
    pc = np.asarray(model.predictable_cols_)[cols]
    if not (pr.any() and pc.any()):
        return out
    R, C = rows[pr], cols[pc]
    parts = _kron_parts(model)
    if parts is None:
        uu, ii = np.meshgrid(R, C, indexing="ij")
        out[np.ix_(pr, pc)] = model.predict(uu, ii)
        return out
    Kr, Kc, a, b, c = parts
    F = np.zeros((R.shape[0], C.shape[0]))
    step = max(1, _CHUNK // max(R.shape[0] + C.shape[0], 1))
    for lo in range(0, a.shape[0], step):
        sl = slice(lo, lo + step)
        F += (Kr[np.ix_(R, a[sl])] * c[sl]) @ Kc[np.ix_(b[sl], C)]
    out[np.ix_(pr, pc)] = F + model.offset_
    return out


def _labels(ratings, idx, side):
    f = ratings.user_label if side == "row" else ratings.item_label
    return [f(int(k)) for k in idx]


# ----------------------------------------------------------------------------- completion
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


def _nmse(pred, y):
    den = float(y @ y)
    e = pred - y
    return float(e @ e) / den if den > 0 else math.nan


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
    from ..data.ratings import Ratings
    from ..data.splits import Split
    from .estimator import KernelMatrixCompletion

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


# ----------------------------------------------------------------------------- P_s curve
#: Methods the fraction-observed comparison offers, in order, and the ones it runs by default
#: (nuclear-norm PG needs its own mu scale and many SVDs: on request only).
CURVE_METHODS = ("kkmcex", "rrmcex", "als", "online_rrmcex", "sgd", "pg")
CURVE_DEFAULT = ("kkmcex", "rrmcex", "als")


@dataclass
class SubProblem:
    """A block of the run's matrix for repeated fits: its training and held-out entries
    (block indices), the kernels restricted to it, and how it was chosen."""

    rows: np.ndarray
    cols: np.ndarray
    train: tuple
    held: tuple
    row_kernel: np.ndarray | None
    col_kernel: np.ndarray | None
    note: str = ""


def sub_problem(model, split, *, max_side=150) -> SubProblem:
    """The block the fraction-observed comparison fits on: the whole matrix when both sides
    are at most ``max_side``, else the ``max_side`` rows and columns with the most known
    values (the size guard); the run's kernels restricted to it (identity without)."""
    tr_r, tr_c, all_r, all_c = _counts(split)
    N, L = tr_r.shape[0], tr_c.shape[0]
    rows = np.arange(N) if N <= max_side else np.sort(
        np.argsort(-all_r, kind="stable")[:max_side])
    cols = np.arange(L) if L <= max_side else np.sort(
        np.argsort(-all_c, kind="stable")[:max_side])
    rmap = np.full(N, -1)
    rmap[rows] = np.arange(rows.shape[0])
    cmap = np.full(L, -1)
    cmap[cols] = np.arange(cols.shape[0])

    def entries(parts):
        u, i, v = [], [], []
        for r in parts:
            if r is None or not r.n_ratings:
                continue
            ru, ci = rmap[np.asarray(r.users)], cmap[np.asarray(r.items)]
            keep = (ru >= 0) & (ci >= 0)
            u.append(ru[keep])
            i.append(ci[keep])
            v.append(np.asarray(r.values)[keep])
        if not u:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        return np.concatenate(u), np.concatenate(i), np.concatenate(v)

    # the blocks only: a kernel kept as a factor (MovieLens's 9,066 movies) is never formed
    sides = [model.side_kernel(side) if getattr(model, "method_", None) != "pg" else None
             for side in ("row", "col")]
    Kr = None if sides[0] is None else kernel_block(sides[0], rows)
    Kc = None if sides[1] is None else kernel_block(sides[1], cols)
    note = ""
    if N > max_side or L > max_side:
        note = (f"Size guard: fitted on the {rows.shape[0]} x {cols.shape[0]} block of the "
                f"most-observed rows and columns (of {N} x {L}).")
    return SubProblem(rows=rows, cols=cols, train=entries([split.train]),
                      held=entries([split.validation, split.test]), row_kernel=Kr,
                      col_kernel=Kc, note=note)


def _curve_params(method, run_params, kernel_scale):
    """Settings of one method in the comparison: the run's shared settings, the method's
    own defaults for the rest, and capped iterations."""
    p = {"method": method, "center": bool(run_params.get("center", False)),
         "random_state": 0, "max_iter": min(int(run_params.get("max_iter", 200) or 200), 50),
         "tol": 1e-6}
    if method == run_params.get("method"):
        p["mu"] = float(run_params.get("mu", 0.01))
    if method in ("rrmcex", "als"):
        p["n_components"] = int(run_params.get("n_components", 100) or 100)
        p["rank"] = int(run_params.get("rank", 10) or 10)
    if method in ("als", "sgd"):  # they invert the kernels (3.28): the suggested jitter
        p["jitter"] = 1e-4 * kernel_scale
    return p


def fraction_observed_curve(model, split, *, methods=CURVE_DEFAULT,
                            fractions=(0.1, 0.25, 0.5, 0.75, 1.0), max_side=150,
                            time_budget_s=40.0, random_state=0, progress=None):
    """NMSE and time against the fraction of the matrix observed, for each method.

    Each method is fitted on a random share of the run's training entries (``fractions``,
    nested draws) inside the size-guarded block of :func:`sub_problem`, with the run's
    kernels, and scored on the block's held-out (validation and test) entries it can predict.
    Fits stop being started once ``time_budget_s`` has passed.

    Returns ``(frame, note)``; the frame has columns method, fraction_of_training,
    observed_fraction (training entries / block entries), n_train, nmse, time_s, n_scored,
    error.
    """
    from ..data.ratings import Ratings
    from .estimator import KernelMatrixCompletion

    sp_ = sub_problem(model, split, max_side=max_side)
    n_r, n_c = sp_.rows.shape[0], sp_.cols.shape[0]
    tu, ti, tv = sp_.train
    hu, hi, hv = sp_.held
    rng = check_random_state(random_state)
    order = rng.permutation(tu.shape[0])
    allv = np.concatenate([tv, hv]) if hv.size else tv
    r_min, r_max = (float(allv.min()), float(allv.max())) if allv.size else (0.0, 1.0)
    scale = 1.0
    for K in (sp_.row_kernel, sp_.col_kernel):
        if K is not None and K.size:
            scale = max(scale, float(np.max(np.diag(K))))
    run_params = model.get_params()
    total = len(methods) * len(fractions)
    rows, done, start = [], 0, time.perf_counter()
    skipped = 0
    for method in methods:
        for f in fractions:
            if time.perf_counter() - start > time_budget_s:
                skipped += 1
                done += 1
                continue
            k = max(2, int(round(f * tu.shape[0])))
            sel = order[:k]
            row = {"method": method, "fraction_of_training": float(f),
                   "observed_fraction": k / float(n_r * n_c), "n_train": k,
                   "nmse": math.nan, "time_s": math.nan, "n_scored": 0, "error": ""}
            try:
                train = Ratings(tu[sel], ti[sel], tv[sel], n_users=n_r, n_items=n_c,
                                r_min=r_min, r_max=r_max)
                est = KernelMatrixCompletion(**_curve_params(method, run_params, scale))
                kernels = {}
                if method != "pg":
                    kernels = {"row_kernel": sp_.row_kernel if sp_.row_kernel is not None
                               else np.eye(n_r),
                               "col_kernel": sp_.col_kernel if sp_.col_kernel is not None
                               else np.eye(n_c)}
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    est.fit(train, **kernels)
                row["time_s"] = time.perf_counter() - t0
                ok = np.asarray(est.predictable_rows_)[hu] & np.asarray(
                    est.predictable_cols_)[hi]
                if ok.any():
                    row["nmse"] = _nmse(est.predict(hu[ok], hi[ok]), hv[ok])
                row["n_scored"] = int(ok.sum())
            except ValueError as exc:
                row["error"] = str(exc)
            rows.append(row)
            done += 1
            if progress is not None:
                progress(done, total, f"{method} on {f:.0%} of the training entries")
    note = sp_.note
    if skipped:
        note += (f" Time budget of {time_budget_s:g} s reached: {skipped} fit(s) not "
                 f"started.")
    if not hv.size:
        note += " The block has no held-out entries to score on."
    return pd.DataFrame(rows, columns=["method", "fraction_of_training", "observed_fraction",
                                       "n_train", "nmse", "time_s", "n_scored", "error"]), \
        note.strip()


# ----------------------------------------------------------------------------- Nyström
#: Data sets of the Nyström page: key -> title.
NYSTROM_SOURCES = {
    "row_kernel": "the run's row kernel",
    "col_kernel": "the run's column kernel",
    "boston": "Boston housing (506 tracts, 13 standardized features)",
    "digits": "scikit-learn digits (1,797 images, 64 standardized pixels)",
    "mixture": "Gaussian mixture with one small, far cluster (2,000 points)",
}


@dataclass
class KernelData:
    """A kernel matrix to study, with 2-D coordinates to draw its points on.

    ``X`` are the points (None for a given kernel), ``gamma`` the width of the Gaussian
    kernel ``exp(-gamma ||x - x'||^2)`` built on them; ``coords`` the first two principal
    components of the points (kernel PCA for a given kernel); ``groups`` a label per point
    for the colours (cluster, digit, has training entries).
    """

    name: str
    K: np.ndarray
    coords: np.ndarray
    labels: list
    groups: np.ndarray | None = None
    group_name: str = ""
    X: np.ndarray | None = None
    gamma: float | None = None
    axes: tuple = ("PC 1", "PC 2")
    note: str = ""
    eigenvalues: np.ndarray = field(default=None, repr=False)
    eigenvectors: np.ndarray = field(default=None, repr=False)

    @property
    def n(self) -> int:
        return int(self.K.shape[0])

    def eigen(self):
        """``(sigma, Q)`` of K, eigenvalues clipped at 0, computed once."""
        if self.eigenvalues is None:
            sig, Q = np.linalg.eigh(self.K)
            self.eigenvalues, self.eigenvectors = np.clip(sig, 0.0, None), Q
        return self.eigenvalues, self.eigenvectors


def sklearn_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("sklearn") is not None


def _pca2(X):
    Xc = X - X.mean(axis=0)
    U, s, _ = np.linalg.svd(Xc, full_matrices=False)
    out = U[:, :2] * s[:2]
    return out if out.shape[1] == 2 else np.column_stack([out, np.zeros(X.shape[0])])


def _standardize(X):
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def _gaussian(X, gamma):
    from .kernels import gaussian_kernel

    return gaussian_kernel(X, X, gamma=gamma)


def points_data(source, *, gamma=None, random_state=0) -> KernelData:
    """Boston, digits or the mixture as points with their Gaussian kernel (``gamma``
    default ``1 / n_features``)."""
    groups, group_name, note = None, "", ""
    if source == "boston":
        from .datasets import load_boston

        X, y, _ = load_boston()
        labels = [f"tract {k}: median value {v:g}k$" for k, v in enumerate(y)]
        name = NYSTROM_SOURCES["boston"]
    elif source == "digits":
        if not sklearn_available():
            raise ValueError("the digits need scikit-learn (pip install scikit-learn)")
        from sklearn.datasets import load_digits

        d = load_digits()
        X = _standardize(d.data.astype(np.float64))
        groups, group_name = d.target.astype(int), "digit"
        labels = [f"image {k}: digit {t}" for k, t in enumerate(d.target)]
        name = NYSTROM_SOURCES["digits"]
    elif source == "mixture":
        from .synthetic import gaussian_mixture

        X, lab = gaussian_mixture(2000, random_state=random_state)
        far = int(lab.max())
        groups = np.where(lab == far, "far cluster", "main clusters")
        group_name = "cluster"
        labels = [f"point {k}: {'far cluster' if g == far else f'cluster {g}'}"
                  for k, g in enumerate(lab)]
        name = NYSTROM_SOURCES["mixture"]
        note = f"{int((lab == far).sum())} of 2,000 points are in the far cluster."
    else:
        raise ValueError(f"unknown point data {source!r}; choose boston, digits or mixture")
    gamma = float(gamma) if gamma is not None else 1.0 / X.shape[1]
    return KernelData(name=name, K=_gaussian(X, gamma), coords=_pca2(X), labels=labels,
                      groups=groups, group_name=group_name, X=X, gamma=gamma, note=note)


def run_kernel_data(model, split, side="row", *, max_points=1500, random_state=0):
    """The run's row or column kernel, drawn by kernel PCA (``sqrt(sigma_k) q_k``, k = 1, 2),
    coloured by whether the row / column has training entries. Kernels larger than
    ``max_points`` are reduced to a random principal block (the note says so)."""
    kernel = model.side_kernel(side) if model.method_ != "pg" else None
    if kernel is None:
        raise ValueError(f"this run ({model.method_}) keeps no {side} kernel; kernel methods "
                         "(kkmcex, rrmcex, als, sgd) do")
    n = kernel.n
    idx = np.arange(n)
    note = ""
    if n > max_points:  # the size guard: a sample, before any n x n work
        rng = check_random_state(random_state)
        idx = np.sort(rng.choice(n, max_points, replace=False))
        note = (f"A random {max_points} of the {n:,} {'rows' if side == 'row' else 'columns'} "
                f"(uniform, seed {random_state}): the kernel's {max_points:,} x "
                f"{max_points:,} principal block, sampled before any n x n work.")
    K = kernel_block(kernel, idx)
    known = np.asarray(model.known_rows_ if side == "row" else model.known_cols_)[idx]
    labels = _labels(split.train, idx, side) if split is not None else [str(k) for k in idx]
    data = KernelData(name=NYSTROM_SOURCES[f"{side}_kernel"], K=K, coords=np.zeros((len(idx), 2)),
                      labels=labels, groups=np.where(known, "has training entries",
                                                     "cold start"),
                      group_name="training entries", axes=("kernel PC 1", "kernel PC 2"),
                      note=note)
    distinct = np.unique(np.round(K / max(float(np.abs(K).max()), 1e-300), 10), axis=0).shape[0]
    if distinct < len(idx):
        data.note = (note + f" Only {distinct} of the {len(idx)} kernel columns differ: "
                     "entities with the same column (under a group graph, all members of "
                     "one group) sit on one dot and share one score.").strip()
    sig, Q = data.eigen()
    top = np.argsort(sig)[::-1][:2]
    data.coords = Q[:, top] * np.sqrt(sig[top])
    if data.coords.shape[1] < 2:
        data.coords = np.column_stack([data.coords, np.zeros(len(idx))])
    return data


def kernel_block(kernel, idx) -> np.ndarray:
    """The block ``K[idx, idx]`` of a :class:`~kmviz.kmc.krr.SideKernel`, without forming
    the whole kernel when it is kept as a factor or the identity."""
    idx = np.asarray(idx, np.int64)
    if kernel.kind == "dense":
        return np.ascontiguousarray(kernel.K[np.ix_(idx, idx)], dtype=np.float64)
    if kernel.kind == "identity":
        return np.eye(idx.shape[0])
    F = kernel.F[idx]
    K = F @ F.T
    K = 0.5 * (K + K.T)
    if kernel.shift:
        K[np.diag_indices_from(K)] += kernel.shift
    return K


@dataclass
class KronSample:
    """The row and column kernels of a run for the entry scores: whole, or a uniform sample
    of ``rows`` / ``cols`` when a side is larger than the guard (``note`` says so)."""

    Kr: np.ndarray
    Kc: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    n_rows: int
    n_cols: int
    note: str = ""


def kron_sample(model, *, max_side=400, random_state=0) -> KronSample:
    """The run's two kernels for :func:`kron_scores`, each reduced to a uniform random
    sample of ``max_side`` rows / columns when larger (a size guard that runs before any
    eigendecomposition; the note states the sample)."""
    kernels = [model.side_kernel(side) if model.method_ != "pg" else None
               for side in ("row", "col")]
    if any(k is None for k in kernels):
        raise ValueError(f"this run ({model.method_}) keeps no kernels; kernel methods "
                         "(kkmcex, rrmcex, als, sgd) do")
    rng = check_random_state(random_state)
    picked, notes = [], []
    for kernel, what in zip(kernels, ("rows", "columns")):
        if kernel.n > max_side:
            picked.append(np.sort(rng.choice(kernel.n, max_side, replace=False)))
            notes.append(f"{max_side:,} of the {kernel.n:,} {what}")
        else:
            picked.append(np.arange(kernel.n))
    note = ""
    if notes:
        note = (f"Computed on a uniform random sample of {' and '.join(notes)} (seed "
                f"{random_state}): the scores of the sampled entries' kernel, not of the "
                "whole matrix.")
    return KronSample(Kr=kernel_block(kernels[0], picked[0]),
                      Kc=kernel_block(kernels[1], picked[1]), rows=picked[0], cols=picked[1],
                      n_rows=kernels[0].n, n_cols=kernels[1].n, note=note)


def leverage_scores(data: KernelData, alpha) -> tuple[np.ndarray, float]:
    """Ridge leverage scores ``diag(K (K + alpha I)^-1)`` (5.21) of every point and
    ``d_eff(alpha)``, their sum: from one eigendecomposition, cheap for a new alpha."""
    sig, Q = data.eigen()
    w = sig / (sig + float(alpha))
    return (Q * Q) @ w, float(w.sum())


def _nystroem_alpha(eigenvalues, m, *, total=None) -> float:
    """The default ridge of :class:`~kmviz.kmc.nystrom.Nystroem` for m landmarks: its
    ``default_alpha`` rule; with an older nystrom module, its tail rule (``total``: the
    trace when ``eigenvalues`` are a sketch's)."""
    rule = getattr(ny, "default_alpha", None)
    if rule is not None:
        return float(rule(eigenvalues, m))
    k = ny._k_of(m)
    sig = np.sort(np.clip(np.asarray(eigenvalues, np.float64), 0.0, None))[::-1]
    if total is None:
        return tail_alpha(sig, k)
    return max((total - float(sig[:k].sum())) / k, 1e-12 * float(sig[0]) if sig.size else 1e-12)


def default_alpha(data: KernelData, m) -> float:
    """The ridge the :class:`~kmviz.kmc.nystrom.Nystroem` sampler uses for m landmarks."""
    sig, _ = data.eigen()
    return _nystroem_alpha(sig, m)


def alpha_for_landmarks(data: KernelData, m) -> float:
    """The alpha at which ``d_eff(alpha) = m``: the scale that m landmarks can cover, where
    the scores show which points they should cover (the samplers' own default ridge is
    larger, :func:`default_alpha`)."""
    sig, _ = data.eigen()
    rule = getattr(ny, "alpha_for_dimension", None)
    if rule is not None:
        return float(rule(sig, float(m)))
    return default_alpha(data, m)


def alpha_grid(data: KernelData, n=41) -> np.ndarray:
    """Log-spaced alphas from 1e-4 to 10 times the largest eigenvalue (slider stops)."""
    sig, _ = data.eigen()
    top = max(float(sig.max()), 1e-12)
    return np.logspace(math.log10(top * 1e-4), math.log10(top * 10), n)


def approximate_scores(data: KernelData, alpha, m, *, random_state=0) -> np.ndarray:
    """Ridge leverage scores estimated from a uniform sketch of m points (Musco and Musco):
    ``min(1, (k_ii - k_iS (K_SS + alpha n/m I)^-1 k_Si) / alpha)``, O(n m^2), no n x n
    eigendecomposition. The estimator the ``approximate_leverage`` sampling draws from."""
    rng = check_random_state(random_state)
    n = data.n
    m = int(min(max(1, m), n))
    sketch = rng.choice(n, m, replace=False).astype(np.int64)
    w = np.full(m, math.sqrt(n / m))
    K = data.K
    # capped at 1 as the sampler caps them: true scores never exceed 1, and a sketch that
    # misses a region over-estimates its points by far
    return np.minimum(approximate_ridge_leverage_scores(
        lambda S: K[:, S], np.diag(K).copy(), sketch, w, float(alpha)), 1.0)


def score_agreement(exact, approx) -> dict:
    """Pearson and Spearman correlations of two score vectors and the median ratio."""
    exact, approx = np.asarray(exact, float), np.asarray(approx, float)
    pearson = float(np.corrcoef(exact, approx)[0, 1]) if exact.std() > 0 and \
        approx.std() > 0 else math.nan
    re = pd.Series(exact).rank().to_numpy()
    ra = pd.Series(approx).rank().to_numpy()
    spearman = float(np.corrcoef(re, ra)[0, 1]) if re.std() > 0 and ra.std() > 0 else math.nan
    pos = exact > 0
    ratio = float(np.median(approx[pos] / exact[pos])) if pos.any() else math.nan
    return {"pearson": pearson, "spearman": spearman, "median_ratio": ratio}


def draw_landmarks(data: KernelData, m, sampling, *, alpha=None, random_state=None):
    """``(indices, alpha)``: m distinct landmarks drawn by ``sampling``, as
    :class:`~kmviz.kmc.nystrom.Nystroem` draws them, but reusing the data's
    eigendecomposition for the exact scores (no n x n work per draw).

    ``uniform`` without replacement; ``leverage`` by the exact ridge leverage scores;
    ``approximate_leverage`` by scores estimated on a uniform sketch of m points;
    ``recursive`` by recursive ridge-leverage sampling. The leverage schemes draw by the
    scores until m distinct points are in. ``alpha`` (default: :func:`default_alpha`) is
    returned for the leverage schemes, else None.
    """
    rng = check_random_state(random_state)
    n = data.n
    m = int(min(max(1, m), n))
    K = data.K
    diag = np.diag(K).copy()
    if sampling == "uniform":
        return rng.choice(n, m, replace=False).astype(np.int64), None
    if sampling == "recursive":
        return recursive_rls_sample(n, m, lambda r, c: K[np.ix_(r, c)], diag,
                                    random_state=rng), None
    if sampling == "leverage":
        a = default_alpha(data, m) if alpha is None else float(alpha)
        scores, _ = leverage_scores(data, a)
    elif sampling == "approximate_leverage":
        sketch = rng.choice(n, m, replace=False).astype(np.int64)
        if alpha is None:  # the default rule on the sketch's spectrum, scaled to the whole set
            ev = np.clip(np.linalg.eigvalsh(K[np.ix_(sketch, sketch)]), 0.0, None) * (n / m)
            a = _nystroem_alpha(ev, m, total=float(diag.sum()))
        else:
            a = float(alpha)
        scores = np.minimum(approximate_ridge_leverage_scores(
            lambda S: K[:, S], diag, sketch, np.full(m, math.sqrt(n / m)), a), 1.0)
    else:
        raise ValueError(f"unknown sampling {sampling!r}; choose one of "
                         f"{', '.join(SAMPLINGS)}")
    return sample_distinct(scores / scores.sum(), m, rng), a


def nystrom_features(K, landmarks, *, rcond=1e-12) -> np.ndarray:
    """Features Z with ``Z Z^T = K[:, S] K[S, S]^+ K[S, :]``, the Nyström approximation on
    the distinct landmarks S (sampling weights cancel in it)."""
    S = np.unique(np.asarray(landmarks, dtype=np.int64))
    W = K[np.ix_(S, S)]
    lam, Q = np.linalg.eigh(0.5 * (W + W.T))
    keep = lam > rcond * max(float(lam.max()) if lam.size else 0.0, 1e-300)
    return K[:, S] @ (Q[:, keep] / np.sqrt(lam[keep]))


def sample_landmarks(data: KernelData, m, sampling, *, alpha=None, random_state=0):
    """``(indices, counts, trace_error)``: the landmarks one draw picks (sorted), how many
    times each was drawn (1: the draws are distinct), and the relative trace error
    ``Tr(K - K_hat) / Tr K`` of the Nyström approximation they give."""
    draw, _ = draw_landmarks(data, m, sampling, alpha=alpha, random_state=random_state)
    idx, counts = np.unique(draw, return_counts=True)
    Z = nystrom_features(data.K, idx)
    return idx, counts, _errors(data.K, Z, ("trace",))["trace"]


def kron_scores(model, alpha, *, max_side=2000):
    """Ridge leverage scores of the run's Kronecker kernel ``K_col ⊗ K_row``, one per entry
    of the N x L matrix: ``(exact, approximate, d_eff)``.

    ``exact`` by :func:`~kmviz.kmc.nystrom.kron_ridge_leverage_scores` (O(N^3 + L^3), the
    NL x NL kernel never formed), ``approximate`` the thesis's (5.23), the outer product of
    the two kernels' own scores at ``sqrt(alpha)``; ``d_eff`` the sum of the exact map.
    ``model`` may be a :class:`KronSample` (:func:`kron_sample`: the kernels of a
    sample of rows and columns). Raises ValueError without kernels or above ``max_side``
    rows or columns.
    """
    from .nystrom import approximate_kron_leverage_scores, kron_ridge_leverage_scores

    if isinstance(model, KronSample):
        Kr, Kc = model.Kr, model.Kc
    else:
        Kr, Kc = getattr(model, "row_kernel_", None), getattr(model, "col_kernel_", None)
    if Kr is None or Kc is None:
        raise ValueError(f"this run ({model.method_}) keeps no kernels; kernel methods "
                         "(kkmcex, rrmcex, als, sgd) do")
    Kr, Kc = np.asarray(Kr, np.float64), np.asarray(Kc, np.float64)
    if max(Kr.shape[0], Kc.shape[0]) > max_side:
        raise ValueError(f"the kernels are {Kr.shape[0]} x {Kr.shape[0]} and {Kc.shape[0]} x "
                         f"{Kc.shape[0]}: the entry scores are limited to {max_side} a side "
                         "(two eigendecompositions)")
    exact = kron_ridge_leverage_scores(Kr, Kc, alpha)
    approx = approximate_kron_leverage_scores(Kr, Kc, alpha)
    return exact, approx, float(exact.sum())


def kron_alpha_grid(model, n=41) -> np.ndarray:
    """Log-spaced alphas for the Kronecker scores: 1e-6 to 10 times the largest eigenvalue
    of ``K_col ⊗ K_row`` (the product of the two largest)."""
    top = 1.0
    kernels = (model.Kr, model.Kc) if isinstance(model, KronSample) else \
        (model.row_kernel_, model.col_kernel_)
    for K in kernels:
        top *= max(float(np.linalg.eigvalsh(np.asarray(K, np.float64))[-1]), 1e-12)
    return np.logspace(math.log10(top * 1e-6), math.log10(top * 10), n)


#: Sampling schemes of the error comparison, and scikit-learn's uniform Nystroem.
SAMPLING_LABELS = {"uniform": "uniform", "leverage": "ridge leverage (exact)",
                   "approximate_leverage": "ridge leverage (approximate)",
                   "recursive": "recursive ridge leverage (Musco & Musco)",
                   "sklearn": "scikit-learn Nystroem (uniform)"}


def _errors(K, Z, measures):
    diagK = np.diag(K)
    out = {}
    resid = diagK - np.einsum("ij,ij->i", Z, Z)
    out["trace"] = float(np.clip(resid, 0.0, None).sum()) / float(diagK.sum())
    if "frobenius" in measures or "spectral" in measures:
        E = K - Z @ Z.T
        if "frobenius" in measures:
            out["frobenius"] = float(np.linalg.norm(E)) / float(np.linalg.norm(K))
        if "spectral" in measures:
            import scipy.linalg as sla

            ev = sla.eigvalsh(0.5 * (E + E.T))
            top = float(sla.eigvalsh(K, subset_by_index=[K.shape[0] - 1, K.shape[0] - 1])[0])
            out["spectral"] = float(np.max(np.abs(ev))) / top if top > 0 else math.nan
    return out


def nystrom_error_curve(data: KernelData, landmarks, *, samplings=("uniform", "leverage",
                        "approximate_leverage", "recursive"), n_repeats=5,
                        include_sklearn=True, measures=("trace",), max_points=2000,
                        random_state=0, progress=None) -> pd.DataFrame:
    """Relative Nyström errors against the number of landmarks, over repeated draws.

    For every m in ``landmarks``, sampling scheme and repeat: the relative trace error
    ``Tr(K - K_hat) / Tr K`` (Theorem 5.1) and, if asked in ``measures``, the relative
    Frobenius and spectral errors; plus scikit-learn's ``Nystroem`` (uniform, same Gaussian
    kernel) when installed, ``include_sklearn`` and the data are points. Leverage sampling
    uses the default ridge of :class:`~kmviz.kmc.nystrom.Nystroem` for each m. Data with
    more than ``max_points`` points is refused (the size guard).

    Returns a long frame: sampling, m, repeat, measure, error, time_s.
    """
    if data.n > max_points:
        raise ValueError(f"{data.n} points: the error curve is limited to {max_points} "
                         f"(n x n kernels per draw)")
    schemes = list(samplings)
    if include_sklearn and sklearn_available() and data.X is not None:
        schemes.append("sklearn")  # it takes feature vectors (a Gaussian kernel on them)
    ms = [int(m) for m in landmarks if 1 <= int(m) <= data.n]
    total = len(ms) * len(schemes) * int(n_repeats)
    rows, done = [], 0
    base = int(random_state)
    for m in ms:
        for scheme in schemes:
            for rep in range(int(n_repeats)):
                seed = base + 1000 * rep + m
                t0 = time.perf_counter()
                if scheme == "sklearn":
                    from sklearn.kernel_approximation import Nystroem as SkNystroem

                    sk = SkNystroem(kernel="rbf", gamma=data.gamma, n_components=m,
                                    random_state=seed)
                    Z = sk.fit_transform(data.X)
                else:
                    draw, _ = draw_landmarks(data, m, scheme, random_state=seed)
                    Z = nystrom_features(data.K, draw)
                dt = time.perf_counter() - t0
                for measure, err in _errors(data.K, Z, measures).items():
                    rows.append({"sampling": scheme, "m": m, "repeat": rep,
                                 "measure": measure, "error": err, "time_s": dt})
                done += 1
                if progress is not None:
                    progress(done, total, f"{SAMPLING_LABELS[scheme]}, m = {m}")
    return pd.DataFrame(rows, columns=["sampling", "m", "repeat", "measure", "error",
                                       "time_s"])


def error_bands(curve: pd.DataFrame) -> pd.DataFrame:
    """Median and 10 % / 90 % quantiles of the error per sampling, m and measure."""
    g = curve.groupby(["sampling", "measure", "m"], sort=False)["error"]
    out = pd.DataFrame({"median": g.median(), "low": g.quantile(0.1),
                        "high": g.quantile(0.9), "repeats": g.size()}).reset_index()
    return out


__all__ = [
    "CURVE_DEFAULT", "CURVE_METHODS", "CompletionView", "KernelData", "NYSTROM_SOURCES",
    "PARTS", "SAMPLING_LABELS", "alpha_for_landmarks", "alpha_grid", "approximate_scores", "block_estimate",
    "cold_start_refit", "completion_view", "default_alpha", "draw_landmarks", "error_bands",
    "error_table", "fraction_observed_curve", "known_matrix", "kron_alpha_grid",
    "kron_scores", "leverage_scores", "nystrom_error_curve", "nystrom_features",
    "points_data", "run_kernel_data", "sample_landmarks", "score_agreement",
    "singular_value_spectra", "sklearn_available", "sub_problem",
]
