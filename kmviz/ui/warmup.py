"""Compiling the families' Numba kernels in the background, in the order the user needs them.

A fresh install has no compiled kernels on disk: the first compilation of a family takes from
half a minute (gFM, OCMF, kernel MC) to several minutes (KM) on a busy two-core box; later
starts load them from Numba's cache in a second or two. The app starts one :class:`WarmUp`
per server process. It compiles one family at a time, each in a child process (the compiler
holds Python's GIL and would stall the server), then loads the cached kernels in the server.

The order serves the user:

1. families that a fit is waiting for (a fit of family X waits for X's kernels only);
2. the family the user picked last on the Train page or whose page they opened;
3. the other families the user asked for, most recent first; then the rest in registry order.

A compile nobody is waiting for is interrupted (its child process killed; what it already
compiled stays cached) when the user asks for another family, and is taken up again later.
While a fit runs, only a demanded family (a fit waits for it, or the user picked it last)
is compiled; the others wait for the fit to end, so it has the cores.

:class:`WarmUpOrder` is the bookkeeping alone (no threads, no processes), tested on its own;
:class:`WarmUp` runs it under one lock in a daemon thread.
"""

from __future__ import annotations

import importlib
import logging
import subprocess
import sys
import threading
import time
from typing import Callable

from ..parallel import in_process

log = logging.getLogger("kmviz.ui")

PENDING, COMPILING, READY, FAILED = "pending", "compiling", "ready", "failed"
#: What a compile function returns besides READY and FAILED: stopped on request, to be redone.
INTERRUPTED = "interrupted"


class WarmUpOrder:
    """Which family to compile next. Not thread-safe by itself: :class:`WarmUp` holds a lock.

    ``names`` in registry order. ``ask(name)`` records that the user wants ``name`` (picked it
    on the Train page, opened its page); ``wait_started``/``wait_ended`` count the fits
    waiting for a family.
    """

    def __init__(self, names):
        self.names = list(names)
        self.state = {n: PENDING for n in self.names}
        self.current: str | None = None
        self.asked: list[str] = []          # most recent first
        self.waiting = {n: 0 for n in self.names}

    # -- what the user does ----------------------------------------------------------------
    def ask(self, name: str) -> None:
        if name not in self.state:
            return
        if name in self.asked:
            self.asked.remove(name)
        self.asked.insert(0, name)

    def wait_started(self, name: str) -> None:
        if name in self.state:
            self.ask(name)
            self.waiting[name] += 1

    def wait_ended(self, name: str) -> None:
        if name in self.state:
            self.waiting[name] = max(0, self.waiting[name] - 1)

    # -- what the worker does --------------------------------------------------------------
    def demanded(self, name: str) -> bool:
        """A fit waits for it, or it is the family the user picked last."""
        return self.waiting.get(name, 0) > 0 or (bool(self.asked) and self.asked[0] == name)

    def queue(self) -> list[str]:
        """The families still to compile (not the one compiling now), in the order they will be."""
        def rank(name):
            if self.waiting[name] > 0:
                group = 0
            elif name in self.asked:
                group = 1
            else:
                return (2, self.names.index(name))
            return (group, self.asked.index(name) if name in self.asked else 0)

        return sorted((n for n in self.names if self.state[n] == PENDING), key=rank)

    def next(self, *, fit_running: bool = False) -> str | None:
        """The family to compile now; None when all are done, one is compiling, or while a
        fit runs and none of those left is demanded (they wait for the fit to end)."""
        if self.current is not None:
            return None
        queue = self.queue()
        if not queue:
            return None
        first = queue[0]
        if fit_running and not self.demanded(first):
            return None
        return first

    def start(self, name: str) -> None:
        self.current = name
        self.state[name] = COMPILING

    def finish(self, name: str, outcome: str) -> None:
        """``outcome``: READY, FAILED, or INTERRUPTED (back to pending, compiled again later)."""
        self.state[name] = PENDING if outcome == INTERRUPTED else outcome
        if self.current == name:
            self.current = None

    def should_interrupt(self) -> bool:
        """The compile under way is not demanded, and a demanded family is waiting for it."""
        if self.current is None or self.demanded(self.current):
            return False
        return any(self.demanded(n) for n in self.queue())

    @property
    def finished(self) -> bool:
        return all(s in (READY, FAILED) for s in self.state.values())


#: ``python -m module`` that also ends when the server does (its parent changes): a server
#: stopped during a first start leaves no compiler running on.
_CHILD = """\
import os, runpy, sys, threading, time
parent = os.getppid()
def watch():
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)
threading.Thread(target=watch, daemon=True).start()
runpy.run_module(sys.argv[1], run_name="__main__", alter_sys=True)
"""


