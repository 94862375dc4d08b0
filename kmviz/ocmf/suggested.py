"""One-class MF settings measured on catalogue datasets (the Train page offers them through
:func:`kmviz.data.suggested_settings`; the registry entry points here)."""

from ..data.catalogue import Suggestion, one_class_defaults

#: Catalogue dataset name -> the settings measured on it.
SUGGESTIONS = {
    "movielens-small": Suggestion(
        params={"threshold": 4.0, "a_bar": 0.0, "rho": 2.0 ** -7, "lambda_w": 1.0,
                "lambda_h": 1.0, "graph": "cointeraction", "lambda_g": 0.125,
                "random_state": 0},
        note="Ratings of 4 stars and more are the positives (the paper's protocol). The "
             "best of 40 settings of ā × ρ × λ on the validation part of the default "
             "split, then the co-interaction user graph on top "
             "(`python bench/ocmf_suggested.py`): test p@5 19.8% against 17.6% for the "
             "family's defaults with the same threshold and 11.2% for the most popular "
             "movies. Pulling the unobserved entries to ā = 0 rather than the "
             "paper's −1 stops the model from pushing every user away from the "
             "average taste; it then wants a smaller ρ and λ. The genres and years "
             "as item features did not help here."),
}



def defaults_for(ratings, dataset=None, options=None) -> Suggestion:
    """One-class MF's defaults for ``ratings`` (``Family.defaults_for``; the settings
    measured on a catalogue dataset go on top): a positive threshold only for graded values
    (:func:`kmviz.data.catalogue.one_class_defaults`)."""
    return one_class_defaults(ratings)
