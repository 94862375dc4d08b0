"""OCMF's observed-pair sums as block tasks for a :mod:`kmviz.parallel` backend.

A half-step of OCMF is ONE convex problem in W, solved by TRON in this process; what is
spread over the workers is what every TRON call costs O(|Omega+| k) for: the passes over the
observed pairs (:class:`kmviz.ocmf.allpairs.BlockTerms`). The varying side's rows are cut
into contiguous blocks; each block's pairs (CSR slice, labels, row weights) go to the
workers once per fit, in both orientations (users for the W-step, items for the H-step).

Per half-step the fixed side's factors O (after the eigenbasis rotation) are broadcast once;
per call each block gets its own rows of the iterate (E, N or dE) and returns its rows of
the result (per-row L+ terms, D+ O, the Hessian-vector rows, the Hessian diagonal rows).
Every one of these is a per-row quantity computed by the same kernel on the same numbers as
in process, and the client concatenates the blocks in order and sums L+'s per-row terms
with the same ``np.sum`` as :class:`BlockTerms`: a distributed fit equals the in-process fit
bit for bit (threads), or to the last bits of a float across processes (a kernel loaded
from Numba's cache). The k x k Gramian terms (L-, the all-pairs parts of gradient and
Hessian), the adjoint X^T and TRON itself stay in this process.

The per-pair state a call leaves for the next (scores, ``l+''`` at the gradient point, a
line search's direction scores) stays on the worker that computed it, keyed by fit, block
and point; calls name the points they need, and every call runs a block's task on the same
worker (``map_blocks(pin=True)``: never moved to an idle worker by the scheduler). A task
that does not find its state (its worker died and the block moved) answers :data:`LOST`,
and the client runs that block again with the state rebuilt from its own copy of the
points' embeddings first: TRON's result is unchanged; gradient descent's moved scores are
recomputed directly (equal to rounding). Round trips are batched: a value pass also returns
the gradient rows of its point, so an accepted step costs no further call for its gradient
(the Hessian diagonal is a call of its own unless ``DistPairs(diag=True)``), and a line
search evaluates :data:`LINE_SEARCH_BATCH` backtracking trials per call.
"""

from __future__ import annotations

import threading
import uuid

import numpy as np

from . import _kernels as K
from ..pairs import _f64, weighted_gram
from .allpairs import BlockTerms
from .losses import LOSS_CODES
from .solvers import GD_BETA

#: A task's answer when its block's state is not on its worker.
LOST = "lost"
#: Backtracking trials of gradient descent's line search per call.
LINE_SEARCH_BATCH = 4
#: Trace phases of the cluster calls (per block: ``t_w_pairs_compute_s`` ...).
PHASES = ("pairs_scatter", "pairs_compute", "pairs_gather")
#: Rough seconds per (pair x k) of one pass, only to size the blocks (kmviz.parallel plan).
SEC_PER_PAIR_K = 1.5e-9

_LOSS_NAMES = {code: name for name, code in LOSS_CODES.items()}
# worker side: ((fit key, side), block) -> {"step", "pts": {pid: {"scores", "d2"}}, "ls"}
_STATE: dict = {}
# worker side: fit key -> free per-pair work arrays of this process (see _take)
_FREE: dict = {}
_LOCK = threading.Lock()      # worker threads of one process share _STATE and _FREE
#: A per-pair work array is made this much longer than its first block needs, so that it
#: fits the blocks of the other side too (about as many pairs, never exactly).
SLACK = 1.1


def _take(fit, n):
    """A float64 work array of length ``n`` (contents undefined) for fit ``fit``: a free one
    of this process when one is long enough, else a new one. The in-process fit allocates
    its per-pair arrays once per half-step; a new array per call cost the workers a page
    fault per 4 kB of pairs (5M positives, k = 64, 3 iterations on local:1x2: 343k worker
    page faults before this pool, 289k with it; kmviz.parallel.WORKER_MALLOC_ENV took the
    rest down to 41k, about what the in-process fit makes)."""
    with _LOCK:
        free = _FREE.get(fit, [])
        fits = [t for t, a in enumerate(free) if a.shape[0] >= n]
        if fits:
            return free.pop(min(fits, key=lambda t: free[t].shape[0]))[:n]
    return np.empty(int(n * SLACK) + 1)[:n]


