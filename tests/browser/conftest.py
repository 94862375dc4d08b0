"""The served app most browser suites start: `streamlit run app.py` on a free port with a
run store and a log of its own (kmviz.testing.browser.serve); skipped without Chromium."""

import pytest

from kmviz.testing.browser import chromium_missing, serve

#: How long `streamlit run` may take to answer its health check on a loaded 2-core box.
SERVER_START_S = 180.0


@pytest.fixture()
def server(tmp_path):
    missing = chromium_missing()
    if missing:
        pytest.skip(missing)
    with serve(runs_dir=tmp_path / "runs", log=tmp_path / "streamlit.log",
               timeout=SERVER_START_S) as running:
        yield running
