"""Where a served session's memory goes: what the app keeps per session, object by object,
and what each step allocates for a while (issue 24).

    python bench/app/session_memory.py [--sessions 5] [--n-users 20000] [--n-items 400]
                                   [--D 6] [--iters 8]

In one process, without a browser, each session does what the load test's sessions do
(``bench/app/load_test.py``): load its own planted-km set through the app's dataset cache
(``kmviz.ui.datasets.load_builtin``; ``random_state`` = the session's number), split it
as the Data page does, build the Data page's figures and table, then train KM twice (as the
back-to-back and at-once fits) in a worker thread, evaluate and save each run, and keep
what the session state keeps (dataset, split, runs). Reported:

1. **Kept per session**: the bytes of the NumPy arrays of the dataset, of the split's
   parts (arrays shared with the dataset counted apart), of the two fitted models, and of
   the dataset cache's entry; the process's RSS after each session.
2. **Transient**: tracemalloc's peak of each step over what was allocated before it (the
   generator, the split, the Data page's figures and table, a fit, the metrics, the save).

Streamlit's runtime is not running, so ``st.cache_data`` keeps its entries in memory as it
does in the server.
"""

from __future__ import annotations

import gc
import pickle
import sys
import tempfile
import threading
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, parser, table

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
MB = 2**20


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _arrays(obj, depth: int = 3) -> dict:
    """id -> base ndarray reachable from ``obj`` (objects, dicts, lists: ``depth`` deep)."""
    from server_memory import held_arrays

    return held_arrays(obj, depth=depth)


def _nbytes(arrays: dict, skip=()) -> float:
    return sum(a.nbytes for i, a in arrays.items() if i not in skip) / MB


class Transient:
    """tracemalloc's peak during a block, over what was traced when it began (MB)."""

    rows: list = []

    def __init__(self, step: str):
        self.step = step

    def __enter__(self):
        gc.collect()
        tracemalloc.reset_peak()
        self.before = tracemalloc.get_traced_memory()[0]
        self.t = time.perf_counter()
        return self

    def __exit__(self, *exc):
        now, peak = tracemalloc.get_traced_memory()
        Transient.rows.append({"step": self.step, "peak over start MB": (peak - self.before) / MB,
                               "kept after MB": (now - self.before) / MB,
                               "s": time.perf_counter() - self.t})


