"""Ratings that stay in their Parquet partitions: scanned on the workers, never loaded here.

:func:`scan_parquet` reads a partitioned Parquet dataset (user, item, value columns) in one
pass of tasks, one per partition, on the workers of the active
:func:`kmviz.parallel_backend` (else Dask's threads in this process). Each task checks its
rows as :func:`~kmviz.data.read_parquet` does (numeric, finite values, the rating scale,
0/1 values for implicit data) and returns its distinct user and item ids with their
counts and its value range; this process merges them into the sorted distinct ids (the
index space :meth:`Ratings.from_arrays` would build from the same rows) and the per-id
counts. It holds O(users + items) numbers, never a rating.

The :class:`PartitionedRatings` handle this returns is what a fit that supports it (on a
Dask cluster) takes in place of a :class:`~kmviz.data.Ratings`. The fit cuts the users and
the items into blocks from the counts and calls :meth:`PartitionedRatings.build_blocks`:
each partition's task maps its ids to indices (the id maps are put on every worker once,
never into the task graph) and splits its rows by destination block; one task per block
then concatenates its pieces and sorts them into the block's compressed rows (by user and
by item), which stay on the workers. Repeated (user, item) pairs are found there, where all
of a user's rows meet, and handled by the ``duplicates`` rule as :meth:`Ratings.from_arrays`
does (the same error, or the same mean / first / last value).

Without a cluster, :meth:`PartitionedRatings.load` reads the data into a Ratings
(:func:`~kmviz.data.read_parquet`); a fit handed the handle without a cluster says so.
"""

from __future__ import annotations

import operator

import numpy as np
import pandas as pd

from ..exceptions import DataValueError, DuplicateRatingsError, EmptyDataError
from ._ids import _show
from .parquet_ids import check_id_reports, id_report
from .parquet import (LOCAL_SCHEDULER, _open, _scheduler, not_binary_error, not_finite_error,
                      numeric_values)
from ._from_arrays import DUPLICATE_POLICIES
from ._scale import MAX_ABS_VALUE, _scale_tolerance, rating_scale

#: What a fit handed a PartitionedRatings without a cluster is told.
NEEDS_CLUSTER = ("its ratings stay in their Parquet partitions and are put into blocks on "
                 "the workers of a Dask cluster: fit inside `with kmviz.parallel_backend("
                 "'dask', client=...)`, or call .load() to read them into a Ratings in this "
                 "process")


# ----------------------------------------------------------------------------- per partition
def _rows(df, spec):
    """One partition's user ids, item ids and float64 values (implicit data's 0 rows
    dropped), and its check counts. The values of a non-numeric column become NaN."""
    users, items = df[spec["user_col"]], df[spec["item_col"]]
    vc = spec["value_col"]
    if vc is None:
        return users, items, np.ones(len(df)), {}
    raw = df[vc]
    values = numeric_values(raw)
    checks = {}
    bad = ~np.isfinite(values)
    if bad.any():
        checks["bad"] = (int(bad.sum()), str(raw.iloc[int(np.flatnonzero(bad)[0])]))
    if spec["implicit_filter"]:
        off = (values != 0) & (values != 1) & ~bad
        if off.any():
            checks["off"] = float(values[np.flatnonzero(off)[0]])
        keep = values == 1
        users, items, values = users[keep], items[keep], np.ones(int(keep.sum()))
    return users, items, values, checks


def _ids_of(col, text):
    if col.isna().any():
        return None
    return col.astype(str).to_numpy(dtype=object) if text else col.to_numpy(dtype=np.int64)


def _scan_partition(df, spec):
    """Checks, value range, distinct ids and their counts of one partition."""
    users, items, values, out = _rows(df, spec)
    out["rows"] = int(values.shape[0])
    finite = values[np.isfinite(values)]
    if finite.size:
        out["min"], out["max"] = float(finite.min()), float(finite.max())
        huge = np.abs(finite) > MAX_ABS_VALUE
        if huge.any():
            out["huge"] = (int(huge.sum()), float(finite[np.flatnonzero(huge)[0]]))
    out["ids"] = {side: id_report(col) for side, col in (("user", users), ("item", items))}
    for side, col in (("user", users), ("item", items)):
        if out["ids"][side]["over"] is not None or \
                (out["ids"][side]["kind"] == "text") != spec[f"{side}_text"]:
            continue  # refused by _check_scan: not cast
        ids = _ids_of(col, spec[f"{side}_text"])
        if ids is None:
            out[f"{side}_missing"] = True
            continue
        out[side] = np.unique(ids, return_counts=True) if ids.size else (ids, np.zeros(0, int))
    return out


