"""Families as plug-ins: a family found through the ``kmviz.families`` entry point.

The fixture package ``tests/toyfamily`` (a biased-mean model, one Explore page written as a
function) is a separate distribution that no file of kmviz names. It is installed for real
(``pip install --no-deps --no-build-isolation --target DIR``) and then seen by kmviz in a
subprocess (``PYTHONPATH=DIR``: the CLI) or in this process (DIR on ``sys.path`` and
:func:`kmviz.families.reset_entry_points`, the registry's documented test hook: the
contract suite and the app). Also here: the registry's own rules (one ``family_of``, entry
points that fail to load, Explore pages as functions, suggestions kept by their family).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from kmviz import families
from kmviz.exceptions import InvalidParameterError

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "tests" / "toyfamily"


# ------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="session")
def toy_target(tmp_path_factory):
    """A directory holding the toy distribution, installed by pip."""
    target = tmp_path_factory.mktemp("toy-site")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--no-index", "--quiet", "--target", str(target), str(TOY)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (target / "kmviz_toyfamily").is_dir()
    return target


def _env(target) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(target)])
    return env


def _kmviz(target, *args, timeout=300):
    return subprocess.run([sys.executable, "-m", "kmviz", *args], env=_env(target),
                          capture_output=True, text=True, timeout=timeout)


def _forget_entry_points():
    for name in [m for m in sys.modules if m.split(".")[0] in ("kmviz_toyfamily",
                                                               "kmviz_notafamily")]:
        del sys.modules[name]
    importlib.invalidate_caches()
    families.reset_entry_points()


@pytest.fixture
def on_path():
    """Put directories on ``sys.path`` for one test; the registry reads entry points again
    before and after."""
    added = []

    def add(path):
        sys.path.insert(0, str(path))
        added.append(str(path))
        _forget_entry_points()

    yield add
    for path in added:
        sys.path.remove(path)
    _forget_entry_points()


@pytest.fixture
def toy(toy_target, on_path):
    """The toy family, registered in this process through its entry point."""
    on_path(toy_target)
    with warnings.catch_warnings():
        warnings.simplefilter("error", families.FamilyLoadWarning)
        fam = families.get("toy")
    return fam


# ------------------------------------------------------------------------------ the toy
@pytest.mark.slow
def test_toy_family_is_listed_by_kmviz_train_help(toy_target):
    done = _kmviz(toy_target, "train", "--help")
    assert done.returncode == 0, done.stderr
    assert "toy" in done.stdout and "Toy biased mean (plug-in)" in done.stdout
    for name in families.names():  # the built-in families are still there
        assert name in done.stdout
    done = _kmviz(toy_target, "train", "toy", "--help")
    assert done.returncode == 0, done.stderr
    assert "--reg" in done.stdout and "--iters" in done.stdout
    assert "toy" not in _kmviz(ROOT, "train", "--help").stdout.split()  # not installed


@pytest.mark.slow
def test_toy_family_trains_saves_and_is_listed_from_the_command_line(toy_target, tmp_path):
    store = tmp_path / "runs"
    done = _kmviz(toy_target, "train", "toy", "--data", "planted-lowrank", "--option",
                  "n_users=40", "--option", "n_items=30", "--iters", "3", "--save",
                  "--dir", str(store))
    assert done.returncode == 0, done.stderr
    assert "Saved run" in done.stdout and "test_rmse" in done.stdout
    listed = _kmviz(toy_target, "runs", "list", "--dir", str(store))
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    header = lines[0].split()
    # the toy's headline metrics (Family.metrics) are columns, with values
    for column in ("TEST_RMSE", "VALIDATION_RMSE", "TRAIN_RMSE"):
        assert column in header
    (row,) = [line for line in lines if " toy " in line]
    assert "Toy reg=1.0 on" in row
    values = row.split()[-3:]
    assert all(0.0 < float(v) < 10.0 for v in values), row


@pytest.mark.slow
def test_toy_family_passes_the_contract_suite(toy):
    from kmviz.testing import check_family

    assert toy.estimator_class().__module__ == "kmviz_toyfamily.model"
    assert toy in families.all_families() and families.names()[-1] == "toy"
    check_family(toy)


@pytest.mark.slow
def test_train_page_lists_and_trains_the_toy_family(toy):
    from tests.app.apphelpers import (TRAIN, goto, load_builtin, new_session, only_run,
                                      pick_family, submit_train)

    at = load_builtin(new_session(), "planted-lowrank")
    goto(at, TRAIN)
    assert toy.title in at.selectbox(key="train_family").options  # shown by title
    pick_family(at, "toy")
    assert toy.summary in [m.value for m in at.markdown]
    submit_train(at, {"train_toy_max_iter": 3, "train_toy_reg": 0.5})
    run = only_run(at)
    assert run.family == "toy" and run.model.n_iter_ <= 3
    assert run.model.get_params()["reg"] == 0.5
    assert not at.error, [e.value for e in at.error]
    # the Train page links the toy's Explore page (a function of its package)
    assert "Biases" in [link.label for link in at.get("page_link")]

    # the app's navigation serves that page: open it as a link would (AppTest.switch_page
    # takes files only; st.Page keys a page by the hash of its url_path)
    from streamlit.util import calc_hash

    (page,) = toy.explore
    at._page_hash = calc_hash(page.url_path)
    at.run()
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == ["Toy · Biases"]
    assert "global mean μ" in [m.label for m in at.metric]
    assert at.selectbox(key="explore_run_toy").value == run.run_id


# ------------------------------------------------------------------------------ the registry
def _fake_distribution(where: Path, name: str, entry_point: str) -> Path:
    """A distribution's metadata only (what importlib.metadata reads), with one entry point
    in the group kmviz.families."""
    info = where / f"{name.replace('-', '_')}-0.1.dist-info"  # as pip names it
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[kmviz.families]\n{entry_point}\n")
    return where


def test_a_broken_entry_point_warns_with_its_distribution_and_is_left_out(tmp_path, on_path):
    site = _fake_distribution(tmp_path, "kmviz-brokenfamily",
                              "broken = kmviz_brokenfamily.nowhere:family")
    (site / "kmviz_notafamily.py").write_text("FAMILY = 42\n")
    _fake_distribution(site / "other", "kmviz-notafamily", "odd = kmviz_notafamily:FAMILY")
    on_path(site)
    on_path(site / "other")
    with pytest.warns(families.FamilyLoadWarning) as seen:
        names = families.names()
    assert "broken" not in names and "odd" not in names
    assert set(n for n in names) >= {"km", "kmc", "ocmf", "gfm"}  # the others still load
    messages = [str(w.message) for w in seen]
    assert any("'kmviz-brokenfamily'" in m and "ModuleNotFoundError" in m for m in messages)
    assert any("'kmviz-notafamily'" in m and "not a kmviz.families.Family" in m
               for m in messages)
    assert len(families.load_problems()) == 2  # kept for the app to show
    families.names()  # read once: no second warning
    with pytest.raises(InvalidParameterError, match="Unknown model family 'broken'"):
        families.get("broken")


def test_an_entry_point_may_give_a_family_object_but_not_a_taken_name(tmp_path, on_path):
    (tmp_path / "kmviz_dupfamily.py").write_text(
        "from kmviz.families import Family\n"
        "TAKEN = Family(name='km', title='Another KM', estimator='x:Y', summary='', "
        "metrics=())\n"
        "EXTRA = Family(name='extra', title='Extra', estimator='kmviz_dupfamily:Nothing', "
        "summary='', metrics=())\n")
    (tmp_path / "kmviz_dupfamily-0.1.dist-info").mkdir()
    (tmp_path / "kmviz_dupfamily-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: kmviz-dupfamily\nVersion: 0.1\n")
    (tmp_path / "kmviz_dupfamily-0.1.dist-info" / "entry_points.txt").write_text(
        "[kmviz.families]\nkm = kmviz_dupfamily:TAKEN\nextra = kmviz_dupfamily:EXTRA\n")
    on_path(tmp_path)
    with pytest.warns(families.FamilyLoadWarning, match="'kmviz-dupfamily'.*already registered"):
        assert families.get("extra").title == "Extra"  # a Family object works as well
    assert families.get("km").title == "Kolmogorov model (KM)"  # the built-in one stays
    sys.modules.pop("kmviz_dupfamily", None)


def test_entry_points_are_read_lazily_and_once(monkeypatch):
    import importlib.metadata as md

    calls = []
    real = md.entry_points
    monkeypatch.setattr(md, "entry_points", lambda **kw: calls.append(kw) or real(**kw))
    families.reset_entry_points()
    try:
        assert calls == []
        families.names()
        families.all_families()
        families.get("km")
        assert calls == [{"group": families.ENTRY_POINT_GROUP}]
    finally:
        monkeypatch.undo()
        families.reset_entry_points()


def test_family_of_matches_the_estimator_class_exactly():
    for fam in families.all_families():
        assert families.family_of(fam.make(fam.quick_params)) is fam
    # kmviz.kmc starts with "kmviz.km": the old prefix rule took a Kernel MC model for KM
    kmc = families.get("kmc").make()
    assert families.family_of(kmc).name == "kmc"

    class KolmogorovModel:  # same name as KM's estimator, another class
        pass

    with pytest.raises(InvalidParameterError, match="not the estimator of a registered"):
        families.family_of(KolmogorovModel())

    class Tuned(families.get("km").estimator_class()):  # a subclass: its base's family
        pass

    assert families.family_of(Tuned()).name == "km"


def test_explore_pages_are_files_or_functions():
    file_page = families.ExplorePage("app_pages/km_dual.py", "Dual GD")
    assert not file_page.is_function and file_page.url_path == "km_dual"
    assert file_page.target() == "app_pages/km_dual.py"
    func_page = families.ExplorePage("kmviz.testing:check_family", "A function")
    assert func_page.is_function and func_page.url_path == "check-family"
    from kmviz.testing import check_family

    assert func_page.target() is check_family
    with pytest.raises(ModuleNotFoundError):
        families.ExplorePage("kmviz_no_such_module:page", "x").target()


def test_catalogue_suggestions_come_from_their_family():
    from kmviz.data import list_datasets, suggested_settings

    for entry in list_datasets():
        for name, suggestion in families.dataset_suggestions(entry.name).items():
            assert families.get(name).suggested()[entry.name] is suggestion
            assert suggested_settings(entry.name, name) is suggestion or suggestion.options
    assert suggested_settings("gapminder", "no-such-family") is None
    held = {(d, f.name) for f in families.all_families() for d in f.suggested()}
    assert held == {(e.name, n) for e in list_datasets()
                    for n in families.dataset_suggestions(e.name)}


def test_every_demo_dataset_is_in_the_catalogue():
    from kmviz.data import get_dataset

    demos = [f.demo_dataset for f in families.all_families() if f.demo_dataset]
    assert demos and all(get_dataset(name) for name in demos)
