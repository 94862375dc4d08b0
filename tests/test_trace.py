"""Trace: recording, flat rows, phase timers, JSON round trip."""

import json
import math
import time

import numpy as np
import pytest

from kmviz.exceptions import RunStoreError
from kmviz.trace import TRACE_FORMAT, Trace


def make_trace():
    trace = Trace("km.enhanced", {"D": 4, "gamma": 100.0})
    for i in range(3):
        with trace.phase("I-A"):
            time.sleep(0.001)
        trace.add_time("evd", 0.25)
        trace.record(objective=np.float64(5.0 - i), train_rmse=0.3, n_evd=np.int64(i),
                     converged=False, note=None)
    trace.event("fallback", "Lanczos did not converge", iteration=2, beta=np.float32(0.5))
    trace.stop_reason = "max_iter"
    return trace


def test_record_fills_iteration_wall_time_and_phase_times():
    trace = make_trace()
    assert trace.n_iter == 3
    assert [r["iteration"] for r in trace.rows] == [1, 2, 3]
    walls = trace.column("wall_s")
    assert np.all(np.diff(walls) > 0)
    assert all(r["t_I-A_s"] >= 0.001 for r in trace.rows)  # slept 1 ms inside the phase
    assert all(r["t_evd_s"] == 0.25 for r in trace.rows)  # pending times reset per row
    assert trace.phase_names() == ["I-A", "evd"]


def test_rows_hold_plain_python_scalars():
    row = make_trace().rows[0]
    assert type(row["objective"]) is float and type(row["n_evd"]) is int
    assert row["converged"] is False and row["note"] is None


@pytest.mark.parametrize("value", [np.zeros(3), [1, 2], {"a": 1}, (1, 2)])
def test_rows_refuse_non_scalars(value):
    trace = Trace("km.enhanced")
    with pytest.raises(TypeError, match="Trace rows hold scalars only; column 'bad' got"):
        trace.record(objective=1.0, bad=value)
    assert trace.n_iter == 0


def test_events_refuse_non_scalars():
    with pytest.raises(TypeError, match="column 'data' got ndarray"):
        Trace("km.enhanced").event("x", "y", data=np.ones(2))


def test_column_is_nan_where_a_row_lacks_it():
    trace = Trace("km.enhanced")
    trace.record(objective=1.0)
    trace.record(objective=0.5, val_nrmse=0.2)
    col = trace.column("val_nrmse")
    assert math.isnan(col[0]) and col[1] == 0.2


def test_to_frame_has_one_row_per_iteration():
    df = make_trace().to_frame()
    assert len(df) == 3
    assert {"iteration", "objective", "wall_s", "t_I-A_s", "t_evd_s"} <= set(df.columns)
    assert df["objective"].tolist() == [5.0, 4.0, 3.0]


def test_json_round_trip(tmp_path):
    trace = make_trace()
    again = Trace.from_json(trace.to_json())
    assert again.to_dict() == trace.to_dict()
    assert again.events[0]["beta"] == 0.5 and again.stop_reason == "max_iter"
    path = tmp_path / "trace.json"
    trace.save(path)
    assert not (tmp_path / "trace.json.tmp").exists()
    assert Trace.load(path).to_dict() == trace.to_dict()
    assert json.loads(path.read_text())["format"] == TRACE_FORMAT


def test_nan_survives_the_round_trip():
    trace = Trace("km.enhanced")
    trace.record(objective=float("nan"))
    assert math.isnan(Trace.from_json(trace.to_json()).rows[0]["objective"])


def test_bad_trace_files(tmp_path):
    with pytest.raises(RunStoreError, match="no such trace file"):
        Trace.load(tmp_path / "missing.json")
    with pytest.raises(RunStoreError, match="Trace JSON is malformed"):
        Trace.from_json("{not json")
    with pytest.raises(RunStoreError, match="expected a JSON object with 'solver' and 'rows'"):
        Trace.from_json(json.dumps({"rows": []}))
    newer = make_trace().to_dict() | {"format": TRACE_FORMAT + 1}
    with pytest.raises(RunStoreError, match="newer kmviz .*Upgrade kmviz"):
        Trace.from_dict(newer)
