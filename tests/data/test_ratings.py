"""Tests of the Ratings container (kmviz/data/ratings.py)."""

import numpy as np
import pandas as pd
import pytest

from kmviz.data import Ratings, planted_km
from kmviz.exceptions import (
    DataValueError,
    DuplicateRatingsError,
    EmptyDataError,
    InvalidParameterError,
)


def small(**kw):
    users = ["b", "a", "a", "c", "b"]
    items = [20, 10, 30, 10, 30]
    values = [4.0, 5.0, 1.0, 2.0, 3.0]
    return Ratings.from_arrays(users, items, values, r_min=1, r_max=5, **kw)


def test_from_arrays_maps_ids_to_contiguous_indices():
    r = small()
    assert (r.n_users, r.n_items, r.n_ratings) == (3, 3, 5)
    assert list(r.user_ids) == ["a", "b", "c"] and list(r.item_ids) == [10, 20, 30]
    # every original triplet survives, through the id tables
    got = {(r.user_ids[u], r.item_ids[i], v) for u, i, v in zip(r.users, r.items, r.values)}
    assert got == {("b", 20, 4.0), ("a", 10, 5.0), ("a", 30, 1.0), ("c", 10, 2.0),
                   ("b", 30, 3.0)}
    assert (r.r_min, r.r_max) == (1.0, 5.0)


def test_arrays_are_read_only():
    r = small()
    with pytest.raises(ValueError, match="read-only"):
        r.values[0] = 3.0


def test_csr_and_csc_hold_the_values():
    r = small()
    dense = r.csr.toarray()
    assert dense[0, 0] == 5.0 and dense[1, 1] == 4.0 and dense[2, 0] == 2.0
    np.testing.assert_array_equal(r.csc.toarray(), dense)
    assert r.csr.nnz == 5


def test_default_scale_is_observed_range_and_implicit_is_unit():
    r = Ratings.from_arrays([1, 2, 2], [1, 1, 2], [2.0, 3.5, 3.0])
    assert (r.r_min, r.r_max) == (2.0, 3.5)
    imp = Ratings.from_arrays([1, 2, 2], [1, 1, 2])
    assert imp.implicit and (imp.r_min, imp.r_max) == (0.0, 1.0)
    assert np.all(imp.values == 1.0)


def test_values_outside_declared_scale_name_the_line():
    with pytest.raises(DataValueError, match=r"f\.csv, line 4: rating 7 lies outside the "
                                             r"declared scale \[1, 5\].*expected values in"):
        Ratings.from_arrays([1, 2, 3], [1, 2, 3], [1, 7, 9], r_min=1, r_max=5,
                            source="f.csv", line_numbers=[2, 4, 5])


def test_nan_value_names_the_line_without_numpy_repr():
    with pytest.raises(DataValueError, match=r"line 3: rating value nan is not a finite"):
        Ratings.from_arrays([1, 2], [1, 2], [1.0, np.nan], line_numbers=[2, 3])


def test_duplicates_error_gives_count_and_first_line():
    with pytest.raises(DuplicateRatingsError,
                       match=r"d\.csv, line 9: 2 repeated \(user, item\) pair\(s\), first "
                             r"user 1 / item 5.*duplicates='mean'"):
        Ratings.from_arrays([1, 1, 2, 1], [5, 5, 6, 5], [1.0, 2.0, 3.0, 4.0],
                            source="d.csv", line_numbers=[2, 9, 10, 11])


@pytest.mark.parametrize("policy, expected", [("mean", 7 / 3), ("first", 1.0), ("last", 4.0)])
def test_duplicate_policies(policy, expected):
    r = Ratings.from_arrays([1, 1, 2, 1], [5, 5, 6, 5], [1.0, 2.0, 3.0, 4.0], duplicates=policy)
    assert r.n_ratings == 2
    assert r.csr[0, 0] == pytest.approx(expected)
    assert r.info["duplicates_merged"] == 2


def test_unknown_duplicate_policy_is_a_parameter_error():
    with pytest.raises(InvalidParameterError, match="'duplicates' parameter.*'sum'"):
        small(duplicates="sum")


def test_single_user_is_refused():
    with pytest.raises(EmptyDataError, match="only 1 distinct user.*at least 2 users"):
        Ratings.from_arrays([1, 1], [1, 2], [1.0, 2.0])


