"""Similarity learning's defaults on given data (``Family.defaults_for``)."""

from ..data.catalogue import Suggestion, one_class_defaults


def defaults_for(ratings, dataset=None, options=None) -> Suggestion:
    """Similarity learning's defaults for ``ratings``: a positive threshold only for graded
    values (:func:`kmviz.data.catalogue.one_class_defaults`)."""
    return one_class_defaults(ratings)
