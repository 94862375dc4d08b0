"""A served app under a class's load (issue 24): N browser sessions, each on its own planted
KM set, press Train at once.

    python bench/app/load_test.py [--sessions 5] [--n-users 20000] [--n-items 400] [--D 6]
                              [--iters 8] [--then-small 10] [--max-fits N] [--quick]

Starts ``kmviz app --host 127.0.0.1`` (the operator's command: the CLI process with the
Streamlit server as its child) with its own run store, and drives Debian's Chromium
(Playwright; every session its own browser context, so its own Streamlit session and
cookie). Each session loads its own planted-km set on the Data page (``random_state`` =
its number, so the sets differ) and types the KM settings on the Train page. Then:

1. **Back to back**: the sessions press Train one after another, each waiting for its
   result: the sum of their click-to-result times is what the N fits need back to back on
   one server with nobody else on it.
2. **At once**: the same sessions press Train again, all within a second, and the script
   polls every page until each shows its new result.

For each session it reports the seconds from its click to its result shown (alone and at
once); for the server (the CLI process and all its children, read from /proc) the CPU
seconds from the first click until idle, the seconds after the last result until the CPU
is idle (under 5% of one core over a whole second) and the peak resident memory (RSS,
children included). Then the same with ``--then-small`` sessions on a small planted set.

Where the memory is: the resident memory of each process of the server (the CLI, the
Streamlit server, warm-up compilers) at the phase's peak, and the tree's memory at each
step (server warm, each session's dataset loaded, back-to-back fits done, at-once fits
done), so the growth per loaded session and per fit can be read off.

Targets (issue 24): every result shows; the last at-once result within 2x the back-to-back
time; the CPU idle within 10 s after the last fit; memory under 1.5 GB.
Before the timed parts, one untimed fit on a tiny set loads the KM kernels.
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, load_avg, parser, table

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kmviz.testing.browser import (ServerMonitor, chromium, click_train,  # noqa: E402
                                   nav, open_home, prepare_km_session, process_tree,
                                   run_caption, serve_cli, settle, wait_results)

WAIT_MS = 600_000


def _label(pid: int) -> str:
    """What a process of the server is, in a word: the CLI, Streamlit, or a warm-up."""
    try:
        cmd = [a.decode(errors="replace")
               for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    except OSError:
        return "?"
    if "streamlit" in " ".join(cmd) and "run" in cmd:
        return "streamlit server"
    if "-c" in cmd:  # kmviz.ui.warmup.compile_in_child: python -c CHILD module
        return f"warm-up {cmd[-1]}"
    if "kmviz" in cmd and "app" in cmd:
        return "kmviz app (CLI)"
    return " ".join(cmd)[:40]


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Breakdown:
    """Every ``every`` s, the resident memory of each process of the server's tree (by
    :func:`_label`), in a thread; ``mark(step)`` notes the tree's memory at a step."""

    def __init__(self, pid: int, every: float = 0.2):
        import threading

        self.pid, self.every = pid, every
        self.samples: list[tuple[float, dict]] = []
        self.marks: list[tuple[str, float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Breakdown":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)

    def _sample(self) -> dict:
        out: dict = {}
        for p in process_tree(self.pid):
            label = _label(p)
            out[label] = out.get(label, 0) + _rss(p)
        return out

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.perf_counter(), self._sample()))
            self._stop.wait(self.every)

    def mark(self, step: str) -> None:
        time.sleep(0.5)  # let the page's rerun after the step land
        self.marks.append((step, time.perf_counter(), sum(self._sample().values())))

    def at_peak(self, t0: float, t1: float) -> dict:
        inside = [s for s in self.samples if t0 <= s[0] <= t1]
        return max(inside, key=lambda s: sum(s[1].values()))[1] if inside else {}

    def rows(self, t0: float, t1: float) -> list[dict]:
        """The tree's memory at each step between ``t0`` and ``t1``, and the growth."""
        out, prev = [], None
        for step, t, rss in self.marks:
            if t0 <= t <= t1:
                out.append({"step": step, "RSS MB": rss / 2**20,
                            "change MB": None if prev is None else (rss - prev) / 2**20})
                prev = rss
        return out


