"""The one-class MF estimator with side information: alternating TRON over W and H.

``OneClassMF`` runs the shared outer loop of :class:`kmviz._base.IterativeEstimator`; one
outer iteration is a W-step (users) then an H-step (items), each a convex block solved by
TRON or gradient descent (:mod:`kmviz.ocmf.solvers`) on :class:`kmviz.ocmf.problem.BlockProblem`,
whose function, gradient and Hessian-vector products never touch the m x n matrix.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import pandas as pd

from .._base import IterativeEstimator, LoopPolicy
from .._params import RANDOM_STATE, Param
from .._threads import single_blas_thread
from .._validation import check_random_state
from ..parallel import active_backend
from ..trace import Trace
from . import _dist
from ._serving import EVAL_KS, Explanation, ServingMixin, _embed  # noqa: F401 (public names)
from ._state import SetupMixin
from .features import SideMatrix
from .losses import LOSSES
from .problem import PHASES
from .solvers import REGISTRY, gradient_descent, tron  # noqa: F401 (tron, gd: public names)

SOLVERS = ("tron", "gd")
SIDE_FEATURES = ("none", "user", "item", "both")
GRAPHS = ("none", "cointeraction", "features", "ratings")
SMALL_D = ("auto", "on", "off")
DTYPES = ("float64", "float32")
IDENTITY = ("known", "all", "none")
IDENTITY_LABELS = {"known": "those with training positives", "all": "all (the paper's X = I)",
                   "none": "none (inductive)"}
#: CG steps per Newton iteration at most (the extreme-similarity paper's cap; LIBLINEAR has
#: none). X = [I | F] is over-parameterized -- a feature column is also a combination of
#: identity columns, told apart only by the L2 terms -- so a block with dense side features
#: has a condition number of about (curvature / lambda) and CG would need 50-150 steps; a
#: truncated step is still a descent step and the outer iterations continue the work.
MAX_CG = 30
#: TRON solves each block in the eigenbasis of the fixed side's Gramian (``BlockProblem(
#: basis="eig")``: the same objective in rotated variables W V) with a plain Jacobi
#: preconditioner (``tron(pcg_alpha=1)``; LIBLINEAR's 0.01 mixes in 99% identity). The
#: all-pairs part of each row's Hessian block is then diagonal and seen exactly: 1-3 CG steps
#: per Newton step on MovieLens where W's own basis needed 4-8 (bench/ocmf/ocmf_timing.py).
TRON_BASIS, TRON_PCG_ALPHA = "eig", 1.0
#: Columns of ``inner_trace_`` (one row per Newton / GD iteration of every block).
INNER_COLUMNS = ("iteration", "block", "step", "f", "gnorm", "delta", "cg_iter", "boundary",
                 "prered", "actred", "accepted", "f_new", "alpha", "trials")


class OneClassMF(SetupMixin, ServingMixin, IterativeEstimator):
    """One-class matrix factorization with side information over all m x n pairs.

    The model of Yu, Huang, Dhillon & Lin (AAAI 2017): user i is embedded as
    ``b_i = W^T x_i`` (X: m x d user matrix), item j as ``h_j = W_2^T z_j`` (Z = I gives the
    paper's free H), the score is ``s_ij = b_i^T h_j``, and training minimizes eq. (2)

        sum_{(i,j) in Omega+} l(1, s_ij) + sum_{(i,j) not in Omega+} rho (a_bar - s_ij)^2
          + lambda_w (||W||^2 + lambda_g tr(B^T L B)) + lambda_h ||W_2||^2,    B = X W,

    a convex loss l on the observed positives and a rho-weighted squared loss toward a_bar on
    EVERY other entry of the m x n matrix, computed through the loss split (6)-(7) in
    O(nnz(X) k + |Omega+| k + nnz(L) k + (m + n) k^2) per function, gradient or
    Hessian-vector product (:mod:`kmviz.ocmf.allpairs`). Alternating minimization: each outer
    iteration solves the W block, then the H block, by TRON (LIBLINEAR's trust-region Newton-
    CG) or gradient descent with backtracking.
    ``score(ratings)`` is the precision@5 of :meth:`evaluate` (higher is better).

    Parameters
    ----------
    k : int, default=32
        Rank k of the factorization (latent dimension).
    loss : {"logistic", "squared", "squared_hinge"}, default="logistic"
        l on Omega+: ``log(1 + exp(-s))`` (LR-wSQ), ``(1 - s)^2`` (SQ-wSQ; with a_bar=0 and
        rho=1, SQ-SQ), ``max(0, 1 - s)^2``.
    rho : float, default=0.125
        Weight ``p_i q_j = rho`` of every unobserved entry (eq. (3)); the paper's grid is
        log2(rho) in {-9, -7, -5, -3, -1, 0}. The defaults of rho and the lambdas are the
        LR-wSQ optimum on MovieLens 100K (bench/ocmf/ocmf_ml100k.py); both scale with the data.
    a_bar : float, default=-1.0
        The value unobserved entries are pulled toward (-1 for the weighted methods, 0 for
        SQ-SQ, Supp-2.2). The all-pairs term of user u, ``rho sum_j (a_bar - b_u^T h_j)^2``,
        has the linear part ``-2 rho a_bar b_u^T sum_j h_j``: with -1 it pushes every user's
        vector away from the sum of the item vectors, and a user with few positives then
        ranks against the common taste. With a_bar = 0 and a smaller rho and lambda,
        LR-wSQ's test p@5 rose by 0.56 points on MovieLens 100K and 1.01 on latest-small
        (means over 3 splits of the paper's protocol, each tuned on validation:
        ``bench/ocmf/ocmf_ml100k.py --targets-only --seed s --save``, then ``--summarize``);
        tune it with rho and lambda.
    lambda_w, lambda_h : float, default=4.0
        L2 weights on W (users) and on H (items, W_2 with item features).
    lambda_g : float, default=0.0
        Graph weight: the user term is lambda_w (||W||^2 + lambda_g tr(B^T L B)), so the
        Laplacian term's weight is ``lambda_w * lambda_g`` (the paper grids log2 of that
        product). Needs a user graph (``user_graph=`` in fit, or ``graph``).
    solver : {"tron", "gd"}, default="tron"
        Inner solver of each block: TRON with LIBLINEAR's trust-region constants (run in the
        eigenbasis of the fixed side's Gramian with a Jacobi preconditioner for CG, see
        ``TRON_BASIS``), or gradient descent with the O(|Omega+|)-per-trial backtracking of
        Alg. 6.
    max_iter : int, default=15
        Outer alternating iterations (the paper validates over 15).
    tol : float, default=0.0
        Stop when the objective's relative decrease in one outer iteration is below tol
        (0: run max_iter iterations).
    inner_max_iter : int, default=5
        Newton (or GD) iterations per block at most.
    inner_tol : float, default=0.1
        A block stops when ``||grad|| <= inner_tol ||grad at the block's start||``. (LIBLINEAR
        measures against the gradient at W = 0; in a warm-started block with dense side
        features that norm is dominated by the feature directions, about m times an identity
        column's curvature, and lets the block stop before its identity part moves.)
    side_features : {"none", "user", "item", "both"}, default="none"
        Which of the interactions' OWN side information (``Ratings.user_features`` /
        ``item_features``) to use when ``fit`` is not given features explicitly. DataFrames
        are encoded by :func:`kmviz.ocmf.encode_features` (one-hot text columns,
        standardized numbers, a missing number -> the column mean, counted in a trace event).
    user_identity, item_identity : {"known", "all", "none"}, default="known", "all"
        Which users (items) get their own identity column in X (Z) beside their features,
        ``X = [I | F]``: those with training positives ("known"), every index ("all": the
        paper's X = I), or none (a purely inductive side; needs features). See the rules
        below for what this means for users and items without positives.
    graph : {"none", "cointeraction", "features", "ratings"}, default="none"
        The user graph when ``fit`` gets no ``user_graph``: kNN on shared training positives
        (:func:`kmviz.ocmf.cointeraction_graph`), kNN on the user features
        (:func:`kmviz.ocmf.knn_graph`) or the interactions' own ``user_graph``.
    graph_neighbors : int, default=10
        Neighbours per user of the built graphs.
    threshold : float or None, default=None
        Entries with value >= threshold are the positives (the paper's r >= 4 on MovieLens);
        None: every entry is a positive (one-class data). Applied to fit, validation and
        :meth:`evaluate` data alike.
    small_d : {"auto", "on", "off"}, default="auto"
        Use the small-d variant of Supp-1.2 (a d x d matrix X^T A X instead of m x k
        products) when ``d^2 + d k < m k`` ("auto"), always, or never.
    init_scale : float, default=0.1
        Standard deviation of the Gaussian initial W and W_2 (the paper does not say).
    dtype : {"float64", "float32"}, default="float64"
        Precision of the observed-pair passes TRON repeats: the value-and-gradient pass and
        the Hessian-vector products read the embeddings in single precision with "float32"
        (the Hessian-vector pass about twice as fast, an outer iteration 10-20% faster on
        MovieLens: bench/ocmf/ocmf_timing.py; implicit's ALS works in float32 too). Each pair's loss, the
        all-pairs Gramians, TRON and the objective stay in double precision.
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the initialization; the same int gives the same model and trace.

    Attributes
    ----------
    user_factors_ : ndarray (n_users, k)
        B = X W, with the rule below for users without data.
    item_factors_ : ndarray (n_items, k)
        H = Z W_2, likewise.
    W_user_, W_item_ : ndarray (d, k), (d_2, k)
        The variables: rows of the identity columns first, then one row per feature.
    known_users_, known_items_ : ndarray of bool
        Users / items with at least one training positive.
    user_side_, item_side_ : SideMatrix
        X and Z (identity rows, features, feature names).
    inner_trace_ : DataFrame
        One row per Newton (GD) iteration of every block: :data:`INNER_COLUMNS`.
    n_iter_ : int
    trace_ : Trace
        One row per outer iteration: ``objective`` and its split ``l_plus``, ``l_minus``,
        ``reg_w``, ``reg_graph``, ``reg_h``; per block (``w_``, ``h_``) the final gradient
        norm ``*_grad_norm`` and its ratio to the norm at the block's start
        ``*_grad_ratio``, the trust radius ``*_trust_radius``, counts ``n_*_newton``,
        ``n_*_cg``, ``n_*_rejected`` (GD: ``n_*_backtrack``, ``*_step_size``) and the stop
        reason ``*_stop``; phase times ``t_w_<phase>_s`` and ``t_h_<phase>_s`` for the
        phases precompute, function, gradient, hessian_vector, line_search, and
        ``t_objective_s``; the counts of function, gradient and Hessian-vector evaluations
        ``n_fun``, ``n_grad``, ``n_hess_vec``; with validation, ``validation_<metric>`` of
        :meth:`evaluate`.

    Notes
    -----
    Users and items without data are handled by these rules:

    - a user (item) with training positives has an identity column (unless the identity
      setting is "none"); its embedding is its identity part plus its feature part;
    - a user (item) without training positives is COLD under "known" (the default for
      users): no identity column, so it is embedded from its features alone,
      ``b_i = W_F^T f_i``; under "all" (the default for items, the paper's X = I) it keeps an
      identity column that only ever sees the all-pairs term, so the model learns that
      nobody likes it and ranks it low -- right for an item nobody rated highly, wrong for a
      new item: use item_identity="known" to rank new items from their features;
    - a user (item) with no identity column and no feature value (a row of zeros) gets the
      mean embedding of the users (items) with training positives, so it is ranked like an
      average user (a learned popularity order). ``explain`` says which rule applied;
    - indices outside the training index space are refused (the model is tied to it).

    Feature matrices passed to ``fit`` must be finite with one row per user (item) in index
    order; a row of zeros means "no features". DataFrames are encoded by
    :func:`~kmviz.ocmf.encode_features` and must have no missing numbers.

    ``fit(interactions, *, user_features=None, item_features=None, user_graph=None,
    callback=None, validation=None)``: ``interactions`` is a :class:`~kmviz.data.Ratings`;
    ``validation`` held-out interactions in the same index space add the metrics of
    :meth:`evaluate` to every trace row. The objective never rises (each block only accepts
    decreasing steps); ``objective_increase`` records rounding-level changes.

    References
    ----------
    H.-F. Yu, H.-Y. Huang, I. S. Dhillon, C.-J. Lin, "A Unified Algorithm for One-class
    Structured Matrix Factorization with Side Information", AAAI 2017: eqs. (2)-(15),
    Alg. 1-6, Supp-1 and Supp-2.
    """

    _parameter_constraints = {
        "k": Param(int, low=1, high=100_000, form_high=256, label="k (rank)",
                   help="Rank k of W (d × k) and H (n × k), eq. (2)."),
        "loss": Param(str, options=LOSSES, label="loss on Ω⁺",
                      option_labels={"logistic": "logistic (LR-wSQ)",
                                     "squared": "squared (SQ-wSQ / SQ-SQ)",
                                     "squared_hinge": "squared hinge"},
                      help="The convex loss l on observed positives (Table 1); unobserved "
                           "entries always get the weighted squared loss ρ(ā − s)²."),
        "rho": Param(float, low=0, high=1e12, closed="neither", step=0.01, label="ρ (rho)",
                     help="Weight pᵢq_j = ρ of every unobserved entry, eq. (3); the paper "
                          "grids log₂ρ in {−9, −7, −5, −3, −1, 0}."),
        "a_bar": Param(float, low=-1e6, high=1e6, step=0.5, label="ā (a_bar)",
                       help="Target ā of unobserved entries, eq. (3): −1 for the weighted "
                            "methods, 0 for SQ-SQ (Supp-2.2). With −1 every user is pushed "
                            "away from the average item; 0 (with a smaller ρ and λ) can "
                            "rank better: tune it."),
        "lambda_w": Param(float, low=0, high=1e12, closed="neither", step=0.5, label="λ_w (lambda_w)",
                          help="L2 weight on W (users), eq. (2)."),
        "lambda_h": Param(float, low=0, high=1e12, closed="neither", step=0.5, label="λ_h (lambda_h)",
                          help="L2 weight on H (items; W₂ with item features), eq. (2)."),
        "lambda_g": Param(float, low=0, high=1e12, step=0.5, label="λ_g (lambda_g)",
                          help="Graph weight: R(W) = tr(WᵀW + λ_g BᵀLB), eq. (2); needs a "
                               "user graph."),
        "solver": Param(str, options=SOLVERS, label="block solver",
                        option_labels={"tron": "TRON (trust-region Newton-CG, Alg. 4-5)",
                                       "gd": "gradient descent + backtracking (Alg. 6)"},
                        help="Solver of each W / H block: TRON with LIBLINEAR's trust-region "
                             "constants (Jacobi-preconditioned CG in the eigenbasis of the "
                             "other side's Gramian) or gradient descent with the "
                             "O(|Ω⁺|)-per-trial line search."),
        "max_iter": Param(int, low=1, high=100_000, form_high=100, label="outer iterations",
                          help="Alternating W/H iterations (the paper validates over 15)."),
        "tol": Param(float, low=0, high=1.0, step=1e-4, label="tol",
                     help="Stop when the objective's relative decrease in one outer "
                          "iteration is below this (0: run all iterations)."),
        "inner_max_iter": Param(int, low=1, high=10_000, form_high=50, label="Newton steps per block",
                                advanced=True,
                                help="Newton (or GD) iterations per W or H block at most."),
        "inner_tol": Param(float, low=0, closed="neither", high=1, label="block tolerance ε",
                           advanced=True,
                           help="A block stops at ‖∇g‖ ≤ ε ‖∇g at the block's start‖ "
                                "(or after the Newton steps allowed)."),
        "side_features": Param(str, options=SIDE_FEATURES, label="side features",
                               help="Which of the dataset's own side features to use: user "
                                    "features X, item features Z (H = Z W₂), both or none."),
        "user_identity": Param(str, options=IDENTITY, label="user identity columns",
                               advanced=True, option_labels=IDENTITY_LABELS,
                               help="X = [I | F]: which users get their own column beside "
                                    "their features. known: users with training positives "
                                    "(the others are cold, scored from features); all: "
                                    "every user (the paper's X = I); none: inductive."),
        "item_identity": Param(str, options=IDENTITY, label="item identity columns",
                               advanced=True, option_labels=IDENTITY_LABELS,
                               help="Z = [I | F] for items. all (default): an item without "
                                    "positives is fitted as disliked; known: it is a new "
                                    "item, ranked from its features."),
        "graph": Param(str, options=GRAPHS, label="user graph",
                       option_labels={"none": "none",
                                      "cointeraction": "co-interaction kNN",
                                      "features": "kNN on user features",
                                      "ratings": "the dataset's user graph"},
                       help="The user graph S of the regularizer tr(BᵀLB), L = D − S, when "
                            "fit gets none."),
        "graph_neighbors": Param(int, low=1, high=10_000, form_high=100, label="graph neighbours",
                                 advanced=True, help="Neighbours per user in a built graph."),
        "threshold": Param(float, low=-1e12, high=1e12, none_ok=True, step=0.5, label="positive threshold",
                           help="Entries with value ≥ threshold are positives (the paper's "
                                "r ≥ 4); empty: every entry is a positive."),
        "small_d": Param(str, options=SMALL_D, label="small-d variant", advanced=True,
                         help="Use M̄ = XᵀAX (d × d) when d² + dk < mk (Supp-1.2)."),
        "init_scale": Param(float, low=0, high=1e6, closed="neither", label="init scale",
                            advanced=True,
                            help="Standard deviation of the Gaussian initial W and W₂."),
        "dtype": Param(str, options=DTYPES, label="pair-pass precision", advanced=True,
                       option_labels={"float64": "float64 (double)",
                                      "float32": "float32 (single, faster passes)"},
                       help="Precision of the observed-pair passes TRON repeats (scores, "
                            "gradient, Hessian-vector products); everything else, and each "
                            "pair's loss, stays in double precision."),
        "random_state": Param(RANDOM_STATE, none_ok=True, label="seed",
                              help="Seed of the initialization (same seed, same model)."),
    }
    _numerical_hint = "lower rho or raise lambda_w / lambda_h, and check the features' scale."

    def __init__(self, k=32, *, loss="logistic", rho=0.125, a_bar=-1.0, lambda_w=4.0,
                 lambda_h=4.0, lambda_g=0.0, solver="tron", max_iter=15, tol=0.0,
                 inner_max_iter=5, inner_tol=0.1, side_features="none", user_identity="known",
                 item_identity="all", graph="none", graph_neighbors=10, threshold=None,
                 small_d="auto", init_scale=0.1, dtype="float64", random_state=None):
        self.k = k
        self.loss = loss
        self.rho = rho
        self.a_bar = a_bar
        self.lambda_w = lambda_w
        self.lambda_h = lambda_h
        self.lambda_g = lambda_g
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.inner_max_iter = inner_max_iter
        self.inner_tol = inner_tol
        self.side_features = side_features
        self.user_identity = user_identity
        self.item_identity = item_identity
        self.graph = graph
        self.graph_neighbors = graph_neighbors
        self.threshold = threshold
        self.small_d = small_d
        self.init_scale = init_scale
        self.dtype = dtype
        self.random_state = random_state

    # ------------------------------------------------------------------ fit
    def fit(self, interactions, *, user_features=None, item_features=None, user_graph=None,
            callback=None, validation=None):
        """Fit on ``interactions`` (a Ratings); see the class docstring.

        Parameters
        ----------
        interactions : kmviz.data.Ratings
            Training data; its positives are every entry, or those >= ``threshold``.
        user_features : DataFrame, array or sparse matrix (n_users x d_u), optional
            Side features of the users, one row per user index (a zero row: no features).
            Overrides ``side_features``.
        item_features : DataFrame, array or sparse matrix (n_items x d_v), optional
            Side features of the items (H = Z W_2).
        user_graph : array or sparse matrix (n_users x n_users), optional
            Symmetric nonnegative similarities S; the regularizer uses L = D - S.
        callback : callable, optional
            ``callback(row)`` after each outer iteration; False or StopIteration stops.
        validation : Ratings, optional
            Held-out interactions in the same index space (``validation_<metric>`` columns).

        Returns
        -------
        self
        """
        return super().fit(interactions, callback=callback, validation=validation,
                           user_features=user_features, item_features=item_features,
                           user_graph=user_graph)

    def _loop_policy(self, params, state) -> LoopPolicy:
        # every block step minimizes the objective over its block: it can never rise
        return replace(super()._loop_policy(params, state), monotone=True)

    def _solver_name(self, prm, state):
        return REGISTRY[state.method].name(state)

    @contextmanager
    def _fit_context(self, prm):
        # Numba's threads run the pair sums; BLAS only sees (m x k) x (k x k) products, and a
        # multi-threaded OpenBLAS next to Numba's OpenMP threads oversubscribes the cores
        try:
            with single_blas_thread():
                yield
        finally:
            # on a cluster: free the per-pair state the fit left on the workers
            dist = self.__dict__.pop("_dist_pairs", None)
            if dist is not None:
                dist.close()

    # ------------------------------------------------------------------ the solver's calls
    def _fit_start(self, data, prm, *, validation=None, **inputs):
        st = self._fit_setup(data, prm, validation=validation, **inputs)
        st.rng = check_random_state(self.random_state)
        # read here, at each fit, so that a benchmark may set the module's constants
        st.max_cg, st.tron_basis, st.tron_pcg_alpha = MAX_CG, TRON_BASIS, TRON_PCG_ALPHA
        st.timer_phases = PHASES + _dist.PHASES
        REGISTRY[st.method].start(st, st.rng)
        return st

    def _fit_step(self, st, trace, it):
        st.flush(trace)
        backend = active_backend()
        if backend is not None and st.dist is None:
            # the observed pairs go to the workers once per fit (kmviz.ocmf._dist)
            with trace.phase("scatter_data"):
                st.dist = self._dist_pairs = _dist.DistPairs(backend, st.loss, st.prm["k"])
        st.on_cluster = backend is not None
        return REGISTRY[st.method].step(st, trace, it)

    # ------------------------------------------------------------------ publish
    def _fit_publish(self, st, n_iter, trace):
        arrays = REGISTRY[st.method].publish(st)
        inner = np.array(arrays["inner"], dtype=np.float64).reshape(-1, len(INNER_COLUMNS))
        self._set_fitted(arrays["W_user"], arrays["W_item"], st.X, st.Z, st.known_users,
                         st.known_items, st.pairs.row_ptr, st.pairs.cols, inner, n_iter,
                         trace)

    def _set_fitted(self, Wu, Wv, X, Z, known_users, known_items, seen_ptr, seen_idx, inner,
                    n_iter, trace):
        self.W_user_ = np.array(Wu, dtype=np.float64)
        self.W_item_ = np.array(Wv, dtype=np.float64)
        self.user_side_, self.item_side_ = X, Z
        self.known_users_ = np.array(known_users, dtype=bool)
        self.known_items_ = np.array(known_items, dtype=bool)
        self.user_factors_, self._user_mean_rule, self._user_mean = _embed(
            X, self.W_user_, self.known_users_)
        self.item_factors_, self._item_mean_rule, self._item_mean = _embed(
            Z, self.W_item_, self.known_items_)
        self._seen_ptr = np.ascontiguousarray(seen_ptr, dtype=np.int64)
        self._seen_idx = np.ascontiguousarray(seen_idx, dtype=np.int64)
        self.inner_trace_ = pd.DataFrame(np.asarray(inner, dtype=np.float64).reshape(
            -1, len(INNER_COLUMNS)), columns=list(INNER_COLUMNS))
        self.n_iter_ = int(n_iter)
        self.trace_ = trace

    def _check_fitted(self):
        super()._check_fitted("user_factors_")

    # ------------------------------------------------------------------ evaluation
    #: :meth:`score` is ``precision_at_5`` of :meth:`evaluate` (the headline ranking metric).
    score_metric = "precision_at_5"

    # ------------------------------------------------------------------ runs
    def _fitted_arrays(self) -> dict:
        """W, W_2, the embeddings, the known masks, the training positives (for
        ``exclude_seen``), X and Z (for ``explain``) and the inner trace."""
        self._check_fitted()
        arrays = {"W_user": self.W_user_, "W_item": self.W_item_,
                  "known_users": self.known_users_, "known_items": self.known_items_,
                  "seen_indptr": self._seen_ptr, "seen_indices": self._seen_idx,
                  "inner_trace": self.inner_trace_.to_numpy(dtype=np.float64)}
        arrays.update(self.user_side_.to_arrays("user"))
        arrays.update(self.item_side_.to_arrays("item"))
        return arrays

    @classmethod
    def _from_fitted_arrays(cls, arrays, params, trace, train=None):
        model = cls(**params)
        model._validate_params()
        X = SideMatrix.from_arrays(arrays, "user")
        Z = SideMatrix.from_arrays(arrays, "item")
        model._set_fitted(arrays["W_user"], arrays["W_item"], X, Z, arrays["known_users"],
                          arrays["known_items"], arrays["seen_indptr"],
                          arrays["seen_indices"], arrays["inner_trace"], trace.n_iter, trace)
        return model

    @classmethod
    def from_fitted_arrays(cls, arrays, params=None, trace=None):
        """A fitted model from :meth:`_fitted_arrays` (and its params) without refitting."""
        trace = trace if trace is not None else Trace(solver="ocmf.tron")
        return cls._from_fitted_arrays(arrays, dict(params or {}), trace)
