"""Real browser: `streamlit run app.py` driven by Debian's Chromium through Playwright."""

import re
import time
from pathlib import Path

import pytest

from kmviz.testing.browser import (chromium, chromium_missing, click_until_shown, load_builtin,
                                   nav, only_one, open_home, serve, settle)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
#: How long `streamlit run` may take to answer its health check (an upper bound, for a box
#: shared past its cores; the harness's default is 60 s).
SERVER_START_S = 180.0


@pytest.fixture()
def server(tmp_path):
    yield from _serve(tmp_path)


def _serve(tmp_path, *, numba_cache_dir=None, **extra_env):
    """`streamlit run app.py` on a free port with its own run store (kmviz.testing.browser);
    yields its Server (url, start time, log)."""
    missing = chromium_missing()
    if missing:
        pytest.skip(missing)
    with serve(runs_dir=tmp_path / "runs", numba_cache_dir=numba_cache_dir,
               log=tmp_path / "streamlit.log", env=extra_env,
               timeout=SERVER_START_S) as running:
        yield running


def _open_home(browser, server):
    """A new tab on the app's Home page, settled; prints how soon it was interactive."""
    ARTIFACTS.mkdir(exist_ok=True)
    page = open_home(browser, server.url)
    interactive_s = time.perf_counter() - server.start
    print(f"\nfirst page interactive after {interactive_s:.1f} s from `streamlit run`")
    settle(page)
    return page


def _train_form(page, field: str, family_title: str | None = None):
    """Train page (with the model family `family_title` picked, if given): its form, found by
    its spin box `field` (not a form of the page we come from, still on screen while the
    navigation runs), once it is the only one on screen and visible after the warm-up."""
    nav(page, "Train")
    if family_title is not None:
        page.locator('[data-testid="stSelectbox"]').filter(has_text="Model family").click()
        page.get_by_role("option", name=family_title).click()
    return only_one(page.locator('[data-testid="stForm"]').filter(
        has=page.get_by_role("spinbutton", name=field)))


def _fill(form, settings: dict) -> None:
    for name, value in settings.items():
        form.get_by_role("spinbutton", name=name).fill(str(value))


#: Extra wait for a fit started while the app still compiles its family's Numba kernels (the
#: first start after installing: up to a few minutes for KM on a busy 2-core box; the fit
#: waits for its own family's kernels only, as the Train page says).
COLD_COMPILE_MS = 600_000


def _train(page, timeout: int, *, settle_first: bool = True) -> None:
    """Click Train and wait for the result (with ``settle_first=False``, click at once, even
    while the page is still running: the Train page records the click and starts it on its
    next run)."""
    from playwright.sync_api import expect

    if settle_first:
        settle(page)
    compiling = page.get_by_text("Compiling the Numba kernels").count() > 0
    page.get_by_role("button", name="Train", exact=True).click()
    # the fit is under way (queued, running) or already done
    expect(page.locator('[data-testid="stProgress"]').or_(page.get_by_text("Result:")).first
           ).to_be_visible(timeout=60_000)
    expect(page.get_by_text("Result:")).to_be_visible(
        timeout=timeout + (COLD_COMPILE_MS if compiling else 0))


#: The sidebar's links, in order: the shared pages, then KM's and OCMF's Explore sections. Nothing else
#: (in particular no "app" entry from Streamlit's own pages/ discovery).
NAV_LINKS = ["Home", "Data", "Train", "Runs", "Convergence", "Dual GD", "Phases", "Lanczos",
             "Implications", "OCMF", "Completion", "Nyström", "Recovery", "Interactions",
             "Optimizers", "Embeddings"]