def run_phase(browser, server, monitor, *, sessions, n_users, n_items, D, iters,
              timeout_s: float, breakdown: Breakdown) -> tuple[list[dict], dict]:
    """Back to back, then at once, on ``sessions`` new sessions; (rows, summary)."""
    t_phase = time.perf_counter()
    breakdown.mark("phase start")
    pages = []
    for i in range(sessions):
        pages.append(prepare_km_session(browser, server.url, n_users=n_users,
                                        n_items=n_items, D=D, iters=iters, seed=i,
                                        wait_ms=WAIT_MS))
        breakdown.mark(f"session {i + 1}: its set loaded")
    alone = []
    for page in pages:  # back to back: each waits for its own result
        t = click_train(page)
        alone.append(wait_results([page], [t], [None], timeout_s)[0])
        settle(page, WAIT_MS)
    breakdown.mark("back-to-back fits done")
    time.sleep(2)
    before = [run_caption(page) for page in pages]
    clicks = []
    for page in pages:  # at once
        clicks.append(click_train(page))
    t_first = clicks[0]
    together = wait_results(pages, clicks, before, timeout_s)
    t_last = max((c + s for c, s in zip(clicks, together) if s is not None),
                 default=time.perf_counter())
    idle = monitor.idle_after(t_last, timeout=60.0)
    t_idle = t_last + (idle if idle is not None else 60.0)
    breakdown.mark("at-once fits done")
    cpu = monitor.cpu_between(t_first, t_idle)
    rows = [{"session": i + 1, "users": n_users, "items": n_items,
             "s alone": a, "s at once": s} for i, (a, s) in enumerate(zip(alone, together))]
    back_to_back = sum(a for a in alone if a is not None)
    last = (t_last - t_first) if all(s is not None for s in together) else None
    summary = {
        "sessions": sessions, "planted set": f"{n_users:,} x {n_items}, D={D}",
        "fits": f"KM D={D}, {iters} iterations",
        "results shown": f"{sum(s is not None for s in together)} of {sessions}",
        "back to back s": back_to_back,
        "last at once s": last,
        "last / back to back": (last / back_to_back) if last and back_to_back else None,
        "idle after last s": idle,
        "server CPU s (first click to idle)": cpu,
        "peak RSS MB (server + children)": monitor.peak_between(t_phase, t_idle) / 2**20,
        "_steps": breakdown.rows(t_phase, time.perf_counter()),
        "_at_peak": breakdown.at_peak(t_phase, t_idle),
    }
    for page in pages:
        page.context.close()
    return rows, summary


def streamlit_pid(cli_pid: int) -> int:
    """The Streamlit server under the ``kmviz app`` process."""
    for pid in process_tree(cli_pid)[1:]:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"streamlit" in cmd and b"run" in cmd:
            return pid
    raise RuntimeError("no streamlit process under the kmviz app process")


def _iterations(page) -> int:
    """The iteration count the progress bar shows now ("Training: iteration N of ..."); -1
    when it shows none."""
    try:
        text = page.locator('[data-testid="stProgress"]').first.inner_text(timeout=5000)
    except Exception:  # noqa: BLE001
        return -1
    found = re.search(r"Training: iteration (\d+)", text)
    return int(found.group(1)) if found else -1


def tick_cost(browser, *, sessions: int, every: float, gc: bool, seconds: float) -> dict:
    """One fit runs (KM D=8, 500 iterations, on the default MovieLens latest-small) and ``sessions - 1`` others wait behind it (``--max-fits 1``), so every
    session's progress panel polls, every ``every`` s, with or without Streamlit's garbage
    collection after each run. Over ``seconds``: CPU seconds of the Streamlit server process
    (fit and polling; its children, the kernel warm-up, left out) and the iterations the
    running fit completed (what the polling took from it)."""
    from playwright.sync_api import expect

    with tempfile.TemporaryDirectory(prefix="kmviz-tick-") as tmp:
        env = {"KMVIZ_PROGRESS_EVERY_S": str(every)}
        with serve_cli(runs_dir=Path(tmp) / "runs", env=env, timeout=WAIT_MS / 1000,
                       cli_args=("--max-fits", "1"),
                       streamlit_args=("--runner.postScriptGC", str(gc).lower())) as server:
            pid = streamlit_pid(server.proc.pid)
            pages = []
            for _ in range(sessions):
                page = open_home(browser, server.url, timeout_ms=WAIT_MS, height=1400)
                nav(page, "Train")
                form = page.locator('[data-testid="stForm"]')
                expect(form).to_be_visible()
                settle(page, WAIT_MS)
                form.get_by_role("spinbutton", name="D (dimension)").fill("8")
                form.get_by_role("spinbutton", name="max BCD iterations").fill("500")
                form.get_by_role("spinbutton", name="tol").fill("0")
                settle(page, WAIT_MS)
                pages.append(page)
            for page in pages:
                click_train(page)
            expect(pages[0].get_by_text(re.compile(r"^Training: iteration [1-9]"))
                   ).to_be_visible(timeout=WAIT_MS)
            for page in pages[1:]:
                expect(page.get_by_text(re.compile(r"in line"))).to_be_visible(
                    timeout=WAIT_MS)
            time.sleep(2)
            n0 = _iterations(pages[0])
            with ServerMonitor(pid, children=False) as monitor:
                time.sleep(seconds)
            n1 = _iterations(pages[0])
            still = sum(p.get_by_text(re.compile(r"in line")).count() > 0 for p in pages[1:])
            for page in pages:
                page.context.close()
    t0, t1 = monitor.samples[0][0], monitor.samples[-1][0]
    cpu = monitor.cpu_between(t0, t1)
    return {"progress every s": every, "GC after each run": "yes" if gc else "no",
            "sessions polling": f"1 training + {still} queued", "window s": t1 - t0,
            "server CPU s": cpu, "fit iterations in window": n1 - n0,
            "load avg": load_avg()}


