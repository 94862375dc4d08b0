"""A real browser on a real server: ``streamlit run app.py`` on a free port, driven by Debian's
Chromium through Playwright. One harness for the browser tests (``tests/browser``) and the app
timing benchmark (``bench/app/app_timing.py``).

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
    yield from _run_server(
        [sys.executable, "-m", "streamlit", "run", str(APP), "--server.headless", "true",
         "--server.port", str(port), "--browser.gatherUsageStats", "false", *args],
        port, run_env, log, timeout)


def _run_server(command: list, port: int, run_env: dict, log, timeout: float):
    """Start ``command`` (a server on ``port``), yield its :class:`Server` once healthy,
    stop it (SIGTERM, then SIGKILL) on the way out; its output goes to ``log`` or nowhere."""
    log_path = Path(log) if log is not None else None
    out = open(log_path, "w") if log_path is not None else subprocess.DEVNULL
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(command, cwd=ROOT, env=run_env, stdout=out,
                                stderr=subprocess.STDOUT)
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

    status = page.locator('[data-testid="stStatusWidget"]')
    try:  # a busy server starts the run late: give the indicator a second to show
        status.first.wait_for(state="attached", timeout=1_000)
    except Exception:  # noqa: BLE001 - playwright's TimeoutError: the run was quick
        pass
    expect(status).to_have_count(0, timeout=timeout_ms)


def only_one(locator, timeout_ms: int = 120_000):
    """Wait until ``locator`` matches exactly one visible element and return it: while a
    script run that moved an element lasts, Streamlit keeps the old copy on screen beside the
    new one, and Playwright's strict mode refuses a locator that matches both."""
    from playwright.sync_api import expect

    expect(locator).to_have_count(1, timeout=timeout_ms)
    expect(locator).to_be_visible(timeout=timeout_ms)
    return locator


def click_until_shown(page, button, shown, tries: int = 3) -> None:
    """Click ``button`` until ``shown`` is visible. A click that lands while a script run
    ends in ``st.rerun()`` is dropped by Streamlit (the rerun carries no button trigger), so
    a click on a page that has just settled may need one more."""
    from playwright.sync_api import expect

    for attempt in range(tries):
        button.click()
        settle(page)
        try:
            expect(shown).to_be_visible(timeout=20_000)
            return
        except AssertionError:
            if attempt == tries - 1:
                raise


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


