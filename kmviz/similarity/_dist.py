"""Similarity learning's observed-pair sums as block tasks for a :mod:`kmviz.parallel` backend.

Every function value, gradient and Gauss-Newton product of the all-pairs objective
(:class:`kmviz.similarity.allpairs.AllPairsProblem`) costs O(|O| k) in three passes over
the observed pairs O and O((m + n) k^2) in k x k Gramians and tower passes over the m + n
rows. On a cluster the passes over O run as block tasks; everything else (towers, their
VJPs and JVPs, the Gramians, the dense (m + n) x k terms, the solvers) stays in this
process, as in :mod:`kmviz.ocmf._dist`.

O goes to the workers once per fit (:meth:`DaskBackend.scatter_blocks`) in both orders,
as OCMF's pairs do: cut by users into contiguous row-major blocks and by items into
contiguous column-major blocks (each sized by :meth:`DaskBackend.plan`). Per call the
current embeddings P and Q (and a Gauss-Newton product's W and H) are broadcast once; a
user block returns its rows of L+ (value), of ``X Q`` (gradient) or of ``Z Q``
(Gauss-Newton), an item block its rows of ``X^T P`` or ``Z^T P``. An item block computes
its pairs' X and c itself with the same row kernel, the two sides swapped (every score is
the same product sum: x y = y x), and its z by :func:`_gn_items_seq`, the user form's
expression over an item's pairs; every output row sums its pairs in the in-process order
(ascending items for a user's row, ascending users for an item's). The client concatenates the rows in block
order and sums L+'s per-user terms with the same ``np.sum`` as
:func:`kmviz.similarity._kernels.pair_terms`: a distributed fit equals the in-process fit
bit for bit. (With non-constant weights a, b an item block's ``omega b_j a_i`` may round
differently from ``omega a_i b_j``; the estimator uses a = b = 1.) The price is one more
pass for X and c per gradient point (the item blocks' own), the Gauss-Newton products
cost the same two passes as in process.

The per-pair X and c of an evaluation point stay on the worker that computed them, in a
small cache per block (the :data:`CACHE_POINTS` most recent points); every call runs a
block's task on the same worker (``map_blocks(pin=True)``). A task that does not
find them (its worker died and the block moved, or the point was evicted) computes them
again from the P and Q it was sent, with the same kernel on the same numbers: no call
ever has to be repeated for lost state, and the result is unchanged.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict

import numpy as np
from numba import njit

from .._jit import JIT
from . import _kernels as K
from .allpairs import AllPairsProblem, _f64

#: Trace phases of the cluster calls (the cluster's split of ``t_observed_pairs_s``).
PHASES = ("pairs_scatter", "pairs_compute", "pairs_gather")
#: Rough seconds per (pair x k) of one pass, only to size the blocks (kmviz.parallel plan).
SEC_PER_PAIR_K = 2e-9
#: Evaluation points whose per-pair X, c a block keeps on its worker.
CACHE_POINTS = 3

# worker side: (fit key, block) -> OrderedDict point -> (X, c, L+ rows) of the block's pairs
_STATE: dict = {}
_LOCK = threading.Lock()      # worker threads of one process share _STATE


# ----------------------------------------------------------------------------- worker side
def _clear_fit(fit_key):
    with _LOCK:
        for key in [s for s in _STATE if s[0] == fit_key]:
            _STATE.pop(key, None)
    return True


def _own_other(block, sh, lo, hi, A, B):
    """(this block's rows of its own side's array, the other side's whole array) among
    the user-side ``A`` and item-side ``B``."""
    own, other = (A, B) if block[0] == "u" else (B, A)
    return np.ascontiguousarray(own[lo:hi]), other


def _terms(block, sh, j, pid, lo, hi):
    """The block's per-pair X and c at point ``pid`` and its L+ rows: cached, else
    computed (and cached). A value call runs again on a worker that already ran it when
    the call is retried after another worker was lost: its rows come from the cache."""
    with _LOCK:
        cache = _STATE.get((sh["key"], j))
        hit = None if cache is None else cache.get(pid)
        if hit is not None:
            cache.move_to_end(pid)
            return hit[:2], hit[2]
    _, ptr, idx, labels, own_w, own_t, other_w, other_t = block
    E, F = _own_other(block, sh, lo, hi, sh["P"], sh["Q"])
    nnz = idx.shape[0]
    yhat, dplus, cplus = np.empty(nnz), np.empty(nnz), np.empty(nnz)
    rows = np.empty(ptr.shape[0] - 1)
    # an item block runs the row kernel with the sides swapped: every score, X and c is
    # the same product sum (x*y == y*x), so the same bits (the weight omega a_i b_j is
    # (omega b_j) a_i there: equal for the estimator's a = b = 1)
    K._pair_terms_seq(ptr, idx, labels, E, F, own_w, other_w, own_t, other_t, sh["omega"],
                      sh["code"], yhat, dplus, cplus, rows)
    with _LOCK:
        cache = _STATE.setdefault((sh["key"], j), OrderedDict())
        cache[pid] = (dplus, cplus, rows)
        while len(cache) > CACHE_POINTS:
            cache.popitem(last=False)
    return (dplus, cplus), rows


@njit(**JIT)
def _gn_items_seq(ptr, idx, cplus, Q, H, P, W, out):
    """An item block's rows of ``Z^T P`` (item j's pairs: users ``idx``), each z formed by
    the very expression of :func:`kmviz.similarity._kernels._gn_pairs_row` and each sum by
    that of ``_csr_times_row``, so that the compiler contracts them alike (bit for bit)."""
    k = P.shape[1]
    for j in range(ptr.shape[0] - 1):
        for f in range(k):
            out[j, f] = 0.0
        for e in range(ptr[j], ptr[j + 1]):
            i = idx[e]
            s = 0.0
            for f in range(k):
                s += W[i, f] * Q[j, f] + P[i, f] * H[j, f]
            ze = cplus[e] * s
            for f in range(k):
                out[j, f] += ze * P[i, f]


def block_task(block, shared, extra):
    """One call on one block (module docstring): ``extra = (j, op, pid, lo, hi)``."""
    j, op, pid, lo, hi = extra
    if op == "value" and block[0] == "v":
        return None                 # L+ comes from the user blocks
    (dplus, cplus), rows = _terms(block, shared, j, pid, lo, hi)
    if op == "value":
        return rows
    ptr, idx = block[1], block[2]
    E, F = _own_other(block, shared, lo, hi, shared["P"], shared["Q"])
    out = np.empty((ptr.shape[0] - 1, F.shape[1]))
    if op == "grad":                # X Q rows (users) or X^T P rows (items)
        K._csr_times_seq(ptr, idx, K._EMPTY, dplus, F, out)
        return out
    if op == "gn":                  # Z Q rows (users) or Z^T P rows (items)
        D, G = _own_other(block, shared, lo, hi, shared["W"], shared["H"])
        if block[0] == "u":
            K._gn_pairs_seq(ptr, idx, cplus, E, F, D, G, np.empty(idx.shape[0]), out)
        else:
            _gn_items_seq(ptr, idx, cplus, E, D, F, G, out)
        return out
    raise ValueError(f"unknown block op {op!r}")


# ----------------------------------------------------------------------------- client side
def _warm():
    """Compile the kernels the block tasks call, here, before they go to the workers: the
    family's warm-up, found through the registry (its module is a nested fit, which must
    not be imported by the fit code it warms)."""
    from .. import families

    families.get("similarity").compile_kernels(cluster=True)


def make_blocks(pairs, a, b, Pt, Qt, user_ranges, item_ranges):
    """The per-block data of O: user blocks (row-major slices) then item blocks
    (column-major slices), each ``(side, ptr, idx, labels, own weights, own imputation
    rows, other weights, other imputation)``."""
    a, b, Pt, Qt = _f64(a), _f64(b), _f64(Pt), _f64(Qt)
    labels_c = np.ascontiguousarray(pairs.labels[pairs.col_perm])
    blocks = []
    for side, ranges, ptr, idx, lab, w, t, ow, ot in (
            ("u", user_ranges, pairs.row_ptr, pairs.cols, pairs.labels, a, Pt, b, Qt),
            ("v", item_ranges, pairs.col_ptr, pairs.col_rows, labels_c, b, Qt, a, Pt)):
        for lo, hi in ranges:
            s, e = int(ptr[lo]), int(ptr[hi])
            blocks.append((side, np.ascontiguousarray(ptr[lo:hi + 1] - s),
                           np.ascontiguousarray(idx[s:e]), np.ascontiguousarray(lab[s:e]),
                           np.ascontiguousarray(w[lo:hi]), np.ascontiguousarray(t[lo:hi]),
                           ow, ot))
    return blocks


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
        k = max(int(getattr(self.fu, "k", 1)), 1)
        self.user_ranges = backend.plan((self.pairs.row_counts() + 1.0) * k, SEC_PER_PAIR_K,
                                        min_blocks="workers")
        self.item_ranges = backend.plan((self.pairs.col_counts() + 1.0) * k, SEC_PER_PAIR_K,
                                        min_blocks="workers")
        self.ranges = self.user_ranges + self.item_ranges
        self.n_user_blocks = len(self.user_ranges)
        blocks = make_blocks(self.pairs, self.a, self.b, self.Pt, self.Qt, self.user_ranges,
                             self.item_ranges)
        self.resident = backend.scatter_blocks(blocks, self.ranges)
        self.scatter_seconds = time.perf_counter() - t0
        self.cluster_timer = {}
        self.phases = {}
        self._next = 0
        self._pending_pid = None

    def _new_id(self):
        self._next += 1
        return self._next

    def _call(self, op, pid, **arrays):
        """``op`` on every block with ``arrays`` (P, Q[, W, H]) broadcast once; the user
        blocks' results and the item blocks' results, each in block order."""
        t = self.cluster_timer
        before = {name: t.get(name, 0.0) for name in PHASES}
        shared = {"key": self.key, "omega": self.omega, "code": self.code,
                  **{name: _f64(a) for name, a in arrays.items()}}
        extras = [(j, op, pid, lo, hi) for j, (lo, hi) in enumerate(self.ranges)]
        out = self.backend.map_blocks(block_task, self.resident, shared, extras, timer=t,
                                      name="pairs", pin=True)
        for name in PHASES:
            self.phases[name] = self.phases.get(name, 0.0) + t.get(name, 0.0) - before[name]
        return out[:self.n_user_blocks], out[self.n_user_blocks:]

    def take_phases(self) -> dict:
        """The seconds of :data:`PHASES` since the last call (then reset). Kept apart from
        ``timer``, which a stochastic solver swaps out around its objective evaluation."""
        out, self.phases = self.phases, {}
        return out

    # -- the hooks of AllPairsProblem ------------------------------------------------------
    def evaluate(self, theta):
        ev = super().evaluate(theta)
        ev.pairs_key, self._pending_pid = self._pending_pid, None
        return ev

    def _pair_terms(self, P, Q):
        pid = self._new_id()
        self._pending_pid = pid
        rows, _ = self._call("value", pid, P=P, Q=Q)
        # the same array and the same np.sum as kmviz.similarity._kernels.pair_terms
        return None, None, None, float(np.concatenate(rows).sum())

    def _observed_gradient(self, ev):
        users, items = self._call("grad", ev.pairs_key, P=ev.P, Q=ev.Q)
        return np.concatenate(users), np.concatenate(items)

    def _observed_gn(self, ev, W, H):
        users, items = self._call("gn", ev.pairs_key, P=ev.P, Q=ev.Q, W=W, H=H)
        return np.concatenate(users), np.concatenate(items)

    def close(self):
        """Free the per-pair state this fit left on the workers."""
        try:
            self.backend.client.run(_clear_fit, self.key)
        except Exception:  # noqa: BLE001 - a lost cluster holds nothing any more
            pass