def _cache_bytes(ratings) -> float:
    """The size of the dataset cache's entry for ``ratings`` (``st.cache_data`` keeps the
    pickled value)."""
    return len(pickle.dumps(ratings, protocol=pickle.HIGHEST_PROTOCOL)) / MB


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=5)
    ap.add_argument("--n-users", type=int, default=20_000)
    ap.add_argument("--n-items", type=int, default=400)
    ap.add_argument("--D", type=int, default=6)
    ap.add_argument("--iters", type=int, default=8)
    ap.add_argument("--no-trace", action="store_true",
                    help="skip tracemalloc (RSS only; tracing slows every allocation)")
    args = ap.parse_args()
    if args.quick:
        args.sessions, args.n_users, args.n_items = 2, 2_000, 100
    warnings.filterwarnings("ignore")
    import logging

    logging.getLogger("streamlit").setLevel(logging.ERROR)
    from kmviz import families
    from kmviz.runs import RunStore, run_metrics, save_run
    from kmviz.ui import datasets as ds
    from kmviz.ui.memory import release_memory
    from kmviz.viz import count_distribution_figure, rating_histogram_figure

    t_start = time.perf_counter()
    header("Session memory: what a served session keeps, and what each step allocates")
    if not args.no_trace:
        tracemalloc.start()
    fam = families.get("km")
    params = {**fam.default_params(), "D": args.D, "max_iter": args.iters, "tol": 0.0}
    entry = ds.catalogue_entry("planted-km")
    kept_rows, sessions = [], []
    rss0 = _rss_mb()
    with tempfile.TemporaryDirectory(prefix="kmviz-session-memory-") as tmp:
        store = RunStore(Path(tmp) / "runs")
        for s in range(args.sessions):
            options = {**ds.entry_defaults(entry), "n_users": args.n_users,
                       "n_items": args.n_items, "D": args.D, "random_state": s}
            with Transient(f"session {s + 1}: generate and load (cached)"):
                ratings = ds.load_builtin("planted-km", tuple(sorted(options.items())))
            with Transient(f"session {s + 1}: split"):
                split, _, _ = ds._split_for(ratings, ds.DEFAULT_SPLIT)
            with Transient(f"session {s + 1}: Data page figures and table"):
                f1 = rating_histogram_figure(ratings.values, r_min=ratings.r_min,
                                             r_max=ratings.r_max, implicit=ratings.implicit)
                f2 = count_distribution_figure(ratings.user_counts(), what="user")
                f3 = count_distribution_figure(ratings.item_counts(), what="item")
                sent = sum(len(f.to_json()) for f in (f1, f2, f3)) / MB
                head = ratings.to_frame(limit=200) if "limit" in \
                    ratings.to_frame.__code__.co_varnames else ratings.to_frame().head(200)
                del f1, f2, f3, head
            with Transient(f"session {s + 1}: fingerprint x 2"):
                ratings.fingerprint(), split.train.fingerprint()
            models = []
            for k in range(2):
                model = fam.make(params)
                with Transient(f"session {s + 1}: KM fit {k + 1} (worker thread)"):
                    worker = threading.Thread(target=model.fit, args=(split.train,),
                                              kwargs={"validation": split.validation})
                    worker.start()
                    worker.join()
                with Transient(f"session {s + 1}: run metrics {k + 1}"):
                    metrics = run_metrics(model, split)
                with Transient(f"session {s + 1}: save run {k + 1}"):
                    save_run(model, split, dataset=ratings, spec={"kind": "built-in"},
                             store=store, writer="app", metrics=metrics)
                models.append(model)
            release_memory()
            sessions.append((ratings, split, models))
            data_ids = set(_arrays(ratings, 1))
            split_arrays = {}
            for part in split.parts().values():
                split_arrays.update(_arrays(part, 1))
            model_ids: dict = {}
            for m in models:
                model_ids.update(_arrays(m, 2))
            csr = sum(a.nbytes for r in [ratings, *split.parts().values()]
                      for key in ("csr", "csc") if key in vars(r)
                      for a in (vars(r)[key].data, vars(r)[key].indices,
                                vars(r)[key].indptr)) / MB
            kept_rows.append({
                "session": s + 1, "ratings": f"{ratings.n_ratings:,}",
                "dataset arrays MB": _nbytes(_arrays(ratings, 1)),
                "split parts MB (own)": _nbytes(split_arrays, data_ids),
                "CSR/CSC cached MB": csr,
                "2 models MB (own)": _nbytes(model_ids, data_ids | set(split_arrays)),
                "cache's own copy MB": (0.0 if hasattr(ds, "DATASETS") else
                                        _cache_bytes(ratings)),
                "figures sent MB": sent,
                "RSS MB": _rss_mb(), "RSS growth MB": _rss_mb() - rss0})
            rss0 = _rss_mb()
    print("## Kept per session\n")
    print(table(kept_rows, floatfmt="{:.1f}"))
    r = sessions[0][0]
    print("Dataset arrays of session 1: " + ", ".join(
        f"{name} {getattr(r, name).dtype} {getattr(r, name).nbytes / MB:.1f} MB"
        for name in ("users", "items", "values", "user_ids", "item_ids")) + "\n")
    if Transient.rows:
        print("## Transient (tracemalloc: NumPy and Python allocations)\n")
        print(table(Transient.rows, floatfmt="{:.1f}"))
    footer(t_start)


if __name__ == "__main__":
    main()