def _give(fit, *arrays):
    """Return work arrays from :func:`_take` (None skipped); the caller holds ``_LOCK``."""
    free = _FREE.setdefault(fit, [])
    for a in arrays:
        if a is not None:
            free.append(a if a.base is None else a.base)


def _drop_point(fit, pt):
    _give(fit, pt["scores"], pt["d2"])


def _drop_state(fit, st):
    for pt in st["pts"].values():
        _drop_point(fit, pt)
    st["pts"] = {}
    if st["ls"] is not None:
        _give(fit, st["ls"][2])
        st["ls"] = None


# ----------------------------------------------------------------------------- worker side
def _state(key, j, step):
    with _LOCK:
        st = _STATE.get((key, j))
        if st is None or st["step"] != step:
            # a new half-step of this fit: the earlier half-steps' state is dead, its work
            # arrays go back to the pool
            for old in [s for s, v in _STATE.items()
                        if s[0][0] == key[0] and v["step"] < step]:
                _drop_state(key[0], _STATE.pop(old))
            st = {"step": step, "pts": {}, "ls": None}
            _STATE[(key, j)] = st
        return st


def _clear_fit(fit_key):
    with _LOCK:
        for key in [s for s in _STATE if s[0][0] == fit_key]:
            _STATE.pop(key, None)
        _FREE.pop(fit_key, None)
    return True


def _op_value(st, blk, sh, pid, E, want_diag, diag_after):
    ptr, idx, y, w = blk
    n, k = ptr.shape[0] - 1, sh["O"].shape[1]
    fit = sh["key"][0]
    scores, d2, row = _take(fit, idx.shape[0]), _take(fit, idx.shape[0]), np.empty(n)
    G = np.empty((n, k), dtype=E.dtype)
    D = np.empty((n if want_diag else 0, k), dtype=E.dtype)
    K.observed_value_gradient(ptr, idx, y, E, sh["Ok"], w, sh["wo"], sh["a_bar"], sh["code"],
                              scores, d2, G, D, row, want_diag)
    if not want_diag:
        D = None
        if diag_after:   # what BlockTerms.hess_diag_rows computes once this point is accepted
            D = np.empty((n, k))
            K.observed_hess_diag(ptr, idx, sh["O"], d2, D)
    _set_point(st, fit, pid, scores, d2)
    return row, G, D


def _set_point(st, fit, pid, scores, d2):
    old = st["pts"].get(pid)
    st["pts"][pid] = {"scores": scores, "d2": d2}
    if old is not None:      # a point computed again (its state rebuilt)
        with _LOCK:
            _drop_point(fit, old)


def _op_grad(st, blk, sh, pid):
    ptr, idx, y, w = blk
    pt = st["pts"].get(pid)
    if pt is None:
        return LOST
    G = np.empty((ptr.shape[0] - 1, sh["O"].shape[1]))
    if pt["d2"] is None:
        pt["d2"] = _take(sh["key"][0], idx.shape[0])
    K.observed_gradient(ptr, idx, y, pt["scores"], sh["O"], w, sh["wo"], sh["a_bar"],
                        sh["code"], G, pt["d2"])
    return G


def _op_diag(st, blk, sh, pid):
    ptr, idx, _, _ = blk
    pt = st["pts"].get(pid)
    if pt is None or pt["d2"] is None:
        return LOST
    D = np.empty((ptr.shape[0] - 1, sh["O"].shape[1]))
    K.observed_hess_diag(ptr, idx, sh["O"], pt["d2"], D)
    return D


def _op_hvp(st, blk, sh, pid, N, base):
    ptr, idx, _, w = blk
    pt = st["pts"].get(pid)
    if pt is None or pt["d2"] is None:
        return LOST
    U = np.empty((ptr.shape[0] - 1, sh["O"].shape[1]), dtype=N.dtype)
    if isinstance(base, str):      # "oc": N O_c with O_c diagonal, made here as in process
        base = N * sh["oc_diag"]
    if base is None:
        K.observed_hvp(ptr, idx, N, sh["O"], pt["d2"], U)
    else:
        K.observed_hvp(ptr, idx, N, sh["Ok"], pt["d2"], U, base=base, base_w=2.0 * w)
    return U