def test_fresh_server_train_then_implications_without_data_step(server):
    from playwright.sync_api import expect

    with chromium() as browser:
        page = _open_home(browser, server)
        links = page.locator('[data-testid="stSidebarNav"] a')
        assert [t.split("\n")[-1].strip() for t in links.all_inner_texts()] == NAV_LINKS
        page.screenshot(path=str(ARTIFACTS / "01-home.png"), full_page=True)

        # Train straight away: the default dataset (MovieLens latest-small) is loaded
        form = _train_form(page, "D (dimension)")
        expect(page.get_by_text("MovieLens latest-small").first).to_be_visible()
        _fill(form, {"D (dimension)": 3, "max BCD iterations": 3})
        _train(page, timeout=180_000)
        expect(page.get_by_text("validation NRMSE", exact=True)).to_be_visible()
        settle(page)
        page.screenshot(path=str(ARTIFACTS / "02-train.png"), full_page=True)

        # Implications: influence bars and the graph
        nav(page, "Implications")
        expect(page.get_by_text("Implication graph", exact=True)).to_be_visible()
        expect(page.locator(".js-plotly-plot .main-svg").first).to_be_visible()
        # the page draws scatters of the relation tables first; the graph is the chart
        # with the node trace
        has_graph = ("() => [...document.querySelectorAll('.js-plotly-plot')].some(gd => "
                     "(gd.data || []).some(t => t.name === 'item groups (same support)'))")
        page.wait_for_function(has_graph, timeout=300_000)
        assert page.evaluate(has_graph), "the implication graph has no node trace"
        expect(page.get_by_text("Showing").first).to_be_visible()
        settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(ARTIFACTS / "03-implications.png"), full_page=True)


def test_data_train_implications_runs(server):
    from playwright.sync_api import expect

    with chromium() as browser:
        page = _open_home(browser, server)
        page.screenshot(path=str(ARTIFACTS / "01-home.png"), full_page=True)

        # Data: a small planted KM set
        load_builtin(page, "Planted Kolmogorov model", {"n_users": 30, "n_items": 20, "D": 3})
        expect(page.locator('[data-testid="stMetricValue"]').first).to_have_text("30")
        expect(page.locator(".js-plotly-plot").first).to_be_visible()
        settle(page)
        page.screenshot(path=str(ARTIFACTS / "02-data.png"), full_page=True)

        # Train: D = 3, three BCD iterations
        form = _train_form(page, "D (dimension)")
        _fill(form, {"D (dimension)": 3, "max BCD iterations": 3})
        _train(page, timeout=120_000)
        expect(page.get_by_text("iterations", exact=True)).to_be_visible()
        settle(page)
        page.screenshot(path=str(ARTIFACTS / "03-train.png"), full_page=True)

        # Implications: influence bars and the graph
        nav(page, "Implications")
        expect(page.get_by_text("Implication graph", exact=True)).to_be_visible()
        expect(page.locator(".js-plotly-plot .main-svg").first).to_be_visible()
        assert page.locator(".js-plotly-plot").count() >= 2
        expect(page.get_by_text("Everyone who likes").first).to_be_visible()
        expect(page.get_by_text("Showing all 20 items.")).to_be_visible()
        # the relation miner runs on its own first: once its table is in, the page below it
        # (the graph) stops moving down; a click before that lands where the node was
        expect(page.get_by_text("Saved with the run").first).to_be_visible()
        expect(page.get_by_role("button", name=re.compile(r"^CSV \([\d,]+ rows\)")).first
               ).to_be_visible()
        settle(page)
        page.screenshot(path=str(ARTIFACTS / "04-implications.png"), full_page=True)

        # Clicking a node of the graph selects its item in the picker
        picker = page.get_by_label("item", exact=True).first
        before = picker.input_value() if picker.count() else ""
        # the graph is the chart with the node trace (the relation tables' scatters come first)
        at = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].findIndex("
                           "gd => (gd.data || []).some(t => t.name === "
                           "'item groups (same support)'))")
        assert at >= 0, "the implication graph has no node trace"
        graph = page.locator(".js-plotly-plot").nth(at)
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
        graph.scroll_into_view_if_needed()
        box = points.nth(target).bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        # the click reruns the page, which sets the picker: wait for that, not a fixed 1.5 s
        # (on a loaded box the rerun may not have begun by then, and settle() would see an
        # idle page still showing the old item)
        expect(page.get_by_label("item", exact=True).first).not_to_have_value(before)
        settle(page)
        expect(page.get_by_text("Everyone who likes").first).to_be_visible()
        after = page.get_by_label("item", exact=True).first.input_value()
        assert after != before, (before, after)

        # The other Explore pages render charts without errors
        for k, (title, heading) in enumerate([
                ("Convergence", "Convergence"),
                ("Dual GD", "Dual gradient descent on one item"),
                ("Phases", "Where the time goes"),
                ("Lanczos", "Approximate EVD by the modified Lanczos method")], start=6):
            nav(page, title)
            expect(page.get_by_text(heading).first).to_be_visible()
            expect(page.locator(".js-plotly-plot .main-svg").first).to_be_visible()
            settle(page)
            assert page.locator('[data-testid="stException"]').count() == 0
            page.screenshot(path=str(ARTIFACTS / f"{k:02d}-{title.lower().replace(' ', '-')}.png"))

        # Runs: the saved run and its comparison chart
        nav(page, "Runs")
        expect(page.get_by_text("Runs to compare")).to_be_visible()
        expect(page.get_by_text("Save name and note").first).to_be_visible()
        expect(page.locator(".js-plotly-plot").first).to_be_visible()
        expect(page.get_by_role("button", name="Re-run this configuration")).to_be_visible()
        settle(page)
        page.screenshot(path=str(ARTIFACTS / "09-runs.png"), full_page=True)
        assert "Traceback" not in page.content()