def test_single_item_is_refused():
    with pytest.raises(EmptyDataError, match="only 1 distinct item.*at least 2 items"):
        Ratings.from_arrays([1, 2], [1, 1], [1.0, 2.0])


def test_empty_input_is_refused():
    with pytest.raises(EmptyDataError, match="no ratings found"):
        Ratings.from_arrays([], [], [])


def test_constant_values_need_a_declared_scale():
    with pytest.raises(DataValueError, match="every rating equals 3.*r_min and r_max"):
        Ratings.from_arrays([1, 2], [1, 2], [3.0, 3.0])


def test_names_and_features_align_with_ids():
    feats = pd.DataFrame({"year": [1990, 2000, 2010]}, index=[30, 10, 20])
    r = small(item_names={10: "Ten", 20: "Twenty"}, item_features=feats)
    assert list(r.item_names) == ["Ten", "Twenty", None]
    assert list(r.item_features["year"]) == [2000, 2010, 1990]
    assert r.item_label(0) == "Ten" and r.item_label(2) == "item 30"


def test_describe_and_fingerprint():
    d = small().describe()
    assert (d["n_users"], d["n_items"], d["n_ratings"]) == (3, 3, 5)
    assert small().fingerprint() == small().fingerprint()
    other = Ratings.from_arrays(["b", "a", "a", "c", "b"], [20, 10, 30, 10, 30],
                                [4.0, 5.0, 1.5, 2.0, 3.0], r_min=1, r_max=5)
    assert other.fingerprint() != small().fingerprint()


def test_fingerprint_is_the_saved_runs_hash_whatever_the_block_size(monkeypatch):
    """Hashed in blocks and as int64 / float64 whatever the stored types: the same digest
    as one hash of the whole arrays (what runs saved before were checked against)."""
    import hashlib

    import kmviz.data.ratings as rmod

    r = planted_km(n_users=30, n_items=10, D=3, random_state=1)
    h = hashlib.sha256()
    for a, t in ((r.users, np.int64), (r.items, np.int64), (r.values, np.float64)):
        h.update(np.asarray(a, dtype=t).tobytes())
    h.update(np.array([r.n_users, r.n_items], dtype=np.int64).tobytes())
    h.update(np.array([r.r_min, r.r_max], dtype=np.float64).tobytes())
    monkeypatch.setattr(rmod, "_HASH_BLOCK", 7)   # many blocks, the last one short
    fresh = r._replace_entries(r.users, r.items, r.values)
    assert fresh.fingerprint() == h.hexdigest()[:16] == r.fingerprint()


def test_to_frame_limit_builds_only_the_preview():
    r = planted_km(n_users=30, n_items=10, D=3, random_state=1)
    full = r.to_frame()
    head = r.to_frame(limit=7)
    pd.testing.assert_frame_equal(head, full.head(7))
    assert len(r.to_frame(limit=10**9)) == r.n_ratings and len(r.to_frame(limit=0)) == 0


def _grid(n_users=30, n_items=20, seed=0):
    rng = np.random.default_rng(seed)
    u, i = np.nonzero(rng.random((n_users, n_items)) < 0.5)
    return Ratings.from_arrays(u, i, rng.integers(1, 6, size=u.size).astype(float))


def test_split_is_a_partition_and_reproducible():
    r = _grid()
    train, test = r.split(0.25, random_state=3)
    assert train.n_ratings + test.n_ratings == r.n_ratings
    assert test.n_ratings == round(0.25 * r.n_ratings)
    assert train.shape == test.shape == r.shape
    pairs = set(zip(train.users, train.items)) | set(zip(test.users, test.items))
    assert len(pairs) == r.n_ratings
    again = r.split(0.25, random_state=3)[1]
    np.testing.assert_array_equal(again.users, test.users)


def test_split_per_user_keeps_train_ratings_for_everyone():
    r = _grid()
    train, test = r.split_per_user(0.3, random_state=1, min_train=2)
    counts = train.user_counts()
    assert np.all(counts[r.user_counts() > 0] >= 2)
    assert train.n_ratings + test.n_ratings == r.n_ratings


