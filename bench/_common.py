"""Shared helpers for the benchmarks: argument parsing, datasets, tables.

Benchmarks print Markdown tables and the command that made them. Times on this 2-core box
are noisy: compare ratios within one run, not absolute numbers across runs.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ML100K_DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "ml-100k"


#: What ``--json PATH`` writes at the end of a run: the title, the command, every table
#: printed through :func:`table` (columns and rows), the elapsed time and the load.
_RUN = {"json": None, "title": "", "tables": []}


class _Parser(argparse.ArgumentParser):
    """The benches' parser: every bench gets ``--json PATH`` (its tables as JSON beside the
    Markdown it prints)."""

    def parse_args(self, *a, **kw):
        args = super().parse_args(*a, **kw)
        _RUN["json"] = getattr(args, "json", None)
        return args


def parser(description: str) -> argparse.ArgumentParser:
    p = _Parser(description=description)
    p.add_argument("--json", metavar="PATH",
                   help="also write every table of the run to PATH as JSON (with the "
                        "command, the machine's load and the elapsed time)")
    p.add_argument("--ml100k", default=os.environ.get("KMVIZ_ML100K", str(ML100K_DEFAULT)),
                   help="MovieLens 100K directory (never shipped with kmviz; "
                        "default ../shared/datasets/ml-100k or $KMVIZ_ML100K)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    return p


def header(title: str) -> None:
    """Print the title, the exact command, and the machine facts that matter."""
    import numba

    cmd = " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv])
    _RUN.update(title=title, command=cmd, load_at_start=load_avg(),
                date=time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()))
    print(f"# {title}\n")
    print(f"command: `{cmd}`  ")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numba {numba.__version__}, "
          f"numba threads {numba.get_num_threads()}, numpy {np.__version__}  ")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  ")
    print(f"load average (1/5/15 min) at start: {load_avg()} on {os.cpu_count()} cores "
          f"(the box is shared: compare ratios within this run, not absolute seconds)\n")


def table(rows: list[dict], columns: list[str] | None = None, floatfmt: str = "{:.4g}") -> str:
    """Render rows of dicts as a Markdown table (missing cells shown as '-')."""
    if not rows:
        return "(no rows)\n"
    columns = columns or list(dict.fromkeys(k for r in rows for k in r))
    _RUN["tables"].append({"columns": list(columns),
                           "rows": [{c: _json_value(r.get(c)) for c in columns} for r in rows]})

    def fmt(v):
        if v is None:
            return "-"
        if isinstance(v, float):
            return "-" if np.isnan(v) else floatfmt.format(v)
        return str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def load_ml100k(path: str):
    """Load MovieLens 100K from ``path`` or exit with a clear message if it is absent."""
    from kmviz.data import load

    if not (Path(path) / "u.data").exists():
        print(f"skipped: MovieLens 100K not found at {path} (pass --ml100k DIR). "
              "kmviz never ships it: its licence forbids redistribution.")
        return None
    return load(path)


def d1_instances(n_users=20, n_items=40, D=8, rng=None):
    """S_i, v_i of every item of the paper's toy set D1 (p ~ U[0,1], all pairs observed),
    with theta_u drawn from Dirichlet(1) as a BCD iterate would hold them."""
    rng = np.random.default_rng(rng)
    p = rng.uniform(size=(n_users, n_items))
    theta = rng.dirichlet(np.ones(D), size=n_users)
    S = np.broadcast_to(theta.T @ theta, (n_items, D, D)).copy()
    v = (theta.T @ p).T.copy()
    return S, v


def bqp_seconds(row: dict) -> float:
    """Seconds a KM trace row spent in the binary QP (dual GD, EVD/Lanczos, randomization).

    ``t_bqp_s`` is the wall time of the whole psi step and ``t_bqp_dual_s``, ``t_evd_s``,
    ``t_lanczos_s``, ``t_randomization_s`` are its parts, so the parts are only summed when
    the total is absent (summing them with the total counted the BQP twice). NaN parts (no cycle counter) are
    skipped.
    """
    if "t_bqp_s" in row and row["t_bqp_s"] is not None:
        return float(row["t_bqp_s"])
    return float(sum(v for k, v in row.items()
                     if k in ("t_bqp_dual_s", "t_evd_s", "t_lanczos_s", "t_randomization_s")
                     and v is not None and np.isfinite(v)))


# ----------------------------------------------------------------------------- additions
def load_avg() -> str:
    """``os.getloadavg()`` as text (the box is shared; a high load inflates every time)."""
    try:
        return "/".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def _json_value(v):
    """A table cell as JSON: numbers as numbers (NaN as null), anything else as text."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if np.isfinite(v) else None
    return str(v)


