"""Sweeps: many fits of one family over a grid (or a random sample) of its declared settings,
each point an ordinary run.

:func:`plan_sweep` turns ``{"D": [4, 8, 16], "lambda_theta": [0, 10, 100]}`` and a number of
seeds into the list of points, every value checked against the setting's declaration (its
type, bounds or options: :class:`kmviz._params.Param`) before anything is fitted. With
``random=N`` the points are N draws instead of the full grid: a numeric setting uniform
between the smallest and the largest value given (log-uniform when both are positive and
span more than two decades), an enumerated one among the values given; draws stay inside the
declared bounds because the values given were checked against them.

:func:`run_sweep` fits the points one after the other on one split (the same for all, so
points differ only in their settings and seed), saving each as a run whose ``meta["sweep"]``
names the sweep and whose tags include ``sweep``. A stop (the event, or Ctrl-C) ends the
sweep after the current fit; the points done are kept, the interrupted one is not saved.
Each point can take its turn in a queue (``gate``: the app's fit queue). A search
(:mod:`kmviz.search`, Optuna's TPE) is a plan whose ``sampler`` picks each point's settings
from the results of the points before it, in the same loop.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np

from .exceptions import InvalidParameterError

#: Most points one sweep may have (grid size x seeds).
MAX_POINTS = 1000
#: Most seeds per point.
MAX_SEEDS = 100


@dataclass
class SweepPlan:
    """The points of a sweep: ``points[i]`` is the full settings of fit ``i``."""

    family: str
    sweep_id: str
    varied: list
    points: list
    seeds: int
    mode: str = "grid"
    #: For a search (``mode="tpe"``, :mod:`kmviz.search`): ``ask()`` gives the varied
    #: settings of the next point, ``tell(metrics)`` takes its result.
    sampler: object = None

    def describe(self) -> str:
        if self.sampler is not None:
            return (f"{self.mode} search {self.sweep_id}: {len(self.points)} fit(s) over "
                    f"{', '.join(self.varied)}, each chosen from the ones before by "
                    f"{self.sampler.direction[:-1]}ing {self.sampler.metric}")
        n = len(self.points) // max(1, self.seeds)
        return (f"{self.mode} sweep {self.sweep_id}: {n} setting(s) x {self.seeds} seed(s) = "
                f"{len(self.points)} fit(s) over {', '.join(self.varied) or 'nothing'}")


@dataclass
class SweepResult:
    """What a sweep did: one row per point fitted (settings varied, seed, metrics, run id)."""

    plan: SweepPlan
    rows: list = field(default_factory=list)
    stopped: bool = False
    wall_s: float = 0.0

    def table(self):
        """The summary table (pandas), one row per point, in the order fitted."""
        import pandas as pd

        return pd.DataFrame.from_records(self.rows)


def new_sweep_id() -> str:
    return f"sweep-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def parse_grid(family, specs) -> dict:
    """``["D=4,8,16", "lambda_theta=0,10"]`` -> ``{"D": [4, 8, 16], ...}``, each value parsed
    and checked by the setting's declaration (InvalidParameterError naming the setting)."""
    cls = family.estimator_class()
    constraints = cls._parameter_constraints
    grid = {}
    for text in specs or []:
        name, sep, values = str(text).partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not values.strip():
            raise InvalidParameterError(
                f"--grid {text!r}: expected NAME=V1,V2,... (for example --grid D=4,8,16).")
        if name not in constraints:
            raise InvalidParameterError(
                f"--grid {text!r}: {cls.__name__} has no setting {name!r}. Valid settings: "
                f"{', '.join(constraints)}.")
        if name in grid:
            raise InvalidParameterError(f"--grid names {name!r} twice; give its values once.")
        spec = constraints[name]
        parsed = [spec.parse(cls.__name__, name, v.strip()) for v in values.split(",")]
        grid[name] = _distinct(parsed)
    return grid


def _distinct(values) -> list:
    out = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def _draw(spec, values, rng):
    """One random value between the given ones (see the module docstring)."""
    numeric = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if spec.options or spec.kind in (str, bool) or len(numeric) != len(values) or \
            len(values) < 2:
        return values[int(rng.integers(len(values)))]
    lo, hi = float(min(numeric)), float(max(numeric))
    if lo > 0 and hi / lo > 100:
        x = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    else:
        x = rng.uniform(lo, hi)
    if spec.kind is int:
        return int(min(max(round(x), lo), hi))
    return float(x)


