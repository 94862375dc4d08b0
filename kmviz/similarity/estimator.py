"""Similarity learning with nonlinear embeddings over all m x n pairs (the fifth family).

``SimilarityLearning`` runs the shared outer loop of :class:`kmviz._base.IterativeEstimator`;
one outer iteration is one iteration of the chosen solver (:mod:`kmviz.similarity.solvers`)
on :class:`kmviz.similarity.allpairs.AllPairsProblem`, whose function, gradient and
Gauss-Newton products never touch the m x n matrix.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import replace

import numpy as np

from .._base import IterativeEstimator, LoopPolicy
from .._params import RANDOM_STATE, Param
from .._validation import check_random_state
from ..exceptions import DataError, EmptyDataError
from ..parallel import active_backend
from ..serving import FactorServing
from ..trace import Trace
from ..pairs import ObservedPairs
from ._state import FitState
from .allpairs import AllPairsProblem, constant_imputation
from .inputs import (IDS, SIDE_FEATURES, TOWER_PRESETS, TowerParam, build_tower,
                     check_towers, side_features)
from .solvers import (MONOTONE, PRECONDITIONER_LABELS, PRECONDITIONERS, SOLVER_LABELS,
                      REGISTRY, SOLVERS, Settings)
from .solvers.stochastic import MIN_SAMPLE_RATIO
from .towers import ACTIVATIONS

LOSSES = ("logistic", "squared")
#: The cut-offs ``evaluate`` reports.
EVAL_KS = (1, 3, 5)


class SimilarityLearning(FactorServing, IterativeEstimator):
    """Two-tower similarity learning over all m x n pairs (Yuan, Li, Quan & Lin, KDD 2021).

    Pair (i, j) is scored ``Yhat_ij = f(theta_u; u_i)^T g(theta_v; v_j)`` by a user tower f
    and an item tower g (embedding tables, linear maps or MLPs over ids and side features),
    and training minimizes (4)-(7)

        sum_{(i,j) in O} l(Y_ij, Yhat_ij) + 0.5 omega sum_{(i,j) not in O} (Ytilde_ij - Yhat_ij)^2
          + 0.5 lambda ||theta||^2

    over every pair, never forming the m x n matrix: each function, gradient or
    Gauss-Newton product costs O(|O| k + (m + n) k^2 + tower passes)
    (:mod:`kmviz.similarity.allpairs`). With two identity towers this is one-class MF
    (:class:`kmviz.ocmf.OneClassMF` with ``rho = omega / 2``, ``a_bar = imputed``,
    ``lambda_w = lambda_h = lambda_theta / 2``, trained jointly instead of alternately).

    Parameters
    ----------
    k : int, default=32
        Embedding dimension k (the towers' output width).
    user_tower, item_tower : str or tower object, default="identity"
        "identity" (an embedding table: one row per id), "linear" (``X Theta`` on
        ``X = [ids | features]``), "mlp:h1,h2,..." (hidden sizes; the paper's network is
        "mlp:256,256") or an object with ``forward``, ``vjp``, ``jvp``, ``init`` and
        ``n_params`` (:mod:`kmviz.similarity.towers`), given the same input X.
    activation : {"elu", "tanh", "relu"}, default="elu"
        Activation after each hidden layer of the MLP towers (the paper: ELU).
    loss : {"logistic", "squared"}, default="logistic"
        l on the observed pairs: ``log(1 + exp(-y Yhat))`` (the paper's) or
        ``0.5 (y - Yhat)^2``, with y = 1 on positives.
    omega : float, default=0.25
        Weight of the squared loss on every unobserved pair (the paper grids log2 omega in
        -10..-4). The defaults of omega and lambda_theta are one-class MF's tuned MovieLens-100K
        setting mapped to this objective (rho = 0.125, lambda = 4).
    lambda_theta : float, default=8.0
        The paper's lambda: the L2 term ``0.5 lambda ||theta||^2`` over both towers. (Not
        ``lambda_``: a trailing underscore marks fitted attributes in kmviz.)
    imputed : float, default=-1.0
        The imputed label Ytilde of unobserved pairs (-1 in the paper, 0 for SQ-SQ); a prior
        model's factors can be given to ``fit`` instead (``imputed_factors``).
    solver : {"newton", "gd", "gd-diag", "sogram", "sampling", "sogram-diag", "sampling-diag"}, default="newton"
        The optimizer (:mod:`kmviz.similarity.solvers`): Gauss-Newton + CG with backtracking
        (Alg. 3-4), gradient descent with backtracking, GD with AdaGrad scaling, or the
        stochastic SOGram and Sampling (and their AdaGrad variants).
    max_iter : int, default=30
        Outer iterations (Newton / GD iterations; ceil(1 / sample_ratio) stochastic steps
        each for the stochastic solvers).
    tol : float, default=1e-6
        Stop when the objective's relative decrease in one iteration is below tol (0: run
        max_iter iterations). Line-search solvers only: the stochastic ones run max_iter
        iterations (their objective is noisy).
    max_cg : int, default=30
        CG steps per Newton iteration at most (the paper's 30).
    cg_tol : float, default=0.1
        CG stops at ``||r|| <= cg_tol ||grad L||`` (the paper's xi = 0.1).
    preconditioner : {"none", "diag"}, default="none"
        Newton only: "diag" runs CG preconditioned by the diagonal of the Gauss-Newton
        matrix, recomputed once per iteration (exact for the built-in towers; a per-tower
        Hutchinson estimate for a user-supplied one). It evens out the curvature of an MLP's
        shared weights against its one-hot id rows; "none" is the paper's plain CG. On
        MovieLens 100K with mlp:64,64 towers "diag" got within 10% of the best objective
        3.8x sooner but then settled about 2% higher than plain CG
        (``bench/similarity/similarity_solvers.py``), so it is not the default.
    max_line_search : int, default=30
        Backtracking trials per iteration; when none decreases the objective enough, the
        step is rejected and the fit ends.
    sample_ratio : float, default=0.01
        rho of the stochastic solvers: |O^1| = |O^2| = rho |O| (SOGram), m^ = rho m and
        n^ = rho n (Sampling).
    gram_alpha : float, default=0.1
        SOGram's averaging weight alpha of the Gramian estimates (64).
    learning_rate : float or None, default=None
        Fixed step of the stochastic solvers; None: 0.01 for the -diag ones (the paper's),
        for the plain ones GD's smallest step over 5 iterations divided by 1 + r^2, r the
        measured relative error of the stochastic gradient (the paper takes GD's most used
        step, at which both diverged on small data).
    adagrad_mu : float, default=1e-8
        mu of the AdaGrad scaling ``(mu I + M)^(-1/2)`` (51) of the -diag solvers.
    user_ids, item_ids : {"all", "known", "none"}, default="all"
        Which users (items) get a one-hot id column in the input of a linear or MLP tower,
        beside their features: all, those with training positives (the others are cold,
        embedded from their features alone), or none (a purely feature-based tower). To
        rank NEW items, use "none": with "known" the warm items' id embeddings lift them
        above every cold item (cold-item p@5 0.00 against 0.16 with "none" on a planted
        300 x 200 set, tests/similarity/test_synthetic.py).
    side_features : {"none", "user", "item", "both"}, default="none"
        Which of the interactions' own side features to use when ``fit`` gets none.
    threshold : float or None, default=None
        Entries with value >= threshold are the positives (r >= 4 on MovieLens); None:
        every entry is a positive.
    init_scale : float, default=0.1
        Standard deviation of the Gaussian initial embedding tables and linear maps (MLP
        layers use Glorot-uniform weights).
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the initialization and the stochastic solvers' draws.

    Attributes
    ----------
    theta_ : ndarray
        All variables, ``[theta_u; theta_v]``.
    user_factors_, item_factors_ : ndarray (n_users, k), (n_items, k)
        The embeddings P = f(theta_u; U) and Q = g(theta_v; V).
    objective_ : float
        The objective L(theta) at the end.
    user_tower_, item_tower_ : towers
        The towers (for :mod:`kmviz.similarity.analysis`; absent on a model loaded from
        fitted arrays).
    user_input_, item_input_ : CSR matrix or None
        The towers' inputs ``[ids | features]`` (None for an identity tower).
    n_iter_ : int
    trace_ : Trace
        One row per iteration: ``objective`` (and its split ``l_plus``, ``l_minus`` (omega
        L-) and ``regularizer``), ``relative_decrease`` (from the previous row),
        ``relative_objective_difference`` ((L - L*) / L* with L* this run's lowest, filled in
        after the fit), ``grad_norm`` (at the iteration's start), Newton's ``n_cg``
        and ``cg_residual_ratio``, ``n_line_search``, ``step_size``, the solver's totals
        ``cg_seconds`` / ``line_search_seconds``, and the disjoint phase times
        ``t_<phase>_s`` for tower_forward, vjp, jvp, gramians, observed_pairs, dense_terms
        (the paper's cost terms (15), (28), (40)); on a Dask cluster (:mod:`kmviz.parallel`)
        also ``t_scatter_data_s`` (first row) and ``t_pairs_{scatter,compute,gather}_s``,
        the cluster calls' split of the observed-pair time; with validation, the metrics of
        :meth:`evaluate` as ``validation_<metric>``.

    References
    ----------
    B. Yuan, Y.-S. Li, P. Quan, C.-J. Lin, "Efficient Optimization Methods for Extreme
    Similarity Learning with Nonlinear Embeddings", KDD 2021 (Sec. 2-4, Alg. 1-4, App. A).
    """

    score_metric = "map_at_5"
    _numerical_hint = ("lower omega or the learning rate, raise lambda_theta, or scale the "
                       "features.")
    _parameter_constraints = {
        "k": Param(int, low=1, high=100_000, form_high=256, label="k (embedding size)",
                   help="Output width k of both towers; Yhat = f(u)ᵀ g(v)."),
        "user_tower": TowerParam(str, options=TOWER_PRESETS, label="user tower",
                                 help="identity (embedding table), linear, or mlp:h1,h2 "
                                      "(hidden sizes; the paper: mlp:256,256)."),
        "item_tower": TowerParam(str, options=TOWER_PRESETS, label="item tower",
                                 help="identity (embedding table), linear, or mlp:h1,h2."),
        "activation": Param(str, options=ACTIVATIONS, label="activation",
                            help="After each hidden layer of the MLP towers (paper: ELU)."),
        "loss": Param(str, options=LOSSES, label="loss on O",
                      help="The convex loss on observed pairs (the paper: logistic)."),
        "omega": Param(float, low=0, high=1e12, closed="neither", step=0.01, label="ω (omega)",
                       help="Weight of the squared loss on every unobserved pair, eq. (7)."),
        "lambda_theta": Param(float, low=0, high=1e12, closed="neither", step=0.5, label="λ (lambda)",
                         help="L2 weight, 0.5 λ‖θ‖²."),
        "imputed": Param(float, low=-1e6, high=1e6, step=0.5, label="imputed label Ỹ",
                         help="Target of the unobserved pairs (the paper: −1)."),
        "solver": Param(str, options=SOLVERS, option_labels=SOLVER_LABELS, label="solver",
                        help="Optimizer: Gauss-Newton (the paper's fastest), GD, GD-diag, "
                             "SOGram, Sampling and their AdaGrad variants."),
        "max_iter": Param(int, low=1, high=100_000, form_high=500, label="iterations",
                          help="Outer iterations at most."),
        "tol": Param(float, low=0, high=1.0, step=1e-6, label="tol",
                     when={"solver": MONOTONE},
                     help="Stop when the objective's relative decrease is below this."),
        "max_cg": Param(int, low=1, high=100_000, form_high=200, label="CG steps", advanced=True,
                        when={"solver": ("newton",)},
                        help="CG steps per Newton iteration at most (paper: 30)."),
        "cg_tol": Param(float, low=0, high=1, closed="neither", label="CG tolerance ξ",
                        advanced=True, when={"solver": ("newton",)},
                        help="CG stops at ‖r‖ ≤ ξ‖∇L‖ (paper: 0.1)."),
        "preconditioner": Param(str, options=PRECONDITIONERS,
                                option_labels=PRECONDITIONER_LABELS, label="CG preconditioner",
                                advanced=True, when={"solver": ("newton",)},
                                help="none: the paper's plain CG; diag: CG scaled by the "
                                     "diagonal of the Gauss-Newton matrix."),
        "max_line_search": Param(int, low=1, high=1000, form_high=100, label="line-search trials",
                                 advanced=True,
                                 when={"solver": ("newton", "gd", "gd-diag")},
                                 help="Backtracking trials per iteration at most."),
        "sample_ratio": Param(float, low=MIN_SAMPLE_RATIO, high=1, label="sample ratio ρ",
                              advanced=True,
                              when={"solver": ("sogram", "sampling", "sogram-diag",
                                               "sampling-diag")},
                              help="Fraction of O (SOGram) or of users and items "
                                   "(Sampling) per stochastic step (paper: 0.01); an "
                                   "iteration is ⌈1/ρ⌉ steps, so ρ ≥ 1e-4."),
        "gram_alpha": Param(float, low=0, high=1, closed="right", label="SOGram α",
                            advanced=True, when={"solver": ("sogram", "sogram-diag")},
                            help="Averaging weight of SOGram's Gramian estimates (0.1)."),
        "learning_rate": Param(float, low=0, high=1e6, closed="neither", none_ok=True,
                               label="step size δ", advanced=True,
                               when={"solver": ("sogram", "sampling", "sogram-diag",
                                                "sampling-diag")},
                               help="Fixed step of the stochastic solvers (empty: 0.01 for "
                                    "-diag, else GD's step shrunk by the gradient noise)."),
        "adagrad_mu": Param(float, low=0, high=1e6, closed="neither", label="AdaGrad μ",
                            advanced=True,
                            when={"solver": ("gd-diag", "sogram-diag", "sampling-diag")},
                            help="μ of the scaling (μI + M)^(-1/2), eq. (51)."),
        "user_ids": Param(str, options=IDS, label="user id columns", advanced=True,
                          help="Which users get a one-hot id column in a linear/MLP tower's "
                               "input: all, known (with positives), none."),
        "item_ids": Param(str, options=IDS, label="item id columns", advanced=True,
                          help="Which items get a one-hot id column: all, known, none "
                               "(known/none: new items are scored from features)."),
        "side_features": Param(str, options=SIDE_FEATURES, label="side features",
                               help="Which of the dataset's own side features to use."),
        "threshold": Param(float, low=-1e12, high=1e12, none_ok=True, step=0.5, label="positive threshold",
                           help="Entries with value ≥ threshold are positives."),
        "init_scale": Param(float, low=0, high=1e6, closed="neither", label="init scale",
                            advanced=True,
                            help="Std of the initial embedding tables and linear maps."),
        "random_state": Param(RANDOM_STATE, none_ok=True, label="seed",
                              help="Seed of the initialization and the stochastic draws."),
    }

    def __init__(self, k=32, *, user_tower="identity", item_tower="identity",
                 activation="elu", loss="logistic", omega=0.25, lambda_theta=8.0,
                 imputed=-1.0, solver="newton", max_iter=30, tol=1e-6, max_cg=30, cg_tol=0.1,
                 preconditioner="none",
                 max_line_search=30, sample_ratio=0.01, gram_alpha=0.1, learning_rate=None,
                 adagrad_mu=1e-8, user_ids="all", item_ids="all", side_features="none",
                 threshold=None, init_scale=0.1, random_state=None):
        self.k = k
        self.user_tower = user_tower
        self.item_tower = item_tower
        self.activation = activation
        self.loss = loss
        self.omega = omega
        self.lambda_theta = lambda_theta
        self.imputed = imputed
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.max_cg = max_cg
        self.cg_tol = cg_tol
        self.preconditioner = preconditioner
        self.max_line_search = max_line_search
        self.sample_ratio = sample_ratio
        self.gram_alpha = gram_alpha
        self.learning_rate = learning_rate
        self.adagrad_mu = adagrad_mu
        self.user_ids = user_ids
        self.item_ids = item_ids
        self.side_features = side_features
        self.threshold = threshold
        self.init_scale = init_scale
        self.random_state = random_state

    # ------------------------------------------------------------------ fit
    def fit(self, interactions, *, user_features=None, item_features=None,
            imputed_factors=None, validation=None, callback=None):
        """Fit on ``interactions`` (a Ratings); see the class docstring.

        Parameters
        ----------
        interactions : kmviz.data.Ratings
            Training data; its positives are every entry, or those >= ``threshold``.
        user_features, item_features : DataFrame, array or sparse matrix, optional
            Side features, one row per user (item) index; override ``side_features``.
        imputed_factors : (Ptilde, Qtilde), optional
            A prior model's factors (m x kt, n x kt): Ytilde = Ptilde Qtilde^T instead of
            the constant ``imputed``.
        validation : Ratings, optional
            Held-out interactions in the same index space (``validation_<metric>``).
        callback : callable, optional
            ``callback(row)`` after each iteration; False or StopIteration stops.

        Returns
        -------
        self
        """
        return super().fit(interactions, callback=_stop_aware(callback),
                           validation=validation,
                           user_features=user_features, item_features=item_features,
                           imputed_factors=imputed_factors)

    def _solver_name(self, prm, state):
        return REGISTRY[prm["solver"]].name(state)

    @contextmanager
    def _fit_context(self, prm):
        # the D-vector operations of CG and the tower products are small; with OpenBLAS's
        # threads next to the other processes of a shared 2-core box, a CG of 8 steps on a
        # 300 x 200 set with MLP towers took 0.22-0.36 s, and 0.020-0.026 s with one thread
        from .._threads import single_blas_thread

        try:
            with single_blas_thread():
                yield
        finally:
            self._close_dist()

    def _close_dist(self):
        """On a cluster: free the per-pair state the fit left on the workers."""
        dist = self.__dict__.pop("_dist_problem", None)
        if dist is not None:
            dist.close()

    def _loop_policy(self, params, state) -> LoopPolicy:
        policy = super()._loop_policy(params, state)
        if params["solver"] not in MONOTONE:
            # a stochastic solver's objective is noisy: one rise would read as convergence
            return replace(policy, tol=None, budget=None,
                           end_message=f"all {policy.max_iter} iterations done")
        return replace(policy, monotone=True)

    def _memory_estimate(self, prm, data, **inputs):
        # every large allocation, the k x k Gramians included (kmviz.similarity.bounds)
        from .bounds import memory_parts

        return memory_parts(prm, data, **inputs)

    def _fit_start(self, data, prm, *, validation=None, user_features=None,
                   item_features=None, imputed_factors=None):
        self._check_interactions(data)
        m, n = int(data.n_users), int(data.n_items)
        if imputed_factors is not None:  # checked before anything else is built
            from .bounds import check_imputed_factors

            Pt, Qt = check_imputed_factors(imputed_factors, m, n)
        else:
            Pt, Qt = constant_imputation(prm["imputed"], m, n)
        events = []
        users, items = self._positives(data, prm["threshold"])
        if users.size == 0:
            raise EmptyDataError("the interactions hold no positives",
                                 expected="at least one positive (user, item) pair",
                                 fix="lower threshold or check the data")
        pairs = ObservedPairs(users, items, m, n)
        if validation is not None:
            self._check_interactions(validation, "validation")
            if (int(validation.n_users), int(validation.n_items)) != (m, n):
                raise DataError(f"validation has shape ({validation.n_users}, "
                                f"{validation.n_items}) but the interactions have ({m}, {n})",
                                fix="split one Ratings so both parts share the index space")
        known_u, known_v = pairs.row_counts() > 0, pairs.col_counts() > 0
        Fu = side_features(data, user_features, "user", m, prm, events)
        Fv = side_features(data, item_features, "item", n, prm, events)
        fu, U = build_tower(prm["user_tower"], m, Fu, known_u, prm["user_ids"], "user", prm,
                            events)
        fv, V = build_tower(prm["item_tower"], n, Fv, known_v, prm["item_ids"], "item", prm,
                            events)
        args = (pairs, fu, fv, U, V, prm["loss"], prm["omega"], prm["lambda_theta"], None,
                None, Pt, Qt)
        backend = active_backend()
        if backend is None:
            problem = AllPairsProblem(*args)
        else:
            # the observed pairs go to the workers once per fit (kmviz.similarity._dist)
            from ._dist import DistAllPairsProblem

            problem = self._dist_problem = DistAllPairsProblem(backend, *args)
        rng = check_random_state(self.random_state)
        theta = problem.init(rng)
        check_towers(problem, theta, prm["k"])
        settings = Settings(max_line_search=prm["max_line_search"], max_cg=prm["max_cg"],
                            xi=prm["cg_tol"], mu=prm["adagrad_mu"], rho=prm["sample_ratio"],
                            alpha=prm["gram_alpha"], learning_rate=prm["learning_rate"],
                            diag=prm["solver"].endswith("-diag"),
                            preconditioner=prm["preconditioner"])
        st = FitState(prm=prm, method=prm["solver"], rng=rng, tol=prm["tol"],
                      owner=type(self).__name__, events=events, problem=problem,
                      theta=theta, settings=settings, m=m, n=n, pairs=pairs)
        try:
            REGISTRY[st.method].start(st, rng)
        except BaseException:
            self._close_dist()
            raise
        ev = getattr(st.solver_state, "evaluation", None)
        st.previous = problem.objective(ev) if ev is not None else \
            st.solver_state.objective_row["objective"]
        return st

    # ------------------------------------------------------------------ one iteration
    def _fit_step(self, st, trace, it):
        st.flush(trace)
        problem = st.problem
        problem.timer = {}
        dist = getattr(problem, "take_phases", None)      # on a cluster (kmviz.similarity._dist)
        if dist is not None:
            dist()                    # the start's calls, like its timer, are not a step's
            if problem.scatter_seconds:                   # the one-off scatter of O
                trace.add_time("scatter_data", problem.scatter_seconds)
                problem.scatter_seconds = None
        step = REGISTRY[st.method].step(st, trace, it)
        for name, seconds in {**problem.timer, **(dist() if dist else {})}.items():
            trace.add_time(name, seconds)
        values = dict(step.values)
        obj = values["objective"]
        prev = st.previous
        values["relative_decrease"] = (prev - obj) / max(abs(prev), 1e-300) \
            if math.isfinite(prev) else math.nan
        st.previous = obj
        return replace(step, values=values)

    def _fit_finish(self, state, trace, validation) -> None:
        # the paper's convergence measure, (L - L*) / L* (Sec. 4.3), against the lowest
        # objective of this run; compare runs with relative_objective_difference(objectives,
        # best=the lowest over all of them)
        if trace.rows:
            rel = relative_objective_difference([r["objective"] for r in trace.rows])
            for row, value in zip(trace.rows, rel):
                row["relative_objective_difference"] = float(value)

    # ------------------------------------------------------------------ publish
    def _fit_publish(self, st, n_iter, trace):
        problem = st.problem
        published = REGISTRY[st.method].publish(st)["theta"]
        theta = np.array(published, dtype=np.float64)
        ev = getattr(st.solver_state, "evaluation", None)
        if ev is not None and ev.theta is published:
            P, Q = ev.P, ev.Q          # the line search already embedded theta
        else:
            tu, tv = problem.split(theta)
            P = problem.fu.forward(tu, problem.U)
            Q = problem.fv.forward(tv, problem.V)
        obj = trace.rows[-1]["objective"] if trace.rows else math.nan
        self._set_fitted(theta, problem.Du, P, Q, st.pairs.row_ptr, st.pairs.cols, obj,
                         n_iter, trace)
        self.user_tower_, self.item_tower_ = problem.fu, problem.fv
        self.user_input_, self.item_input_ = problem.U, problem.V

    def _set_fitted(self, theta, n_user_params, P, Q, seen_ptr, seen_idx, objective, n_iter,
                    trace):
        self.theta_ = np.array(theta, dtype=np.float64)
        self.n_user_params_ = int(n_user_params)
        self.user_factors_ = np.ascontiguousarray(P, dtype=np.float64)
        self.item_factors_ = np.ascontiguousarray(Q, dtype=np.float64)
        self._seen_ptr = np.ascontiguousarray(seen_ptr, dtype=np.int64)
        self._seen_idx = np.ascontiguousarray(seen_idx, dtype=np.int64)
        self.objective_ = float(objective)
        self.n_iter_ = int(n_iter)
        self.trace_ = trace

    def _check_fitted(self):
        super()._check_fitted("user_factors_")

    # ------------------------------------------------------------------ prediction
    def score_items(self, users) -> np.ndarray:
        """Scores of every item for the given users (a row per user; 1-D for one int)."""
        self._check_fitted()
        idx = self._indices(users, "users")
        return self.user_factors_[idx] @ self.item_factors_.T

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, ratings) -> dict:
        """Ranking metrics on held-out interactions (same index space).

        Every entry of ``ratings`` (those >= ``threshold`` when set) is a held-out positive.
        Each user with one is ranked over the items, leaving out the user's TRAINING
        positives except the pairs evaluated; averaged over those users:
        ``precision_at_{1,3,5}``, ``map_at_5`` -- the paper's MAP@5, eq. (52): the mean of
        P@K over K = 1..5 (not the textbook average precision of
        :func:`kmviz.metrics.map_at_k`) --, ``ndcg_at_5`` and ``recall_at_5``.
        """
        from .. import metrics

        users, items, eval_users, top, relevant = self._held_out_rankings(ratings,
                                                                          max(EVAL_KS))
        n = self.item_factors_.shape[0]
        # hits[r, t]: the t-th recommendation of user r is a held-out positive; P@K is
        # hits / K as kmviz.metrics.precision_at_k defines it (-1 padding is a miss)
        hits = np.isin(eval_users[:, None] * n + top, users * n + items) & (top >= 0)
        cum = np.cumsum(hits, axis=1)
        p_at = {K: float(np.mean(cum[:, min(K, top.shape[1]) - 1] / K)) for K in range(1, 6)}
        out = {f"precision_at_{k}": p_at[k] for k in EVAL_KS}
        out["map_at_5"] = float(np.mean([p_at[K] for K in range(1, 6)]))
        out["ndcg_at_5"] = metrics.ndcg_at_k(top, relevant, 5)
        out["recall_at_5"] = metrics.recall_at_k(top, relevant, 5)
        return out

    # ------------------------------------------------------------------ runs
    def _fitted_arrays(self) -> dict:
        """theta, the embeddings and the training positives (for ``exclude_seen``)."""
        self._check_fitted()
        return {"theta": self.theta_, "n_user_params": np.array([self.n_user_params_]),
                "user_factors": self.user_factors_, "item_factors": self.item_factors_,
                "seen_indptr": self._seen_ptr, "seen_indices": self._seen_idx,
                "objective": np.array([self.objective_])}

    @classmethod
    def _from_fitted_arrays(cls, arrays, params, trace, train=None):
        model = cls(**params)
        model._validate_params()
        model._set_fitted(arrays["theta"], int(np.asarray(arrays["n_user_params"])[0]),
                          arrays["user_factors"], arrays["item_factors"],
                          arrays["seen_indptr"], arrays["seen_indices"],
                          float(np.asarray(arrays["objective"])[0]), trace.n_iter, trace)
        return model

    @classmethod
    def from_fitted_arrays(cls, arrays, params=None, trace=None):
        """A fitted model from :meth:`_fitted_arrays` (and its params) without refitting."""
        trace = trace if trace is not None else Trace(solver="similarity.newton")
        return cls._from_fitted_arrays(arrays, dict(params or {}), trace)


def _stop_aware(callback):
    """``callback``, also saying stop once :func:`kmviz._jobs.stop_requested` (the solvers
    end an iteration early on that request; this ends the fit after its row)."""
    from .._jobs import stop_requested

    def wrapped(row):
        keep = callback(row) if callback is not None else None
        if keep is not False and stop_requested():
            return False
        return keep

    return wrapped


def relative_objective_difference(objectives, best=None) -> np.ndarray:
    """``(L - L*) / |L*|`` per iteration, the paper's convergence measure (Sec. 4.3);
    ``L*`` is ``best`` or the lowest objective in ``objectives``."""
    obj = np.asarray(objectives, dtype=np.float64)
    ref = float(np.nanmin(obj)) if best is None else float(best)
    return (obj - ref) / max(abs(ref), 1e-300)
