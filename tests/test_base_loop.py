"""The shared outer loop on toy estimators: what every family gets without writing it."""

import math
import warnings

import pytest

from kmviz._base import IterativeEstimator, LoopPolicy, Step
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


class OwnCriterion(Rising):
    """Stops on a criterion of its own (a residual), with the reason in its words."""

    def _fit_step(self, state, trace, it):
        state["k"] += 1
        return Step({"objective": float(it)}, converged=it == 3,
                    reason=f"residual {10.0 ** -it:.0e} below 1e-3" if it == 3 else "")


def test_a_family_criterion_stops_the_fit_with_its_own_words():
    calls = []
    m = OwnCriterion(max_iter=10).fit(None, callback=lambda row: calls.append(row) or True)
    assert m.k_ == 3 and len(calls) == 3  # the user's callback saw every row, and said go on
    assert m.trace_.stop_reason == "converged"
    assert m.trace_.stop_message == "residual 1e-03 below 1e-3"
    assert not any(e["message"] == "stopped by the user" for e in m.trace_.events)
    assert any(e["message"] == "converged: residual 1e-03 below 1e-3" for e in m.trace_.events)
    # the user's stop wins over the family's criterion in the same row
    m = OwnCriterion(max_iter=10).fit(None, callback=lambda row: row["iteration"] < 3)
    assert m.trace_.stop_reason == "callback" and m.trace_.stop_message == "stopped by the user"


class Monotone(Rising):
    """Declares a monotone objective through its policy (a method, never a class attribute
    set during a fit), with its own end message."""

    def _loop_policy(self, params, state):
        return LoopPolicy(max_iter=params["max_iter"], monotone=True,
                          end_message="all batches used")


def test_loop_policy_is_a_method_read_once_per_fit():
    m = Monotone(max_iter=3).fit(None)
    rises = [e for e in m.trace_.events if e["kind"] == "warning"]
    assert len(rises) == 2 and m.trace_.column("objective_increase").tolist() == [0, 1, 1]
    assert m.trace_.stop_reason == "max_iter" and m.trace_.stop_message == "all batches used"
    assert "_loop_policy" not in vars(m) and "monotone" not in vars(m)
    # the default policy: without a declared tol there is no stopping rule and no budget
    r = Rising(max_iter=2).fit(None)
    assert "objective_increase" not in r.trace_.rows[0]
    assert r.trace_.stop_message == "all 2 iteration(s) done"


def test_stop_message_survives_a_round_trip():
    from kmviz.trace import Trace

    m = OwnCriterion(max_iter=10).fit(None)
    again = Trace.from_json(m.trace_.to_json())
    assert again.stop_message == m.trace_.stop_message
    old = m.trace_.to_dict()
    del old["stop_message"]  # a trace saved before stop messages existed still loads
    assert Trace.from_dict(old).stop_message == ""


def test_the_app_says_the_stop_reason_once():
    from kmviz.trace import Trace
    from kmviz.ui.training import stop_words

    t = Trace(solver="x", stop_reason="converged",
              stop_message="CG converged: relative residual 9e-07 <= tol 1e-06")
    assert stop_words(t) == "CG converged: relative residual 9e-07 <= tol 1e-06"
    t.stop_message = "the objective's relative decrease 3e-05 is below tol 0.0001"
    assert stop_words(t).startswith("converged: the objective's relative decrease")
    assert stop_words(Trace(solver="x", stop_reason="max_iter")) == \
        "the iteration budget was used up"  # a run saved before stop messages


class FixedPoint(Rising):
    """Reaches a fixed point at once: its objective then wobbles by rounding noise."""

    _parameter_constraints = {"max_iter": Param(int, low=1), "tol": Param(float, low=0)}

    def __init__(self, max_iter=6, tol=0.0):
        self.max_iter, self.tol = max_iter, tol

    def _fit_step(self, state, trace, it):
        state["k"] += 1
        return {"objective": 1.0 + (1e-16 if it % 2 else 0.0)}


def test_tol_zero_runs_the_whole_budget_through_a_fixed_point():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # tol = 0: no rule, no warning
        m = FixedPoint(max_iter=6, tol=0.0).fit(None)
    assert m.k_ == 6 and m.trace_.stop_reason == "max_iter"
    # with a tolerance the same wobble is a stop: the decrease, 0 or -1e-16, is below it
    m = FixedPoint(max_iter=6, tol=1e-9).fit(None)
    assert m.k_ == 2 and m.trace_.stop_reason == "converged"