def _scale_partition(df, spec, lo, hi, tol):
    """Values beyond the scale (count, first) and within rounding of it, of one partition."""
    _, _, values, _ = _rows(df, spec)
    far = (values < lo - tol) | (values > hi + tol)
    first = float(values[np.flatnonzero(far)[0]]) if far.any() else None
    return int(far.sum()), first, int(((values < lo) | (values > hi)).sum())


def _index(col, ids, text):
    """Indices of ``col``'s ids in the sorted distinct ``ids``."""
    if text:
        return pd.Index(ids).get_indexer(col.astype(str)).astype(np.int64)
    return np.searchsorted(ids, col.to_numpy(dtype=np.int64)).astype(np.int64)


def _route(df, maps, spec, side, starts):
    """One partition's rows, as indices, cut by destination block of ``side``: a list with
    one (major offset in the block, minor index, value) triple per block."""
    users, items, values, _ = _rows(df, spec)
    u = _index(users, maps[0], spec["user_text"])
    i = _index(items, maps[1], spec["item_text"])
    if spec["clip"]:
        values = np.clip(values, spec["lo"], spec["hi"])
    major, minor = (u, i) if side == "user" else (i, u)
    block = np.searchsorted(starts, major, side="right") - 1
    order = np.argsort(block, kind="stable")
    cuts = np.searchsorted(block[order], np.arange(1, starts.shape[0]))
    small = np.int32 if max(spec["n_users"], spec["n_items"]) < 2 ** 31 else np.int64
    return [((major[o] - starts[b]).astype(small), minor[o].astype(small), values[o])
            for b, o in enumerate(np.split(order, cuts))]


def _assemble(pieces, n_rows, duplicates, transform):
    """One block from its pieces: compressed rows (ptr, idx, data) sorted by major then
    minor, as :func:`numpy.lexsort` of the whole data would give, with repeated pairs
    handled by ``duplicates``; and a small summary (rows, sum of data, repeats)."""
    # the pieces' compact indices (int32 below 2**31 rows) until the output
    major = np.concatenate([p[0] for p in pieces])
    minor = np.concatenate([p[1] for p in pieces])
    values = np.concatenate([p[2] for p in pieces])
    del pieces
    order = np.lexsort((minor, major))     # stable: repeats stay in the data's row order
    major, minor, values = major[order], minor[order], values[order]
    del order
    info = {"repeats": 0, "first": None}
    same = (major[1:] == major[:-1]) & (minor[1:] == minor[:-1])
    if same.any():
        dup = np.flatnonzero(same)
        info["repeats"] = int(dup.size)
        info["first"] = (int(major[dup[0] + 1]), int(minor[dup[0] + 1]))
        if duplicates != "error":
            starts = np.flatnonzero(np.concatenate(([True], ~same)))
            if duplicates == "mean":
                counts = np.diff(np.concatenate([starts, [values.shape[0]]]))
                values = np.add.reduceat(values, starts) / counts
                keep = starts
            elif duplicates == "first":
                keep = starts
                values = values[keep]
            else:
                keep = np.concatenate([starts[1:], [major.shape[0]]]) - 1
                values = values[keep]
            major, minor = major[keep], minor[keep]
    del same
    ptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(major, minlength=n_rows), out=ptr[1:])
    data = values if transform is None else transform(values)
    data = np.ascontiguousarray(data, dtype=np.float64)
    info["rows"] = int(data.shape[0])
    info["sum"] = float(np.sum(data))
    return (ptr, np.ascontiguousarray(minor, dtype=np.int64), data), info


