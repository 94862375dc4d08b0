"""The app's Train path builds the estimator once and hands it to the job (issue 31, item 2:
"the validated model handed to the job, not rebuilt"). Oracle: a count of the family's
``make`` calls and the identity of the fitted object."""

import pytest

from kmviz import families
from kmviz.data.synthetic import make_planted_km

pytestmark = pytest.mark.filterwarnings("ignore::kmviz.exceptions.ConvergenceWarning")


def test_the_training_job_fits_the_model_it_was_handed(monkeypatch):
    """The app's Train path builds the estimator once (start_job) and the job fits that very
    object: neither the progress bar nor the job's thread builds another one."""
    from kmviz.data.splits import make_split
    from kmviz.ui.training import TrainingJob

    ratings, _ = make_planted_km(40, 25, 3, random_state=2)
    split = make_split(ratings)
    params = {"D": 3, "max_iter": 2, "tol": 0.0, "random_state": 0}
    model = families.get("km").make(params)
    made = []
    fam = type(families.get("km"))
    make = fam.make
    monkeypatch.setattr(fam, "make", lambda self, p=None: made.append(p) or make(self, p))
    job = TrainingJob("km", params, split, dataset_name=ratings.name, fingerprint="x",
                      save=False, model=model)
    assert job.progress()["max_iter"] == 2
    job.start().thread.join()
    assert job.status == "done", job.progress()["message"]
    assert job.result.model is model and model.n_iter_ == 2
    assert made == []
    # without a model (a job made elsewhere) it still builds one from the settings
    other = TrainingJob("km", params, split, dataset_name=ratings.name, fingerprint="x",
                        save=False).start()
    other.thread.join()
    assert other.status == "done" and other.result.model is not model and len(made) == 2
