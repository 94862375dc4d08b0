"""The restructured app through AppTest: the default dataset, the Train form from the
registry, the Runs page (name and note, delete with confirmation, compare), runs shared
with the command line, and user text that stays text."""

import pytest

from kmviz import families
from kmviz.cli import main
from kmviz.runs import RunStore
from kmviz.ui.state import StateKeys
from kmviz.ui.text import md_escape
from kmviz.viz.convergence import MEAN_PREDICTOR
from tests.app.apphelpers import (CONVERGENCE, DATA, KM_DUAL, KM_IMPLICATIONS, KM_LANCZOS,
                                  KM_PAGES, KM_PHASES, RUNS, TRAIN, button, cli_train, goto,
                                  load_planted, metrics, new_session, only_run, plain_text,
                                  plotly_specs, texts, train)

EVIL = "[x](http://evil)"


def _row(run_id):
    return RunStore().list().set_index("run_id").loc[run_id]


def _runs_table(at):
    return at.dataframe[0].value.set_index("run_id")


# ---------------------------------------------------------------- default data, Train form
@pytest.mark.slow
def test_fresh_session_trains_on_the_default_dataset_without_visiting_data():
    at = new_session()
    assert any("MovieLens latest" in c.value for c in at.caption)  # Home says what is loaded
    at = train(at, D=2, max_iter=1, tol=None)  # Home -> Train, never the Data page
    spec = at.session_state[StateKeys.DATASET_SPEC]
    assert spec["default"] and spec["source"] == "movielens-small"
    assert any("(the built-in default)" in c.value for c in at.caption)
    run = only_run(at)
    ratings = at.session_state[StateKeys.DATASET]
    assert run.dataset_name == ratings.name == "MovieLens latest-small"
    assert run.trace.n_iter == 1 and run.model.theta_.shape == (ratings.n_users, 2)
    assert run.model.psi_.shape == (ratings.n_items, 2)
    m = metrics(at)
    assert m["iterations"] == "1"
    assert float(m["validation NRMSE"]) == pytest.approx(run.metrics["validation_nrmse"],
                                                         abs=1e-4)
    row = _row(run.run_id)
    assert row["dataset"] == "MovieLens latest-small" and row["D"] == 2
    assert row["validation_nrmse"] == pytest.approx(run.metrics["validation_nrmse"])


def test_train_page_offers_the_registry_families_and_their_declared_settings():
    at = goto(new_session(), TRAIN)
    family_box = at.selectbox(key="train_family")
    assert family_box.options == [f.title for f in families.all_families()]
    assert family_box.value == families.names()[0]
    fam = families.get(family_box.value)
    widgets = [*at.number_input, *at.selectbox, *at.checkbox]
    keys = {w.key for w in widgets if w.key}
    # one widget per declared parameter, keyed train_<family>_<param>, at its default
    assert {f"train_{fam.name}_{p}" for p in fam.constraints()} <= keys
    defaults = fam.default_params()
    assert at.number_input(key="train_km_D").value == defaults["D"]
    assert at.number_input(key="train_km_max_iter").value == defaults["max_iter"]
    assert at.selectbox(key="train_km_bqp_solver").value == defaults["bqp_solver"]
    assert at.number_input(key="train_km_random_state").value == 0  # None: seeded 0
    assert fam.summary in [md.value for md in at.markdown]


# ---------------------------------------------------------------- Runs: name, note, delete
def test_runs_page_renames_a_run_and_sets_a_note(monkeypatch):
    monkeypatch.setenv("KMVIZ_SHARED_RUNS", "1")  # the CLI's runs, managed in the app
    alpha, beta = cli_train(label="alpha"), cli_train(label="beta")
    at = goto(new_session(), RUNS)
    at.selectbox(key="runs_one").set_value(alpha).run()
    assert at.text_input[0].label == "Name" and at.text_input[0].value == "alpha"
    at.text_input[0].input("  renamed   alpha ")
    at.text_area[0].input("what it was for\nand what came of it")
    button(at, "Save name and note").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    listing = RunStore().list().set_index("run_id")
    assert listing.loc[alpha, "label"] == "renamed alpha"  # whitespace collapsed
    assert listing.loc[alpha, "note"] == "what it was for\nand what came of it"
    assert listing.loc[beta, "label"] == "beta" and listing.loc[beta, "note"] == ""
    assert RunStore().load_meta(alpha)["note"] == "what it was for\nand what came of it"
    table = _runs_table(at)
    assert table.loc[alpha, "label"] == "renamed alpha"
    assert table.loc[alpha, "note"] == "what it was for\nand what came of it"
    assert at.text_input[0].value == "renamed alpha"  # the form shows the new name
    # an empty name is refused with a message; nothing changes
    at.text_input[0].input("   ")
    button(at, "Save name and note").click().run()
    assert not at.exception and "cannot be empty" in at.error[0].value
    assert _row(alpha)["label"] == "renamed alpha"


