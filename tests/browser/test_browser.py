"""Real browser: `streamlit run app.py` driven by Debian's Chromium through Playwright."""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("KMVIZ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc, timeout: float = 60.0) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited early with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"streamlit did not become healthy within {timeout} s")


@pytest.fixture()
def server(tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found: apt-get install chromium")
    port = _free_port()
    env = dict(os.environ, KMVIZ_RUNS_DIR=str(tmp_path / "runs"))
    streamlit = shutil.which("streamlit", path=str(Path(sys.executable).parent)) or "streamlit"
    log = open(tmp_path / "streamlit.log", "w")
    start = time.perf_counter()
    proc = subprocess.Popen(
        [streamlit, "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc)
        yield {"url": url, "start": start, "log": tmp_path / "streamlit.log"}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _nav(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title,
                                                             exact=True).click()


def _settle(page) -> None:
    """Wait until the script run has finished (Streamlit's running indicator is gone)."""
    from playwright.sync_api import expect

    page.wait_for_timeout(300)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=60_000)


def _set_number(page, label: str, value) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")


def _open_home(browser, server):
    """A new tab on the app's Home page, settled; prints how soon it was interactive."""
    from playwright.sync_api import expect

    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 2600})
    page.set_default_timeout(60_000)
    page.goto(server["url"])
    expect(page.get_by_text("Try it in three steps")).to_be_visible()
    interactive_s = time.perf_counter() - server["start"]
    print(f"\nfirst page interactive after {interactive_s:.1f} s from `streamlit run`")
    _settle(page)
    return page


#: The sidebar's links, in order: the shared pages, then KM's Explore section. Nothing else
#: (in particular no "app" entry from Streamlit's own pages/ discovery).
NAV_LINKS = ["Home", "Data", "Train", "Runs", "Convergence", "Dual GD", "Phases", "Lanczos",
             "Implications"]


def test_fresh_server_train_then_implications_without_data_step(server):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = _open_home(browser, server)
            links = page.locator('[data-testid="stSidebarNav"] a')
            assert [t.split("\n")[-1].strip() for t in links.all_inner_texts()] == NAV_LINKS
            page.screenshot(path=str(ARTIFACTS / "01-home.png"), full_page=True)

            # Train straight away: the default dataset (MovieLens latest-small) is loaded
            _nav(page, "Train")
            expect(page.get_by_text("MovieLens latest-small").first).to_be_visible()
            form = page.locator('[data-testid="stForm"]')
            expect(form).to_be_visible(timeout=120_000)
            form.get_by_role("spinbutton", name="D (dimension)").fill("3")
            form.get_by_role("spinbutton", name="max BCD iterations").fill("3")
            page.get_by_role("button", name="Train").click()
            expect(page.get_by_text("Result:")).to_be_visible(timeout=180_000)
            expect(page.get_by_text("validation NRMSE", exact=True)).to_be_visible()
            _settle(page)
            page.screenshot(path=str(ARTIFACTS / "02-train.png"), full_page=True)

            # Implications: influence bars and the graph
            _nav(page, "Implications")
            expect(page.get_by_text("Implication graph", exact=True)).to_be_visible()
            expect(page.locator(".js-plotly-plot .main-svg").first).to_be_visible()
            page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 2",
                                   timeout=120_000)
            graph = page.locator(".js-plotly-plot").nth(1)
            n_nodes = graph.evaluate("gd => gd.data.findIndex(t => t.name === "
                                     "'item groups (same support)')")
            assert n_nodes >= 0, "the implication graph has no node trace"
            expect(page.get_by_text("Showing").first).to_be_visible()
            _settle(page)
            assert page.locator('[data-testid="stException"]').count() == 0
            page.screenshot(path=str(ARTIFACTS / "03-implications.png"), full_page=True)
        finally:
            browser.close()


