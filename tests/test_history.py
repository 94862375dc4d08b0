"""kmviz.history: a fit's iterations kept within a budget (evenly thinned, first and last
always), exact storage (packed 0/1 arrays, shared unchanged arrays), the shared loop's
recording, saving with a run (never pickled), and the replay oracle: the model rebuilt at
iteration t equals, bit for bit, a fit stopped at max_iter = t with the same seed."""

import json
import warnings

import numpy as np
import pytest

from kmviz.exceptions import RunStoreError
from kmviz.history import (BUDGET_ENV, History, default_budget_bytes, load_history,
                           recording, save_history, trace_until)
from kmviz.runs import RunStore, artifacts
from kmviz.trace import Trace
from tests.test_runs import save_one


class FakeModel:
    """Fitted arrays that change with the iteration: theta (float), psi (0/1), a constant."""

    def __init__(self, n_users=10, n_items=16, D=4):
        self.shape = (n_users, n_items, D)
        self.it = 0

    def _fitted_arrays(self):
        n_users, n_items, D = self.shape
        rng = np.random.default_rng(self.it)
        return {"theta": rng.random((n_users, D)),
                "psi": (rng.random((n_items, D)) > 0.5).astype(np.float64),
                "known": np.ones(n_items, dtype=bool),
                "mode": np.array("minmax")}


def _record(history, model, n):
    for it in range(1, n + 1):
        model.it = it
        history.record(it, model)


def _snapshot_bytes(model):
    """The bytes one changing snapshot takes: theta raw, psi packed (the constants are
    shared once)."""
    n_users, n_items, D = model.shape
    return n_users * D * 8 + (n_items * D + 7) // 8


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# ----------------------------------------------------------------------------- storage
def test_every_iteration_is_kept_exactly_while_it_fits():
    model, h = FakeModel(), History(budget=10**7)
    _record(h, model, 12)
    assert h.iterations == list(range(1, 13)) and h.stride == 1 and h.note == ""
    for it in (1, 7, 12):
        model.it = it
        want = model._fitted_arrays()
        got = h.arrays_at(it)
        assert sorted(got) == sorted(want)
        assert all(_same(got[k], want[k]) for k in want), it


