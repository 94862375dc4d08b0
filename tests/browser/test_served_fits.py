"""A served app's fit queue in a real browser (issue 35, defect 3): a browser's second Train
click, from another tab, is refused while its first fit runs, and once every tab of that
browser is closed its fit is cancelled (saved as stopped), so another browser's fit runs
instead of waiting behind it."""

import os
import re
import sys
import time

import pytest

from kmviz.runs import RunStore
from kmviz.testing.browser import (ROOT, _run_server, chromium, chromium_missing, nav,
                                   only_one, settle)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PORT = 8614          # this suite's port
ARTIFACTS = ROOT / "test-artifacts"
SERVER_START_S = 180.0


@pytest.fixture(autouse=True)
def _chromium():
    missing = chromium_missing()
    if missing:
        pytest.skip(missing)


def _served(runs, log):
    env = dict(os.environ, KMVIZ_RUNS_DIR=str(runs))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", ""))
                                        if p)
    cmd = [sys.executable, "-m", "kmviz", "app", "--host", "0.0.0.0", "--port", str(PORT),
           "--max-fits", "1", "--", "--server.headless", "true",
           "--browser.gatherUsageStats", "false"]
    return _run_server(cmd, PORT, env, log, SERVER_START_S)


def _tab(context, url):
    from playwright.sync_api import expect

    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(url)
    expect(page.locator('[data-testid="stSidebarNav"]')).to_be_visible(timeout=120_000)
    settle(page, 120_000)
    return page


#: A fit that outlasts the test's steps: 500 BCD iterations at D = 16 on movielens-small take
#: about 6 minutes (0.73 s each, measured); at D = 3 they took about a minute, which a busy
#: machine's tab loads could outlast, so the "running" fit had ended before the second click.
LONG = dict(iterations=500, D=16)


def _train_km(page, iterations, *, D=3, wait_result=True):
    from playwright.sync_api import expect

    nav(page, "Train")
    form = only_one(page.locator('[data-testid="stForm"]').filter(
        has=page.get_by_role("spinbutton", name="D (dimension)")), 600_000)
    form.get_by_role("spinbutton", name="D (dimension)").fill(str(D))
    form.get_by_role("spinbutton", name="max BCD iterations").fill(str(iterations))
    if iterations > 2:   # never converged: only the budget or a stop ends it
        form.get_by_role("spinbutton", name="tol").fill("0")
    settle(page)
    page.get_by_role("button", name="Train", exact=True).click()
    if wait_result:
        expect(page.get_by_text("Result:")).to_be_visible(timeout=600_000)


def test_one_fit_per_browser_and_a_closed_browsers_fit_is_cancelled(tmp_path):
    from playwright.sync_api import expect

    runs = tmp_path / "runs"
    gen = _served(runs, tmp_path / "served.log")
    server = next(gen)
    try:
        with chromium() as browser:
            first = browser.new_context()
            tab1 = _tab(first, server.url)
            _train_km(tab1, **LONG, wait_result=False)    # a long fit
            expect(tab1.get_by_role("button", name="Stop")).to_be_visible(timeout=600_000)
            tab2 = _tab(first, server.url)                 # the same browser, another tab
            _train_km(tab2, 2, wait_result=False)
            expect(tab2.get_by_text("this browser already has 1 running")).to_be_visible(
                timeout=120_000)
            assert tab2.get_by_text("Result:").count() == 0
            first.close()                                   # every tab of it is gone
            closed = time.monotonic()
            second = browser.new_context()
            other = _tab(second, server.url)
            _train_km(other, 2)                              # not stuck behind the orphan
            waited = time.monotonic() - closed
            second.close()
        store = RunStore(runs)
        stop = {store.load(rid).trace.stop_reason: store.load(rid).trace.n_iter
                for rid in store.ids()}
        assert "callback" in stop and stop["callback"] < 500, stop   # the orphan: cancelled
        assert len(store.ids()) == 2
        print(f"another browser's 2-iteration fit finished {waited:.0f} s after the first "
              "browser closed")
    finally:
        gen.close()


#: The first words of the lock sentence a read-only run shows (kmviz.ui.state.NOT_YOURS).
LOCKED = "This run was made by another browser"


def _manages_the_run(page):
    from playwright.sync_api import expect

    nav(page, "Runs")
    settle(page)
    expect(page.get_by_role("button", name="Delete this run ...")).to_be_visible()
    return (page.get_by_text(LOCKED).count() == 0
            and page.get_by_role("button", name="Delete this run ...").is_enabled())


def test_two_tabs_a_new_browser_opens_at_once_share_one_owner(tmp_path):
    """Both tabs load before either has set the owner cookie; they end with one owner, so a
    run trained in one is the other's too (it was read-only in one of them)."""
    runs = tmp_path / "runs"
    gen = _served(runs, tmp_path / "tabs.log")
    server = next(gen)
    try:
        with chromium() as browser:
            context = browser.new_context()
            tabs = [context.new_page(), context.new_page()]
            for tab in tabs:
                tab.set_default_timeout(120_000)
                tab.goto(server.url, wait_until="commit")   # both before either renders
            for tab in tabs:
                tab.locator('[data-testid="stSidebarNav"]').wait_for(timeout=120_000)
                settle(tab, 120_000)
            tabs[0].wait_for_timeout(1500)                   # a tab that adopts reloads
            for tab in tabs:
                tab.locator('[data-testid="stSidebarNav"]').wait_for(timeout=120_000)
                settle(tab, 120_000)
            _train_km(tabs[0], 2)
            third = _tab(context, server.url)                # a later tab of the browser
            assert _manages_the_run(tabs[1]), "the other tab sees the run read-only"
            assert _manages_the_run(third), "a later tab sees the run read-only"
            owners = {RunStore(runs).load_meta(rid)["owner"] for rid in RunStore(runs).ids()}
            assert len(owners) == 1 and next(iter(owners)).startswith("app:")
            context.close()
    finally:
        gen.close()


def test_a_page_refit_waits_in_the_queue_behind_a_running_fit(tmp_path):
    """`kmviz app --max-fits 1`: while one browser's fit runs, another browser's gFM
    Recovery fit (a page job) says it is queued, then draws once the first fit is stopped."""
    from playwright.sync_api import expect

    gen = _served(tmp_path / "runs", tmp_path / "queue.log")
    server = next(gen)
    try:
        with chromium() as browser:
            first = browser.new_context()
            tab1 = _tab(first, server.url)
            _train_km(tab1, **LONG, wait_result=False)    # holds the only slot
            stop = tab1.get_by_role("button", name="Stop")
            expect(stop).to_be_visible(timeout=600_000)
            second = browser.new_context()
            other = _tab(second, server.url)
            nav(other, "Recovery")
            other.get_by_role("button", name="Fit").click()
            expect(other.get_by_text(re.compile(r"Queued: .*fitting the planted problem"))
                   ).to_be_visible(timeout=120_000)
            other.screenshot(path=str(ARTIFACTS / "page-job-queued.png"), full_page=True)
            assert other.locator(".js-plotly-plot").count() == 0   # nothing drawn yet
            stop.click()                                            # the slot frees
            expect(other.get_by_text("Error per batch, against the linear rate")
                   ).to_be_visible(timeout=600_000)
            expect(other.locator(".js-plotly-plot").first).to_be_visible()
            first.close()
            second.close()
    finally:
        gen.close()