def _op_line(st, blk, sh, lsid, pid, dE):
    ptr, idx, _, _ = blk
    if pid not in st["pts"]:
        return LOST
    fit = sh["key"][0]
    ds = _take(fit, idx.shape[0])
    K.pair_scores(ptr, idx, dE, sh["O"], ds)
    if st["ls"] is not None:
        with _LOCK:
            _give(fit, st["ls"][2])
    st["ls"] = (lsid, pid, ds)
    return None


def _op_shifted(st, blk, sh, lsid, alphas):
    ptr, idx, y, w = blk
    ls = st["ls"]
    if ls is None or ls[0] != lsid or ls[1] not in st["pts"]:
        return LOST
    s0 = st["pts"][ls[1]]["scores"]
    rows = np.empty((len(alphas), ptr.shape[0] - 1))
    for t, alpha in enumerate(alphas):
        K.observed_value_shifted(ptr, idx, y, s0, ls[2], float(alpha), w, sh["wo"],
                                 sh["a_bar"], sh["code"], rows[t])
    return rows


def _op_move(st, blk, sh, lsid, alpha, pid):
    ls = st["ls"]
    if ls is None or ls[0] != lsid or ls[1] not in st["pts"]:
        return LOST
    fit = sh["key"][0]
    scores = _take(fit, ls[2].shape[0])
    np.multiply(ls[2], alpha, out=scores)            # s0 + alpha ds, as in process
    np.add(st["pts"][ls[1]]["scores"], scores, out=scores)
    _set_point(st, fit, pid, scores, None)
    return None


def _op_grad_zero(st, blk, sh):
    from .losses import numpy_loss

    ptr, idx, y, w = blk
    rows = np.repeat(np.arange(ptr.shape[0] - 1), np.diff(ptr))
    _, d1, _ = numpy_loss(_LOSS_NAMES[sh["code"]], y, 0.0)
    coef = d1 + 2.0 * sh["a_bar"] * w[rows] * sh["wo"][idx]
    G = np.empty((ptr.shape[0] - 1, sh["O"].shape[1]))
    K.rows_combine(ptr, idx, np.ascontiguousarray(coef), sh["O"], G)
    return G


_OPS = {"value": _op_value, "grad": _op_grad, "diag": _op_diag, "hvp": _op_hvp,
        "line": _op_line, "shifted": _op_shifted, "move": _op_move,
        "grad_zero": _op_grad_zero}


def block_task(block, shared, extra):
    """Run a block's ops in order on this worker; their results, or :data:`LOST`."""
    j, ops, live = extra
    if shared["Ok"] is None:    # a float64 fit: O itself (sent once, not twice)
        shared = {**shared, "Ok": shared["O"]}
    st = _state(shared["key"], j, shared["step"])
    out = []
    for op, args in ops:
        r = _OPS[op](st, block, shared, *args)
        if isinstance(r, str):
            return LOST
        out.append(r)
    dead = [p for p in st["pts"] if p not in live]
    if dead:
        with _LOCK:
            for pid in dead:
                _drop_point(shared["key"][0], st["pts"].pop(pid))
    return out


# ----------------------------------------------------------------------------- client side
def _warm():
    """Compile the kernels the block tasks call, here, before they go to the workers: the
    family's warm-up, found through the registry (its module is a nested fit, which must
    not be imported by the fit code it warms)."""
    from .. import families

    families.get("ocmf").compile_kernels(cluster=True)


