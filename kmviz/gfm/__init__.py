"""Generalized factorization machine (gFM): One-Pass gFM of Lin & Ye (NIPS 2016).

``GeneralizedFM`` learns ``y = b + x^T w + x^T M x`` with a symmetric rank-k M (no PSD
constraint) from a stream of fresh mini-batches, in O(kd) memory and with matrix-vector
products only (:mod:`kmviz.gfm.onepass`). Around it: the matrix-free sensing operators
(:mod:`kmviz.gfm.operators`), the recovery errors against a planted truth
(:mod:`kmviz.gfm.recovery`), the synthetic generator and presets
(:mod:`kmviz.gfm.synthetic`) and the baselines (:mod:`kmviz.gfm.baselines`: alternating
least squares on eq. (3) and the exact second-order least squares). ``solver="als"`` runs
eq. (3) with a ridge inside the estimator (:mod:`kmviz.gfm.als`), the solver for real data;
:mod:`kmviz.gfm.analysis` and :mod:`kmviz.gfm.figures` serve the app's Recovery and
Interactions pages.
The estimator's plumbing: :mod:`kmviz.gfm.batching` (the data forms, the FM design of
ratings, the mini-batches), :mod:`kmviz.gfm._state` (the fit state) and :mod:`kmviz.gfm.solvers` (one batch, one ALS pass)
and :mod:`kmviz.gfm.lowrank` (the learned M from its factors).
"""

from .data import RegressionData, as_regression
from .estimator import GeneralizedFM
from .operators import ChunkedBatch, Standardizer, adjoint_apply, quadratic_form
from .recovery import Truth, as_truth, recovery_errors, tan_theta
from .synthetic import PRESETS, GFMProblem, GFMStream, make_gfm, make_preset, planted_truth

__all__ = [
    "GeneralizedFM",
    "RegressionData",
    "as_regression",
    "ChunkedBatch",
    "Standardizer",
    "adjoint_apply",
    "quadratic_form",
    "Truth",
    "as_truth",
    "recovery_errors",
    "tan_theta",
    "PRESETS",
    "GFMProblem",
    "GFMStream",
    "make_gfm",
    "make_preset",
    "planted_truth",
]
