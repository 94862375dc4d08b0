"""A KM fit no better than the mean on validation says so: trace event, warning, CLI."""

import warnings

import numpy as np
import pytest

from kmviz.data import Ratings
from kmviz.exceptions import NoBetterThanMeanWarning
from kmviz.km.estimator import KolmogorovModel


def _noise(seed=0, n_users=60, n_items=30):
    rng = np.random.default_rng(seed)
    u, i = np.nonzero(rng.random((n_users, n_items)) < 0.5)
    return Ratings(u, i, rng.integers(1, 6, u.size).astype(float), n_users=n_users,
                   n_items=n_items, r_min=1, r_max=5)


def test_noise_fit_warns_with_the_fix():
    r = _noise()
    train, val = r.split(0.3, random_state=0)
    with pytest.warns(NoBetterThanMeanWarning, match="no better than predicting"):
        m = KolmogorovModel(D=8, max_iter=5, random_state=0).fit(train, validation=val)
    ours = m.nrmse(val)
    base = m.mean_predictor_metrics(train, val)["nrmse"]
    assert ours >= base          # the warning is true
    ev = [e for e in m.trace_.events if e["kind"] == "warning" and "mean" in e["message"]]
    assert len(ev) == 1 and ev[0]["fix_threshold"] == 4.0 and ev[0]["fix_lambda_theta"] == 1.0
    assert "Fix: train on the likes" in ev[0]["message"]


def test_a_fit_that_beats_the_mean_does_not_warn():
    from kmviz.data import load

    r = load("planted-km", random_state=0)     # KM data: KM beats the mean
    train, val = r.split(0.2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoBetterThanMeanWarning)
        m = KolmogorovModel(D=8, max_iter=5, random_state=0).fit(train, validation=val)
    assert m.nrmse(val) < m.mean_predictor_metrics(train, val)["nrmse"]
    assert not any("mean" in e["message"] for e in m.trace_.events if e["kind"] == "warning")


def test_kmviz_train_prints_it(capsys, tmp_path):
    from kmviz.cli import main

    r = _noise(1, 80, 30)
    path = tmp_path / "noise.csv"
    path.write_text("user,item,rating\n" + "".join(
        f"{u},{i},{v:g}\n" for u, i, v in zip(r.users, r.items, r.values)))
    code = main(["train", "km", "--data", str(path), "--max-iter", "5"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "no better than predicting the training mean" in err and "Fix:" in err


def test_on_zero_one_data_the_fix_is_a_strong_pull_not_the_likes():
    """0/1 entries (a basket file with absent pairs as 0): the likes are the ratings, so the
    fix names lambda_theta = 100 (what beat the mean on such data), not a threshold."""
    rng = np.random.default_rng(1)
    dense = rng.random((80, 25)) < 0.2
    u, i = np.nonzero(np.ones_like(dense))
    r = Ratings(u, i, dense[u, i].astype(float), n_users=80, n_items=25, r_min=0, r_max=1)
    train, val = r.split(0.3, random_state=0)
    with pytest.warns(NoBetterThanMeanWarning, match="no better than predicting"):
        m = KolmogorovModel(D=8, max_iter=5, random_state=0).fit(train, validation=val)
    ev = [e for e in m.trace_.events if e["kind"] == "warning" and "mean" in e["message"]]
    assert len(ev) == 1 and ev[0]["fix_lambda_theta"] == 100.0 and "fix_threshold" not in ev[0]
    assert "set lambda_theta = 100" in ev[0]["message"] and "likes" not in ev[0]["message"]
