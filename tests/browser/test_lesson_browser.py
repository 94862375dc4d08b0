"""Real browser: lesson mode hides the controls and the pages the lesson does not use, keeps
the figures and the Train button, and walks the lesson with Next / Back."""

import re
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from kmviz.testing.browser import chromium, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"



def _sidebar_links(page) -> list[str]:
    links = page.locator('[data-testid="stSidebar"] a')
    return [t.split("\n")[-1].strip() for t in links.all_inner_texts()]


def test_lesson_mode_hides_the_controls_and_walks_the_lesson(server):
    from playwright.sync_api import expect

    ARTIFACTS.mkdir(exist_ok=True)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1600})
        page.set_default_timeout(120_000)
        expect.set_options(timeout=120_000)
        page.goto(server.url + "/?lesson=km")   # the link opens on the lesson's first step
        expect(page.get_by_text("step 1 of 7")).to_be_visible()
        settle(page, 120_000)
        assert urlparse(page.url).path.endswith("/data")
        expect(page.locator('[data-testid="stSidebar"] a')).to_have_count(8)
        assert _sidebar_links(page) == ["Home", "Data", "Train", "Convergence", "Dual GD",
                                        "Phases", "Lanczos", "Implications"]
        # the Data step shows the lesson's data, not the hidden selector's entry's captions
        expect(page.get_by_text("Planted Kolmogorov model").first).to_be_visible()
        expect(page.locator(".st-key-data_choose")).to_be_hidden()
        page.get_by_role("button", name="Next").click()
        expect(page.get_by_text("step 2 of 7")).to_be_visible()
        settle(page, 120_000)
        assert urlparse(page.url).path.endswith("/train")
        q = {k: v[-1] for k, v in parse_qs(urlparse(page.url).query).items()}
        assert q["lesson"] == "km" and q["step"] == "2" and q["max_iter"] == "10"
        # the settings are hidden, the Train button and the family's summary stay
        train = page.get_by_role("button", name="Train", exact=True)
        expect(train).to_be_visible()
        boxes = page.locator('[data-testid="stMain"] [data-testid="stNumberInput"]')
        boxes.nth(4).wait_for(state="attached")  # a busy box draws the form late
        assert boxes.count() >= 5  # drawn (the form's values are the link's), not shown
        for n in range(boxes.count()):
            expect(boxes.nth(n)).to_be_hidden()
        expect(page.locator('[data-testid="stMain"] [data-testid="stSelectbox"]').first
               ).to_be_hidden()
        for button in page.get_by_text("Reset to defaults").all():
            expect(button).to_be_hidden()
        page.screenshot(path=str(ARTIFACTS / "lesson-train.png"), full_page=True)
        page.get_by_role("button", name="Back").click()
        expect(page.get_by_text("step 1 of 7")).to_be_visible()
        settle(page, 120_000)
        # a page the lesson does not use, visited later, keeps the class where it is
        page.locator('[data-testid="stSidebar"] a').filter(has_text="Home").click()
        expect(page.get_by_role("heading", name=re.compile("^kmviz: look inside"))
               ).to_be_visible()
        settle(page, 120_000)
        assert not urlparse(page.url).path.endswith("/data")
        expect(page.get_by_text("step 1 of 7")).to_be_visible()
        # the switch turns lesson mode off: every page and control is back
        page.locator('[data-testid="stSidebar"]').get_by_text("Lesson mode").click()
        settle(page, 120_000)
        expect(page.get_by_text("step 1 of 7")).to_have_count(0)
        page.wait_for_function("document.querySelectorAll("
                               "'[data-testid=\"stSidebarNav\"] a').length > 8")
        assert "lesson" not in parse_qs(urlparse(page.url).query)
