"""What the app's gFM pages show, computed here (the pages only draw).

- Recovery on planted data (:func:`recovery_experiment`): one fit of Algorithm 1 with the
  paper's error quantities per batch, a geometric rate fitted to eps_t and the rate the
  theory's scaling predicts; :func:`phase_diagram`: the final error over a grid of batch
  sizes n / (k d) and ranks k (or condition numbers), size-guarded.
- A fitted run (:func:`interaction_table`, :func:`first_order_table`,
  :func:`held_out_predictions`): the strongest pairwise interactions with feature names,
  first-order weights, predictions against truth beside the mean predictor.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .estimator import GeneralizedFM
from .synthetic import PRESETS, make_gfm

#: Largest d for which the pages draw M and M* as dense heat maps.
HEATMAP_MAX_D = 120
#: Upper bound on the work of one phase diagram: sum over fits of instances x d x k. About
#: 20 s on a loaded 2-core box; the page refuses larger grids with this number in words.
PHASE_BUDGET = 1.2e9


@dataclass
class RecoveryResult:
    """One planted fit: the model, its truth, the per-batch table and the rates."""

    model: GeneralizedFM
    truth: object
    table: pd.DataFrame
    fitted_rate: float
    predicted_rate: float
    batch_size: int
    seconds: float


def recovery_settings(preset: str, *, d: int, k: int, ratio: float, noise: float,
                      condition: float) -> dict:
    """:func:`make_gfm` keyword arguments of a preset with the page's overrides (presets
    that fix k = 1 or w* = 0 keep them)."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}.")
    kw = dict(PRESETS[preset])
    kw.update(d=int(d), noise=float(noise), condition=float(condition))
    kw["k"] = 1 if preset == "phase_retrieval" else int(k)
    if kw["k"] > kw["d"]:
        raise ValueError(f"k = {kw['k']} must be at most d = {kw['d']}.")
    if kw["k"] == 1:
        kw["condition"] = 1.0
    return kw


def recovery_experiment(preset: str = "gfm", *, d: int = 50, k: int = 2, ratio: float = 20.0,
                        n_batches: int = 12, noise: float = 0.0, condition: float = 1.0,
                        random_state: int = 0, progress=None) -> RecoveryResult:
    """Fit Algorithm 1 (paper settings: no standardization, no intercept) on a fresh planted
    problem with batches of ``n = ratio * k * d`` instances.

    ``progress(done, total)`` is called after every batch. The table has one row per batch:
    ``t``, ``n_seen``, ``eps`` (= err_w + err_M, Frobenius), ``err_w``, ``err_M``,
    ``eps_spec`` (the paper's spectral eps_t), ``tan_theta``, ``contraction``, ``fitted``
    (the fitted geometric line) and ``predicted`` (eps_0 delta^t with delta = sqrt(k d / n)).
    """
    kw = recovery_settings(preset, d=d, k=k, ratio=ratio, noise=noise, condition=condition)
    n = max(int(round(ratio * kw["k"] * kw["d"])), kw["k"] + 1)
    problem = make_gfm(n=n * int(n_batches), random_state=random_state, **kw)
    model = GeneralizedFM(kw["k"], batch_size=n, n_batches=int(n_batches), standardize=False,
                          fit_intercept=False, solver="onepass", random_state=random_state)
    total = int(n_batches)

    def callback(row):
        if progress is not None:
            progress(int(row["iteration"]), total)

    start = time.perf_counter()
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a diverging fit is shown, not warned about
        model.fit(problem.X, problem.y, truth=problem, callback=callback)
    seconds = time.perf_counter() - start
    cols = ["t", "n_seen", "eps", "err_w", "err_M", "eps_spec", "err_M_spec", "rel_err",
            "tan_theta", "contraction"]
    table = model.trace_.to_frame()[cols].copy()
    rate, line = fit_geometric_rate(table["t"].to_numpy(), table["eps"].to_numpy())
    table["fitted"] = line
    delta = math.sqrt(kw["k"] * kw["d"] / n)
    table["predicted"] = float(table["eps"].iloc[0]) * delta ** table["t"].to_numpy(float)
    return RecoveryResult(model=model, truth=problem.truth, table=table, fitted_rate=rate,
                          predicted_rate=delta, batch_size=n, seconds=seconds)


