"""Similarity learning's observed-pair sums as block tasks for a :mod:`kmviz.parallel` backend.

Every function value, gradient and Gauss-Newton product of the all-pairs objective
(:class:`kmviz.similarity.allpairs.AllPairsProblem`) costs O(|O| k) in three passes over
the observed pairs O and O((m + n) k^2) in k x k Gramians and tower passes over the m + n
rows. On a cluster the passes over O run as block tasks; everything else (towers, their
VJPs and JVPs, the Gramians, the dense (m + n) x k terms, the solvers) stays in this
process, as in :mod:`kmviz.ocmf._dist`.

O is cut by users into contiguous blocks (sized by :meth:`DaskBackend.plan`); each block's
pairs go to the workers once per fit (:meth:`DaskBackend.scatter_blocks`) in both
orders: row-major (its CSR slice) and, for the ``X^T P`` sums, column-major (a local CSC of
the same pairs). Per call the item side (Q; and H in a Gauss-Newton product) is broadcast
once and each block gets its own rows of P (and W); a block returns

- value: its rows of L+ (per-user sums) -- the client concatenates them and sums with the
  same ``np.sum`` as :func:`kmviz.similarity._kernels.pair_terms`: L+ is bit for bit;
- gradient: its rows of ``X Q`` (bit for bit) and its partial ``X^T P`` (n x k, the sum over
  its own pairs), which the client adds up in block order;
- Gauss-Newton: its rows of ``Z Q`` and its partial ``Z^T P``, likewise.

The partial sums make ``X^T P`` and ``Z^T P`` differ from the in-process column sums by
rounding (a fixed order: the result is deterministic for a given block count), so a
distributed fit equals the in-process fit to about 1e-12, not bit for bit.

The per-pair X and c of an evaluation point stay on the worker that computed them, in a
small cache per block (the :data:`CACHE_POINTS` most recent points). A task that does not
find them (its worker died and the block moved, or the point was evicted) computes them
again from the P rows and Q it was sent, with the same kernel on the same numbers: no call
ever has to be repeated for lost state, and the result is unchanged.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict

import numpy as np

from . import _kernels as K
from .allpairs import AllPairsProblem, _f64

#: Trace phases of the cluster calls (the cluster's split of ``t_observed_pairs_s``).
PHASES = ("pairs_scatter", "pairs_compute", "pairs_gather")
#: Rough seconds per (pair x k) of one pass, only to size the blocks (kmviz.parallel plan).
SEC_PER_PAIR_K = 2e-9
#: Evaluation points whose per-pair X, c a block keeps on its worker.
CACHE_POINTS = 3

# worker side: (fit key, block) -> OrderedDict point -> (X, c) of the block's pairs
_STATE: dict = {}
_LOCK = threading.Lock()      # worker threads of one process share _STATE


# ----------------------------------------------------------------------------- worker side
def _clear_fit(fit_key):
    with _LOCK:
        for key in [s for s in _STATE if s[0] == fit_key]:
            _STATE.pop(key, None)
    return True


def _terms(block, sh, j, pid, P):
    """The block's per-pair X and c at point ``pid`` (cached, else computed) and its L+
    rows when computed here (None from the cache)."""
    with _LOCK:
        cache = _STATE.get((sh["key"], j))
        hit = None if cache is None else cache.get(pid)
        if hit is not None:
            cache.move_to_end(pid)
            return hit, None
    ptr, cols, labels, a, Pt, b, Qt = block[:7]
    nnz = cols.shape[0]
    yhat, dplus, cplus = np.empty(nnz), np.empty(nnz), np.empty(nnz)
    rows = np.empty(ptr.shape[0] - 1)
    K._pair_terms_seq(ptr, cols, labels, P, sh["Q"], a, b, Pt, Qt, sh["omega"], sh["code"],
                      yhat, dplus, cplus, rows)
    with _LOCK:
        cache = _STATE.setdefault((sh["key"], j), OrderedDict())
        cache[pid] = (dplus, cplus)
        while len(cache) > CACHE_POINTS:
            cache.popitem(last=False)
    return (dplus, cplus), rows


def _transpose_partial(block, vals, P, n_cols):
    """``S^T P`` over this block's pairs only (n x k), S with values ``vals`` on them."""
    cptr, crows, cperm = block[7:10]
    out = np.empty((n_cols, P.shape[1]))
    K._csr_times_seq(cptr, crows, cperm, vals, P, out)
    return out


def block_task(block, shared, extra):
    """One call on one block (module docstring): ``extra = (j, op, pid, P rows[, W rows])``."""
    j, op, pid, P = extra[:4]
    (dplus, cplus), rows = _terms(block, shared, j, pid, P)
    if op == "value":
        return rows
    ptr, cols = block[0], block[1]
    Q, n = shared["Q"], shared["Q"].shape[0]
    if op == "grad":
        XQ = np.empty((ptr.shape[0] - 1, Q.shape[1]))
        K._csr_times_seq(ptr, cols, K._EMPTY, dplus, Q, XQ)
        return XQ, _transpose_partial(block, dplus, P, n)
    if op == "gn":
        W = extra[4]
        z = np.empty(cols.shape[0])
        ZQ = np.empty((ptr.shape[0] - 1, Q.shape[1]))
        K._gn_pairs_seq(ptr, cols, cplus, P, Q, W, shared["H"], z, ZQ)
        return ZQ, _transpose_partial(block, z, P, n)
    raise ValueError(f"unknown block op {op!r}")


