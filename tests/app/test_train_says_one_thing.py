"""The Train page says one thing: no developer text from the catalogue's notes."""

from kmviz import families
from kmviz.ui.views import page_note


def test_no_benchmark_commands_or_machine_loads_in_any_note():
    notes = [s.note for f in families.all_families() for s in f.suggested().values()]
    assert notes and any("bench/" in n for n in notes)  # the raw notes do carry them
    for note in notes:
        shown = page_note(note)
        assert "bench/" not in shown and "python " not in shown and "at load" not in shown
        assert "()" not in shown and " ," not in shown and "  " not in shown
        assert shown.endswith((".", ".'", '."', ")")), shown
        # the measurements stay
        digits = [c for c in note if c.isdigit()]
        assert len([c for c in shown if c.isdigit()]) >= len(digits) // 2


def test_page_note_keeps_plain_text_and_drops_each_kind_of_command():
    assert page_note("Plain words.") == "Plain words."
    assert page_note("Best (`python bench/a.py`): 0.8.") == "Best: 0.8."
    assert page_note("Seeds (three, `python bench/a.py --x`) fit.") == "Seeds (three) fit."
    assert page_note("Measured by `python bench/b.py` on it; `bench/c.py` compares.") == \
        "Measured on it."
    assert page_note("Better (0.96) but took 50 s at load 12. `python bench/d.py`.") == \
        "Better (0.96)."
    # the words after a command stay, decimals included (the Boston gFM note)
    assert page_note("RMSE 0.388 (mean of three; `python bench/e.py`, the ridge 0.01 and 1 "
                     "tried too).") == "RMSE 0.388 (mean of three, the ridge 0.01 and 1 tried too)."
    assert page_note("Fit (mean of three; `bench/f.py` at 0.5 s) done.") == \
        "Fit (mean of three) done."


def test_a_fit_with_a_warning_is_not_reported_as_a_success():
    from types import SimpleNamespace

    from kmviz.ui.views import _warned

    def job(events):
        return SimpleNamespace(result=SimpleNamespace(trace=SimpleNamespace(events=events)))

    assert _warned(job([{"kind": "warning", "message": "no better than the mean"}]))
    assert not _warned(job([{"kind": "note", "message": "x"}]))
    assert not _warned(job([])) and not _warned(SimpleNamespace(result=None))
