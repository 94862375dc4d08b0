"""A sweep against the same fits one by one: `kmviz sweep km --grid D=... --grid
lambda_theta=... --seeds 3 --save` (one process, 27 fits) vs the 27 `kmviz train km ...
--save` commands it replaces, each in its own process, on MovieLens latest-small. Wall time
of each way and the peak RSS of the processes (the sweep's one process; the largest of the
27). Both write to run stores of their own, deleted afterwards; the last table checks that
both ways saved the same metrics (a sweep's point is the single fit with its settings).

    python bench/app/sweep_vs_cli.py [--max-iter 1] [--quick]

``--quick``: a 2 x 2 x 2 sweep on a planted KM set (a smoke run).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, parser, table

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def run(argv: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of ``python -m kmviz ARGV`` in a child process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "kmviz", *argv], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"kmviz {' '.join(argv)} failed: {proc.stderr.read().decode()}")
    return wall, usage.ru_maxrss * 1024


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--max-iter", type=int, default=1)
    args = p.parse_args()
    header("kmviz sweep vs the same fits one by one from the command line")
    t_start = time.perf_counter()
    if args.quick:
        data = ["--data", "planted-km", "--option", "n_users=200", "--option", "n_items=100"]
        grid = {"D": [2, 4], "lambda_theta": [0, 10]}
        seeds = 2
    else:
        data = ["--data", "movielens-small"]
        grid = {"D": [4, 8, 16], "lambda_theta": [0, 10, 100]}
        seeds = 3
    fixed = ["--set", f"max_iter={args.max_iter}"]
    print(f"data: {' '.join(data)}; grid {grid} x {seeds} seeds; max_iter={args.max_iter}; "
          "every fit saved\n")
    with tempfile.TemporaryDirectory(prefix="kmviz-sweep-bench-") as tmp:
        sweep_dir, cli_dir = Path(tmp) / "sweep", Path(tmp) / "cli"
        # warm the Numba cache (both ways then load compiled kernels from disk)
        run(["train", "km", *data, "--D", "2", "--max-iter", "1"])
        gargs = [a for k, v in grid.items() for a in ("--grid", f"{k}={','.join(map(str, v))}")]
        sweep_s, sweep_rss = run(["sweep", "km", *data, *gargs, "--seeds", str(seeds),
                                  *fixed, "--save", "--dir", str(sweep_dir)])
        cli_s, cli_rss = 0.0, 0
        for d in grid["D"]:
            for lam in grid["lambda_theta"]:
                for seed in range(seeds):
                    # the sweep's split seed is 0 (its --seed); its model seeds 0, 1, 2
                    s, rss = run(["train", "km", *data, "--D", str(d), "--set",
                                  f"lambda_theta={lam}", "--set", f"random_state={seed}",
                                  "--seed", "0", *fixed, "--save", "--dir", str(cli_dir)])
                    cli_s += s
                    cli_rss = max(cli_rss, rss)
        from kmviz.runs import RunStore

        a, b = RunStore(sweep_dir).list(), RunStore(cli_dir).list()
        n = len(a)
        rows = [{"way": f"kmviz sweep (1 process, {n} fits)", "wall s": sweep_s,
                 "s per fit": sweep_s / n, "peak RSS MB": sweep_rss / 2**20},
                {"way": f"{len(b)} x kmviz train (1 process each)", "wall s": cli_s,
                 "s per fit": cli_s / len(b), "peak RSS MB": cli_rss / 2**20}]
        print(table(rows))
        key = ["D", "lambda_theta", "random_state"]
        m = a.merge(b, on=key, suffixes=("_sweep", "_cli"))
        diff = (m["validation_nrmse_sweep"] - m["validation_nrmse_cli"]).abs().max()
        print(f"\nsweep / one by one: {sweep_s / cli_s:.2f} of the wall time. Same settings "
              f"matched: {len(m)} of {n}; largest |validation_nrmse difference|: {diff:.3g}\n")
    footer(t_start)


if __name__ == "__main__":
    main()
