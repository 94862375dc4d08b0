"""Train / validation / test splits: one recipe for the CLI, the app and saved runs.

:func:`make_split` is the only way kmviz cuts a dataset, so ``kmviz train`` and the app's
Train page split the same data the same way by default (:data:`DEFAULT_SPLIT`). A
:class:`Split` travels with every saved run as arrays (:func:`split_arrays`), so a reopened
run has exactly the training ratings its model was fitted on (:func:`split_from_arrays`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..exceptions import DataError
from .ratings import SPLIT_KINDS

#: The split both the CLI and the app use unless told otherwise.
DEFAULT_SPLIT = {"val_size": 0.1, "test_size": 0.2, "by": "random", "seed": 0}
#: Parts of a split, in order; the saved arrays are ``data_<part>_{users,items,values}``.
SPLIT_PARTS = ("train", "validation", "test")


@dataclass
class Split:
    """The parts a model is trained and evaluated on, and how they were made."""

    train: object
    validation: object | None
    test: object | None
    val_size: float
    test_size: float
    by: str
    seed: int

    def parts(self) -> dict:
        """``{"train": ..., "validation": ..., "test": ...}`` for the parts present."""
        return {name: getattr(self, name) for name in SPLIT_PARTS
                if getattr(self, name) is not None}

    def held_out(self):
        """The part to check a model on: test if present, else validation, else None."""
        return self.test if self.test is not None else self.validation

    def describe(self) -> dict:
        return {
            "train": self.train.n_ratings,
            "validation": 0 if self.validation is None else self.validation.n_ratings,
            "test": 0 if self.test is None else self.test.n_ratings,
            "by": self.by,
            "seed": self.seed,
            "val_size": self.val_size,
            "test_size": self.test_size,
        }

    def settings(self) -> dict:
        """The arguments that remake this split from the whole dataset."""
        return {"val_size": self.val_size, "test_size": self.test_size, "by": self.by,
                "seed": self.seed}


def split_settings(saved: dict | None) -> dict:
    """Split arguments from a (possibly partial) dict, defaults for the missing ones."""
    saved = saved or {}
    return {k: type(v)(saved.get(k, v)) for k, v in DEFAULT_SPLIT.items()}


def make_split(ratings, *, val_size: float = 0.1, test_size: float = 0.2, by: str = "random",
               seed: int = 0) -> Split:
    """Train / validation / test parts; a fraction of 0 leaves that part out.

    The same arguments give the same split of the same data (the seed drives the draws).
    """
    if by not in SPLIT_KINDS:
        raise DataError(f"the split must be by 'random' ratings, per 'user', or hold out "
                        f"whole users or items ('cold_users', 'cold_items'); got {by!r}")
    if val_size < 0 or test_size < 0 or val_size + test_size >= 0.9:
        raise DataError(
            f"validation ({val_size:g}) and test ({test_size:g}) fractions must be >= 0 and "
            f"sum to less than 0.9, so that training keeps enough ratings",
            fix="lower the fractions")
    val = test = None
    train = ratings
    if val_size > 0 and test_size > 0:
        train, val, test = ratings.train_val_test(val_size, test_size, by=by,
                                                  random_state=seed)
    elif test_size > 0 or val_size > 0:
        train, held = ratings._splitter(by)(test_size or val_size, random_state=seed)
        if test_size > 0:
            test = held
        else:
            val = held
    return Split(train=train, validation=val, test=test, val_size=float(val_size),
                 test_size=float(test_size), by=by, seed=int(seed))


def _index_array(a) -> np.ndarray:
    """Indices as they are when they are int32 or int64, else as int64."""
    a = np.asarray(a)
    return a if a.dtype in (np.int32, np.int64) else a.astype(np.int64)


def _id_array(ids) -> np.ndarray:
    """Original ids as an int64, float64 or fixed-width unicode array (never object)."""
    a = np.asarray(ids)
    if a.dtype.kind in "iub":
        return a.astype(np.int64)
    if a.dtype.kind == "f":
        return a.astype(np.float64)
    return a.astype(str)


def split_arrays(split: Split) -> dict:
    """The split's entries and the id space, as arrays (``data_*``) for a saved run.

    The indices keep their stored integer type (int32 below 2^31 users and items: no
    int64 copy of every part while a run is saved); :func:`split_from_arrays` reads any."""
    out = {}
    for part, r in split.parts().items():
        out[f"data_{part}_users"] = _index_array(r.users)
        out[f"data_{part}_items"] = _index_array(r.items)
        out[f"data_{part}_values"] = np.asarray(r.values, dtype=np.float64)
    out["data_user_ids"] = _id_array(split.train.user_ids)
    out["data_item_ids"] = _id_array(split.train.item_ids)
    return out


def has_split_arrays(arrays: dict) -> bool:
    return all(f"data_train_{k}" in arrays for k in ("users", "items", "values"))


def _saved_names(names, n: int):
    """Display names from a saved dataset description: a list of n texts (or None each),
    else None (a damaged or foreign entry is dropped, never trusted)."""
    if not isinstance(names, list) or len(names) != n or not all(
            x is None or isinstance(x, str) for x in names):
        return None
    return names


def split_from_arrays(arrays: dict, dataset: dict, settings: dict, *, what: str = "run"):
    """``(whole dataset, Split)`` rebuilt from :func:`split_arrays` output and the dataset
    description saved beside it (sizes, scale, name, user and item names).

    The index space (ids, names, scale) is the one the model was fitted on. Side
    information other than the names is not saved. Raises :class:`DataError` when the
    arrays are inconsistent.
    """
    from .ratings import Ratings

    a, ds = arrays, dataset
    user_ids, item_ids = a.get("data_user_ids"), a.get("data_item_ids")
    n_users = int(ds.get("n_users", len(user_ids) if user_ids is not None else 0))
    n_items = int(ds.get("n_items", len(item_ids) if item_ids is not None else 0))
    if user_ids is not None and len(user_ids) != n_users:
        user_ids = None
    if item_ids is not None and len(item_ids) != n_items:
        item_ids = None
    r_min, r_max = float(ds["r_min"]), float(ds["r_max"])
    base = Ratings(np.zeros(0), np.zeros(0), np.zeros(0), n_users=n_users, n_items=n_items,
                   r_min=r_min, r_max=r_max, user_ids=user_ids, item_ids=item_ids,
                   item_names=_saved_names(ds.get("item_names"), n_items),
                   user_names=_saved_names(ds.get("user_names"), n_users),
                   implicit=bool(ds.get("implicit", False)),
                   name=str(ds.get("name", "ratings")), source=str(ds.get("source", "")))
    parts = {}
    for part in SPLIT_PARTS:
        if f"data_{part}_users" not in a:
            parts[part] = None
            continue
        u = np.asarray(a[f"data_{part}_users"], dtype=np.int64)
        i = np.asarray(a[f"data_{part}_items"], dtype=np.int64)
        v = np.asarray(a[f"data_{part}_values"], dtype=np.float64)
        if not (u.shape == i.shape == v.shape) or (u.size and (
                u.min() < 0 or u.max() >= n_users or i.min() < 0 or i.max() >= n_items)) or (
                not np.all(np.isfinite(v))):
            raise DataError(f"{what}: the saved {part} ratings are damaged (indices outside "
                            f"{n_users} users x {n_items} items, or non-finite values), so "
                            "its data cannot be reopened")
        parts[part] = base._replace_entries(u, i, v, name=f"{base.name} ({part})")
    if parts["train"] is None:
        raise DataError(f"{what}: no training ratings were saved")
    present = [p for p in parts.values() if p is not None]
    users = np.concatenate([p.users for p in present])
    items = np.concatenate([p.items for p in present])
    values = np.concatenate([p.values for p in present])
    order = np.argsort(users.astype(np.int64) * max(n_items, 1) + items, kind="stable")
    whole = base._replace_entries(users[order], items[order], values[order])
    s = split_settings(settings)
    split = Split(train=parts["train"], validation=parts["validation"], test=parts["test"],
                  val_size=s["val_size"], test_size=s["test_size"], by=s["by"], seed=s["seed"])
    return whole, split
