"""The family registry: the one place that names kmviz's model families.

Everything generic (the Train page and its form, the run label, the Runs table's metric
columns, the CLI's ``kmviz train FAMILY``, the app's navigation, the estimator contract tests)
reads this registry; no other module outside a family's own package says "km". Adding a
family means a package (an estimator on :class:`kmviz._base.IterativeEstimator` with declared
``_parameter_constraints``, ``evaluate``, ``_fitted_arrays`` and ``_from_fitted_arrays``), one
:class:`Family` entry, and its Explore pages; :func:`kmviz.testing.check_family` checks it.

Two ways in:

- kmviz's own families are registered in code at the end of this module (no metadata scan
  for them, and they work from a source checkout that was never installed);
- a family that lives in its own installed distribution declares an entry point in the group
  ``kmviz.families`` (:data:`ENTRY_POINT_GROUP`) whose object is a :class:`Family` or a
  callable returning one::

      [project.entry-points."kmviz.families"]
      toy = "toyfamily:FAMILY"

  Entry points are read once, on the first lookup (:func:`get`, :func:`all_families` ...),
  not at import. One that fails to load (an import error, a wrong object, a name already
  taken) is left out with a :class:`FamilyLoadWarning` naming its distribution, and the
  message is kept in :func:`load_problems` for the app to show; the others still load.

Estimators are imported lazily (``"module:Class"``), so ``kmviz --help`` stays fast.

The family template
-------------------
A family package ``kmviz/<family>/`` names each module by its role, the same name in every
family, so that a reader who knows one family finds their way in the others. A role is a
module ``<name>.py`` or, when it grows, a package ``<name>/``. Other modules are the
family's own (``losses``, ``towers``, ``lanczos``, ...). ``tests/test_layout.py`` checks
this table against the packages, and the moves below::

    estimator    every family: the estimator, on kmviz._base.IterativeEstimator
    telemetry    every family: METRIC_LABELS, PHASE_LABELS, FIGURE_OPTIONS (Family.telemetry)
    suggested    every family: SUGGESTIONS and defaults_for (Family.suggestions, defaults_for)
    warmup       every family: compile_kernels() [, compile_cluster_kernels()] and __main__
    analysis     every family: pure analysis of fitted models and traces (no Plotly)
    figures      every family: its Plotly figures, pure functions of models and traces
    _kernels     with Numba code: the @njit(cache=True) kernels ("kernels" means only this)
    _reference   with Numba code: the kernels' pure-NumPy references (the tests' oracles)
    _state       every family: the fit state, a kmviz._state.FitStateBase (_fit_start's)
    solvers      with several methods: REGISTRY of kmviz.solver.Solver (start / step / publish)
    _dist        distributed families: the half-steps as block tasks of kmviz.parallel

The Explore glue (widgets and state for the family's own pages) is
``kmviz/ui/families/<family>.py``, since Streamlit is imported only in ``kmviz/ui`` and
``app_pages``. A family's warm-up is reached through the registry
(:meth:`Family.compile_kernels`), never imported by its fit code. "With several methods"
means a declared ``solver``, ``method`` or ``*_solver`` parameter with several options.

Moves still to do (each keeps its public import; ``old -> new``): none. A move that a
family needs later is listed here, one ``old -> new`` per line, until it is done.
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


# ------------------------------------------------------------------------------ entries
register(Family(
    name="km",
    title="Kolmogorov model (KM)",
    short_title="Kolmogorov model (KM)",
    short="KM",
    distributed=True,
    estimator="kmviz.km.estimator:KolmogorovModel",
    summary=(
        "P(user *u* likes item *i*) = $\\theta_u^\\top \\psi_i$, with a probability vector "
        "$\\theta_u$ over D elementary events and a binary vector $\\psi_i$; learned by block "
        "coordinate descent. Nested supports of $\\psi$ give implications between items."),
    metrics=("validation_nrmse", "test_nrmse", "train_nrmse", "test_rmse"),
    label_params=("D", "bqp_solver"),
    telemetry="kmviz.km.telemetry",
    explore=(
        ExplorePage("app_pages/km_dual.py", "Dual GD", ":material/timeline:"),
        ExplorePage("app_pages/km_phases.py", "Phases", ":material/stacked_bar_chart:"),
        ExplorePage("app_pages/km_lanczos.py", "Lanczos", ":material/functions:"),
        ExplorePage("app_pages/km_implications.py", "Implications", ":material/hub:"),
    ),
    quick_params={"D": 3, "max_iter": 3, "n_rand": 5, "random_state": 0},
    contract_data={"source": "planted-km", "n_users": 40, "n_items": 25, "D": 3,
                   "random_state": 1},
    cli_aliases={"bqp": "bqp_solver", "iters": "max_iter"},
    warmup="kmviz.km.warmup",
    suggestions="kmviz.km.suggested:SUGGESTIONS",
    commands="kmviz.km.cli_implications:add_parser",
    defaults_for="kmviz.km.suggested:defaults_for",
    demo_dataset="planted-km",
    reference=("Duan, Ghauch, Kim, *Dual optimization for Kolmogorov model learning using "
               "enhanced gradient descent*, IEEE TSP 2022 "
               "([doi:10.1109/TSP.2022.3150953](https://doi.org/10.1109/TSP.2022.3150953))"),
))

register(Family(
    name="ocmf",
    title="One-class MF with side information (OCMF)",
    short_title="One-class MF (OCMF)",
    short="OCMF",
    distributed=True,
    estimator="kmviz.ocmf.estimator:OneClassMF",
    summary=(
        "Positives only (e.g. ratings ≥ 4): a convex loss on the observed pairs and a "
        "weighted squared loss toward $\\bar a$ on all other $m \\times n$ pairs, never "
        "formed; alternating trust-region Newton (TRON) over $W$ and $H$, with optional "
        "side features and a user graph. Set the positive threshold for graded ratings."),
    metrics=("validation_precision_at_5", "test_precision_at_5", "test_ndcg_at_5",
             "test_recall_at_5"),
    label_params=("k", "loss", "rho"),
    telemetry="kmviz.ocmf.telemetry",
    explore=(ExplorePage("app_pages/ocmf.py", "OCMF", ":material/recommend:"),),
    quick_params={"k": 4, "max_iter": 3, "threshold": 0.5, "random_state": 0},
    contract_data={"source": "planted-lowrank", "n_users": 60, "n_items": 40, "rank": 3,
                   "random_state": 1},
    cli_aliases={"iters": "max_iter"},
    warmup="kmviz.ocmf.warmup",
    suggestions="kmviz.ocmf.suggested:SUGGESTIONS",
    defaults_for="kmviz.ocmf.suggested:defaults_for",
    demo_dataset="movielens-small",
    reference=("Yu, Huang, Dhillon, Lin, *A unified algorithm for one-class structured matrix "
               "factorization with side information*, AAAI 2017"),
))

register(Family(
    name="kmc",
    title="Kernel MC (kernel matrix completion)",
    short_title="Kernel MC",
    short="KMC",
    estimator="kmviz.kmc.estimator:KernelMatrixCompletion",
    summary=(
        "Completes a partly observed matrix F from kernels on its rows and columns (a graph "
        "of countries, item genres, side features): KKMCEX is kernel ridge regression with "
        "the Kronecker kernel $k_r(u, a)\\,k_c(i, b)$, eq. (3.46), solved directly or by "
        "matrix-free conjugate gradients; RRMCEX, ALS, SGD and nuclear-norm PG are the "
        "thesis's alternatives. Rows or columns with no observation are predicted through "
        "the kernels (cold start). Made for matrices whose side information explains the "
        "values, such as Gapminder (a few seconds). Kernels of few features or of the "
        "identity are kept as factors, and *kernel rank (approximate)* replaces a big one "
        "by a low-rank factor, so MovieLens's 9,066 movies never need their full kernel. The "
        "thesis uses "
        "the values as given; ratings want *center* and a larger μ (a fit no better than "
        "the mean warns). Gapminder and MovieLens latest-small come with settings measured "
        "on them, offered on the Train page (*Use these settings*)."),
    metrics=("validation_nmse", "test_nmse", "train_nmse", "test_rmse"),
    label_params=("method", "mu"),
    telemetry="kmviz.kmc.telemetry",
    explore=(
        ExplorePage("app_pages/kmc_completion.py", "Completion", ":material/grid_on:"),
        ExplorePage("app_pages/kmc_nystrom.py", "Nyström", ":material/scatter_plot:"),
    ),
    quick_params={"method": "kkmcex", "solver": "cg", "mu": 0.1, "feature_kernel": "linear",
                  "max_iter": 100, "tol": 1e-8, "random_state": 0},
    contract_data={"source": "planted-lowrank", "n_users": 40, "n_items": 30,
                   "random_state": 1},
    cli_aliases={"iters": "max_iter"},
    warmup="kmviz.kmc.warmup",
    suggestions="kmviz.kmc.suggested:SUGGESTIONS",
    defaults_for="kmviz.kmc.suggested:defaults_for",
    demo_dataset="gapminder",
    reference=("Giménez-Febrer, *Matrix completion with prior information in reproducing "
               "kernel Hilbert spaces*, PhD thesis, Universitat Politècnica de Catalunya, 2020"),
))

register(Family(
    name="gfm",
    title="Generalized factorization machine (gFM)",
    short_title="Generalized FM (gFM)",
    short="gFM",
    estimator="kmviz.gfm.estimator:GeneralizedFM",
    summary=(
        "Regression $y = b + x^\\top w + x^\\top M x$ with a symmetric rank-$k$ $M$ of any "
        "sign (no PSD constraint): ratings become factorization-machine rows (one-hot user, "
        "one-hot item, side features). Solver *one-pass* is Algorithm 1 (each fresh batch "
        "used once, one noisy power step per batch; it assumes roughly Gaussian features), "
        "*ALS* alternates least squares over all the data (eq. (3) with a ridge, for real "
        "data); *auto* picks ALS for ratings."),
    metrics=("validation_rmse", "test_rmse", "train_rmse", "test_nmse"),
    label_params=("rank", "solver"),
    telemetry="kmviz.gfm.telemetry",
    explore=(
        ExplorePage("app_pages/gfm_recovery.py", "Recovery", ":material/trending_down:"),
        ExplorePage("app_pages/gfm_interactions.py", "Interactions", ":material/join_inner:"),
    ),
    quick_params={"rank": 2, "n_passes": 3, "n_batches": 3, "random_state": 0},
    contract_data={"source": "planted-lowrank", "n_users": 60, "n_items": 40, "rank": 3,
                   "random_state": 1},
    cli_aliases={"iters": "n_passes"},
    warmup="kmviz.gfm.warmup",
    suggestions="kmviz.gfm.suggested:SUGGESTIONS",
    demo_dataset="boston",
    reference=("Lin, Ye, *A non-convex one-pass framework for generalized factorization "
               "machine and rank-one matrix sensing*, NIPS 2016"),
))

register(Family(
    name="similarity",
    title="Similarity learning with nonlinear embeddings (two towers, all pairs)",
    short="SimL",
    distributed=True,
    short_title="Similarity learning",
    estimator="kmviz.similarity.estimator:SimilarityLearning",
    summary=(
        "Positives only, like one-class MF, but each side is a tower of any kind: an "
        "embedding table, a linear map or an MLP over ids and side features. A convex loss "
        "on the observed pairs and a weighted squared loss toward $\\tilde Y$ on all other "
        "$m \\times n$ pairs, computed through $k \\times k$ Gramians, never formed; "
        "Gauss-Newton + CG (the paper's fastest) or six first-order and stochastic "
        "solvers."),
    metrics=("validation_map_at_5", "test_map_at_5", "test_precision_at_5",
             "test_ndcg_at_5"),
    label_params=("k", "user_tower", "item_tower", "solver"),
    telemetry="kmviz.similarity.telemetry",
    explore=(
        ExplorePage("app_pages/similarity_optimizers.py", "Optimizers", ":material/speed:"),
        ExplorePage("app_pages/similarity_embeddings.py", "Embeddings",
                    ":material/scatter_plot:"),
    ),
    quick_params={"k": 4, "max_iter": 3, "threshold": 0.5, "random_state": 0},
    contract_data={"source": "planted-lowrank", "n_users": 60, "n_items": 40, "rank": 3,
                   "random_state": 1},
    cli_aliases={"iters": "max_iter"},
    warmup="kmviz.similarity.warmup",
    suggestions="kmviz.similarity.suggested:SUGGESTIONS",
    defaults_for="kmviz.similarity.suggested:defaults_for",
    reference=("Yuan, Li, Quan, Lin, *Efficient optimization methods for extreme similarity "
               "learning with nonlinear embeddings*, KDD 2021 "
               "([doi:10.1145/3447548.3467363](https://doi.org/10.1145/3447548.3467363))"),
))
