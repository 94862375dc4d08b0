"""Embedding towers: ``P = f(theta; X)`` with the two derivative passes the all-pairs methods need.

The extreme-similarity paper (Yuan, Li, Quan, Lin, KDD 2021, Sec. 3 and 5) touches a tower
through three operations only:

- ``forward(theta, X, cache=None) -> P`` (rows x k): the embeddings of every row of X;
  when ``cache`` is a dict the tower keeps there what its derivative passes reuse (the
  activations, for an MLP);
- ``vjp(theta, X, cache, M) -> g`` (n_params,): the tensor-matrix product ``<J, M>`` of eq.
  (22), ``d/dtheta sum_i f_i(theta)^T M_i``, one reverse-mode pass (the gradient (27) and
  the second half of a Gauss-Newton product (40));
- ``jvp(theta, X, cache, d) -> dP`` (rows x k): ``(df_i/dtheta) d`` for every row, eq. (35),
  one forward-mode pass.

plus ``n_params``, ``k`` and ``init(rng) -> theta``. Any object with these members is a
tower (:func:`check_tower`); the built-in ones are

- :class:`IdentityTower`: an embedding table, ``P = Theta`` (one-hot ids: plain MF);
- :class:`LinearTower`: ``P = X Theta`` on dense or CSR inputs (MF with side features, the
  linear case of OCMF);
- :class:`MLPTower`: dense layers with ELU / tanh / ReLU between them and a linear output
  layer of width k (the paper's 256-256-k ELU network is ``"mlp:256,256"``).

Inputs that mix ids and features are one CSR matrix ``[one-hot ids | features]``
(:func:`tower_input`); the first layer of a linear or MLP tower then holds one row per id,
an embedding table beside the feature weights.

Every parameter vector is flat float64; layers are stored in order, each weight matrix
row-major (``d_in x d_out``) followed by its bias.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

ACTIVATIONS = ("elu", "tanh", "relu")


# ----------------------------------------------------------------------------- inputs
def as_input(X):
    """A tower input as float64 CSR (sparse) or C-contiguous ndarray (dense)."""
    if X is None:
        return None
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        X.sort_indices()
        return X
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"a tower input must be 2-D (rows x features); got shape {X.shape}.")
    return X


def tower_input(n_rows, features=None, ids=True):
    """``[I | F]`` as CSR: one-hot id columns then the feature columns.

    ``ids``: True (a column per row), False (none) or an int array of the rows that get
    an id column (the others, cold rows, are described by their features alone)."""
    blocks = []
    if ids is True:
        blocks.append(sp.identity(n_rows, format="csr", dtype=np.float64))
    elif ids is not False and ids is not None:
        rows = np.asarray(ids)
        if rows.ndim != 1 or (rows.size and not np.issubdtype(rows.dtype, np.integer)):
            raise ValueError("ids must be True, False or a 1-D array of row indices; got "
                             f"shape {rows.shape}, dtype {rows.dtype}.")
        rows = rows.astype(np.int64)
        if rows.size and (rows.min() < 0 or rows.max() >= n_rows):
            raise ValueError(f"ids are row indices in 0..{n_rows - 1}; got "
                             f"{int(rows.min())}..{int(rows.max())}.")
        blocks.append(sp.csr_matrix((np.ones(rows.size), (rows, np.arange(rows.size))),
                                    shape=(n_rows, rows.size)))
    if features is not None:
        F = features if sp.issparse(features) else np.asarray(features, dtype=np.float64)
        if F.ndim != 2:
            raise ValueError(f"features must be 2-D (rows x features); got shape {F.shape}.")
        if F.shape[0] != n_rows:
            raise ValueError(f"features have {F.shape[0]} rows for {n_rows} entities.")
        blocks.append(sp.csr_matrix(F, dtype=np.float64))
    if not blocks:
        raise ValueError("a tower input needs id columns or features.")
    return as_input(sp.hstack(blocks, format="csr"))


def take_rows(X, index):
    """The input of the rows ``index``: ids for an identity tower's None input, the rows of
    a dense or CSR matrix otherwise."""
    index = np.asarray(index, dtype=np.int64)
    return index if X is None else X[index]


_KIND = {"mlp": "MLP"}  # a tower kind in messages


def _theta(tower, theta, what="theta"):
    """``theta`` as a float64 vector of the tower's ``n_params`` entries, or a ValueError
    saying how long it must be."""
    arr = np.asarray(theta, dtype=np.float64)
    if arr.ndim != 1 or arr.size != tower.n_params:
        kind = _KIND.get(tower.kind, tower.kind)
        raise ValueError(f"{what} of this {kind} tower must be a vector of {tower.n_params} "
                         f"numbers (its n_params); got shape {arr.shape}.")
    return arr


def _input(tower, X):
    """A 2-D input (dense or CSR) with the tower's ``d_in`` columns, or a ValueError."""
    shape, kind = getattr(X, "shape", None), _KIND.get(tower.kind, tower.kind)
    if X is None or shape is None or len(shape) != 2:
        got = "none" if X is None else f"shape {shape if shape is not None else type(X)}"
        raise ValueError(f"this {kind} tower takes a 2-D input (rows x {tower.d_in} "
                         f"columns); got {got}.")
    if shape[1] != tower.d_in:
        raise ValueError(f"this {kind} tower takes {tower.d_in} input columns; got "
                         f"{shape[1]}.")
    return X