@pytest.mark.slow
def test_rename_of_a_session_run_shows_on_the_train_page():
    at = train(load_planted(new_session()), D=2, max_iter=1)
    run = only_run(at)
    goto(at, RUNS)
    at.text_input[0].input("my first KM")
    button(at, "Save name and note").click().run()
    assert _row(run.run_id)["label"] == "my first KM"
    goto(at, TRAIN)
    assert "Result: my first KM" in [s.value for s in at.subheader]


@pytest.mark.slow
def test_delete_asks_for_confirmation_naming_the_run_and_deletes_only_it(monkeypatch):
    monkeypatch.setenv("KMVIZ_SHARED_RUNS", "1")  # the CLI's runs, managed in the app
    alpha, beta = cli_train(label="alpha"), cli_train(label="beta")
    at = goto(new_session(), RUNS)
    at.selectbox(key="runs_one").set_value(beta).run()
    at.button(key="runs_delete").click().run()
    assert not at.exception
    assert len(at.warning) == 1
    warning = at.warning[0].value
    assert "**beta**" in warning and beta in warning and "alpha" not in warning
    assert at.button(key="runs_delete_yes").label == "Yes, delete beta"
    assert len(RunStore()) == 2  # asking deletes nothing
    # Cancel: nothing deleted, the question goes away
    at.button(key="runs_delete_no").click().run()
    assert not at.exception and not at.warning
    assert sorted(RunStore().ids()) == sorted([alpha, beta])
    with pytest.raises(KeyError):
        at.button(key="runs_delete_yes")
    # the question belongs to the run it was asked for: picking another run drops it
    at.button(key="runs_delete").click().run()
    at.selectbox(key="runs_one").set_value(alpha).run()
    assert not at.warning
    with pytest.raises(KeyError):
        at.button(key="runs_delete_yes")
    # ask again for beta and confirm: exactly beta goes, alpha survives
    at.selectbox(key="runs_one").set_value(beta).run()
    at.button(key="runs_delete").click().run()
    at.button(key="runs_delete_yes").click().run()
    assert not at.exception and not at.error
    assert RunStore().ids() == [alpha]
    assert any("Deleted run beta" in t.value for t in at.toast)
    assert _runs_table(at).index.tolist() == [alpha]
    assert at.selectbox(key="runs_one").value == alpha
    assert at.multiselect(key="runs_selected").value == [alpha]


# ---------------------------------------------------------------- Runs: compare
def test_compare_marks_differences_and_warns_when_the_datasets_differ():
    d2 = cli_train("--set", "gamma=50", label="D2 on 30", D=2)
    d3 = cli_train(label="D3 on 30", D=3)
    other = cli_train(label="D3 on 40", D=3, n_users=40)
    at = goto(new_session(), RUNS)

    at.multiselect(key="runs_selected").set_value([d2, d3]).run()
    assert not at.exception and not at.warning  # same data: no warning
    table = at.dataframe[-1].value
    assert table.columns[0] == "differs"
    assert table.loc["D", "differs"] == "≠" and table.loc["gamma", "differs"] == "≠"
    assert table.loc["fingerprint", "differs"] == "" and table.loc["dataset", "differs"] == ""
    # only the settings that differ are listed, unless every setting is asked for
    assert "bqp_solver" not in table.index and "max_iter" not in table.index
    assert list(table.loc["D"].iloc[1:]) == ["2", "3"]
    at.toggle(key="runs_compare_all").set_value(True).run()
    every = at.dataframe[-1].value
    assert every.loc["bqp_solver", "differs"] == "" and every.loc["max_iter", "differs"] == ""
    at.toggle(key="runs_compare_all").set_value(False).run()
    assert list(table.columns[1:]) == [f"D2 on 30 · {d2[-8:]}", f"D3 on 30 · {d3[-8:]}"]
    assert any("Settings that differ: D, gamma" in c.value for c in at.caption)
    # why one beat the other: the best named with its metric, the other's differences
    runs = RunStore().list().set_index("run_id")
    best, worse = sorted([d2, d3], key=lambda r: runs.loc[r, "validation_nrmse"])
    why = [m.value for m in at.markdown if m.value.startswith("- ")]
    assert why, [m.value for m in at.markdown]
    text = plain_text(why[0])
    name = runs.loc[best, "label"]
    assert f"“{name}” has the lowest validation_nrmse" in text
    assert "differs in D = " in text and "gamma = " in text

    at.multiselect(key="runs_selected").set_value([d3, other]).run()
    assert not at.exception
    assert len(at.warning) == 1 and "different datasets" in at.warning[0].value
    table = at.dataframe[-1].value
    assert table.loc["fingerprint", "differs"] == "≠"
    assert "D" not in table.index and "gamma" not in table.index  # the same settings
    assert any("Settings that differ: none" in c.value for c in at.caption)