# ----------------------------------------------------------------------------- the handle
class PartitionedRatings:
    """A Parquet dataset of ratings scanned on the workers (:func:`scan_parquet`): its index
    space, counts and scale here, its ratings in their partitions.

    Attributes
    ----------
    n_users, n_items, n_ratings : int
        ``n_ratings`` counts rows, before ``duplicates`` merges repeats.
    user_ids, item_ids : ndarray
        The sorted distinct ids (index -> id), as :meth:`Ratings.from_arrays` maps them.
    r_min, r_max : float
    implicit : bool
    path, name, source : str
    n_partitions : int
    """

    partitioned = True

    def __init__(self, *, path, spec, storage_options, user_ids, item_ids, user_counts,
                 item_counts, n_ratings, r_min, r_max, v_min, v_max, implicit, duplicates,
                 n_partitions, name, options):
        self.path, self.source, self.name = path, str(path), name
        self._spec, self._storage_options, self._options = spec, storage_options, options
        self.user_ids, self.item_ids = user_ids, item_ids
        self._user_counts, self._item_counts = user_counts, item_counts
        self.n_users, self.n_items = int(user_ids.shape[0]), int(item_ids.shape[0])
        self.n_ratings = int(n_ratings)
        self.r_min, self.r_max = float(r_min), float(r_max)
        self.value_range = (float(v_min), float(v_max))
        self.implicit, self.duplicates = bool(implicit), duplicates
        self.n_partitions = int(n_partitions)

    def user_counts(self) -> np.ndarray:
        """Rows per user (before repeats are merged)."""
        return self._user_counts.copy()

    def item_counts(self) -> np.ndarray:
        """Rows per item (before repeats are merged)."""
        return self._item_counts.copy()

    @property
    def shape(self):
        return self.n_users, self.n_items

    def __len__(self):
        return self.n_ratings

    def __repr__(self):
        kind = "interactions" if self.implicit else \
            f"ratings in [{self.r_min:g}, {self.r_max:g}]"
        return (f"PartitionedRatings({self.name!r}: {self.n_ratings} {kind}, "
                f"{self.n_users} users x {self.n_items} items, {self.n_partitions} "
                f"partitions)")

    def _no_entries(self, what):
        raise AttributeError(f"a PartitionedRatings has no .{what}: {NEEDS_CLUSTER}.")

    users = property(lambda self: self._no_entries("users"))
    items = property(lambda self: self._no_entries("items"))
    values = property(lambda self: self._no_entries("values"))

    def load(self):
        """The ratings as a :class:`~kmviz.data.Ratings` in this process
        (:func:`~kmviz.data.read_parquet` with the same options)."""
        from .parquet import read_parquet

        return read_parquet(self.path, **self._options)

    # -- blocks on the workers -----------------------------------------------------------
    def build_blocks(self, backend, ranges, transform=None):
        """Put the ratings on the workers as compressed row blocks, never through here.

        Parameters
        ----------
        backend : kmviz.parallel.DaskBackend
        ranges : dict
            ``{"user": [(lo, hi), ...], "item": [...]}``: contiguous index ranges covering
            each side, in order.
        transform : callable, optional
            Maps the (scale-clipped, merged) values of a block to what the blocks hold; it
            runs on the workers, so it must be picklable (a module-level function or a
            ``functools.partial`` of one).

        Returns
        -------
        dict
            ``{side: futures}``, one future per block of ``(ptr, idx, data)`` (int64, int64,
            float64), the block's rows compressed, the other side's indices sorted in each;
            ``"rows"`` and ``"sum"``: the entries kept and the sum of ``data``; and
            ``"maps"``, the future of the id maps on the workers: hold it as long as the
            blocks (a lost block is built again from its partitions and the maps).

        Raises
        ------
        DuplicateRatingsError
            A (user, item) pair repeats and ``duplicates="error"``.
        """
        import dask
        from distributed import wait

        if backend is None or getattr(backend, "client", None) is None:
            raise TypeError(f"PartitionedRatings.build_blocks needs a Dask backend: "
                            f"{NEEDS_CLUSTER}.")
        client = backend.client
        ddf, _ = _open(self.path, self._spec["user_col"], self._spec["item_col"],
                       self._spec["value_col"], self._storage_options)
        parts = ddf.to_delayed()
        if len(parts) != self.n_partitions:
            raise DataValueError(f"the dataset now has {len(parts)} partitions, "
                                 f"{self.n_partitions} when it was scanned", path=self.source,
                                 fix="scan it again with kmviz.data.scan_parquet")
        # held with a lineage: the scheduler can place it again if its worker is lost
        maps = backend.hold((self.user_ids, self.item_ids))
        spec = {**self._spec, "n_users": self.n_users, "n_items": self.n_items}
        out = {"maps": maps}
        # one side at a time: only one side's routed pieces are ever on the workers
        for side in ("user", "item"):
            starts = np.array([lo for lo, _ in ranges[side]], dtype=np.int64)
            routed = client.compute([dask.delayed(_route, pure=False)(
                part, maps, spec, side, starts) for part in parts])
            pieces = [[client.submit(operator.getitem, r, b, pure=False)
                       for b in range(starts.shape[0])] for r in routed]
            done = [client.submit(_assemble, [pieces[k][b] for k in range(len(parts))],
                                  hi - lo, self.duplicates, transform, pure=False)
                    for b, (lo, hi) in enumerate(ranges[side])]
            blocks = [client.submit(operator.getitem, d, 0, pure=False) for d in done]
            infos = client.gather([client.submit(operator.getitem, d, 1, pure=False)
                                   for d in done])
            del routed, pieces, done
            if side == "user":
                self._check_repeats(infos, ranges[side])
                out["rows"] = sum(i["rows"] for i in infos)
                out["sum"] = sum(i["sum"] for i in infos)
            with client.as_current():
                wait(blocks)
            out[side] = blocks
        return out

    def _check_repeats(self, infos, ranges):
        repeats = sum(i["repeats"] for i in infos)
        if not repeats or self.duplicates != "error":
            return
        b = next(k for k, i in enumerate(infos) if i["repeats"])
        u, i = infos[b]["first"]
        raise DuplicateRatingsError(
            f"{repeats} repeated (user, item) pair(s), first user "
            f"{_show(self.user_ids[ranges[b][0] + u])} / item {_show(self.item_ids[i])}",
            path=self.source, expected="each (user, item) pair at most once",
            fix="pass duplicates='mean', 'first' or 'last' to merge them")


