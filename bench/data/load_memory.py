"""Peak memory of loading rating files, against the size of their text (issue 13).

Each case runs in a fresh child process that imports kmviz, resets the kernel's peak-RSS
mark (``/proc/self/clear_refs``; elsewhere ``resource.getrusage(RUSAGE_SELF).ru_maxrss``
is used as is) and notes its resident set size, calls ``kmviz.data.load`` on the input and
reads the peak (``VmHWM``). The difference is the load's peak memory, reported next
to the input's uncompressed text size and the bytes of the final arrays (ids, values,
index arrays, names) of the returned Ratings. The target: peak <= about 4 x text + final
arrays. ``--tracemalloc`` also reports tracemalloc's peak of Python and NumPy allocations
(slower: every allocation is traced).

Inputs: generated CSVs of 50 and 200 MB (``user,item,rating,timestamp``, integer ids,
half-star ratings, no repeated pair), written to a temporary directory that is deleted
afterwards, and the MovieLens 100K directory (read where it is, never copied; default
``../shared/datasets/ml-100k`` or ``$KMVIZ_ML100K``; skipped when absent).

Command (from the repository root)::

    .venv/bin/python bench/data/load_memory.py [--sizes 50,200] [--tracemalloc] [--ml100k DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ML100K_DEFAULT = ROOT.parent / "shared" / "datasets" / "ml-100k"
MB = 1024 * 1024


def _status_kib(key: str):
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (Linux >= 4.0); False where unsupported."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _rss_bytes() -> int:
    kib = _status_kib("VmRSS")
    return _peak_rss_bytes() if kib is None else kib * 1024


def _peak_rss_bytes() -> int:
    kib = _status_kib("VmHWM")
    if kib is not None:
        return kib * 1024
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux reports KiB


def _final_bytes(r) -> int:
    """Bytes held by the Ratings' arrays (ids, values, names, side information)."""
    import numpy as np

    total = 0
    for a in (r.users, r.items, r.values, r.user_ids, r.item_ids, r.user_names, r.item_names):
        if a is None:
            continue
        total += a.nbytes
        if a.dtype == object:
            total += sum(sys.getsizeof(x) for x in a)
    for f in (r.user_features, r.item_features):
        if f is not None:
            total += int(f.memory_usage(deep=True).sum())
    return int(total) + int(np.int64(0).nbytes)


def _warm_up() -> None:
    """Load tiny files of each kind first, so lazy imports are not counted as the load's."""
    from kmviz.data import load

    with tempfile.TemporaryDirectory(prefix="kmviz-warm-") as tmp:
        csv = Path(tmp) / "w.csv"
        csv.write_text("user,item,rating\n1,1,1\n2,2,2\n1,2,3\n", encoding="utf-8")
        load(csv)
        ml = Path(tmp) / "ml"
        ml.mkdir()
        (ml / "u.data").write_text("1\t1\t1\t0\n2\t2\t2\t0\n", encoding="utf-8")
        flags = "|".join(["0"] * 19)
        (ml / "u.item").write_text(f"1|A (1995)|01-Jan-1995||u|{flags}\n"
                                   f"2|B (1996)|01-Jan-1996||u|{flags}\n", encoding="utf-8")
        (ml / "u.user").write_text("1|20|M|x|1\n2|30|F|y|2\n", encoding="utf-8")
        load(ml)


def child(path: str, use_tracemalloc: bool) -> None:
    """Load ``path`` in this process and print one JSON line of measurements."""
    import gc

    from kmviz.data import load

    _warm_up()
    gc.collect()
    if use_tracemalloc:
        import tracemalloc

        tracemalloc.start()
    # the load's own peak: reset the peak mark, then peak after - resident before
    before = _rss_bytes() if _reset_peak() else _peak_rss_bytes()
    t0 = time.perf_counter()
    r = load(path, max_bytes=2 * 1024 * MB)
    seconds = time.perf_counter() - t0
    after = _peak_rss_bytes()
    traced = None
    if use_tracemalloc:
        traced = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    print(json.dumps({"peak_rss": after - before, "traced": traced,
                      "final": _final_bytes(r), "seconds": seconds, "n_ratings": r.n_ratings,
                      "n_users": r.n_users, "n_items": r.n_items}))


