"""The Kolmogorov model's defaults on given data (``Family.defaults_for``)."""

from ..data.catalogue import Suggestion


def defaults_for(ratings, dataset=None, options=None) -> Suggestion:
    """KM's defaults for ``ratings``: the estimator's own. KM learns each user's θ from
    that user's ratings of other items, so data with a single item (a regression set such
    as Boston, whose held-out users have no other rating) is refused: it cannot beat the
    mean there."""
    if ratings.n_items < 2:
        raise ValueError(f"it has {ratings.n_items} item: KM learns a user from their "
                         "ratings of other items, and a held-out user here has none (use a "
                         "family that reads side features, such as gFM or Kernel MC)")
    return Suggestion(params={}, note="The paper's defaults.")