# ---------------------------------------------------------------- the CLI and the app
def test_a_run_saved_by_the_cli_opens_on_every_km_page_and_in_the_runs_table(monkeypatch):
    monkeypatch.setenv("KMVIZ_SHARED_RUNS", "1")  # the app may load the CLI run's data
    run_id = cli_train(label="from the cli")
    saved = RunStore().load(run_id)
    at = new_session()
    for page in KM_PAGES:
        goto(at, page)
        assert not at.error, (page, [e.value for e in at.error])
        # no notice that the run cannot be shown; the Lanczos page may explain its chart
        notices = [i.value for i in at.info if page != KM_IMPLICATIONS
                   and "stops at m = 1" not in i.value]
        assert not notices, (page, notices)
        key = "phases_run" if page == KM_PHASES else "explore_run_km"
        assert at.selectbox(key=key).value == run_id, page
    assert at.session_state[StateKeys.RUNS][run_id].reopened
    goto(at, KM_LANCZOS)
    assert metrics(at)["size of C(u*)"] == "4 × 4"
    goto(at, CONVERGENCE)
    assert not at.error
    (spec,) = plotly_specs(at)
    assert MEAN_PREDICTOR in {t.get("name") for t in spec["data"]}  # the run has its data
    goto(at, RUNS)
    table = _runs_table(at)
    assert table.loc[run_id, "label"] == "from the cli"
    shown = [c for c in table.columns if c in saved.metrics]  # the headline metrics
    assert shown[0] == "validation_nrmse" and "train_nrmse" in shown
    for name in shown:
        assert table.loc[run_id, name] == pytest.approx(saved.metrics[name]), name
    # every metric of the registry is in Compare
    at.multiselect(key="runs_selected").set_value([run_id]).run()
    compare = at.dataframe[-1].value
    for name in families.get("km").metrics:
        assert float(compare.loc[name].iloc[1]) == pytest.approx(saved.metrics[name],
                                                                 rel=1e-3), name


