"""One-class matrix factorization with side information (Yu, Huang, Dhillon & Lin, AAAI 2017).

``OneClassMF`` learns ``s_ij = (W^T x_i)^T (W_2^T z_j)`` from observed positives only, with a
convex loss on the positives and a weighted squared loss on ALL other m x n entries, by
alternating TRON (or gradient descent) over W and W_2. Around it:

- :mod:`kmviz.ocmf.allpairs`: the all-pairs terms (loss split, Gramians, gradients, block
  Hessian and joint Gauss-Newton products in embedding space), reusable by any dot-product
  model, linear or not (the extreme-similarity paper's setting);
- :mod:`kmviz.ocmf.problem` and :mod:`kmviz.ocmf.solvers`: one block as a convex problem and
  its solvers (TRON with LIBLINEAR's constants, gradient descent with backtracking);
- :mod:`kmviz.ocmf.features`: side matrices ``X = [I | F]``, feature encoding, user graphs;
- :mod:`kmviz.ocmf.synthetic`: planted positive-unlabeled data with known feature effects;
- :mod:`kmviz.ocmf.splits`: cold-start splits, user groups, the popularity baseline.
"""

from ..pairs import ObservedPairs, weighted_gram
from .allpairs import AllPairsLoss, AllPairsValue, BlockTerms
from .estimator import Explanation, OneClassMF
from .features import (
    SideMatrix,
    check_feature_matrix,
    cointeraction_graph,
    encode_features,
    knn_graph,
    laplacian,
)
from .losses import LOSSES
from .problem import BlockProblem
from .splits import (
    cold_item_split,
    cold_user_split,
    popularity_scores,
    restrict_items,
    restrict_users,
    user_groups,
)
from .synthetic import PlantedPUTruth, make_planted_pu, planted_pu
from .solvers import SolverResult, gradient_descent, tron

__all__ = [
    "OneClassMF",
    "Explanation",
    "AllPairsLoss",
    "AllPairsValue",
    "BlockTerms",
    "ObservedPairs",
    "weighted_gram",
    "BlockProblem",
    "SolverResult",
    "tron",
    "gradient_descent",
    "LOSSES",
    "SideMatrix",
    "check_feature_matrix",
    "cointeraction_graph",
    "encode_features",
    "knn_graph",
    "laplacian",
    "PlantedPUTruth",
    "make_planted_pu",
    "planted_pu",
    "cold_item_split",
    "cold_user_split",
    "popularity_scores",
    "restrict_items",
    "restrict_users",
    "user_groups",
]
