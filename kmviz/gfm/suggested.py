"""Generalized FM settings measured on catalogue datasets (the Train page offers them through
:func:`kmviz.data.suggested_settings`; the registry entry points here)."""

from ..data.catalogue import Suggestion, check_values_vary

#: Catalogue dataset name -> the settings measured on it.
SUGGESTIONS = {
    "km-toy": Suggestion(
        params={"l2": 1.0},
        note="km-toy is independent U[0, 1] noise, where no model beats the training mean "
             "in expectation; the ridge weight with the lowest validation RMSE of 0.01, 1, "
             "10 and 100 (three seeds of the set, `python bench/data/small_set_settings.py "
             "--cells km-toy/gfm`) keeps the fit at the mean (ratio 1.000) where the "
             "default 0.01 fits the noise."),
    "movielens-small": Suggestion(
        params={"n_passes": 10},
        note="At 10 ALS passes the fit stops before its tolerance is met (the page warns "
             "so), and here that early stop is what predicts best: of 10, 50 and 300 passes "
             "x the ridge 0.01, 1 and 10, on the validation parts of three other random "
             "splits, 10 passes with 0.01 had the lowest RMSE (0.833 of the training mean's; "
             "50 passes 0.842, 300 passes 0.849): later passes fit the training noise "
             "(`python bench/data/small_set_settings.py --cells movielens-small/gfm`)."),
    "boston": Suggestion(
        params={"n_passes": 300},
        note="At the default 10 ALS passes the fit stops before its tolerance is met (the "
             "page warns so); with up to 300 it converges, in about 100 passes and well "
             "under a second, and its validation RMSE is 0.388 of the training mean's "
             "against 0.404 (mean of three splits; `python bench/data/small_set_settings.py "
             "--cells boston/gfm`, the ridge 0.01, 1 and 10 tried too)."),
}


def defaults_for(ratings, dataset=None, options=None) -> Suggestion:
    """gFM's defaults for ``ratings``: the estimator's own; data whose values are all the
    same (one-class positives) are refused, with the fixes
    (:func:`kmviz.data.catalogue.check_values_vary`)."""
    check_values_vary(ratings)
    return Suggestion(params={}, note="The estimator's defaults.")
