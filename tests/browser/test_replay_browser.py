"""Real browser: a teacher trains KM on a planted set, opens Implications, drags the
iteration slider back (the page says which iteration it replays and redraws the
implications of that iteration), presses play (the slider steps to the last iteration and
play switches off), and on Convergence steps the curves back."""

import re
import time

import pytest

from kmviz.testing.browser import (PLANTED_KM, chromium, chromium_missing, fit_finished,
                                   load_builtin, nav, open_home, run_caption, serve, settle)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
WAIT = 600_000


def _implications(page) -> list:
    """The page's metrics (the implications' counts and the rules beside them), read once
    two reads a second apart agree (the page is drawn)."""
    block = page.locator(".st-key-impl_section")
    block.first.wait_for(state="visible")
    metrics = page.locator('[data-testid="stMain"] [data-testid="stMetric"]')
    previous = None
    for _ in range(60):
        settle(page, WAIT)
        now = metrics.all_inner_texts()
        if now and now == previous:
            return now
        previous = now
        time.sleep(1.0)
    raise AssertionError(f"the metrics kept changing: {previous}")


def _slider_value(slider) -> str:
    return slider.get_attribute("aria-valuetext") or slider.get_attribute("aria-valuenow")


def test_teacher_replays_the_training(tmp_path):
    from playwright.sync_api import expect

    missing = chromium_missing()
    if missing:
        pytest.skip(missing)
    with serve(runs_dir=tmp_path / "runs", log=tmp_path / "server.log") as server, \
            chromium() as browser:
        page = open_home(browser, server.url, timeout_ms=WAIT, height=1800)
        load_builtin(page, PLANTED_KM, {"n_users": 60, "n_items": 30, "D": 3},
                     settle_ms=WAIT)
        settle(page, WAIT)
        nav(page, "Train")
        form = page.locator('[data-testid="stForm"]')
        expect(form).to_be_visible()
        settle(page, WAIT)
        form.get_by_role("spinbutton", name="D (dimension)").fill("8")
        form.get_by_role("spinbutton", name="max BCD iterations").fill("5")
        form.get_by_role("spinbutton", name="tol").fill("0")
        settle(page, WAIT)
        before = run_caption(page)
        page.get_by_role("button", name="Train", exact=True).click()
        end = time.time() + WAIT / 1000
        while not fit_finished(page, before) and time.time() < end:
            time.sleep(0.5)
        assert fit_finished(page, before)

        nav(page, "Implications")
        expect(page.get_by_text("iteration (replay the training)")).to_be_visible()
        settle(page, WAIT)
        slider = page.get_by_role("slider").first
        assert _slider_value(slider) == "5"
        last = _implications(page)
        slider.focus()
        for _ in range(4):
            page.keyboard.press("ArrowLeft")
        settle(page, WAIT)
        expect(page.get_by_text(re.compile(r"^Replaying iteration 1 of 5"))).to_be_visible()
        settle(page, WAIT)
        first = _implications(page)
        assert first != last   # psi moves after iteration 1 on this data
        page.screenshot(path=str(tmp_path / "implications_iteration_1.png"))

        page.get_by_text("play", exact=True).click()
        seen, end = [], time.time() + 180
        while time.time() < end:
            value = _slider_value(slider)
            if not seen or seen[-1] != value:
                seen.append(value)
            if value == "5":
                break
            time.sleep(0.2)
        assert seen[0] in ("1", "2") and seen[-1] == "5" and len(seen) >= 3, seen
        settle(page, WAIT)
        expect(page.get_by_text(re.compile(r"^Replaying iteration"))).to_have_count(0)
        assert page.get_by_role("switch", name="play").is_checked() is False
        assert _implications(page) == last

        nav(page, "Convergence")
        expect(page.get_by_text("iteration (replay the training)")).to_be_visible()
        settle(page, WAIT)
        curves = page.get_by_role("slider").first
        curves.focus()
        for _ in range(2):
            page.keyboard.press("ArrowLeft")
        settle(page, WAIT)
        expect(page.get_by_text("Replaying: the curves up to iteration 3.")).to_be_visible()

        # lesson mode hides the settings but keeps the replay: it is the lesson's content
        page.locator('[data-testid="stSidebar"]').get_by_text("Lesson mode",
                                                              exact=True).click()
        settle(page, WAIT)
        expect(page.get_by_text("log scale", exact=True)).to_be_hidden()
        expect(page.get_by_role("slider").first).to_be_visible()
        expect(page.get_by_text("play", exact=True)).to_be_visible()
        page.screenshot(path=str(tmp_path / "convergence_lesson_mode.png"))
