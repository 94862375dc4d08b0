"""Session-wide test settings: never write runs into the user's real data directory."""

import os

import pytest


@pytest.fixture(autouse=True)
def _isolated_run_store(tmp_path, monkeypatch):
    """Every test gets its own run store directory unless it sets another one."""
    monkeypatch.setenv("KMVIZ_RUNS_DIR", str(tmp_path / "runs"))
    yield


def pytest_report_header(config):
    return [f"numba threads: {os.environ.get('NUMBA_NUM_THREADS', 'default')}"]