def fit_geometric_rate(t, eps, *, floor_ratio: float = 0.9):
    """``(q, eps_hat)``: the rate q of ``eps_t ~ c q^t`` fitted by least squares on log eps
    over the steps that still contract (from t = 1 until the first step whose ratio exceeds
    ``floor_ratio``: the noise floor or machine precision), and the fitted line at every t."""
    t = np.asarray(t, dtype=float)
    eps = np.asarray(eps, dtype=float)
    ok = np.isfinite(eps) & (eps > 0)
    use = np.zeros_like(ok)
    for i in range(1, len(eps)):
        if not ok[i]:
            break
        use[i] = True
        if i >= 2 and eps[i] > floor_ratio * eps[i - 1]:
            use[i] = i < 3  # keep the first two steps whatever they do
            break
    if use.sum() < 2:
        return math.nan, np.full_like(eps, np.nan)
    slope, intercept = np.polyfit(t[use], np.log(eps[use]), 1)
    return float(math.exp(slope)), np.exp(intercept + slope * t)


def match_spectra(learned, true) -> tuple[np.ndarray, np.ndarray]:
    """Learned and true eigenvalues paired up, both padded with zeros to one length.

    Each learned eigenvalue is paired with the true one nearest to it (an optimal
    assignment minimizing the total ``|learned - true|``), not with the true one of the
    same rank by ``|value|``: with ``M*`` = diag(+1, -1), a learned (-1.01, +0.99) pairs -1.01
    with -1 and +0.99 with +1 (paired by rank, a learned -1 would stand beside a true +1 and
    the signs would look wrong). Pairs are ordered by the true eigenvalue's ``|value|``
    (largest first), positive before negative on ties.
    """
    from scipy.optimize import linear_sum_assignment

    learned = np.asarray(learned, dtype=float).ravel()
    true = np.asarray(true, dtype=float).ravel()
    m = max(learned.size, true.size)
    a = np.zeros(m)
    b = np.zeros(m)
    a[:learned.size] = learned
    b[:true.size] = true
    rows, cols = linear_sum_assignment(np.abs(a[:, None] - b[None, :]))
    pair_a, pair_b = a[rows], b[cols]
    order = np.lexsort((-pair_b, -np.abs(pair_b)))
    return pair_a[order], pair_b[order]


def spectra(result: RecoveryResult) -> pd.DataFrame:
    """Eigenvalues of the learned M (its 2k nonzero ones) and of M*, each learned one beside
    the true one it matches (:func:`match_spectra`), ordered by the true |value|."""
    vals, _ = result.model.spectrum()
    learned, true = match_spectra(vals, result.truth.lam)
    rows = []
    for i, (x, y) in enumerate(zip(learned, true)):
        rows.append({"index": i + 1, "matrix": "learned M", "eigenvalue": float(x)})
        rows.append({"index": i + 1, "matrix": "true M*", "eigenvalue": float(y)})
    return pd.DataFrame(rows)


def dense_pair(result: RecoveryResult):
    """``(M, M*)`` as dense d x d arrays for heat maps (None when d > HEATMAP_MAX_D)."""
    if result.truth.d > HEATMAP_MAX_D:
        return None
    return result.model.interaction_matrix(), result.truth.M


# ----------------------------------------------------------------------------- phase diagram
def phase_cost(ratios, ks, *, d: int, n_batches: int, seeds: int) -> float:
    """The work of :func:`phase_diagram` (instances x d x k summed over its fits)."""
    return float(sum(r * k * d * n_batches * d * k for r in ratios for k in ks) * seeds)


