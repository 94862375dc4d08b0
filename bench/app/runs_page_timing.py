"""The Runs page with many saved runs, in Debian's Chromium (Playwright): seconds from the
sidebar click to the page settled (every table, the one-run panel, the across-runs figures,
compare), and from picking a filter value (one sweep of the runs) to the filtered table and
to the page settled again.

    python bench/app/runs_page_timing.py [--runs 200] [--port 8616] [--repeat 3]

The store is made here: KM runs (settings D, lambda_theta, random_state varied; 20 trace rows
each; small arrays), a tenth of them in each of ten sweeps; it is deleted afterwards.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, parser, table

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kmviz.runs import RunStore  # noqa: E402
from kmviz.testing.browser import (APP, _run_server, chromium, nav, open_home,  # noqa: E402
                                   settle)
from kmviz.trace import Trace  # noqa: E402

WAIT_MS = 600_000


def make_store(path: Path, n: int) -> None:
    store = RunStore(path)
    rng = np.random.default_rng(0)
    for i in range(n):
        D = [4, 8, 16][i % 3]
        lam = [0.0, 10.0, 100.0][(i // 3) % 3]
        seed = (i // 9) % 3
        trace = Trace("km.enhanced", {})
        for k in range(20):
            trace.record(objective=100.0 / (k + 1), train_nrmse=0.3 - 0.004 * k,
                         validation_nrmse=0.32 - 0.003 * k + 0.01 * rng.random())
        trace.stop_reason = "max_iter"
        store.save("km", trace, {"theta": rng.random((50, D)), "psi": rng.random((40, D)) > .5},
                   dataset="MovieLens latest-small",
                   params={"D": D, "lambda_theta": lam, "random_state": seed, "max_iter": 20,
                           "bqp_solver": "fast"},
                   metrics={"validation_nrmse": 0.26 + 0.01 * rng.random(),
                            "test_nrmse": 0.27, "train_nrmse": 0.22, "test_rmse": 0.9},
                   label=f"KM D={D} fast on MovieLens latest-small, lambda_theta={lam:g}",
                   sweep={"id": f"sweep-{i % 10}"}, tags=["sweep"])


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--port", type=int, default=8616)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    header(f"The Runs page with {args.runs} saved runs, in Chromium")
    t_start = time.perf_counter()
    from playwright.sync_api import expect

    with tempfile.TemporaryDirectory(prefix="kmviz-runs-page-") as tmp:
        t0 = time.perf_counter()
        make_store(Path(tmp), args.runs)
        print(f"store of {args.runs} runs made in {time.perf_counter() - t0:.1f} s\n")
        import os

        env = dict(os.environ, KMVIZ_RUNS_DIR=tmp)
        command = [sys.executable, "-m", "streamlit", "run", str(APP), "--server.headless",
                   "true", "--server.port", str(args.port), "--browser.gatherUsageStats",
                   "false"]
        rows = []
        for server in _run_server(command, args.port, env, None, 180.0):
            with chromium() as browser:
                for r in range(args.repeat):
                    page = open_home(browser, server.url, timeout_ms=WAIT_MS)
                    settle(page, WAIT_MS)
                    t0 = time.perf_counter()
                    nav(page, "Runs")
                    expect(page.get_by_text("Across runs")).to_be_visible(timeout=WAIT_MS)
                    settle(page, WAIT_MS)
                    render = time.perf_counter() - t0
                    # open the Sweep filter (force: Playwright's wait for the box to be
                    # "stable" under the charts' animations took 85 s, not the app)
                    page.locator('[data-testid="stMultiSelect"]').filter(
                        has_text="Sweep").click(force=True)
                    option = page.get_by_role("option", name="sweep-3", exact=True)
                    expect(option).to_be_visible(timeout=WAIT_MS)
                    t0 = time.perf_counter()
                    option.click()
                    page.keyboard.press("Escape")
                    expect(page.get_by_text(f"{args.runs // 10} of {args.runs} run(s)")
                           ).to_be_visible(timeout=WAIT_MS)
                    shown = time.perf_counter() - t0
                    settle(page, WAIT_MS)
                    filt = time.perf_counter() - t0
                    rows.append({"visit": r + 1, "render s": render,
                                 "filter: table s": shown, "filter: settled s": filt})
                    page.close()
        print(table(rows))
        med = {k: float(np.median([r[k] for r in rows])) for k in rows[0] if k != "visit"}
        print(f"\nmedian: render {med['render s']:.2f} s (sidebar click to settled); filter "
              f"{med['filter: table s']:.2f} s to the filtered table, "
              f"{med['filter: settled s']:.2f} s to settled (option click; the server and "
              "the browser on the same shared box)\n")
    footer(t_start)


if __name__ == "__main__":
    main()
