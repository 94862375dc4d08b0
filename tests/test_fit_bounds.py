"""Work and memory are bounded before a fit starts (issue 24, item 2)."""

import gc
import time
import tracemalloc
import warnings

import pytest

import kmviz
import kmviz.cli as cli
from kmviz import _memory
from kmviz._memory import FitTooLargeError, memory_limit
from kmviz.data.synthetic import make_planted_lowrank, planted_km
from kmviz.exceptions import InvalidParameterError, KmvizError


@pytest.fixture(scope="module")
def km_data():
    return planted_km(n_users=60, n_items=500, D=3, random_state=0)


@pytest.fixture(scope="module")
def lowrank():
    return make_planted_lowrank(n_users=80, n_items=60, rank=3, random_state=0)[0]


@pytest.fixture(autouse=True)
def _limit(monkeypatch):
    """A fixed limit (2 GiB): a test never depends on, or uses up, the box's free memory."""
    monkeypatch.delenv(_memory.ENV_VAR, raising=False)
    kmviz.set_memory_limit("2G")
    yield
    kmviz.set_memory_limit(None)


def _make(family, **params):
    from kmviz import families

    return families.get(family).estimator_class()(**params)


@pytest.mark.parametrize("family, params", [
    ("km", {"D": 10_000}),
    ("kmc", {"method": "als", "rank": 10**7}),
    ("kmc", {"method": "online_rrmcex", "batch_size": 10**12}),
    ("ocmf", {"k": 10**7}),
    ("gfm", {"rank": 10**6}),
    ("similarity", {"k": 10**7}),
    ("similarity", {"user_tower": "mlp:1000000"}),
])
def test_the_issues_huge_settings_fail_fast_with_a_kmviz_error(family, params, lowrank):
    model = _make(family, **params)
    t0 = time.perf_counter()
    with pytest.raises(KmvizError, match="parameter of .* must"):
        model.fit(lowrank)
    assert time.perf_counter() - t0 < 1.0


def test_every_numeric_setting_of_every_family_has_an_upper_bound():
    from kmviz import families

    for fam in families.all_families():
        for name, spec in fam.estimator_class()._parameter_constraints.items():
            if spec.kind in (int, float):
                assert spec.high is not None, (fam.name, name)
                if spec.form_high is not None:  # the form may offer less, never more
                    assert spec.form_high <= spec.high, (fam.name, name)


def test_a_fit_over_the_limit_is_refused_before_it_allocates(km_data):
    from kmviz.km import KolmogorovModel

    model = KolmogorovModel(D=1024, max_iter=1)  # in bounds, but S is 500 x 1024 x 1024
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(FitTooLargeError) as caught:
            model.fit(km_data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - t0 < 1.0 and peak < 16 * 2**20
    err = caught.value
    assert isinstance(err, ValueError) and isinstance(err, MemoryError)
    message = str(err)
    # what it needs, the limit and what is available, the largest part, what to change
    assert "would need about" in message and "GiB" in message
    assert "per-fit limit of 2 GiB" in message and "available now" in message
    assert "D=1024" in message and "Fix:" in message and "KMVIZ_MAX_FIT_BYTES" in message
    assert err.needed > err.limit and err.parts
    assert not hasattr(model, "trace_")


def test_the_limit_is_settable_by_function_context_and_environment(monkeypatch, km_data):
    from kmviz.km import KolmogorovModel

    model = KolmogorovModel(D=2, max_iter=1)
    needed = _memory.check_fit_memory(model, model._validate_params(), km_data)
    assert 0 < needed < 64 * 2**20
    kmviz.set_memory_limit(None)
    monkeypatch.setenv(_memory.ENV_VAR, "1K")
    assert _memory.fit_memory_limit()[0] == 1024
    with pytest.raises(FitTooLargeError, match=r"KMVIZ_MAX_FIT_BYTES=1K"):
        model.fit(km_data)
    with memory_limit("1G"):  # the function wins over the environment
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert model.fit(km_data) is model
    kmviz.set_memory_limit(needed - 1)
    with pytest.raises(FitTooLargeError, match="set by kmviz.set_memory_limit"):
        model.fit(km_data)
    monkeypatch.setenv(_memory.ENV_VAR, "lots")
    kmviz.set_memory_limit(None)
    with pytest.raises(InvalidParameterError, match="KMVIZ_MAX_FIT_BYTES: a memory size"):
        model.fit(km_data)


@pytest.mark.parametrize("text, expected", [("2G", 2 * 2**30), ("512MiB", 512 * 2**20),
                                            ("1e6", 10**6), (4096, 4096), ("3 k", 3072)])
def test_parse_bytes(text, expected):
    assert _memory.parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "-1", "0", "ten", "1X", float("nan")])
def test_parse_bytes_refuses_nonsense(text):
    with pytest.raises(InvalidParameterError, match="memory size"):
        _memory.parse_bytes(text)


def test_default_limit_is_a_fraction_of_available_memory():
    kmviz.set_memory_limit(None)
    limit, source = _memory.fit_memory_limit()
    available = _memory.available_memory()
    assert available > 0 and limit == int(available * _memory.DEFAULT_FRACTION)
    assert "available" in source


def test_a_stopped_fit_releases_its_work_arrays(km_data):
    from kmviz.km import KolmogorovModel

    KolmogorovModel(D=2, max_iter=1).fit(km_data, callback=lambda row: False)  # compile
    gc.collect()
    model = KolmogorovModel(D=24, max_iter=5)
    tracemalloc.start()
    try:
        model.fit(km_data, callback=lambda row: False)
        gc.collect()
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # S alone is 500 x 24 x 24 floats (2.3 MB): what stays is the fitted factors and trace
    assert peak > 4 * 2**20 and kept < peak / 8


def test_app_max_fit_memory_reaches_the_server_environment(capsys, monkeypatch):
    calls = []
    monkeypatch.setattr(cli, "_serve",
                        lambda cmd, env=None, cwd=None: calls.append(env) or 0)
    assert cli.main(["app", "--max-fit-memory", "2G"]) == 0
    assert calls[0][_memory.ENV_VAR] == str(2 * 2**30)
    assert cli.main(["app"]) == 0
    assert _memory.ENV_VAR not in calls[1]
    capsys.readouterr()
    assert cli.main(["app", "--max-fit-memory", "lots"]) == 2 and len(calls) == 2
    err = capsys.readouterr().err
    assert "--max-fit-memory: a memory size" in err and "Traceback" not in err
