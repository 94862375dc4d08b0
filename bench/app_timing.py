"""Time the app as a user meets it: `streamlit run app.py` -> first page interactive, and ->
a trained KM (D = 8, 10 BCD iterations, tol = 0) on the built-in MovieLens latest-small,
clicking through the app in Debian's Chromium (Playwright, never a downloaded browser).

    python bench/app_timing.py [--cold]

``--cold`` deletes Numba's on-disk cache of the kmviz kernels first, as on a first start
after installing (the app then compiles them at launch, in a child process).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _common import footer, header, parser, table

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def clear_numba_cache() -> int:
    files = [p for ext in ("*.nbi", "*.nbc") for p in (ROOT / "kmviz").rglob(ext)]
    for p in files:
        p.unlink()
    return len(files)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--cold", action="store_true", help="clear Numba's cache first")
    args = ap.parse_args()
    from playwright.sync_api import expect, sync_playwright

    t_start = time.perf_counter()
    header("App timing: streamlit run -> interactive -> trained KM (MovieLens latest-small)")
    if args.cold:
        print(f"cold start: removed {clear_numba_cache()} cached Numba files\n")
    port = free_port()
    env = dict(os.environ, KMVIZ_RUNS_DIR=tempfile.mkdtemp(prefix="kmviz-timing-runs-"))
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    rows = []
    try:
        while True:
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=2).status == 200:
                    break
            except OSError:
                time.sleep(0.2)
        rows.append({"step": "health endpoint up", "s after streamlit run": time.perf_counter() - t0})
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 2000})
            page.set_default_timeout(600_000)
            page.goto(url)
            expect(page.get_by_text("Try it in three steps")).to_be_visible()
            rows.append({"step": "first page interactive",
                         "s after streamlit run": time.perf_counter() - t0})
            # a fresh session has MovieLens latest-small loaded: straight to Train
            page.locator('[data-testid="stSidebarNav"]').get_by_role(
                "link", name="Train", exact=True).click()
            form = page.locator('[data-testid="stForm"]')
            expect(form).to_be_visible()
            form.get_by_role("spinbutton", name="max BCD iterations").fill("10")
            form.get_by_role("spinbutton", name="tol").fill("0")
            t_click = time.perf_counter()
            page.get_by_role("button", name="Train").click()
            expect(page.get_by_text("Result:")).to_be_visible(timeout=1_800_000)
            t_done = time.perf_counter()
            rows.append({"step": "trained KM shown (D=8, 10 BCD iterations)",
                         "s after streamlit run": t_done - t0,
                         "s after the Train click": t_done - t_click})
            metrics = page.locator('[data-testid="stMetric"]').all_inner_texts()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    print(table(rows, ["step", "s after streamlit run", "s after the Train click"], "{:.1f}"))
    print("Result metrics shown: " + "; ".join(m.replace("\n\n", " ") for m in metrics))
    print()
    footer(t_start)


if __name__ == "__main__":
    main()
