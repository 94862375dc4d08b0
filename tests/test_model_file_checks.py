"""Defect 15: a model file whose fields have the wrong JSON types, or whose arrays have the
wrong shapes, raises RunStoreError naming the field (never AttributeError / IndexError)."""

import io
import json
import zipfile

import numpy as np
import pytest

from kmviz.exceptions import RunStoreError
from kmviz.runs import load_model_file
from tests.test_run_format import fit  # noqa: F401 - the module's fitted KM fixture


def _rewrite(tmp_path, path, name, *, meta=None, arrays=None):
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    if meta is not None:
        m = json.loads(members["meta.json"])
        meta(m)
        members["meta.json"] = json.dumps(m).encode()
    if arrays is not None:
        with zipfile.ZipFile(io.BytesIO(members["arrays.npz"])) as zf:
            stored = {n[:-4]: np.load(io.BytesIO(zf.read(n))) for n in zf.namelist()}
        arrays(stored)
        buf = io.BytesIO()
        np.savez(buf, **stored)
        members["arrays.npz"] = buf.getvalue()
    out = tmp_path / name
    with zipfile.ZipFile(out, "w") as zf:
        for n, data in members.items():
            zf.writestr(n, data)
    return out


@pytest.fixture
def model_file(tmp_path, fit):  # noqa: F811
    whole, split, model = fit
    return model.save(tmp_path / "km.kmviz", split=split, dataset=whole)


@pytest.mark.parametrize("field,value,want", [
    ("params", [1, 2], "'params' is a list; expected a JSON object"),
    ("metrics", "good", "'metrics' is a str; expected a JSON object"),
    ("dataset", 3, "'dataset' is a int; expected a JSON object"),
    ("label", {"a": 1}, "'label' is a dict; expected a string"),
    ("family", None, "'family' is a null; expected a string"),
    ("n_iter", "3", "'n_iter' is a str; expected a number or null"),
    ("arrays", [], "'arrays' is a list; expected a JSON object"),
])
def test_wrong_json_types_name_the_field(tmp_path, model_file, field, value, want):
    bad = _rewrite(tmp_path, model_file, "bad.kmviz", meta=lambda m: m.update({field: value}))
    with pytest.raises(RunStoreError) as e:
        load_model_file(bad)
    assert want in str(e.value) and str(bad) in str(e.value), str(e.value)


def test_not_an_object(tmp_path, model_file):
    with zipfile.ZipFile(model_file) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    members["meta.json"] = b"[1, 2, 3]"
    bad = tmp_path / "list.kmviz"
    with zipfile.ZipFile(bad, "w") as zf:
        for n, data in members.items():
            zf.writestr(n, data)
    with pytest.raises(RunStoreError, match="does not hold a JSON object"):
        load_model_file(bad)


def test_arrays_other_than_declared_name_the_array(tmp_path, model_file):
    def flat(a):
        a["theta"] = a["theta"].ravel()
    bad = _rewrite(tmp_path, model_file, "flat.kmviz", arrays=flat)
    with pytest.raises(RunStoreError, match=r"array 'theta' is <f8 \[\d+\] but meta.json "
                                            r"declares <f8 \[\d+, 3\]"):
        load_model_file(bad)


@pytest.mark.parametrize("array", ["theta", "psi", "scale", "dual_u", "known_users",
                                   "known_items"])
def test_arrays_of_the_wrong_shape_declared_as_such_name_the_arrays(tmp_path, model_file,
                                                                    array):
    """Shapes consistent with meta.json but wrong for the family: RunStoreError, listing
    the arrays and their shapes (found by rebuilding the model and predicting its training
    ratings)."""
    def change(a):
        a[array] = a[array].ravel()[:1] if a[array].ndim else np.zeros(0)
    bad = _rewrite(tmp_path, model_file, "wrong.kmviz", arrays=change)
    with zipfile.ZipFile(bad) as zf:
        with zipfile.ZipFile(io.BytesIO(zf.read("arrays.npz"))) as inner:
            new = np.load(io.BytesIO(inner.read(f"{array}.npy")))
    bad = _rewrite(tmp_path, bad, "wrong2.kmviz", meta=lambda m: m["arrays"].update(
        {array: {"shape": list(new.shape), "dtype": new.dtype.str}}))
    with pytest.raises(RunStoreError) as e:
        load_model_file(bad)
    assert array in str(e.value) and str(bad) in str(e.value), str(e.value)
