"""One-class data with planted two-tower structure (linear or nonlinear towers).

The generator lives with the other data generators, in :mod:`kmviz.data.synthetic` (the
catalogue's ``planted-towers`` set is drawn by it); this module keeps its names under the
family that uses it most.
"""

from ..data.synthetic import PlantedTowersTruth, make_planted_towers, planted_towers

__all__ = ["PlantedTowersTruth", "make_planted_towers", "planted_towers"]
