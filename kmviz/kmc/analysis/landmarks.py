"""Landmarks as the Nyström samplers draw them, reusing the data's eigendecomposition,
and the relative Nyström errors against the number of landmarks over repeated draws."""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from ..._validation import check_random_state
from ..nystrom import (SAMPLINGS, approximate_ridge_leverage_scores, recursive_rls_sample,
                       sample_distinct)
from .kernel_data import KernelData, sklearn_available
from .leverage import _nystroem_alpha, default_alpha, leverage_scores


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


__all__ = ["SAMPLING_LABELS", "draw_landmarks", "error_bands", "nystrom_error_curve",
           "nystrom_features", "sample_landmarks"]
