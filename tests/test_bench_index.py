"""bench/README.md's index is the one bench/index.py generates from the docstrings, and
every benchmark that uses bench/_common's parser takes --json."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _index():
    spec = importlib.util.spec_from_file_location("bench_index", BENCH / "index.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_index_is_current_and_lists_every_benchmark():
    index = _index()
    assert index.current() == index.render(), "run: python bench/index.py --write"
    text = index.render()
    assert index.scripts(), "no benchmark found"
    for path in index.scripts():
        assert f"| `{path.parent.name}/{path.name}` |" in text
        assert "(no docstring)" not in text, path


def test_every_benchmark_is_in_an_area_folder():
    assert _index().stray() == [], "move it into bench/<area>/ (see bench/index.py)"


def test_a_sentence_does_not_end_at_an_abbreviation():
    index = _index()
    assert index.summary(BENCH / "km" / "table2_phases.py").endswith("on the toy set D1.")


def test_json_writes_the_tables_a_bench_prints(tmp_path):
    code = ("import sys; sys.path.insert(0, %r)\n"
            "import time, _common as c\n"
            "p = c.parser('demo'); a = p.parse_args(['--json', %r])\n"
            "c.header('demo'); print(c.table([{'x': 1, 'y': float('nan')}, {'x': 2.5}]))\n"
            "c.footer(time.perf_counter())\n") % (str(BENCH), str(tmp_path / "t.json"))
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    out = json.loads((tmp_path / "t.json").read_text())
    assert out["title"] == "demo" and out["tables"] == [
        {"columns": ["x", "y"], "rows": [{"x": 1, "y": None}, {"x": 2.5, "y": None}]}]
    assert "elapsed_s" in out and out["command"]
