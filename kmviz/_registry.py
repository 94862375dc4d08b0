"""The family registry's machinery: :class:`Family` and :class:`ExplorePage`, registration,
the installed distributions' entry points and the lookups (:func:`get`, :func:`all_families`,
:func:`family_of` ...).

:mod:`kmviz.families` re-exports every name of it and registers kmviz's own families; import
them from there. This module names no family (``tests/test_layout.py``): it is the generic
part of the registry, the entries are ``families.py``'s.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from dataclasses import dataclass, field

from .exceptions import InvalidParameterError

#: The entry-point group through which installed distributions add families.
ENTRY_POINT_GROUP = "kmviz.families"


class FamilyLoadWarning(UserWarning):
    """An installed family (entry point) could not be loaded; the app runs without it."""


def _import_object(spec: str, what: str):
    """The object named by ``"module:attribute"`` (the attribute may be dotted)."""
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"{what} must be 'module:name'; got {spec!r}.")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class ExplorePage:
    """One page of a family's Explore section.

    ``path`` is either a file of the app (``"app_pages/km_dual.py"``) or a function of the
    family's package (``"toyfamily.pages:explore"``, called with no arguments to render the
    page; what a family installed on its own uses, since it has no file under the app).
    """

    path: str
    title: str
    icon: str = ":material/insights:"

    @property
    def is_function(self) -> bool:
        """Whether the page is a function (``"module:function"``) rather than a file."""
        return ":" in self.path and not self.path.endswith(".py")

    @property
    def url_path(self) -> str:
        """The page's URL path in the app: the file's stem, or the function's name."""
        if self.is_function:
            return self.path.rpartition(":")[2].rpartition(".")[2].replace("_", "-")
        return self.path.rsplit("/", 1)[-1].removesuffix(".py")

    def target(self):
        """What ``st.Page`` takes: the file path, or the function (imported now)."""
        return _import_object(self.path, "an Explore page") if self.is_function else self.path


#: Longest sidebar heading (``Family.short_title``) that Streamlit shows uncut.
SHORT_TITLE_MAX = 24


#: Most settings beyond ``label_params`` named in a run's default label.
LABEL_EXTRAS = 4


