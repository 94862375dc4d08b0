"""The state a Kolmogorov-model fit works on (the template's ``_state``): what
:meth:`~kmviz.km.KolmogorovModel._fit_start` builds and every BCD iteration of the shared
loop (:class:`kmviz._base.IterativeEstimator`) advances, in process or on a cluster."""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_random_state
from ..exceptions import RunStoreError


@dataclass(eq=False)
class FitState:
    """One fit of :class:`~kmviz.km.KolmogorovModel`.

    The model (``theta`` n_users x D, ``psi`` n_items x D, the duals ``dual_u`` n_items x
    (D + 1) and the last iteration's ``u_prev``), what is known (``known_users``,
    ``known_items``, ``kitems`` = the known items' indices, ``all_items``), the scale
    (``r_min``, ``r_max``, ``mode``, ``mean_p`` of the targets, ``n_ratings``), the random
    stream ``rng`` and the Frank-Wolfe buffers. In process: the ratings by user and by item
    (CSR ``u_*``, ``i_*``) and the per-item statistics S, v, rho. On a cluster:
    ``partitions`` (partitioned input), ``transform`` (ratings -> targets) and ``dask`` (the
    blocks' layout, :mod:`kmviz.km._dist`). Chosen once, at the start: ``step`` (the
    half-steps, in process or on the cluster, :mod:`kmviz.km._step`), ``bqp`` (the BQP
    settings, checked: :func:`kmviz.km.solvers.batch_settings`) and ``bqp_chunk`` (items
    per BQP call of the in-process psi step).
    """

    prm: dict
    D: int
    rng: Any
    known_users: np.ndarray
    known_items: np.ndarray
    kitems: np.ndarray
    all_items: bool
    r_min: float
    r_max: float
    mode: str
    theta: np.ndarray
    psi: np.ndarray
    dual_u: np.ndarray
    mean_p: float
    n_ratings: int
    fw_gap: np.ndarray
    fw_iter: np.ndarray
    fw_obj: np.ndarray
    fw_code: int
    u_prev: np.ndarray | None = None
    users: np.ndarray | None = None
    items: np.ndarray | None = None
    p: np.ndarray | None = None
    u_ptr: np.ndarray | None = None
    u_idx: np.ndarray | None = None
    u_p: np.ndarray | None = None
    i_ptr: np.ndarray | None = None
    i_idx: np.ndarray | None = None
    i_p: np.ndarray | None = None
    S: np.ndarray | None = None
    v: np.ndarray | None = None
    rho: np.ndarray | None = None
    partitions: Any = None
    transform: Any = None
    dask: Any = None
    step: Any = None
    bqp: Any = None
    bqp_chunk: int = 0


def new_state(prm, known_users, known_items, r_min, r_max, mean_p, n_ratings, *,
              random_state, fw_code, **data) -> FitState:
    """The state at the start of a fit: theta drawn from a flat Dirichlet for the known
    users (uniform for the others), psi zero, the duals unset."""
    D = prm["D"]
    n_users, n_items = known_users.shape[0], known_items.shape[0]
    kitems = np.flatnonzero(known_items)
    rng = check_random_state(random_state)
    theta = np.full((n_users, D), 1.0 / D)
    theta[known_users] = rng.dirichlet(np.ones(D), int(known_users.sum()))
    return FitState(
        prm=prm, D=D, rng=rng, known_users=known_users, known_items=known_items,
        kitems=kitems, all_items=kitems.size == n_items, r_min=r_min, r_max=r_max,
        mode=prm["probability"], theta=theta, psi=np.zeros((n_items, D)),
        dual_u=np.full((n_items, D + 1), np.nan), mean_p=mean_p, n_ratings=int(n_ratings),
        fw_gap=np.empty(n_users), fw_iter=np.empty(n_users, dtype=np.int64),
        fw_obj=np.empty(n_users), fw_code=int(fw_code), **data)


def check_saved_shapes(arrays) -> None:
    """RunStoreError naming the first saved array whose shape disagrees with theta's and
    psi's (n_users x D, n_items x D): dual_u n_items x (D + 1), the known masks one entry
    per user / item, the scale three numbers. A damaged or hand-edited file stops here,
    not as an IndexError (or an out-of-bounds read in a kernel) later."""
    theta, psi = np.asarray(arrays["theta"]), np.asarray(arrays["psi"])
    if theta.ndim != 2 or psi.ndim != 2 or theta.shape[1] != psi.shape[1]:
        raise RunStoreError(f"saved arrays: theta {theta.shape} and psi {psi.shape} must be "
                            "n_users x D and n_items x D with the same D")
    (n_users, D), n_items = theta.shape, psi.shape[0]
    want = {"dual_u": (n_items, D + 1), "known_users": (n_users,),
            "known_items": (n_items,), "scale": (3,)}
    for name, shape in want.items():
        got = np.shape(arrays[name])
        if got != shape:
            raise RunStoreError(f"saved array {name!r} has shape {got}; expected {shape} "
                                f"for {n_users} users, {n_items} items and D = {D}")


def memory_parts(prm, ratings, chunk) -> dict:
    """``{"what": bytes}`` a fit with ``prm`` on ``ratings`` allocates (:mod:`kmviz._memory`);
    ``chunk(n_items)`` is the number of items of one BQP call (its draws are held at once)."""
    from .._memory import F8, data_sizes

    m, n, s = data_sizes(ratings)
    D = prm["D"]
    if getattr(ratings, "partitioned", False):   # S, v and the ratings on the workers
        return {f"theta, its copy and psi: ({m} users x 2 + {n} items) x D={D}":
                F8 * (2 * m + n) * D, f"duals: {n} items x (D+1)": F8 * n * (D + 1)}
    k = chunk(n)
    return {f"the per-item BQPs S, v, duals: {n} items x D={D} x D":
                F8 * n * (2 * D * D + 4 * D + 2),
            f"theta, its copy and psi: ({m} users x 2 + {n} items) x D={D}":
                F8 * (2 * m + n) * D,
            f"random draws: {k} items (a chunk) x n_rand={prm['n_rand']} x (D+1)":
                F8 * k * prm["n_rand"] * (D + 1),
            f"the {s} ratings, indexed by user and by item": 8 * F8 * s}


def partitioned_state(model, data, prm, validation):
    """``model``'s fit state from a :class:`kmviz.data.PartitionedRatings`; its rating blocks
    are built on the workers in the first step (:func:`kmviz.km._dist.setup`)."""
    from functools import partial

    from ..data.partitioned import NEEDS_CLUSTER
    from ..parallel import active_backend
    from ._scale import to_targets

    if active_backend() is None:
        raise TypeError(f"{type(model).__name__}.fit got a PartitionedRatings without a "
                        f"Dask backend: {NEEDS_CLUSTER}.")
    r_min, r_max = float(data.r_min), float(data.r_max)
    model._check_validation(validation, data.n_users, data.n_items, r_min, r_max)
    # mean_p and n_ratings are known once the blocks are built (duplicates merged)
    st = model._state(prm, data.user_counts() > 0, data.item_counts() > 0, r_min, r_max,
                      math.nan, 0)
    st.partitions = data
    st.transform = partial(to_targets, r_min=r_min, r_max=r_max, mode=prm["probability"],
                           threshold=prm["threshold"])
    return st