def make_csv(path: Path, target_mb: float, seed: int = 0) -> None:
    """Write ``user,item,rating,timestamp`` rows until the file holds about target_mb."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    n_users, n_items = 200_000, 60_000
    bytes_per_row = 27  # measured on this generator's rows
    n = int(target_mb * MB / bytes_per_row)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("user,item,rating,timestamp\n")
        step = 1_000_000
        for start in range(0, n, step):
            k = np.arange(start, min(n, start + step), dtype=np.int64)
            # k -> distinct (user, item) pairs: a multiplier coprime to the pair count
            key = (k * 2_654_435_761) % (n_users * n_items)
            frame = pd.DataFrame({
                "user": key // n_items + 1, "item": key % n_items + 1,
                "rating": rng.integers(1, 11, size=k.size) / 2,
                "timestamp": rng.integers(800_000_000, 1_700_000_000, size=k.size)})
            frame.to_csv(f, header=False, index=False, lineterminator="\n")


def text_bytes(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir()
                   if p.is_file() and p.name in ("u.data", "u.item", "u.user", "u.genre"))
    return path.stat().st_size


def measure(path: Path, use_tracemalloc: bool) -> dict:
    cmd = [sys.executable, __file__, "--child", str(path)]
    if use_tracemalloc:
        cmd.append("--tracemalloc")
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="50,200", help="generated CSV sizes in MB")
    p.add_argument("--ml100k", default=os.environ.get("KMVIZ_ML100K", str(ML100K_DEFAULT)))
    p.add_argument("--tracemalloc", action="store_true", help="also trace allocations")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.tracemalloc)
        return 0

    cmd = " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv])
    print("# Peak memory of kmviz.data.load\n")
    print(f"command: `{cmd}`  ")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}  ")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    rows = []
    with tempfile.TemporaryDirectory(prefix="kmviz-bench-") as tmp:
        cases = []
        for size in [float(s) for s in args.sizes.split(",") if s.strip()]:
            path = Path(tmp) / f"ratings-{size:g}mb.csv"
            make_csv(path, size)
            cases.append((f"generated CSV {size:g} MB", path))
        ml = Path(args.ml100k)
        if (ml / "u.data").is_file():
            cases.append(("MovieLens 100K directory", ml))
        else:
            print(f"(MovieLens 100K not found at {ml}: skipped)\n")
        for label, path in cases:
            text = text_bytes(path)
            m = measure(path, False)  # RSS without tracing (tracing costs memory itself)
            if args.tracemalloc and "error" not in m:
                m["traced"] = measure(path, True).get("traced")
            if "error" in m:
                rows.append([label, f"{text / MB:.1f}", "-", "-", "-", "-", "-", "-",
                             m["error"][:60]])
                continue
            budget = 4 * text + m["final"]
            rows.append([
                label, f"{text / MB:.1f}", f"{m['n_ratings']:,}", f"{m['final'] / MB:.1f}",
                f"{m['peak_rss'] / MB:.1f}",
                "-" if m["traced"] is None else f"{m['traced'] / MB:.1f}",
                f"{m['peak_rss'] / text:.2f}", f"{(m['peak_rss'] - m['final']) / text:.2f}",
                f"{m['seconds']:.1f}" + ("" if m["peak_rss"] <= budget else "  OVER BUDGET")])
        # the generated files go with the temporary directory
    header = ["input", "text MB", "ratings", "final arrays MB", "peak RSS MB",
              "tracemalloc peak MB", "peak / text", "(peak - final) / text", "load s"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print("\npeak RSS: the child's peak resident set size during the load minus its resident "
          "size before it (kmviz imported); budget: 4 x text + final arrays.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
