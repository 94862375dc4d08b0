"""The kernel the Nyström page opens on: a flat kernel (every score alike) is detected and
the rule switches to one whose scores differ; kernel PCA draws the points without the
constant component that made every tick of PC 1 read "1"."""

import numpy as np
import pytest

from kmviz.kmc import nystrom_view as nv
from kmviz.kmc.analysis import KernelData, leverage_scores
from kmviz.kmc.analysis.kernel_data import kernel_pca2
from kmviz.kmc.rkhs import gaussian_kernel


def _data(K, name="k"):
    n = K.shape[0]
    data = KernelData(name=name, K=K, coords=kernel_pca2(K), labels=[str(i) for i in range(n)])
    data.eigen()
    return data


def _gaussian_plus_constant(n=200, seed=0):
    """A Gaussian kernel (plus the constant) on a crowd of n - 3 points and three isolated
    points far from it and from each other (the last three)."""
    rng = np.random.default_rng(seed)
    far = np.array([[8.0, 0.0], [0.0, 8.0], [-8.0, -8.0]])
    X = np.vstack([rng.normal(size=(n - 3, 2)), far])
    return gaussian_kernel(X, X, gamma=0.5) + 1.0


def test_identity_plus_constant_is_flat_and_a_clustered_kernel_is_not():
    n = 40
    flat = _data(np.eye(n) + 1.0)
    _, s_flat = nv.opening_scores(flat)
    # by symmetry every point of I + 11^T has one score: brute force agrees
    alpha = 0.7
    exact = np.diag(flat.K @ np.linalg.inv(flat.K + alpha * np.eye(n)))
    assert np.allclose(leverage_scores(flat, alpha)[0], exact)
    assert np.ptp(exact) < 1e-12 and nv.scores_flat(s_flat)
    _, s = nv.opening_scores(_data(_gaussian_plus_constant()))
    assert not nv.scores_flat(s)
    # the isolated points stick out: they score highest
    assert set(np.argsort(s)[-3:]) == {197, 198, 199}


def test_a_flat_row_kernel_switches_to_the_column_kernel_and_says_why():
    kernels = {"row_kernel": _data(np.eye(30) + 1.0), "col_kernel": _data(_gaussian_plus_constant())}
    asked = []

    def prepare(source):
        asked.append(source)
        return kernels[source]

    choice = nv.opening_source(prepare)
    assert asked == ["row_kernel", "col_kernel"]
    assert choice.source == "col_kernel" and choice.switched
    assert "identity plus the all-ones constant" in choice.reason
    assert "row kernel" in choice.reason
    # the switch gives scores that are not flat
    assert not nv.scores_flat(nv.opening_scores(kernels[choice.source])[1])


def test_a_non_flat_row_kernel_is_kept_and_two_flat_kernels_fall_back_to_the_mixture():
    kept = nv.opening_source(lambda s: _data(_gaussian_plus_constant(seed=1)))
    assert kept.source == "row_kernel" and not kept.switched
    both = nv.opening_source(lambda s: _data(2.0 * np.eye(25)))
    assert both.source == nv.FALLBACK_SOURCE and both.switched
    assert both.reason.count("it is the identity:") == 2


def test_a_missing_kernel_is_skipped_with_its_reason():
    def prepare(source):
        if source == "row_kernel":
            raise ValueError("this run (pg) keeps no row kernel")
        return _data(_gaussian_plus_constant())

    choice = nv.opening_source(prepare)
    assert choice.source == "col_kernel" and "keeps no row kernel" in choice.reason


def test_kernel_pca_drops_the_constant_and_matches_the_centred_decomposition():
    K = _gaussian_plus_constant()
    n = K.shape[0]
    coords = kernel_pca2(K)
    H = np.eye(n) - 1.0 / n
    sig, Q = np.linalg.eigh(H @ K @ H)
    brute = Q[:, -2:][:, ::-1] * np.sqrt(sig[-2:][::-1])
    assert np.allclose(np.abs(coords), np.abs(brute), atol=1e-8)
    assert np.allclose(coords.mean(axis=0), 0.0, atol=1e-8)
    # the uncentred first component is nearly constant (what read "1" on every tick)
    s0, Q0 = np.linalg.eigh(K)
    first = Q0[:, -1] * np.sqrt(s0[-1])
    assert np.ptp(first) < 0.5 * np.ptp(coords[:, 0])


@pytest.mark.parametrize("n", [5, 300])
def test_kernel_pca_of_the_centred_identity_spreads_the_points(n):
    # a degenerate spectrum (the centred identity): the subset eigensolver returns nothing
    # there, the full one is used
    coords = kernel_pca2(np.eye(n) + 1.0)
    assert coords.shape == (n, 2) and np.all(np.ptp(coords, axis=0) > 0.1)


@pytest.mark.slow
def test_a_kmc_run_without_side_information_opens_on_the_mixture():
    from kmviz import families
    from kmviz.data import load, make_split
    from kmviz.kmc import analysis as an

    fam = families.get("kmc")
    ratings = load("planted-km", n_users=40, n_items=25)
    split = make_split(ratings, val_size=0.1, test_size=0.2, seed=0)
    params = fam.dataset_defaults(ratings, "planted-km").params
    assert params["add_constant"]  # the identity kernels plus the constant
    model = fam.make({**params, "max_iter": 20}).fit(split.train)

    def prepare(source):
        data = an.run_kernel_data(model, split, source.split("_")[0])
        data.eigen()
        return data

    choice = nv.opening_source(prepare)
    assert choice.source == "mixture" and choice.switched
    assert choice.reason.count("identity plus the all-ones constant") == 2
    mixture = an.points_data("mixture")
    assert not nv.scores_flat(nv.opening_scores(mixture)[1])


def test_a_small_kernel_is_not_called_flat_for_its_size():
    # at m = n every score is near 1 whatever the kernel: the page starts from n / 2
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(size=(27, 2)), [[6.0, 6.0], [-6.0, 6.0], [6.0, -6.0]]])
    small = _data(gaussian_kernel(X, X, gamma=0.5))
    assert nv.default_landmarks(30) == 15 and nv.default_landmarks(400) == 50
    assert nv.default_landmarks(8) == 5
    _, s = nv.opening_scores(small)
    assert not nv.scores_flat(s) and set(np.argsort(s)[-3:]) == {27, 28, 29}
