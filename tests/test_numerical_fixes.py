"""Degenerate settings and extreme inputs give kmviz errors with a fix, never a raw ARPACK
or LinAlg error (issue 24, item 5)."""

import warnings

import numpy as np
import pytest

from kmviz.data.synthetic import make_planted_lowrank
from kmviz.exceptions import (
    DataValueError,
    InvalidParameterError,
    KmvizError,
    NumericalError,
)


@pytest.fixture(scope="module")
def data():
    return make_planted_lowrank(n_users=60, n_items=40, rank=3, random_state=0)[0]


def test_gfm_with_one_row_batches_says_why_and_what_to_change(data):
    from kmviz.gfm import GeneralizedFM

    with pytest.raises(InvalidParameterError, match=r"batch of 1 row.*zero residual.*Fix: use "
                                                    r"batch_size of at least 2.*"
                                                    r"fit_intercept=False"):
        GeneralizedFM(batch_size=1, rank=1, solver="onepass").fit(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = GeneralizedFM(batch_size=1, rank=1, solver="onepass", fit_intercept=False)
        assert model.fit(data) is model


def test_gfm_with_constant_targets_starts_without_arpack():
    from kmviz.gfm import GeneralizedFM

    X = np.random.default_rng(0).normal(size=(200, 12))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = GeneralizedFM(2, n_batches=2, random_state=0).fit(X, np.ones(200))
    assert np.allclose(model.predict(X), 1.0)


def test_gfm_initialization_failure_of_arpack_is_a_numerical_error(monkeypatch):
    from scipy.sparse.linalg import ArpackError

    from kmviz.gfm import onepass

    def failing(*args, **kwargs):
        raise ArpackError(-9)

    monkeypatch.setattr(onepass, "eigsh", failing)
    with pytest.raises(NumericalError, match=r"Lanczos initialization .* Fix: use larger "
                                             r"batches"):
        onepass._top_k_by_magnitude(lambda Z: Z, 50, 2, np.random.default_rng(0))


@pytest.mark.parametrize("who, n", [("user", 60), ("item", 40)])
def test_ocmf_features_of_1e300_are_refused_with_a_fix(data, who, n):
    from kmviz.ocmf import OneClassMF

    F = np.random.default_rng(0).normal(size=(n, 3))
    F[2, 1] = 1e300
    with pytest.raises(DataValueError, match=rf"{who}_features holds 1 value\(s\) larger than "
                                             r"1e\+100 .* row 2, column 1.*Fix: rescale"):
        OneClassMF(max_iter=2).fit(data, **{f"{who}_features": F})


def test_ocmf_non_finite_factors_in_the_eigen_basis_are_a_numerical_error():
    from kmviz.ocmf.problem import BlockProblem

    class Terms:
        Oc = np.full((2, 2), np.nan)

    with pytest.raises(NumericalError, match="no longer finite.*Fix: rescale") as e:
        BlockProblem(Terms(), None, 1.0, basis="eig")
    assert isinstance(e.value, KmvizError)
