"""The committed sample_data/ files load, and make_samples.py regenerates them exactly."""

import importlib.util
import filecmp

import numpy as np

from kmviz.data import load


def _make_samples(sample_dir):
    spec = importlib.util.spec_from_file_location("make_samples",
                                                  sample_dir / "make_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_planted_ml100k_sample(sample_dir):
    r = load(sample_dir / "planted-ml100k")
    # planted data in MovieLens 100K format, not MovieLens 100K
    assert r.name == "planted-ml100k (MovieLens 100K format)"
    assert not r.name.startswith("MovieLens")
    assert (r.n_users, r.n_items) == (100, 80) and (r.r_min, r.r_max) == (1.0, 5.0)
    assert r.item_names[0].startswith("Planted item 1")
    assert "support 0" in r.item_features.columns and "year" in r.item_features.columns
    assert list(r.user_features.columns) == ["age", "gender", "occupation"]
    np.testing.assert_array_equal(r.values * 2, np.round(r.values * 2))


def test_triplet_and_interaction_samples(sample_dir):
    t = load(sample_dir / "planted-triplets.csv", r_min=0, r_max=1)
    assert not t.implicit and t.n_users == 60 and t.n_items == 40
    i = load(sample_dir / "interactions.tsv")
    assert i.implicit and i.n_users == 50 and i.n_items == 30


def test_samples_are_small_and_regenerate_identically(sample_dir, tmp_path):
    files = [p for p in sample_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert sum(p.stat().st_size for p in files) < 200 * 1024
    _make_samples(sample_dir).main(tmp_path)
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert made, "make_samples wrote nothing"
    for rel in made:
        assert filecmp.cmp(tmp_path / rel, sample_dir / rel, shallow=False), rel
