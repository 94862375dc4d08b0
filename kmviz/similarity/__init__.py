"""Similarity learning with nonlinear embeddings over all m x n pairs (Yuan et al., KDD 2021).

- :class:`SimilarityLearning`: the estimator (two towers, seven solvers);
- :mod:`~kmviz.similarity.towers`: identity / linear / MLP towers with forward, VJP, JVP;
- :mod:`~kmviz.similarity.allpairs`: the function, gradient and Gauss-Newton products in
  O(|O| k + (m + n) k^2 + tower passes);
- :mod:`~kmviz.similarity.solvers`: Gauss-Newton + CG, GD, GD-diag, SOGram, Sampling and
  their -diag variants;
- :mod:`~kmviz.similarity.synthetic`: one-class data with planted (nonlinear) towers;
- :mod:`~kmviz.similarity.analysis`: embeddings in 2-D, neighbours, tower layers, cold scores.
"""

from .allpairs import AllPairsProblem, ObservedPairs, constant_imputation
from .estimator import SimilarityLearning, relative_objective_difference
from .solvers import SOLVERS
from .towers import IdentityTower, LinearTower, MLPTower, make_tower, tower_input

__all__ = ["AllPairsProblem", "IdentityTower", "LinearTower", "MLPTower", "ObservedPairs",
           "SOLVERS", "SimilarityLearning", "constant_imputation", "make_tower",
           "relative_objective_difference", "tower_input"]
