"""The kernel warm-up serves the user: the family they pick (or whose page they open) compiles
first, a fit waits only for its own family's kernels, and a Train click is never lost.

The ordering is tested without Streamlit (WarmUpOrder, then WarmUp with a fake compile that
blocks until the test releases it); the pages through AppTest with such a fake warm-up in
place of the server's.
"""

import threading
import time

import pytest

from kmviz.ui import training
from kmviz.ui.state import StateKeys
from kmviz.ui.warmup import (COMPILING, FAILED, INTERRUPTED, PENDING, READY, WarmUp,
                             WarmUpOrder)
from tests.app.apphelpers import (TRAIN, button, goto, load_builtin, new_session,
                                  pick_family, texts, wait_job)

NAMES = ["km", "ocmf", "kmc", "gfm"]
WAIT = 60.0


# ------------------------------------------------------------------ the order alone
def run_all(order, fit_running=False):
    """Compile everything in the order's choice, one at a time; the names in that order."""
    done = []
    while (name := order.next(fit_running=fit_running)) is not None:
        order.start(name)
        order.finish(name, READY)
        done.append(name)
    return done


def test_registry_order_when_nobody_asks():
    assert run_all(WarmUpOrder(NAMES)) == NAMES


def test_the_family_asked_last_comes_first_then_the_others_asked_then_the_rest():
    order = WarmUpOrder(NAMES)
    order.ask("kmc")
    order.ask("gfm")
    order.ask("no-such-family")  # ignored
    assert order.queue() == ["gfm", "kmc", "km", "ocmf"]
    assert run_all(order) == ["gfm", "kmc", "km", "ocmf"]


def test_a_waiting_fit_beats_the_latest_choice():
    order = WarmUpOrder(NAMES)
    order.wait_started("ocmf")
    order.ask("gfm")  # picked afterwards, nobody waits for it
    assert order.queue()[:2] == ["ocmf", "gfm"]
    order.wait_ended("ocmf")
    assert order.queue()[:2] == ["gfm", "ocmf"]


def test_an_unwanted_compile_is_interrupted_for_a_wanted_one_and_redone_later():
    order = WarmUpOrder(NAMES)
    order.start(order.next())           # km, nobody asked for it
    assert not order.should_interrupt()
    order.ask("gfm")
    assert order.should_interrupt()
    order.finish("km", INTERRUPTED)
    assert order.state["km"] == PENDING and order.current is None
    assert run_all(order) == ["gfm", "km", "ocmf", "kmc"]


def test_a_compile_that_a_fit_or_the_latest_choice_needs_is_not_interrupted():
    order = WarmUpOrder(NAMES)
    order.ask("km")
    order.start(order.next())           # km, the user's choice
    order.ask("km")                     # chosen again (every run of the Train page)
    assert not order.should_interrupt()
    order = WarmUpOrder(NAMES)
    order.wait_started("km")            # a fit waits for km
    order.start(order.next())
    order.ask("gfm")                    # another session picks gFM
    assert order.current == "km" and not order.should_interrupt()


def test_only_a_demanded_family_compiles_while_a_fit_runs():
    order = WarmUpOrder(NAMES)
    assert order.next(fit_running=True) is None
    order.ask("ocmf")
    order.ask("kmc")                    # picked last
    assert order.next(fit_running=True) == "kmc"
    order.start("kmc")
    order.finish("kmc", READY)
    assert order.next(fit_running=True) is None   # ocmf was picked before: it waits
    order.wait_started("gfm")
    assert order.next(fit_running=True) == "gfm"  # a fit waits for it
    order.start("gfm")
    order.finish("gfm", READY)
    order.wait_ended("gfm")
    assert order.next(fit_running=False) == "ocmf"


def test_failed_counts_as_finished():
    order = WarmUpOrder(["km", "gfm"])
    order.start("km")
    order.finish("km", FAILED)
    assert not order.finished
    order.start("gfm")
    order.finish("gfm", READY)
    assert order.finished and order.next() is None


# ------------------------------------------------------------------ the worker thread
class FakeCompile:
    """compile(module, cancel): blocks until the test releases that module (or cancel);
    records every start."""

    def __init__(self, fail=()):
        self.release = {}
        self.started = []
        self.fail = set(fail)
        self.lock = threading.Lock()

    def gate(self, module):
        with self.lock:
            return self.release.setdefault(module, threading.Event())

    def __call__(self, module, cancel):
        with self.lock:
            self.started.append(module)
        gate = self.gate(module)
        while not gate.wait(0.01):
            if cancel.is_set():
                return INTERRUPTED, ""
        if module in self.fail:
            raise RuntimeError(f"{module} broke")
        return READY, ""

    def let(self, *modules):
        for m in modules:
            self.gate(m).set()

    def wait_started(self, module, n=1):
        end = time.time() + WAIT
        while self.started.count(module) < n:
            assert time.time() < end, (module, self.started)
            time.sleep(0.01)


