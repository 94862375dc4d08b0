"""One bound before allocation (issue 35, defect 9, the data part): generators and file
loads estimate their memory and refuse before the big arrays exist; archives are held to
their expansion ratio and to the memory of their parse while they stream."""

import io
import itertools
import tracemalloc
import zipfile

import numpy as np
import pytest

from kmviz import cli
from kmviz._memory import FitTooLargeError, memory_limit
from kmviz.data import load, synthetic
from kmviz.data.loaders import bounds
from kmviz.exceptions import FileTooLargeError, InvalidParameterError

MB = 1024 * 1024


def _peak(func, *args, **kwargs):
    """(exception raised or None, tracemalloc peak in bytes) of func(*args, **kwargs)."""
    tracemalloc.start()
    try:
        func(*args, **kwargs)
        error = None
    except Exception as exc:  # noqa: BLE001 - returned to the test
        error = exc
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return error, peak


# ----------------------------------------------------------------------------- generators
@pytest.mark.parametrize("func, kwargs", [
    (synthetic.km_toy, {"n_users": 100_000, "n_items": 100_000}),
    (synthetic.make_planted_km, {"n_users": 100_000, "n_items": 100_000}),
    (synthetic.make_planted_km, {"n_users": 200, "n_items": 100_000}),  # the pairs alone
    (synthetic.make_planted_lowrank, {"n_users": 100_000, "n_items": 100_000}),
    (synthetic.make_planted_towers, {"n_users": 100_000, "n_items": 100_000}),
])
def test_generators_refuse_before_allocating(func, kwargs):
    with memory_limit("4G"):
        error, peak = _peak(func, random_state=0, **kwargs)
    assert isinstance(error, FitTooLargeError) and isinstance(error, ValueError)
    message = str(error)
    assert f"n_items={kwargs['n_items']}" in message and "4 GiB" in message
    assert "Fix: lower n_" in message and "n_items" in message.split("Fix:")[1]
    assert peak < 32 * MB, peak  # the dense arrays would take gigabytes


@pytest.mark.parametrize("func, kwargs", [
    (synthetic.km_toy, {"n_users": 400, "n_items": 500}),
    (synthetic.make_planted_km, {"n_users": 2000, "n_items": 300, "observed": 0.3}),
    (synthetic.make_planted_km, {"n_users": 500, "n_items": 400, "observed": 1.0}),
    (synthetic.make_planted_lowrank, {"n_users": 2000, "n_items": 300, "observed": 0.2}),
    (synthetic.make_planted_lowrank, {"n_users": 500, "n_items": 400, "observed": 1.0}),
    (synthetic.make_planted_towers, {"n_users": 2000, "n_items": 300, "density": 0.05}),
    (synthetic.make_planted_towers, {"n_users": 500, "n_items": 400, "item_groups": 4}),
])
def test_the_generator_estimate_covers_the_measured_peak(func, kwargs, monkeypatch):
    estimates = []
    real = synthetic.check_allocation

    def spy(what, parts, *, fix):
        estimates.append(real(what, parts, fix=fix))
        return estimates[-1]

    monkeypatch.setattr(synthetic, "check_allocation", spy)
    error, peak = _peak(func, random_state=1, **kwargs)
    assert error is None and estimates
    assert peak <= max(estimates), (peak, estimates)
    assert max(estimates) < 4 * peak + 2 * MB  # an estimate, not a blanket refusal


def test_implication_pairs_equal_the_dense_oracle():
    rng = np.random.default_rng(0)
    for _ in range(40):
        n, d = int(rng.integers(1, 30)), int(rng.integers(1, 6))
        psi = (rng.random((n, d)) < 0.5).astype(np.int8)
        psi[rng.integers(n)] = psi[0]  # repeated supports
        pairs, strict = synthetic.implication_pairs(psi)
        expected = [(j, i) for j, i in itertools.product(range(n), range(n))
                    if j != i and not np.any(psi[j] & (1 - psi[i]))]
        assert [tuple(p) for p in pairs.tolist()] == expected
        assert strict.tolist() == [bool(psi[j].sum() < psi[i].sum()) for j, i in expected]
        assert synthetic._count_pairs(psi) == len(expected)


