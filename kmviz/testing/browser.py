"""A real browser on a real server: ``streamlit run app.py`` on a free port, driven by Debian's
Chromium through Playwright. One harness for the browser tests (``tests/browser``) and the app
timing benchmark (``bench/app_timing.py``).

Playwright is a test dependency (``pip install -e ".[test]"``): it is imported inside the
functions that drive a page, so importing this module needs the standard library only. The
browser is the system's Chromium (``/usr/bin/chromium``, or ``$KMVIZ_CHROMIUM``); Playwright
never downloads one.

Typical use::

    with serve(runs_dir=tmp / "runs") as server, chromium() as browser:
        page = open_home(browser, server.url)
        nav(page, "Train")
        settle(page)
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

#: The source checkout kmviz runs from (app.py, app_pages/, .streamlit/config.toml), as for
#: ``kmviz app``: the browser harness needs an editable install or a checkout on the path.
ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"
CHROMIUM = os.environ.get("KMVIZ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run")
#: The text on the Home page that says the app is up and drawn.
HOME_TEXT = "Try it in three steps"


def chromium_missing() -> str | None:
    """Why the browser cannot run here (a sentence for ``pytest.skip``), or None."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} not found: apt-get install chromium (or set KMVIZ_CHROMIUM)"
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 60.0,
                 log: Path | None = None) -> None:
    """Wait until Streamlit's health endpoint at ``url`` answers 200; raise if the server
    exits first (with the end of its log, if any) or ``timeout`` seconds pass."""
    end = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            tail = ""
            if log is not None and log.exists():
                tail = "\n" + "\n".join(log.read_text(errors="replace").splitlines()[-20:])
            raise RuntimeError(f"streamlit exited early with code {proc.returncode}{tail}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > end:
            raise TimeoutError(f"streamlit did not become healthy within {timeout:.0f} s")
        time.sleep(0.2)


@dataclass(frozen=True)
class Server:
    """A running ``streamlit run app.py``: its URL, the ``time.perf_counter()`` it was
    started at, its log file (None when its output is discarded) and its process."""

    url: str
    start: float
    log: Path | None
    proc: subprocess.Popen


@contextmanager
def serve(*, runs_dir: str | Path, numba_cache_dir: str | Path | None = None,
          log: str | Path | None = None, env: dict | None = None,
          timeout: float = 60.0, args: tuple = ()) -> Iterator[Server]:
    """``streamlit run app.py`` on a free port, from the checkout (so it reads
    ``.streamlit/config.toml``), with its own run store ``runs_dir`` and, if given, its own
    Numba cache (an empty directory: a first start after installing). Output goes to ``log``
    (or nowhere); ``env`` adds environment variables and ``args`` Streamlit options (e.g.
    ``("--server.address", "0.0.0.0")`` for an app served to others). Yields a :class:`Server` once healthy;
    stops the server (SIGTERM, then SIGKILL) on the way out."""
    run_env = dict(os.environ, KMVIZ_RUNS_DIR=str(runs_dir), **(env or {}))
    if numba_cache_dir is not None:
        run_env["NUMBA_CACHE_DIR"] = str(numba_cache_dir)
    port = free_port()
    log_path = Path(log) if log is not None else None
    out = open(log_path, "w") if log_path is not None else subprocess.DEVNULL
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(APP), "--server.headless", "true",
             "--server.port", str(port), "--browser.gatherUsageStats", "false", *args],
            cwd=ROOT, env=run_env, stdout=out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, proc, timeout, log_path)
            yield Server(url=url, start=start, log=log_path, proc=proc)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    finally:
        if log_path is not None:
            out.close()


@contextmanager
def chromium(executable: str | None = None, args=CHROMIUM_ARGS):
    """Debian's Chromium, headless, through Playwright; closed on the way out."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable or CHROMIUM, args=list(args))
        try:
            yield browser
        finally:
            browser.close()


def open_home(browser, url: str, *, timeout_ms: int = 60_000, height: int = 2600):
    """A new tab on the app's Home page, once its text shows; every wait of the tab (and of
    ``expect``) defaults to ``timeout_ms`` (a loaded 2-core box: Playwright's own 5 s is
    short)."""
    from playwright.sync_api import expect

    expect.set_options(timeout=timeout_ms)
    page = browser.new_page(viewport={"width": 1400, "height": height})
    page.set_default_timeout(timeout_ms)
    page.goto(url)
    expect(page.get_by_text(HOME_TEXT)).to_be_visible(timeout=timeout_ms)
    return page


def nav(page, title: str) -> None:
    """Click the sidebar link ``title``."""
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title,
                                                             exact=True).click()


def settle(page, timeout_ms: int = 60_000) -> None:
    """Wait until the script run has finished (Streamlit's running indicator is gone)."""
    from playwright.sync_api import expect

    page.wait_for_timeout(300)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=timeout_ms)


def set_number(page, label: str, value) -> None:
    """Type ``value`` into the number box labelled ``label`` and press Enter."""
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")


def load_builtin(page, title: str, numbers: dict | None = None, *,
                 settle_ms: int | None = None) -> None:
    """Data page: pick the built-in dataset ``title``, set its number options ``numbers``
    (label: value), press Load and wait for the split it shows. With ``settle_ms``, wait
    (up to that long) for the page's run after picking and after typing (a busy server)."""
    from playwright.sync_api import expect

    nav(page, "Data")
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Dataset").click()
    page.get_by_role("option", name=title, exact=True).click()
    if settle_ms is not None:
        settle(page, settle_ms)
    for label, value in (numbers or {}).items():
        set_number(page, label, value)
    if settle_ms is not None:
        settle(page, settle_ms)
    page.get_by_role("button", name="Load", exact=True).click()
    expect(page.get_by_text("Train / validation / test split")).to_be_visible()