# ------------------------------------------------------------------ user text is text
TITLE = "**x** [y](http://z)"
#: Item titles: the Markdown above plus the HTML that Plotly would turn into a link.
ITEM_TITLE = TITLE + ' <a href="http://z">w</a>'


@pytest.fixture()
def server_with_a_marked_up_run(tmp_path):
    """A server whose run store holds one KM run on data whose item titles are Markdown
    (saved from Python, so the operator shares runs for the browser session to rename it)."""
    from kmviz.data import Ratings, load
    from kmviz.data.splits import make_split
    from kmviz.km import KolmogorovModel
    from kmviz.runs import RunStore, save_run

    base = load("planted-km", n_users=30, n_items=12, D=3, random_state=0)
    ratings = Ratings.from_arrays(base.users, base.items, base.values, r_min=base.r_min,
                                  r_max=base.r_max, name="planted",
                                  item_names=[f"{ITEM_TITLE} #{i}"
                                              for i in range(base.n_items)])
    split = make_split(ratings)
    model = KolmogorovModel(D=3, max_iter=2, random_state=0).fit(split.train,
                                                                 validation=split.validation)
    save_run(model, split, dataset=ratings, label="plain run",
             store=RunStore(tmp_path / "runs"))
    yield from _serve(tmp_path, KMVIZ_SHARED_RUNS="1")


def _links_to_z(page) -> list[str]:
    """Elements (HTML or SVG) linking to or loading anything from http://z."""
    return page.evaluate("""() => Array.from(document.querySelectorAll('*')).filter(el =>
        Array.from(el.attributes).some(a => (a.name.endsWith('href') || a.name === 'src')
                                            && a.value.includes('http://z')))
        .map(el => el.outerHTML.slice(0, 200))""")


def test_markdown_in_a_run_name_and_in_item_titles_renders_literally(
        server_with_a_marked_up_run):
    import re

    from playwright.sync_api import expect

    with chromium() as browser:
        page = _open_home(browser, server_with_a_marked_up_run)

        # Runs: rename the run to Markdown; it shows as typed, never as a link
        nav(page, "Runs")
        form = page.locator('[data-testid="stForm"]').filter(
            has=page.get_by_label("Name", exact=True))
        expect(form).to_be_visible()
        # one submission, by the button (Enter in the box would submit the form too); the
        # save ends in st.rerun(), so wait for the renamed form before the next click
        form.get_by_label("Name", exact=True).fill(TITLE)
        page.get_by_role("button", name="Save name and note").click()
        expect(page.get_by_text(f"Name and note of run {TITLE}")).to_be_visible()
        settle(page)
        warning = page.locator('[data-testid="stAlert"]').filter(has_text="for good?")
        click_until_shown(page, page.get_by_role("button", name="Delete this run ..."),
                           warning)
        expect(warning).to_contain_text(f"Delete the run {TITLE}")
        page.get_by_role("button", name="Cancel").click()
        settle(page)
        legend = page.locator(".js-plotly-plot .legendtext").first
        expect(legend).to_have_text(re.compile("^" + re.escape(TITLE)))  # the run's legend
        assert _links_to_z(page) == []
        assert page.locator("strong", has_text=re.compile(r"^x$")).count() == 0
        page.screenshot(path=str(ARTIFACTS / "10-runs-marked-up-name.png"), full_page=True)

        # Implications: the item titles, in words and in the figures
        nav(page, "Implications")
        expect(page.get_by_role("heading", name="Implications between items")
               ).to_be_visible()
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 1",
                               timeout=120_000)
        settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        # the item titles, as typed: in the page's text and in its figures
        expect(page.locator('[data-testid="stMarkdownContainer"]').filter(
            has_text=TITLE).first).to_be_visible()
        labels = page.locator(".js-plotly-plot text").all_text_contents()
        assert any(t.startswith(ITEM_TITLE[:30]) for t in labels), labels
        assert _links_to_z(page) == []
        assert page.locator("strong", has_text=re.compile(r"^x$")).count() == 0
        page.screenshot(path=str(ARTIFACTS / "11-implications-marked-up-titles.png"),
                        full_page=True)


