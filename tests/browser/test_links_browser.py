"""Real browser: a link copied from the address bar, opened in a second browser context (a
new browser: no cookie, no session), restores page, data, family, settings and item."""

from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from kmviz.testing.browser import chromium, nav, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
TRAIN_LINK = ("/train?dataset=planted-km&data.n_users=30&data.n_items=20&data.D=3&family=km"
              "&D=3&max_iter=2")



def _tab(browser, url):
    from playwright.sync_api import expect

    expect.set_options(timeout=120_000)
    context = browser.new_context(viewport={"width": 1400, "height": 2000})
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(url)
    settle(page, 120_000)
    return page


def _query(page) -> dict:
    return {k: v[-1] for k, v in parse_qs(urlparse(page.url).query).items()}


def test_a_link_opened_in_a_second_browser_restores_the_view(server):
    from playwright.sync_api import expect

    ARTIFACTS.mkdir(exist_ok=True)
    with chromium() as browser:
        first = _tab(browser, server.url + TRAIN_LINK + "&nonsense=3")
        expect(first.get_by_text("nonsense='3' was ignored").first).to_be_visible()
        expect(first.get_by_text("planted KM").first).to_be_visible()
        expect(first.get_by_role("spinbutton", name="D (dimension)")).to_have_value("3")
        assert "nonsense" not in _query(first)
        first.get_by_role("button", name="Train", exact=True).click()
        expect(first.get_by_text("Result:")).to_be_visible(timeout=600_000)
        nav(first, "Dual GD")
        # the first dual GD on this server compiles its kernels: wait for the figures
        first.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 2",
                                timeout=600_000)
        box = first.locator('[data-testid="stSelectbox"]').filter(has_text="Item")
        box.click()
        first.get_by_role("option").nth(3).click()
        first.wait_for_function("new URLSearchParams(location.search).has('item')",
                                timeout=600_000)
        settle(first, 600_000)
        chosen = box.inner_text().split("\n")[-1]
        link = first.url
        q = _query(first)
        assert urlparse(link).path.endswith("/km_dual") and q["family"] == "km"
        assert q["run"] and q["item"]

        second = _tab(browser, link)
        expect(second.get_by_text("Dual gradient descent on one item").first).to_be_visible()
        box2 = second.locator('[data-testid="stSelectbox"]').filter(has_text="Item")
        assert box2.inner_text().split("\n")[-1] == chosen
        assert _query(second) == q
        assert second.locator('[data-testid="stException"]').count() == 0
        # every chart in kmviz's theme: ticks and legends of 14 px at least
        second.wait_for_function("document.querySelectorAll('.js-plotly-plot .xtick').length"
                                 " > 0", timeout=300_000)
        sizes = second.evaluate(
            "[...document.querySelectorAll('.js-plotly-plot .xtick text, .js-plotly-plot "
            ".ytick text, .js-plotly-plot .legendtext')].map(t => parseFloat(t.style.fontSize))")
        assert sizes and min(sizes) >= 14, sorted(set(sizes))
        second.screenshot(path=str(ARTIFACTS / "link-dual-restored.png"), full_page=True)

        # the Train link, in a third browser: data, family and settings
        third = _tab(browser, server.url + TRAIN_LINK.replace("D=3&max_iter", "D=4&max_iter"))
        expect(third.get_by_role("spinbutton", name="D (dimension)")).to_have_value("4")
        expect(third.get_by_role("spinbutton", name="max BCD iterations")).to_have_value("2")
        expect(third.get_by_text("planted KM").first).to_be_visible()
        third.screenshot(path=str(ARTIFACTS / "link-train-restored.png"), full_page=True)