def phase_diagram(ratios, ks=(1, 2, 3), *, d: int = 30, n_batches: int = 10,
                  seeds: int = 2, conditions=None, preset: str = "gfm", tol: float = 1e-2,
                  progress=None) -> pd.DataFrame:
    """Final relative error of Algorithm 1 over batch size ``n / (k d)`` x rank ``k``.

    With ``conditions`` the second axis is the condition number sigma_1*/sigma_k* at the
    first of ``ks`` instead of the rank. Each cell averages ``seeds`` fresh problems; a fit
    that diverges counts with its last finite error. Columns: ``ratio``, ``k``,
    ``condition``, ``batch_size``, ``rel_err`` (median over seeds), ``success`` (share of
    seeds with rel_err < tol). ``progress(done, total)`` after every fit.

    Raises ValueError when the grid's work exceeds :data:`PHASE_BUDGET`.
    """
    ratios = [float(r) for r in ratios]
    second = [float(c) for c in conditions] if conditions is not None else None
    ks = [int(k) for k in ks]
    if not ratios or not (second or ks):
        raise ValueError("choose at least one batch size and one rank (or condition number).")
    grid_ks = [ks[0]] * len(second) if second is not None else ks
    cost = phase_cost(ratios, grid_ks, d=d, n_batches=n_batches, seeds=seeds)
    if cost > PHASE_BUDGET:
        raise ValueError(
            f"this grid needs about {cost / PHASE_BUDGET:.1f} times the work the page allows "
            f"(a minute or more); use fewer or smaller batch sizes, lower ranks, a smaller d "
            f"or fewer seeds.")
    cells = [(r, k, c) for r in ratios for k, c in (
        zip(grid_ks, second) if second is not None else ((k, None) for k in ks))]
    total = len(cells) * seeds
    done = 0
    rows = []
    for r, k, c in cells:
        errs = []
        for seed in range(seeds):
            kw = recovery_settings(preset, d=d, k=k, ratio=r, noise=0.0,
                                   condition=c if c is not None else 1.0)
            n = max(int(round(r * kw["k"] * d)), kw["k"] + 1)
            problem = make_gfm(n=n * n_batches, random_state=seed, **kw)
            model = GeneralizedFM(kw["k"], batch_size=n, n_batches=n_batches,
                                  standardize=False, fit_intercept=False, solver="onepass",
                                  random_state=seed)
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # small batches diverge: that is the point
                try:
                    model.fit(problem.X, problem.y, truth=problem)
                except (ArithmeticError, RuntimeError, ValueError):
                    pass  # diverged to inf: its trace holds the last finite row
            col = model.trace_.column("rel_err") if getattr(model, "trace_", None) else []
            finite = [e for e in col if np.isfinite(e)]
            errs.append(finite[-1] if finite else math.inf)
            done += 1
            if progress is not None:
                progress(done, total)
        errs = np.asarray(errs)
        rows.append({"ratio": r, "k": kw["k"], "condition": c if c is not None else 1.0,
                     "batch_size": n, "rel_err": float(np.median(errs)),
                     "success": float(np.mean(errs < tol))})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- fitted runs
def feature_names(model) -> list | None:
    """The model's feature names (the design's ``user=…``, ``item=…`` titles, side features)."""
    names = getattr(model, "feature_names_in_", None)
    return None if names is None else [str(x) for x in names]


def interaction_table(model, n: int = 20, *, include_diagonal: bool = False) -> pd.DataFrame:
    """The ``n`` largest ``|M_ab|`` with feature names; ``effect`` is the coefficient of
    ``x_a x_b`` in the prediction (``2 M_ab`` off the diagonal, ``M_aa`` on it)."""
    table = model.top_interactions(n, feature_names=feature_names(model),
                                   include_diagonal=include_diagonal)
    table["effect"] = np.where(table["a"] == table["b"], table["M_ab"], 2.0 * table["M_ab"])
    return table


def first_order_table(model, n: int = 20) -> pd.DataFrame:
    """The ``n`` largest first-order weights ``|w_a|`` with feature names."""
    w = np.asarray(model.coef_)
    names = feature_names(model) or [f"x{i}" for i in range(w.size)]
    top = np.argsort(-np.abs(w), kind="stable")[:n]
    return pd.DataFrame({"feature": [names[i] for i in top], "w": w[top]})


def interaction_spectrum(model) -> pd.DataFrame:
    """The nonzero eigenvalues of the learned M, by |value| (at most 2k)."""
    vals, _ = model.spectrum()
    return pd.DataFrame({"index": np.arange(1, vals.size + 1), "eigenvalue": vals,
                         "sign": np.where(vals >= 0, "positive", "negative")})


def held_out_predictions(model, split, *, max_points: int = 5000, random_state: int = 0):
    """``(frame, summary)`` on the test part (else validation): ``truth``, ``prediction``
    (at most ``max_points`` rows, sampled) and the RMSE of the model and of predicting the
    training mean on the whole part."""
    part_name = "test" if split.test is not None and split.test.n_ratings else "validation"
    part = getattr(split, part_name)
    if part is None or not part.n_ratings:
        return None, {}
    truth = np.asarray(part.values, dtype=float)
    pred = model.predict(part)
    mean = float(np.mean(np.asarray(split.train.values, dtype=float)))
    summary = {"part": part_name, "n": int(truth.size),
               "rmse": float(np.sqrt(np.mean((pred - truth) ** 2))),
               "mean_rmse": float(np.sqrt(np.mean((mean - truth) ** 2))), "mean": mean}
    idx = np.arange(truth.size)
    if truth.size > max_points:
        idx = np.sort(np.random.default_rng(random_state).choice(truth.size, max_points,
                                                                 replace=False))
    return pd.DataFrame({"truth": truth[idx], "prediction": pred[idx]}), summary