class _Side:
    """One orientation of the pairs on the workers (rows = the side that varies)."""

    def __init__(self, backend, ptr, idx, labels, w, wo, k):
        self.w, self.wo = w, wo
        self.n_rows, self.nnz = ptr.shape[0] - 1, int(idx.shape[0])
        weights = (np.diff(ptr) + 1.0) * max(k, 1)
        self.ranges = backend.plan(weights, SEC_PER_PAIR_K, min_blocks="workers")
        blocks = []
        for lo, hi in self.ranges:
            a, b = int(ptr[lo]), int(ptr[hi])
            blocks.append((np.ascontiguousarray(ptr[lo:hi + 1] - a),
                           np.ascontiguousarray(idx[a:b]), np.ascontiguousarray(labels[a:b]),
                           np.ascontiguousarray(w[lo:hi])))
        self.resident = backend.scatter_blocks(blocks, self.ranges)


class DistPairs:
    """A fit's observed pairs on the workers; :meth:`block` makes the half-steps' terms.

    ``diag``: every value pass also returns the Hessian diagonal rows of its point (TRON's
    preconditioner), saving a call per accepted step but making a pass the block's last
    point never needs; by default the diagonal is a call of its own, made when TRON asks
    (the cheaper choice once a pass costs more than a round trip)."""

    def __init__(self, backend, loss, k, *, diag=False):
        backend.warm("ocmf", _warm)
        self.backend, self.key = backend, uuid.uuid4().hex
        self.a_bar, self.code, self.diag = loss.a_bar, loss.code, bool(diag)
        p = loss.pairs
        self.sides = {
            "rows": _Side(backend, p.row_ptr, p.cols, p.labels, loss.a, loss.b, k),
            "cols": _Side(backend, p.col_ptr, p.col_rows, loss.labels_t, loss.b, loss.a, k)}
        self.step = 0

    def block(self, side, O, dtype=np.float64, timer=None) -> "DistBlockTerms":
        self.step += 1
        return DistBlockTerms(self, side, O, dtype, timer)

    def n_blocks(self, side) -> int:
        return len(self.sides[side].ranges)

    def close(self):
        """Free the per-pair state this fit left on the workers."""
        try:
            self.backend.client.run(_clear_fit, self.key)
        except Exception:  # noqa: BLE001 - a lost cluster holds nothing any more
            pass


