"""The kernels the Nyström page studies: point data sets with their Gaussian kernel, the
run's row or column kernel drawn by kernel PCA, and the run's two kernels (or a sample of
them) for the entry scores; each under a size guard."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..._validation import check_random_state
from .matrix import _labels, kernel_block


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
    from ..rkhs import gaussian_kernel

    return gaussian_kernel(X, X, gamma=gamma)


def points_data(source, *, gamma=None, random_state=0) -> KernelData:
    """Boston, digits or the mixture as points with their Gaussian kernel (``gamma``
    default ``1 / n_features``)."""
    groups, group_name, note = None, "", ""
    if source == "boston":
        from ..datasets import load_boston

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
        from ..synthetic import gaussian_mixture

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
    data.eigen()
    data.coords = kernel_pca2(K)
    return data


def kernel_pca2(K) -> np.ndarray:
    """The points' first two kernel principal components: the top two eigenpairs of the
    centred kernel ``H K H`` (``H = I - 11^T / n``), ``sqrt(sigma_k) q_k``. Centring drops
    what every point shares (an added all-ones kernel, a global term), which would otherwise
    be the first component, the same for every point (an axis whose ticks all read 1)."""
    K = np.asarray(K, dtype=np.float64)
    n = K.shape[0]
    if n == 0:
        return np.zeros((0, 2))
    row = K.mean(axis=1)
    Kc = K - row[:, None] - row[None, :] + row.mean()
    from scipy.linalg import eigh

    k = min(2, n)  # only the top two eigenpairs: a fraction of a full decomposition
    Kc = 0.5 * (Kc + Kc.T)
    sig, Q = eigh(Kc, subset_by_index=[n - k, n - 1])
    if sig.shape[0] < k:  # LAPACK's subset driver can return nothing on a degenerate
        sig, Q = np.linalg.eigh(Kc)  # spectrum (the centred identity): the full one
        sig, Q = sig[-k:], Q[:, -k:]
    top = np.argsort(sig)[::-1]
    coords = Q[:, top] * np.sqrt(np.clip(sig[top], 0.0, None))
    # a sign convention, so that two draws of the same kernel look alike
    signs = np.where(coords[np.argmax(np.abs(coords), axis=0), range(coords.shape[1])] < 0,
                     -1.0, 1.0)
    coords = coords * signs
    if coords.shape[1] < 2:
        coords = np.column_stack([coords, np.zeros((n, 2 - coords.shape[1]))])
    return coords


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


__all__ = ["KernelData", "KronSample", "NYSTROM_SOURCES", "kernel_pca2", "kron_sample",
           "points_data", "run_kernel_data", "sklearn_available"]
