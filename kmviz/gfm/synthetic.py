"""Planted gFM data following the paper's assumptions (digest, Part B5).

``x ~ N(0, I_d)``, ``y = x^T w* + x^T M* x + noise * N(0, 1)`` with
``M* = U* diag(lambda*) U*^T``: U* a random orthonormal d x k matrix, singular values
``linspace(1, 1/condition, k)`` times ``m_norm`` (so ``||M*||_2 = m_norm`` and
sigma_1/sigma_k = condition), signs from ``signs``, and ``w*`` a random direction of norm
``w_norm``. An optional ``tail`` adds eigenvalues on further orthonormal directions (the
approximately low-rank M* of Sec. 4.1).

Presets (:data:`PRESETS`) name the paper's special cases: ``"gfm"`` (the dashboard default),
``"matrix_sensing"`` (symmetric rank-one matrix sensing, w* = 0), ``"phase_retrieval"``
(k = 1, M* = u u^T, w* = 0), ``"indefinite"`` (mixed-sign eigenvalues, which an FM's PSD
factorization cannot represent) and ``"psd"``.

Every batch of :class:`GFMStream` is generated chunk by chunk from its own seed, so a
stream of any length (and a batch larger than memory) can be read again without storing it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .operators import ChunkedBatch
from .recovery import Truth

SIGN_PATTERNS = ("alternating", "positive", "negative")

#: name -> make_gfm keyword arguments.
PRESETS = {
    "gfm": dict(d=50, k=2, condition=1.0, signs="alternating", w_norm=1.0, noise=0.0),
    "matrix_sensing": dict(d=50, k=2, condition=1.0, signs="alternating", w_norm=0.0,
                           noise=0.0),
    "phase_retrieval": dict(d=50, k=1, condition=1.0, signs="positive", w_norm=0.0,
                            noise=0.0),
    "indefinite": dict(d=50, k=3, condition=2.0, signs="alternating", w_norm=1.0, noise=0.0),
    "psd": dict(d=50, k=2, condition=1.0, signs="positive", w_norm=1.0, noise=0.0),
}

PRESET_LABELS = {
    "gfm": "gFM: w* and an indefinite rank-k M*",
    "matrix_sensing": "symmetric rank-one matrix sensing (w* = 0)",
    "phase_retrieval": "phase retrieval (k = 1, M* = u u^T, w* = 0)",
    "indefinite": "indefinite M* (mixed-sign eigenvalues, condition 2)",
    "psd": "PSD M* (what a classic FM can represent)",
}


def planted_truth(d: int, k: int, *, condition: float = 1.0, signs="alternating",
                  w_norm: float = 1.0, m_norm: float = 1.0, tail=None,
                  random_state=None) -> Truth:
    """A random :class:`Truth` (see the module docstring)."""
    rng = np.random.default_rng(random_state)
    d, k = int(d), int(k)
    if not 1 <= k <= d:
        raise ValueError(f"k={k} must be between 1 and d={d}.")
    if condition < 1.0:
        raise ValueError(f"condition={condition} must be >= 1 (sigma_1 / sigma_k).")
    tail = np.zeros(0) if tail is None else np.atleast_1d(np.asarray(tail, dtype=np.float64))
    if k + tail.size > d:
        raise ValueError(f"k + len(tail) = {k + tail.size} directions do not fit in d={d}.")
    sigma = np.linspace(1.0, 1.0 / condition, k) * m_norm
    if isinstance(signs, str):
        if signs not in SIGN_PATTERNS:
            raise ValueError(f"signs must be one of {SIGN_PATTERNS} or an array of +-1; got "
                             f"{signs!r}.")
        s = {"alternating": (-1.0) ** np.arange(k), "positive": np.ones(k),
             "negative": -np.ones(k)}[signs]
    else:
        s = np.sign(np.asarray(signs, dtype=np.float64).ravel())
        if s.shape != (k,) or np.any(s == 0):
            raise ValueError(f"signs must hold k={k} nonzero values; got {signs!r}.")
    Q = np.linalg.qr(rng.standard_normal((d, k + tail.size)))[0]
    lam = np.concatenate([s * sigma, tail])
    w = rng.standard_normal(d)
    w *= w_norm / np.linalg.norm(w)
    order = np.argsort(-np.abs(lam), kind="stable")
    return Truth(w=w, U=np.ascontiguousarray(Q[:, order]), lam=lam[order])


def sample(truth: Truth, n: int, *, noise: float = 0.0, random_state=None):
    """``(X, y)``: n rows x ~ N(0, I_d) and their labels under ``truth`` (eq. (1))."""
    rng = np.random.default_rng(random_state)
    X = rng.standard_normal((int(n), truth.d))
    return X, _labels(truth, X, noise, rng)


def _labels(truth, X, noise, rng):
    P = X @ truth.U
    y = X @ truth.w + (P * P) @ truth.lam + truth.intercept
    if noise:
        y = y + noise * rng.standard_normal(X.shape[0])
    return y


@dataclass(frozen=True)
class GFMProblem:
    """Synthetic data with its ground truth; unpacks as ``X, y, w_star, M_star``.

    Attributes
    ----------
    X : ndarray (n, d)
    y : ndarray (n,)
    truth : Truth
        w*, U*, lambda* (M* = U* diag(lambda*) U*^T).
    noise : float
    name : str
    """

    X: np.ndarray
    y: np.ndarray
    truth: Truth
    noise: float = 0.0
    name: str = "gfm"

    @property
    def w_star(self) -> np.ndarray:
        return self.truth.w

    @property
    def M_star(self) -> np.ndarray:
        """Dense M* (d x d; built on access)."""
        return self.truth.M

    def __iter__(self):
        yield self.X
        yield self.y
        yield self.w_star
        yield self.M_star

    def batches(self, batch_size: int):
        """Consecutive ``(X_b, y_b)`` views of ``batch_size`` rows (a short tail dropped)."""
        n = self.X.shape[0] // int(batch_size) * int(batch_size)
        return [(self.X[i:i + batch_size], self.y[i:i + batch_size])
                for i in range(0, n, int(batch_size))]


def make_gfm(d: int = 50, k: int = 2, n: int = 2000, *, condition: float = 1.0,
             signs="alternating", w_norm: float = 1.0, m_norm: float = 1.0,
             noise: float = 0.0, tail=None, random_state=None, name: str = "gfm") -> GFMProblem:
    """Planted gFM data: the digest's generator (Part B5).

    Parameters
    ----------
    d, k : int
        Dimension and rank of M*.
    n : int
        Number of instances (all batches together: a fit with n_batches = T + 1 batches
        of size b needs n = b (T + 1)).
    condition : float
        sigma_1* / sigma_k* (>= 1).
    signs : {"alternating", "positive", "negative"} or array of +-1
        Signs of lambda*: alternating gives an indefinite M*, positive a PSD one.
    w_norm, m_norm : float
        ``||w*||`` and ``||M*||_2``.
    noise : float
        Standard deviation of the Gaussian label noise xi.
    tail : array-like, optional
        Extra eigenvalues on further directions (approximately low-rank M*).
    random_state : None, int or Generator

    Returns
    -------
    GFMProblem
        ``X, y, w_star, M_star = make_gfm(...)`` unpacks the arrays; ``.truth`` holds the
        factors for the matrix-free error metrics.
    """
    rng = np.random.default_rng(random_state)
    truth = planted_truth(d, k, condition=condition, signs=signs, w_norm=w_norm,
                          m_norm=m_norm, tail=tail, random_state=rng)
    X, y = sample(truth, n, noise=noise, random_state=rng)
    return GFMProblem(X=X, y=y, truth=truth, noise=float(noise), name=name)


def make_preset(name: str, n: int = 2000, *, random_state=None, **overrides) -> GFMProblem:
    """A :data:`PRESETS` problem, with keyword overrides (for example ``d=200``)."""
    if name not in PRESETS:
        raise ValueError(f"unknown gFM preset {name!r}; choose one of {', '.join(PRESETS)}.")
    kw = {**PRESETS[name], **overrides}
    if name in ("matrix_sensing", "phase_retrieval") and kw.get("w_norm", 0.0) != 0.0:
        raise ValueError(f"preset {name!r} has w* = 0 by definition; use 'gfm' for w* != 0.")
    if name == "phase_retrieval" and kw.get("k", 1) != 1:
        raise ValueError("preset 'phase_retrieval' has k = 1 by definition.")
    return make_gfm(n=n, random_state=random_state, name=name, **kw)


class GFMStream:
    """A stream of fresh batches from a planted truth, generated chunk by chunk.

    ``stream[t]`` is a :class:`ChunkedBatch` of ``batch_size`` rows; its chunks are drawn
    from the seed ``(seed, t, chunk)`` each time they are read, so the batch is never stored
    and reading it twice gives the same rows. ``generation_seconds`` accumulates the time
    spent drawing (benchmarks subtract it from a fit's wall time).

    Parameters
    ----------
    truth : Truth
    batch_size, n_batches : int
    chunk_rows : int
        Rows drawn at a time (memory: chunk_rows x d floats).
    noise : float
    seed : int
    """

    def __init__(self, truth: Truth, batch_size: int, n_batches: int, *,
                 chunk_rows: int = 2048, noise: float = 0.0, seed: int = 0):
        self.truth = truth
        self.batch_size = int(batch_size)
        self.n_batches = int(n_batches)
        self.chunk_rows = max(1, int(chunk_rows))
        self.noise = float(noise)
        self.seed = int(seed)
        self.generation_seconds = 0.0

    def __len__(self) -> int:
        return self.n_batches

    def _chunk(self, t, c, rows):
        start = time.perf_counter()
        rng = np.random.default_rng([self.seed, t, c])
        X = rng.standard_normal((rows, self.truth.d))
        y = _labels(self.truth, X, self.noise, rng)
        self.generation_seconds += time.perf_counter() - start
        return X, y

    def _chunks(self, t):
        n_chunks = -(-self.batch_size // self.chunk_rows)
        for c in range(n_chunks):
            rows = min(self.chunk_rows, self.batch_size - c * self.chunk_rows)
            yield self._chunk(t, c, rows)

    def __getitem__(self, t: int) -> ChunkedBatch:
        if not 0 <= t < self.n_batches:
            raise IndexError(f"batch {t} out of range (0..{self.n_batches - 1})")
        return ChunkedBatch(lambda: self._chunks(t), n_rows=self.batch_size)

    def __iter__(self):
        return (self[t] for t in range(self.n_batches))

    def arrays(self, t: int):
        """Batch t as in-memory ``(X, y)`` (the same rows as ``stream[t]``)."""
        parts = list(self._chunks(t))
        return np.vstack([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
