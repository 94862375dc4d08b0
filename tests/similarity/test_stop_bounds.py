"""Stop always works and work per iteration is bounded (issue 35, defect 6).

The stochastic solvers make ceil(1 / rho) steps per outer iteration: rho has a declared
lower bound, and every inner loop (the stochastic steps, Newton's CG, the line search)
asks :func:`kmviz._jobs.stop_requested` after each step, so Stop ends a fit within one
inner step instead of after an iteration of unbounded length.
"""

import threading
import time

import pytest

from kmviz._jobs import BackgroundJob, stop_requested, stop_when
from kmviz.cli import main
from kmviz.exceptions import InvalidParameterError
from kmviz.similarity import SimilarityLearning
from kmviz.similarity.solvers.stochastic import MIN_SAMPLE_RATIO, steps_per_iteration
from kmviz.similarity.solvers import Settings
from kmviz.similarity.synthetic import make_planted_towers


@pytest.fixture(scope="module")
def data():
    ratings, _ = make_planted_towers(120, 80, random_state=0)
    return ratings


class FitJob(BackgroundJob):
    """A fit in a background thread, as the app's Train page runs one."""

    def __init__(self, model, ratings):
        super().__init__("kmviz-test-fit")
        self.model, self.ratings, self.rows, self.error = model, ratings, [], None
        self.first_row = threading.Event()
        self.ended_at = None

    def _run(self):
        try:
            self.model.fit(self.ratings, callback=self.rows.append)
        except Exception as exc:  # noqa: BLE001 - the test reads it
            self.error = exc
        self.ended_at = time.perf_counter()


def _stop_after(job, seconds):
    job.start()
    time.sleep(seconds)
    asked = time.perf_counter()
    job.stop()
    job.thread.join(30)
    assert not job.thread.is_alive(), "the fit did not end within 30 s of Stop"
    assert job.error is None, job.error
    return job.ended_at - asked


@pytest.mark.parametrize("solver", ["sogram", "sampling-diag"])
def test_a_tiny_allowed_sample_ratio_stops_within_an_iteration(data, solver):
    model = SimilarityLearning(k=4, solver=solver, sample_ratio=MIN_SAMPLE_RATIO,
                               learning_rate=1e-4, max_iter=50, random_state=0)
    planned = steps_per_iteration(Settings(rho=MIN_SAMPLE_RATIO))
    assert planned == 10_000
    lag = _stop_after(FitJob(model, data), 0.5)
    assert lag < 2.0
    trace = model.trace_
    assert trace.stop_reason == "callback" and trace.stop_message == "stopped by the user"
    # the iteration under way when Stop came ended early: fewer steps than planned
    assert 1 <= trace.rows[-1]["n_steps"] < planned
    assert model.user_factors_.shape == (data.n_users, 4)  # what was learned is kept


def _problem(data):
    from kmviz.similarity.allpairs import AllPairsProblem, ObservedPairs, constant_imputation
    from kmviz.similarity.towers import IdentityTower

    users, items = data.users.astype("int64"), data.items.astype("int64")
    m, n = data.n_users, data.n_items
    Pt, Qt = constant_imputation(-1.0, m, n)
    prob = AllPairsProblem(ObservedPairs(users, items, m, n), IdentityTower(m, 4),
                           IdentityTower(n, 4), None, None, "logistic", 0.25, 1.0, None, None,
                           Pt, Qt)
    import numpy as np

    return prob, prob.init(np.random.default_rng(0))


def test_every_inner_loop_asks_for_stop_after_each_step(data):
    """With the stop flag already set, CG takes one step, the line search one trial (and
    says it was interrupted, not that it found no decrease) and a stochastic iteration one
    step; without it they run on."""
    import numpy as np

    from kmviz.similarity.solvers import newton, stochastic
    from kmviz.similarity.solvers._line_search import armijo

    prob, theta = _problem(data)
    ev = prob.evaluate(theta)
    g = prob.gradient(ev)
    flag = threading.Event()
    flag.set()
    with stop_when(flag):
        assert stop_requested()
        _, n_cg, _ = newton.conjugate_gradient(prob, ev, g, 1e-12, 500)
        ls = armijo(prob, ev, g, -g, 1e12, 1e-4, 5)  # steps far too long: every trial fails
        st = stochastic.start(prob, theta, Settings(rho=1e-3, learning_rate=1e-3),
                              np.random.default_rng(0), name="sogram")
        row = stochastic.step(prob, st).values
    assert n_cg == 1
    assert not ls.accepted and ls.interrupted and ls.trials == 1
    assert row["n_steps"] == 1 and st.steps == 1
    assert not stop_requested()
    _, n_cg, _ = newton.conjugate_gradient(prob, ev, g, 1e-12, 500)
    ls = armijo(prob, ev, g, -g, 1e12, 1e-4, 5)
    assert n_cg > 1 and ls.trials == 5 and not ls.accepted and not ls.interrupted
    st = stochastic.start(prob, theta, Settings(rho=1e-2, learning_rate=1e-3),
                          np.random.default_rng(0), name="sampling")
    assert stochastic.step(prob, st).values["n_steps"] == 100


def test_a_job_thread_sees_its_own_stop_flag_only():
    seen = {}

    class Probe(BackgroundJob):
        def _run(self):
            seen["before"] = stop_requested()
            self.stop_event.wait(30)
            seen["after"] = stop_requested()

    job = Probe("kmviz-test-probe").start()
    time.sleep(0.05)
    job.stop()
    job.thread.join(30)
    assert seen == {"before": False, "after": True}
    assert not stop_requested()  # this thread has no flag


def test_stop_when_ends_a_python_fit_without_a_callback(data):
    flag = threading.Event()
    model = SimilarityLearning(k=4, solver="sogram", sample_ratio=MIN_SAMPLE_RATIO,
                               learning_rate=1e-4, max_iter=50, random_state=0)
    timer = threading.Timer(0.5, flag.set)
    timer.start()
    start = time.perf_counter()
    with stop_when(flag):
        model.fit(data)
    assert time.perf_counter() - start < 3.0
    assert model.trace_.stop_reason == "callback" and model.trace_.n_iter == 1
    assert not stop_requested()  # the flag is gone with its block


@pytest.mark.parametrize("solver", ["sogram", "sampling", "sogram-diag", "sampling-diag"])
@pytest.mark.parametrize("rho", [1e-9, 0.0, MIN_SAMPLE_RATIO / 2, 1.5])
def test_a_sample_ratio_outside_its_bounds_is_refused(data, solver, rho):
    model = SimilarityLearning(solver=solver, sample_ratio=rho)
    with pytest.raises(InvalidParameterError, match="sample_ratio") as info:
        model.fit(data)
    assert "0.0001" in str(info.value) or "1e-04" in str(info.value)


def test_the_declared_bound_reaches_the_form_and_the_cli(capsys):
    spec = SimilarityLearning._parameter_constraints["sample_ratio"]
    assert spec.low == MIN_SAMPLE_RATIO and spec.closed == "both"
    code = main(["train", "similarity", "--data", "km-toy", "--solver", "sogram",
                 "--sample-ratio", "1e-9", "--max-iter", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.startswith("error: ") and "sample_ratio" in err and len(err.splitlines()) == 1
