"""The generalized factorization machine estimator: Algorithm 1 (One-Pass gFM) on a stream.

``GeneralizedFM`` runs the shared outer loop of :class:`kmviz._base.IterativeEstimator` with
one mini-batch per outer iteration: the first batch initializes (Lanczos), every later one
is one noisy power step (:mod:`kmviz.gfm.onepass`). ``partial_fit`` feeds one batch at a
time through the same code, so a stream of any length fits in O(kd) memory.
"""

from __future__ import annotations

import math

import numpy as np

from .._base import IterativeEstimator, LoopPolicy
from .._params import RANDOM_STATE, Param
from .._validation import check_random_state
from ..exceptions import InvalidParameterError
from ..trace import Trace
from . import batching, lowrank, onepass
from .batching import as_batch, as_fit_data
from .data import RegressionData, as_regression
from .design import RatingsDesign, is_ratings
from .operators import ENGINES, ChunkedBatch, Standardizer, check_rows, project
from .recovery import as_truth
from ._state import FitState, StreamState
from .solvers import DIVERGENCE_ADVICE, PHASES, REGISTRY, check_stream_rank, onepass_step

SOLVERS = ("auto", "onepass", "als")

class GeneralizedFM(IterativeEstimator):
    """Generalized factorization machine ``y = b + x^T w + x^T M x`` (Lin & Ye, eq. (1)).

    M is symmetric of rank at most 2k, kept as ``M = (U V^T + V U^T)/2`` with U, V of size
    d x k: no PSD constraint and no zero diagonal (the "generalized" of gFM), so indefinite
    interaction matrices are representable. Learned by Algorithm 1 (One-Pass gFM): the first
    mini-batch initializes U by Lanczos, every later FRESH batch makes one noisy power step
    ``U <- QR((H_1 - h_2/2 I + M) U)`` and updates w and V; each batch is used once, only
    matrix-vector products touch the data and the state is O(kd). See
    :mod:`kmviz.gfm.onepass` for the steps.
    ``score(X, y)`` is minus the RMSE of :meth:`evaluate` (higher is better).

    Parameters
    ----------
    rank : int, default=2
        k, the rank of the target M* (Alg. 1's "desired rank k"); at most d.
    batch_size : int or None, default=None
        n, instances per mini-batch (Alg. 1). None: the data's rows divided by
        ``n_batches``. The theory asks n >= C k^3 d; in practice n ~ 10-20 k d gives a clean
        linear rate (digest, Part B5).
    n_batches : int or None, default=11
        Mini-batches a :meth:`fit` consumes, the initialization batch included (T + 1 in the
        paper's terms: T = n_batches - 1 power steps). None: every full batch in the data.
    standardize : bool or None, default=None
        None: on, except for the ALS solver on sparse X (one-hot designs, where scaling a
        rare column up would weaken its ridge). True: fit the model on
        ``z = (x - mean) / std`` with the mean and standard deviation of the FIRST batch,
        frozen for the rest of the stream (the theory assumes x ~ N(0, I)). The scaling is
        applied inside the products, so X is never copied and sparse X stays sparse; the
        fitted ``coef_``, ``U_``, ``V_`` and ``intercept_`` are mapped back to the original
        feature units.
    fit_intercept : bool, default=True
        Learn an intercept b (not in the paper; see :mod:`kmviz.gfm.onepass`). With
        ``standardize=False, fit_intercept=False`` the steps are exactly Algorithm 1.
    engine : {"auto", "numba", "numpy"}, default="auto"
        The per-batch products: fused Numba sweeps, NumPy/BLAS, or Numba for dense data
        with d >= 128 (measured crossover, bench/gfm/gfm_kernels.py). Sparse X always goes
        through SciPy's sparse products.
    solver : {"auto", "onepass", "als"}, default="auto"
        "onepass": Algorithm 1 on a stream of fresh batches (the paper's method; it assumes
        roughly Gaussian features). "als": the eq. (3) baseline, alternating least squares
        over all the data with a ridge ``l2``, one pass per outer iteration
        (:mod:`kmviz.gfm.als`); for real data. "auto": "als" for ratings (the
        factorization-machine design), "onepass" for arrays and streams.
    n_passes : int, default=10
        ALS passes over the data ("als" only).
    l2 : float, default=1e-2
        Ridge ``l2/2 (||w||^2 + ||U||^2 + ||V||^2)`` added to eq. (3)'s loss ("als" only).
    tol : float, default=1e-5
        ALS stops when a pass lowers the objective by less than this fraction ("als" only;
        Algorithm 1 consumes all its batches).
    user_ids, item_ids : bool or None, default=None
        Ratings only: include the one-hot user / item block in the design
        (:class:`~kmviz.gfm.design.RatingsDesign`). None: when its ids repeat, i.e. there
        are at least two of them and on average at least two training ratings per id (so
        a table with one rating per row, such as Boston's tracts, becomes plain x -> y).
    side_features : bool, default=True
        Ratings only: include the users' and items' side features.
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the Lanczos start vector of the initialization (the only random choice) and
        the shuffle of ratings into batches.

    Attributes
    ----------
    coef_ : ndarray (d,)
        w, the first-order coefficients, in the original feature units.
    intercept_ : float
        b in the original units (nonzero even without ``fit_intercept`` when standardizing).
    U_, V_ : ndarray (d, k)
        Factors of ``M = (U V^T + V U^T)/2`` in the original feature units.
    n_iter_ : int
        Batches consumed (the trace's rows).
    n_seen_ : int
        Instances consumed.
    n_features_in_ : int
    feature_names_in_ : ndarray of str or None
    trace_ : Trace
        One row per batch: ``t`` (the paper's t; 0 = initialization), ``n_seen``,
        ``batch_size``, ``objective`` (eq. (3)'s loss ``||r||^2/2n`` on the fresh batch
        under the model before the step), ``train_rmse`` (``||r||/sqrt(n)``, the same residual:
        a progressive-validation error, as the batch is fresh), ``h2``, ``h3_norm``,
        ``n_matvec`` (Lanczos products, initialization only), phase times ``t_init_s``,
        ``t_residual_s``, ``t_qr_s``, ``t_v_update_s``; with ``validation``,
        ``validation_rmse`` and ``validation_nmse``; with ``truth``, the paper's error
        quantities (:func:`kmviz.gfm.recovery.recovery_errors`: ``err_w``, ``err_M``,
        ``err_M_spec``, ``eps``, ``eps_spec``, ``rel_err``, ``tan_theta``) and
        ``contraction = eps_t / eps_{t-1}``. With ``solver="als"`` one row per pass:
        ``pass``, ``n_seen`` (instances read so far), ``objective`` (eq. (3) + ridge on all
        the training data, non-increasing), ``train_rmse``, ``n_inner`` (coordinate sweeps;
        LSQR iterations on a standardized sparse design), phase times ``t_init_s``,
        ``t_caches_s``, ``t_solve_U_s``, ``t_solve_V_s``, ``t_objective_s``.
    solver_ : str
        The solver that ran ("onepass" or "als"; "auto" resolved).
    model_ : OnePassState
        w, U, V, b in the standardized coordinates the solvers work in, the scaling and the
        counters (:class:`~kmviz.gfm.onepass.OnePassState`): what ``predict`` and saved runs
        read.
    design_ : RatingsDesign or None
        The FM design of the training ratings (None for arrays): ``predict``, ``evaluate``
        and ``validation`` put ratings through it.
    stream_ : StreamState or None
        What :meth:`partial_fit` continues (:class:`~kmviz.gfm._state.StreamState`: the
        model, the truth, the divergence yardstick); None after an ALS fit, where
        ``partial_fit`` starts a new stream.

    Notes
    -----
    Data: instances are ROWS (n_samples, n_features), the transpose of the paper's X.
    ``fit`` takes ``fit(X, y)``, ``fit((X, y))``, ``fit(RegressionData(X, y))`` or
    ``fit(stream)`` with ``stream`` a sequence of batches (``(X_b, y_b)`` pairs or
    :class:`~kmviz.gfm.operators.ChunkedBatch`, for example a
    :class:`~kmviz.gfm.synthetic.GFMStream`); arrays are cut into consecutive batches, the
    rows beyond ``n_batches * batch_size`` are unused (a trace event says how many).
    ``validation=(X_val, y_val)`` adds ``validation_rmse``/``validation_nmse`` to every row;
    ``truth=(w_star, M_star)`` (or ``(w_star, (U_star, lambda_star))``, a
    :class:`~kmviz.gfm.recovery.Truth`, a synthetic problem) adds the recovery errors,
    computed from the low-rank factors without forming d x d matrices (M_star itself, if
    given dense, is eigendecomposed once).

    A :class:`kmviz.data.Ratings` is fitted as factorization-machine regression data
    (:class:`~kmviz.gfm.design.RatingsDesign`: one-hot user, one-hot item, side features ->
    rating; sparse), shuffled with ``random_state`` before it is cut into batches (ratings
    files are sorted by user); ``evaluate``, ``predict`` and ``validation`` then take Ratings
    in the same index space. Caveat (bench/gfm/gfm_robustness.py): one-hot features are far from
    N(0, I) and Algorithm 1 diverges on them, hence ``solver="auto"`` fits ratings by ALS.
    A diverging one-pass fit (batch error beyond 3x the mean predictor's) gets one trace
    warning and a :class:`~kmviz.exceptions.ConvergenceWarning` saying what to change.

    ``fit`` always starts a new stream; ``partial_fit(X, y)`` continues the current one (or
    starts one) with one batch. Feeding the same batches to ``partial_fit`` one by one gives
    the same model as ``fit`` on them.

    References
    ----------
    M. Lin, J. Ye, "A Non-convex One-Pass Framework for Generalized Factorization Machine and
    Rank-One Matrix Sensing", NIPS 2016: Alg. 1, eq. (1)-(3), Theorem 1, Lemmas 10-12.
    """

    _parameter_constraints = {
        "rank": Param(int, low=1, high=10_000, form_high=20, label="k (rank)",
                      help="Rank k of the second-order matrix M* (eq. (1), Alg. 1's desired "
                           "rank k); at most the number of features d."),
        "batch_size": Param(int, low=1, high=100_000_000, none_ok=True, step=500, label="n (batch size)",
                            help="Instances per mini-batch n (Alg. 1); empty: rows / "
                                 "n_batches. Theory: n ≥ C k³ d; in practice 10-20 k d."),
        "n_batches": Param(int, low=1, high=1_000_000, none_ok=True, form_high=200,
                           label="T + 1 (batches)",
                           help="Mini-batches consumed: one initialization batch (line 2) "
                                "plus T power steps (lines 3-9); empty: all full batches."),
        "standardize": Param(bool, none_ok=True, label="standardize features",
                             help="Fit on z = (x − mean)/std with the first batch's mean and "
                                  "std (the theory assumes x ~ N(0, I)); coefficients are "
                                  "reported in the original units. Automatic: on, except "
                                  "for ALS on sparse one-hot designs."),
        "fit_intercept": Param(bool, label="intercept b",
                               help="Learn an intercept b (not in the paper; it cancels in "
                                    "H₁ − h₂/2 I). Off, with standardize off: exactly Alg. 1."),
        "engine": Param(str, options=ENGINES, advanced=True, label="engine",
                        help="Per-batch products: fused Numba sweeps, NumPy/BLAS, or auto "
                             "(Numba for dense d ≥ 128, measured in bench/gfm/gfm_kernels.py); "
                             "sparse data always uses SciPy."),
        "solver": Param(str, options=SOLVERS, label="solver",
                        option_labels={"auto": "auto (ALS for ratings, one-pass for arrays)",
                                       "onepass": "one-pass (Algorithm 1)",
                                       "als": "ALS on eq. (3), all data"},
                        help="One-pass: Algorithm 1, each batch used once (assumes roughly "
                             "Gaussian features). ALS: alternating least squares over all "
                             "the data, several passes (for real data). Auto: ALS for "
                             "ratings, one-pass for arrays."),
        "n_passes": Param(int, low=1, high=100_000, form_high=200, label="ALS passes",
                          help="Passes over the data of the ALS solver (one per iteration)."),
        "l2": Param(float, low=0.0, high=1e12, step=1e-3, label="λ (ALS ridge)",
                    help="Ridge λ/2 (‖w‖² + ‖U‖² + ‖V‖²) added to eq. (3) by the ALS solver."),
        "tol": Param(float, low=0.0, high=1.0, step=1e-5, advanced=True, label="ALS tolerance",
                     help="ALS stops when a pass lowers the objective by less than this "
                          "fraction (one-pass always consumes its batches)."),
        "user_ids": Param(bool, none_ok=True, advanced=True, label="one-hot user ids",
                          help="Ratings: put a one-hot user block in the design. Automatic: "
                               "when users have on average two or more training ratings."),
        "item_ids": Param(bool, none_ok=True, advanced=True, label="one-hot item ids",
                          help="Ratings: put a one-hot item block in the design. Automatic: "
                               "when there are two or more items with on average two or "
                               "more training ratings."),
        "side_features": Param(bool, advanced=True, label="side features",
                               help="Ratings: put the users' and items' side features in the "
                                    "design."),
        "random_state": Param(RANDOM_STATE, none_ok=True, label="seed",
                              help="Seed of the Lanczos start vector of the initialization "
                                   "and of the shuffle of ratings (same seed, same model)."),
    }
    _numerical_hint = ("the error grew without bound: " + DIVERGENCE_ADVICE)

    def __init__(self, rank=2, *, batch_size=None, n_batches=11, standardize=None,
                 fit_intercept=True, engine="auto", solver="auto", n_passes=10, l2=1e-2,
                 tol=1e-5, user_ids=None, item_ids=None, side_features=True,
                 random_state=None):
        self.rank = rank
        self.batch_size = batch_size
        self.n_batches = n_batches
        self.standardize = standardize
        self.fit_intercept = fit_intercept
        self.engine = engine
        self.solver = solver
        self.n_passes = n_passes
        self.l2 = l2
        self.tol = tol
        self.user_ids = user_ids
        self.item_ids = item_ids
        self.side_features = side_features
        self.random_state = random_state

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y=None, *, callback=None, validation=None, truth=None):
        """Fit on a stream of fresh batches cut from ``(X, y)`` or given as a sequence.

        Parameters
        ----------
        X : array (n, d), sparse matrix, DataFrame, (X, y) tuple, RegressionData, sequence of
            batches, or a kmviz.data.Ratings (FM design: see the class Notes)
        y : array (n,), optional
            Targets when X is an array.
        callback : callable, optional
            ``callback(row)`` after every batch; returning False or raising StopIteration
            stops cleanly with the model learned so far.
        validation : (X_val, y_val) or RegressionData, optional
            Held-out data: ``validation_rmse`` and ``validation_nmse`` in every row.
        truth : (w_star, M_star), (w_star, (U_star, lambda_star)), Truth or GFMProblem
            Ground truth (synthetic data): the recovery errors in every row.

        Returns
        -------
        self
        """
        data = as_fit_data(X, y)
        return super().fit(data, callback=callback, validation=validation, truth=truth)

    def planned_iterations(self, data=None) -> int:
        """Outer iterations of a fit: ALS passes, or the batches of Algorithm 1 (with
        ``n_batches=None`` as many as the data holds, when ``data`` is given)."""
        solver = self._resolve_solver(self.solver, data) if data is not None else (
            "onepass" if self.solver == "auto" else self.solver)
        if solver == "als":
            return int(self.n_passes)
        if self.n_batches is not None:
            return int(self.n_batches)
        n = len(data.values) if is_ratings(data) else getattr(data, "n_samples", None)
        if n and self.batch_size:
            return max(1, int(n) // int(self.batch_size))
        return 1

    def _loop_policy(self, params, state) -> LoopPolicy:
        if state.method == "als":  # passes are a convergence budget; no pass raises f
            tol, n_passes = params["tol"], int(params["n_passes"])
            return LoopPolicy(max_iter=n_passes, tol=tol, monotone=True,
                              budget="n_passes" if tol > 0 else None,  # tol = 0: no rule
                              end_message="" if tol > 0 else f"all {n_passes} ALS passes done")
        # One outer iteration per batch, and no stopping on the objective: the objective is
        # measured on fresh data each time, so it may rise by chance (noise, or the first
        # step, where M is still 0) without anything being wrong.
        return LoopPolicy(max_iter=len(state.batches),
                          end_message=f"all {len(state.batches)} batches used")

    def _solver_name(self, params, state):
        return REGISTRY[state.method].name(state)  # "auto" resolved by _fit_start

    @staticmethod
    def _resolve_solver(solver, data) -> str:
        """"auto": ALS for ratings (real data in the FM design), one-pass for arrays."""
        if solver != "auto":
            return solver
        return "als" if is_ratings(data) else "onepass"

    def _memory_estimate(self, params, data, **inputs):
        from .._memory import F8, data_sizes, feature_width

        k = params["rank"]
        if is_ratings(data):
            m, n, s = data_sizes(data)
            f = feature_width(None, data, "user") + feature_width(None, data, "item")
            rows, d, nnz = s, m + n + f, s * (2 + f)
        else:  # arrays (a stream's size is not known up front: its batches only)
            rows, d, nnz = data_sizes(data)
        batch = params["batch_size"] or (rows // params["n_batches"] if params["n_batches"]
                                         else rows)
        return {f"the design matrix: {rows} rows, {nnz} nonzeros (and a shuffled copy)":
                    4 * F8 * nnz + 2 * F8 * rows,
                f"factors and eigensolver vectors: {d} features x rank={k}":
                    12 * F8 * d * (k + 1),
                f"one batch: batch_size={batch} rows x rank={k}": 4 * F8 * batch * (k + 1)}

    def _fit_start(self, data, params, *, validation=None, truth=None) -> FitState:
        owner = type(self).__name__
        solver = self._resolve_solver(params["solver"], data)
        if solver == "als":
            st = self._als_start(data, params, truth=truth)
        else:
            cut = batching.cut(data, params, owner)
            st = FitState(prm=dict(params), method="onepass", owner=owner,
                          stream=StreamState(rng=check_random_state(params["random_state"])),
                          design=cut.design, design_events=cut.design_events,
                          feature_names=cut.feature_names, batches=cut.batches,
                          n_unused=cut.n_unused,
                          check=not isinstance(data, RegressionData))  # arrays: checked whole
            if truth is not None:
                st.stream.truth = as_truth(truth, d=batching.first_d(st.batches))
        if validation is not None:  # converted and checked once, for the metrics of every row
            st.validation = batching.as_data(validation, st.design, owner).checked(
                "validation X")
            d = st.X.shape[1] if st.method == "als" else batching.first_d(st.batches)
            check_rows(st.validation.X, st.validation.y, d=d, what="validation X")
        st.rng = st.stream.rng
        st.tol = params["tol"] if st.method == "als" else None
        REGISTRY[st.method].start(st, st.rng)
        return st

    def _als_start(self, data, params, *, truth=None) -> FitState:
        """The ALS solver's state: all the training data in memory, one pass per iteration."""
        owner = type(self).__name__
        if not (is_ratings(data) or isinstance(data, RegressionData)):
            raise InvalidParameterError(
                f"The 'solver' parameter of {owner} is 'als', which needs all the data at "
                "once (X and y arrays or ratings), not a stream of batches; use "
                "solver='onepass' for streams.")
        design, events = None, []
        if is_ratings(data):
            design, events = batching.make_design(data, params)
            data = design.transform(data)
        data = data.checked()
        batching.check_rank(owner, params["rank"], data.n_features)
        if data.n_samples < params["rank"]:
            raise ValueError(f"X has {data.n_samples} rows, fewer than rank={params['rank']}; "
                             "pass more rows or lower rank.")
        st = FitState(prm=dict(params), method="als", owner=owner,
                      stream=StreamState(rng=check_random_state(params["random_state"])),
                      design=design, design_events=events, feature_names=data.feature_names,
                      X=data.X, y=data.y)
        if truth is not None:
            st.stream.truth = as_truth(truth, d=data.n_features)
        return st

    def _trace_metrics(self, st, validation):
        # the validation rows were checked by _fit_start: the unchecked core, every row
        return self._metrics(st.validation.X, st.validation.y)

    def _fit_step(self, st: FitState, trace, it):
        if it == 1:
            for message, values in st.design_events:
                trace.event("info", message, **values)
        for name in PHASES[st.method]:
            trace.add_time(name, 0.0)
        return REGISTRY[st.method].step(st, trace, it)

    def _fit_publish(self, st: FitState, n_iter, trace):
        m = st.stream.model
        arrays = REGISTRY[st.method].publish(st)
        self.coef_ = arrays["coef"]
        self.U_ = arrays["U"]
        self.V_ = arrays["V"]
        self.intercept_ = arrays["intercept"]
        self.n_seen_ = arrays["n_seen"]
        self.n_features_in_ = arrays["n_features"]
        names = st.feature_names
        self.feature_names_in_ = None if names is None else np.asarray(names, dtype=str)
        self.n_iter_ = int(trace.n_iter)
        self.solver_ = st.method
        self.model_ = m
        self.design_ = st.design
        self.stream_ = st.stream if st.method == "onepass" else None
        self.trace_ = trace

    # ------------------------------------------------------------------ streaming
    def partial_fit(self, X, y=None, *, truth=None):
        """Consume one fresh batch: the initialization if the stream is new, else one step.

        Parameters
        ----------
        X : array (n, d), sparse matrix, (X, y) tuple, RegressionData or ChunkedBatch
        y : array (n,), optional
        truth : optional
            As in :meth:`fit`; kept for the following batches.

        Returns
        -------
        self
        """
        owner = type(self).__name__
        params = self._validate_params()
        if params["solver"] == "als":
            raise InvalidParameterError(
                f"The 'solver' parameter of {owner} is 'als', which cannot stream: "
                "partial_fit is Algorithm 1's step on one fresh batch. Use fit, or "
                "solver='onepass' (or 'auto') to stream.")
        stream = getattr(self, "stream_", None)  # None after ALS: a stream starts afresh
        if stream is None or stream.model is None:
            stream = StreamState(rng=check_random_state(params["random_state"]))
            trace = Trace(solver="gfm.onepass", params=_json(self))
            design, names = None, None
            if y is None and is_ratings(X):
                design, _ = batching.make_design(X, params)
                names = design.feature_names(X)
            elif not isinstance(X, ChunkedBatch):
                names = as_regression(X, y).feature_names
        else:
            trace, design, names = self.trace_, self.design_, self.feature_names_in_
        st = FitState(prm=dict(params), method="onepass", owner=owner, stream=stream,
                      design=design, feature_names=names)
        if y is None and is_ratings(X):
            X = batching.as_data(X, design, owner)
        batch, checked = as_batch(X, y, d=None if stream.model is None else stream.model.d)
        if truth is not None:
            d = stream.model.d if stream.model is not None else batching.first_d([batch])
            stream.truth = as_truth(truth, d=d)
        self._check_batch_size(batch, params, stream)
        check_stream_rank(stream, params, owner)  # the settings, checked at the entry
        row = onepass_step(stream, batch, params, trace, owner=owner, check=not checked)
        if not math.isfinite(row["objective"]):
            from ..exceptions import NumericalError

            trace.stop_reason = "numerical_error"
            raise NumericalError(f"{owner}.partial_fit: the objective is "
                                 f"{row['objective']} at batch {trace.n_iter + 1}; "
                                 f"{self._numerical_hint}")
        trace.record(**row)
        trace.stop_reason = "partial_fit"
        trace.stop_message = f"{trace.n_iter} batch(es) consumed, the last by partial_fit"
        self._fit_publish(st, trace.n_iter, trace)
        return self

    def _check_batch_size(self, batch, prm, stream: StreamState):
        n = batch.n_rows
        if n is not None and n < prm["rank"]:
            raise ValueError(f"the batch has {n} rows, fewer than rank={prm['rank']}; pass "
                             "batches of at least rank rows.")
        if stream.model is None and n is not None:
            batching.check_rank(type(self).__name__, prm["rank"], batching.first_d([batch]))

    # ------------------------------------------------------------------ prediction
    def _check_fitted(self):
        super()._check_fitted("coef_")

    def predict(self, X) -> np.ndarray:
        """``b + x^T w + x^T M x`` for every row of X (n x d, dense or sparse), or for every
        rating of a Ratings when the model was fitted on ratings."""
        self._check_fitted()
        if is_ratings(X):
            X = self._as_data(X).X
        X, _ = check_rows(X, None, d=self.n_features_in_, check_y=False)
        return self._predict_rows(X)

    def _predict_rows(self, X) -> np.ndarray:
        """:meth:`predict` on checked float64 rows (dense C-order or CSR), no checks."""
        m = self.model_
        k = m.rank
        P = project(X, np.hstack([m.U, m.V, m.w[:, None]]), m.std)
        return m.b + P[:, 2 * k] + np.einsum("ij,ij->i", P[:, :k], P[:, k:2 * k])

    def evaluate(self, data) -> dict:
        """``{"rmse": ..., "nmse": ...}`` on ``(X, y)`` (a tuple, RegressionData, problem).

        ``nmse`` is the mean squared error over the variance of y (1.0: no better than
        predicting the mean of y; NaN for constant y).
        """
        self._check_fitted()
        data = self._as_data(data)
        X, y = check_rows(data.X, data.y, d=self.n_features_in_)
        return self._metrics(X, y)

    def _metrics(self, X, y) -> dict:
        """:meth:`evaluate`'s metrics on checked rows ``X`` and targets ``y``, no checks."""
        err = self._predict_rows(X) - y
        mse = float(np.mean(err * err))
        var = float(np.var(y))
        return {"rmse": math.sqrt(mse), "nmse": mse / var if var > 0 else math.nan}

    #: :meth:`score` is ``-rmse`` of :meth:`evaluate` (the base class's higher-is-better rule).
    score_metric = "-rmse"

    def score(self, X, y=None) -> float:
        """``-RMSE`` on ``(X, y)`` arrays or any form :meth:`evaluate` takes (a tuple,
        RegressionData, a problem, Ratings): higher is better, as for every family."""
        return super().score(X if y is None else as_regression(X, y))

    def _as_data(self, data) -> RegressionData:
        """Regression data from any accepted form; a Ratings through the fitted design."""
        return batching.as_data(data, getattr(self, "design_", None), type(self).__name__)

    # ------------------------------------------------------------------ the learned M
    def M_apply(self, Z) -> np.ndarray:
        """``M Z`` for a d x m block (or a d-vector), original feature units, O(dkm)."""
        self._check_fitted()
        return lowrank.apply(self.U_, self.V_, Z)

    def spectrum(self):
        """Nonzero eigenvalues and eigenvectors of M (at most 2k), by |eigenvalue| descending.

        From a QR of ``[U, V]``: ``M = Q (R C R^T) Q^T``, O(dk^2).
        """
        self._check_fitted()
        return lowrank.spectrum(self.U_, self.V_)

    def interaction_matrix(self) -> np.ndarray:
        """The dense d x d M (O(d^2) memory: for small d, heat maps and tests)."""
        self._check_fitted()
        return lowrank.dense(self.U_, self.V_)

    def top_interactions(self, n: int = 20, *, feature_names=None, include_diagonal=True):
        """The n largest ``|M_ab|`` (a <= b) as a DataFrame, scanning M in row blocks.

        Columns: ``a``, ``b``, ``feature_a``, ``feature_b``, ``M_ab`` (the coefficient of
        ``x_a x_b`` in ``x^T M x`` is ``M_ab`` on the diagonal and ``2 M_ab`` off it).
        Memory O(block x d), never the whole M.
        """
        import pandas as pd

        self._check_fitted()
        names = feature_names if feature_names is not None else \
            getattr(self, "feature_names_in_", None)
        vals, a, b = lowrank.largest_entries(self.U_, self.V_, n,
                                             include_diagonal=include_diagonal)
        label = (lambda i: str(names[i])) if names is not None else (lambda i: f"x{i}")
        return pd.DataFrame({"a": a, "b": b, "feature_a": [label(i) for i in a],
                             "feature_b": [label(i) for i in b], "M_ab": vals})

    # ------------------------------------------------------------------ runs
    def _fitted_arrays(self) -> dict:
        """The O(kd) state: w, U, V (standardized coordinates), b, the scaling, counters."""
        self._check_fitted()
        m = self.model_
        out = {"w": m.w, "U": m.U, "V": m.V, "intercept": np.array([m.b]),
               "mean": m.std.mean, "scale": m.std.scale,
               "counts": np.array([m.n_batches, m.n_seen], dtype=np.int64),
               "solver": np.array(self.solver_, dtype=str)}
        if self.design_ is not None:
            out.update(self.design_.to_arrays())
        if getattr(self, "feature_names_in_", None) is not None:
            out["feature_names"] = np.asarray(self.feature_names_in_, dtype=str)
        return out

    @classmethod
    def _from_fitted_arrays(cls, arrays, params, trace, train=None):
        """A fitted model (that :meth:`partial_fit` can continue) from :meth:`_fitted_arrays`."""
        model = cls(**params)
        prm = model._validate_params()
        U = np.array(arrays["U"], dtype=np.float64)
        counts = np.asarray(arrays["counts"], dtype=np.int64)
        state = onepass.OnePassState(
            w=np.array(arrays["w"], dtype=np.float64), U=U,
            V=np.array(arrays["V"], dtype=np.float64),
            b=float(np.asarray(arrays["intercept"]).ravel()[0]),
            std=Standardizer(np.array(arrays["mean"], dtype=np.float64),
                             np.array(arrays["scale"], dtype=np.float64)),
            fit_intercept=bool(prm["fit_intercept"]), n_batches=int(counts[0]),
            n_seen=int(counts[1]))
        solver = str(np.asarray(arrays["solver"])) if "solver" in arrays else "onepass"
        names = arrays["feature_names"] if "feature_names" in arrays else None
        st = FitState(
            prm=prm, method=solver, owner=cls.__name__,
            stream=StreamState(model=state, rng=check_random_state(prm["random_state"])),
            design=RatingsDesign.from_arrays(arrays) if "design_shape" in arrays else None,
            feature_names=None if names is None else [str(x) for x in names])
        trace = trace if trace is not None else Trace(solver=f"gfm.{solver}",
                                                      params=_json(model))
        model._fit_publish(st, trace.n_iter, trace)
        return model


def _json(model):
    from .._params import json_safe

    return json_safe(model.get_params())
