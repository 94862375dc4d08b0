"""The Kernel MC family in the app: trained from the Train page, or a saved run opened on the
Completion and Nyström pages; the on-request computations run through their buttons."""

import json
import warnings

import numpy as np
import pytest

from kmviz.data.splits import make_split
from kmviz.exceptions import ConvergenceWarning
from kmviz.kmc import KernelMatrixCompletion
from kmviz.kmc.datasets import load_gapminder
from kmviz.runs import RunStore, save_run
from kmviz.ui.state import StateKeys

from .apphelpers import DATA, TRAIN, goto, new_session, plotly_specs, texts, train_button, \
    wait_job, wait_page_job

COMPLETION = "app_pages/kmc_completion.py"
NYSTROM = "app_pages/kmc_nystrom.py"


def _no_errors(at):
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def _titles(at) -> list[str]:
    out = []
    for spec in plotly_specs(at):
        title = spec.get("layout", {}).get("title", {})
        out.append(title.get("text", "") if isinstance(title, dict) else str(title))
    return out


@pytest.fixture(scope="module")
def _gapminder_fit():
    """A KKMCEX fit on Gapminder life expectancy, made once for the module (7-9 s on a busy
    box); the pages open it from each test's own run store, never this object."""
    data = load_gapminder()
    split = make_split(data, val_size=0.1, test_size=0.2, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = KernelMatrixCompletion(center=True, mu=0.01, max_iter=60).fit(
            split.train, validation=split.validation)
    return data, split, model


@pytest.fixture()
def gapminder_run(monkeypatch, _gapminder_fit):
    """That fit saved in the test's run store (shared, so that the app's sessions may open
    its data)."""
    monkeypatch.setenv("KMVIZ_SHARED_RUNS", "1")
    data, split, model = _gapminder_fit
    return save_run(model, split, dataset=data, label="gapminder kkmcex", store=RunStore())


@pytest.mark.slow
def test_train_kmc_from_the_train_page_and_open_its_pages():
    at = goto(new_session(), DATA)
    at.selectbox(key="data_builtin").set_value("planted-lowrank").run()
    at.number_input(key="data_planted-lowrank_n_users").set_value(40)
    at.number_input(key="data_planted-lowrank_n_items").set_value(30)
    at.button(key="data_load_builtin").click().run()
    _no_errors(at)
    goto(at, TRAIN)
    at.selectbox(key="train_family").set_value("kmc").run()
    _no_errors(at)
    # the form is built from the estimator's declarations; the main settings are in view
    assert at.selectbox(key="train_kmc_method").value == "kkmcex"
    at.number_input(key="train_kmc_max_iter").set_value(50)
    train_button(at).click().run()
    _no_errors(at)
    wait_job(at)
    job = at.session_state[StateKeys.JOB]
    assert job.status in ("done", "stopped"), job.progress()["message"]
    run = next(iter(at.session_state[StateKeys.RUNS].values()))
    assert run.family == "kmc" and np.isfinite(run.metrics["test_nmse"])

    goto(at, COMPLETION)
    _no_errors(at)
    titles = _titles(at)
    for start in ("Truth", "Mask", "Estimate", "Error"):
        assert any(t.startswith(start) for t in titles), titles
    assert any("cold start" in t for t in texts(at))
    goto(at, "app_pages/kmc_nystrom.py")
    _no_errors(at)
    # the run's kernels are offered first
    assert at.selectbox(key="kmc_ny_source").value == "row_kernel"
    assert any(m.label == "d_eff(α)" for m in at.metric)


def test_the_train_form_shows_only_the_chosen_methods_settings():
    """Method-only settings (``Param(when={"method": ...})``) appear with their method:
    KKMCEX's solver but no PG schedule; choosing PG (outside the form, so at once) swaps
    them, and a PG fit trains from there with the PG settings it was given."""
    at = goto(new_session(), DATA)
    at.selectbox(key="data_builtin").set_value("planted-lowrank").run()
    at.number_input(key="data_planted-lowrank_n_users").set_value(30)
    at.number_input(key="data_planted-lowrank_n_items").set_value(20)
    at.button(key="data_load_builtin").click().run()
    goto(at, TRAIN)
    at.selectbox(key="train_family").set_value("kmc").run()
    _no_errors(at)
    keys = {w.key for w in list(at.selectbox) + list(at.number_input)}
    assert {"train_kmc_solver", "train_kmc_graph_kernel"} <= keys
    assert not {"train_kmc_schedule", "train_kmc_lap_weight"} & keys
    at.selectbox(key="train_kmc_method").set_value("pg").run()
    _no_errors(at)
    keys = {w.key for w in list(at.selectbox) + list(at.number_input)}
    assert {"train_kmc_schedule", "train_kmc_lap_weight", "train_kmc_max_iter"} <= keys
    assert not {"train_kmc_solver", "train_kmc_graph_kernel", "train_kmc_n_components"} & keys
    at.selectbox(key="train_kmc_schedule").set_value("spg")
    at.number_input(key="train_kmc_max_iter").set_value(20)
    train_button(at).click().run()
    _no_errors(at)
    wait_job(at)
    run = next(iter(at.session_state[StateKeys.RUNS].values()))
    assert run.params["method"] == "pg" and run.params["schedule"] == "spg"
    assert run.trace.solver == "kmc.pg.spg"


def test_completion_page_on_a_saved_gapminder_run(gapminder_run):
    at = goto(new_session(), COMPLETION)
    _no_errors(at)
    assert "Gapminder" in " ".join(texts(at)) or at.selectbox[0].value == gapminder_run
    table = at.dataframe[0].value
    assert {"part", "entries", "nmse", "mean_predictor_nmse"} <= set(table.columns)
    test_all = table[(table["part"] == "test") & (table["entries"] == "all")]
    assert float(test_all["nmse"].iloc[0]) < float(test_all["mean_predictor_nmse"].iloc[0])
    shown = " ".join(texts(at))          # no "0 rows and 0 columns have no training value"
    assert "no cold start" in shown and "0 rows and 0 columns" not in shown

    # cold start on request: whole countries hidden, marked on the maps, scored apart
    at.number_input(key="kmc_hide_rows").set_value(6)
    at.button(key="kmc_cold_refit").click().run()
    wait_page_job(at, "kmc_cold")  # a page job: queued with the fits, Stop-able
    _no_errors(at)
    assert any("6 rows hidden" in t for t in texts(at))
    table = at.dataframe[0].value
    cold = table[(table["part"] == "test") & (table["entries"] == "cold start")]
    assert len(cold) == 1 and int(cold["n"].iloc[0]) >= 6 * 50
    assert int(cold["unpredictable"].iloc[0]) == 0  # the region graph reaches them
    truth = next(s for s in plotly_specs(at)
                 if s["layout"]["title"]["text"].startswith("Truth"))
    framed = sum(int(round(s["y1"] - s["y0"])) for s in truth["layout"]["shapes"]
                 if s["x0"] == -0.5 and s["x1"] > s["x0"] + 1)
    assert framed >= 6  # the hidden rows are framed (one frame per run of them)

    # the fraction-observed curves on request
    at.multiselect(key="kmc_methods").set_value(["kkmcex", "rrmcex"])
    at.button(key="kmc_curve").click().run(timeout=300)
    wait_page_job(at, "kmc_curves")
    _no_errors(at)
    curve = [s for s in plotly_specs(at) if any(
        "Held-out NMSE" in a.get("text", "") for a in s["layout"].get("annotations", []))]
    assert curve, _titles(at)
    names = {t["name"] for t in curve[0]["data"] if t.get("showlegend", True)}
    assert {"KKMCEX", "RRMCEX"} <= names
    # the spectra: F is the data (life expectancy is complete) and F-hat
    spectra = [s for s in plotly_specs(at) if s["layout"].get("yaxis", {}).get("type") == "log"
               and any(str(t.get("name", "")).startswith("F̂") for t in s["data"])]
    assert spectra and any(str(t["name"]).startswith("F, the data") for t in spectra[0]["data"])


@pytest.mark.slow
def test_gapminder_with_whole_countries_held_out_shows_cold_start():
    at = goto(new_session(), DATA)
    at.selectbox(key="data_builtin").set_value("gapminder").run()
    at.button(key="data_load_builtin").click().run()
    _no_errors(at)
    at.selectbox(key="data_split_by").set_value("cold_users")
    button = [b for b in at.button if b.label == "Apply split"][0]
    button.click().run()
    _no_errors(at)
    assert at.session_state[StateKeys.SPLIT].by == "cold_users"
    goto(at, TRAIN)
    at.selectbox(key="train_family").set_value("kmc").run()
    train_button(at).click().run()
    _no_errors(at)
    wait_job(at)
    assert at.session_state[StateKeys.JOB].status == "done"
    goto(at, COMPLETION)
    _no_errors(at)
    table = at.dataframe[0].value.set_index("part")
    assert table.loc["test", "entries"] == "all (every one cold start)"
    assert table.loc["test", "unpredictable"] == 0  # the region graph reaches every country
    assert table.loc["test", "nmse"] < table.loc["test", "mean_predictor_nmse"]
    truth = next(s for s in plotly_specs(at)
                 if s["layout"]["title"]["text"].startswith("Truth"))
    # one frame per run of cold-start rows; a quarter of the 80 rows shown, at least
    cold = set()
    for shape in truth["layout"]["shapes"]:
        cold |= set(range(int(shape["y0"] + 0.5), int(shape["y1"] + 0.5)))
    assert len(cold) >= 20
    yaxis = truth["layout"]["yaxis"]
    for pos, text in zip(yaxis["tickvals"], yaxis["ticktext"]):
        assert text.startswith("❄") == (pos in cold)


@pytest.mark.slow
@pytest.mark.parametrize("source", ["mixture", "row_kernel"])
def test_nystrom_page_scores_landmarks_and_error_curves(gapminder_run, source):
    at = goto(new_session(), NYSTROM)
    _no_errors(at)
    at.selectbox(key="kmc_ny_source").set_value(source).run()
    _no_errors(at)
    d_eff = [m for m in at.metric if m.label == "d_eff(α)"]
    assert d_eff and float(d_eff[0].value) > 0
    assert any(m.label == "Spearman ρ" for m in at.metric)
    assert any("landmarks (red)" in t for t in texts(at))
    # the entries' Kronecker scores only for a run's kernels
    assert any(m.label == "d_eff of the entries" for m in at.metric) == (source == "row_kernel")
    at.slider(key="kmc_ny_repeats").set_value(2)
    at.button(key="kmc_ny_curve").click().run(timeout=300)
    _no_errors(at)
    specs = [s for s in plotly_specs(at)
             if "trace error" in json.dumps(s["layout"].get("yaxis", {}))]
    assert specs
    names = {t.get("name") for t in specs[0]["data"] if t.get("name")}
    assert "uniform" in names and "ridge leverage (exact)" in names


def test_convergence_shows_a_kmc_runs_validation_nmse_against_the_mean(gapminder_run):
    """The Convergence page draws the family's headline validation metric (not only the
    KM defaults) with the mean predictor's dashed line in its panel."""
    from kmviz.viz.convergence import MEAN_PREDICTOR

    from .apphelpers import CONVERGENCE

    at = goto(new_session(), CONVERGENCE)
    _no_errors(at)
    (spec,) = plotly_specs(at)
    panels = [a.get("text", "") for a in spec["layout"].get("annotations", [])]
    assert any("Validation NMSE" in p for p in panels), panels
    assert any(t.get("name") == MEAN_PREDICTOR for t in spec["data"]), \
        [t.get("name") for t in spec["data"]]


@pytest.mark.slow
def test_nystrom_opens_on_a_kernel_that_is_not_flat(monkeypatch):
    """A run without side information has the identity plus the constant on both sides:
    every score alike. The page opens on the mixture instead and says why; the run's
    kernels stay in the list."""
    from kmviz import families
    from kmviz.data import load
    from kmviz.kmc import nystrom_view as nv

    monkeypatch.setenv("KMVIZ_SHARED_RUNS", "1")
    fam = families.get("kmc")
    data = load("planted-km", n_users=40, n_items=25)
    split = make_split(data, val_size=0.1, test_size=0.2, seed=0)
    params = {**fam.dataset_defaults(data, "planted-km").params, "max_iter": 20}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = fam.make(params).fit(split.train)
    save_run(model, split, dataset=data, label="planted kmc", store=RunStore())
    at = goto(new_session(), NYSTROM)
    _no_errors(at)
    source = at.selectbox(key="kmc_ny_source")
    assert source.value == "mixture"
    assert "the run's row kernel" in source.options  # (the options as the picker shows them)
    note = " ".join(i.value for i in at.info).replace("\\", "")
    assert "the run's row kernel gives all its rows one score" in note
    assert "identity plus the all-ones" in note
    # the scores shown are not flat
    largest = float(next(m.value for m in at.metric if m.label == "largest score"))
    median = float(next(m.value for m in at.metric if m.label == "median score"))
    assert largest > (1 + nv.FLAT_SPREAD) * median
    # a pick of the run's kernel is kept, and the note goes
    source.set_value("row_kernel").run()
    _no_errors(at)
    assert at.selectbox(key="kmc_ny_source").value == "row_kernel"
    assert not any("gives all its rows one score" in i.value for i in at.info)
