"""Memory of a server after fits of every family on the default data: what a finished fit
keeps, and the process's resident memory (RSS) after each.

    python bench/app/server_memory.py [--max-iter N] [--families km,ocmf,...]

In one process, as the app's server does: load the built-in default (MovieLens
latest-small), split it as the Data page does, then fit each registered family in turn with
the Train page's defaults (``Family.default_params``; ``--max-iter`` caps the iterations: the
memory a fit needs depends on the data and the settings, not on how many iterations run),
keep every fitted model (a session keeps its runs), and after each fit report:

- the bytes of NumPy arrays the finished model holds (its attributes, one level into
  containers and objects; arrays shared with the training data are counted apart),
- the process's RSS after a garbage collection, and its peak (VmHWM) so far.

The issue's bar: five fits of different families on the default data leave the server under
1.5 GB.
"""

from __future__ import annotations

import gc
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, parser, status_kb, table

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _status_mb(field: str) -> float:
    kb = status_kb(field)
    return kb / 1024.0 if kb >= 0 else float("nan")


def held_arrays(obj, *, depth: int = 2, seen=None) -> dict:
    """id -> ndarray of the arrays reachable from ``obj``'s attributes (``depth`` levels into
    objects, dicts, lists and tuples; SciPy sparse matrices by their data arrays)."""
    seen = {} if seen is None else seen
    stack = [(obj, 0)]
    visited = set()
    while stack:
        x, level = stack.pop()
        if id(x) in visited:
            continue
        visited.add(id(x))
        if isinstance(x, np.ndarray):
            base = x if x.base is None or not isinstance(x.base, np.ndarray) else x.base
            seen[id(base)] = base
            continue
        if level >= depth + 1:
            continue
        if isinstance(x, dict):
            stack += [(v, level + 1) for v in x.values()]
        elif isinstance(x, (list, tuple)):
            stack += [(v, level + 1) for v in x[:1000]]
        elif hasattr(x, "__dict__") and not isinstance(x, type):
            stack += [(v, level + 1) for v in vars(x).values()]
        elif hasattr(x, "__slots__"):
            stack += [(getattr(x, s, None), level + 1) for s in x.__slots__]
    return seen


def largest(model, n: int = 3) -> str:
    """The model's largest attributes by the bytes of arrays they hold."""
    sizes = []
    for key, value in vars(model).items():
        b = sum(a.nbytes for a in held_arrays(value, depth=1).values())
        if b >= 1 << 20:
            sizes.append((b, key))
    sizes.sort(reverse=True)
    return ", ".join(f"{k} {b / 2**20:.0f} MB" for b, k in sizes[:n]) or "-"


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--max-iter", type=int, default=2,
                    help="cap on the iterations of each fit (default 2)")
    ap.add_argument("--families", default="", help="comma-separated names (default: all)")
    ap.add_argument("--thread", action="store_true",
                    help="fit in a worker thread, as the app's server does, and add the RSS "
                         "after kmviz.ui.memory.release_memory() (glibc's malloc_trim)")
    args = ap.parse_args()
    from kmviz import families
    from kmviz.data import load, make_split

    t_start = time.perf_counter()
    header("Server memory: fitted models kept and RSS after fits of every family")
    rows = [{"step": "start (kmviz imported)", "RSS MB": _status_mb("VmRSS"),
             "peak MB": _status_mb("VmHWM")}]
    ratings = load("movielens-small")
    split = make_split(ratings)
    data_ids = set(held_arrays(ratings, depth=1)) | set(held_arrays(split, depth=2))
    gc.collect()
    rows.append({"step": "MovieLens latest-small loaded and split", "RSS MB":
                 _status_mb("VmRSS"), "peak MB": _status_mb("VmHWM")})
    kept = []
    names = [n for n in (args.families.split(",") if args.families else families.names()) if n]
    for name in names:
        fam = families.get(name)
        params = fam.default_params()
        for key in ("max_iter", "n_passes"):
            if key in params and params[key] is not None:
                params[key] = min(int(params[key]), args.max_iter)
        model = fam.make(params)
        t = time.perf_counter()
        failed = []

        def fit(model=model):
            try:
                model.fit(split.train, validation=split.validation)
            except Exception as exc:  # noqa: BLE001 - reported in the table
                failed.append(f"{type(exc).__name__}: {exc}")

        if args.thread:  # a worker thread gets its own malloc arena, as in the server
            worker = threading.Thread(target=fit)
            worker.start()
            worker.join()
        else:
            fit()
        if failed:
            rows.append({"step": f"{fam.short}: failed ({failed[0]})"[:90]})
            continue
        seconds = time.perf_counter() - t
        kept.append(model)
        gc.collect()
        arrays = held_arrays(model)
        own = sum(a.nbytes for i, a in arrays.items() if i not in data_ids)
        shared = sum(a.nbytes for i, a in arrays.items() if i in data_ids)
        rows.append({"step": f"after {fam.short} ({seconds:.0f} s)",
                     "model arrays MB": own / 2**20, "shared with data MB": shared / 2**20,
                     "largest attributes": largest(model),
                     "RSS MB": _status_mb("VmRSS"), "peak MB": _status_mb("VmHWM")})
        if args.thread:
            from kmviz.ui.memory import release_memory

            release_memory()
            rows[-1]["RSS after release MB"] = _status_mb("VmRSS")
    print(table(rows, ["step", "model arrays MB", "shared with data MB", "largest attributes",
                       "RSS MB", "RSS after release MB", "peak MB"], "{:.0f}"))
    print(f"\nmax_iter capped at {args.max_iter}; {len(kept)} models kept in the process.")
    footer(t_start)


if __name__ == "__main__":
    main()
