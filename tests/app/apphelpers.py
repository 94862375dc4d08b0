"""Shared steps of the AppTest suites: sessions, loading data, training, reading the page.

Every test gets its own run store (tests/conftest.py sets KMVIZ_RUNS_DIR per test); the app,
the command line and RunStore() all read that variable, so runs saved by one are seen by the
others.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

from kmviz.ui.state import StateKeys

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 180  # Numba's first compile takes a while on a cold cache

HOME = "app_pages/home.py"
DATA = "app_pages/data.py"
TRAIN = "app_pages/train.py"
RUNS = "app_pages/runs.py"
CONVERGENCE = "app_pages/convergence.py"
KM_DUAL = "app_pages/km_dual.py"
KM_PHASES = "app_pages/km_phases.py"
KM_LANCZOS = "app_pages/km_lanczos.py"
KM_IMPLICATIONS = "app_pages/km_implications.py"
KM_PAGES = (KM_DUAL, KM_PHASES, KM_LANCZOS, KM_IMPLICATIONS)


def new_session() -> AppTest:
    """A new browser session on the Home page."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    return at


def goto(at: AppTest, page: str) -> AppTest:
    at.switch_page(page).run()
    assert not at.exception, (page, at.exception)
    return at


def load_builtin(at, name: str, **options) -> AppTest:
    """On the Data page: load the built-in dataset `name` with these number options."""
    goto(at, DATA)
    at.selectbox(key="data_builtin").set_value(name).run()
    for option, value in options.items():
        at.number_input(key=f"data_{name}_{option}").set_value(value)
    at.button(key="data_load_builtin").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at


def load_planted(at, n_users=30, n_items=20, D=3) -> AppTest:
    return load_builtin(at, "planted-km", n_users=n_users, n_items=n_items, D=D)


def wait_job(at, timeout=TIMEOUT) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if at.session_state[StateKeys.JOB].done:
            break
        time.sleep(0.2)
    at.run()
    assert at.session_state[StateKeys.JOB].done


def train_button(at):
    return [b for b in at.button if b.label == "Train"][0]


def pick_family(at, family: str) -> AppTest:
    """The Train page with the model family `family` chosen."""
    goto(at, TRAIN)
    at.selectbox(key="train_family").set_value(family).run()
    assert not at.exception, at.exception
    return at


def submit_train(at, numbers: dict, *, wait=True, timeout=TIMEOUT) -> AppTest:
    """On the Train page: set these number inputs (key: value), press Train and, if `wait`,
    wait for the job."""
    for key, value in numbers.items():
        at.number_input(key=key).set_value(value)
    before = at.session_state[StateKeys.JOB]
    train_button(at).click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    # the click's request (recorded by the button's callback) was started, once
    assert at.session_state[StateKeys.TRAIN_REQUEST] is None
    assert at.session_state[StateKeys.JOB] is not before
    if wait:
        wait_job(at, timeout)
    return at


def train(at, *, D=3, max_iter=3, tol=0.0, bqp_solver=None, wait=True) -> AppTest:
    """Set the KM form's main settings on the Train page and press Train."""
    goto(at, TRAIN)
    numbers = {"train_km_D": D, "train_km_max_iter": max_iter}
    if tol is not None:
        numbers["train_km_tol"] = tol
    if bqp_solver is not None:
        at.selectbox(key="train_km_bqp_solver").set_value(bqp_solver)
    return submit_train(at, numbers, wait=wait)


def only_run(at):
    runs = at.session_state[StateKeys.RUNS]
    assert len(runs) == 1, list(runs)
    return next(iter(runs.values()))


def wait_for_relations(at, timeout: float = 600):
    """Waits for the Implications page's relation-mining job of this session to end, then
    runs the page again (it then shows the table); returns the job."""
    jobs = at.session_state["impl_rel_jobs"]
    job = next(iter(jobs.values()))
    end = time.time() + timeout
    while not job.done and time.time() < end:
        time.sleep(0.5)
    assert job.done and job.error is None, job.error
    at.run()
    return job


def wait_page_job(at, key: str, timeout: float = 300):
    """Waits for the page job ``key`` (:mod:`kmviz.ui.page_jobs`) of this session to end,
    then runs the page again (it then draws the result); returns the job."""
    job = at.session_state["page_jobs"][key]
    end = time.time() + timeout
    while not job.done and time.time() < end:
        time.sleep(0.1)
    assert job.done, f"page job {key} still {job.status} after {timeout} s"
    at.run()
    return job


def metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


def button(at, label: str):
    found = [b for b in at.button if b.label == label]
    assert found, (label, [b.label for b in at.button])
    return found[0]


def plotly_specs(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def plain_text(markdown: str) -> str:
    """What a Markdown string escaped with md_escape shows: the backslashes removed."""
    return re.sub(r"\\(.)", r"\1", str(markdown))


def texts(at) -> list[str]:
    """Every string the page renders as Markdown: text elements, alerts, toasts, and the
    labels of buttons, metrics and page links."""
    out = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning",
                 "error", "success", "toast"):
        out += [str(e.value) for e in getattr(at, kind)]
    for kind in ("button", "metric", "page_link", "download_button"):
        out += [str(e.label) for e in getattr(at, kind)]
    return out


def cli_train(*extra, label=None, n_users=30, n_items=20, data_D=3, D=3, max_iter=2) -> str:
    """Train and save a KM run with ``kmviz train km`` in the test's run store; its id.

    The data is planted-km with ``n_users``, ``n_items`` and ``data_D`` (same arguments,
    same data); the model has dimension ``D``."""
    from kmviz.cli import main
    from kmviz.runs import RunStore

    store = os.environ["KMVIZ_RUNS_DIR"]
    argv = ["train", "km", "--data", "planted-km", "--option", f"n_users={n_users}",
            "--option", f"n_items={n_items}", "--option", f"D={data_D}", "--D", str(D),
            "--max-iter", str(max_iter), "--save", "--dir", store, *extra]
    if label is not None:
        argv += ["--label", label]
    before = set(RunStore(store).ids())
    assert main(argv) == 0
    (new,) = set(RunStore(store).ids()) - before
    return new