def _label_value(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Family:
    """One model family.

    Attributes
    ----------
    name, title : str
        The key (``kmviz train NAME``, saved runs' ``family``) and the display name.
    estimator : str
        ``"module:Class"`` of its estimator, imported on first use.
    summary : str
        One or two sentences for the Home and Train pages (markdown, written here).
    metrics : tuple of str
        Headline metrics (``{part}_{metric}``), in the order the Runs table shows them.
    label_params : tuple of str
        Parameters named in a run's default label (``KM D=8 fast/exact on ...``).
    short : str
        Short name used in labels.
    short_title : str
        The family's heading in the sidebar, which cuts headings longer than about 26
        characters ("One-class MF with side informat..."): at most
        :data:`SHORT_TITLE_MAX` characters; default ``title`` (see :meth:`section_title`).
    telemetry : str
        A module that tells the generic figures how to show this family's trace:
        ``METRIC_LABELS`` (metric column -> (panel title, axis title)), ``PHASE_LABELS``
        (``t_<phase>_s`` -> display name) and ``FIGURE_OPTIONS`` (figure name -> keyword
        options of the :mod:`kmviz.viz` figure). Optional.
    explore : tuple of ExplorePage
        The family's own Explore pages.
    quick_params : dict
        Small settings that fit in a second or two on a small dataset (contract tests, demos).
    contract_data : dict
        ``kmviz.data.load`` arguments of a small dataset the contract tests fit on.
    cli_aliases : dict
        Old option names of ``kmviz train NAME`` kept working (``--iters`` -> max_iter).
    warmup : str
        A module with ``compile_kernels()`` and a ``__main__`` that compiles the family's
        Numba kernels (the app runs it at start-up in a child process), and, for a
        distributed family, optionally ``compile_cluster_kernels()`` (also those only its
        block tasks call); run through :meth:`compile_kernels`. Optional.
    reference : str
        The paper the family implements (markdown, one line), for the Home page.
    suggestions : str
        ``"module:NAME"`` of a dict catalogue dataset name ->
        :class:`kmviz.data.catalogue.Suggestion`: settings measured on that dataset (the
        Train page offers them). Optional.
    demo_dataset : str
        A catalogue dataset that shows the family at its best in a few seconds (the Home
        page's quick start uses the first family's). Optional.
    defaults_for : str
        ``"module:function"`` of the family's rule for the settings a fit on given data
        starts from: called as ``function(ratings, dataset=NAME_OR_None, options=DICT)``,
        it returns a :class:`~kmviz.data.catalogue.Suggestion` (the settings that differ
        from the estimator's defaults, and a one-line why), or raises ``ValueError`` saying
        why the family cannot use the data. :meth:`dataset_defaults` applies it. Optional.
    distributed : bool
        Whether the family's fits run on the cluster of a :mod:`kmviz.parallel` backend
        (its half-steps as block tasks); False: it fits in process even inside one.
    commands : str
        ``"module:function"`` adding the family's own subcommands to ``kmviz``, called as
        ``function(subparsers, option_help)`` (e.g. KM's ``kmviz implications``). Optional.
    """

    name: str
    title: str
    estimator: str
    summary: str
    metrics: tuple
    label_params: tuple = ()
    short: str = ""
    short_title: str = ""
    telemetry: str = ""
    explore: tuple = ()
    quick_params: dict = field(default_factory=dict)
    contract_data: dict = field(default_factory=dict)
    cli_aliases: dict = field(default_factory=dict)
    warmup: str = ""
    reference: str = ""
    suggestions: str = ""
    demo_dataset: str = ""
    defaults_for: str = ""
    distributed: bool = False
    commands: str = ""

    def section_title(self) -> str:
        """The sidebar heading of the family's Explore pages: ``short_title``, else
        ``title``."""
        return self.short_title or self.title

    def compile_kernels(self, *, cluster: bool = False) -> float:
        """Compile the family's Numba kernels in this process (or load them from Numba's
        disk cache) through its warm-up module (``warmup``); returns the seconds it took
        (0.0 for a family without one). ``cluster``: the kernels a distributed fit's block
        tasks call too (the module's ``compile_cluster_kernels()`` when it has one), which a
        :mod:`kmviz.parallel` backend compiles here before sending blocks to the workers.

        The fit code reaches its warm-up only this way: the warm-up is a nested fit, so the
        fit code importing it would make an import cycle (``tests/test_layout.py``)."""
        if not self.warmup:
            return 0.0
        module = importlib.import_module(self.warmup)
        run = getattr(module, "compile_cluster_kernels", None) if cluster else None
        return float((run or module.compile_kernels)() or 0.0)

    def estimator_class(self):
        return _import_object(self.estimator, f"the estimator of family {self.name!r}")

    def suggested(self) -> dict:
        """Dataset name -> :class:`~kmviz.data.catalogue.Suggestion` (``suggestions``)."""
        if not self.suggestions:
            return {}
        return dict(_import_object(self.suggestions, f"the suggestions of {self.name!r}"))

    def dataset_defaults(self, ratings, dataset: str | None = None,
                         options: dict | None = None):
        """The settings a fit of this family on ``ratings`` starts from (the Train form's
        defaults), as a :class:`~kmviz.data.catalogue.Suggestion` holding every parameter
        and a one-line why: the estimator's defaults, changed by the family's rule
        (``defaults_for``), then by the settings measured on the catalogue dataset
        ``dataset`` (loaded with ``options``) when there are some.

        Raises
        ------
        ValueError
            When the family cannot use the data (the message says why and what would do).
        """
        from .data.catalogue import Suggestion

        params, why = self.default_params(), "the estimator's defaults"
        if self.defaults_for:
            rule = _import_object(self.defaults_for, f"the defaults rule of {self.name!r}")
            found = rule(ratings, dataset=dataset, options=dict(options or {}))
            params.update(found.params)
            why = found.note
        measured = suggested_settings(dataset, self.name, options) if dataset else None
        if measured is not None:
            params.update(measured.params)
            why = f"the settings measured on {dataset} (below)"
        return Suggestion(params=params, note=why)

    def make(self, params: dict | None = None):
        """A new estimator with ``params``; unknown names are refused with the valid ones."""
        cls = self.estimator_class()
        params = dict(params or {})
        unknown = sorted(set(params) - set(cls._parameter_constraints))
        if unknown:
            raise InvalidParameterError(
                f"{cls.__name__} has no parameter {unknown[0]!r}. Valid parameters: "
                f"{', '.join(cls._parameter_constraints)}.")
        return cls(**params)

    def constraints(self) -> dict:
        return dict(self.estimator_class()._parameter_constraints)

    def default_params(self) -> dict:
        return self.estimator_class()().get_params()

    def label(self, params: dict, dataset_name: str) -> str:
        """A run's default display name from its settings: the label settings, the data,
        then up to :data:`LABEL_EXTRAS` other settings that differ from the estimator's
        defaults (``KM D=8 fast on ratings.csv, lambda_theta=10``), so that runs that
        differ in one setting get different names."""
        shown = " ".join(f"{k}={params[k]}" if isinstance(params[k], (int, float)) else
                         str(params[k]) for k in self.label_params if k in params)
        base = f"{self.short or self.name} {shown} on {dataset_name}".replace("  ", " ")
        try:
            defaults = self.default_params()
        except Exception:  # noqa: BLE001 - a family that cannot say: the plain name
            defaults = {}
        extras = [f"{k}={_label_value(v)}" for k, v in params.items()
                  if k in defaults and k not in self.label_params and k != "random_state"
                  and v != defaults[k]]
        return ", ".join([base] + extras[:LABEL_EXTRAS])

    def _telemetry(self, name: str) -> dict:
        if not self.telemetry:
            return {}
        return dict(getattr(importlib.import_module(self.telemetry), name, {}) or {})

    def metric_labels(self) -> dict:
        return self._telemetry("METRIC_LABELS")

    def phase_labels(self) -> dict:
        return self._telemetry("PHASE_LABELS")

    def figure_options(self, figure: str) -> dict:
        """Keyword options of the :mod:`kmviz.viz` figure ``figure`` for this family."""
        return dict(self._telemetry("FIGURE_OPTIONS").get(figure, {}))

    def convergence_note(self, trace) -> str | None:
        """A sentence explaining what a run's convergence curves show that looks wrong but
        is not (a rise, a plateau), from the telemetry module's optional
        ``convergence_note(trace)``; None when there is nothing to explain."""
        if not self.telemetry:
            return None
        note = getattr(importlib.import_module(self.telemetry), "convergence_note", None)
        return None if note is None else note(trace)


_FAMILIES: dict[str, Family] = {}
#: Names registered from entry points (forgotten by :func:`reset_entry_points`).
_FROM_ENTRY_POINTS: list[str] = []
_PROBLEMS: list[str] = []
_ENTRY_POINTS_READ = False


def register(family: Family) -> Family:
    """Add a family to the registry (its name must be new)."""
    if not isinstance(family, Family):
        raise TypeError(f"register() takes a kmviz.families.Family; got {type(family).__name__}.")
    if family.name in _FAMILIES:
        raise ValueError(f"a family named {family.name!r} is already registered")
    _FAMILIES[family.name] = family
    return family


def _load_entry_points() -> None:
    """Register the families of the installed distributions' entry points, once."""
    global _ENTRY_POINTS_READ
    if _ENTRY_POINTS_READ:
        return
    _ENTRY_POINTS_READ = True
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(getattr(point, "dist", None), "name", None) or "an unknown distribution"
        try:
            obj = point.load()
            family = obj if isinstance(obj, Family) else obj() if callable(obj) else obj
            if not isinstance(family, Family):
                raise TypeError(f"it gives a {type(family).__name__}, not a "
                                "kmviz.families.Family (or a callable returning one)")
            register(family)
        except Exception as exc:  # a broken plug-in must not break kmviz
            message = (f"The model family {point.name!r} of the installed distribution "
                       f"{dist!r} (entry point {point.value!r} in group "
                       f"{ENTRY_POINT_GROUP!r}) could not be loaded and is left out: "
                       f"{type(exc).__name__}: {exc}")
            _PROBLEMS.append(message)
            warnings.warn(message, FamilyLoadWarning, stacklevel=3)
        else:
            _FROM_ENTRY_POINTS.append(family.name)


def reset_entry_points() -> None:
    """Forget the families loaded from entry points, so that the next lookup reads them again.

    A test hook: after installing a distribution into a directory put on ``sys.path`` (and
    ``importlib.invalidate_caches()``), call this to see its families in the same process.
    """
    global _ENTRY_POINTS_READ
    for name in _FROM_ENTRY_POINTS:
        _FAMILIES.pop(name, None)
    _FROM_ENTRY_POINTS.clear()
    _PROBLEMS.clear()
    _ENTRY_POINTS_READ = False


def load_problems() -> list[str]:
    """Messages of the entry points that failed to load (empty when all loaded)."""
    _load_entry_points()
    return list(_PROBLEMS)


def get(name: str) -> Family:
    """The registered family ``name``, or an error listing the known ones."""
    _load_entry_points()
    try:
        return _FAMILIES[name]
    except KeyError:
        raise InvalidParameterError(
            f"Unknown model family {name!r}; choose one of {', '.join(_FAMILIES)}.") from None


def all_families() -> list[Family]:
    _load_entry_points()
    return list(_FAMILIES.values())


def names() -> list[str]:
    _load_entry_points()
    return list(_FAMILIES)


def dataset_suggestions(dataset: str) -> dict:
    """Family name -> :class:`~kmviz.data.catalogue.Suggestion` of every family with
    settings measured on the catalogue dataset ``dataset`` (the Train page offers them; the
    families' own defaults follow the papers). Each family keeps its own in its package
    (``Family.suggestions``)."""
    out = {}
    for family in all_families():
        suggestion = family.suggested().get(dataset)
        if suggestion is not None:
            out[family.name] = suggestion
    return out


def suggested_settings(dataset: str, family: str, options: dict | None = None):
    """The :class:`~kmviz.data.catalogue.Suggestion` of the catalogue entry ``dataset`` for
    the model family ``family``, or None: when the entry has none, or when ``options`` (the
    loader options the data was loaded with; None: the entry's defaults) differ from the
    ones it was measured with. (Also ``kmviz.data.suggested_settings``.)"""
    from .data.catalogue import list_datasets

    entry = next((e for e in list_datasets() if e.name == dataset), None)
    try:
        suggestion = get(family).suggested().get(dataset) if entry is not None else None
    except InvalidParameterError:  # no such family: nothing measured for it
        suggestion = None
    if suggestion is None:
        return None
    used = {**entry.parameters, **(options or {})}
    if any(used.get(k) != v for k, v in suggestion.options.items()):
        return None
    return suggestion


def family_of(model) -> Family:
    """The registered family whose estimator is the class of ``model`` (exactly: the same
    class object, not a subclass and not a class of the same name in another module), or
    the one whose estimator is the nearest base class of a subclass."""
    _load_entry_points()
    cls = type(model)
    # a family whose estimator module was never imported cannot have made ``model``: look
    # at the imported ones first, and import the others only if none matches
    loaded = [f for f in _FAMILIES.values() if f.estimator.partition(":")[0] in sys.modules]
    for group in (loaded, [f for f in _FAMILIES.values() if f not in loaded]):
        classes = []
        for fam in group:
            try:
                classes.append((fam, fam.estimator_class()))
            except (ImportError, AttributeError, ValueError):
                continue
        for klass in cls.__mro__:
            for fam, estimator in classes:
                if klass is estimator:
                    return fam
    raise InvalidParameterError(
        f"{cls.__module__}.{cls.__name__} is not the estimator of a registered family "
        f"({', '.join(_FAMILIES)}).")