# ----------------------------------------------------------------------------- the scan
def _merge(acc, found):
    """Sorted distinct ids and summed counts of two (ids, counts) pairs."""
    if acc is None:
        return found
    ids, inv = np.unique(np.concatenate([acc[0], found[0]]), return_inverse=True)
    counts = np.bincount(inv.reshape(-1), weights=np.concatenate([acc[1], found[1]]),
                         minlength=ids.shape[0])
    return ids, counts


def _run_partitions(parts, fn, *args):
    """``fn(partition, *args)`` for every partition (on the workers of the active backend),
    yielded as ``(k, result)`` as they finish."""
    import dask

    client = _scheduler()
    tasks = [dask.delayed(fn, pure=False)(p, *args) for p in parts]
    if client is None:
        yield from enumerate(dask.compute(*tasks, scheduler=LOCAL_SCHEDULER))
        return
    from distributed import as_completed

    futures = client.compute(tasks)
    where = {f.key: k for k, f in enumerate(futures)}
    for fut in as_completed(futures, loop=client.loop):
        yield where[fut.key], fut.result()
        fut.release()


def scan_parquet(path, *, user_col="user", item_col="item", value_col="value", r_min=None,
                 r_max=None, duplicates="error", implicit=None, storage_options=None,
                 name=None) -> PartitionedRatings:
    """Scan a partitioned Parquet dataset on the workers; its ratings stay there.

    The parameters and the checks are :func:`~kmviz.data.read_parquet`'s (the same errors,
    raised here; repeated pairs are found when a fit builds the blocks). Returns a
    :class:`PartitionedRatings` (module docstring), which a fit on a Dask cluster takes in
    place of a Ratings.
    """
    from .._validation import check_option

    check_option("scan_parquet", "duplicates", duplicates, DUPLICATE_POLICIES)
    shown = str(path)
    ddf, _ = _open(path, user_col, item_col, value_col, storage_options)
    spec = {"user_col": user_col, "item_col": item_col, "value_col": value_col,
            "implicit_filter": bool(implicit) and value_col is not None,
            "user_text": not pd.api.types.is_integer_dtype(ddf[user_col].dtype),
            "item_text": not pd.api.types.is_integer_dtype(ddf[item_col].dtype)}
    parts = ddf.to_delayed()
    found: dict = {}
    ids = {"user": None, "item": None}
    for k, res in _run_partitions(parts, _scan_partition, spec):
        for side in ids:
            if side in res:
                ids[side] = _merge(ids[side], res.pop(side))
        found[k] = res
    stats = [found[k] for k in range(len(parts))]
    _check_scan(stats, spec, shown, path)
    n = sum(s["rows"] for s in stats)
    if n == 0:
        raise EmptyDataError("no ratings found", path=shown,
                             expected="at least one (user, item, value) row",
                             fix="check that the file is not empty and the columns are right")
    is_implicit = value_col is None or bool(implicit)
    v_min = min(s["min"] for s in stats if "min" in s)
    v_max = max(s["max"] for s in stats if "max" in s)
    lo, hi = rating_scale(r_min, r_max, v_min, v_max, is_implicit, shown)
    spec.update(lo=lo, hi=hi, clip=False)
    if v_min < lo or v_max > hi:
        tol = _scale_tolerance(lo, hi)
        scaled = [r for _, r in sorted(_run_partitions(parts, _scale_partition, spec, lo, hi,
                                                       tol))]
        far = sum(r[0] for r in scaled)
        if far:
            first = next(r[1] for r in scaled if r[0])
            raise DataValueError(
                f"rating {first:g} lies outside the declared scale [{lo:g}, {hi:g}] "
                f"({far} such values in all)", path=shown, expected=f"values in [{lo:g}, {hi:g}]",
                fix="correct the values or declare a wider scale (r_min/r_max)")
        spec["clip"] = True
    for side in ids:
        n_with = 0 if ids[side] is None else ids[side][0].shape[0]
        if n_with < 2:
            raise EmptyDataError(f"only {n_with} distinct {side}(s) have ratings", path=shown,
                                 expected=f"at least 2 {side}s",
                                 fix=f"a factorization needs several {side}s; check the "
                                     f"{side} column")
    (uid, ucount), (iid, icount) = ids["user"], ids["item"]
    options = dict(user_col=user_col, item_col=item_col, value_col=value_col, r_min=r_min,
                   r_max=r_max, duplicates=duplicates, implicit=implicit,
                   storage_options=storage_options, name=name)
    return PartitionedRatings(
        path=path, spec=spec, storage_options=storage_options, user_ids=uid, item_ids=iid,
        user_counts=ucount.astype(np.int64), item_counts=icount.astype(np.int64),
        n_ratings=n, r_min=lo, r_max=hi, v_min=v_min, v_max=v_max, implicit=is_implicit,
        duplicates=duplicates, n_partitions=len(parts),
        name=name or shown.rstrip("/").rsplit("/", 1)[-1], options=options)