def _matmul(X, W):
    out = X @ W
    return np.ascontiguousarray(out)


def _rmatmul(X, M):
    """``X^T M`` for dense or CSR X."""
    if sp.issparse(X):
        return np.ascontiguousarray((X.T @ M))
    return X.T @ M


# ----------------------------------------------------------------------------- activations
def activate(name, Z):
    if name == "elu":
        return np.where(Z > 0, Z, np.expm1(np.minimum(Z, 0.0)))
    if name == "tanh":
        return np.tanh(Z)
    if name == "relu":
        return np.maximum(Z, 0.0)
    raise ValueError(f"unknown activation {name!r}; choose one of {', '.join(ACTIVATIONS)}.")


def activate_derivative(name, Z, A):
    """sigma'(Z) given Z and A = sigma(Z)."""
    if name == "elu":
        return np.where(Z > 0, 1.0, A + 1.0)
    if name == "tanh":
        return 1.0 - A * A
    if name == "relu":
        return (Z > 0).astype(np.float64)
    raise ValueError(f"unknown activation {name!r}; choose one of {', '.join(ACTIVATIONS)}.")


# ----------------------------------------------------------------------------- towers
class IdentityTower:
    """An embedding table: ``P = Theta`` (n_rows x k). Its input is None (every id, in
    order) or an int array of ids (the rows of a subsample, for the stochastic solvers).

    ``vjp`` is ``vec(M)`` (scattered onto the given ids) and ``jvp`` the rows of ``d``: with
    two identity towers the model is plain matrix factorization and the all-pairs
    Gauss-Newton method is a joint Newton method over both factor matrices.
    """

    kind = "identity"

    def __init__(self, n_rows, k, init_scale=0.1):
        self.n_rows, self.k, self.init_scale = int(n_rows), int(k), float(init_scale)

    @property
    def n_params(self):
        return self.n_rows * self.k

    def init(self, rng):
        return rng.normal(0.0, self.init_scale, size=self.n_params)

    def forward(self, theta, X=None, cache=None):
        table = _theta(self, theta).reshape(self.n_rows, self.k)
        return table if X is None else table[self._ids(X)]

    def _ids(self, X):
        ids = np.asarray(X)
        if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError("an identity tower's input is None (every row) or a 1-D array of "
                             f"row ids; got {type(X).__name__} of shape {ids.shape}.")
        if ids.size and (ids.min() < 0 or ids.max() >= self.n_rows):
            raise ValueError(f"row ids of this identity tower lie in 0..{self.n_rows - 1}; "
                             f"got {int(ids.min())}..{int(ids.max())}.")
        return ids

    def vjp(self, theta, X, cache, M):
        M = np.asarray(M, dtype=np.float64)
        if X is None:
            return np.ascontiguousarray(M).ravel()
        out = np.zeros((self.n_rows, self.k))
        np.add.at(out, X, M)
        return out.ravel()

    def jvp(self, theta, X, cache, d):
        table = _theta(self, d, "d").reshape(self.n_rows, self.k)
        return table if X is None else table[self._ids(X)]

    def layers(self, theta):
        return [("table", theta.reshape(self.n_rows, self.k), None)]