def plan_sweep(family, grid: dict, *, base: dict | None = None, seeds: int = 1,
               random: int | None = None, seed: int = 0,
               max_points: int = MAX_POINTS) -> SweepPlan:
    """The points of a sweep of ``family`` (a registered :class:`kmviz.families.Family`).

    Parameters
    ----------
    grid : dict
        Setting name -> the values to try (checked against the declarations).
    base : dict, optional
        Settings fixed for every point (checked too).
    seeds : int
        Fits per setting, with ``random_state`` = ``seed``, ``seed + 1``, ...
    random : int, optional
        Draw this many settings at random (see the module docstring) instead of the grid.
    seed : int
        The first model seed, and the seed of the random draws.
    """
    cls = family.estimator_class()
    constraints = cls._parameter_constraints
    base = dict(base or {})
    for name in base:
        if name not in constraints:
            raise InvalidParameterError(f"{cls.__name__} has no setting {name!r}.")
    if not isinstance(grid, dict) or not grid:
        raise InvalidParameterError("a sweep needs at least one setting to vary (--grid "
                                    "NAME=V1,V2,...).")
    checked = {}
    for name, values in grid.items():
        if name not in constraints:
            raise InvalidParameterError(f"{cls.__name__} has no setting {name!r}. Valid "
                                        f"settings: {', '.join(constraints)}.")
        if name in base:
            raise InvalidParameterError(f"{name!r} is both fixed and varied; give it once.")
        values = list(values) if isinstance(values, (list, tuple)) else [values]
        if not values:
            raise InvalidParameterError(f"the grid of {name!r} has no values.")
        checked[name] = _distinct([constraints[name].check(cls.__name__, name, v)
                                   for v in values])
    for name, value in base.items():
        base[name] = constraints[name].check(cls.__name__, name, value)
    if isinstance(seeds, bool) or not isinstance(seeds, (int, np.integer)) or \
            not 1 <= seeds <= MAX_SEEDS:
        raise InvalidParameterError(f"seeds must be a whole number from 1 to {MAX_SEEDS}; "
                                    f"got {seeds!r}.")
    if seeds > 1 and "random_state" not in constraints:
        raise InvalidParameterError(f"{cls.__name__} has no random_state, so its fits do not "
                                    "depend on a seed; use --seeds 1.")
    names = list(checked)
    if random is not None:
        if isinstance(random, bool) or not isinstance(random, (int, np.integer)) or random < 1:
            raise InvalidParameterError(f"random must be a positive whole number; got "
                                        f"{random!r}.")
        n_settings = int(random)
    else:
        n_settings = math.prod(len(v) for v in checked.values())
    total = n_settings * int(seeds)
    if total > max_points:
        raise InvalidParameterError(
            f"this sweep has {n_settings:,} setting(s) x {seeds} seed(s) = {total:,} fits, more "
            f"than the {max_points:,} a sweep may have; give fewer values or seeds.")
    if random is not None:
        rng = np.random.default_rng(seed)
        combos = []
        for _ in range(n_settings):
            combos.append({n: constraints[n].check(cls.__name__, n,
                                                   _draw(constraints[n], checked[n], rng))
                           for n in names})
    else:
        combos = [dict(zip(names, vals)) for vals in itertools.product(*checked.values())]
    points = []
    for combo in combos:
        for k in range(int(seeds)):
            params = {**base, **combo}
            if "random_state" in constraints and "random_state" not in checked:
                params["random_state"] = int(seed) + k if seeds > 1 or \
                    "random_state" not in base else base["random_state"]
            points.append(params)
    return SweepPlan(family=family.name, sweep_id=new_sweep_id(), varied=names,
                     points=points, seeds=int(seeds),
                     mode="random" if random is not None else "grid")


def run_sweep(plan: SweepPlan, ratings, split, *, store=None, save: bool = True,
              spec: dict | None = None, owner: str | None = None, writer: str = "python",
              tags=(), stop_event: threading.Event | None = None, on_point=None,
              on_row=None, gate=None) -> SweepResult:
    """Fit every point of ``plan`` on ``split`` (and save each as a run when ``save``).

    Parameters
    ----------
    ratings : Ratings
        The whole dataset (its name and fingerprint are kept with each run).
    split : kmviz.data.Split
        The one split every point is trained and evaluated on.
    store : RunStore, optional
        Where runs go (default: the default store).
    stop_event : threading.Event, optional
        Set it to stop after the current iteration of the current fit.
    on_point : callable, optional
        ``on_point(i, n, row)`` after point ``i`` of ``n`` is done (progress).
    on_row : callable, optional
        ``on_row(row)`` after each iteration of a fit (its trace row).
    gate : callable, optional
        ``gate()`` -> a context manager yielding True when the point may run (a place in a
        fit queue); False ends the sweep as stopped.
    """
    from . import families
    from .runs import run_metrics, save_run

    fam = families.get(plan.family)
    stop_event = stop_event or threading.Event()
    result = SweepResult(plan=plan)
    started = time.perf_counter()
    n = len(plan.points)

    def callback(row):
        if on_row is not None:
            on_row(row)
        if stop_event.is_set():
            return False
        return None

    try:
        for i, params in enumerate(plan.points):
            if stop_event.is_set():
                result.stopped = True
                break
            with (gate() if gate is not None else contextlib.nullcontext(True)) as got:
                if not got or stop_event.is_set():
                    result.stopped = True
                    break
                if plan.sampler is not None:  # a search: this point from the ones before
                    params = {**params, **plan.sampler.ask()}
                model = fam.make(params)
                t0 = time.perf_counter()
                model.fit(split.train, callback=callback, validation=split.validation)
                elapsed = time.perf_counter() - t0
            if stop_event.is_set():  # the interrupted point is not kept
                result.stopped = True
                break
            metrics = run_metrics(model, split)
            if plan.sampler is not None:
                plan.sampler.tell(metrics)
            row = {"point": i + 1, **{k: params.get(k) for k in plan.varied}}
            if plan.seeds > 1:
                row["seed"] = params.get("random_state")
            row.update({m: metrics.get(m) for m in fam.metrics if m in metrics})
            row["n_iter"] = metrics.get("n_iter")
            row["seconds"] = round(elapsed, 3)
            run_id = None
            if save:
                label = fam.label(model.get_params(), str(ratings.name))
                if plan.seeds > 1:
                    label += f", seed={params.get('random_state')}"
                run_id = save_run(
                    model, split, dataset=ratings, spec=spec, label=label, store=store,
                    writer=writer, metrics=metrics, duration_s=elapsed, owner=owner,
                    tags=["sweep", *tags],
                    sweep={"id": plan.sweep_id, "point": i + 1, "of": n, "mode": plan.mode,
                           "varied": list(plan.varied), "seeds": plan.seeds})
            row["run_id"] = run_id
            result.rows.append(row)
            if on_point is not None:
                on_point(i + 1, n, row)
    except KeyboardInterrupt:
        result.stopped = True
    result.wall_s = time.perf_counter() - started
    return result
