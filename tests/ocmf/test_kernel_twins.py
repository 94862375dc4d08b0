"""The observed-pair loops of :mod:`kmviz.ocmf._kernels`, each written once and compiled twice
(:func:`kmviz._jit.parallel_and_serial`): the threaded and the serial loop give the same
outputs bit for bit, and agree with NumPy sums over the pairs written here.

The public functions run the parallel loop only above ``PARALLEL_MIN_WORK`` (never on test
sizes), so here each loop is called directly; both get the same inputs and fresh outputs.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from kmviz.ocmf import _kernels as K
from kmviz.ocmf.losses import LOSS_CODES

#: The 14 loops: name -> the shapes of their outputs ("pairs", "rows", "rows_k").
LOOPS = {
    "_scores": {"out": "pairs"},
    "_value": {"scores_out": "pairs", "row_out": "rows"},
    "_value_deriv": {"scores_out": "pairs", "d1_out": "pairs", "d2_out": "pairs",
                     "row_out": "rows"},
    "_value_grad": {"scores_out": "pairs", "d2_out": "pairs", "G_out": "rows_k",
                    "D_out": "rows_k", "row_out": "rows"},
    "_value_grad32": {"scores_out": "pairs", "d2_out": "pairs", "G_out": "rows_k32",
                      "D_out": "rows_k32", "row_out": "rows"},
    "_hvp_base32": {"U_out": "rows_k32"},
    "_shifted": {"row_out": "rows"},
    "_gradient": {"G_out": "rows_k", "d2_out": "pairs"},
    "_hvp": {"U_out": "rows_k"},
    "_hvp_base": {"U_out": "rows_k"},
    "_diag": {"out": "rows_k"},
    "_combine": {"out": "rows_k"},
    "_combine_perm": {"out": "rows_k"},
    "_joint_gn": {"z_out": "pairs", "row_out": "rows_k"},
}
FLOAT32_INPUTS = {"_value_grad32": ("E", "O"), "_hvp_base32": ("N", "O", "base")}


def _problem(seed=0, m=9, n=7, k=3):
    """Inputs by parameter name: m rows of pairs (two of them empty) over n columns."""
    rng = np.random.default_rng(seed)
    mask = rng.random((m, n)) < 0.45
    mask[[2, 5]] = False
    rows, cols = np.nonzero(mask)
    nnz = rows.size
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.add.at(indptr, rows + 1, 1)
    indptr = np.cumsum(indptr)
    inputs = dict(
        indptr=indptr, idx=cols.astype(np.int64), y=(rng.random(nnz) < 0.7).astype(float),
        E=rng.standard_normal((m, k)), O=rng.standard_normal((n, k)),
        a=rng.uniform(0.1, 1.0, m), o=rng.uniform(0.1, 1.0, n), a_bar=-0.5,
        want_diag=True, scores=rng.standard_normal(nnz), N=rng.standard_normal((m, k)),
        d2=rng.uniform(-0.5, 2.0, nnz), base=rng.standard_normal((m, k)),
        base_w=rng.uniform(0.0, 1.0, m), s0=rng.standard_normal(nnz),
        ds=rng.standard_normal(nnz), alpha=0.3, coef=rng.standard_normal(nnz),
        perm=rng.permutation(nnz).astype(np.int64), P=rng.standard_normal((m, k)),
        Q=rng.standard_normal((n, k)), dP=rng.standard_normal((m, k)),
        dQ=rng.standard_normal((n, k)))
    shapes = {"pairs": (nnz,), "rows": (m,), "rows_k": (m, k), "rows_k32": (m, k)}
    return inputs, shapes, rows


def _call(fn, name, inputs, shapes, code):
    """``fn`` on the inputs its loop names, with fresh NaN-filled outputs; the outputs."""
    outputs = {out: np.full(shapes[shape], np.nan,
                            dtype=np.float32 if shape.endswith("32") else np.float64)
               for out, shape in LOOPS[name].items()}
    given = dict(inputs, code=code)
    for key in FLOAT32_INPUTS.get(name, ()):
        given[key] = given[key].astype(np.float32)
    params = inspect.signature(getattr(K, f"{name}_rows")).parameters
    fn(*[outputs[p] if p in outputs else given[p] for p in params])
    return outputs


def test_each_loop_is_written_once_and_compiled_twice():
    """No hand-written twins: both dispatchers of a loop run the same code object, one
    compiled with parallel=True, the other without, cached under names of their own."""
    for name in LOOPS:
        par, ser = getattr(K, f"{name}_par"), getattr(K, f"{name}_ser")
        body = getattr(K, f"{name}_rows")
        assert par.py_func.__code__ is ser.py_func.__code__ is body.__code__, name
        assert par.targetoptions.get("parallel") is True, name
        assert not ser.targetoptions.get("parallel"), name
        assert par._cache._cache_file._index_name != ser._cache._cache_file._index_name
    loops = sorted(n[:-4] for n in vars(K) if n.endswith("_par"))
    assert loops == sorted(LOOPS)  # every threaded loop of the module is one of these


@pytest.mark.slow  # compiles the 14 threaded loops (minutes when Numba's cache is cold)
@pytest.mark.parametrize("name", list(LOOPS))
def test_parallel_and_serial_loops_agree_bit_for_bit(name):
    inputs, shapes, _ = _problem(seed=1)
    par, ser = getattr(K, f"{name}_par"), getattr(K, f"{name}_ser")
    for code in sorted(set(LOSS_CODES.values())):
        a = _call(par, name, inputs, shapes, code)
        b = _call(ser, name, inputs, shapes, code)
        for out in a:
            assert not np.isnan(b[out]).any(), (name, out)  # every output written
            np.testing.assert_array_equal(a[out], b[out], err_msg=f"{name} {out}")


def test_serial_loops_match_numpy_sums_over_the_pairs():
    """Oracles: the pair sums spelled out with NumPy, for the loops that need no loss."""
    inputs, shapes, rows = _problem(seed=2)
    m, k = inputs["E"].shape
    idx, O = inputs["idx"], inputs["O"]
    code = LOSS_CODES["squared"]

    def row_sum(values):  # per-row sums of per-pair rows (m x k)
        out = np.zeros((m,) + values.shape[1:])
        np.add.at(out, rows, values)
        return out

    got = _call(K._scores_ser, "_scores", inputs, shapes, code)["out"]
    np.testing.assert_allclose(got, np.sum(inputs["E"][rows] * O[idx], axis=1), rtol=1e-12)
    got = _call(K._combine_ser, "_combine", inputs, shapes, code)["out"]
    np.testing.assert_allclose(got, row_sum(inputs["coef"][:, None] * O[idx]), rtol=1e-12,
                               atol=1e-14)
    got = _call(K._combine_perm_ser, "_combine_perm", inputs, shapes, code)["out"]
    np.testing.assert_allclose(got, row_sum(inputs["coef"][inputs["perm"]][:, None] * O[idx]),
                               rtol=1e-12, atol=1e-14)
    got = _call(K._diag_ser, "_diag", inputs, shapes, code)["out"]
    np.testing.assert_allclose(got, row_sum(inputs["d2"][:, None] * O[idx] ** 2), rtol=1e-12,
                               atol=1e-14)
    t = inputs["d2"] * np.sum(inputs["N"][rows] * O[idx], axis=1)
    got = _call(K._hvp_ser, "_hvp", inputs, shapes, code)["U_out"]
    np.testing.assert_allclose(got, row_sum(t[:, None] * O[idx]), rtol=1e-12, atol=1e-14)
    got = _call(K._hvp_base_ser, "_hvp_base", inputs, shapes, code)["U_out"]
    np.testing.assert_allclose(
        got, row_sum(t[:, None] * O[idx]) + inputs["base_w"][:, None] * inputs["base"],
        rtol=1e-12, atol=1e-14)
    P, Q, dP, dQ = inputs["P"], inputs["Q"], inputs["dP"], inputs["dQ"]
    z = inputs["d2"] * np.sum(dP[rows] * Q[idx] + P[rows] * dQ[idx], axis=1)
    got = _call(K._joint_gn_ser, "_joint_gn", inputs, shapes, code)
    np.testing.assert_allclose(got["z_out"], z, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got["row_out"], row_sum(z[:, None] * Q[idx]), rtol=1e-12,
                               atol=1e-14)