class LinearTower:
    """``P = X Theta`` (Theta: d_in x k), X dense or CSR; ``vjp = X^T M``, ``jvp = X D``."""

    kind = "linear"

    def __init__(self, d_in, k, init_scale=0.1):
        self.d_in, self.k, self.init_scale = int(d_in), int(k), float(init_scale)

    @property
    def n_params(self):
        return self.d_in * self.k

    def init(self, rng):
        return rng.normal(0.0, self.init_scale, size=self.n_params)

    def _check(self, X):
        return _input(self, X)

    def forward(self, theta, X, cache=None):
        self._check(X)
        return _matmul(X, _theta(self, theta).reshape(self.d_in, self.k))

    def vjp(self, theta, X, cache, M):
        return _rmatmul(X, M).ravel()

    def jvp(self, theta, X, cache, d):
        return _matmul(_input(self, X), _theta(self, d, "d").reshape(self.d_in, self.k))

    def layers(self, theta):
        return [("linear", theta.reshape(self.d_in, self.k), None)]


class MLPTower:
    """A fully connected network ``d_in -> hidden[0] -> ... -> k`` with biases, an
    activation after every hidden layer and none after the output (the paper's Fig. 1).

    Initialization: weights uniform in ``+-gain sqrt(6 / (fan_in + fan_out))`` (Glorot) and
    zero biases, the usual choice for such towers (the paper does not state its own).
    """

    kind = "mlp"

    def __init__(self, d_in, hidden, k, activation="elu", gain=1.0):
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; choose one of "
                             f"{', '.join(ACTIVATIONS)}.")
        self.d_in, self.k = int(d_in), int(k)
        self.hidden = tuple(int(h) for h in hidden)
        if any(h < 1 for h in self.hidden):
            raise ValueError(f"hidden layer sizes must be positive; got {self.hidden}.")
        self.activation = activation
        self.gain = float(gain)
        sizes = (self.d_in,) + self.hidden + (self.k,)
        self.shapes = list(zip(sizes[:-1], sizes[1:]))
        self.offsets = []
        off = 0
        for a, b in self.shapes:
            self.offsets.append((off, off + a * b, off + a * b + b))
            off += a * b + b
        self._n = off

    @property
    def n_params(self):
        return self._n

    def init(self, rng):
        theta = np.zeros(self._n)
        for (a, b), (w0, w1, _) in zip(self.shapes, self.offsets):
            limit = self.gain * np.sqrt(6.0 / (a + b))
            theta[w0:w1] = rng.uniform(-limit, limit, size=a * b)
        return theta

    def unpack(self, theta):
        """[(W, b), ...] views into theta."""
        return [(theta[w0:w1].reshape(a, b), theta[w1:b1])
                for (a, b), (w0, w1, b1) in zip(self.shapes, self.offsets)]

    def layers(self, theta):
        n = len(self.shapes)
        return [(f"layer {l + 1}" + ("" if l == n - 1 else f" + {self.activation}"), W, bias)
                for l, (W, bias) in enumerate(self.unpack(theta))]

    def forward(self, theta, X, cache=None):
        _input(self, X)
        params = self.unpack(_theta(self, theta))
        A = X
        Zs, As = [], []
        for l, (W, b) in enumerate(params):
            Z = _matmul(A, W) + b
            if l < len(params) - 1:
                A = activate(self.activation, Z)
                Zs.append(Z)
                As.append(A)
            else:
                A = Z
        if cache is not None:
            cache["Z"], cache["A"] = Zs, As
            cache["dA"] = [activate_derivative(self.activation, Z, Ah)
                           for Z, Ah in zip(Zs, As)]
        return A

    def _cache(self, theta, X, cache):
        if cache is None or "A" not in cache:
            cache = {} if cache is None else cache
            self.forward(theta, X, cache)
        return cache

    def vjp(self, theta, X, cache, M):
        cache = self._cache(theta, X, cache)
        params = self.unpack(theta)
        grad = np.empty(self._n)
        delta = np.asarray(M, dtype=np.float64)
        for l in range(len(params) - 1, -1, -1):
            W, _ = params[l]
            w0, w1, b1 = self.offsets[l]
            inp = X if l == 0 else cache["A"][l - 1]
            grad[w0:w1] = _rmatmul(inp, delta).ravel()
            grad[w1:b1] = delta.sum(axis=0)
            if l > 0:
                delta = (delta @ W.T) * cache["dA"][l - 1]
        return grad

    def jvp(self, theta, X, cache, d):
        cache = self._cache(theta, X, cache)
        params = self.unpack(theta)
        dparams = self.unpack(_theta(self, d, "d"))
        dZ = None
        for l, ((W, _), (dW, db)) in enumerate(zip(params, dparams)):
            inp = X if l == 0 else cache["A"][l - 1]
            out = _matmul(inp, dW) + db
            if l > 0:
                out += dA @ W
            dZ = out
            if l < len(params) - 1:
                dA = cache["dA"][l] * dZ
        return dZ


