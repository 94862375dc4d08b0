"""KM's BCD half-steps as block tasks for a :mod:`kmviz.parallel` backend.

The psi half-step is one binary QP per item, the theta half-step one simplex QP per user
(Algorithm 4): independent rows, cut into contiguous blocks. The blocks' ratings (CSC by item,
CSR by user) go to the workers once per fit; each half-step broadcasts the other side's factor
(theta for the items, psi for the users). A block runs the same kernels on the same rows as the
in-process step, and the Gaussian draws of the randomization are the in-process stream cut at
the blocks' boundaries (each task gets its block's generator state), so theta and psi equal
the in-process fit's bit for bit; only the objective's sum runs in another order.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ._kernels import simplex as _simplex
from .solvers import _solve_bqp_batch_core, empty_result, join_results

# Rough seconds per unit of work on this box (a core): they only size the blocks so that a
# task runs about kmviz.parallel.TASK_SECONDS; a wrong guess changes speed, never results.
_SEC_PER_RATING_D2 = 2e-9     # building S_i, v_i: D^2 per rating
_SEC_PER_ITEM_D3 = 4e-8       # one item's dual solve: ~ a few EVDs of (D+1)^2
_SEC_PER_RATING_FW = 3e-8     # Frank-Wolfe: Q_u per rating, iterations per user


def _compressed_block(ptr, idx, p, lo, hi):
    a, b = int(ptr[lo]), int(ptr[hi])
    return (np.ascontiguousarray(ptr[lo:hi + 1] - a), np.ascontiguousarray(idx[a:b]),
            np.ascontiguousarray(p[a:b]))


def _warm():
    """Compile the kernels the block tasks call, here, before they go to the workers: the
    family's warm-up, found through the registry (its module is a nested fit, which must
    not be imported by the fit code it warms)."""
    from .. import families

    families.get("km").compile_kernels(cluster=True)


def _plan(backend, D, i_nnz, u_nnz):
    """Item and user row ranges: about kmviz.parallel.TASK_SECONDS of work per block."""
    item_w = i_nnz * D * D * _SEC_PER_RATING_D2 + (i_nnz > 0) * (D + 1) ** 3 * _SEC_PER_ITEM_D3
    user_w = u_nnz * D * _SEC_PER_RATING_FW
    return backend.plan(item_w, 1.0), backend.plan(user_w, 1.0)


def setup(backend, st):
    """Cut rows into blocks and put their ratings on the workers (once per fit)."""
    if st.partitions is not None:
        return build_from_partitions(backend, st)
    backend.warm("km", _warm)
    item_ranges, user_ranges = _plan(backend, st.D, np.diff(st.i_ptr).astype(np.float64),
                                     np.diff(st.u_ptr).astype(np.float64))
    items = backend.scatter_blocks(
        [_compressed_block(st.i_ptr, st.i_idx, st.i_p, lo, hi) for lo, hi in item_ranges],
        item_ranges)
    users = backend.scatter_blocks(
        [_compressed_block(st.u_ptr, st.u_idx, st.u_p, lo, hi) for lo, hi in user_ranges],
        user_ranges)
    st.dask = _layout(items, users, st.kitems, st.psi.shape[0])


def _layout(items, users, kitems, n_items):
    # known items per block: block j solves known items known_at[j]:known_at[j + 1]
    known_at = np.searchsorted(kitems, [lo for lo, _ in items.ranges] + [n_items])
    return SimpleNamespace(items=items, users=users, known_at=known_at)


def build_from_partitions(backend, st):
    """``setup`` for a :class:`kmviz.data.PartitionedRatings` (``st.partitions``): the blocks
    are built on the workers from the partitions, their rows never pass through this
    process. Sets ``st.dask``, and ``st.n_ratings`` and ``st.mean_p`` (after duplicates
    are merged)."""
    from ..parallel import Resident

    data = st.partitions
    backend.warm("km", _warm)
    u_nnz, i_nnz = data.user_counts(), data.item_counts()
    item_ranges, user_ranges = _plan(backend, st.D, i_nnz.astype(np.float64),
                                     u_nnz.astype(np.float64))
    built = data.build_blocks(backend, {"user": user_ranges, "item": item_ranges},
                              st.transform)
    # no copy here: a lost worker's blocks are computed again by the scheduler from their
    # partitions (their lineage)
    items = Resident([None] * len(item_ranges), built["item"], item_ranges)
    users = Resident([None] * len(user_ranges), built["user"], user_ranges)
    st.dask = _layout(items, users, st.kitems, i_nnz.shape[0])
    st.dask.maps = built["maps"]     # held for the fit: lost blocks are rebuilt from it
    st.n_ratings = int(built["rows"])
    st.mean_p = built["sum"] / built["rows"]


def item_block_task(block, shared, extra):
    """Build S_i, v_i and solve the binary QP (4) for the known items of one block; returns
    a :class:`kmviz.km.solvers.BatchResult` (the block's known items, in order)."""
    ptr, idx, p = block
    theta, cfg, mu = shared
    psi_prev, u_prev, draw = extra
    n, D = ptr.shape[0] - 1, theta.shape[1]
    S, v, rho = np.empty((n, D, D)), np.empty((n, D)), np.empty(n)
    _simplex.build_item_stats(ptr, idx, p, theta, S, v, rho)
    known = np.diff(ptr) > 0
    if not known.all():
        S, v = S[known], v[known]
    if S.shape[0] == 0:
        return empty_result(D)
    if mu > 0.0:
        v = v - 0.5 * mu
    xi = None
    if draw is not None:
        name, state = draw
        bit_gen = getattr(np.random, name)()
        bit_gen.state = state
        xi = np.random.Generator(bit_gen).standard_normal((S.shape[0], cfg.n_rand, D + 1))
    # the settings were checked at the fit's start and S is symmetric bit for bit (built by
    # build_item_stats, as in process): the unchecked core, as the in-process step
    return _solve_bqp_batch_core(np.ascontiguousarray(S), np.ascontiguousarray(v),
                                 np.ascontiguousarray(psi_prev, dtype=np.float64), u_prev,
                                 cfg, xi)


def psi_step(backend, st, psi_k, timer):
    """The psi half-step on the backend; returns the :class:`kmviz.km.solvers.BatchResult`
    of the known items, the type the in-process step returns."""
    prm = st.prm
    n_rand, n = st.bqp.n_rand, st.D + 1
    extras = []
    for j in range(len(st.dask.items)):
        a, b = int(st.dask.known_at[j]), int(st.dask.known_at[j + 1])
        draw = None
        if st.bqp.draws and b > a:
            # the in-process step draws xi for all known items at once; the same stream cut
            # at the blocks' boundaries (checked equal in tests/test_parallel.py)
            draw = (type(st.rng.bit_generator).__name__, st.rng.bit_generator.state)
            st.rng.standard_normal((b - a, n_rand, n))
        u_prev = None if st.u_prev is None else np.ascontiguousarray(st.u_prev[a:b])
        extras.append((np.ascontiguousarray(psi_k[a:b]), u_prev, draw))
    parts = backend.map_blocks(item_block_task, st.dask.items, (st.theta, st.bqp,
                                                                 prm["mu_psi"]),
                               extras, timer=timer, name="items")
    return join_results(parts)


def user_block_task(block, shared, extra):
    """Frank-Wolfe for the users of one block, then the block's squared error."""
    ptr, idx, p = block
    psi, lam, tol, max_iter, variant = shared
    theta = np.array(extra, dtype=np.float64)
    n = ptr.shape[0] - 1
    gap, n_iter, obj = np.empty(n), np.empty(n, dtype=np.int64), np.empty(n)
    _simplex.fw_users(ptr, idx, p, psi, lam, tol, max_iter, variant, theta, gap, n_iter, obj)
    users = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    pred = np.empty(p.shape[0])
    _simplex.predict_pairs(users, idx, theta, psi, pred)
    return theta, gap, n_iter, obj, float(np.sum((pred - p) ** 2))


def theta_step(backend, st, lam, tol, max_iter, timer):
    """The theta half-step on the backend (updates st.theta and the FW outputs); returns the
    sum of squared errors at the new (theta, psi)."""
    ranges = st.dask.users.ranges
    extras = [st.theta[lo:hi] for lo, hi in ranges]
    parts = backend.map_blocks(user_block_task, st.dask.users,
                               (np.ascontiguousarray(st.psi), lam, tol, max_iter, st.fw_code),
                               extras, timer=timer, name="users")
    sse = 0.0
    for (lo, hi), (theta, gap, n_iter, obj, part) in zip(ranges, parts):
        st.theta[lo:hi] = theta
        st.fw_gap[lo:hi], st.fw_iter[lo:hi], st.fw_obj[lo:hi] = gap, n_iter, obj
        sse += part
    return sse
