"""Lesson files (kmviz.ui.lesson): the shipped lessons are valid, bad files are refused with
a message naming the file and the step, and `kmviz app --lesson` checks the file first."""

import pytest

from kmviz import families
from kmviz.ui import lesson as lessons
from kmviz.ui.address import link_context

SHARED_PAGES = ["", "data", "train", "runs", "convergence"]


def _pages():
    return SHARED_PAGES + [p.url_path for f in families.all_families() for p in f.explore]


def test_every_family_ships_a_lesson_whose_links_are_all_valid():
    shipped = lessons.shipped_lessons()
    assert set(shipped) == set(families.names())
    context = link_context(_pages())
    for name in shipped:
        lesson = lessons.read_lesson(name)
        assert 3 <= len(lesson.steps) <= 10 and lesson.title
        assert lessons.check_lesson(lesson, context) == [], name
        # it ends on the family's own Explore pages
        explore = {p.url_path for p in families.get(name).explore}
        assert explore <= set(lesson.pages()), name
        assert all(step.note for step in lesson.steps), name


def test_a_lesson_link_with_a_bad_setting_is_reported():
    lesson = lessons.parse_lesson('title = "t"\n[[steps]]\ntitle = "a"\n'
                                  'link = "/train?family=km&D=0&nope=1"\n', "x.toml")
    problems = lessons.check_lesson(lesson, link_context(_pages()))
    assert len(problems) == 2 and problems[0].startswith("step 1 (a): D='0'")


@pytest.mark.parametrize("text, words", [
    ("title = ", "not valid TOML"),
    ('steps = []', "no 'title'"),
    ('title = "t"', "has no steps"),
    ('title = "t"\n[[steps]]\nlink = "/train"\n', "step 1 has no 'title'"),
    ('title = "t"\n[[steps]]\ntitle = "a"\nlink = "https://evil.example/x"\n',
     "step 1: link must be a path"),
    ('title = "t"\n[[steps]]\ntitle = "a"\nlink = 3\n', "link must be text"),
    ('title = "t"\n' + '[[steps]]\ntitle = "a"\nlink = "/"\n' * 31, "at most 30"),
])
def test_a_bad_lesson_file_is_refused_naming_the_problem(text, words):
    with pytest.raises(lessons.LessonError, match="x.toml") as info:
        lessons.parse_lesson(text, "x.toml")
    assert words in str(info.value)
    assert isinstance(info.value, ValueError)


def test_a_lesson_is_found_by_path_or_by_name(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('title = "Mine"\n[[steps]]\ntitle = "Home"\nlink = "/"\n')
    assert lessons.read_lesson(str(path)).title == "Mine"
    assert lessons.read_lesson("km").steps[0].page == "data"
    with pytest.raises(lessons.LessonError, match="shipped lesson"):
        lessons.read_lesson(str(tmp_path / "none.toml"))


def test_kmviz_app_lesson_checks_the_file_and_passes_it_to_the_app(monkeypatch, tmp_path,
                                                                  capsys):
    from kmviz import cli

    seen = {}
    monkeypatch.setattr(cli, "_serve", lambda cmd, env, cwd: seen.update(env=env) or 0)
    assert cli.main(["app", "--lesson", "km"]) == 0
    assert seen["env"][lessons.LESSON_ENV].endswith("km.toml")
    assert "7 steps" in capsys.readouterr().out
    bad = tmp_path / "bad.toml"
    bad.write_text("title = 3\n")
    assert cli.main(["app", "--lesson", str(bad)]) == 2
    assert "bad.toml" in capsys.readouterr().err
