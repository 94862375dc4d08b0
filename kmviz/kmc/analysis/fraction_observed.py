"""NMSE and time against the fraction of the matrix observed (the P_s curve), each method
refitted on nested shares of the run's training entries inside a size-guarded block."""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..._validation import check_random_state
from ...exceptions import ConvergenceWarning
from .matrix import _counts, _nmse, kernel_block


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
    from ...data.ratings import Ratings
    from ..estimator import KernelMatrixCompletion

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


__all__ = ["CURVE_DEFAULT", "CURVE_METHODS", "SubProblem", "fraction_observed_curve",
           "sub_problem"]
