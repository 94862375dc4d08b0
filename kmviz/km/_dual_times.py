"""Timing of the BQP batch kernels: their wall time split into ``TIME_PARTS`` by per-item
CPU cycle counts (see the docstring of :mod:`kmviz.km.solvers`)."""

from __future__ import annotations

import math
import time

from . import _kernels as K
from ._dual_checks import DUAL_PHASE_PARTS, TIME_PARTS


_CYCLES_PER_S = None


def _cycles_per_second():
    """Calibrate the cycle counter against perf_counter once (0 if there is none)."""
    global _CYCLES_PER_S
    if _CYCLES_PER_S is None:
        c0 = int(K.read_cycle_counter())
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.02:
            pass
        c1 = int(K.read_cycle_counter())
        t1 = time.perf_counter()
        _CYCLES_PER_S = (c1 - c0) / (t1 - t0) if c1 > c0 else 0.0
    return _CYCLES_PER_S



def _cycle_parts(st_dual, st_rand):
    """Cycles per ``TIME_PARTS`` key summed over items (negative rounding clipped to 0)."""
    cyc = dict.fromkeys(TIME_PARTS, 0.0)
    for st in (st_dual, st_rand):
        if st is not None:
            cyc["evd"] += float(st[:, K.ST_EVD_CYC].sum())
            cyc["lanczos"] += float(st[:, K.ST_LZ_CYC].sum())
    if st_dual is not None:
        for p, key in enumerate(DUAL_PHASE_PARTS):
            cyc[key] = float(st_dual[:, K.ST_PH_CYC + p].sum())
    if st_rand is not None:
        cyc["randomization"] = float((st_rand[:, K.ST_ALL_CYC] - st_rand[:, K.ST_EVD_CYC]
                                      - st_rand[:, K.ST_LZ_CYC]).sum())
    return {key: max(c, 0.0) for key, c in cyc.items()}


def _split_times(calls):
    """Seconds per ``TIME_PARTS`` key from kernel calls ``(wall_s, st_dual, st_rand)``.

    Each call's wall time is divided in proportion to the cycles its items spent in each
    part; the cycles are summed over both threads, so the shares (not the raw cycle counts)
    carry over to wall time.
    """
    if _cycles_per_second() <= 0.0:
        times = dict.fromkeys(TIME_PARTS, math.nan)
        times["randomization"] = sum(t for t, sd, sr in calls if sd is None)
        times["dual"] = sum(t for t, sd, sr in calls if sd is not None)
        return times
    times = dict.fromkeys(TIME_PARTS, 0.0)
    for wall, st_dual, st_rand in calls:
        cyc = _cycle_parts(st_dual, st_rand)
        total = sum(cyc.values())
        if total <= 0.0:
            times["dual_1a" if st_dual is not None else "randomization"] += wall
            continue
        for key, c in cyc.items():
            times[key] += wall * c / total
    times["dual"] = sum(times[key] for key in DUAL_PHASE_PARTS)
    return times


def _untimed_parts(total, evd=0.0):
    """``times`` of a method without Alg. 2's phases: all of it is "dual"."""
    times = dict.fromkeys(TIME_PARTS, math.nan)
    times.update(dual=total, evd=evd, lanczos=evd, randomization=0.0)
    return times

