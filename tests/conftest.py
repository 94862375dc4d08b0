"""Session-wide test settings: never write runs into the user's real data directory.

The fast loop is ``pytest -m "not slow"`` (see the ``slow`` marker in pyproject.toml)."""

import os
import threading

import pytest


@pytest.fixture(autouse=True)
def _isolated_run_store(tmp_path, monkeypatch):
    """Every test gets its own run store directory unless it sets another one."""
    monkeypatch.setenv("KMVIZ_RUNS_DIR", str(tmp_path / "runs"))
    yield


@pytest.fixture(autouse=True)
def _no_exec(monkeypatch):
    """`kmviz app` execs Streamlit: a test that reaches it unmocked would turn the pytest
    process into a server and hang. Fail such a test instead."""
    def refuse(path, argv, env):
        raise RuntimeError(f"a test tried to exec {argv}: mock kmviz.cli._serve")

    monkeypatch.setattr(os, "execve", refuse)


class KernelCalls:
    """The Numba kernels (dispatchers) called from Python by the test's thread while the
    fixture is active, in the order of their first call; calls made from inside other kernels,
    and calls from other threads (such as the app's background warm-up), are not seen."""

    def __init__(self):
        self.dispatchers = []

    def record(self, dispatcher) -> None:
        if not any(d is dispatcher for d in self.dispatchers):
            self.dispatchers.append(dispatcher)

    def names(self) -> set[str]:
        """``module.function`` of every kernel called."""
        return {f"{d.py_func.__module__}.{d.py_func.__name__}" for d in self.dispatchers}

    def clear(self) -> None:
        self.dispatchers.clear()


@pytest.fixture()
def kernel_calls(monkeypatch):
    """Record which Numba kernels the code under test calls (a :class:`KernelCalls`)."""
    from numba.core.registry import CPUDispatcher

    calls = KernelCalls()
    call = CPUDispatcher.__call__
    thread = threading.get_ident()

    def spy(self, *args, **kwargs):
        if threading.get_ident() == thread:
            calls.record(self)
        return call(self, *args, **kwargs)

    monkeypatch.setattr(CPUDispatcher, "__call__", spy)
    yield calls


def pytest_report_header(config):
    return [f"numba threads: {os.environ.get('NUMBA_NUM_THREADS', 'default')}"]
