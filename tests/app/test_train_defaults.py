"""Train page (issue 20): the form starts from the family's defaults for the dataset, resets
when the data changes and on request, refuses data a family cannot use before the click,
and shows a fit's warnings with a one-click change."""

import os
import time

import numpy as np
import pytest

from kmviz import families
from kmviz.data import suggested_settings
from kmviz.ui.state import StateKeys

from .apphelpers import (TRAIN, button, goto, load_builtin, load_planted, new_session,
                         only_run, pick_family, plain_text, submit_train, texts, train)


def _all_text(at) -> str:
    return " ".join(texts(at)) + " ".join(c.value for c in at.caption)


def test_the_form_follows_the_dataset_and_says_so():
    at = new_session()
    load_builtin(at, "gapminder")
    pick_family(at, "kmc")
    wanted = suggested_settings("gapminder", "kmc").params
    assert at.number_input(key="train_kmc_mu").value == wanted["mu"]
    at.session_state["train_kmc_mu"] = 0.5  # the user's change, on Gapminder
    at.run()
    load_planted(at)
    goto(at, TRAIN)
    # not carried over: planted-km's defaults (no side information: constant kernel, mu 3)
    assert at.number_input(key="train_kmc_mu").value == 3.0
    assert at.checkbox(key="train_kmc_add_constant").value is True
    assert "were not kept" in _all_text(at)
    at.session_state["train_kmc_mu"] = 0.7
    at.run()
    button(at, "Reset to defaults").click().run()
    assert not at.exception, at.exception
    assert at.number_input(key="train_kmc_mu").value == 3.0


def test_a_family_that_cannot_use_the_data_says_so_before_the_click():
    at = new_session()
    load_builtin(at, "boston")
    pick_family(at, "km")
    assert any("cannot use this dataset" in e.value and "1 item" in e.value
               for e in at.error)


def test_a_fit_warning_shows_with_a_button_that_makes_the_change():
    at = new_session()
    load_planted(at)
    train(at, D=3, max_iter=1, tol=1e-12)
    run = only_run(at)
    assert run.stop_reason == "max_iter"
    assert any("stopped at max_iter=1" in plain_text(w.value) for w in at.warning)
    button(at, "Set max BCD iterations = 2").click().run()
    assert not at.exception, at.exception
    assert at.number_input(key="train_km_max_iter").value == 2
    assert at.number_input(key="train_km_D").value == 3  # the other settings stay
    assert any("The change is in the form" in i.value for i in at.info)


@pytest.mark.slow
def test_a_measured_setting_beyond_the_forms_bound_is_kept_and_used():
    """gFM's measured 300 ALS passes on Boston lie past the form's 200 (``form_high``):
    the box widens to hold them and the fit uses them (it ran 1 pass before)."""
    spec = families.get("gfm").constraints()["n_passes"]
    measured = suggested_settings("boston", "gfm").params["n_passes"]
    assert spec.form_high < measured <= spec.high
    at = new_session()
    load_builtin(at, "boston")
    pick_family(at, "gfm")
    assert at.number_input(key="train_gfm_n_passes").value == measured
    submit_train(at, {})
    run = only_run(at)
    assert run.params["n_passes"] == measured and run.stop_reason == "converged"


@pytest.mark.slow
def test_a_warning_proposes_no_change_that_would_undo_the_measured_settings():
    """gFM on MovieLens latest-small (the app's default data): its measured settings keep
    the 10 passes, which stop before the tolerance on purpose (more passes fit the noise),
    so the warning shows without the 'Set passes = 20' button and says why."""
    at = pick_family(new_session(), "gfm")
    assert suggested_settings("movielens-small", "gfm").params["n_passes"] == 10
    submit_train(at, {})
    run = only_run(at)
    assert run.stop_reason == "max_iter"
    assert any("stopped at n_passes=10" in plain_text(w.value) for w in at.warning)
    assert not [b for b in at.button if b.label.startswith("Set ")]
    assert any("measured on this dataset keep" in c.value and "= 10" in c.value
               for c in at.caption)


@pytest.mark.slow
def test_kernel_mc_as_it_comes_on_the_default_data_beats_the_mean_within_a_minute():
    at = new_session()  # the built-in default: MovieLens latest-small
    pick_family(at, "kmc")
    start, cpu = time.time(), time.process_time()
    submit_train(at, {}, wait=True, timeout=240)
    elapsed, cpu = time.time() - start, time.process_time() - cpu
    load = os.getloadavg()[0]
    run = only_run(at)
    train_values = np.asarray(run.split.train.values)
    test_values = np.asarray(run.split.test.values)
    mean_rmse = float(np.sqrt(np.mean((test_values - train_values.mean()) ** 2)))
    assert run.metrics["test_rmse"] < mean_rmse, (run.metrics, mean_rmse)
    # within a minute of the click; on a box shared past its cores (the fit then waits for
    # them), within a minute of the process's CPU time
    assert elapsed <= 60 or (load > os.cpu_count() and cpu <= 60), (elapsed, cpu, load)
    assert not at.warning, [w.value for w in at.warning]
    load_builtin(at, "gapminder")
    goto(at, TRAIN)
    wanted = {**families.get("kmc").default_params(),
              **suggested_settings("gapminder", "kmc").params}
    assert at.number_input(key="train_kmc_mu").value == wanted["mu"]
    assert at.selectbox(key="train_kmc_graph_kernel").value == wanted["graph_kernel"]
    assert at.number_input(key="train_kmc_eta").value == wanted["eta"]
