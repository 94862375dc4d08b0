"""Time the app as a user meets it: `streamlit run app.py` -> first page interactive, and ->
a trained KM (D = 8, 10 BCD iterations, tol = 0) on the built-in MovieLens latest-small,
clicking through the app in Debian's Chromium (Playwright, never a downloaded browser).

    python bench/app_timing.py [--cold [--km-only]]

``--cold`` starts with an empty Numba cache, as on a first start after installing (the app
then compiles its kernels at launch, in a child process, the picked family first), and adds
a table of the first fit of every registered family (kmviz/families.py): for each, a new
server with an empty Numba cache of its own, the family's small built-in dataset
(``contract_data``) loaded on the Data page, the family picked on the Train page with its
``quick_params`` typed into the form, and the time from the Train click to the finished fit
("Result:") in the browser; then the same warm (every family's kernels in the cache, a new
server per family). The empty cache is a fresh ``NUMBA_CACHE_DIR`` given to the server only,
which is what ``clear_numba_cache`` would leave, without deleting the cache of the working
tree that other processes on the machine may be using; the warm rows run after the
families' warm-up modules have filled the working tree's cache (so it is complete when the
script ends).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from _common import footer, header, load_avg, parser, table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
#: Longest wait for a fit (a cold KM compiles for minutes on a busy 2-core box).
FIT_TIMEOUT_MS = 1_800_000


def clear_numba_cache() -> int:
    """Delete Numba's cache files of the kmviz kernels in the working tree (not used by
    ``--cold``, which gives the server an empty cache directory instead)."""
    files = [p for ext in ("*.nbi", "*.nbc") for p in (ROOT / "kmviz").rglob(ext)]
    for p in files:
        p.unlink()
    return len(files)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve(numba_cache_dir: str | None = None):
    """`streamlit run app.py` on a free port with its own run store (and, if given, its own
    Numba cache); yields (url, the perf_counter time it was started at)."""
    env = dict(os.environ, KMVIZ_RUNS_DIR=tempfile.mkdtemp(prefix="kmviz-timing-runs-"))
    if numba_cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = numba_cache_dir
    port = free_port()
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited early with code {proc.returncode}")
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=2).status == 200:
                    break
            except OSError:
                time.sleep(0.2)
        yield url, t0
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def open_home(browser, url):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1400, "height": 2000})
    page.set_default_timeout(600_000)
    page.goto(url)
    expect(page.get_by_text("Try it in three steps")).to_be_visible(timeout=600_000)
    return page


def nav(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title,
                                                             exact=True).click()


def settle(page) -> None:
    from playwright.sync_api import expect

    page.wait_for_timeout(300)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=600_000)


def ml_small_km(browser, url, t0) -> list[dict]:
    """The first table: first page, then KM D = 8 on MovieLens latest-small (loaded in a
    fresh session), 10 BCD iterations."""
    from playwright.sync_api import expect

    rows = [{"step": "health endpoint up", "s after streamlit run": time.perf_counter() - t0}]
    page = open_home(browser, url)
    rows.append({"step": "first page interactive",
                 "s after streamlit run": time.perf_counter() - t0})
    nav(page, "Train")
    form = page.locator('[data-testid="stForm"]')
    expect(form).to_be_visible()
    form.get_by_role("spinbutton", name="max BCD iterations").fill("10")
    form.get_by_role("spinbutton", name="tol").fill("0")
    t_click = time.perf_counter()
    page.get_by_role("button", name="Train", exact=True).click()
    expect(page.get_by_text("Result:")).to_be_visible(timeout=FIT_TIMEOUT_MS)
    t_done = time.perf_counter()
    rows.append({"step": "trained KM shown (D=8, 10 BCD iterations)",
                 "s after streamlit run": t_done - t0,
                 "s after the Train click": t_done - t_click})
    metrics = page.locator('[data-testid="stMetric"]').all_inner_texts()
    page.close()
    return rows, metrics


def _visible_number_settings(fam) -> dict:
    """The family's quick settings that are number boxes in the form's main part, by label."""
    out = {}
    for name, value in fam.quick_params.items():
        spec = fam.constraints().get(name)
        if (spec is None or spec.advanced or spec.options or spec.kind not in (int, float)
                or name == "random_state"):
            continue
        out[spec.label or name] = value
    return out


def first_fit(browser, url, fam) -> dict:
    """Load the family's small dataset, pick the family on Train, type its quick settings,
    press Train: seconds from the click to the result in the browser."""
    from playwright.sync_api import expect

    from kmviz.data.catalogue import list_datasets

    data = dict(fam.contract_data)
    source = data.pop("source")
    title = {e.name: e.title for e in list_datasets()}[source]
    page = open_home(browser, url)
    nav(page, "Data")
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Dataset").click()
    page.get_by_role("option", name=title, exact=True).click()
    settle(page)
    for label, value in data.items():
        box = page.get_by_label(label, exact=True)
        box.fill(str(value))
        box.press("Enter")
    settle(page)
    page.get_by_role("button", name="Load", exact=True).click()
    expect(page.get_by_text("Train / validation / test split")).to_be_visible()
    settle(page)
    nav(page, "Train")
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Model family").click()
    page.get_by_role("option", name=fam.title, exact=True).click()
    settings = _visible_number_settings(fam)
    first = next(iter(settings))
    form = page.locator('[data-testid="stForm"]').filter(
        has=page.get_by_role("spinbutton", name=first, exact=True))
    expect(form).to_be_visible(timeout=600_000)
    settle(page)
    for label, value in settings.items():
        form.get_by_role("spinbutton", name=label, exact=True).fill(str(value))
    compiling = (page.get_by_text(f"Compiling the Numba kernels of {fam.short} ").count() +
                 page.get_by_text(f"kernels of {fam.short} compile next").count()) > 0
    t_click = time.perf_counter()
    page.get_by_role("button", name="Train", exact=True).click()
    expect(page.get_by_text("Result:")).to_be_visible(timeout=FIT_TIMEOUT_MS)
    seconds = time.perf_counter() - t_click
    page.close()
    return {"seconds": seconds, "compiling": compiling,
            "dataset": source + "".join(f", {k}={v}" for k, v in data.items()),
            "settings": ", ".join(f"{k} {v}" for k, v in settings.items()) +
            " (the rest as the form has them)"}


def warm_every_family() -> float:
    """Fill the working tree's Numba cache with every family's kernels (their warm-up
    modules, as the app runs them); seconds taken."""
    from kmviz import families

    t = time.perf_counter()
    for fam in families.all_families():
        if fam.warmup:
            subprocess.run([sys.executable, "-m", fam.warmup], cwd=ROOT, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def families_table(browser) -> list[dict]:
    from kmviz import families

    rows = []
    for fam in families.all_families():
        cache = tempfile.mkdtemp(prefix="kmviz-numba-cold-")
        try:
            with serve(cache) as (url, t0):
                cold = first_fit(browser, url, fam)
        finally:  # the server's warm-up children may still write for a moment
            time.sleep(2)
            shutil.rmtree(cache, ignore_errors=True)
        rows.append({"family": fam.short, "dataset": cold["dataset"],
                     "settings": cold["settings"], "cold: s click -> result": cold["seconds"],
                     "compile notice at click": "yes" if cold["compiling"] else "no",
                     "load at cold end": load_avg().split("/")[0]})
    print(f"(warm-up modules re-filled the working tree's cache in {warm_every_family():.0f} s)\n")
    for row, fam in zip(rows, families.all_families()):
        with serve() as (url, t0):
            warm = first_fit(browser, url, fam)
        row["warm: s click -> result"] = warm["seconds"]
        row["cold / warm"] = row["cold: s click -> result"] / warm["seconds"]
    return rows


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--cold", action="store_true",
                    help="start with an empty Numba cache, and time every family's first fit "
                         "cold and warm")
    ap.add_argument("--km-only", action="store_true",
                    help="with --cold: only the first table (KM on MovieLens latest-small), "
                         "not the per-family table (which takes many minutes)")
    args = ap.parse_args()
    from playwright.sync_api import expect, sync_playwright

    t_start = time.perf_counter()
    header("App timing: streamlit run -> interactive -> trained KM (MovieLens latest-small)")
    expect.set_options(timeout=600_000)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            cache = tempfile.mkdtemp(prefix="kmviz-numba-cold-")
            try:
                if args.cold:
                    print("cold start: the server gets an empty Numba cache\n")
                with serve(cache if args.cold else None) as (url, t0):
                    rows, metrics = ml_small_km(browser, url, t0)
            finally:
                time.sleep(2)
                shutil.rmtree(cache, ignore_errors=True)
            print(table(rows, ["step", "s after streamlit run", "s after the Train click"],
                        "{:.1f}"))
            print("Result metrics shown: " + "; ".join(m.replace("\n\n", " ")
                                                       for m in metrics))
            print()
            if args.cold and not args.km_only:
                rows = families_table(browser)
                print("## First fit per family: Train click -> result in the browser, "
                      "cold (new server, empty Numba cache) and warm (new server, cache "
                      "present)\n")
                print(table(rows, ["family", "dataset", "settings", "cold: s click -> result",
                                   "warm: s click -> result", "cold / warm",
                                   "compile notice at click", "load at cold end"], "{:.1f}"))
        finally:
            browser.close()
    footer(t_start)


if __name__ == "__main__":
    main()
