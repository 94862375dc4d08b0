"""Every registered family's fit records a replay history through the shared loop: the
kept iterations rebuild (by the family's own ``_from_fitted_arrays``) a model whose fitted
arrays equal, bit for bit, those of a fit of the same settings stopped at that iteration
(``max_iter`` = t) where the family declares ``max_iter``, and the last one equals the
fitted model itself."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from kmviz import families
from kmviz.history import History, recording
from kmviz.testing import FamilyChecker

FAMILIES = families.all_families()
pytestmark = pytest.mark.slow   # one fit per family (and one per replayed iteration)


def _same(a: dict, b: dict) -> bool:
    return sorted(a) == sorted(b) and all(
        np.asarray(a[k]).dtype == np.asarray(b[k]).dtype
        and np.asarray(a[k]).tobytes() == np.asarray(b[k]).tobytes() for k in a)


@pytest.mark.parametrize("family", FAMILIES, ids=[f.name for f in FAMILIES])
def test_each_family_replays_its_iterations(family):
    c = FamilyChecker(family)
    history = History()
    with recording(history), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = c.make().fit(c.split.train, validation=c.split.validation)
    assert model.history_ is history and history.n_seen == model.trace_.n_iter
    assert len(history) == model.trace_.n_iter, history.note   # small data: all kept
    last = history.iterations[-1]
    assert _same(history.model_at(model, last)._fitted_arrays(), model._fitted_arrays())
    if "max_iter" not in type(model)._parameter_constraints or model.trace_.n_iter < 2:
        return
    t = history.iterations[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        short = c.make({"max_iter": t}).fit(c.split.train, validation=c.split.validation)
    assert _same(history.model_at(model, t)._fitted_arrays(), short._fitted_arrays())


def test_km_history_on_a_dask_cluster_equals_the_in_process_one():
    """In-process vs distributed: the history recorded while the half-steps run on Dask
    worker threads holds, iteration by iteration, the arrays of the in-process fit."""
    pytest.importorskip("distributed")
    import kmviz
    from kmviz.data.synthetic import make_planted_km
    from kmviz.km import KolmogorovModel

    data, _ = make_planted_km(80, 30, 4, noise=0.05, observed=0.4, random_state=2)
    here, there = History(), History()
    with recording(here), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        KolmogorovModel(4, max_iter=3, tol=0.0, random_state=7).fit(data)
    with kmviz.parallel_backend("dask", client="threads:2", n_blocks=3), \
            recording(there), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        KolmogorovModel(4, max_iter=3, tol=0.0, random_state=7).fit(data)
    assert here.iterations == there.iterations == [1, 2, 3]
    for t in here.iterations:
        assert _same(here.arrays_at(t), there.arrays_at(t)), t
