"""The observed pairs shared by the one-class families (kmviz.pairs): one class for OCMF and
similarity learning, its CSR and column-major views against a dense matrix, its checks."""

import numpy as np
import pytest

from kmviz import ocmf, similarity
from kmviz.pairs import ObservedPairs, weighted_gram


def test_both_one_class_families_use_the_one_pairs_class():
    assert ocmf.ObservedPairs is similarity.ObservedPairs is ObservedPairs
    from kmviz.ocmf.allpairs import weighted_gram as ocmf_gram
    assert ocmf_gram is weighted_gram


def test_row_and_column_views_match_the_dense_matrix():
    rng = np.random.default_rng(0)
    dense = (rng.random((7, 5)) < 0.4) * rng.integers(1, 4, (7, 5)).astype(float)
    r, c = np.nonzero(dense)
    shuffle = rng.permutation(r.size)
    p = ObservedPairs(r[shuffle], c[shuffle], 7, 5, dense[r, c][shuffle])
    np.testing.assert_array_equal(p.to_csr().toarray(), dense)
    for j in range(5):  # column j's pairs through the column-major view
        rows = p.col_rows[p.col_ptr[j]:p.col_ptr[j + 1]]
        pos = p.col_perm[p.col_ptr[j]:p.col_ptr[j + 1]]
        np.testing.assert_array_equal(rows, np.flatnonzero(dense[:, j]))
        np.testing.assert_array_equal(p.labels[pos], dense[rows, j])
    np.testing.assert_array_equal(p.transpose().to_csr().toarray(), dense.T)
    np.testing.assert_array_equal(p.row_counts(), (dense != 0).sum(1))
    sub = p.subset(np.arange(0, p.nnz, 2))
    assert sub.nnz == (p.nnz + 1) // 2 and np.all(sub.labels == p.labels[::2])


def test_weighted_gram_against_the_dense_product():
    rng = np.random.default_rng(1)
    E, w = rng.normal(size=(9, 3)), rng.random(9)
    np.testing.assert_allclose(weighted_gram(E, w), E.T @ np.diag(w) @ E, rtol=1e-12)
    np.testing.assert_allclose(weighted_gram(E, np.full(9, 0.5)), 0.5 * E.T @ E, rtol=1e-12)


@pytest.mark.parametrize("args, words", [
    (([0, 1], [0], 2, 2), "same length"),
    (([0, 2], [0, 1], 2, 2), r"\[0, 2\) x \[0, 2\)"),
    (([0, 0], [1, 1], 2, 2), r"pair \(0, 1\) occurs more than once"),
])
def test_bad_pairs_are_refused_naming_the_problem(args, words):
    with pytest.raises(ValueError, match=words):
        ObservedPairs(*args)
