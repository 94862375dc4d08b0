"""Real browser: an analyst's own CSV (planted "every fan of A rates B 4-5" relations) is
uploaded, KM trained, and the Implications table filtered, box-selected on its scatter and
exported; every export holds the rows the page counts."""

import csv
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kmviz.testing.browser import (chromium, chromium_missing, fit_finished, nav, open_home,
                                   only_one, run_caption, serve, settle)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
PLANTED = [("Espresso", "Coffee"), ("Calculus", "Algebra"), ("Sushi", "Wasabi"),
           ("Skiing", "Snowboarding"), ("Jazz", "Blues"), ("Chess", "Go")]


def write_planted_csv(path: Path, n_users=300, n_items=60, seed=7) -> None:
    """user,item,rating triplets (1-5 stars, popularity skew, user and item bias) in which
    every fan (rating >= 4) of A rates B 4 or 5, for each (A, B) of PLANTED."""
    rng = np.random.default_rng(seed)
    names = [x for pair in PLANTED for x in pair]
    names += [f"Thing {k}" for k in range(n_items - len(names))]
    pop = np.clip(rng.beta(2, 4, n_items) + 0.05, 0.08, 0.7)
    ub, ib = rng.normal(0, 0.6, n_users), rng.normal(0, 0.6, n_items)
    seen = rng.random((n_users, n_items)) < pop
    stars = np.clip(np.rint(3 + ub[:, None] + ib[None, :] + rng.normal(0, 1, seen.shape)), 1, 5)
    R = np.where(seen, stars, 0)
    for a, b in PLANTED:
        fans = R[:, names.index(a)] >= 4
        R[fans, names.index(b)] = rng.integers(4, 6, int(fans.sum()))
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["user", "item", "rating"])
        for u, i in zip(*np.nonzero(R)):
            w.writerow([f"u{u:03d}", names[i], int(R[u, i])])


def _count(where) -> int:
    from playwright.sync_api import expect

    button = where.get_by_role("button", name=re.compile(r"^CSV \("))
    expect(button).to_have_count(1)  # the rerun's stale copy gone
    label = button.inner_text()
    return int(re.search(r"CSV \(([\d,]+) rows\)", label).group(1).replace(",", ""))


def _download(page, where=None) -> pd.DataFrame:
    """Click the CSV button (of the section ``where``, default the model's table) and read the
    file; once more if the click fell into a rerun (the button is drawn anew and the click is
    lost; a busy shared box)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(2):
        settle(page)
        try:
            with page.expect_download(timeout=60_000) as d:
                (where or _model(page)).get_by_role(
                    "button", name=re.compile(r"^CSV \(")).click()
            return pd.read_csv(d.value.path())
        except PlaywrightTimeout:
            if attempt:
                raise
    raise AssertionError("unreachable")


def _model(page):
    """The model's implications table block (below "Relations in the data")."""
    return page.locator(".st-key-impl_section")


