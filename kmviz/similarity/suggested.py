"""Similarity learning's defaults on given data (``Family.defaults_for``) and the settings
measured on catalogue datasets (``Family.suggestions``)."""

from ..data.catalogue import (
    PLANTED_KM_SHAPE,
    PLANTED_LOWRANK_SHAPE,
    PLANTED_TOWERS_SHAPE,
    Suggestion,
    one_class_defaults,
)

#: Catalogue dataset name -> the settings measured on it (chosen on validation parts only:
#: ``python bench/data/small_set_settings.py``). With identity towers the objective is one-class
#: MF's with rho = omega / 2, a_bar = imputed and lambda_w = lambda_h = lambda_theta / 2.
SUGGESTIONS = {
    "planted-km": Suggestion(
        params={"imputed": 0.0, "omega": 0.125, "lambda_theta": 2.0},
        options=PLANTED_KM_SHAPE,
        note="About 3 training positives a user: the defaults shrink every user to the "
             "common taste. Of Ỹ in {-1, 0} x ω in {1/4, 1/8} x λ in {8, 2}, Ỹ = 0, "
             "ω = 1/8 and λ = 2 had the best validation p@5 over three seeds of the set: "
             "1.18 x popularity's (the defaults 0.96 x), `python bench/data/small_set_settings.py "
             "--cells planted-km/similarity`."),
    "planted-lowrank": Suggestion(
        params={"imputed": 0.0, "user_tower": "linear", "item_tower": "linear",
                "side_features": "both", "user_ids": "none"},
        options=PLANTED_LOWRANK_SHAPE,
        note="The factors are linear in the side features: linear towers, users from their "
             "features alone, items from id and features. Best of the inputs x Ỹ grid on "
             "validation over three seeds of the set: p@5 2.90 x popularity's (the "
             "defaults 0.99 x), `python bench/data/small_set_settings.py --cells "
             "planted-lowrank/similarity`."),
    "planted-towers": Suggestion(
        params={"omega": 0.0625, "user_tower": "linear", "item_tower": "linear",
                "side_features": "both", "max_iter": 100},
        options=PLANTED_TOWERS_SHAPE,
        note="The positives follow planted two-tower scores of the side features (the items "
             "in four groups): linear towers over ids and features, with ω = 1/16 on the "
             "other pairs. Best of identity, linear and mlp:64 towers x Ỹ x ω on validation "
             "over three seeds of the set: p@5 2.31 x popularity's (mlp:64 towers 2.26 x, "
             "the defaults 1.64 x), `python bench/data/small_set_settings.py --cells "
             "planted-towers/similarity`. Up to 100 Gauss-Newton iterations: one seed needs "
             "32, past the default 30."),
    "gapminder": Suggestion(
        params={"imputed": 0.0, "omega": 0.5, "item_tower": "linear",
                "side_features": "item"},
        options={"indicator": "life_expectancy"},
        note="Positives are life expectancies in the top quarter (≥ 73 years), mostly the "
             "latest years of each country, so the most popular years are already a "
             "strong ranking. A linear item tower over the year (with Ỹ = 0, ω = 1/2) was "
             "the best of inputs x Ỹ x ω on the validation parts of three other random "
             "splits: p@5 1.03 x popularity's (the defaults 1.01 x), `python "
             "bench/data/small_set_settings.py --cells gapminder/similarity`."),
}


def defaults_for(ratings, dataset=None, options=None) -> Suggestion:
    """Similarity learning's defaults for ``ratings``: a positive threshold only for graded
    values (:func:`kmviz.data.catalogue.one_class_defaults`)."""
    return one_class_defaults(ratings)
