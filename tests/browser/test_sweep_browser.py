"""The explorer's sweep in a real browser: the Train page's Sweep expander fits a grid of
saved runs, then the Runs page filters by the sweep and draws the figures across its runs."""

import re
from pathlib import Path

import pytest

from kmviz.testing.browser import chromium, load_builtin, nav, open_home, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"



def _pick(page, scope, label: str, option: str) -> None:
    scope.locator('[data-testid="stMultiSelect"]').filter(has_text=label).click()
    page.get_by_role("option", name=option, exact=True).click()
    page.keyboard.press("Escape")
    settle(page, 120_000)


def _values(page, label: str, text: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(text)
    box.press("Enter")
    settle(page, 120_000)


def test_a_sweep_from_the_train_page_lands_on_the_runs_page(server):
    from playwright.sync_api import expect

    ARTIFACTS.mkdir(exist_ok=True)
    with chromium() as browser:
        page = open_home(browser, server.url, timeout_ms=120_000)
        expect.set_options(timeout=120_000)
        settle(page, 120_000)
        load_builtin(page, "Planted Kolmogorov model", {"n_users": 30, "n_items": 20, "D": 3},
                     settle_ms=120_000)
        settle(page, 120_000)
        nav(page, "Train")
        sweep = page.locator('[data-testid="stExpander"]').filter(
            has_text="Sweep: fit a grid of settings")
        expect(sweep).to_be_visible()
        sweep.get_by_text("Sweep: fit a grid of settings").click()
        settle(page, 120_000)
        _pick(page, sweep, "Settings to vary", "D")
        _pick(page, sweep, "Settings to vary", "max_iter")
        _values(page, "Values of D (comma-separated)", "2,3")
        _values(page, "Values of max_iter (comma-separated)", "2")
        sweep.get_by_role("button", name="Start sweep").click()
        done = sweep.get_by_text(re.compile(r"2 of 2 point\(s\) fitted and saved"))
        expect(done).to_be_visible(timeout=600_000)
        settle(page, 120_000)
        # the table of points: one row per D
        expect(sweep.locator('[data-testid="stDataFrame"]')).to_be_visible()
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(ARTIFACTS / "sweep-train.png"), full_page=True)

        nav(page, "Runs")
        expect(page.get_by_text("Runs to compare")).to_be_visible()
        expect(page.get_by_text(re.compile(r"^2 of 2 run\(s\)"))).to_be_visible()
        # the sweep is offered as a filter, and the two runs differ in D: figures across them
        expect(page.locator('[data-testid="stMultiSelect"]').filter(has_text="Sweep")
               ).to_be_visible()
        expect(page.get_by_text("The 2 km runs shown")).to_be_visible()
        expect(page.get_by_role("tab", name="Parallel coordinates")).to_be_visible()
        page.get_by_role("tab", name="Metric against a setting").click()
        settle(page, 120_000)
        shown = page.locator('[role="tabpanel"]:visible .js-plotly-plot')
        expect(shown.first).to_be_visible()
        # the metric against D: one point per run, at D = 2 and D = 3
        xs = shown.first.evaluate("gd => gd.data.flatMap(t => Array.from(t.x || []))")
        assert sorted(set(xs)) == [2, 3], xs
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(ARTIFACTS / "sweep-runs.png"), full_page=True)
