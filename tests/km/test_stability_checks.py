"""Issue 35, defects 13 and 9: stable_implications and mine_relations validate every
argument before any work, refits are bounded in memory before they start, and a refit
stops within a BCD iteration of the stop flag."""

import numpy as np
import pytest

from kmviz._memory import FitTooLargeError, memory_limit
from kmviz.data.planted_relations import make_planted_relations
from kmviz.exceptions import InvalidParameterError
from kmviz.km import stability
from kmviz.km.relations import mine_relations
from kmviz.km.stability import stable_implications


@pytest.fixture(scope="module")
def data():
    r, _ = make_planted_relations(120, 40, random_state=0)
    return r


@pytest.fixture
def no_refits(monkeypatch):
    """Any refit started fails the test: the checks must come first."""
    def boom(*a, **k):
        raise AssertionError("a refit started before the arguments were checked")
    monkeypatch.setattr(stability, "map_refits", boom)


PROBES = [
    ({"fraction": 2}, "fraction"), ({"fraction": 0}, "fraction"),
    ({"fraction": -1}, "fraction"), ({"fraction": float("nan")}, "fraction"),
    ({"fraction": "half"}, "fraction"),
    ({"items": [10000]}, "item index 10000"), ({"items": [-1]}, "item index -1"),
    ({"items": np.ones(7, bool)}, "mask has shape"),
    ({"level": 2}, "level"), ({"n_refits": "3"}, "n_refits"), ({"n_refits": 2.7}, "n_refits"),
    ({"n_refits": 0}, "n_refits"), ({"n_refits": 10_000}, "between 1 and"),
    ({"names": ["a", "b"]}, "2 names given for 40 items"),
]


@pytest.mark.parametrize("kwargs, match", PROBES)
def test_stable_implications_refuses_bad_arguments(data, no_refits, kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        stable_implications(data, **kwargs)


@pytest.mark.parametrize("kwargs, match", [p for p in PROBES if "fraction" not in p[0]])
def test_mine_relations_refuses_bad_arguments(data, kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        mine_relations(data, **kwargs)


def test_validation_of_another_shape_is_refused(data, no_refits):
    other, _ = make_planted_relations(100, 40, random_state=1)
    for fn in (stable_implications, mine_relations):
        with pytest.raises(InvalidParameterError, match="index space"):
            fn(data, validation=other)
    with pytest.raises(InvalidParameterError, match="must be a Ratings"):
        stable_implications(data, validation=np.zeros((3, 3)))


def test_refits_are_refused_before_they_start_when_over_the_limit(data, no_refits):
    est = stability.refit_memory_estimate(data, 200, 40, 8)
    assert est and all(v >= 0 for v in est.values())
    with memory_limit(sum(est.values()) // 2):
        with pytest.raises(FitTooLargeError, match="n_refits"):
            stable_implications(data, n_refits=200)
        with pytest.raises(FitTooLargeError, match="n_refits"):
            mine_relations(data, n_refits=200)


def test_a_refit_stops_within_one_iteration_of_the_flag(data):
    calls = {"n": 0}

    def stop():
        calls["n"] += 1
        return calls["n"] > 2      # true from the second BCD iteration's check on
    task = {"seed": 1, "resampling": "subsample", "fraction": 0.5,
            "settings": {"D": 4, "max_iter": 50, "tol": 0.0}}
    out = stability.map_refits(stability.refit_supports, [task], shared=data, stop=stop)
    assert out == []                 # the stopped refit is dropped, not half kept
    assert calls["n"] <= 4           # not 50 iterations
    whole = stability.refit_supports(task, data)
    assert whole["psi"].shape == (40, 4)