# ----------------------------------------------------------------------------- presets
def parse_tower(spec):
    """``"identity"``, ``"linear"`` or ``"mlp:256,256"`` -> (kind, hidden sizes)."""
    if not isinstance(spec, str):
        raise ValueError(f"a tower spec is a string; got {spec!r}.")
    text = spec.strip().lower()
    if text in ("identity", "linear"):
        return text, ()
    if text == "mlp":
        return "mlp", (256, 256)
    if text.startswith("mlp:"):
        try:
            hidden = tuple(int(h) for h in text[4:].split(",") if h.strip())
        except ValueError:
            hidden = ()
        if hidden and all(h >= 1 for h in hidden):
            return "mlp", hidden
    raise ValueError(f"unknown tower {spec!r}: use 'identity', 'linear' or "
                     "'mlp:h1,h2,...' (hidden layer sizes, e.g. 'mlp:256,256').")


def check_tower(tower, k, what="tower"):
    """A user-supplied tower must have the members of the protocol and output width k."""
    missing = [name for name in ("forward", "vjp", "jvp", "init", "n_params")
               if not hasattr(tower, name)]
    if missing:
        raise ValueError(f"{what} {type(tower).__name__} lacks {', '.join(missing)} (a tower "
                         "has forward, vjp, jvp, init and n_params).")
    if getattr(tower, "k", k) != k:
        raise ValueError(f"{what} outputs k={tower.k} columns but the model has k={k}.")
    return tower


def make_tower(spec, n_rows, d_in, k, activation="elu", init_scale=0.1):
    """A built-in tower from a spec string (or a tower object, checked and returned)."""
    if not isinstance(spec, str):
        return check_tower(spec, k)
    kind, hidden = parse_tower(spec)
    if kind == "identity":
        return IdentityTower(n_rows, k, init_scale)
    if kind == "linear":
        return LinearTower(d_in, k, init_scale)
    return MLPTower(d_in, hidden, k, activation)