# ------------------------------------------------------------------ one-class MF
def test_data_train_ocmf_then_recommendations_for_a_user(server):
    from playwright.sync_api import expect

    with chromium() as browser:
        page = _open_home(browser, server)

        # Data: a small planted low-rank set with side features
        load_builtin(page, "Planted low rank with side features",
                     {"n_users": 40, "n_items": 30})
        expect(page.locator('[data-testid="stMetricValue"]').first).to_have_text("40")
        settle(page)
        page.screenshot(path=str(ARTIFACTS / "ocmf-01-data.png"), full_page=True)

        # Train: the OCMF family, rank 4, two outer iterations
        form = _train_form(page, "k (rank)",
                           "One-class MF with side information (OCMF)")
        _fill(form, {"k (rank)": 4, "outer iterations": 2})
        # on a cold cache the fit waits for OCMF's kernels (picked, so compiled first)
        _train(page, timeout=300_000)
        settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(ARTIFACTS / "ocmf-02-train.png"), full_page=True)

        # OCMF: the objective split, then one user's recommendations
        nav(page, "OCMF")
        expect(page.get_by_text("Recommendations for one user")).to_be_visible()
        expect(page.locator(".js-plotly-plot .main-svg").first).to_be_visible()
        settle(page)
        before = page.get_by_label("User", exact=True).first.input_value()
        page.locator('[data-testid="stSelectbox"]').filter(has_text="User").click()
        page.get_by_role("option").nth(1).click()
        expect(page.get_by_label("User", exact=True).first).not_to_have_value(before)
        settle(page)
        after = page.get_by_label("User", exact=True).first.input_value()
        assert after and after != before, (before, after)
        # the chosen user's top-k: one row per rank, from 1
        table = page.locator('[data-testid="stDataFrame"]').last
        expect(table).to_be_visible()
        expect(table).to_contain_text("held-out positive")
        assert page.locator('[data-testid="stException"]').count() == 0
        assert "Traceback" not in page.content()
        page.screenshot(path=str(ARTIFACTS / "ocmf-03-recommendations.png"),
                        full_page=True)


# ------------------------------------------------------------------ first start after installing
@pytest.fixture()
def cold_server(tmp_path):
    """A server with an empty Numba cache of its own: the first start after installing."""
    yield from _serve(tmp_path, numba_cache_dir=tmp_path / "numba-cache")


