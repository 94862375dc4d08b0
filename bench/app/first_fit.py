"""Where the first fit after an install waits: Numba compile time per kernel, cold vs warm.

    python bench/app/first_fit.py [--family km [--family gfm ...] | --all]

A fresh install has an empty Numba cache, so the first fit compiles every kernel it calls.
For each family this runs, each in a new process (``NUMBA_CACHE_DIR`` a new temporary
directory, so the working tree's own cache is neither used nor touched):

1. **cold fit**: the family's first fit (below) with an empty cache, recording Numba's
   ``numba:compile`` events: per compiled function, how many signatures it got and the seconds
   of compiling it (self: without the kernels it called that compiled inside it; inclusive:
   with them), whether it is ``parallel=True``; then the same fit again in that process (warm:
   every kernel in memory);
2. **cache-loaded fit**: a new process on the cache step 1 filled (a later start of the app);
3. **warm-up, then fit**: what the app does after an install: the family's warm-up module
   (``python -m kmviz.FAMILY.warmup``, which the app runs in a child process at launch) on an
   empty cache, then the fit in a new process on the cache it left. ``missed`` counts the
   kernels that fit still had to compile (the warm-up did not cover them): each makes the
   first click wait although the warm-up had finished.

The fits: KM ``KolmogorovModel(D=4, max_iter=2, random_state=0)`` on planted-km 60 x 30
(the default solver, "fast" semismooth Newton with the exact EVD); the other families their
registry ``quick_params`` on their ``contract_data`` (kmviz/families.py), as the contract
tests and ``bench/app/app_timing.py --cold`` fit them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, load_avg, parser, table

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ the child's side
def _fit_fn(family: str):
    """A function doing the family's first fit (data made outside the timed part)."""
    sys.path.insert(0, str(ROOT))
    if family == "km":
        from kmviz.data import load
        from kmviz.km.estimator import KolmogorovModel

        data = load("planted-km", n_users=60, n_items=30, D=4, random_state=0)
        return lambda: KolmogorovModel(D=4, max_iter=2, random_state=0).fit(data)
    import importlib

    from kmviz.data import load
    from kmviz.families import get

    fam = get(family)
    module, _, cls = fam.estimator.partition(":")
    est = getattr(importlib.import_module(module), cls)
    data = load(**fam.contract_data)
    return lambda: est(**fam.quick_params).fit(data)


class _Compiles:
    """A ``numba:compile`` listener: per compiled function, signatures and the CPU seconds of
    its compilation (self: without the kernels that compiled inside it; inclusive: with them).
    CPU time of this process, not wall time: the compiler runs in one thread, and on a shared
    box the wall time mostly measures the other processes."""

    def __init__(self):
        from numba.core import event as ev

        class Listener(ev.Listener):
            def on_start(_, event):
                self.stack.append([event.data["dispatcher"], time.process_time(), 0.0])

            def on_end(_, event):
                disp, start, child = self.stack.pop()
                dur = time.process_time() - start
                if self.stack:
                    self.stack[-1][2] += dur
                fn = disp.py_func
                name = f"{fn.__module__}.{fn.__qualname__}"
                r = self.rows.setdefault(name, {
                    "kernel": name, "signatures": 0, "self s": 0.0, "inclusive s": 0.0,
                    "parallel": bool(disp.targetoptions.get("parallel"))})
                r["signatures"] += 1
                r["self s"] += dur - child
                if not any(s[0].py_func is fn for s in self.stack):  # recursion counts once
                    r["inclusive s"] += dur

        self.stack: list = []
        self.rows: dict[str, dict] = {}
        self.listener = Listener()


def _record(fn):
    """Run ``fn`` recording compile events; returns (wall s, CPU s, per-kernel rows)."""
    from numba.core import event as ev

    rec = _Compiles()
    with ev.install_listener("numba:compile", rec.listener):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return wall, cpu, sorted(rec.rows.values(), key=lambda r: -r["self s"])