def test_data_train_implications_runs(server):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = _open_home(browser, server)
            page.screenshot(path=str(ARTIFACTS / "01-home.png"), full_page=True)

            # Data: a small planted KM set
            _nav(page, "Data")
            page.locator('[data-testid="stSelectbox"]').filter(has_text="Dataset").click()
            page.get_by_role("option", name="Planted Kolmogorov model").click()
            _set_number(page, "n_users", 30)
            _set_number(page, "n_items", 20)
            _set_number(page, "D", 3)
            page.get_by_role("button", name="Load", exact=True).click()
            expect(page.get_by_text("Train / validation / test split")).to_be_visible()
            expect(page.locator('[data-testid="stMetricValue"]').first).to_have_text("30")
            expect(page.locator(".js-plotly-plot").first).to_be_visible()
            _settle(page)
            page.screenshot(path=str(ARTIFACTS / "02-data.png"), full_page=True)

            # Train: D = 3, three BCD iterations
            _nav(page, "Train")
            form = page.locator('[data-testid="stForm"]')
            expect(form).to_be_visible(timeout=120_000)  # after the Numba warm-up
            form.get_by_role("spinbutton", name="D (dimension)").fill("3")
            form.get_by_role("spinbutton", name="max BCD iterations").fill("3")
            page.get_by_role("button", name="Train").click()
            expect(page.get_by_text("Result:")).to_be_visible(timeout=120_000)
            expect(page.get_by_text("iterations", exact=True)).to_be_visible()
            _settle(page)
            page.screenshot(path=str(ARTIFACTS / "03-train.png"), full_page=True)

            # Implications: influence bars and the graph
            _nav(page, "Implications")
            expect(page.get_by_text("Implication graph", exact=True)).to_be_visible()
            expect(page.locator(".js-plotly-plot .main-svg").first).to_be_visible()
            assert page.locator(".js-plotly-plot").count() >= 2
            expect(page.get_by_text("Everyone who likes").first).to_be_visible()
            expect(page.get_by_text("Showing all 20 items.")).to_be_visible()
            expect(page.get_by_role("button", name="Download the implications (CSV)")
                   ).to_be_visible()
            _settle(page)
            page.screenshot(path=str(ARTIFACTS / "04-implications.png"), full_page=True)

            # Clicking a node of the graph selects its item in the picker
            picker = page.get_by_label("item", exact=True).first
            before = picker.input_value() if picker.count() else ""
            graph = page.locator(".js-plotly-plot").nth(1)
            k = graph.evaluate("gd => gd.data.findIndex(t => t.name === "
                               "'item groups (same support)')")
            points = graph.locator("g.scatterlayer g.trace").nth(k).locator("path.point")
            target = None
            for j in range(points.count()):
                name = graph.evaluate(
                    f"gd => gd.data[{k}].hovertext[{j}].split('<br>')[0]")
                if name and name.split(" [")[0] not in before:
                    target = j
                    break
            assert target is not None, "every node is the selected one"
            box = points.nth(target).bounding_box()
            page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            page.wait_for_timeout(1500)
            _settle(page)
            expect(page.get_by_text("Everyone who likes").first).to_be_visible()
            after = page.get_by_label("item", exact=True).first.input_value()
            assert after != before, (before, after)

            # The other Explore pages render charts without errors
            for k, (title, heading) in enumerate([
                    ("Convergence", "Convergence"),
                    ("Dual GD", "Dual gradient descent on one item"),
                    ("Phases", "Where the time goes"),
                    ("Lanczos", "Approximate EVD by the modified Lanczos method")], start=6):
                _nav(page, title)
                expect(page.get_by_text(heading).first).to_be_visible()
                expect(page.locator(".js-plotly-plot .main-svg").first).to_be_visible()
                _settle(page)
                assert page.locator('[data-testid="stException"]').count() == 0
                page.screenshot(path=str(ARTIFACTS / f"{k:02d}-{title.lower().replace(' ', '-')}.png"))

            # Runs: the saved run and its comparison chart
            _nav(page, "Runs")
            expect(page.get_by_text("Runs to compare")).to_be_visible()
            expect(page.get_by_text("Save name and note")).to_be_visible()
            expect(page.locator(".js-plotly-plot").first).to_be_visible()
            expect(page.get_by_role("button", name="Re-run this configuration")).to_be_visible()
            _settle(page)
            page.screenshot(path=str(ARTIFACTS / "09-runs.png"), full_page=True)
            assert "Traceback" not in page.content()
        finally:
            browser.close()
