"""MovieLens-shaped ratings made with NumPy only, shared by the KM, Dask and app
benchmarks: the releases' shapes, Zipf-Mandelbrot item popularity and power-law user
activity; and the reset of a process's peak memory that the memory columns read."""

from __future__ import annotations

import numpy as np

#: (label, n_ratings, n_users, n_items): the MovieLens releases' shapes.
SHAPES = {
    "100k": (100_000, 943, 1_682),
    "1m": (1_000_209, 6_040, 3_706),
    "10m": (10_000_054, 69_878, 10_677),
    "25m": (25_000_095, 162_000, 62_000),
}
def _activity(n_ratings, n_users, n_items, rng):
    """Ratings per user: a floor of 20 plus a power-law share of the rest, capped at half
    the items (the excess of capped users handed on to the others)."""
    floor = min(20, n_items // 2)
    cap = n_items // 2
    w = np.arange(1, n_users + 1, dtype=np.float64) ** -0.8
    n_u = np.full(n_users, floor, dtype=np.int64)
    left = n_ratings - floor * n_users
    free = np.ones(n_users, bool)
    for _ in range(50):
        if left <= 0 or not free.any():
            break
        add = np.floor(left * w * free / (w * free).sum()).astype(np.int64)
        add[np.flatnonzero(free)[: left - int(add.sum())]] += 1  # rounding, to the first
        n_u += add
        over = np.maximum(n_u - cap, 0)
        n_u -= over
        free &= n_u < cap
        left = int(over.sum())
    rng.shuffle(n_u)
    return n_u


def movielens_like(n_ratings, n_users, n_items, seed, chunk_users=8192):
    """(users, items, values) arrays of ``n_ratings`` distinct pairs (module docstring)."""
    rng = np.random.default_rng(seed)
    n_u = _activity(n_ratings, n_users, n_items, rng)
    pop = 1.0 / (np.arange(n_items, dtype=np.float64) + 20.0)
    cdf = np.cumsum(pop / pop.sum())
    cdf[-1] = 1.0
    item_of_rank = rng.permutation(n_items)  # popularity rank -> item index
    rank_of_item = np.argsort(item_of_rank)
    b_user = rng.normal(0.0, 0.45, n_users)
    # popular items are rated a little higher, as in MovieLens
    b_item = rng.normal(0.0, 0.35, n_items) + 0.25 * (cdf[rank_of_item] < 0.5)
    keys_out, vals_out = [], []
    for lo in range(0, n_users, chunk_users):
        hi = min(lo + chunk_users, n_users)
        want = n_u[lo:hi]
        keys = np.zeros(0, np.int64)
        need = want.copy()
        # by popularity, with replacement, repeated pairs dropped, the shortfall drawn again;
        # after 4 rounds the few users still short (heavy users, where the rare items are
        # what is left) get uniform draws, which converge since n_u <= n_items / 2
        for rnd in range(500):
            if not need.any():
                break
            u = np.repeat(np.arange(lo, hi, dtype=np.int64), need)
            if rnd < 4:
                ranks = np.searchsorted(cdf, rng.random(u.size), side="right")
                it = item_of_rank[np.minimum(ranks, n_items - 1)]
            else:
                it = rng.integers(0, n_items, u.size)
            keys = np.concatenate([keys, u * n_items + it])
            keys.sort()  # then drop repeated pairs (np.union1d's hash path is ~15x slower)
            keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
            need = want - np.bincount(keys // n_items - lo, minlength=hi - lo)
        u, i = np.divmod(keys, n_items)
        r = 3.5 + b_user[u] + b_item[i] + rng.normal(0.0, 0.9, keys.size)
        keys_out.append(keys)
        vals_out.append(np.clip(np.rint(r), 1.0, 5.0))
    keys = np.concatenate(keys_out)
    del keys_out
    users, items = np.divmod(keys, n_items)
    del keys
    return users, items, np.concatenate(vals_out)


def _reset_peak():
    """Reset this process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False