def test_first_start_compiles_the_picked_family_first_and_a_click_during_a_rerun_counts(
        cold_server):
    from playwright.sync_api import expect

    with chromium() as browser:
        page = _open_home(browser, cold_server)
        load_builtin(page, "Planted low rank with side features",
                     {"n_users": 40, "n_items": 30})
        expect(page.locator('[data-testid="stMetricValue"]').first).to_have_text("40")
        settle(page)

        # pick gFM: its kernels compile now, ahead of KM's (first in the registry, and the
        # Train page's default); the notice refreshes itself every second
        form = _train_form(page, "k (rank)", "Generalized factorization machine (gFM)")
        notice = page.locator('[data-testid="stAlert"]').filter(
            has_text="Compiling the Numba kernels of gFM")
        expect(notice).to_be_visible()
        expect(notice).to_contain_text("Still to compile after it: KM, OCMF, KMC, SimL.")
        page.screenshot(path=str(ARTIFACTS / "cold-01-gfm-compiling.png"), full_page=True)

        # Train at once, while the notice's fragment reruns: the click is not lost, and the
        # fit says it waits for gFM's kernels (not for KM's, OCMF's or kernel MC's)
        _fill(form, {"k (rank)": 2, "ALS passes": 3})
        page.get_by_role("button", name="Train", exact=True).click()
        expect(page.get_by_text("Compiling the kernels of gFM: not training yet").or_(
            page.get_by_text("Result:")).first).to_be_visible(timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "cold-02-gfm-fit-waits.png"), full_page=True)
        expect(page.get_by_text("Result:")).to_be_visible(timeout=COLD_COMPILE_MS)
        expect(page.get_by_text("test RMSE", exact=True)).to_be_visible()
        settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(ARTIFACTS / "cold-03-gfm-result.png"), full_page=True)

        # KM was not needed for gFM's fit: its kernels are still to compile (minutes, cold)
        page.locator('[data-testid="stSelectbox"]').filter(has_text="Model family").click()
        page.get_by_role("option", name="Kolmogorov model (KM)").click()
        expect(page.locator('[data-testid="stAlert"]').filter(
            has_text="Numba kernels of KM")).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "cold-04-km-compiling.png"), full_page=True)


def test_train_pressed_while_switching_family_starts_a_fit(server):
    """Train pressed right after picking another family, while the page reruns and the old
    family's form may still be on screen: a fit starts (of the form that was pressed)."""
    import re

    from playwright.sync_api import expect

    with chromium() as browser:
        page = _open_home(browser, server)
        load_builtin(page, "Planted low rank with side features",
                     {"n_users": 40, "n_items": 30})
        expect(page.locator('[data-testid="stMetricValue"]').first).to_have_text("40")
        settle(page)
        form = _train_form(page, "D (dimension)")
        _fill(form, {"D (dimension)": 3, "max BCD iterations": 2})
        settle(page)
        page.locator('[data-testid="stSelectbox"]').filter(has_text="Model family").click()
        page.get_by_role("option", name="Generalized factorization machine (gFM)").click()
        page.get_by_role("button", name="Train", exact=True).click()  # no settling
        expect(page.locator('[data-testid="stProgress"]').or_(page.get_by_text("Result:"))
               .first).to_be_visible(timeout=180_000)
        expect(page.get_by_role("heading", name=re.compile("^Result: (KM|gFM) "))
               ).to_be_visible(timeout=COLD_COMPILE_MS)
        settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(ARTIFACTS / "switch-then-train.png"), full_page=True)


# ------------------------------------------------------------------ generalized FM
def test_train_gfm_then_recovery_preset_and_interactions(server):
    from playwright.sync_api import expect

    with chromium() as browser:
        page = _open_home(browser, server)

        # Data: a small planted low-rank set with side features
        load_builtin(page, "Planted low rank with side features",
                     {"n_users": 40, "n_items": 30})
        settle(page)

        # Train: gFM, rank 2, three ALS passes (the automatic solver for ratings)
        form = _train_form(page, "k (rank)", "Generalized factorization machine (gFM)")
        _fill(form, {"k (rank)": 2, "ALS passes": 3})
        # an optional setting shows as an empty box that says "automatic"
        batch = form.get_by_role("spinbutton", name="n (batch size)")
        assert batch.input_value() == "" and batch.get_attribute("placeholder") == \
            "automatic"
        _train(page, timeout=180_000)
        expect(page.get_by_text("test RMSE", exact=True)).to_be_visible()
        settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(ARTIFACTS / "gfm-01-train.png"), full_page=True)

        # Recovery: a planted preset, fitted on request
        nav(page, "Recovery")
        expect(page.get_by_role("heading", name="One-pass gFM: does it recover a planted "
                                "model?")).to_be_visible()
        page.locator('[data-testid="stSelectbox"]').filter(has_text="Problem").click()
        page.get_by_role("option", name="phase retrieval (k = 1, M* = u u^T, w* = 0)"
                         ).click()
        page.get_by_role("button", name="Fit").click()
        expect(page.get_by_text("Error per batch, against the linear rate")).to_be_visible()
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 4",
                               timeout=120_000)
        settle(page)
        legend = " ".join(page.locator(".js-plotly-plot .legendtext").all_text_contents())
        assert "fitted rate" in legend and "√(kd/n)" in legend, legend
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(ARTIFACTS / "gfm-02-recovery.png"), full_page=True)

        # Interactions: the trained run's strongest pairs and predictions
        nav(page, "Interactions")
        expect(page.get_by_text("Strongest pairwise interactions")).to_be_visible()
        expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible()
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 3",
                               timeout=120_000)
        expect(page.get_by_text("RMSE of the training mean")).to_be_visible()
        settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        assert "Traceback" not in page.content()
        page.screenshot(path=str(ARTIFACTS / "gfm-03-interactions.png"), full_page=True)


