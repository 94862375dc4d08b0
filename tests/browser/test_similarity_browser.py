"""Real browser, similarity family: Train -> Optimizers -> Embeddings on the default data."""

from pathlib import Path

import pytest

browser_harness = pytest.importorskip("kmviz.testing.browser")

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
FAMILY = "Similarity learning with nonlinear embeddings (two towers, all pairs)"
#: How long `streamlit run` may take to answer its health check (an upper bound, for a box
#: shared past its cores).
SERVER_START_S = 180.0


def test_train_then_optimizers_then_embeddings(tmp_path):
    from playwright.sync_api import expect

    if browser_harness.chromium_missing():
        pytest.skip(browser_harness.chromium_missing())
    b = browser_harness
    ARTIFACTS.mkdir(exist_ok=True)
    with b.serve(runs_dir=tmp_path / "runs", log=tmp_path / "streamlit.log",
                 timeout=SERVER_START_S) as server, \
            b.chromium() as browser:
        page = b.open_home(browser, server.url, timeout_ms=120_000)
        b.settle(page, 120_000)

        # Train: the family's form on the default data (MovieLens latest-small)
        b.nav(page, "Train")
        page.locator('[data-testid="stSelectbox"]').filter(has_text="Model family").click()
        page.get_by_role("option", name=FAMILY).click()
        form = page.locator('[data-testid="stForm"]').filter(
            has=page.get_by_role("spinbutton", name="k (embedding size)"))
        expect(form).to_be_visible(timeout=120_000)
        form.get_by_role("spinbutton", name="iterations").fill("10")
        b.settle(page, 120_000)
        page.get_by_role("button", name="Train", exact=True).click()
        expect(page.get_by_text("Result:")).to_be_visible(timeout=600_000)
        b.settle(page, 120_000)
        page.screenshot(path=str(ARTIFACTS / "similarity-01-train.png"), full_page=True)

        # Optimizers: the page opens on the race (run once on the first visit, the same
        # time budget for every solver), drawn without a click
        b.nav(page, "Optimizers")
        expect(page.get_by_text("how fast each solver gets there")).to_be_visible()
        expect(page.get_by_text("How each fit ended")).to_be_visible(timeout=300_000)
        b.settle(page, 120_000)
        expect(page.locator('[data-testid="stPlotlyChart"]').first).to_be_visible()
        expect(page.get_by_role("button", name="Compare again", exact=True)).to_be_enabled()
        page.screenshot(path=str(ARTIFACTS / "similarity-02-optimizers.png"), full_page=True)

        # Embeddings: the 2-D map, neighbours, the tower of one item
        b.nav(page, "Embeddings")
        expect(page.get_by_text("Users and items in 2-D")).to_be_visible()
        expect(page.get_by_text("What each tower layer does")).to_be_visible()
        b.settle(page, 120_000)
        expect(page.locator('[data-testid="stPlotlyChart"]').first).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "similarity-03-embeddings.png"), full_page=True)
        log = (tmp_path / "streamlit.log").read_text()
        assert "Traceback" not in log, log[-3000:]
