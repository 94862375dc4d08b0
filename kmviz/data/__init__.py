"""Datasets: the Ratings container, loaders, built-in data, synthetic generators, splits."""

from .ratings import Ratings

__all__ = ["Ratings"]