def footer(t_start: float) -> None:
    """Closing line: elapsed seconds and the load average at the end; with ``--json PATH``
    the run's tables are written there too."""
    elapsed = time.perf_counter() - t_start
    print(f"\n_finished in {elapsed:.0f} s; load average at end: {load_avg()}_")
    if _RUN["json"]:
        import json

        out = {k: _RUN.get(k) for k in ("title", "command", "date", "load_at_start")}
        out.update(tables=_RUN["tables"], elapsed_s=round(elapsed, 3),
                   load_at_end=load_avg())
        Path(_RUN["json"]).write_text(json.dumps(out, indent=1) + "\n")
        print(f"(tables written to {_RUN['json']})")


def fmt_s(x) -> str:
    """Seconds in 3 significant digits (scientific below 1 ms); '-' for None/NaN."""
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "-"
    return f"{x:.3g}" if abs(x) >= 1e-3 else f"{x:.2e}"


def warmup(method: str = "fast", evd: str = "exact", D: int = 4) -> None:
    """Load the cached Numba kernels a solver uses (a tiny batch and a tiny KM fit) so the
    first timed call does not pay for it."""
    from kmviz.data.synthetic import km_toy
    from kmviz.km import KolmogorovModel
    from kmviz.km.solvers import solve_bqp_batch

    S, v = d1_instances(n_users=5, n_items=4, D=D, rng=0)
    kw = {} if method in ("sdr", "bfgs", "exact", "bnb") else {"evd": evd}
    solve_bqp_batch(S, v, np.zeros(v.shape), method=method, rng=0, **kw)
    KolmogorovModel(D=D, bqp_solver=method, evd=evd, max_iter=1, tol=0.0,
                    random_state=0).fit(km_toy(n_users=5, n_items=6, random_state=0))


class CellResult:
    """Outcome of :func:`run_cell`: ``value`` (the function's return value or None),
    ``partial`` (everything the function emitted), ``status`` ("ok", "timeout" or "error"),
    ``reason`` (text for a '-' cell) and ``seconds`` (wall time of the cell)."""

    def __init__(self, value, partial, status, reason, seconds):
        self.value, self.partial, self.status = value, partial, status
        self.reason, self.seconds = reason, seconds

    @property
    def ok(self):
        return self.status == "ok"