@pytest.mark.slow
def test_an_app_trained_run_is_listed_by_the_cli_with_its_metrics(capsys):
    at = train(load_planted(new_session()), D=2, max_iter=2)
    run = only_run(at)
    capsys.readouterr()
    assert main(["runs", "list"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    for name in ("VALIDATION_NRMSE", "TEST_NRMSE", "TRAIN_NRMSE", "TEST_RMSE"):
        assert name in header
    (line,) = [line for line in out.splitlines() if line.startswith(run.run_id)]
    for name in ("validation_nrmse", "test_nrmse", "train_nrmse"):
        assert f"{run.metrics[name]:.4g}" in line.split(), name
    assert "1 run(s)" in out
    assert main(["runs", "show", run.run_id]) == 0
    shown = capsys.readouterr().out
    assert f"validation_nrmse  {run.metrics['validation_nrmse']:.6g}" in shown
    assert "planted KM" in shown


# ---------------------------------------------------------------- user text stays text
def _no_markup(at, raw):
    """No rendered string holds the raw markup; at least one holds it escaped."""
    rendered = texts(at)
    assert not [t for t in rendered if raw in t or "](http" in t], rendered
    assert any(md_escape(raw) in t for t in rendered), rendered


@pytest.mark.slow
def test_markdown_in_a_run_name_renders_as_text():
    at = train(load_planted(new_session()), D=2, max_iter=1)
    run = only_run(at)
    goto(at, RUNS)
    at.text_input[0].input(EVIL)
    button(at, "Save name and note").click().run()
    assert not at.exception and _row(run.run_id)["label"] == EVIL  # kept as typed
    at.button(key="runs_delete").click().run()
    _no_markup(at, EVIL)  # the confirmation and its button name the run as text
    assert md_escape(EVIL) in at.warning[0].value
    assert "\\[x\\]" in at.button(key="runs_delete_yes").label
    at.button(key="runs_delete_no").click().run()
    goto(at, TRAIN)
    _no_markup(at, EVIL)  # "Result: ..."
    assert f"Result: {md_escape(EVIL)}" in [s.value for s in at.subheader]
    goto(at, RUNS)
    at.button(key="runs_delete").click().run()
    at.button(key="runs_delete_yes").click().run()
    _no_markup(at, EVIL)  # the toast
    assert len(RunStore()) == 0


@pytest.mark.slow
def test_markdown_in_item_titles_and_dataset_names_renders_as_text(monkeypatch):
    monkeypatch.setenv("KMVIZ_SHARED_RUNS", "1")  # the run is saved from Python, no owner
    from kmviz.data import Ratings, load
    from kmviz.data.splits import make_split
    from kmviz.km import KolmogorovModel
    from kmviz.runs import save_run

    base = load("planted-km", n_users=30, n_items=20, D=3, random_state=0)
    names = [f"[t{i}](http://evil) **{i}**" for i in range(base.n_items)]
    ratings = Ratings.from_arrays(base.users, base.items, base.values, r_min=base.r_min,
                                  r_max=base.r_max, item_names=names, name=EVIL)
    split = make_split(ratings)
    model = KolmogorovModel(D=3, max_iter=2, random_state=0).fit(
        split.train, validation=split.validation)
    run_id = save_run(model, split, dataset=ratings, label=EVIL)
    at = new_session()
    goto(at, KM_IMPLICATIONS)
    assert not at.error, [e.value for e in at.error]
    words = [md.value for md in at.markdown if "likes" in md.value]
    assert words and "\\[t" in words[0] and "](http" not in words[0]
    assert not [t for t in texts(at) if "](http" in t]
    for page in (KM_DUAL, KM_LANCZOS, KM_PHASES, CONVERGENCE):
        goto(at, page)
        assert not at.error, page
        assert not [t for t in texts(at) if "](http" in t], page
    # a re-run brings the dataset back under its (escaped) name
    goto(at, RUNS)
    at.button(key="runs_rerun").click().run()
    assert not at.exception and at.session_state[StateKeys.DATASET].name == EVIL
    assert [t.value for t in at.title] == ["Train"]
    _no_markup(at, EVIL)
    # a run without its data explains why, naming the run as text
    trace = RunStore().load(run_id).trace
    old = RunStore().save("km", trace, {"theta": model.theta_, "psi": model.psi_},
                          dataset="old", params={"D": 3}, metrics={}, label=EVIL)
    goto(at, KM_DUAL)
    at.selectbox(key="explore_run_km").set_value(old).run()
    assert not at.exception and "without its training data" in at.info[0].value
    _no_markup(at, EVIL)


def test_markdown_in_an_uploaded_file_name_renders_as_text():
    at = goto(new_session(), DATA)
    at.radio(key="data_source").set_value("Upload").run()
    rows = "user,item,rating\n" + "".join(f"{u},{i},{(u + i) % 5 + 1}\n"
                                          for u in range(6) for i in range(5))
    at.file_uploader(key="data_upload").upload("[x](evil).csv", rows.encode(), "text/csv")
    at.run()
    at.button(key="data_load_upload").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state[StateKeys.DATASET].name == "[x](evil).csv"
    rendered = texts(at)  # the toast, the subheader, the provenance caption
    assert not [t for t in rendered if "](evil" in t], rendered
    assert any(t.startswith(f"Loaded {md_escape('[x](evil).csv')}") for t in rendered)
    goto(at, TRAIN)
    assert not [t for t in texts(at) if "](evil" in t]
