"""A served app under load (issue 24), small enough for CI: three browser sessions, each on
its own small planted set, press Train at once on `kmviz app --host 127.0.0.1`; every result
shows, the server's CPU goes idle soon after and its memory stays bounded. A fourth session
asks for a fit over the per-fit memory limit and is refused before it starts, without
holding up the others. The full-size run is bench/app/load_test.py."""

import re
import time

import pytest

from kmviz.testing.browser import (ServerMonitor, chromium, chromium_missing, click_train,
                                   nav, open_home, prepare_km_session, serve_cli, settle,
                                   wait_results)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WAIT_MS = 600_000   # a busy 2-core box; a cold Numba cache compiles KM for minutes
SESSIONS = 3


@pytest.fixture()
def served(tmp_path):
    missing = chromium_missing()
    if missing:
        pytest.skip(missing)
    # one fit at a time, so the queue is used whatever the machine; a per-fit memory limit
    # that the small KM fits pass (about 1.3 MiB) and KM with D = 16 on the default
    # MovieLens latest-small (its random draws, a chunk of items x 50 x 17, and the ratings
    # indexed both ways: about 104 MiB by the estimate) does not
    with serve_cli(runs_dir=tmp_path / "runs", log=tmp_path / "app.log",
                   cli_args=("--max-fits", "1", "--max-fit-memory", "64M"),
                   timeout=WAIT_MS / 1000) as server:
        yield server


def test_sessions_train_at_once_and_an_oversized_fit_is_refused(served):
    from playwright.sync_api import expect

    with chromium() as browser, ServerMonitor(served.proc.pid) as monitor:
        pages = [prepare_km_session(browser, served.url, n_users=300, n_items=40, D=3,
                                    iters=4, seed=i, wait_ms=WAIT_MS) for i in range(SESSIONS)]
        hog = open_home(browser, served.url, timeout_ms=WAIT_MS, height=1400)
        nav(hog, "Train")   # KM on the default data, D = 16: over the limit
        form = hog.locator('[data-testid="stForm"]')
        expect(form).to_be_visible()
        settle(hog, WAIT_MS)
        form.get_by_role("spinbutton", name="D (dimension)").fill("16")
        settle(hog, WAIT_MS)

        clicks = [click_train(page) for page in pages]
        t_hog = click_train(hog)
        # refused at once, with what it needs and the limit, and no fit of its own
        expect(hog.get_by_text("per-fit limit of 64")).to_be_visible(timeout=60_000)
        refused_s = time.perf_counter() - t_hog
        need = hog.get_by_text(re.compile(r"KolmogorovModel\.fit would need about [\d.]+"))
        assert need.count() > 0
        mib = float(re.search(r"would need about ([\d.]+)", need.first.inner_text()).group(1))
        assert mib > 64, mib  # over the per-fit limit it is refused by
        assert hog.get_by_role("button", name="Stop").count() == 0
        assert hog.locator('[data-testid="stProgress"]').count() == 0

        seconds = wait_results(pages, clicks, [None] * SESSIONS, WAIT_MS / 1000)
        assert all(s is not None for s in seconds), seconds
        last = max(c + s for c, s in zip(clicks, seconds))
        for page in pages:   # each result names its own data
            expect(page.get_by_text("Trained on planted KM")).to_be_visible()
        idle = monitor.idle_after(last, timeout=30.0)
        peak = monitor.peak_rss
    print(f"\nresults after {[round(s, 1) for s in seconds]} s; refused after "
          f"{refused_s:.1f} s; idle {idle} s after the last; peak RSS {peak / 2**20:.0f} MB")
    assert idle is not None and idle <= 10.0, idle
    assert peak < 1.5 * 2**30, peak
