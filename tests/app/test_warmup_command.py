"""`kmviz warmup`: every family's kernels compiled ahead of a class, with progress."""

import io
import threading

from kmviz import cli, families
from kmviz.ui import warmup
from kmviz.ui.warmup import FAILED, READY, warm_all


def test_warm_all_compiles_every_family_once_and_says_so():
    seen, lock = [], threading.Lock()

    def compile(module, cancel):
        with lock:
            seen.append(module)
        return READY, ""

    triples = [(f.name, f.short or f.title, f.warmup) for f in families.all_families()]
    out = io.StringIO()
    result = warm_all(triples, out=out, compile=compile, poll_s=0.01)
    modules = [m for _, _, m in triples if m]
    assert sorted(seen) == sorted(modules) and len(seen) == len(modules)
    assert all(state == READY for state, _, _ in result.values())
    text = out.getvalue()
    for _, title, module in triples:
        if module:
            assert f"{title}: ready in" in text
    assert text.rstrip().endswith("Start the app with `kmviz app`.")


def test_a_failed_family_is_named_and_the_command_fails(monkeypatch, capsys):
    def compile(module, cancel):
        return (FAILED, "boom") if module.endswith("km.warmup") else (READY, "")

    real = warm_all
    monkeypatch.setattr(warmup, "warm_all",
                        lambda fams, **kw: real(fams, compile=compile, poll_s=0.01, **kw))
    assert cli.main(["warmup"]) == 2
    out = capsys.readouterr().out
    assert "KM: FAILED (boom)" in out and "but KM failed" in out