def fake_warm_up(fail=(), fit_running=lambda: False):
    fake = FakeCompile(fail)
    warm = WarmUp([(n, n.upper(), f"mod.{n}") for n in NAMES], compile=fake,
                  fit_running=fit_running)
    return warm, fake


def test_worker_compiles_in_registry_order_when_nobody_asks():
    warm, fake = fake_warm_up()
    warm.start()
    fake.let(*[f"mod.{n}" for n in NAMES])
    assert warm.done.wait(WAIT)
    assert warm.history == [(n, READY) for n in NAMES]
    assert fake.started == [f"mod.{n}" for n in NAMES]


def test_a_fit_waits_only_for_its_own_family():
    warm, fake = fake_warm_up()
    warm.start()
    fake.wait_started("mod.km")              # km compiles first, nobody asked for it
    result = {}
    fit = threading.Thread(target=lambda: result.setdefault("ok", warm.wait_for("gfm")))
    fit.start()
    fake.wait_started("mod.gfm")             # km was interrupted for the fit's family
    assert warm.status("km")["state"] == PENDING
    status = warm.status("gfm")
    assert status["state"] == COMPILING and status["before"] == []
    assert status["after"] == ["KM", "OCMF", "KMC"]
    fake.let("mod.gfm")
    fit.join(WAIT)
    assert result == {"ok": True}
    # gFM's fit went ahead while the others are still to compile
    assert [warm.status(n)["state"] for n in ("ocmf", "kmc")] == [PENDING, PENDING]
    assert warm.history[:2] == [("km", INTERRUPTED), ("gfm", READY)]
    fake.let("mod.km", "mod.ocmf", "mod.kmc")
    assert warm.done.wait(WAIT)
    assert [n for n, outcome in warm.history if outcome == READY] == ["gfm", "km", "ocmf",
                                                                        "kmc"]
    assert fake.started.count("mod.km") == 2  # taken up again after gFM


def test_picking_a_family_compiles_it_next_and_the_others_after():
    warm, fake = fake_warm_up()
    warm.ask("kmc")                          # picked before the worker started
    warm.start()
    fake.wait_started("mod.kmc")
    warm.ask("ocmf")                         # then another pick: kmc gives way
    fake.wait_started("mod.ocmf")
    assert warm.order() == ["ocmf", "kmc", "km", "gfm"]
    fake.let(*[f"mod.{n}" for n in NAMES])
    assert warm.done.wait(WAIT)
    assert [n for n, outcome in warm.history if outcome == READY] == ["ocmf", "kmc", "km",
                                                                        "gfm"]


def test_a_failed_warm_up_releases_its_fit_with_the_reason():
    warm, fake = fake_warm_up(fail={"mod.ocmf"})
    warm.start()
    fake.let("mod.ocmf")
    assert warm.wait_for("ocmf", timeout=WAIT)
    status = warm.status("ocmf")
    assert status["state"] == FAILED and "mod.ocmf broke" in status["error"]
    assert warm.ready("ocmf")  # nothing more to wait for: the fit compiles itself


def test_waiting_ends_when_the_fit_is_stopped():
    warm, fake = fake_warm_up()
    warm.start()
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    assert warm.wait_for("gfm", stop) is False
    assert warm.wait_for("gfm", timeout=0.2) is False
    fake.let(*[f"mod.{n}" for n in NAMES])
    assert warm.done.wait(WAIT)
    assert warm.wait_for("gfm") is True