def _check_scan(stats, spec, shown, path=None):
    """The errors :func:`~kmviz.data.read_parquet` raises, in its order."""
    vc = spec["value_col"]
    bad = [(k, s["bad"]) for k, s in enumerate(stats) if "bad" in s]
    if bad:
        total = sum(b[0] for _, b in bad)
        raise not_finite_error(total, bad[0][1][1], bad[0][0], vc, shown)
    off = [s["off"] for s in stats if "off" in s]
    if off:
        raise not_binary_error(off[0], vc, shown)
    check_id_reports([s["ids"] for s in stats],
                     {"user": spec["user_col"], "item": spec["item_col"]}, path, shown)
    for side in ("user", "item"):
        if any(s.get(f"{side}_missing") for s in stats):
            raise DataValueError(f"{side} ids contain missing values", path=shown,
                                 fix=f"remove the rows without a {side} id")
    huge = [s["huge"] for s in stats if "huge" in s]
    if huge:
        raise DataValueError(
            f"rating value {huge[0][1]:g} is too large in magnitude "
            f"({sum(h[0] for h in huge)} such values in all)", path=shown,
            expected=f"values between {-MAX_ABS_VALUE:g} and {MAX_ABS_VALUE:g}",
            fix="check the value column and its units (a timestamp or an id column "
                "chosen as the rating?)")