def test_train_val_test_are_disjoint():
    r = _grid()
    parts = r.train_val_test(0.1, 0.2, random_state=0)
    sets = [set(zip(p.users, p.items)) for p in parts]
    assert sum(len(s) for s in sets) == r.n_ratings
    assert not (sets[0] & sets[1]) and not (sets[0] & sets[2]) and not (sets[1] & sets[2])


def test_split_rejects_bad_fraction():
    with pytest.raises(InvalidParameterError, match="'test_size' parameter of Ratings.split"):
        _grid().split(1.5)


@pytest.mark.parametrize("axis", ["users", "items"])
def test_split_cold_holds_out_whole_users_or_items(axis):
    r = planted_km(n_users=40, n_items=30, observed=0.5, random_state=3)
    train, test = r.split_cold(0.25, axis=axis, random_state=0)
    assert train.n_ratings + test.n_ratings == r.n_ratings
    key = "users" if axis == "users" else "items"
    held, kept = set(np.asarray(getattr(test, key))), set(np.asarray(getattr(train, key)))
    assert held and not held & kept  # every rating of a held-out user is in test
    present = np.unique(getattr(r, key)).size
    assert len(held) == round(0.25 * present)
    again = r.split_cold(0.25, axis=axis, random_state=0)[1]
    assert np.array_equal(again.users, test.users) and np.array_equal(again.items, test.items)
    with pytest.raises(EmptyDataError, match="holds out none"):
        r.split_cold(0.001, axis=axis)


def test_make_split_cold_users_gives_disjoint_user_sets():
    from kmviz.data.splits import make_split

    r = planted_km(n_users=60, n_items=20, random_state=1)
    s = make_split(r, val_size=0.1, test_size=0.2, by="cold_users", seed=0)
    tr, va, te = (set(np.asarray(p.users)) for p in (s.train, s.validation, s.test))
    assert va and te and not (tr & va) and not (tr & te) and not (va & te)
    assert len(te) == 12 and s.settings()["by"] == "cold_users"
    assert s.train.n_ratings + s.validation.n_ratings + s.test.n_ratings == r.n_ratings


def test_cli_split_choices_are_the_data_layers():
    from kmviz.cli import SPLIT_CHOICES
    from kmviz.data.ratings import SPLIT_KINDS

    assert SPLIT_CHOICES == SPLIT_KINDS


@pytest.mark.parametrize("ids", [np.array([3, 3, 7, 1]), np.arange(-5, 50)[::-3],
                                 np.random.default_rng(0).integers(0, 10_000, 5_000),
                                 np.array([0, 10**12, 5])], ids=["small", "negative", "random",
                                                                 "sparse range"])
def test_integer_ids_factorize_like_np_unique(ids):
    from kmviz.data.ratings import _factorize

    uniq, inv = _factorize(ids, None, "user", None)
    want_uniq, want_inv = np.unique(ids, return_inverse=True)
    assert np.array_equal(uniq, want_uniq) and uniq.dtype == want_uniq.dtype
    assert np.array_equal(inv, want_inv)


def test_from_arrays_sorted_input_takes_no_copy_of_the_callers_arrays():
    """Input already in (user, item) order skips the sort; the caller's arrays are neither
    kept nor made read-only, and the result equals the sorted path's."""
    u = np.array([0, 0, 1, 2, 2])
    i = np.array([1, 3, 0, 1, 2])
    v = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    r = Ratings.from_arrays(u, i, v)
    assert v.flags.writeable and not np.shares_memory(r.values, v)
    shuffled = Ratings.from_arrays(u[::-1], i[::-1], v[::-1])
    np.testing.assert_array_equal(r.values, shuffled.values)
    np.testing.assert_array_equal(r.users, shuffled.users)
    assert r.fingerprint() == shuffled.fingerprint()


def test_text_ids_label_themselves_and_numbers_get_the_kind():
    from kmviz.data import Ratings

    r = Ratings(users=np.array([0, 1]), items=np.array([0, 1]), values=np.array([4.0, 5.0]), n_users=2, n_items=2, r_min=1.0, r_max=5.0,
                item_ids=np.array(["Espresso", "42"], dtype=object),
                user_ids=np.array(["ann", "7"], dtype=object))
    assert r.item_label(0) == "Espresso" and r.item_label(1) == "item 42"
    assert r.user_label(0) == "ann" and r.user_label(1) == "user 7"
