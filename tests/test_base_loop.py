"""The shared outer loop on toy estimators: what every family gets without writing it."""

import math
import warnings

import pytest

from kmviz._base import IterativeEstimator
from kmviz._params import Param
from kmviz.exceptions import ConvergenceWarning


class Rising(IterativeEstimator):
    """Its objective rises every step (as a loss on fresh data may); no tol declared."""

    _parameter_constraints = {"max_iter": Param(int, low=1)}

    def __init__(self, max_iter=5):
        self.max_iter = max_iter

    def _fit_start(self, data, params, *, validation=None):
        return {"k": 0}

    def _fit_step(self, state, trace, it):
        with trace.phase("work"):
            state["k"] += 1
        return {"objective": float(it)}

    def _fit_publish(self, state, n_iter, trace):
        self.k_ = state["k"]
        self.n_iter_ = n_iter

    def evaluate(self, data):
        return {"score": 1.0}


class ClosedForm(Rising):
    """No max_iter: one step."""

    _parameter_constraints = {}

    def __init__(self):
        pass


def test_without_tol_a_rising_objective_does_not_stop_the_fit():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # no tol: nothing to warn about
        m = Rising(max_iter=5).fit(None)
    assert m.k_ == 5 and m.trace_.stop_reason == "max_iter"
    assert [r["iteration"] for r in m.trace_.rows] == [1, 2, 3, 4, 5]
    assert all(r["t_work_s"] >= 0 for r in m.trace_.rows)


def test_closed_form_is_one_step_with_validation_metrics():
    m = ClosedForm().fit(None, validation=object())
    assert m.trace_.n_iter == 1 and m.trace_.rows[0]["validation_score"] == 1.0


def test_callback_stop_and_non_finite_objective():
    m = Rising(max_iter=5).fit(None, callback=lambda row: row["iteration"] < 2)
    assert m.k_ == 2 and m.trace_.stop_reason == "callback"
    assert any(e["message"] == "stopped by the user" for e in m.trace_.events)

    class Broken(Rising):
        def _fit_step(self, state, trace, it):
            return {"objective": math.nan}

    with pytest.raises(Exception, match="the objective is nan at iteration 1"):
        Broken().fit(None)
