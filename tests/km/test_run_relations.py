"""The relation miner on a run (the CLI's --run path and the Implications page's first
section): the run's KM settings reach the refits, its parts the right arguments."""

from types import SimpleNamespace

import numpy as np
import pytest

from kmviz.data.planted_relations import make_planted_relations
from kmviz.data.splits import make_split
from kmviz.km import KolmogorovModel
from kmviz.km.relations import FIT_ITER
from kmviz.km.run_relations import mine_run_relations, run_warnings, settings_of_run
from kmviz.trace import Trace


def _run(model):
    ratings, truth = make_planted_relations(n_users=80, n_items=14, n_rules=2, n_chains=0,
                                            n_conjunctive=0, random_state=3)
    split = make_split(ratings, val_size=0.1, test_size=0.0, seed=0)
    return SimpleNamespace(run_id="r1", model=model, split=split, problem=None), truth


def test_settings_of_run_takes_the_models_parameters():
    model = KolmogorovModel(D=5, lambda_theta=0.5, max_iter=99, random_state=7)
    got = settings_of_run(SimpleNamespace(model=model))
    assert got["D"] == 5 and got["lambda_theta"] == 0.5
    assert got["max_iter"] == FIT_ITER  # the refits' budget, not the run's
    assert "random_state" not in got
    assert settings_of_run(SimpleNamespace(model=None)) is None
    assert settings_of_run(SimpleNamespace(model=object())) is None


def test_a_fit_no_better_than_the_mean_is_said_beside_the_relations():
    trace = Trace("bcd")
    trace.event("warning", "KM's validation NRMSE 0.31 is no better than predicting the "
                "training mean (0.30): ... Fix: set lambda_theta = 1.")
    trace.event("warning", "something else")
    trace.event("stop", "no better than predicting, but not a warning")
    got = run_warnings(SimpleNamespace(model=SimpleNamespace(trace_=trace)))
    assert len(got) == 1 and "0.31" in got[0] and "lambda_theta = 1" in got[0]
    assert run_warnings(SimpleNamespace(model=SimpleNamespace(trace_=Trace("bcd")))) == []
    assert run_warnings(SimpleNamespace(model=None)) == []


def test_no_data_is_a_clear_error():
    with pytest.raises(ValueError, match="no data here"):
        mine_run_relations(SimpleNamespace(split=None, problem="no data here", run_id="x"))


@pytest.mark.slow
def test_mines_the_training_part_with_the_runs_settings_and_validation():
    from kmviz.km.relations import mine_relations

    run, truth = _run(KolmogorovModel(D=4, random_state=0))
    got = mine_run_relations(run, n_refits=2, max_antecedent=1)
    assert got.attrs["chosen"]["settings"]["D"] == 4
    assert got.attrs["chosen"]["summary"].startswith(
        "settings given by the caller (the run's KM: D=4, lambda_theta=0). 2 refits")
    assert "heldout_confidence" in got  # the validation part gave held-out columns
    want = mine_relations(run.split.train, n_refits=2, max_antecedent=1,
                          validation=run.split.validation, settings=settings_of_run(run))
    assert list(got["antecedent"]) == list(want["antecedent"])
    assert np.allclose(got["score"], want["score"], equal_nan=True)
    top = {(tuple(a), int(c)) for a, c in zip(got["antecedent"][:3], got["consequent"][:3])}
    assert top & truth.keys()


@pytest.mark.slow
def test_a_run_no_better_than_the_mean_lets_the_miner_choose_its_settings():
    run, truth = _run(KolmogorovModel(D=4, random_state=0))
    run.model.trace_ = Trace("bcd")
    run.model.trace_.event("warning", "KM's validation NRMSE 0.5 is no better than "
                                      "predicting the training mean (0.4): ...")
    got = mine_run_relations(run, n_refits=2, max_antecedent=1)
    chosen = got.attrs["chosen"]
    assert not chosen["summary"].startswith("settings given by the caller")
    assert any("the miner chose its own" in w for w in chosen["warnings"])
    top = {(tuple(a), int(c)) for a, c in zip(got["antecedent"][:3], got["consequent"][:3])}
    assert top & truth.keys()
