"""Generalized FM settings measured on catalogue datasets (the Train page offers them through
:func:`kmviz.data.suggested_settings`; the registry entry points here)."""

from ..data.catalogue import Suggestion

#: Catalogue dataset name -> the settings measured on it.
SUGGESTIONS = {
    "km-toy": Suggestion(
        params={"l2": 1.0},
        note="km-toy is independent U[0, 1] noise, where no model beats the training mean "
             "in expectation; the ridge weight with the lowest validation RMSE of 0.01, 1, "
             "10 and 100 (three seeds of the set, `python bench/data/small_set_settings.py "
             "--cells km-toy/gfm`) keeps the fit at the mean (ratio 1.000) where the "
             "default 0.01 fits the noise."),
}