def test_analyst_filters_selects_and_exports_every_row(tmp_path):
    from playwright.sync_api import expect

    missing = chromium_missing()
    if missing:
        pytest.skip(missing)
    data = tmp_path / "my_ratings.csv"
    write_planted_csv(data)
    ARTIFACTS.mkdir(exist_ok=True)
    with serve(runs_dir=tmp_path / "runs", log=tmp_path / "streamlit.log",
               timeout=180.0) as server, chromium() as browser:
        page = open_home(browser, server.url, timeout_ms=180_000, height=1800)
        nav(page, "Data")
        settle(page)
        page.get_by_text("Upload", exact=True).click()
        settle(page)
        page.locator('input[type="file"]').set_input_files(str(data))
        settle(page)
        page.get_by_role("button", name="Load upload").click()
        expect(page.get_by_text("Train / validation / test split")).to_be_visible()
        settle(page)
        nav(page, "Train")
        form = only_one(page.locator('[data-testid="stForm"]').filter(
            has=page.get_by_role("spinbutton", name="D (dimension)")), 600_000)
        settle(page)
        form.get_by_role("spinbutton", name="D (dimension)").fill("8")
        form.get_by_role("spinbutton", name="max BCD iterations").fill("10")
        before = run_caption(page)
        page.get_by_role("button", name="Train", exact=True).click()
        end = time.time() + 900
        while time.time() < end and not fit_finished(page, before):
            page.wait_for_timeout(1000)
        assert fit_finished(page, before), "the fit did not finish"
        nav(page, "Implications")
        expect(page.get_by_text("Implications and their figures")).to_be_visible(
            timeout=300_000)
        # first on the page: the relations in the data, mined on their own (a small run)
        rel = page.locator(".st-key-rel_section")
        expect(rel.get_by_role("button", name=re.compile(r"^CSV \("))).to_be_visible(
            timeout=900_000)
        settle(page, 300_000)
        expect(page.get_by_text(re.compile("^How the default was chosen"))).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "implications-relations.png"))
        mined = _download(page, rel)
        assert len(mined) == _count(rel)
        top = set(zip(mined["antecedent_name"][:6], mined["consequent_name"][:6]))
        assert len(top & set(PLANTED)) >= 3, mined.head(8)
        sec = _model(page)
        box = sec.get_by_label("top k (0 = all)", exact=True)
        box.fill("0")
        box.press("Enter")
        settle(page)
        total = _count(sec)
        passing = sec.locator('[data-testid="stMetric"]').filter(
            has_text="rows passing the filters").inner_text()
        assert f"{total:,}" in passing
        everything = _download(page)
        assert len(everything) == total > 100  # every row, not the old top 100
        assert {"confidence", "classic_confidence", "co_support", "liked"} <= set(everything)
        page.screenshot(path=str(ARTIFACTS / "implications-table.png"), full_page=True)

        # a box dragged over the scatter keeps those rules in the table and the export
        plot = sec.locator('[data-testid="stPlotlyChart"]').first
        plot.scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        bb = plot.bounding_box()
        x0, y0, x1, y1 = bb["x"] + 420, bb["y"] + 60, bb["x"] + 900, bb["y"] + 200
        page.mouse.move(x0, y0)
        page.mouse.down()
        for k in range(1, 21):
            page.mouse.move(x0 + (x1 - x0) * k / 20, y0 + (y1 - y0) * k / 20)
            page.wait_for_timeout(30)
        page.mouse.up()
        expect(page.get_by_text(re.compile(r"^[\d,]+ rules selected in the chart"))).to_be_visible()
        settle(page)
        chosen = _count(sec)
        assert 1 <= chosen < total
        selected = _download(page)
        assert len(selected) == chosen
        key = ["antecedent", "consequent"]
        assert set(map(tuple, selected[key].to_numpy())) <= set(
            map(tuple, everything[key].to_numpy()))
        page.screenshot(path=str(ARTIFACTS / "implications-box-select.png"))
        plot.dblclick()  # clears the selection
        expect(page.get_by_text(re.compile(r"^[\d,]+ rules selected in the chart"))).to_have_count(0)
        settle(page)
        assert _count(sec) == total

        # require an item on the left by typing its name
        sec.get_by_text("Require or exclude items, filter by any statistic, sort").click()
        settle(page)
        sec.locator('[data-testid="stMultiSelect"]').filter(
            has_text="antecedent (if liked) includes").click()
        page.keyboard.type("Skiing")
        page.get_by_role("option", name=re.compile(r"Skiing \[")).click()
        page.keyboard.press("Escape")
        page.wait_for_timeout(500)
        settle(page)
        expect(sec.get_by_role("button", name=re.compile(r"^CSV \("))).not_to_have_text(
            re.compile(rf"CSV \({total:,} rows"))
        n = _count(sec)
        rows = _download(page)
        assert 1 <= n < total and len(rows) == n
        assert rows["antecedent_name"].str.contains("Skiing").all()
        assert everything["antecedent_name"].str.contains("Skiing").sum() == n
        page.screenshot(path=str(ARTIFACTS / "implications-require.png"), full_page=True)
