"""Time the app as a user meets it: `streamlit run app.py` -> first page interactive, and ->
a trained KM (D = 8, 10 BCD iterations, tol = 0) on the built-in MovieLens latest-small,
clicking through the app in Debian's Chromium (Playwright, never a downloaded browser).

    python bench/app/app_timing.py [--cold [--km-only] | --after-warmup]

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

``--after-warmup`` is the teacher's evening before class: an empty Numba cache, then
``kmviz warmup`` into it (timed, in a child process with that ``NUMBA_CACHE_DIR``), then the
server on that cache and the same first table (first page, KM on latest-small from the click).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, load_avg, parser, table

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kmviz.testing.browser import (chromium, load_builtin, nav, open_home,  # noqa: E402
                                   serve, settle)

#: Longest wait for a fit (a cold KM compiles for minutes on a busy 2-core box).
FIT_TIMEOUT_MS = 1_800_000
#: Longest wait for anything else (a page, a script run) on a busy box.
WAIT_MS = 600_000


def clear_numba_cache() -> int:
    """Delete Numba's cache files of the kmviz kernels in the working tree (not used by
    ``--cold``, which gives the server an empty cache directory instead)."""
    files = [p for ext in ("*.nbi", "*.nbc") for p in (ROOT / "kmviz").rglob(ext)]
    for p in files:
        p.unlink()
    return len(files)


@contextmanager
def app_server(numba_cache_dir: str | None = None):
    """`streamlit run app.py` (kmviz.testing.browser.serve) with a run store of its own,
    deleted afterwards, and, if given, its own Numba cache; yields the Server."""
    with tempfile.TemporaryDirectory(prefix="kmviz-timing-runs-",
                                     ignore_cleanup_errors=True) as runs:
        with serve(runs_dir=runs, numba_cache_dir=numba_cache_dir,
                   timeout=WAIT_MS / 1000) as server:
            yield server


def home(browser, url):
    return open_home(browser, url, timeout_ms=WAIT_MS, height=2000)


def ml_small_km(browser, server) -> list[dict]:
    """The first table: first page, then KM D = 8 on MovieLens latest-small (loaded in a
    fresh session), 10 BCD iterations."""
    from playwright.sync_api import expect

    t0 = server.start
    rows = [{"step": "health endpoint up", "s after streamlit run": time.perf_counter() - t0}]
    page = home(browser, server.url)
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
    page = home(browser, url)
    load_builtin(page, title, data, settle_ms=WAIT_MS)
    settle(page, WAIT_MS)
    nav(page, "Train")
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Model family").click()
    page.get_by_role("option", name=fam.title, exact=True).click()
    settings = _visible_number_settings(fam)
    first = next(iter(settings))
    form = page.locator('[data-testid="stForm"]').filter(
        has=page.get_by_role("spinbutton", name=first, exact=True))
    expect(form).to_be_visible(timeout=WAIT_MS)
    settle(page, WAIT_MS)
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


def warmup_into(cache: str) -> float:
    """``python -m kmviz warmup`` with ``NUMBA_CACHE_DIR=cache`` (as a teacher runs it after
    installing); seconds taken."""
    import os

    env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "kmviz", "warmup"], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def families_table(browser) -> list[dict]:
    from kmviz import families

    rows = []
    for fam in families.all_families():
        cache = tempfile.mkdtemp(prefix="kmviz-numba-cold-")
        try:
            with app_server(cache) as server:
                cold = first_fit(browser, server.url, fam)
        finally:  # the server's warm-up children may still write for a moment
            time.sleep(2)
            shutil.rmtree(cache, ignore_errors=True)
        rows.append({"family": fam.short, "dataset": cold["dataset"],
                     "settings": cold["settings"], "cold: s click -> result": cold["seconds"],
                     "compile notice at click": "yes" if cold["compiling"] else "no",
                     "load at cold end": load_avg().split("/")[0]})
    print(f"(warm-up modules re-filled the working tree's cache in {warm_every_family():.0f} s)\n")
    for row, fam in zip(rows, families.all_families()):
        with app_server() as server:
            warm = first_fit(browser, server.url, fam)
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
    ap.add_argument("--after-warmup", action="store_true",
                    help="an empty Numba cache filled by `kmviz warmup` first (timed), then "
                         "the first table on that cache")
    args = ap.parse_args()
    from playwright.sync_api import expect

    t_start = time.perf_counter()
    header("App timing: streamlit run -> interactive -> trained KM (MovieLens latest-small)")
    expect.set_options(timeout=WAIT_MS)
    with chromium() as browser:
        cache = tempfile.mkdtemp(prefix="kmviz-numba-cold-")
        try:
            if args.cold:
                print("cold start: the server gets an empty Numba cache\n")
            if args.after_warmup:
                print(f"`kmviz warmup` into an empty Numba cache took {warmup_into(cache):.0f} s "
                      f"(load at its end {load_avg().split('/')[0]})\n")
            with app_server(cache if args.cold or args.after_warmup else None) as server:
                rows, metrics = ml_small_km(browser, server)
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
    footer(t_start)


if __name__ == "__main__":
    main()
