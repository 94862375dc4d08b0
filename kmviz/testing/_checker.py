"""The state the contract checks of one family share (:class:`FamilyChecker`)."""

from __future__ import annotations

import warnings
from functools import cached_property

from ._expect import expect


class FamilyChecker:
    """What the checks of one family share: its contract data and one fitted model, made on
    first use and kept (fitting once for the read-only checks)."""

    def __init__(self, family):
        self.family = family

    @property
    def owner(self) -> str:
        """The estimator's class name, for messages."""
        return self.family.estimator_class().__name__

    @cached_property
    def data(self):
        """``(whole dataset, split)`` of the family's contract data."""
        from ..data import load
        from ..data.splits import make_split

        spec = dict(self.family.contract_data)
        source = spec.pop("source")
        whole = load(source, **spec)
        split = make_split(whole, val_size=0.1, test_size=0.2, seed=0)
        sizes = {p: getattr(split, p).n_ratings for p in ("train", "validation", "test")}
        expect(all(sizes.values()),
               f"family {self.family.name!r}: its contract_data {self.family.contract_data} "
               f"splits into ratings per part {sizes}; a part is empty.",
               "give Family.contract_data a dataset of a few hundred ratings.")
        return whole, split

    @property
    def split(self):
        return self.data[1]

    def make(self, params: dict | None = None):
        return self.family.make({**self.family.quick_params, **(params or {})})

    def fit(self, params=None, **fit_kwargs):
        """A model with the quick settings (updated by ``params``) fitted on the training
        part, ConvergenceWarnings silenced; checks that fit returns the model."""
        from ..exceptions import ConvergenceWarning

        model = self.make(params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            out = model.fit(self.split.train, **fit_kwargs)
        expect(out is model, f"{self.owner}.fit returned {type(out).__name__}, not the model.",
               "end fit with `return self` (IterativeEstimator.fit does; an override must "
               "return what super().fit returns).")
        return model

    @cached_property
    def fitted(self):
        """One model fitted with validation, shared by the read-only checks."""
        return self.fit(validation=self.split.validation)