def verdict(summary: dict) -> str:
    ok = []
    ok.append(("every result shows", summary["results shown"].split()[0] ==
               str(summary["sessions"])))
    ratio = summary["last / back to back"]
    ok.append(("last within 2x back to back", ratio is not None and ratio <= 2.0))
    idle = summary["idle after last s"]
    ok.append(("idle within 10 s", idle is not None and idle <= 10.0))
    ok.append(("memory under 1.5 GB", summary["peak RSS MB (server + children)"] < 1536))
    return ", ".join(f"{name}: {'yes' if good else 'NO'}" for name, good in ok)


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=5)
    p.add_argument("--n-users", type=int, default=20_000)
    p.add_argument("--n-items", type=int, default=400)
    p.add_argument("--D", type=int, default=6)
    p.add_argument("--iters", type=int, default=8)
    p.add_argument("--then-small", type=int, default=10, metavar="N",
                   help="then N sessions on the small planted set (0: skip)")
    p.add_argument("--small-users", type=int, default=1_000)
    p.add_argument("--small-items", type=int, default=100)
    p.add_argument("--max-fits", type=int, default=None,
                   help="kmviz app --max-fits (default: the app's own)")
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--tick-cost", action="store_true",
                   help="only measure what the progress polling costs: one fit running, the "
                        "other sessions queued; progress every 0.5 s with GC after each run "
                        "(before) and every 1 s without (after)")
    p.add_argument("--window", type=float, default=30.0, help="--tick-cost: seconds measured")
    args = p.parse_args()
    t_start = time.perf_counter()
    if args.tick_cost:
        header("Cost of the Train page's progress polling: one fit running, others queued")
        with chromium() as browser:
            rows = [tick_cost(browser, sessions=args.sessions, every=every, gc=gc,
                              seconds=args.window)
                    for every, gc in ((0.5, True), (1.0, False))]
        print(table(rows))
        print(f"fit iterations after / before: {rows[1]['fit iterations in window']} / "
              f"{rows[0]['fit iterations in window']}\nload average now: {load_avg()}\n")
        footer(t_start)
        return
    if args.quick:
        args.sessions, args.n_users, args.n_items, args.then_small = 3, 1_000, 100, 0
    header("Load test: N browser sessions press Train at once on a served app")
    cli = ("--max-fits", str(args.max_fits)) if args.max_fits else ()
    phases = [(args.sessions, args.n_users, args.n_items)]
    if args.then_small:
        phases.append((args.then_small, args.small_users, args.small_items))
    with tempfile.TemporaryDirectory(prefix="kmviz-load-") as tmp:
        with serve_cli(runs_dir=Path(tmp) / "runs", cli_args=cli, log=Path(tmp) / "app.log",
                       timeout=WAIT_MS / 1000) as server, chromium() as browser:
            print(f"server: `kmviz app --host 127.0.0.1 --port P {' '.join(cli)}`, pid "
                  f"{server.proc.pid}\n")
            with ServerMonitor(server.proc.pid) as monitor, \
                    Breakdown(server.proc.pid) as breakdown:
                breakdown.mark("server started")
                warm = prepare_km_session(browser, server.url, n_users=50, n_items=20, D=3,
                                          iters=2, seed=99)   # loads KM's kernels: untimed
                t = click_train(warm)
                wait_results([warm], [t], [None], WAIT_MS / 1000)
                warm.context.close()
                breakdown.mark("untimed warm fit done")
                print("## Server memory before the phases\n")
                print(table(breakdown.rows(0.0, time.perf_counter()), floatfmt="{:.0f}"))
                summaries = []
                for sessions, n_users, n_items in phases:
                    rows, summary = run_phase(browser, server, monitor, sessions=sessions,
                                              n_users=n_users, n_items=n_items, D=args.D,
                                              iters=args.iters, timeout_s=args.timeout,
                                              breakdown=breakdown)
                    print(f"## {sessions} sessions, planted {n_users:,} x {n_items}\n")
                    print(table(rows))
                    steps, at_peak = summary.pop("_steps"), summary.pop("_at_peak")
                    print("Server memory at each step (all processes):\n")
                    print(table(steps, floatfmt="{:.0f}"))
                    print("At the phase's peak, by process:\n")
                    print(table([{"process": k, "RSS MB": v / 2**20}
                                 for k, v in sorted(at_peak.items(), key=lambda kv: -kv[1])],
                                floatfmt="{:.0f}"))
                    summaries.append(summary)
                    print(f"load average now: {load_avg()}\n")
            print("## Summary\n")
            print(table(summaries))
            for s in summaries:
                print(f"- {s['sessions']} sessions: {verdict(s)}")
    print()
    footer(t_start)


if __name__ == "__main__":
    main()