def status_kb(field: str) -> int:
    """A field of this process's /proc/self/status in kB (VmRSS, VmHWM = peak RSS); -1 if
    absent (not Linux)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def _capped_child(conn, limit_bytes, fn, args, kwargs):
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    _cell_child(conn, fn, args, kwargs)


def _cell_child(conn, fn, args, kwargs):
    def emit(obj):
        conn.send(("partial", obj))
    try:
        conn.send(("done", fn(emit, *args, **kwargs)))
    except BaseException as exc:  # reported to the parent as an "error" cell
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


_CTX = None


def _context():
    """A forkserver context started before any Numba thread pool exists in this process,
    with kmviz preloaded, so each cell starts quickly and fork-safely."""
    global _CTX
    if _CTX is None:
        import multiprocessing as mp

        _CTX = mp.get_context("forkserver")
        _CTX.set_forkserver_preload(["numpy", "kmviz.km", "kmviz.km.solvers", "kmviz.km.baselines",
                                     "kmviz.data", "kmviz.metrics"])
    return _CTX


def run_cell(fn, *args, budget: float, memory_gb: float | None = None,
             **kwargs) -> CellResult:
    """Run ``fn(emit, *args, **kwargs)`` in a child process with a wall-time budget.

    ``fn`` must be a module-level function; ``emit(obj)`` sends a partial result (kept when
    the budget runs out). On timeout the child (started here, ended by its own handle) is
    terminated and the cell reported as "timeout"; an exception becomes an "error" cell
    (a ``MemoryError`` under ``memory_gb``, the child's address-space cap RLIMIT_AS, reads
    "MemoryError: ..."). Never hangs longer than ``budget`` + a few seconds.
    """
    ctx = _context()
    parent, child = ctx.Pipe(duplex=False)
    if memory_gb is None:
        target, targs = _cell_child, (child, fn, args, kwargs)
    else:
        target, targs = _capped_child, (child, int(memory_gb * 2**30), fn, args, kwargs)
    proc = ctx.Process(target=target, args=targs, daemon=True)
    t0 = time.perf_counter()
    proc.start()
    child.close()
    partial, value, status, reason = [], None, "timeout", f"> {budget:.0f} s budget"
    while True:
        left = budget - (time.perf_counter() - t0)
        if left <= 0 or not parent.poll(min(left, 1.0)):
            if left <= 0:
                break
            if not proc.is_alive() and not parent.poll():
                status, reason = "error", f"child exited with code {proc.exitcode}"
                break
            continue
        try:
            kind, obj = parent.recv()
        except EOFError:
            status, reason = "error", f"child exited with code {proc.exitcode}"
            break
        if kind == "partial":
            partial.append(obj)
        elif kind == "done":
            value, status, reason = obj, "ok", ""
            break
        else:
            status, reason = "error", obj
            break
    secs = time.perf_counter() - t0
    if proc.is_alive():
        proc.terminate()
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)
    else:
        proc.join(5)
    parent.close()
    return CellResult(value, partial, status, reason, secs)


def km_fit_rows(emit, ratings, D, n_iter, seed, warm=True, **params):
    """Fit a KolmogorovModel for ``n_iter`` BCD iterations (tol=0) and return its trace rows
    (each row emitted as soon as it is recorded, so a cell that runs out of budget still
    reports the iterations it finished). Runs inside :func:`run_cell`."""
    from kmviz.km import KolmogorovModel

    if warm:
        warmup(params.get("bqp_solver", "fast"), params.get("evd", "exact"))
    model = KolmogorovModel(D=D, max_iter=n_iter, tol=0.0, random_state=seed, **params)
    import warnings

    def cb(row):
        emit(dict(row))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(ratings, callback=cb)
    return [dict(r) for r in model.trace_.rows]


def item_stats(ratings, theta, items, probability="max"):
    """S_i = sum_u theta_u theta_u^T and v_i = sum_u theta_u p_ui over the raters of each of
    ``items`` (the statistics of the BQP (4) at ``theta``), p = r / r_max ("max", the paper's
    eq. (6)) or (r - r_min) / (r_max - r_min) ("minmax"). Computed here from the public
    Ratings arrays. Returns (S (k, D, D), v (k, D))."""
    from kmviz.km.estimator import to_probability

    theta = np.asarray(theta, dtype=np.float64)
    D = theta.shape[1]
    users = np.asarray(ratings.users)
    its = np.asarray(ratings.items)
    p = to_probability(ratings.values, ratings.r_min, ratings.r_max, probability)
    S = np.zeros((len(items), D, D))
    v = np.zeros((len(items), D))
    for k, i in enumerate(items):
        sel = its == i
        th = theta[users[sel]]
        S[k] = th.T @ th
        v[k] = th.T @ p[sel]
    return S, v


def random_theta(n_users, D, seed):
    """theta_u ~ Dirichlet(1), as KolmogorovModel initializes them (first BCD iteration)."""
    return np.random.default_rng(seed).dirichlet(np.ones(D), size=n_users)


def sample_items(ratings, k, seed, min_ratings=1):
    """k distinct random items with at least ``min_ratings`` training ratings (sorted)."""
    counts = np.bincount(np.asarray(ratings.items), minlength=ratings.n_items)
    pool = np.flatnonzero(counts >= min_ratings)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(pool, size=min(k, pool.size), replace=False))


def per_iteration(trace) -> tuple[float, float]:
    """A fit's first iteration and the median of the others, in seconds of wall time."""
    wall = np.diff(np.concatenate(([0.0], trace.column("wall_s"))))
    return float(wall[0]), float(statistics.median(wall[1:])) if wall.size > 1 else float("nan")


def trace_median(trace, name) -> float:
    """Median of a trace column over the iterations after the first (all, if only one)."""
    col = trace.column(name)
    return float(np.nanmedian(col[1:])) if col.size > 1 else float(np.nanmedian(col))


def section_seed(seed: int, section: str, use: str) -> int:
    """The seed of one ``use`` ("split", "km", ...) in one ``section``: from --seed and the
    two names alone, so it is the same whatever ran before and differs between uses."""
    key = int.from_bytes(hashlib.sha256(f"{section}/{use}".encode()).digest()[:8], "little")
    return int(np.random.SeedSequence([int(seed), key]).generate_state(1)[0])


def noisy_planted_km(n_users: int, drop: float, flip: float, *, seed: int, section: str,
                     **planted):
    """``(ratings, truth)``: make_planted_km (60 items, D = 8) with a share ``drop`` of its
    entries unobserved and a share ``flip`` of the observed 0/1 values flipped; the data and
    the flips each draw from their own :func:`section_seed`, never from the seed a model
    fitted on them gets (a KM started from the generator's stream starts at the answer)."""
    from kmviz.data import Ratings, make_planted_km

    rng = np.random.default_rng(section_seed(seed, section, "flips"))
    ratings, truth = make_planted_km(n_users, 60, 8, observed=1 - drop,
                                     random_state=section_seed(seed, section, "data"),
                                     **planted)
    v = ratings.values.copy()
    flipped = rng.random(v.size) < flip
    v[flipped] = 1.0 - v[flipped]
    noisy = Ratings.from_arrays(ratings.users, ratings.items, v, r_min=0, r_max=1,
                                user_ids=np.arange(ratings.n_users),
                                item_ids=np.arange(ratings.n_items))
    return noisy, truth
