"""Kolmogorov model: the estimator, the binary QP solvers and the interpretation tools.

``KolmogorovModel`` learns ``P(X_ui = 1) = theta_u^T psi_i``; ``solve_bqp`` solves one item's
binary QP (4); ``influence_scores`` and ``implication_graph`` read the logical relations
("everyone who likes A also likes B") out of the learned supports; ``mine_implications``
checks and ranks them against the ratings (association rules: :mod:`kmviz.rules`);
``stable_implications`` refits the model on resampled users and keeps the implications that
hold across the refits, ranked by their out-of-bag evidence; ``mine_relations`` is the
relation miner's default path (settings chosen on validation, pairs and {a, b} => c
conjunctions, stability and the data's evidence in one ranking) and ``closure`` says what
follows from liking a set of items.
"""

from . import solvers
from .solvers import solve_bqp
from .estimator import KolmogorovModel

from . import _kernels

#: The modules under their names before the family template: the BQP solvers
#: (kmviz.km.solvers) and the Numba kernels (kmviz.km._kernels).
bqp = solvers
kernels = _kernels
from .interpret import (
    implication_graph,
    implication_precision,
    implications_frame,
    implied_by_liking,
    implies,
    influence_scores,
    relation_mining_accuracy,
    support_matrix,
)
from .mining import filter_implications, mine_implications, planted_truth, support_groups
from .conjunctive import closure
from .relations import mine_relations
from .stability import stable_implications


__all__ = [
    "KolmogorovModel",
    "solve_bqp",
    "influence_scores",
    "implication_graph",
    "implication_precision",
    "implications_frame",
    "implied_by_liking",
    "implies",
    "relation_mining_accuracy",
    "support_matrix",
    "mine_implications",
    "filter_implications",
    "support_groups",
    "planted_truth",
    "stable_implications",
    "mine_relations",
    "closure",
]