def child(family: str, what: str) -> dict:
    if what == "warmup":
        import importlib

        sys.path.insert(0, str(ROOT))
        mod = importlib.import_module(f"kmviz.{family}.warmup")
        wall, cpu, rows = _record(mod.compile_kernels)
        return {"wall": wall, "cpu": cpu, "rows": rows}
    fit = _fit_fn(family)
    wall, cpu, rows = _record(fit)
    out = {"wall": wall, "cpu": cpu, "rows": rows}
    if what == "cold":
        t0 = time.perf_counter()
        fit()
        out["warm"] = time.perf_counter() - t0
    return out


# ------------------------------------------------------------------ the parent's side
def run_child(family: str, what: str, cache: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, __file__, "--child", family, what], env=env,
                          capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{family} {what} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(family: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="kmviz-numba-first-") as c1, \
            tempfile.TemporaryDirectory(prefix="kmviz-numba-warmup-") as c2:
        cold = run_child(family, "cold", c1)
        cold["load"] = load_avg().split("/")[0]
        loaded = run_child(family, "fit", c1)
        warmup = run_child(family, "warmup", c2)
        after = run_child(family, "fit", c2)
    return {"cold": cold, "loaded": loaded, "warmup": warmup, "after": after}


def report(family: str, m: dict) -> None:
    cold = m["cold"]
    rows = [dict(r) for r in cold["rows"]]
    total_self = sum(r["self s"] for r in rows)
    for r in rows:
        r["parallel"] = "yes" if r["parallel"] else ""
    print(f"## {family}: kernels compiled by the first fit on an empty cache (CPU seconds)\n")
    print(table(rows, ["kernel", "signatures", "self s", "inclusive s", "parallel"],
                "{:.2f}"))
    n_sig = sum(r["signatures"] for r in rows)
    par = sum(r["self s"] for r in cold["rows"] if r["parallel"])
    print(f"{len(rows)} functions, {n_sig} signatures, {total_self:.1f} CPU s compiling "
          f"({par:.1f} s in parallel=True kernels)\n")

    def compiles(step):
        return sum(r["signatures"] for r in m[step]["rows"])

    summary = [
        {"step": "cold fit (empty cache)", "wall s": cold["wall"], "CPU s": cold["cpu"],
         "compiles": n_sig},
        {"step": "same fit again, same process (warm)", "wall s": cold["warm"], "compiles": 0},
        {"step": "fit in a new process, cache filled by the cold fit",
         "wall s": m["loaded"]["wall"], "CPU s": m["loaded"]["cpu"], "compiles": compiles("loaded")},
        {"step": "warm-up module on an empty cache", "wall s": m["warmup"]["wall"],
         "CPU s": m["warmup"]["cpu"], "compiles": compiles("warmup")},
        {"step": "fit in a new process after the warm-up", "wall s": m["after"]["wall"],
         "CPU s": m["after"]["cpu"], "compiles": compiles("after")},
    ]
    print(table(summary, ["step", "wall s", "CPU s", "compiles"], "{:.2f}"))
    print(f"cold / warm (wall): {cold['wall'] / max(cold['warm'], 1e-9):.0f}x; "
          f"load (1 min) after the cold fit: {cold['load']}")
    missed = m["after"]["rows"]
    if missed:
        print("missed by the warm-up: " + ", ".join(
            f"{r['kernel']} ({r['signatures']})" for r in missed))
    print()


def main():
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--family", action="append", help="family to measure (default km)")
    ap.add_argument("--all", action="store_true", help="every registered family")
    ap.add_argument("--child", nargs=2, help=__import__("argparse").SUPPRESS)
    ap.add_argument("--raw-json", help="also write the raw measurements to this file")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    if args.all:
        sys.path.insert(0, str(ROOT))
        from kmviz.families import names

        families = [n for n in names()]
    else:
        families = args.family or ["km"]
    header("First fit after an install: Numba compile time per kernel")
    t0 = time.perf_counter()
    raw = {}
    for fam in families:
        raw[fam] = measure(fam)
        report(fam, raw[fam])
    if args.raw_json:
        Path(args.raw_json).write_text(json.dumps(raw, indent=1))
    footer(t0)


if __name__ == "__main__":
    main()
