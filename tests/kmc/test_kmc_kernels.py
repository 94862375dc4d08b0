"""Kernels from prior information: graph-Laplacian and feature kernels, graph builders, and the
PSD gate (thesis §3.5)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp

from kmviz.exceptions import DataValueError, InvalidParameterError
from kmviz.kmc import rkhs as kn


def _path_graph(n):
    A = np.zeros((n, n))
    i = np.arange(n - 1)
    A[i, i + 1] = A[i + 1, i] = 1.0
    return A


def test_laplacian_rows_sum_to_zero_and_self_loops_are_ignored():
    A = _path_graph(5) * 2.0
    A[2, 2] = 7.0  # a self-loop changes nothing
    L = kn.laplacian(A)
    np.testing.assert_allclose(L.sum(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.diag(L), [2, 4, 4, 4, 2])


@pytest.mark.parametrize("eta", [0.3, 1.0, 2.5])
def test_graph_kernels_match_their_closed_forms(eta):
    A = kn.erdos_renyi_graph(12, 0.3, random_state=3).toarray()
    L = np.diag(A.sum(1)) - A
    np.testing.assert_allclose(kn.diffusion_kernel(A, eta), sla.expm(-eta * L), atol=1e-10)
    np.testing.assert_allclose(kn.regularized_laplacian_kernel(A, eta),
                               np.linalg.inv(np.eye(12) + eta * L), atol=1e-10)


def test_bandlimited_kernel_is_the_projector_on_the_smoothest_frequencies():
    A = _path_graph(10)
    K = kn.bandlimited_kernel(A, bandwidth=3)
    np.testing.assert_allclose(K @ K, K, atol=1e-10)
    assert round(np.trace(K)) == 3
    lam, Q = np.linalg.eigh(np.diag(A.sum(1)) - A)
    np.testing.assert_allclose(K, Q[:, :3] @ Q[:, :3].T, atol=1e-10)
    np.testing.assert_allclose(K @ np.ones(10), np.ones(10), atol=1e-10)  # DC kept


def test_spectral_weights():
    lam = np.array([0.0, 1.0, 2.0, 4.0])
    np.testing.assert_allclose(kn.spectral_weights(lam, "diffusion", eta=0.5),
                               np.exp(-0.5 * lam))
    np.testing.assert_allclose(kn.spectral_weights(lam, "regularized_laplacian", eta=2.0),
                               1 / (1 + 2 * lam))
    np.testing.assert_array_equal(kn.spectral_weights(lam, "bandlimited", bandwidth=2),
                                  [1, 1, 0, 0])


def test_graph_kernel_accepts_sparse_adjacency():
    A = kn.erdos_renyi_graph(15, 0.2, random_state=1)
    assert sp.issparse(A)
    np.testing.assert_allclose(kn.graph_kernel(A), kn.graph_kernel(A.toarray()))


def test_feature_kernels():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((9, 4))
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(kn.gaussian_kernel(X, gamma=0.7), np.exp(-0.7 * D), atol=1e-12)
    np.testing.assert_allclose(kn.gaussian_kernel(X), np.exp(-D / 4), atol=1e-12)
    np.testing.assert_allclose(kn.linear_kernel(X), X @ X.T)
    np.testing.assert_allclose(kn.pearson_kernel(X), np.corrcoef(X), atol=1e-12)
    for kind in kn.FEATURE_KERNELS:
        assert kn.is_psd(kn.feature_kernel(X, kind))


def test_pearson_kernel_refuses_a_constant_row():
    X = np.array([[1.0, 2.0, 3.0], [4.0, 4.0, 4.0], [0.0, 1.0, 0.0]])
    with pytest.raises(DataValueError, match="row 1 of the features is constant"):
        kn.pearson_kernel(X)


def test_features_with_missing_values_are_refused():
    X = np.array([[1.0, np.nan], [0.0, 1.0]])
    with pytest.raises(DataValueError, match="missing or infinite"):
        kn.gaussian_kernel(X)


def test_knn_graph_is_symmetric_with_at_least_k_neighbours():
    X = np.random.default_rng(2).standard_normal((30, 2))
    A = kn.knn_graph(X, k=4).toarray()
    np.testing.assert_array_equal(A, A.T)
    assert (np.diag(A) == 0).all()
    assert (A.sum(1) >= 4).all()
    M = kn.knn_graph(X, k=4, mutual=True).toarray()
    assert (M <= A).all() and M.sum() < A.sum()


def test_group_graph_links_same_labels_and_shared_groups():
    A = kn.group_graph(["eu", "asia", "eu", None, "asia", "eu"]).toarray()
    assert A[0, 2] == A[2, 5] == A[1, 4] == 1
    assert A[0, 1] == 0 and A[3].sum() == 0 and np.diag(A).sum() == 0
    genres = np.array([[1, 0, 1], [1, 1, 0], [0, 0, 1], [0, 0, 0]])
    G = kn.group_graph(genres).toarray()
    assert G[0, 1] == 1 and G[0, 2] == 1 and G[1, 2] == 0 and G[3].sum() == 0


def test_erdos_renyi_and_temporal_graphs():
    A = kn.erdos_renyi_graph(200, 0.03, random_state=7)
    B = kn.erdos_renyi_graph(200, 0.03, random_state=7)
    assert (A != B).nnz == 0
    D = A.toarray()
    np.testing.assert_array_equal(D, D.T)
    assert np.diag(D).sum() == 0
    assert 0.02 < D.sum() / (200 * 199) < 0.04
    T = kn.temporal_graph(30, width=10).toarray()
    assert T[0].sum() == 10 and T[15].sum() == 20 and T[0, 10] == 1 and T[0, 11] == 0


def test_geodesic_weights_decay_with_hops():
    A = kn.geodesic_weights(_path_graph(6))
    assert A[0, 0] == 1.0 and A[0, 1] > A[0, 2] > A[0, 5] > 0
    R = kn.geodesic_weights(_path_graph(6), row_normalize=True)
    np.testing.assert_allclose(R.sum(1), 1.0)


# ----------------------------------------------------------------------------- the PSD gate
def test_check_kernel_refuses_a_non_psd_kernel_with_the_jitter_that_repairs_it():
    K = np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalues 3 and -1
    with pytest.raises(DataValueError, match=r"row_kernel is not positive semidefinite: its "
                                             r"smallest eigenvalue is -1") as info:
        kn.check_kernel(K, "row_kernel")
    assert "jitter=" in str(info.value)
    with pytest.raises(DataValueError, match="after adding jitter=0.5"):
        kn.check_kernel(K, "row_kernel", jitter=0.5)
    fixed = kn.check_kernel(K, "row_kernel", jitter=1.0)
    np.testing.assert_allclose(fixed, K + np.eye(2))


def test_check_kernel_accepts_rounding_below_zero():
    X = np.random.default_rng(0).standard_normal((40, 3))
    K = X @ X.T  # rank 3: 37 eigenvalues are zero up to rounding
    np.testing.assert_allclose(kn.check_kernel(K), K)


@pytest.mark.parametrize("bad, n, message", [
    (np.ones((3, 2)), None, r"has shape \(3, 2\); expected a square 2-D matrix"),
    (np.eye(3), 4, r"has shape \(3, 3\); expected shape \(4, 4\)"),
    (np.array([[1.0, 0.5], [0.0, 1.0]]), None, "is not symmetric"),
    (np.array([[1.0, np.nan], [np.nan, 1.0]]), None, "NaN or infinite"),
    ("abc", None, "not a numeric matrix"),
])
def test_check_kernel_refuses_malformed_matrices(bad, n, message):
    with pytest.raises(DataValueError, match=message):
        kn.check_kernel(bad, "K", n=n)


def test_negative_jitter_and_bad_graph_settings_are_refused():
    with pytest.raises(InvalidParameterError, match="'jitter' parameter of check_kernel"):
        kn.check_kernel(np.eye(2), jitter=-1.0)
    with pytest.raises(InvalidParameterError, match="'eta' parameter"):
        kn.graph_kernel(_path_graph(4), eta=0.0)
    with pytest.raises(InvalidParameterError, match="'kind' parameter"):
        kn.graph_kernel(_path_graph(4), "heat")
    with pytest.raises(InvalidParameterError, match="'bandwidth' parameter"):
        kn.graph_kernel(_path_graph(4), "bandlimited", bandwidth=9)
    with pytest.raises(DataValueError, match="negative weight"):
        kn.laplacian(-_path_graph(4))


def test_linked_marks_entities_reached_through_the_kernel():
    K = kn.diffusion_kernel(np.block([[_path_graph(3), np.zeros((3, 2))],
                                      [np.zeros((2, 3)), _path_graph(2)]]))
    known = np.array([True, False, False, False, False])
    np.testing.assert_array_equal(kn.linked(K, known), [True, True, True, False, False])
    np.testing.assert_array_equal(kn.linked(np.eye(5), known), known)
