"""What a gFM fit reads: the data forms it accepts, the FM design of ratings, the batches.

:class:`~kmviz.gfm.GeneralizedFM` takes arrays, an ``(X, y)`` tuple, a
:class:`~kmviz.gfm.RegressionData`, a sequence of batches or a :class:`kmviz.data.Ratings`
(through the factorization-machine design, :class:`~kmviz.gfm.design.RatingsDesign`).
:func:`cut` turns any of them into the mini-batches of Algorithm 1 (:class:`Batches`);
:func:`as_fit_data` and :func:`as_batch` sort out ``fit``'s and ``partial_fit``'s
arguments. Nothing here keeps state: the estimator puts what these return into its fit
state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._validation import check_random_state
from ..exceptions import InvalidParameterError
from .data import RegressionData, as_regression
from .design import RatingsDesign, is_ratings
from .operators import ChunkedBatch, check_rows


@dataclass
class Batches:
    """The mini-batches of one fit and what cutting them decided.

    Attributes
    ----------
    batches : sequence of ChunkedBatch
        In the order Algorithm 1 consumes them (a list, or :class:`LazyBatches`).
    n_unused : int
        Rows beyond ``n_batches * batch_size`` (arrays and ratings only).
    design : RatingsDesign or None
        The FM design, when the data were ratings.
    design_events : list of (message, values)
        The design's automatic decisions, for the fit's trace.
    feature_names : tuple of str or None
    """

    batches: Sequence
    n_unused: int = 0
    design: RatingsDesign | None = None
    design_events: list = field(default_factory=list)
    feature_names: tuple | None = None


def check_rank(owner: str, k: int, d: int) -> None:
    if k > d:
        raise InvalidParameterError(
            f"The 'rank' parameter of {owner} must be at most the number of features d={d}. "
            f"Got {k} instead.")


def first_d(batches) -> int:
    """The number of features of the first batch (read from its first chunk)."""
    for Xc, _ in batches[0]:
        return int(Xc.shape[1]) if hasattr(Xc, "shape") and len(Xc.shape) == 2 else \
            int(np.asarray(Xc).reshape(len(Xc), -1).shape[1])
    raise ValueError("the first batch is empty.")


def make_design(ratings, params) -> tuple[RatingsDesign, list]:
    """The FM design of ``ratings`` with the id blocks resolved ("automatic": when ids
    repeat), and the automatic decisions as ``(message, values)`` trace events."""
    events = []
    flags = {}
    for block, n_ids in (("user", int(ratings.n_users)), ("item", int(ratings.n_items))):
        wanted = params.get(f"{block}_ids")
        per_id = len(ratings.values) / max(n_ids, 1)
        if wanted is None:
            wanted = n_ids >= 2 and per_id >= 2.0
            if not wanted:
                events.append((
                    f"one-hot {block} ids left out of the design (automatic): {n_ids} "
                    f"{block}(s) with {per_id:.2g} training rating(s) each on average",
                    {f"{block}_ids": False}))
        flags[block] = bool(wanted)
    side = bool(params.get("side_features", True))
    design = RatingsDesign(users=flags["user"], items=flags["item"], user_features=side,
                           item_features=side).fit(ratings)
    return design, events


def as_data(data, design: RatingsDesign | None, owner: str) -> RegressionData:
    """Regression data from any accepted form; a Ratings through ``design`` (the fitted
    model's), which must exist."""
    if is_ratings(data):
        if design is None:
            raise TypeError(f"{owner} was fitted on arrays, not on ratings; pass (X, y) "
                            "arrays.")
        return design.transform(data)
    return as_regression(data)


def cut(data, prm, owner: str) -> Batches:
    """The batches of a one-pass fit of ``data`` (arrays, ratings or a stream) under the
    settings ``prm`` (rank, batch_size, n_batches, the design's and the shuffle's)."""
    k = prm["rank"]
    size, count = prm["batch_size"], prm["n_batches"]
    design, events = None, []
    if is_ratings(data):
        # ratings files are usually sorted by user: shuffle, so batches are i.i.d. draws
        design, events = make_design(data, prm)
        data = design.transform(data)
        order = check_random_state(prm["random_state"]).permutation(data.n_samples)
        data = RegressionData(data.X[order], data.y[order], data.feature_names, data.name)
    if isinstance(data, RegressionData):
        data = data.checked()
        n, d = data.n_samples, data.n_features
        check_rank(owner, k, d)
        if size is None and count is None:
            raise InvalidParameterError(
                f"{owner}: set batch_size or n_batches (both are None), so the data can be "
                "cut into batches.")
        if size is None:
            size = n // count
            if size < k:
                raise ValueError(
                    f"X has {n} rows: n_batches={count} batches would hold {size} rows "
                    f"each, fewer than rank={k}; lower n_batches or pass more rows.")
        elif size < k:
            raise InvalidParameterError(
                f"The 'batch_size' parameter of {owner} must be at least rank={k} (each "
                f"step orthonormalizes k vectors from the batch). Got {size} instead.")
        if count is None:
            count = n // size
        if count < 1 or size * count > n:
            raise ValueError(
                f"X has {n} rows but batch_size={size} x n_batches={count} needs "
                f"{size * count}; lower n_batches or batch_size, or set n_batches=None "
                "to use every full batch.")
        batches = [ChunkedBatch.from_arrays(data.X[i * size:(i + 1) * size],
                                            data.y[i * size:(i + 1) * size])
                   for i in range(count)]
        return Batches(batches, n - size * count, design, events, data.feature_names)
    # a stream: a sequence of batches
    n_avail = len(data)
    if count is None:
        count = n_avail
    if n_avail < count:
        raise ValueError(f"the stream holds {n_avail} batches but n_batches={count}; "
                         "lower n_batches or set it to None to use every batch.")
    if count < 1:
        raise ValueError("the stream holds no batches.")
    batches = LazyBatches(data, count)
    check_rank(owner, k, first_d(batches))
    if size is not None and size < k:
        raise InvalidParameterError(
            f"The 'batch_size' parameter of {owner} must be at least rank={k}. Got {size} "
            "instead.")
    return Batches(batches)


def is_array(x) -> bool:
    return sp.issparse(x) or (isinstance(x, np.ndarray) and x.ndim == 2) or (
        hasattr(x, "__array__") and not isinstance(x, (tuple, list, ChunkedBatch))
        and np.ndim(x) == 2)


def as_fit_data(X, y):
    """RegressionData for array data, a Ratings as it is, else a sequence of batches."""
    if y is None and is_ratings(X):
        return X
    if y is not None or isinstance(X, RegressionData) or is_array(X):
        return as_regression(X, y)
    if isinstance(X, (tuple, list)) and len(X) == 2 and is_array(X[0]):
        return as_regression(X)
    if hasattr(X, "X") and hasattr(X, "y") and not isinstance(X, Sequence):
        return as_regression(X)
    if isinstance(X, ChunkedBatch):
        return [X]
    if hasattr(X, "__len__") and hasattr(X, "__getitem__"):
        return X
    raise TypeError(f"fit takes X and y arrays, an (X, y) tuple, a RegressionData or a "
                    f"sequence of batches; got {type(X).__name__}.")


def as_batch(X, y, d=None):
    """(ChunkedBatch, already checked) from partial_fit's arguments."""
    if isinstance(X, ChunkedBatch):
        if y is not None:
            raise TypeError("pass y inside the ChunkedBatch's chunks, not separately.")
        return X, False
    data = as_regression(X, y)
    X, y = check_rows(data.X, data.y, d=d)
    return ChunkedBatch.from_arrays(X, y), True


class LazyBatches:
    """The first ``count`` batches of a stream, each turned into a ChunkedBatch on access."""

    def __init__(self, stream, count):
        self._stream = stream
        self._count = count

    def __len__(self):
        return self._count

    def __getitem__(self, i):
        if not 0 <= i < self._count:
            raise IndexError(i)
        b = self._stream[i]
        if isinstance(b, ChunkedBatch):
            return b
        if isinstance(b, RegressionData) or (isinstance(b, (tuple, list)) and len(b) == 2):
            data = as_regression(b).checked()
            return ChunkedBatch.from_arrays(data.X, data.y)
        raise TypeError(f"batch {i} of the stream is a {type(b).__name__}; expected an "
                        "(X, y) pair, a RegressionData or a ChunkedBatch.")
