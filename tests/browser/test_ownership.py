"""Whose runs are whose, in a real browser: on the private default (127.0.0.1) every saved
run is the local user's, after a reload, after a server restart and when the CLI saved it;
served to others, a browser keeps its own runs across a reload (its cookie) and another
browser sees them read-only."""

import subprocess
import sys

import pytest

from kmviz.testing.browser import (chromium, chromium_missing, nav, only_one, open_home,
                                   serve, settle)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: The first words of the lock sentence a read-only run shows (kmviz.ui.state.NOT_YOURS).
LOCKED = "This run was made by another browser"
#: How long `streamlit run` may take to answer its health check (an upper bound, for a box
#: shared past its cores).
SERVER_START_S = 180.0


@pytest.fixture(autouse=True)
def _chromium():
    missing = chromium_missing()
    if missing:
        pytest.skip(missing)


def _train_km(page):
    """Train a small KM on the default dataset from the Train page; wait for the result."""
    from playwright.sync_api import expect

    nav(page, "Train")
    form = only_one(page.locator('[data-testid="stForm"]').filter(
        has=page.get_by_role("spinbutton", name="D (dimension)")), 600_000)  # may compile
    form.get_by_role("spinbutton", name="D (dimension)").fill("3")
    form.get_by_role("spinbutton", name="max BCD iterations").fill("2")
    settle(page)
    page.get_by_role("button", name="Train", exact=True).click()
    expect(page.get_by_text("Result:")).to_be_visible(timeout=600_000)
    settle(page)


def _shows_implications(page):
    """The Implications page draws the run's influence bars and its graph, unlocked."""
    from playwright.sync_api import expect

    nav(page, "Implications")
    expect(page.get_by_text("Implication graph", exact=True)).to_be_visible()
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 2",
                           timeout=120_000)
    settle(page)
    assert page.get_by_text(LOCKED).count() == 0
    assert page.locator('[data-testid="stException"]').count() == 0


def _charts(page, title: str):
    from playwright.sync_api import expect

    nav(page, title)
    settle(page)
    expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=120_000)
    assert page.get_by_text(LOCKED).count() == 0
    assert page.locator('[data-testid="stException"]').count() == 0


def test_a_private_app_keeps_every_run_the_local_users(tmp_path):
    runs = tmp_path / "runs"
    with serve(runs_dir=runs, log=tmp_path / "first.log", timeout=SERVER_START_S) as server, \
            chromium() as browser:
        page = open_home(browser, server.url)
        settle(page)
        _train_km(page)
        page.reload()  # a new session: the run is the local user's all the same
        settle(page)
        _shows_implications(page)
    with serve(runs_dir=runs, log=tmp_path / "restart.log", timeout=SERVER_START_S) as server, \
            chromium() as browser:
        page = open_home(browser, server.url)  # after a restart
        settle(page)
        _shows_implications(page)
        # a run saved from the command line, while this server runs
        subprocess.run([sys.executable, "-m", "kmviz", "train", "km", "--data", "planted-km",
                        "--option", "n_users=40", "--option", "n_items=25", "--D", "3",
                        "--max-iter", "2", "--save", "--dir", str(runs), "--label",
                        "from the CLI"], check=True, capture_output=True, timeout=600)
        page.reload()
        settle(page)
        nav(page, "Implications")
        settle(page)
        page.locator('[data-testid="stSelectbox"]').first.click()
        page.get_by_role("option").filter(has_text="from the CLI").click()
        settle(page)
        _shows_implications(page)
        box = page.locator('[data-testid="stSelectbox"]').first
        picked = box.inner_text() + " ".join(
            i.input_value() for i in box.locator("input").all())
        assert "from the CLI" in picked, picked
        _charts(page, "Lanczos")
        _charts(page, "Dual GD")


def test_a_served_app_keeps_a_browsers_runs_its_own(tmp_path):
    from playwright.sync_api import expect

    runs = tmp_path / "runs"
    with serve(runs_dir=runs, log=tmp_path / "served.log", timeout=SERVER_START_S,
               args=("--server.address", "0.0.0.0")) as server, chromium() as browser:
        mine = open_home(browser, server.url)  # each open_home is its own browser context
        settle(mine)
        _train_km(mine)
        mine.reload()  # the same browser (its cookie): still its own run
        settle(mine)
        nav(mine, "Runs")
        settle(mine)
        expect(mine.get_by_role("button", name="Delete this run ...")).to_be_enabled()
        assert mine.get_by_text(LOCKED).count() == 0
        other = open_home(browser, server.url)  # another browser: read-only
        settle(other)
        nav(other, "Runs")
        settle(other)
        expect(other.get_by_text(LOCKED)).to_be_visible()
        expect(other.get_by_role("button", name="Delete this run ...")).to_be_disabled()
