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

The machinery (:class:`Family`, :class:`ExplorePage`, registration, the entry points and
the lookups) is :mod:`kmviz._registry`, which names no family; this module re-exports
all of it and holds the entries.

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

from ._registry import (  # noqa: F401 - re-exported: kmviz.families.<name> keeps working
    ENTRY_POINT_GROUP,
    LABEL_EXTRAS,
    SHORT_TITLE_MAX,
    ExplorePage,
    Family,
    FamilyLoadWarning,
    _FAMILIES,
    _import_object,
    all_families,
    dataset_suggestions,
    family_of,
    get,
    load_problems,
    names,
    register,
    reset_entry_points,
    suggested_settings,
)


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
    defaults_for="kmviz.gfm.suggested:defaults_for",
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
