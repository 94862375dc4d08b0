"""Similarity learning with nonlinear embeddings over all m x n pairs (Yuan et al., KDD 2021).

- :class:`SimilarityLearning`: the estimator (two towers, seven solvers);
- :mod:`~kmviz.similarity.towers`: identity / linear / MLP towers with forward, VJP, JVP;
- :mod:`~kmviz.similarity.allpairs`: the function, gradient and Gauss-Newton products in
  O(|O| k + (m + n) k^2 + tower passes);
- :mod:`~kmviz.similarity.solvers`: Gauss-Newton + CG, GD, GD-diag, SOGram, Sampling and
  their -diag variants;
- :mod:`~kmviz.similarity.synthetic`: one-class data with planted (nonlinear) towers;
- :mod:`~kmviz.similarity.analysis`: embeddings in 2-D, neighbours, tower layers, cold scores.

Names are imported on first use, so that importing the package (the registry reads its
modules at start-up) does not import Numba.
"""

from importlib import import_module

_EXPORTS = {
    "AllPairsProblem": "allpairs", "ObservedPairs": ".pairs",
    "constant_imputation": "allpairs", "SimilarityLearning": "estimator",
    "relative_objective_difference": "estimator", "SOLVERS": "solvers",
    "IdentityTower": "towers", "LinearTower": "towers", "MLPTower": "towers",
    "make_tower": "towers", "tower_input": "towers",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