class DistBlockTerms(BlockTerms):
    """:class:`BlockTerms` whose observed-pair passes run on the workers (module docstring).
    The k x k (Gramian) parts are inherited and run here."""

    def __init__(self, dist: DistPairs, side, O, dtype=np.float64, timer=None):
        sd = dist.sides[side]
        self.dist, self.sd, self.side_name = dist, sd, side
        self.timer = {} if timer is None else timer
        self.step = dist.step
        self.w, self.wo = _f64(sd.w), _f64(sd.wo)
        self.a_bar, self.code = float(dist.a_bar), int(dist.code)
        self.O = _f64(O)
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float64, np.float32):
            raise ValueError(f"dtype must be float64 or float32; got {self.dtype}")
        self._Ok = self.O if self.dtype == np.float64 else self.O.astype(self.dtype)
        self.k = self.O.shape[1]
        self.n_rows, self.nnz = sd.n_rows, sd.nnz
        self.Oc = weighted_gram(self.O, self.wo)
        self.oc_diag = None
        self.ov = self.O.T @ self.wo
        self._EOc = (None, None)
        self._w2 = None
        self._shared = None
        self._next = 0
        self._E = {}              # pid -> this process's embedding of a live point
        self._grad_pid = self._score_pid = None
        self._trial = None        # (pid, G, D) of the last value pass
        self._diag = None         # the gradient point's Hessian diagonal rows
        self._ls = None           # (lsid, s0 pid, dE)
        self._ls_cache = {}
        self._pending = []        # ops that go with the next call

    # -- plumbing ----------------------------------------------------------------------
    def rotate(self, V, eigenbasis=False) -> None:
        super().rotate(V, eigenbasis)
        self._shared = None

    def _new_id(self) -> int:
        self._next += 1
        return self._next

    def _broadcast(self):
        if self._shared is None:
            import time

            t0 = time.perf_counter()
            self._shared = self.dist.backend.broadcast(
                {"O": self.O, "Ok": None if self._Ok is self.O else self._Ok,
                 "wo": self.wo, "a_bar": self.a_bar, "oc_diag": self.oc_diag,
                 "code": self.code, "key": (self.dist.key, self.side_name),
                 "step": self.step})
            self.timer["pairs_scatter"] = self.timer.get("pairs_scatter", 0.0) + \
                time.perf_counter() - t0
        return self._shared

    def _live(self):
        return tuple(p for p in (self._grad_pid, self._score_pid) if p is not None)

    def _restore_ops(self, lo, hi):
        """Ops that rebuild a block's state from this process's copies of the points."""
        ops = [("value", (pid, np.ascontiguousarray(self._E[pid][lo:hi], dtype=self.dtype),
                          False, False)) for pid in self._live()]
        if self._ls is not None:
            lsid, pid, dE = self._ls
            ops.append(("line", (lsid, pid, _f64(dE[lo:hi]))))
        return ops

    def _call(self, make_ops):
        """Run ``make_ops(lo, hi)`` (plus pending ops) on every block; the results of
        ``make_ops``' ops per block, in block order."""
        ranges = self.sd.ranges
        pending, self._pending = self._pending, []
        live = self._live()
        block_ops = [[op(lo, hi) for op in pending] + make_ops(lo, hi) for lo, hi in ranges]
        extras = [(j, ops, live) for j, ops in enumerate(block_ops)]
        backend = self.dist.backend
        out = backend.map_blocks(block_task, self.sd.resident, self._broadcast(), extras,
                                 timer=self.timer, name="pairs", pin=True)
        lost = [j for j, r in enumerate(out) if isinstance(r, str)]
        from ..parallel import MAX_RETRIES, ClusterError, Resident

        for _ in range(MAX_RETRIES):
            if not lost:
                break
            self.timer["pairs_restored"] = self.timer.get("pairs_restored", 0) + len(lost)
            res = self.sd.resident
            sub = Resident([res.blocks[j] for j in lost], [res.futures[j] for j in lost],
                           [ranges[j] for j in lost])
            again = []
            for j in lost:
                restore = self._restore_ops(*ranges[j])
                again.append((j, restore + block_ops[j], live))
            redo = backend.map_blocks(block_task, sub, self._broadcast(), again,
                                      timer=self.timer, name="pairs", pin=True)
            res.homes = None        # placed again: the homes are asked for on the next call
            for t, j in enumerate(lost):
                res.futures[j] = sub.futures[t]
                if not isinstance(redo[t], str):
                    out[j] = redo[t][len(redo[t]) - len(block_ops[j]):]
            # a block that lost its state again while it was rebuilt (another worker lost):
            # rebuilt once more
            lost = [j for t, j in enumerate(lost) if isinstance(redo[t], str)]
        if lost:
            raise ClusterError(
                f"block {lost[0]} of the observed pairs lost its state on the Dask cluster "
                f"at {backend.address} on each of {MAX_RETRIES} rebuilds; the fit stopped "
                f"and nothing was saved. Check the workers and fit again, or fit without "
                f"--dask.")
        n_pending = len(pending)
        return [r[n_pending:] for r in out]

    def _forget(self):
        live = self._live()
        for pid in [p for p in self._E if p not in live]:
            del self._E[pid]

    # -- value -------------------------------------------------------------------------
    def l_plus(self, E, want_diag=True) -> float:
        pid = self._new_id()
        Ek = np.ascontiguousarray(E, dtype=self.dtype)
        self._E[pid] = E
        self._score_pid = pid
        diag_after = self.dist.diag and not want_diag
        parts = self._call(lambda lo, hi: [("value", (pid, Ek[lo:hi], bool(want_diag),
                                                      diag_after))])
        row = np.concatenate([r[0][0] for r in parts])
        G = np.concatenate([r[0][1] for r in parts])
        D = None if parts[0][0][2] is None else np.concatenate([r[0][2] for r in parts])
        self._trial = (pid, G, D)
        self._forget()
        return float(row.sum())

    def set_scores(self, scores):  # pragma: no cover - the arrays live on the workers
        raise NotImplementedError("on a cluster the pair scores move with move_scores")

    def pair_scores(self, E, out=None):  # pragma: no cover
        raise NotImplementedError("on a cluster the pair scores stay on the workers")

    # -- first order -------------------------------------------------------------------
    def gradient_observed(self, scores=None) -> np.ndarray:
        if scores is not None:  # pragma: no cover - BlockProblem never passes scores
            raise NotImplementedError("on a cluster the pair scores stay on the workers")
        if self._trial is not None:
            pid, G, D = self._trial
            self._trial = None
            self._grad_pid, self._diag = pid, D
            self._forget()
            return _f64(G) if self.dtype == np.float64 else G.astype(np.float64)
        pid = self._score_pid     # a line search moved the scores here
        parts = self._call(lambda lo, hi: [("grad", (pid,))])
        self._grad_pid, self._diag = pid, None
        self._forget()
        return np.concatenate([r[0] for r in parts])

    def gradient_at_zero(self) -> np.ndarray:
        parts = self._call(lambda lo, hi: [("grad_zero", ())])
        G = np.concatenate([r[0] for r in parts])
        G -= 2.0 * self.a_bar * (self.w[:, None] * self.ov[None, :])
        return G

    # -- second order ------------------------------------------------------------------
    def hvp_observed(self, N) -> np.ndarray:
        N = _f64(N)
        pid = self._grad_pid
        parts = self._call(lambda lo, hi: [("hvp", (pid, N[lo:hi], None))])
        return np.concatenate([r[0] for r in parts])

    def hvp(self, N) -> np.ndarray:
        N = _f64(N)
        pid = self._grad_pid
        Nk = np.ascontiguousarray(N, dtype=self.dtype)
        if self.oc_diag is not None and self.dtype == np.float64:
            # the dense part N O_c is a column scaling, the same multiplications on the
            # worker: half the bytes of the call (N alone, not N and N O_c)
            parts = self._call(lambda lo, hi: [("hvp", (pid, Nk[lo:hi], "oc"))])
        else:
            base = np.ascontiguousarray(self.times_oc(N), dtype=self.dtype)
            parts = self._call(lambda lo, hi: [("hvp", (pid, Nk[lo:hi], base[lo:hi]))])
        U = np.concatenate([r[0] for r in parts])
        return U if self.dtype == np.float64 else U.astype(np.float64)

    def hess_diag_rows(self) -> np.ndarray:
        R = np.multiply.outer(2.0 * self.w, np.diag(self.Oc))
        if self._diag is None:
            pid = self._grad_pid
            parts = self._call(lambda lo, hi: [("diag", (pid,))])
            self._diag = np.concatenate([r[0] for r in parts])
        R += self._diag
        return R

    # -- line search -------------------------------------------------------------------
    def line_start(self, dE):
        lsid = self._new_id()
        pid = self._score_pid
        dE = _f64(dE)
        self._ls = (lsid, pid, dE)
        self._ls_cache = {}
        self._pending.append(lambda lo, hi: ("line", (lsid, pid, dE[lo:hi])))
        return ("s0", lsid), ("ds", lsid)

    def l_plus_shifted(self, s0, ds, alpha) -> float:
        if not (isinstance(s0, tuple) and self._ls is not None and s0[1] == self._ls[0]):
            raise ValueError("l_plus_shifted takes the handles of the current line_start")
        alpha = float(alpha)
        if alpha not in self._ls_cache:
            alphas = [alpha]
            for _ in range(LINE_SEARCH_BATCH - 1):   # the next backtracking trials
                alphas.append(alphas[-1] * GD_BETA)
            lsid = self._ls[0]
            parts = self._call(lambda lo, hi: [("shifted", (lsid, alphas))])
            rows = np.concatenate([r[0] for r in parts], axis=1)
            for a, row in zip(alphas, rows):
                self._ls_cache[a] = float(row.sum())
        return self._ls_cache[alpha]

    def move_scores(self, s0, ds, alpha):
        lsid, pid0, dE = self._ls
        pid = self._new_id()
        self._E[pid] = self._E[pid0] + alpha * dE
        self._score_pid = pid
        self._trial = None
        self._pending.append(lambda lo, hi: ("move", (lsid, float(alpha), pid)))
