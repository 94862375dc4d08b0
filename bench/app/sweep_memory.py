"""Memory of the app's server during a sweep: the resident memory (RSS) after each point of
a Train-page sweep, run as the page runs it (a :class:`kmviz.ui.sweep.SweepJob` thread that
saves every point into a run store and keeps only its table row).

    python bench/app/sweep_memory.py [--points 12] [--max-iter 2] [--seeds-only] [--quick]

In one process: load MovieLens latest-small (``--quick``: a planted KM set), split it as the
Data page does, then sweep KM over D (``--points`` values from 2 up, max_iter fixed) with
the Train page's other defaults; ``--seeds-only``: every point at D = 8, only the seed
differs (so a growth of the RSS would be what the sweep keeps, not a larger model). After each point (the job's ``on_point`` hook) the RSS after a
garbage collection and the peak so far (VmHWM) are read. What the bench checks: the RSS does
not grow with the number of points (a sweep keeps rows, not models), i.e. the growth from the
second point to the last stays within what one fit needs.
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, parser, status_kb, table

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _status_mb(field: str) -> float:
    kb = status_kb(field)
    return kb / 1024.0 if kb >= 0 else float("nan")


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=12, help="values of D (default 12)")
    ap.add_argument("--max-iter", type=int, default=2, help="BCD iterations per point")
    ap.add_argument("--seeds-only", action="store_true",
                    help="D = 8 at every point, random_state 0, 1, ... (default: D = 2, 3, ...)")
    args = ap.parse_args()
    import os

    from kmviz import families
    from kmviz.data import load, make_split
    from kmviz.sweep import plan_sweep

    t_start = time.perf_counter()
    header("Server memory during a sweep from the Train page")
    with tempfile.TemporaryDirectory(prefix="kmviz-sweep-mem-") as tmp:
        os.environ["KMVIZ_RUNS_DIR"] = tmp  # the job's RunStore() writes here
        from kmviz.ui.sweep import SweepJob

        if args.quick:
            ratings = load("planted-km", n_users=300, n_items=80)
        else:
            ratings = load("movielens-small")
        split = make_split(ratings)
        fam = families.get("km")
        varied = ({"random_state": list(range(args.points))} if args.seeds_only
                  else {"D": list(range(2, 2 + args.points))})
        fixed = {"D": 8} if args.seeds_only else {}
        base = {k: v for k, v in fam.default_params().items()
                if k not in ("D", "max_iter", "random_state")}
        plan = plan_sweep(fam, varied, base={**base, **fixed, "max_iter": args.max_iter})
        gc.collect()
        rows = [{"after": "data loaded and split", "RSS MB": _status_mb("VmRSS"),
                 "peak MB": _status_mb("VmHWM"), "s": 0.0}]
        t0 = time.perf_counter()

        class Measured(SweepJob):
            def _on_point(self, i, n, row):
                super()._on_point(i, n, row)
                gc.collect()
                what = ", ".join(f"{k} = {row.get(k)}" for k in varied)
                rows.append({"after": f"point {i} of {n} ({what})",
                             "RSS MB": _status_mb("VmRSS"), "peak MB": _status_mb("VmHWM"),
                             "s": time.perf_counter() - t0})

        job = Measured(plan, ratings, split, spec={"builtin": "bench"}, owner="bench")
        job.start()
        while not job.done:
            time.sleep(0.2)
        print(f"sweep: {job.progress()['message']}\n")
        print(table([{k: (f"{v:.1f}" if isinstance(v, float) else v) for k, v in r.items()}
               for r in rows]))
        points = rows[1:]
        if len(points) >= 2:
            growth = points[-1]["RSS MB"] - points[0]["RSS MB"]
            print(f"\nRSS growth from the first point to the last ({len(points)} points): "
                  f"{growth:+.1f} MB; peak {max(r['peak MB'] for r in rows):.0f} MB.")
    footer(t_start)


if __name__ == "__main__":
    main()