# ------------------------------------------------------------------ the served app, measured
@contextmanager
def serve_cli(*, runs_dir: str | Path, cli_args: tuple = (), log: str | Path | None = None,
              env: dict | None = None, timeout: float = 120.0,
              streamlit_args: tuple = ()) -> Iterator[Server]:
    """``kmviz app --host 127.0.0.1 --port P CLI_ARGS`` as an operator starts it (the CLI
    process, which becomes the Streamlit server), on a free port, with its own run
    store; ``streamlit_args`` go to Streamlit (after ``--``). Yields a :class:`Server`
    (``proc`` is the CLI's process) once healthy; stops it (SIGTERM, then SIGKILL) on the way
    out."""
    run_env = dict(os.environ, KMVIZ_RUNS_DIR=str(runs_dir), **(env or {}))
    run_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), run_env.get("PYTHONPATH", "")) if p)
    port = free_port()
    yield from _run_server(
        [sys.executable, "-m", "kmviz", "app", "--host", "127.0.0.1", "--port", str(port),
         *cli_args, "--", "--server.headless", "true", "--browser.gatherUsageStats", "false",
         *streamlit_args], port, run_env, log, timeout)


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _proc_stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()  # fields from the state on (3rd field)


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants alive now (Linux /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _proc_stat(int(entry.name))
            if fields is not None:
                parents.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += parents.get(p, [])
    return out


def tree_usage(pid: int, *, children: bool = True) -> tuple[float, int]:
    """(CPU seconds, resident bytes) of ``pid`` and its descendants: user + system time of
    each process alive now plus that of the children they have reaped, and the sum of their
    resident set sizes. ``children=False``: of ``pid`` alone (its own time only)."""
    cpu, rss = 0.0, 0
    for p in (process_tree(pid) if children else [pid]):
        fields = _proc_stat(p)
        if fields is None:
            continue
        # utime, stime, cutime, cstime are fields 14-17 (index 11-14 from the state on)
        cpu += sum(int(v) for v in fields[11:15 if children else 13]) / _TICK
        rss += int(fields[21]) * _PAGE  # field 24: resident pages
    return cpu, rss


class ServerMonitor:
    """Samples a process tree's CPU seconds and resident memory every ``every`` seconds in
    a thread: peak RSS, CPU seconds between two moments, and when the CPU went idle."""

    def __init__(self, pid: int, every: float = 0.2, *, children: bool = True):
        import threading

        self.pid, self.every, self.children = pid, every, children
        self.samples: list[tuple[float, float, int]] = []  # (perf_counter, cpu_s, rss)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "ServerMonitor":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            cpu, rss = tree_usage(self.pid, children=self.children)
            self.samples.append((time.perf_counter(), cpu, rss))
            self._stop.wait(self.every)

    @property
    def peak_rss(self) -> int:
        return max((s[2] for s in self.samples), default=0)

    def peak_between(self, t0: float, t1: float) -> int:
        """The highest resident memory sampled between two ``perf_counter`` moments."""
        return max((s[2] for s in self.samples if t0 <= s[0] <= t1), default=0)

    def cpu_between(self, t0: float, t1: float) -> float:
        """CPU seconds the tree used between two ``perf_counter`` moments (nearest samples)."""
        inside = [s for s in self.samples if t0 <= s[0] <= t1]
        return inside[-1][1] - inside[0][1] if len(inside) > 1 else float("nan")

    def idle_after(self, t0: float, *, share: float = 0.05, window: float = 1.0,
                   timeout: float = 60.0) -> float | None:
        """Seconds from ``t0`` until the tree used under ``share`` of one core over a whole
        ``window``; waits for it (up to ``timeout`` s); None if it never went idle."""
        end = t0 + timeout
        while time.perf_counter() < end + window:
            samples = [s for s in self.samples if s[0] >= t0]
            for i, (t, cpu, _) in enumerate(samples):
                later = [s for s in samples[i:] if s[0] >= t + window]
                if later and (later[0][1] - cpu) / (later[0][0] - t) < share:
                    return t - t0
            if time.perf_counter() > end + window:
                break
            time.sleep(self.every)
        return None


# -------------------------------------------------------------- sessions that train at once
PLANTED_KM = "Planted Kolmogorov model"


def prepare_km_session(browser, url: str, *, n_users: int, n_items: int, D: int, iters: int,
                       seed: int, wait_ms: int = 600_000):
    """A new browser session (its own context, so its own Streamlit session and cookie) with
    its own planted-km set loaded (``random_state`` = ``seed``) and the KM form on the Train
    page filled in (``D``, ``iters`` BCD iterations, tol 0); the page, ready to press Train."""
    from playwright.sync_api import expect

    page = open_home(browser, url, timeout_ms=wait_ms, height=1400)
    load_builtin(page, PLANTED_KM, {"n_users": n_users, "n_items": n_items, "D": D,
                                    "random_state": seed}, settle_ms=wait_ms)
    settle(page, wait_ms)
    nav(page, "Train")
    form = page.locator('[data-testid="stForm"]')
    expect(form).to_be_visible()
    settle(page, wait_ms)
    form.get_by_role("spinbutton", name="D (dimension)").fill(str(D))
    form.get_by_role("spinbutton", name="max BCD iterations").fill(str(iters))
    form.get_by_role("spinbutton", name="tol").fill("0")
    settle(page, wait_ms)
    return page


def run_caption(page) -> str | None:
    """The shown result's "Run `ID` · stop reason: ..." line (None before any result)."""
    import re

    found = page.get_by_text(re.compile(r"^Run \S+ · stop reason:"))
    try:
        return found.first.inner_text(timeout=1000) if found.count() else None
    except Exception:  # noqa: BLE001 - the page redrew between count and read
        return None


def fit_finished(page, before: str | None) -> bool:
    """A new result is on the page (its run line differs from ``before``, the line before
    the click) and the fit's Stop button is gone."""
    now = run_caption(page)
    return now is not None and now != before and \
        page.get_by_role("button", name="Stop").count() == 0


def click_train(page) -> float:
    """Press Train; the ``time.perf_counter()`` of the click."""
    page.get_by_role("button", name="Train", exact=True).click()
    return time.perf_counter()


def wait_results(pages, clicks, before, timeout_s: float) -> list:
    """Poll every page until each shows a new result; the seconds from its click (None
    where none came within ``timeout_s``). ``before``: each page's run line before its
    click (:func:`run_caption`; None for a first fit)."""
    done: list = [None] * len(pages)
    end = time.perf_counter() + timeout_s
    while any(d is None for d in done) and time.perf_counter() < end:
        for i, page in enumerate(pages):
            if done[i] is None and fit_finished(page, before[i]):
                done[i] = time.perf_counter() - clicks[i]
        time.sleep(0.1)
    return done
