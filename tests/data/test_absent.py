"""absent_as_zero: one-class data as explicit 0/1 entries, every absent pair a 0 (or a
uniform share of them per user beyond the entry cap)."""

import numpy as np
import pytest

from kmviz.data import Ratings
from kmviz.data.absent import absent_as_zero
from kmviz.exceptions import InvalidParameterError


def _pairs(seed=0, n_users=30, n_items=12, p=0.3):
    rng = np.random.default_rng(seed)
    dense = rng.random((n_users, n_items)) < p
    dense[:, 0] = True                       # every user has one item at least
    dense[0, :] = True                       # and every item one user
    u, i = np.nonzero(dense)
    return dense, Ratings.from_arrays(u, i, None, item_names=[f"it{j}" for j in range(n_items)])


def test_every_cell_is_kept_and_equals_the_dense_indicator():
    dense, r = _pairs()
    assert r.implicit
    z = absent_as_zero(r)
    assert not z.implicit and (z.r_min, z.r_max) == (0.0, 1.0)
    assert z.n_ratings == r.n_users * r.n_items
    got = np.full(dense.shape, -1.0)
    got[z.users, z.items] = z.values
    np.testing.assert_array_equal(got, dense.astype(float))      # the brute-force matrix
    assert z.info["absent_zeros"] == "all"
    assert list(z.item_names) == list(r.item_names) and z.shape == r.shape


def test_beyond_the_cap_each_user_keeps_their_ones_and_a_share_of_zeros():
    dense, r = _pairs(seed=1, n_users=400, n_items=50, p=0.1)
    cap = r.n_ratings * 3
    z = absent_as_zero(r, max_entries=cap, random_state=3)
    ones = z.values == 1.0
    assert ones.sum() == r.n_ratings                              # every interaction kept
    assert set(zip(z.users[ones], z.items[ones])) == set(zip(r.users, r.items))
    zeros = ~ones
    assert not dense[z.users[zeros], z.items[zeros]].any()        # a zero is truly absent
    share = z.info["absent_zeros"]
    assert 0 < share < 1
    assert abs(z.n_ratings - cap) < 0.1 * cap                     # about the cap
    absent = (~dense).sum(1)
    kept = np.bincount(z.users[zeros], minlength=r.n_users)
    assert abs(kept.sum() / absent.sum() - share) < 0.02          # the share, pooled
    assert abs((kept[absent > 0] / absent[absent > 0]).mean() - share) < 0.03   # per user


def test_rated_data_and_a_cap_below_the_interactions_are_refused():
    _, r = _pairs()
    rated = Ratings.from_arrays(r.users, r.items, np.full(r.n_ratings, 4.0), r_min=1, r_max=5)
    with pytest.raises(InvalidParameterError, match="explicit values"):
        absent_as_zero(rated)
    with pytest.raises(InvalidParameterError, match="at least that"):
        absent_as_zero(r, max_entries=r.n_ratings - 1)


def test_load_reads_absent_pairs_as_zero_on_request(tmp_path):
    from kmviz.data import load

    path = tmp_path / "baskets.txt"
    path.write_text("Milk, Bread\nBread\nMilk, Eggs, Bread\n")
    plain = load(str(path))
    assert plain.implicit and plain.n_ratings == 6
    zero = load(str(path), absent="zero")
    assert not zero.implicit and zero.n_ratings == 9 and zero.values.sum() == 6
    with pytest.raises(InvalidParameterError, match="absent must be"):
        load(str(path), absent="yes")


def test_km_on_one_class_data_names_the_real_fix():
    """KM fitted to only ones: the mean predicts them exactly; the warning says so and
    points to absent pairs as 0, not to lambda_theta (which cannot help)."""
    import warnings

    from kmviz.exceptions import NoBetterThanMeanWarning
    from kmviz.km import KolmogorovModel

    _, r = _pairs(seed=2, n_users=40, n_items=10)
    tr, va = r.split(0.25, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        KolmogorovModel(D=3, max_iter=3).fit(tr, validation=va)
    said = [str(w.message) for w in caught if issubclass(w.category, NoBetterThanMeanWarning)]
    assert len(said) == 1 and "one-class" in said[0] and "absent" in said[0]
    assert "lambda_theta" not in said[0]