# ----------------------------------------------------------------------------- client side
def _warm():
    from .warmup import compile_kernels

    compile_kernels()


def make_blocks(pairs, a, b, Pt, Qt, ranges):
    """The per-block data of O cut into the user ranges ``ranges`` (module docstring)."""
    b, Qt = _f64(b), _f64(Qt)
    blocks = []
    for lo, hi in ranges:
        s, e = int(pairs.row_ptr[lo]), int(pairs.row_ptr[hi])
        ptr = np.ascontiguousarray(pairs.row_ptr[lo:hi + 1] - s)
        cols = np.ascontiguousarray(pairs.cols[s:e])
        rows = np.repeat(np.arange(hi - lo, dtype=np.int64), np.diff(ptr))
        perm = np.lexsort((rows, cols)).astype(np.int64)
        cptr = np.zeros(pairs.n_cols + 1, dtype=np.int64)
        np.cumsum(np.bincount(cols, minlength=pairs.n_cols), out=cptr[1:])
        blocks.append((ptr, cols, np.ascontiguousarray(pairs.labels[s:e]), _f64(a[lo:hi]),
                       _f64(Pt[lo:hi]), b, Qt, cptr, np.ascontiguousarray(rows[perm]),
                       np.ascontiguousarray(perm)))
    return blocks


def _sum_in_order(parts):
    """The partial sums added in block order (deterministic)."""
    out = np.array(parts[0], dtype=np.float64, copy=True)
    for p in parts[1:]:
        out += p
    return out


class DistAllPairsProblem(AllPairsProblem):
    """:class:`AllPairsProblem` whose passes over O run on the workers (module docstring).

    Takes the backend first, then :class:`AllPairsProblem`'s arguments. Its blocks go to
    the workers here, once; :meth:`close` frees what the fit left on them. The seconds of
    the cluster calls are :data:`PHASES` (:meth:`take_phases`; all the counters of
    :meth:`DaskBackend.map_blocks` accumulate in :attr:`cluster_timer`)."""

    def __init__(self, backend, *args, **kwargs):
        super().__init__(*args, **kwargs)
        backend.warm("similarity", _warm)
        self.backend, self.key = backend, uuid.uuid4().hex
        t0 = time.perf_counter()
        weights = (self.pairs.row_counts() + 1.0) * max(int(getattr(self.fu, "k", 1)), 1)
        self.ranges = backend.plan(weights, SEC_PER_PAIR_K, min_blocks="workers")
        blocks = make_blocks(self.pairs, self.a, self.b, self.Pt, self.Qt, self.ranges)
        self.resident = backend.scatter_blocks(blocks, self.ranges)
        self.scatter_seconds = time.perf_counter() - t0
        self.cluster_timer = {}
        self.phases = {}
        self._next = 0
        self._pending_pid = None

    def _new_id(self):
        self._next += 1
        return self._next

    def _shared(self, **arrays):
        return {"key": self.key, "omega": self.omega, "code": self.code, **arrays}

    def _call(self, shared, extras):
        t = self.cluster_timer
        before = {name: t.get(name, 0.0) for name in PHASES}
        # shared goes to every worker once per call (timed as pairs_scatter)
        out = self.backend.map_blocks(block_task, self.resident, shared, extras, timer=t,
                                      name="pairs")
        for name in PHASES:
            self.phases[name] = self.phases.get(name, 0.0) + t.get(name, 0.0) - before[name]
        return out

    def take_phases(self) -> dict:
        """The seconds of :data:`PHASES` since the last call (then reset). Kept apart from
        ``timer``, which a stochastic solver swaps out around its objective evaluation."""
        out, self.phases = self.phases, {}
        return out

    def _rows(self, E):
        E = _f64(E)
        return [np.ascontiguousarray(E[lo:hi]) for lo, hi in self.ranges]

    # -- the hooks of AllPairsProblem ------------------------------------------------------
    def evaluate(self, theta):
        ev = super().evaluate(theta)
        ev.pairs_key, self._pending_pid = self._pending_pid, None
        return ev

    def _pair_terms(self, P, Q):
        pid = self._new_id()
        self._pending_pid = pid
        shared = self._shared(Q=_f64(Q))
        rows = self._call(shared, [(j, "value", pid, Pj)
                                   for j, Pj in enumerate(self._rows(P))])
        # the same array and the same np.sum as kmviz.similarity._kernels.pair_terms
        return None, None, None, float(np.concatenate(rows).sum())

    def _observed_gradient(self, ev):
        shared = self._shared(Q=ev.Q)
        out = self._call(shared, [(j, "grad", ev.pairs_key, Pj)
                                  for j, Pj in enumerate(self._rows(ev.P))])
        return np.concatenate([r[0] for r in out]), _sum_in_order([r[1] for r in out])

    def _observed_gn(self, ev, W, H):
        shared = self._shared(Q=ev.Q, H=_f64(H))
        out = self._call(shared, [(j, "gn", ev.pairs_key, Pj, Wj) for j, (Pj, Wj) in
                                  enumerate(zip(self._rows(ev.P), self._rows(W)))])
        return np.concatenate([r[0] for r in out]), _sum_in_order([r[1] for r in out])

    def close(self):
        """Free the per-pair state this fit left on the workers."""
        try:
            self.backend.client.run(_clear_fit, self.key)
        except Exception:  # noqa: BLE001 - a lost cluster holds nothing any more
            pass