def test_many_threads_asking_and_waiting_at_once():
    warm, fake = fake_warm_up()
    warm.start()
    results = []

    def session(k):
        for j in range(20):
            warm.ask(NAMES[(k + j) % 4])
        results.append(warm.wait_for(NAMES[k % 4], timeout=WAIT))

    threads = [threading.Thread(target=session, args=(k,)) for k in range(12)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    fake.let(*[f"mod.{n}" for n in NAMES])
    for t in threads:
        t.join(WAIT)
    assert warm.done.wait(WAIT)
    assert results == [True] * 12
    ready = [n for n, outcome in warm.history if outcome == READY]
    assert sorted(ready) == sorted(NAMES)  # each compiled to the end exactly once


@pytest.mark.slow
def test_deferred_while_a_fit_runs_then_resumed():
    running = threading.Event()
    running.set()
    warm, fake = fake_warm_up(fit_running=running.is_set)
    warm.start()
    fake.let(*[f"mod.{n}" for n in NAMES])
    time.sleep(0.5)
    assert fake.started == []                 # nobody asked: the fit has the cores
    warm.ask("gfm")
    fake.wait_started("mod.gfm")
    assert warm.wait_for("gfm", timeout=WAIT)
    time.sleep(0.3)
    assert fake.started == ["mod.gfm"]
    running.clear()
    assert warm.done.wait(WAIT)
    assert fake.started == ["mod.gfm", "mod.km", "mod.ocmf", "mod.kmc"]


# ------------------------------------------------------------------ the pages
@pytest.fixture()
def fake_server_warm_up(monkeypatch):
    """The server's warm-up replaced by one whose compiles wait for the test."""
    warm, fake = fake_warm_up()
    monkeypatch.setattr(training, "_WARM_UP", warm.start())
    yield warm, fake
    fake.let(*[f"mod.{n}" for n in NAMES])


def test_train_page_says_the_chosen_family_compiles_and_its_fit_waits_only_for_it(
        fake_server_warm_up):
    warm, fake = fake_server_warm_up
    at = load_builtin(new_session(), "planted-lowrank", n_users=40, n_items=30)
    at = pick_family(at, "gfm")
    fake.wait_started("mod.gfm")              # the pick moved gFM ahead of KM
    assert warm.order()[0] == "gfm"
    at.run()
    notice = [t for t in texts(at) if "Compiling the Numba kernels of GFM" in t]
    assert notice and "A fit you start now begins as soon as" in notice[0]
    # Train now: the job waits for gFM's kernels, and says so
    at.number_input(key="train_gfm_rank").set_value(2)
    at.number_input(key="train_gfm_n_passes").set_value(3)
    button(at, "Train").click().run()
    assert not at.exception and not at.error
    job = at.session_state[StateKeys.JOB]
    assert job.family == "gfm" and job.status == "compiling"
    assert at.session_state[StateKeys.TRAIN_REQUEST] is None  # started once
    shown = " ".join(texts(at))
    assert "Compiling the Numba kernels of GFM" in shown
    assert "Training starts as soon as they are ready" in shown
    assert any("Compiling the kernels of gFM: not training yet" in p.proto.text
               for p in at.get("progress"))
    fake.let("mod.gfm")                       # only gFM's: KM, OCMF, KMC still pending
    wait_job(at)
    assert job.status == "done", job.progress()["message"]
    assert warm.status("km")["state"] in (PENDING, COMPILING)
    assert any(t.startswith("Result:") for t in texts(at))


def test_a_pending_train_request_is_started_once_by_the_next_run(fake_server_warm_up):
    warm, fake = fake_server_warm_up
    fake.let(*[f"mod.{n}" for n in NAMES])
    assert warm.done.wait(WAIT)
    at = goto(new_session(), TRAIN)
    # a click whose own run was cut short: its callback left the request behind
    params = dict(at.session_state["kmviz_params_km"], D=3, max_iter=2, tol=0.0)
    at.session_state[StateKeys.TRAIN_REQUEST] = {"id": "click-1", "family": "km",
                                                 "params": params, "at": time.time()}
    at.run()
    job = at.session_state[StateKeys.JOB]
    assert job is not None and job.request_id == "click-1" and job.params["D"] == 3
    assert at.session_state[StateKeys.TRAIN_REQUEST] is None
    wait_job(at)
    # the same request again (a run interrupted after starting it): not a second fit
    at.session_state[StateKeys.TRAIN_REQUEST] = {"id": "click-1", "family": "km",
                                                 "params": params, "at": time.time()}
    at.run()
    assert at.session_state[StateKeys.JOB] is job
    assert len(at.session_state[StateKeys.RUNS]) == 1


def test_opening_a_family_page_compiles_it_next(fake_server_warm_up):
    warm, fake = fake_server_warm_up
    at = goto(new_session(), "app_pages/gfm_recovery.py")
    fake.wait_started("mod.gfm")
    assert warm.order()[0] == "gfm"
    goto(at, "app_pages/kmc_completion.py")   # "train a model first", but kmc goes ahead
    fake.wait_started("mod.kmc")
    assert warm.order()[:2] == ["kmc", "gfm"]


# ------------------------------------------------------------------ the child process
@pytest.mark.slow
def test_compile_in_child_reports_a_failing_module_and_stops_on_cancel(tmp_path,
                                                                       monkeypatch):
    from kmviz.ui.warmup import compile_in_child

    outcome, message = compile_in_child("kmviz.no_such_warmup", threading.Event())
    assert outcome == FAILED and "No module named" in message
    (tmp_path / "sleepy_warmup.py").write_text("import time\ntime.sleep(600)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    outcome, message = compile_in_child("sleepy_warmup", cancel)  # killed, not 600 s
    assert outcome == INTERRUPTED and message == ""


def test_a_second_click_while_the_fit_waits_and_a_refused_request(fake_server_warm_up):
    warm, fake = fake_server_warm_up
    at = goto(new_session(), TRAIN)            # KM picked: KM compiles, held by the test
    fake.wait_started("mod.km")
    at.number_input(key="train_km_max_iter").set_value(2)
    button(at, "Train").click().run()
    job = at.session_state[StateKeys.JOB]
    assert job.status == "compiling"
    button(at, "Train").click().run()          # again, while the first waits
    assert at.session_state[StateKeys.JOB] is job
    assert at.session_state[StateKeys.TRAIN_REQUEST] is None
    assert any("A training run is in progress" in w.value for w in at.warning)
    at.button(key="train_stop").click().run()  # Stop ends the wait: nothing trained
    wait_job(at)
    assert job.status == "stopped" and job.progress()["message"] == \
        "Stopped before training started."
    assert at.session_state[StateKeys.RUNS] == {}
    # a request the estimator refuses: its message on the page, no fit
    bad = dict(at.session_state["kmviz_params_km"], D=0)
    at.session_state[StateKeys.TRAIN_REQUEST] = {"id": "click-2", "family": "km",
                                                 "params": bad, "at": time.time()}
    at.run()
    assert at.session_state[StateKeys.JOB] is job and at.error
    assert "D" in at.error[0].value and at.session_state[StateKeys.TRAIN_REQUEST] is None


def test_compile_message_names_the_family_what_comes_before_and_after():
    from kmviz.ui.views import compile_message

    base = {"title": "gFM", "seconds": 12.4, "current": "gFM", "before": [],
            "after": ["KM", "OCMF"], "error": ""}
    text = compile_message(dict(base, state=COMPILING))
    assert text.startswith("Compiling the Numba kernels of gFM (12 s so far).")
    assert text.endswith("Still to compile after it: KM, OCMF.")
    text = compile_message(dict(base, state=PENDING, current="KM", before=["KM"],
                                after=["OCMF"]))
    assert text.startswith("The Numba kernels of gFM compile next, after those of KM.")
    text = compile_message(dict(base, state=FAILED, error="python -m x: boom"))
    assert "failed (python -m x: boom)" in text and "a fit compiles them itself" in text
    assert compile_message(dict(base, state=READY)) == "The Numba kernels of gFM are compiled."


def test_while_a_fit_waits_the_page_shows_only_its_own_familys_result(
        fake_server_warm_up):
    """A finished gFM run, then an OCMF fit waiting for its kernels: the OCMF form shows
    neither the gFM result nor its "Done" (issue 33: status and results belong to the
    family they describe), and its own result once the fit ends; back on gFM, the gFM
    result is there again."""
    warm, fake = fake_server_warm_up
    at = load_builtin(new_session(), "planted-lowrank", n_users=40, n_items=30)
    at = pick_family(at, "gfm")
    fake.let("mod.gfm")
    at.number_input(key="train_gfm_rank").set_value(2)
    at.number_input(key="train_gfm_n_passes").set_value(2)
    button(at, "Train").click().run()
    wait_job(at)
    first = [s.value for s in at.subheader if s.value.startswith("Result:")]
    assert first and "gFM" in first[0], [s.value for s in at.subheader]
    at.selectbox(key="train_family").set_value("ocmf").run()
    at.number_input(key="train_ocmf_max_iter").set_value(2)
    button(at, "Train").click().run()
    job = at.session_state[StateKeys.JOB]
    assert job.family == "ocmf" and not job.done
    heads = [s.value for s in at.subheader]
    assert not [h for h in heads if "gFM" in h], heads
    assert not [s.value for s in at.success if "Finished" in s.value]
    fake.let("mod.ocmf")
    wait_job(at)
    heads = [s.value for s in at.subheader]
    assert [h for h in heads if h.startswith("Result:") and "OCMF" in h], heads
    assert not [h for h in heads if "gFM" in h], heads
    at.selectbox(key="train_family").set_value("gfm").run()
    heads = [s.value for s in at.subheader]
    assert [h for h in heads if h.startswith("Result:") and "gFM" in h], heads
    assert not [h for h in heads if "OCMF" in h], heads


def test_warm_up_compiles_run_in_process_while_a_cluster_backend_is_active():
    # the server's warm-up loads each family's kernels with small fits; inside `kmviz app
    # --dask` (or while another thread fits on a cluster) those must not go to the cluster
    from kmviz import parallel

    seen = []

    def compile(module, cancel):
        seen.append(parallel.active_backend())
        return READY, ""

    backend = parallel.DaskBackend.__new__(parallel.DaskBackend)   # no cluster needed
    with parallel._lock:
        parallel._stack.append(backend)
    try:
        warm = WarmUp([("km", "KM", "mod.km"), ("ocmf", "OCMF", "mod.ocmf")],
                      compile=compile).start()
        assert warm.done.wait(WAIT)
        assert seen == [None, None] and parallel.active_backend() is backend
    finally:
        with parallel._lock:
            parallel._stack.remove(backend)
