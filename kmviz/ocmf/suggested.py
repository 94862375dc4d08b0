"""One-class MF settings measured on catalogue datasets (the Train page offers them through
:func:`kmviz.data.suggested_settings`; the registry entry points here)."""

from ..data.catalogue import (
    PLANTED_KM_SHAPE,
    PLANTED_LOWRANK_SHAPE,
    PLANTED_TOWERS_SHAPE,
    Suggestion,
    one_class_defaults,
)

#: Catalogue dataset name -> the settings measured on it.
SUGGESTIONS = {
    "movielens-small": Suggestion(
        params={"threshold": 4.0, "a_bar": 0.0, "rho": 2.0 ** -7, "lambda_w": 1.0,
                "lambda_h": 1.0, "graph": "cointeraction", "lambda_g": 0.125,
                "random_state": 0},
        note="Ratings of 4 stars and more are the positives (the paper's protocol). The "
             "best of 40 settings of ā × ρ × λ on the validation part of the default "
             "split, then the co-interaction user graph on top "
             "(`python bench/ocmf/ocmf_suggested.py`): test p@5 19.8% against 17.6% for the "
             "family's defaults with the same threshold and 11.2% for the most popular "
             "movies. Pulling the unobserved entries to ā = 0 rather than the "
             "paper's −1 stops the model from pushing every user away from the "
             "average taste; it then wants a smaller ρ and λ. The genres and years "
             "as item features did not help here."),
    "planted-km": Suggestion(
        params={"a_bar": 0.0, "rho": 0.0625, "lambda_w": 0.25},
        options=PLANTED_KM_SHAPE,
        note="About 3 training positives a user (the top quarter of 30 % observed "
             "entries): the defaults shrink every user to the common taste and score below "
             "the popularity ranking. Of ā in {-1, 0} x ρ in {1/8, 1/16, 1/32} x λ_w in "
             "{4, 1, 1/4}, ā = 0, ρ = 1/16 (about the density of positives) and λ_w = 1/4 "
             "had the best validation p@5 over three seeds of the set: 1.24 x popularity's "
             "(the defaults 0.96 x), `python bench/data/small_set_settings.py --cells "
             "planted-km/ocmf`."),
    "planted-relations": Suggestion(
        params={"a_bar": 0.0, "rho": 0.03125, "lambda_w": 1.0},
        note="Rules planted among 1-5 stars, with a few popular items: the defaults score "
             "about as well as the popularity ranking (0.99 x its test p@5). Of ā in {-1, 0} "
             "x ρ in {1/8, 1/16, 1/32} x λ_w in {4, 1, 1/4}, ā = 0, ρ = 1/32 and λ_w = 1 had "
             "the best validation p@5 over three seeds of the set, 1.03 x popularity's: a "
             "small gain, since most of what these files hold is pairwise rules, which "
             "popularity among the antecedent's fans already ranks well; on the test part the "
             "two tie (`python bench/data/small_set_settings.py --cells planted-relations/ocmf`)."),
    "planted-lowrank": Suggestion(
        params={"side_features": "both"},
        options=PLANTED_LOWRANK_SHAPE,
        note="The factors are linear in the side features: users and items are embedded "
             "from identity and features (W maps the 6 features of each side). Best of the "
             "inputs x ā grid on validation over three seeds of the set: p@5 3.06 x "
             "popularity's (the defaults 0.99 x), `python bench/data/small_set_settings.py "
             "--cells planted-lowrank/ocmf`."),
    "planted-towers": Suggestion(
        params={"side_features": "both", "rho": 0.03125},
        options=PLANTED_TOWERS_SHAPE,
        note="The positives follow scores of the users' and items' features (the items in "
             "four groups): users and items are embedded from identity and features, with "
             "a light weight on the unobserved pairs (ρ = 1/32). Best of side features x ā "
             "x ρ on validation over three seeds of the set: p@5 2.32 x popularity's (the "
             "defaults 1.65 x), `python bench/data/small_set_settings.py --cells "
             "planted-towers/ocmf`."),
    "gapminder": Suggestion(
        params={"side_features": "item", "a_bar": 0.0, "rho": 0.25},
        options={"indicator": "life_expectancy"},
        note="Positives are life expectancies in the top quarter (≥ 73 years), mostly the "
             "latest years of each country, so the most popular years are already a "
             "strong ranking. The year as an item feature (with ā = 0 and ρ = 1/4) was the "
             "best of side features x ā x ρ on the validation parts of three other random "
             "splits: p@5 1.03 x popularity's (the defaults 0.99 x), `python "
             "bench/data/small_set_settings.py --cells gapminder/ocmf`."),
}



def defaults_for(ratings, dataset=None, options=None) -> Suggestion:
    """One-class MF's defaults for ``ratings`` (``Family.defaults_for``; the settings
    measured on a catalogue dataset go on top): a positive threshold only for graded values
    (:func:`kmviz.data.catalogue.one_class_defaults`)."""
    return one_class_defaults(ratings)