def compile_in_child(module: str, cancel: threading.Event, *, timeout: float = 1800.0,
                     load: bool = True) -> tuple[str, str]:
    """Run ``python -m module`` (a family's warm-up), then load its kernels in this process.

    Returns (READY, ""), (FAILED, what went wrong) or (INTERRUPTED, "") when ``cancel`` was
    set (the child is killed; the kernels it finished are cached on disk already).
    """
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, module], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + timeout
    while True:
        try:
            _, err = proc.communicate(timeout=0.25)
            break
        except subprocess.TimeoutExpired:
            if cancel.is_set() or time.monotonic() > end:
                proc.kill()
                proc.communicate()
                if cancel.is_set():
                    return INTERRUPTED, ""
                return FAILED, f"python -m {module} did not finish within {timeout:.0f} s"
    if proc.returncode != 0:
        tail = (err or "").strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        return FAILED, f"python -m {module}: {tail[0]}"
    if load:  # the cached kernels, loaded here, so the first fit starts at once
        importlib.import_module(module).compile_kernels()
    return READY, ""


def cached_on_disk(module: str) -> bool:
    """Whether Numba's cache already holds kernels of the package of ``module`` (a family's
    warm-up, ``kmviz.km.warmup`` -> the package ``kmviz.km``): index files (``*.nbi``) in the
    package's ``__pycache__``, or under ``$NUMBA_CACHE_DIR`` where that is set. Then its
    "compile" mostly loads them from disk (a restart), and the page says "Loading"."""
    import importlib.util
    import os
    from pathlib import Path

    package = module.rpartition(".")[0] or module
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return False
    if spec is None or not spec.submodule_search_locations:
        return False
    folder = Path(next(iter(spec.submodule_search_locations))).resolve()
    cache_dir = os.environ.get("NUMBA_CACHE_DIR")
    if cache_dir:  # Numba mirrors the source folder's absolute path under the cache dir
        places = [Path(cache_dir) / folder.relative_to(folder.anchor)]
    else:
        places = [folder / "__pycache__"]
    return any(next(p.glob("*.nbi"), None) is not None for p in places if p.is_dir())