def test_describe_planted_km_with_many_items_is_a_one_line_error(capsys, monkeypatch):
    monkeypatch.setenv("KMVIZ_MAX_LOAD_BYTES", "4G")
    code = cli.main(["data", "describe", "planted-km", "--option", "n_items=100000"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("error: make_planted_km(n_users=200, n_items=100000) would need")
    assert "true implication pairs" in err and "Fix: lower n_items" in err


def test_the_load_limit_has_an_environment_variable(monkeypatch):
    from kmviz import _memory

    monkeypatch.setenv(_memory.LOAD_ENV_VAR, "2G")
    assert _memory.load_memory_limit() == (2 * 2**30, "set by KMVIZ_MAX_LOAD_BYTES=2G")
    monkeypatch.setenv(_memory.LOAD_ENV_VAR, "lots")
    with pytest.raises(InvalidParameterError, match="KMVIZ_MAX_LOAD_BYTES: a memory size"):
        synthetic.km_toy(random_state=0)
    monkeypatch.setenv(_memory.ENV_VAR, "1K")  # the per-fit limit does not bound a load
    monkeypatch.delenv(_memory.LOAD_ENV_VAR)
    assert synthetic.km_toy(random_state=0).n_ratings == 800


# ----------------------------------------------------------------------------- file loads
def _triplets(n):
    return b"".join(b"%d,%d,%d\n" % (k % 997, k // 997, 1 + k % 5) for k in range(n))


def test_a_file_whose_parse_would_pass_the_limit_is_refused_before_reading(tmp_path):
    path = tmp_path / "r.csv"
    path.write_bytes(_triplets(40_000))  # about 400 KB
    with memory_limit("2M"):
        error, peak = _peak(load, path)
    assert isinstance(error, FitTooLargeError)
    assert "loading r.csv (delimited) would need about" in str(error)
    assert peak < 1 * MB
    assert load(path).n_ratings == 40_000


@pytest.mark.parametrize("fmt", ["delimited", "basket", "table"])
def test_the_load_estimate_covers_the_measured_peak(tmp_path, fmt):
    rng = np.random.default_rng(2)
    path = tmp_path / f"{fmt}.csv"
    if fmt == "delimited":
        path.write_bytes(_triplets(150_000))
    elif fmt == "basket":
        path.write_text("\n".join(",".join(f"item{k}" for k in rng.choice(
            500, int(rng.integers(1, 15)), False)) for _ in range(30_000)) + "\n")
    else:
        m = rng.integers(1, 6, size=(2000, 200)).astype(str)
        m[rng.random(m.shape) < 0.3] = ""
        path.write_text("user," + ",".join(f"i{k}" for k in range(200)) + "\n" +
                        "\n".join(f"u{u}," + ",".join(row) for u, row in enumerate(m)) + "\n")
    size = path.stat().st_size
    error, peak = _peak(load, path)
    assert error is None and load(path).info.get("format", "delimited") == fmt
    assert peak <= bounds.load_factor(fmt) * size, (peak / size, fmt)


# ----------------------------------------------------------------------------- archives
def _bomb(path, n_bytes, declared_honestly=True):
    """A zip of one member of ``n_bytes`` of one repeated rating line, written in blocks."""
    line = b"1,1,3\n"
    block = line * (MB // len(line))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        with z.open("ratings.csv", "w", force_zip64=True) as out:
            left = n_bytes
            while left > 0:
                out.write(block[:min(left, len(block))])
                left -= len(block)
    return path


def test_an_archive_expanding_far_more_than_data_is_refused_while_it_streams(tmp_path,
                                                                             monkeypatch):
    monkeypatch.setattr(bounds, "RATIO_GRACE_BYTES", 2 * MB)
    path = _bomb(tmp_path / "bomb.zip", 24 * MB)
    ratio = 24 * MB / path.stat().st_size
    assert ratio > 500
    error, peak = _peak(load, path, max_expanded_bytes=100 * MB)
    assert isinstance(error, FileTooLargeError), error
    message = str(error)
    assert "bomb.zip" in message and "expands more than 200 times its own size" in message
    assert "max_expansion_ratio=" in message
    assert peak < 16 * MB
    # the user who knows the data is this repetitive may allow it
    assert bounds.ExpansionGuard(path.stat().st_size, 1e4).problem(24 * MB) is None


def test_an_archive_whose_parse_would_pass_the_memory_limit_is_refused(tmp_path):
    text = _triplets(200_000)  # about 2 MB, compresses about 5 times
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("r.csv", text)
    path = tmp_path / "r.zip"
    path.write_bytes(buf.getvalue())
    with memory_limit("8M"):
        error, peak = _peak(load, path)
    assert isinstance(error, FileTooLargeError)
    assert "whose parse would need about" in str(error) and "8 MiB" in str(error)
    assert peak < 4 * MB
    assert load(path).n_ratings == 200_000
    with pytest.raises(InvalidParameterError, match="max_expansion_ratio"):
        load(path, max_expansion_ratio=0)


@pytest.mark.slow
def test_a_07_mb_zip_of_480_mb_is_refused_without_allocating(tmp_path):
    path = _bomb(tmp_path / "big.zip", 480 * MB)
    assert path.stat().st_size < 1.5 * MB
    error, peak = _peak(load, path)  # the default limits: 500 MB of expansion would pass
    assert isinstance(error, FileTooLargeError) and "times its own size" in str(error)
    assert peak < 16 * MB


@pytest.mark.slow
def test_an_upload_of_a_03_mb_zip_does_not_peak(tmp_path):
    from kmviz.ui import datasets as ds

    path = _bomb(tmp_path / "up.zip", 200 * MB)
    content = path.read_bytes()
    assert len(content) < 0.5 * MB
    error, peak = _peak(ds._load_upload, "up.zip", content, ())
    assert isinstance(error, FileTooLargeError) and "up.zip" in str(error)
    assert str(tmp_path) not in str(error)
    assert peak < 32 * MB