# ------------------------------------------------------------------ kernel matrix completion
def test_data_gapminder_train_kmc_then_completion_and_nystrom(server):
    from playwright.sync_api import expect

    with chromium() as browser:
        page = _open_home(browser, server)

        # Data: Gapminder life expectancy, countries x years with region and year graphs
        load_builtin(page, "Gapminder countries x years")
        expect(page.locator('[data-testid="stMetricValue"]').first).to_have_text("185")
        settle(page)

        # Train: kernel MC with its defaults (KKMCEX by conjugate gradients)
        _train_form(page, "max iterations", "Kernel MC (kernel matrix completion)")
        _train(page, timeout=180_000)
        expect(page.get_by_text("test NMSE", exact=True)).to_be_visible()
        settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(ARTIFACTS / "kmc-01-train.png"), full_page=True)

        # Completion: the four maps, then whole countries hidden and refitted
        nav(page, "Completion")
        expect(page.get_by_role("heading", name="Truth, mask, estimate and error")
               ).to_be_visible()
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 5",
                               timeout=120_000)
        page.get_by_role("button", name="Hide and refit").click()
        expect(page.get_by_text("rows hidden").first).to_be_visible(timeout=120_000)
        settle(page)
        expect(page.get_by_text("cold start", exact=True).first).to_be_visible()
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(ARTIFACTS / "kmc-02-completion.png"), full_page=True)

        # Nyström: the run's row kernel, its leverage scores, and the error curves
        nav(page, "Nyström")
        expect(page.get_by_role("heading", name="Leverage-score map")).to_be_visible()
        expect(page.get_by_text("d_eff(α)", exact=True)).to_be_visible()
        page.get_by_role("button", name="Compute the error curves").click()
        page.wait_for_function("Array.from(document.querySelectorAll('.legendtext')).some("
                               "e => e.textContent.includes('ridge leverage (exact)'))",
                               timeout=180_000)
        settle(page)
        legend = " ".join(page.locator(".js-plotly-plot .legendtext").all_text_contents())
        assert "ridge leverage (exact)" in legend and "uniform" in legend, legend
        assert page.locator('[data-testid="stException"]').count() == 0
        assert "Traceback" not in page.content()
        page.screenshot(path=str(ARTIFACTS / "kmc-03-nystrom.png"), full_page=True)


# ------------------------------------------------------------------ a Load that is never lost
def test_load_then_another_page_at_once_still_loads(server):
    """Load pressed and the Train link clicked right after, without waiting for the Data
    page's run: the Load button's callback loads the dataset on the next run, which is
    Train's, so Train names the new data at once."""
    from playwright.sync_api import expect

    with chromium() as browser:
        page = _open_home(browser, server)
        nav(page, "Data")
        page.locator('[data-testid="stSelectbox"]').filter(has_text="Dataset").click()
        page.get_by_role("option", name="Planted Kolmogorov model").click()
        expect(page.get_by_label("n_users", exact=True)).to_be_visible()  # its options
        settle(page)
        page.wait_for_timeout(1000)
        settle(page)  # the Data page is idle: the click starts a run of its own
        page.get_by_role("button", name="Load", exact=True).click()
        nav(page, "Train")  # no settling
        expect(page.get_by_role("heading", name="Train")).to_be_visible()
        expect(page.get_by_text("Data: planted KM", exact=False)).to_be_visible()
        settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(ARTIFACTS / "load-then-train.png"), full_page=True)