class WarmUp:
    """The warm-up of every family's kernels, in the user's order (see the module docstring).

    ``families`` are (name, title, warm-up module) triples in registry order. ``compile`` is
    called as ``compile(module, cancel_event)`` and returns (READY | FAILED | INTERRUPTED,
    message); the default runs the module in a child process. ``fit_running`` says whether a
    fit holds the cores (compiles nobody asked for wait meanwhile).
    """

    def __init__(self, families, *, compile: Callable | None = None,
                 fit_running: Callable[[], bool] = lambda: False):
        self._families = [(n, t, m) for n, t, m in families]
        self._titles = {n: t for n, t, _ in self._families}
        self._modules = {n: m for n, _, m in self._families}
        self._compile = compile or compile_in_child
        self._fit_running = fit_running
        self._cond = threading.Condition()
        self._order = WarmUpOrder(n for n, _, m in self._families if m)
        self._cancel = threading.Event()
        self._started: dict[str, float] = {}
        self._cached: dict[str, bool] = {}     # family -> its kernels were on disk at start
        self.seconds: dict[str, float] = {}   # family -> seconds its (last) compile took
        self.errors: dict[str, str] = {}      # family -> why its warm-up failed
        self.history: list[tuple[str, str]] = []  # (family, outcome), in the order they ended
        self.done = threading.Event()          # every family ready or failed
        self.thread = threading.Thread(target=self._run, name="kmviz-warm-up", daemon=True)

    def start(self) -> "WarmUp":
        self.thread.start()
        return self

    # -- requests from pages and fits ------------------------------------------------------
    def ask(self, name: str) -> None:
        """The user wants ``name`` (picked it, opened its page): compile it first / next."""
        with self._cond:
            self._order.ask(name)
            self._maybe_interrupt()
            self._cond.notify_all()

    def ready(self, name: str) -> bool:
        """True when ``name``'s warm-up has ended (ready or failed) or it has none."""
        with self._cond:
            return self._order.state.get(name, READY) in (READY, FAILED)

    def wait_for(self, name: str, stop: threading.Event | None = None,
                 timeout: float | None = None) -> bool:
        """Block until ``name``'s warm-up has ended (only that family's); False if ``stop``
        was set or ``timeout`` passed first. Moves ``name`` to the front meanwhile."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            if self._order.state.get(name, READY) in (READY, FAILED):
                return True
            self._order.wait_started(name)
            self._maybe_interrupt()
            self._cond.notify_all()
            try:
                while self._order.state[name] not in (READY, FAILED):
                    if stop is not None and stop.is_set():
                        return False
                    left = None if end is None else end - time.monotonic()
                    if left is not None and left <= 0:
                        return False
                    self._cond.wait(0.2 if left is None else min(0.2, left))
                return True
            finally:
                self._order.wait_ended(name)

    def status(self, name: str) -> dict:
        """For the page: ``state`` of ``name``, ``seconds`` (compiling so far, or the compile's
        time), ``current`` (title of the family compiling now), ``after`` (titles of those
        that will compile after ``name``), ``before`` (titles that come first), ``error``,
        ``cached`` (its kernels were in Numba's disk cache when its turn came: it is
        loading them rather than compiling)."""
        with self._cond:
            order = self._order
            state = order.state.get(name, READY)
            queue = ([order.current] if order.current else []) + order.queue()
            pos = queue.index(name) if name in queue else len(queue)
            seconds = (time.time() - self._started[name] if state == COMPILING
                       else self.seconds.get(name))
            return {"state": state, "title": self._titles.get(name, name),
                    "seconds": seconds,
                    "current": self._titles[order.current] if order.current else None,
                    "before": [self._titles[n] for n in queue[:pos]],
                    "after": [self._titles[n] for n in queue[pos + 1:]],
                    "error": self.errors.get(name, ""),
                    "cached": self._cached.get(name, False)}

    def order(self) -> list[str]:
        """Names still to compile, the one compiling now first."""
        with self._cond:
            return ([self._order.current] if self._order.current else []) + self._order.queue()

    # -- the worker ------------------------------------------------------------------------
    def _maybe_interrupt(self) -> None:  # with the lock held
        if self._order.should_interrupt():
            self._cancel.set()

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    while True:
                        name = self._order.next(fit_running=self._fit_running())
                        if name is not None or self._order.finished:
                            break
                        self._cond.wait(0.5)
                    if name is None:
                        return
                    self._order.start(name)
                    self._cancel = cancel = threading.Event()
                    self._started[name] = time.time()
                    module = self._modules[name]
                try:
                    self._cached[name] = cached_on_disk(module)
                except Exception:  # noqa: BLE001 - only the wording depends on it
                    self._cached[name] = False
                with self._cond:
                    self._maybe_interrupt()  # asked for another family meanwhile
                start = time.perf_counter()
                try:
                    with in_process():      # its small fits never go to a cluster
                        outcome, message = self._compile(self._modules[name], cancel)
                except Exception as exc:  # noqa: BLE001 - a fit will then compile (and report) itself
                    log.exception("warm-up of %s failed", name)
                    outcome, message = FAILED, f"{type(exc).__name__}: {exc}"
                with self._cond:
                    self._order.finish(name, outcome)
                    self.history.append((name, outcome))
                    if outcome != INTERRUPTED:
                        self.seconds[name] = time.perf_counter() - start
                    if outcome == FAILED:
                        self.errors[name] = message
                        log.warning("warm-up of %s failed: %s", name, message)
                    self._cond.notify_all()
        finally:
            self.done.set()


# --------------------------------------------------------------------- `kmviz warmup`
def warm_all(families, *, out=None, compile: Callable | None = None,
             poll_s: float = 1.0) -> dict:
    """Compile every family's kernels into Numba's disk cache ahead of time (``kmviz
    warmup``, before a class), one family at a time in child processes, printing progress
    to ``out`` (a text stream; None: print nothing). ``families`` are (name, title, warm-up
    module) triples. Returns name -> (outcome, seconds, error)."""
    import functools

    def say(text: str) -> None:
        if out is not None:
            print(text, file=out, flush=True)

    todo = [(n, t, m) for n, t, m in families if m]
    compile = compile or functools.partial(compile_in_child, load=False)
    warm = WarmUp(todo, compile=compile).start()
    titles = {n: t for n, t, _ in todo}
    announced, reported, started = set(), set(), time.monotonic()
    say(f"Compiling the Numba kernels of {len(todo)} model families into Numba's cache "
        "(later starts of the app and of `kmviz train` load them in seconds).")
    while True:
        finished = warm.done.wait(poll_s)
        with warm._cond:
            current = warm._order.current
            history = list(warm.history)
        for name, outcome in history:
            if name in reported or outcome == INTERRUPTED:
                continue
            reported.add(name)
            seconds = warm.seconds.get(name, 0.0)
            if outcome == READY:
                say(f"    {titles[name]}: ready in {seconds:.0f} s")
            else:
                say(f"    {titles[name]}: FAILED ({warm.errors.get(name, '')}); a fit of "
                    "it compiles its kernels itself, so its first iteration takes longer")
        if current and current not in announced and current not in reported:
            announced.add(current)
            cached = " (found in the cache: loading)" if warm._cached.get(current) else ""
            say(f"[{len(reported) + 1}/{len(todo)}] {titles[current]}: compiling{cached} ...")
        if finished:
            break
    result = {n: (warm._order.state.get(n), warm.seconds.get(n, 0.0), warm.errors.get(n, ""))
              for n, _, _ in todo}
    failed = [titles[n] for n, (state, _, _) in result.items() if state == FAILED]
    total = time.monotonic() - started
    if failed:
        say(f"Done in {total:.0f} s, but {', '.join(failed)} failed (see above).")
    else:
        say(f"Done in {total:.0f} s: every family's kernels are compiled. Start the app "
            "with `kmviz app`.")
    return result