def test_binary_arrays_are_packed_and_unchanged_arrays_shared():
    model, h = FakeModel(n_users=3, n_items=200, D=8), History(budget=10**7)
    _record(h, model, 5)
    n_users, n_items, D = model.shape
    constants = (n_items + 7) // 8 + np.array("minmax").nbytes   # "known" packed, once
    assert h.nbytes == 5 * (n_users * D * 8 + n_items * D // 8) + constants
    # -0.0 is not 0/1 bit for bit: such an array stays raw, so it comes back exactly
    neg = History(budget=10**6)
    arr = np.zeros((100,))
    arr[3] = -0.0
    m = type("M", (), {"_fitted_arrays": lambda self: {"a": arr}})()
    neg.record(1, m)
    assert _same(neg.arrays_at(1)["a"], arr) and np.signbit(neg.arrays_at(1)["a"][3])


@pytest.mark.parametrize("n", [9, 17, 40, 101])
def test_thinning_keeps_first_and_last_evenly_within_the_budget(n):
    model = FakeModel()
    one = _snapshot_bytes(model)
    shared = (model.shape[1] + 7) // 8 + np.array("minmax").nbytes
    budget = 8 * one + shared          # room for 8 changing snapshots
    h = History(budget=budget)
    _record(h, model, n)
    kept = h.iterations
    assert h.nbytes <= budget
    assert kept[0] == 1 and kept[-1] == n
    inner = kept[:-1]
    gaps = np.diff(inner)
    assert len(set(gaps.tolist())) <= 1 and (not len(gaps) or gaps[0] == h.stride)
    # the stride is the smallest power of two that fits: half of it would not
    assert len(range(1, n + 1, h.stride)) + (((n - 1) % h.stride) != 0) <= 8
    if h.stride > 1:
        assert len(range(1, n + 1, h.stride // 2)) + 1 > 8
        assert "Every" in h.note
    for it in kept:  # what is kept is exact
        model.it = it
        assert _same(h.arrays_at(it)["theta"], model._fitted_arrays()["theta"])
    with pytest.raises(ValueError, match="not kept"):
        h.arrays_at(next(i for i in range(1, n + 1) if i not in kept) if len(kept) < n
                    else n + 1)
    assert h.nearest(n + 50) == n and h.nearest(1) == 1


def test_a_budget_too_small_for_two_iterations_keeps_nothing_and_says_why():
    model = FakeModel()
    h = History(budget=_snapshot_bytes(model))
    _record(h, model, 4)
    assert len(h) == 0 and h.nbytes == 0 and h.n_seen == 4
    assert "budget" in h.note and BUDGET_ENV in h.note
    assert "budget is 0" in History(budget=0).note
    with pytest.raises(ValueError, match="budget"):
        History(budget=-1)


def test_budget_from_the_environment(monkeypatch):
    monkeypatch.setenv(BUDGET_ENV, "2.5")
    assert default_budget_bytes() == int(2.5 * 2**20)
    monkeypatch.setenv(BUDGET_ENV, "lots")
    with pytest.raises(ValueError, match=BUDGET_ENV):
        default_budget_bytes()


def test_object_arrays_turn_the_history_off_with_a_note():
    m = type("M", (), {"_fitted_arrays": lambda self: {"a": np.array([{"x": 1}], dtype=object)}})()
    h = History(budget=10**6)
    h.record(1, m)
    assert len(h) == 0 and "could not be read" in h.note


# ----------------------------------------------------------------------------- traces
def test_trace_until_cuts_rows_and_events():
    tr = Trace("toy")
    for k in range(5):
        tr.record(objective=10.0 - k)
        if k == 1:
            tr.event("warning", "rose")
    tr.event("stop", "stopped by the user")
    tr.stop_reason = "callback"
    cut = trace_until(tr, 3)
    assert [r["iteration"] for r in cut.rows] == [1, 2, 3]
    assert [e["message"] for e in cut.events] == ["rose"] and cut.stop_reason == "replay"
    whole = trace_until(tr, 5)
    assert whole.n_iter == 5 and whole.stop_reason == "callback" and len(whole.events) == 2
    assert tr.n_iter == 5  # the original is untouched


# ----------------------------------------------------------------------------- saving
def test_save_and_load_with_a_run_round_trips_exactly(tmp_path):
    store = RunStore(tmp_path / "store")
    run_id = save_one(store)
    model, h = FakeModel(), History(budget=4 * _snapshot_bytes(FakeModel()) + 100)
    _record(h, model, 11)
    save_history(run_id, h, store=store)
    back = load_history(run_id, store=store)
    assert back.iterations == h.iterations and back.stride == h.stride
    assert back.nbytes == h.nbytes and back.note == h.note and back.n_seen == 11
    for it in h.iterations:
        want, got = h.arrays_at(it), back.arrays_at(it)
        assert all(_same(got[k], want[k]) for k in want)
    # it is not listed among the run's tables, and a run without one reads as None
    assert "history" not in set(artifacts.list_tables(run_id, store=store)["name"])
    assert load_history(save_one(store, seed=1), store=store) is None
    # saving again replaces it (the old files go)
    save_history(run_id, History(budget=10**6), store=store)
    folder = store._folder(run_id) / artifacts.ATTACHMENTS
    assert len(list(folder.glob("history.*.npz"))) == 1
    assert len(load_history(run_id, store=store)) == 0


def test_a_damaged_history_is_refused_with_a_message(tmp_path):
    store = RunStore(tmp_path / "store")
    run_id = save_one(store)
    model, h = FakeModel(), History(budget=10**6)
    _record(h, model, 3)
    save_history(run_id, h, store=store)
    folder = store._folder(run_id) / artifacts.ATTACHMENTS
    (npz,) = folder.glob("history.*.npz")
    data = bytearray(npz.read_bytes())
    data[len(data) // 2] ^= 0xFF
    npz.write_bytes(bytes(data))
    with pytest.raises(RunStoreError, match="checksum"):
        load_history(run_id, store=store)
    # a header naming a blob that is not there
    save_history(run_id, h, store=store)
    header_path = folder / "history.json"
    header = json.loads(header_path.read_text())
    first = next(iter(header["meta"]["snapshots"].values()))
    first[next(iter(first))] = "b999"
    header_path.write_text(json.dumps(header))
    with pytest.raises(RunStoreError, match="missing array"):
        load_history(run_id, store=store)
    # a header whose blob declares another dtype or shape than the array holds
    for change in ({"dtype": "<f4"}, {"shape": [3, 3]}, {"packed": True}):
        save_history(run_id, h, store=store)
        header = json.loads(header_path.read_text())
        blob = next(iter(header["meta"]["blobs"].values()))
        blob.update(change)
        header_path.write_text(json.dumps(header))
        with pytest.raises(RunStoreError, match="does not match its header"):
            load_history(run_id, store=store)
    with pytest.raises(ValueError, match="array 'a' .* numbers, booleans or text"):
        artifacts.save_arrays(run_id, "history", {"a": np.array([None])}, store=store)
    with pytest.raises(RunStoreError, match="No run"):
        artifacts.save_arrays("nope", "history", {}, store=store)


# ----------------------------------------------------------------------------- KM replay
@pytest.fixture(scope="module")
def planted():
    from kmviz.data.synthetic import make_planted_km

    ratings, _ = make_planted_km(60, 30, 4, noise=0.05, observed=0.5, random_state=7)
    return ratings


def _fit(ratings, max_iter, history=None):
    from kmviz.km import KolmogorovModel

    with warnings.catch_warnings(), recording(history):
        warnings.simplefilter("ignore")
        return KolmogorovModel(4, max_iter=max_iter, tol=0.0, random_state=3).fit(ratings)


@pytest.mark.slow
def test_km_replay_arrays_equal_a_fit_stopped_there(planted):
    h = History()
    model = _fit(planted, 4, h)
    assert model.history_ is h and h.iterations == [1, 2, 3, 4]
    assert _fit(planted, 1).__dict__.get("history_") is None  # only inside recording()
    live, replay = _fit(planted, 2), h.model_at(model, 2)
    want, got = live._fitted_arrays(), replay._fitted_arrays()
    assert sorted(got) == sorted(want) and all(_same(got[k], want[k]) for k in want)
    assert replay.trace_.n_iter == 2 and replay.n_iter_ == 2


@pytest.mark.slow
def test_km_replay_equals_a_fit_stopped_there(planted):
    from kmviz.km import mining

    h = History()
    model = _fit(planted, 6, h)
    psi_changed = 0
    for t in (1, 3, 6):
        live = _fit(planted, t)
        replay = h.model_at(model, t)
        want, got = live._fitted_arrays(), replay._fitted_arrays()
        assert sorted(got) == sorted(want)
        assert all(_same(got[k], want[k]) for k in want), t
        assert replay.trace_.n_iter == t and replay.n_iter_ == t
        np.testing.assert_array_equal(replay.predict([0, 1, 2], [0, 1, 2]),
                                      live.predict([0, 1, 2], [0, 1, 2]))
        a = mining.mine_implications(replay, planted, liked=0.5)
        b = mining.mine_implications(live, planted, liked=0.5)
        assert a.equals(b), t
        psi_changed += int(not np.array_equal(live.psi_, model.psi_))
    assert psi_changed >= 1  # the replay shows something other than the last iteration


@pytest.mark.slow
def test_kmviz_train_save_keeps_the_history_with_the_run(tmp_path):
    from kmviz.cli import main

    store = RunStore(tmp_path / "cli-store")
    argv = ["train", "km", "--data", "planted-km", "--option", "n_users=30", "--option",
            "n_items=20", "--option", "D=3", "--D", "3", "--max-iter", "3", "--tol", "0",
            "--save", "--dir", str(store.path)]
    assert main(argv) == 0
    (run_id,) = store.ids()
    history = load_history(run_id, store=store)
    assert history is not None and history.iterations == [1, 2, 3]
    from kmviz.runs import open_run

    opened = open_run(run_id, store)
    model = opened.model
    assert _same(history.model_at(model, 3)._fitted_arrays()["psi"], model.psi_)


def test_a_large_constant_array_is_counted_once_against_the_budget():
    """A kernel (the same every iteration, and under two names, as Kernel MC publishes its
    column kernel's factor as both Q and the kernel factor) takes its bytes once: a history
    whose changing part fits keeps every iteration, though one whole snapshot is more than
    half the budget."""
    kernel = np.random.default_rng(0).random((400, 50))            # 160,000 bytes

    class KernelModel:
        it = 0

        def _fitted_arrays(self):
            return {"coef": np.full(100, self.it + 0.5), "col_factors": kernel,
                    "col_kernel_factor": kernel.copy()}

    h = History(budget=kernel.nbytes + 20 * 800)  # the kernel once, 20 coefficient vectors
    _record(h, KernelModel(), 12)
    assert h.iterations == list(range(1, 13)) and h.note == "", h.note
    assert h.nbytes == kernel.nbytes + 12 * 800
    back = h.arrays_at(5)
    assert _same(back["col_factors"], kernel) and _same(back["col_kernel_factor"], kernel)
    assert _same(back["coef"], np.full(100, 5.5))
    # the budget check before copying: the kernel alone does not fit
    small = History(budget=kernel.nbytes // 2)
    _record(small, KernelModel(), 3)
    assert len(small) == 0 and "budget" in small.note and BUDGET_ENV in small.note
