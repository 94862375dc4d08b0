"""The Kolmogorov model's defaults on given data (``Family.defaults_for``) and the settings
measured on catalogue datasets (``Family.suggestions``)."""

from ..data.catalogue import PLANTED_LOWRANK_SHAPE, Suggestion, check_values_vary

#: Catalogue dataset name -> the settings measured on it (chosen on validation parts only:
#: ``python bench/data/small_set_settings.py``).
SUGGESTIONS = {
    "movielens-small": Suggestion(
        params={"lambda_theta": 100.0},
        note="With the paper's λᵤ = 0 each θᵤ follows its own ratings and KM's validation "
             "RMSE only equals the training mean's (1.002 x). Pulling every θᵤ toward "
             "uniform, λᵤ = 100 had the lowest validation RMSE of λᵤ in {0, 1, 10, 100, 300, "
             "1000} on three other random splits (0.919 x the mean's, 0.911-0.927) and fits "
             "in about half the time (fewer BCD iterations); D = 16 with it was better still "
             "(0.961 against 0.978 on one split) but took 50 s at load 12. `python "
             "bench/data/small_set_settings.py --cells movielens-small/km`."),
    "km-toy": Suggestion(
        params={"D": 2, "lambda_theta": 100.0},
        note="km-toy is the paper's D1, independent U[0, 1] noise (the paper only trains on "
             "it): no model beats the training mean there in expectation. Of D in {8, 2} x "
             "λᵤ in {0, 1, 10, 100}, D = 2 with a strong pull of each θᵤ toward uniform had "
             "the lowest validation RMSE over three seeds of the set (1.003 x the mean's; "
             "the defaults 1.25 x), `python bench/data/small_set_settings.py --cells km-toy/km`."),
    "planted-lowrank": Suggestion(
        params={"lambda_theta": 1.0},
        options=PLANTED_LOWRANK_SHAPE,
        note="Real values of both signs from a rank-5 model with about 28 training ratings "
             "a user: with λᵤ = 0 each θᵤ follows its own ratings too closely (validation "
             "RMSE 0.78 x the mean's). Of D in {8, 4, 16} x λᵤ in {0, 1, 3, 10}, D = 8 and "
             "λᵤ = 1 had the lowest validation RMSE over three seeds of the set (0.62 x the "
             "mean's), `python bench/data/small_set_settings.py --cells planted-lowrank/km`."),
}


def defaults_for(ratings, dataset=None, options=None) -> Suggestion:
    """KM's defaults for ``ratings``: the estimator's own. KM learns each user's θ from
    that user's ratings of other items, so data with a single item (a regression set such
    as Boston, whose held-out users have no other rating) is refused: it cannot beat the
    mean there."""
    if ratings.n_items < 2:
        raise ValueError(f"it has {ratings.n_items} item: KM learns a user from their "
                         "ratings of other items, and a held-out user here has none (use a "
                         "family that reads side features, such as gFM or Kernel MC)")
    check_values_vary(ratings)
    return Suggestion(params={}, note="The paper's defaults.")
