"""The shared side-feature encoding (kmviz.data.features): one module for every family."""

import numpy as np
import pandas as pd
import pytest

from kmviz.data import check_feature_matrix, encode_features, normalize_rows
from kmviz.exceptions import DataValueError


def test_encoding_rules_one_hot_flags_and_standardized_numbers():
    df = pd.DataFrame({"genre": ["a", "b", None, "a"], "drama": [1, 0, 1, 0],
                       "year": [1990.0, 2000.0, 2010.0, 2000.0]})
    X, names, info = encode_features(df)
    assert names == ["genre=a", "genre=b", "drama", "year"]
    D = X.toarray()
    np.testing.assert_array_equal(D[:, :2], [[1, 0], [0, 1], [0, 0], [1, 0]])
    np.testing.assert_array_equal(D[:, 2], [1, 0, 1, 0])
    assert abs(D[:, 3].mean()) < 1e-12 and abs(D[:, 3].std() - 1) < 1e-12
    assert info == {"n_missing_filled": 0, "n_rows_without_features": 0}


def test_missing_numbers_are_refused_or_filled_with_the_mean():
    df = pd.DataFrame({"age": [20.0, np.nan, 40.0], "sex": ["F", "M", "F"]})
    with pytest.raises(DataValueError, match="'age' has 1 missing value"):
        encode_features(df, what="user_features")
    X, _, info = encode_features(df, missing="zero")
    assert info["n_missing_filled"] == 1 and X.toarray()[1, 0] == 0.0


def test_check_feature_matrix_validates_rows_and_values():
    X, names = check_feature_matrix(np.eye(3), 3, "item_features")
    assert X.shape == (3, 3) and names == ["f0", "f1", "f2"]
    with pytest.raises(DataValueError, match="has 2 rows but there are 3 items"):
        check_feature_matrix(np.ones((2, 2)), 3, "item_features", n_users_word="items")
    with pytest.raises(DataValueError, match="NaN or infinite"):
        check_feature_matrix(np.array([[1.0, np.nan]]), 1, "user_features")
    assert abs(normalize_rows(X * 2, "l1").sum(axis=1) - 1).max() < 1e-12


def test_the_families_use_the_shared_functions():
    from kmviz.ocmf import check_feature_matrix as ocmf_check
    from kmviz.ocmf import encode_features as ocmf_encode
    from kmviz.ocmf.features import normalize_rows as ocmf_normalize
    from kmviz.similarity import inputs

    assert ocmf_encode is encode_features and ocmf_check is check_feature_matrix
    assert ocmf_normalize is normalize_rows
    assert inputs.encode_features is encode_features
