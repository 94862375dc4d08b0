"""Stop within 2 s (issue 24, item 1): on the app's default data (MovieLens latest-small,
the default split) and the settings each family's Train form starts from there, a running fit that is asked to stop
has ended, its metrics computed, within 2 s. The fit checks the stop flag after each outer
iteration, so this bounds each family's iteration (plus the metrics) on that data.

On a box shared past its cores (load average above the core count) the other processes take
turns from the fit, and the wall clock measures them too: there the 2 s bound is on the CPU
time this process spends between Stop and the end of the fit, as
test_train_defaults.py's one-minute bound is (an iteration that is 3x slower in wall time
under a load of 5 on two cores, as measured, then still has to fit in 2 s of CPU)."""

import os
import time

import pytest

from kmviz import families
from kmviz.data import load, make_split
from kmviz.ui.training import TrainingJob

pytestmark = pytest.mark.slow

STOP_WITHIN_S = 2.0


@pytest.fixture(scope="module")
def default_split():
    ratings = load("movielens-small")
    return ratings, make_split(ratings)


def _endless(fam, ratings) -> dict:
    """The Train form's settings for this data, with an iteration budget the fit cannot use
    up and no tolerance."""
    params = dict(fam.dataset_defaults(ratings, "movielens-small").params)
    for name in ("max_iter", "n_passes"):
        if name in params:
            params[name] = 10_000
    if "tol" in params:
        params["tol"] = 0.0
    return params


@pytest.mark.parametrize("name", families.names())
def test_a_running_fit_stops_within_2_s_on_the_default_data(name, default_split):
    ratings, split = default_split
    fam = families.get(name)
    job = TrainingJob(name, _endless(fam, ratings), split, dataset_name=ratings.name,
                      fingerprint=ratings.fingerprint(), ratings=ratings, save=False).start()
    end = time.time() + 900   # a cold Numba cache compiles first
    while job.progress()["n_done"] < 2 and not job.done and time.time() < end:
        time.sleep(0.05)
    snap = job.progress()
    assert not job.done, snap["message"]
    rows = snap["rows"]   # the last iteration's time (wall_s is cumulative)
    per_iteration = float(rows[-1].get("wall_s", 0.0)) - float(rows[-2].get("wall_s", 0.0))
    t0, cpu0 = time.perf_counter(), time.process_time()
    job.stop()
    job.thread.join(60)
    took, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    load = os.getloadavg()[0]
    print(f"\n{name}: stopped {took:.2f} s after Stop ({cpu:.2f} s of CPU, load {load:.1f}); "
          f"{per_iteration:.2f} s per iteration (the last one before it)")
    assert job.status == "stopped", job.progress()["message"]
    assert took < STOP_WITHIN_S or (load > os.cpu_count() and cpu < STOP_WITHIN_S), (
        name, took, cpu, load, per_iteration)
