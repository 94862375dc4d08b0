"""The OCMF analyses the app shows: the validation grid, a user's attributed top-k, the TRON
trace, the all-pairs check, the telemetry vocabulary and the kernel warm-up."""

import numpy as np
import pytest

from kmviz.ocmf import OneClassMF, make_planted_pu
from kmviz.ocmf.analysis import allpairs_check, tron_trace, user_recommendations, validation_grid


@pytest.fixture(scope="module")
def split():
    ratings, _ = make_planted_pu(120, 80, 3, density=0.1, random_state=0)
    return ratings.split(0.2, random_state=0)


def test_validation_grid_reports_every_cell_with_progress(split):
    train, val = split
    seen = []
    grid = validation_grid(train, val, [0.05, 0.2], [0.5, 2.0],
                           params={"k": 4, "max_iter": 3, "random_state": 0},
                           progress=lambda done, total, row: seen.append((done, total)))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert list(grid.columns) == ["rho", "lambda", "best", "iteration", "last", "seconds"]
    assert (grid["best"] >= grid["last"]).all() and grid["iteration"].between(1, 3).all()
    one = OneClassMF(k=4, max_iter=3, random_state=0, rho=0.2, lambda_w=0.5,
                     lambda_h=0.5).fit(train, validation=val)
    cell = grid[(grid["rho"] == 0.2) & (grid["lambda"] == 0.5)].iloc[0]
    assert cell["best"] == one.trace_.column("validation_precision_at_5").max()


def test_user_recommendations_mark_held_out_and_attribute_scores(split):
    train, val = split
    model = OneClassMF(k=4, max_iter=3, random_state=0, rho=0.1, lambda_w=0.5, lambda_h=0.5,
                       side_features="user").fit(train)
    user = int(np.asarray(val.users)[0])
    table = user_recommendations(model, user, k=10, train=train, held_out=val)
    assert list(table["rank"]) == list(range(1, 11))
    np.testing.assert_array_equal(table["item"], model.recommend(user, k=10))
    held = set(np.asarray(val.items)[np.asarray(val.users) == user].tolist())
    assert list(table["held_out"]) == [j in held for j in table["item"]]
    contrib = table[[c for c in table.columns if c.startswith("contribution: ")]]
    np.testing.assert_allclose(contrib.sum(axis=1), table["score"], atol=1e-10)
    assert "contribution: identity" in table.columns and table["user_terms"].str.len().gt(0).all()


def test_tron_trace_is_readable(split):
    train, _ = split
    model = OneClassMF(k=4, max_iter=2, random_state=0).fit(train)
    df = tron_trace(model)
    assert set(df["block"]) == {"W", "H"}
    assert df["accepted"].dtype == bool and (df.loc[df["accepted"], "ratio"] > 0).all()


def test_allpairs_check_agrees():
    df = allpairs_check(sizes=(30, 60), k=4)
    assert (df[["f rel. diff", "grad rel. diff", "Hv rel. diff"]] < 1e-10).all().all()


def test_telemetry_names_every_trace_timer(split):
    from kmviz.ocmf.telemetry import FIGURE_OPTIONS, METRIC_LABELS, OBJECTIVE_PARTS, PHASE_LABELS

    train, val = split
    model = OneClassMF(k=4, max_iter=2, random_state=0, solver="gd").fit(train, validation=val)
    row = model.trace_.rows[-1]
    timers = {c for c in row if c.startswith("t_")}
    assert timers <= set(PHASE_LABELS), timers - set(PHASE_LABELS)
    assert {c for c in row if c.startswith("validation_")} <= set(METRIC_LABELS)
    assert sum(row[c] for c in OBJECTIVE_PARTS) == pytest.approx(row["objective"], rel=1e-12)
    assert set(FIGURE_OPTIONS) == {"convergence", "phase_time"}


def test_warmup_compiles(kernel_calls):
    """The warm-up calls OCMF's kernels (compiled afterwards), among them every kernel a
    default fit and its recommendations call on other small data."""
    from kmviz.ocmf.warmup import compile_kernels

    compile_kernels()
    warmed = list(kernel_calls.dispatchers)
    assert any(k.py_func.__module__.startswith("kmviz.ocmf.") for k in warmed), warmed
    assert all(k.signatures for k in warmed)
    kernel_calls.clear()
    data, _ = make_planted_pu(40, 25, 3, density=0.25, random_state=1)
    OneClassMF(k=3, max_iter=2, random_state=1).fit(data).recommend([0, 1, 2], k=4)
    missed = [k for k in kernel_calls.dispatchers if not any(k is w for w in warmed)]
    assert kernel_calls.dispatchers and not missed, [k.py_func.__name__ for k in missed]


def test_objective_panels_split_losses_from_regularizers_and_drop_a_zero_graph_term(split):
    from kmviz.ocmf.analysis import objective_panels

    train, _ = split
    model = OneClassMF(k=3, max_iter=2, random_state=0).fit(train)  # no graph
    rows, always_zero = objective_panels(model.trace_)
    assert rows[0] == ["objective", "l_plus", "l_minus"]
    assert "reg_w" in rows[1] and "reg_h" in rows[1]
    assert always_zero == ["reg_graph"]
    assert "reg_graph" not in rows[0] + rows[1]
