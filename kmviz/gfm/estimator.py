"""The generalized factorization machine estimator: Algorithm 1 (One-Pass gFM) on a stream.

``GeneralizedFM`` runs the shared outer loop of :class:`kmviz._base.IterativeEstimator` with
one mini-batch per outer iteration: the first batch initializes (Lanczos), every later one
is one noisy power step (:mod:`kmviz.gfm.onepass`). ``partial_fit`` feeds one batch at a
time through the same code, so a stream of any length fits in O(kd) memory.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from .._base import IterativeEstimator, LoopPolicy
from .._params import RANDOM_STATE, Param
from .._validation import check_random_state
from ..exceptions import InvalidParameterError
from ..trace import Trace
from . import als, onepass
from .data import RegressionData, as_regression
from .design import RatingsDesign, is_ratings
from .operators import ENGINES, ChunkedBatch, Standardizer, check_rows, project
from .recovery import as_truth, recovery_errors


SOLVERS = ("auto", "onepass", "als")

#: What to do when Algorithm 1 diverges (the trace's warning and the NumericalError say it).
_DIVERGENCE_ADVICE = (
    "Algorithm 1 assumes roughly Gaussian, standardized features and batches of 10-20 k d "
    "instances or more; one-hot ids, skewed columns and small batches are far from that. "
    "Use solver='als' (alternating least squares over all the data, the solver for real "
    "data), or larger batches (a larger batch_size, fewer n_batches), and keep standardize "
    "on.")


class GeneralizedFM(IterativeEstimator):
    """Generalized factorization machine ``y = b + x^T w + x^T M x`` (Lin & Ye, eq. (1)).

    M is symmetric of rank at most 2k, kept as ``M = (U V^T + V U^T)/2`` with U, V of size
    d x k: no PSD constraint and no zero diagonal (the "generalized" of gFM), so indefinite
    interaction matrices are representable. Learned by Algorithm 1 (One-Pass gFM): the first
    mini-batch initializes U by Lanczos, every later FRESH batch makes one noisy power step
    ``U <- QR((H_1 - h_2/2 I + M) U)`` and updates w and V; each batch is used once, only
    matrix-vector products touch the data and the state is O(kd). See
    :mod:`kmviz.gfm.onepass` for the steps.

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
        with d >= 128 (measured crossover, bench/gfm_kernels.py). Sparse X always goes
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
        the training data, non-increasing), ``train_rmse``, ``n_inner`` (LSQR iterations),
        phase times ``t_init_s``, ``t_solve_U_s``, ``t_solve_V_s``, ``t_objective_s``.
    solver_ : str
        The solver that ran ("onepass" or "als"; "auto" resolved).

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
    in the same index space. Caveat (bench/gfm_robustness.py): one-hot features are far from
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
        "rank": Param(int, low=1, form_high=20, label="k (rank)",
                      help="Rank k of the second-order matrix M* (eq. (1), Alg. 1's desired "
                           "rank k); at most the number of features d."),
        "batch_size": Param(int, low=1, none_ok=True, step=500, label="n (batch size)",
                            help="Instances per mini-batch n (Alg. 1); empty: rows / "
                                 "n_batches. Theory: n ≥ C k³ d; in practice 10-20 k d."),
        "n_batches": Param(int, low=1, none_ok=True, form_high=200,
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
                             "(Numba for dense d ≥ 128, measured in bench/gfm_kernels.py); "
                             "sparse data always uses SciPy."),
        "solver": Param(str, options=SOLVERS, label="solver",
                        option_labels={"auto": "auto (ALS for ratings, one-pass for arrays)",
                                       "onepass": "one-pass (Algorithm 1)",
                                       "als": "ALS on eq. (3), all data"},
                        help="One-pass: Algorithm 1, each batch used once (assumes roughly "
                             "Gaussian features). ALS: alternating least squares over all "
                             "the data, several passes (for real data). Auto: ALS for "
                             "ratings, one-pass for arrays."),
        "n_passes": Param(int, low=1, form_high=200, label="ALS passes",
                          help="Passes over the data of the ALS solver (one per iteration)."),
        "l2": Param(float, low=0.0, step=1e-3, label="λ (ALS ridge)",
                    help="Ridge λ/2 (‖w‖² + ‖U‖² + ‖V‖²) added to eq. (3) by the ALS solver."),
        "tol": Param(float, low=0.0, step=1e-5, advanced=True, label="ALS tolerance",
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
    _numerical_hint = ("the error grew without bound: " + _DIVERGENCE_ADVICE)

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
        data = _as_fit_data(X, y)
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
        if state.solver == "als":  # passes are a convergence budget; no pass raises f
            tol = params["tol"]
            return LoopPolicy(max_iter=int(params["n_passes"]), tol=tol,
                              budget="n_passes" if tol > 0 else None, monotone=True)
        # One outer iteration per batch, and no stopping on the objective: the objective is
        # measured on fresh data each time, so it may rise by chance (noise, or the first
        # step, where M is still 0) without anything being wrong.
        return LoopPolicy(max_iter=len(state.batches),
                          end_message=f"all {len(state.batches)} batches used")

    def _solver_name(self, params):
        return f"gfm.{getattr(self, '_solver', 'onepass')}"

    @staticmethod
    def _resolve_solver(solver, data) -> str:
        """"auto": ALS for ratings (real data in the FM design), one-pass for arrays."""
        if solver != "auto":
            return solver
        return "als" if is_ratings(data) else "onepass"

    def _fit_start(self, data, params, *, validation=None, truth=None):
        self._solver = self._resolve_solver(params["solver"], data)
        if self._solver == "als":
            return self._als_start(data, params, validation=validation, truth=truth)
        batches, n_unused = self._cut(data, params)
        st = self._new_stream(params)
        st.batches = batches
        st.n_unused = n_unused
        st.check = not isinstance(data, RegressionData)  # arrays were checked whole
        if truth is not None:
            st.truth = as_truth(truth, d=self._first_d(batches))
        self._fit_validation = None
        if validation is not None:
            self._fit_validation = self._as_data(validation).checked("validation X")
        self._stream = st
        return st

    def _new_stream(self, params):
        return SimpleNamespace(prm=dict(params), model=None, truth=None, prev_eps=math.nan,
                               rng=check_random_state(self.random_state), batches=None,
                               n_unused=0, trace=None, solver="onepass")

    def _als_start(self, data, params, *, validation=None, truth=None):
        """The ALS solver's state: all the training data in memory, one pass per iteration."""
        if not (is_ratings(data) or isinstance(data, RegressionData)):
            raise InvalidParameterError(
                f"The 'solver' parameter of {type(self).__name__} is 'als', which needs all "
                "the data at once (X and y arrays or ratings), not a stream of batches; use "
                "solver='onepass' for streams.")
        self._design = None
        if is_ratings(data):
            self._design = self._make_design(data, params)
            data = self._design.transform(data)
        data = data.checked()
        self._check_rank(params["rank"], data.n_features)
        if data.n_samples < params["rank"]:
            raise ValueError(f"X has {data.n_samples} rows, fewer than rank={params['rank']}; "
                             "pass more rows or lower rank.")
        self._feature_names = data.feature_names
        st = self._new_stream(params)
        st.solver = "als"
        st.X, st.y = data.X, data.y
        st.design_events = list(getattr(self, "_design_events", []))
        if truth is not None:
            st.truth = as_truth(truth, d=data.n_features)
        self._fit_validation = None
        if validation is not None:
            self._fit_validation = self._as_data(validation).checked("validation X")
        self._stream = st
        return st

    def _als_step(self, st, trace, it) -> dict:
        prm = st.prm
        row = {}
        if st.model is None:
            for message, values in st.design_events:
                trace.event("info", message, **values)
            with trace.phase("init"):
                st.model = als.start(st.X, st.y, prm["rank"],
                                     standardize=_standardize(prm, st.X),
                                     fit_intercept=prm["fit_intercept"], rng=st.rng)
        info = als.one_pass(st.model, st.X, st.y, l2=float(prm["l2"]), timer=trace.phase)
        m = st.model
        row.update({"pass": it, "n_seen": m.n_seen, "objective": info["objective"],
                    "train_rmse": info["rmse"], "n_inner": info["n_inner"]})
        if st.truth is not None:
            with trace.phase("truth"):
                w, U, V, _ = _raw_factors(m)
                errs = recovery_errors(st.truth, w, U, V)
            row.update(errs)
            prev = st.prev_eps
            row["contraction"] = errs["eps"] / prev if prev > 0 else math.nan
            st.prev_eps = errs["eps"]
        return row

    def _make_design(self, ratings, params) -> RatingsDesign:
        """The FM design of ``ratings`` with the id blocks resolved ("automatic": when ids
        repeat); the decisions are kept as trace events for the next fit's trace."""
        self._design_events = []
        flags = {}
        for block, n_ids in (("user", int(ratings.n_users)), ("item", int(ratings.n_items))):
            wanted = params.get(f"{block}_ids")
            per_id = len(ratings.values) / max(n_ids, 1)
            if wanted is None:
                wanted = n_ids >= 2 and per_id >= 2.0
                if not wanted:
                    self._design_events.append((
                        f"one-hot {block} ids left out of the design (automatic): {n_ids} "
                        f"{block}(s) with {per_id:.2g} training rating(s) each on average",
                        {f"{block}_ids": False}))
            flags[block] = bool(wanted)
        side = bool(params.get("side_features", True))
        return RatingsDesign(users=flags["user"], items=flags["item"], user_features=side,
                             item_features=side).fit(ratings)

    def _trace_metrics(self, validation):
        data = self._fit_validation if self._fit_validation is not None else validation
        return self.evaluate(data)

    #: The timed phases of each solver: every row gets all of them (0 s when not run), so
    #: per-phase sums and charts need no gaps filled.
    _PHASES = {"als": ("init", "solve_U", "solve_V", "objective"),
               "onepass": ("init", "residual", "qr", "v_update")}

    def _fit_step(self, st, trace, it):
        for name in self._PHASES[st.solver]:
            trace.add_time(name, 0.0)
        if st.solver == "als":
            return self._als_step(st, trace, it)
        if it == 1:
            for message, values in getattr(self, "_design_events", []) or []:
                trace.event("info", message, **values)
        if it == 1 and st.n_unused:
            trace.event("info", f"{st.n_unused} rows beyond n_batches x batch_size were not "
                        "used", rows_unused=st.n_unused)
        return self._consume(st, st.batches[it - 1], trace, check=st.check)

    def _consume(self, st, batch, trace, *, check=True) -> dict:
        """One batch: the initialization (first) or one power step (later); the row.

        ``check=False`` skips the per-chunk checks of data already checked as a whole."""
        prm = st.prm
        engine = prm["engine"]
        if st.model is None:
            with trace.phase("init"):
                st.model, info = onepass.initialize(
                    batch, prm["rank"], standardize=_standardize(prm),
                    fit_intercept=prm["fit_intercept"], rng=st.rng, engine=engine,
                    check=check)
        else:
            if st.model.rank != prm["rank"]:
                raise InvalidParameterError(
                    f"The 'rank' parameter of {type(self).__name__} was changed from "
                    f"{st.model.rank} to {prm['rank']} during a stream; call fit to restart.")
            info = onepass.update(st.model, batch, engine=engine, timer=trace.phase,
                                  check=check)
        m = st.model
        self._watch_divergence(st, info, trace)
        row = {"t": m.n_batches - 1, "n_seen": m.n_seen, "batch_size": info["n"],
               "objective": info["objective"], "train_rmse": info["rmse"], "h2": info["h2"],
               "h3_norm": info["h3_norm"], "n_matvec": int(info.get("n_matvec", 0))}
        if st.truth is not None:
            with trace.phase("truth"):
                w, U, V, _ = _raw_factors(m)
                basis = U if m.std.is_identity else np.linalg.qr(U)[0]
                errs = recovery_errors(st.truth, w, U, V, basis=basis)
            row.update(errs)
            prev = st.prev_eps
            row["contraction"] = errs["eps"] / prev if prev > 0 else math.nan
            st.prev_eps = errs["eps"]
        return row

    #: A batch error this many times the first batch's (the error of predicting the mean,
    #: as the model starts at M = 0, w = 0) is reported as diverging: a working fit never
    #: gets much worse than the mean; on one-hot data the error grows ~10x per batch.
    _DIVERGENCE_FACTOR = 3.0

    def _watch_divergence(self, st, info, trace):
        """One trace warning, in plain words, when the batch error grows beyond
        ``_DIVERGENCE_FACTOR`` times the first batch's (non-finite counts too)."""
        first = getattr(st, "first_rmse", None)
        if first is None:
            st.first_rmse = info["rmse"]
            return
        rmse = info["rmse"]
        growth = rmse / max(first, 1e-300) if math.isfinite(rmse) else math.inf
        if not getattr(st, "warned", False) and growth > self._DIVERGENCE_FACTOR:
            st.warned = True
            batch = st.model.n_batches - 1 if st.model is not None else 0
            message = (f"One-pass gFM is diverging: the batch error grew to {growth:.3g} "
                       f"times that of predicting the mean by batch {batch}. "
                       + _DIVERGENCE_ADVICE)
            trace.event("warning", message, growth=growth, advice=True)
            import warnings

            from ..exceptions import ConvergenceWarning

            warnings.warn(message, ConvergenceWarning, stacklevel=4)

    def _fit_publish(self, st, n_iter, trace):
        m = st.model
        w, U, V, b = _raw_factors(m)
        self.coef_ = w
        self.U_ = U
        self.V_ = V
        self.intercept_ = float(b)
        self.n_seen_ = int(m.n_seen)
        self.n_features_in_ = int(m.d)
        names = getattr(self, "_feature_names", None)
        self.feature_names_in_ = None if names is None else np.asarray(names, dtype=str)
        self.n_iter_ = int(trace.n_iter)
        self.solver_ = st.solver
        self.trace_ = trace
        st.trace = trace

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
        params = self._validate_params()
        if params["solver"] == "als":
            raise InvalidParameterError(
                f"The 'solver' parameter of {type(self).__name__} is 'als', which cannot "
                "stream: partial_fit is Algorithm 1's step on one fresh batch. Use fit, or "
                "solver='onepass' (or 'auto') to stream.")
        self._solver = "onepass"
        st = getattr(self, "_stream", None)
        if st is not None and st.solver != "onepass":
            st = None  # a model fitted by ALS: a stream starts afresh
        if st is None or st.model is None:
            st = self._new_stream(params)
            st.trace = Trace(solver=self._solver_name(params), params=_json(self))
            self._stream = st
        st.prm = dict(params)
        if y is None and is_ratings(X):
            if st.model is None:
                self._design = self._make_design(X, params)
                self._feature_names = self._design.feature_names(X)
            X = self._as_data(X)
        elif st.model is None:
            self._design = None
            self._feature_names = None if isinstance(X, ChunkedBatch) else \
                as_regression(X, y).feature_names
        batch, checked = _as_batch(X, y, d=None if st.model is None else st.model.d)
        if truth is not None:
            d = st.model.d if st.model is not None else self._first_d([batch])
            st.truth = as_truth(truth, d=d)
        self._check_batch_size(batch, params)
        trace = st.trace
        row = self._consume(st, batch, trace, check=not checked)
        if not math.isfinite(row["objective"]):
            from ..exceptions import NumericalError

            trace.stop_reason = "numerical_error"
            raise NumericalError(f"{type(self).__name__}.partial_fit: the objective is "
                                 f"{row['objective']} at batch {trace.n_iter + 1}; "
                                 f"{self._numerical_hint}")
        trace.record(**row)
        trace.stop_reason = "partial_fit"
        self._fit_publish(st, trace.n_iter, trace)
        return self

    # ------------------------------------------------------------------ data plumbing
    def _cut(self, data, prm):
        """The list of batches of a fit and the number of rows left unused."""
        k = prm["rank"]
        size, count = prm["batch_size"], prm["n_batches"]
        self._design = None
        self._design_events = []
        if is_ratings(data):
            # ratings files are usually sorted by user: shuffle, so batches are i.i.d. draws
            self._design = self._make_design(data, prm)
            data = self._design.transform(data)
            order = check_random_state(self.random_state).permutation(data.n_samples)
            data = RegressionData(data.X[order], data.y[order], data.feature_names, data.name)
        if isinstance(data, RegressionData):
            data = data.checked()
            n, d = data.n_samples, data.n_features
            self._check_rank(k, d)
            if size is None and count is None:
                raise InvalidParameterError(
                    f"{type(self).__name__}: set batch_size or n_batches (both are None), so "
                    "the data can be cut into batches.")
            if size is None:
                size = n // count
                if size < k:
                    raise ValueError(
                        f"X has {n} rows: n_batches={count} batches would hold {size} rows "
                        f"each, fewer than rank={k}; lower n_batches or pass more rows.")
            elif size < k:
                raise InvalidParameterError(
                    f"The 'batch_size' parameter of {type(self).__name__} must be at least "
                    f"rank={k} (each step orthonormalizes k vectors from the batch). Got "
                    f"{size} instead.")
            if count is None:
                count = n // size
            if count < 1 or size * count > n:
                raise ValueError(
                    f"X has {n} rows but batch_size={size} x n_batches={count} needs "
                    f"{size * count}; lower n_batches or batch_size, or set n_batches=None "
                    "to use every full batch.")
            self._feature_names = data.feature_names
            batches = [ChunkedBatch.from_arrays(data.X[i * size:(i + 1) * size],
                                                data.y[i * size:(i + 1) * size])
                       for i in range(count)]
            return batches, n - size * count
        # a stream: a sequence of batches
        self._feature_names = None
        n_avail = len(data)
        if count is None:
            count = n_avail
        if n_avail < count:
            raise ValueError(f"the stream holds {n_avail} batches but n_batches={count}; "
                             "lower n_batches or set it to None to use every batch.")
        if count < 1:
            raise ValueError("the stream holds no batches.")
        batches = _LazyBatches(data, count)
        self._check_rank(k, self._first_d(batches))
        if size is not None and size < k:
            raise InvalidParameterError(
                f"The 'batch_size' parameter of {type(self).__name__} must be at least "
                f"rank={k}. Got {size} instead.")
        return batches, 0

    def _check_rank(self, k, d):
        if k > d:
            raise InvalidParameterError(
                f"The 'rank' parameter of {type(self).__name__} must be at most the number of "
                f"features d={d}. Got {k} instead.")

    def _check_batch_size(self, batch, prm):
        n = batch.n_rows
        if n is not None and n < prm["rank"]:
            raise ValueError(f"the batch has {n} rows, fewer than rank={prm['rank']}; pass "
                             "batches of at least rank rows.")
        if self._stream.model is None and n is not None:
            d = self._first_d([batch])
            self._check_rank(prm["rank"], d)

    @staticmethod
    def _first_d(batches) -> int:
        for Xc, _ in batches[0]:
            return int(Xc.shape[1]) if hasattr(Xc, "shape") and len(Xc.shape) == 2 else \
                int(np.asarray(Xc).reshape(len(Xc), -1).shape[1])
        raise ValueError("the first batch is empty.")

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
        m = self._stream.model
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
        err = self.predict(X) - y
        mse = float(np.mean(err * err))
        var = float(np.var(y))
        return {"rmse": math.sqrt(mse), "nmse": mse / var if var > 0 else math.nan}

    def score(self, X, y=None) -> float:
        """Coefficient of determination R^2 = 1 - nmse (scikit-learn's regressor score)."""
        return 1.0 - self.evaluate(as_regression(X, y))["nmse"]

    def _as_data(self, data) -> RegressionData:
        """Regression data from any accepted form; a Ratings through the fitted design."""
        if is_ratings(data):
            design = getattr(self, "_design", None)
            if design is None:
                raise TypeError(f"{type(self).__name__} was fitted on arrays, not on ratings; "
                                "pass (X, y) arrays.")
            return design.transform(data)
        return as_regression(data)

    # ------------------------------------------------------------------ the learned M
    def M_apply(self, Z) -> np.ndarray:
        """``M Z`` for a d x m block (or a d-vector), original feature units, O(dkm)."""
        self._check_fitted()
        Z = np.asarray(Z, dtype=np.float64)
        return 0.5 * (self.U_ @ (self.V_.T @ Z) + self.V_ @ (self.U_.T @ Z))

    def spectrum(self):
        """Nonzero eigenvalues and eigenvectors of M (at most 2k), by |eigenvalue| descending.

        From a QR of ``[U, V]``: ``M = Q (R C R^T) Q^T``, O(dk^2).
        """
        self._check_fitted()
        k = self.U_.shape[1]
        Q, R = np.linalg.qr(np.hstack([self.U_, self.V_]))
        C = np.zeros((2 * k, 2 * k))
        C[:k, k:] = 0.5 * np.eye(k)
        C[k:, :k] = 0.5 * np.eye(k)
        vals, E = np.linalg.eigh(R @ C @ R.T)
        order = np.argsort(-np.abs(vals), kind="stable")
        return vals[order], Q @ E[:, order]

    def interaction_matrix(self) -> np.ndarray:
        """The dense d x d M (O(d^2) memory: for small d, heat maps and tests)."""
        self._check_fitted()
        M = self.U_ @ self.V_.T
        return 0.5 * (M + M.T)

    def top_interactions(self, n: int = 20, *, feature_names=None, include_diagonal=True):
        """The n largest ``|M_ab|`` (a <= b) as a DataFrame, scanning M in row blocks.

        Columns: ``a``, ``b``, ``feature_a``, ``feature_b``, ``M_ab`` (the coefficient of
        ``x_a x_b`` in ``x^T M x`` is ``M_ab`` on the diagonal and ``2 M_ab`` off it).
        Memory O(block x d), never the whole M.
        """
        import pandas as pd

        self._check_fitted()
        d = self.n_features_in_
        names = feature_names if feature_names is not None else \
            getattr(self, "feature_names_in_", None)
        block = max(1, min(d, 4_000_000 // max(d, 1)))
        best_v = np.empty(0)
        best_a = np.empty(0, dtype=np.int64)
        best_b = np.empty(0, dtype=np.int64)
        for start in range(0, d, block):
            stop = min(d, start + block)
            Mb = 0.5 * (self.U_[start:stop] @ self.V_.T + self.V_[start:stop] @ self.U_.T)
            a, b = np.meshgrid(np.arange(start, stop), np.arange(d), indexing="ij")
            keep = (b >= a) if include_diagonal else (b > a)
            vals, aa, bb = Mb[keep], a[keep], b[keep]
            if vals.size > n:
                idx = np.argpartition(-np.abs(vals), n - 1)[:n]
                vals, aa, bb = vals[idx], aa[idx], bb[idx]
            best_v = np.concatenate([best_v, vals])
            best_a = np.concatenate([best_a, aa])
            best_b = np.concatenate([best_b, bb])
            if best_v.size > n:
                idx = np.argpartition(-np.abs(best_v), n - 1)[:n]
                best_v, best_a, best_b = best_v[idx], best_a[idx], best_b[idx]
        order = np.argsort(-np.abs(best_v), kind="stable")
        best_v, best_a, best_b = best_v[order], best_a[order], best_b[order]
        label = (lambda i: str(names[i])) if names is not None else (lambda i: f"x{i}")
        return pd.DataFrame({"a": best_a, "b": best_b,
                             "feature_a": [label(i) for i in best_a],
                             "feature_b": [label(i) for i in best_b], "M_ab": best_v})

    # ------------------------------------------------------------------ runs
    def _fitted_arrays(self) -> dict:
        """The O(kd) state: w, U, V (standardized coordinates), b, the scaling, counters."""
        self._check_fitted()
        m = self._stream.model
        out = {"w": m.w, "U": m.U, "V": m.V, "intercept": np.array([m.b]),
               "mean": m.std.mean, "scale": m.std.scale,
               "counts": np.array([m.n_batches, m.n_seen], dtype=np.int64),
               "solver": np.array(self._stream.solver, dtype=str)}
        if getattr(self, "_design", None) is not None:
            out.update(self._design.to_arrays())
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
        st = model._new_stream(prm)
        st.model = state
        st.solver = str(np.asarray(arrays["solver"])) if "solver" in arrays else "onepass"
        model._solver = st.solver
        model._design = RatingsDesign.from_arrays(arrays) if "design_shape" in arrays else None
        names = arrays["feature_names"] if "feature_names" in arrays else None
        model._feature_names = None if names is None else [str(x) for x in names]
        trace = trace if trace is not None else Trace(solver=f"gfm.{st.solver}",
                                                      params=_json(model))
        model._stream = st
        model._fit_publish(st, trace.n_iter, trace)
        return model


# ----------------------------------------------------------------------------- helpers
def _standardize(prm, als_X=None) -> bool:
    """The ``standardize`` setting resolved: None is on, except for the ALS solver on a
    sparse design (``als_X``). One-hot columns: scaling a rare column up by 1/std weakens its
    ridge; and standardizing only the other columns (age, year) measured worse too on
    MovieLens 100K (test RMSE 0.972 against 0.937 unscaled, k = 2)."""
    if prm["standardize"] is not None:
        return bool(prm["standardize"])
    return not (als_X is not None and sp.issparse(als_X))


def _json(model):
    from .._params import json_safe

    return json_safe(model.get_params())


def _raw_factors(m: onepass.OnePassState):
    """(w, U, V, b) in the original feature units from the standardized state.

    With ``z = (x - mu)/s``: ``M_x = S^-1 M S^-1`` (so ``U_x = U/s``, ``V_x = V/s``),
    ``w_x = w/s - 2 M_x mu`` and ``b_x = b - mu^T (w/s) + mu^T M_x mu``.
    """
    if m.std.is_identity:
        return m.w.copy(), m.U.copy(), m.V.copy(), float(m.b)
    s, mu = m.std.scale, m.std.mean
    U, V, ws = m.U / s[:, None], m.V / s[:, None], m.w / s
    Mmu = 0.5 * (U @ (V.T @ mu) + V @ (U.T @ mu))
    return ws - 2.0 * Mmu, U, V, float(m.b - mu @ ws + mu @ Mmu)


def _is_array(x) -> bool:
    return sp.issparse(x) or (isinstance(x, np.ndarray) and x.ndim == 2) or (
        hasattr(x, "__array__") and not isinstance(x, (tuple, list, ChunkedBatch))
        and np.ndim(x) == 2)


def _as_fit_data(X, y):
    """RegressionData for array data, a Ratings as it is, else a sequence of batches."""
    if y is None and is_ratings(X):
        return X
    if y is not None or isinstance(X, RegressionData) or _is_array(X):
        return as_regression(X, y)
    if isinstance(X, (tuple, list)) and len(X) == 2 and _is_array(X[0]):
        return as_regression(X)
    if hasattr(X, "X") and hasattr(X, "y") and not isinstance(X, Sequence):
        return as_regression(X)
    if isinstance(X, ChunkedBatch):
        return [X]
    if hasattr(X, "__len__") and hasattr(X, "__getitem__"):
        return X
    raise TypeError(f"fit takes X and y arrays, an (X, y) tuple, a RegressionData or a "
                    f"sequence of batches; got {type(X).__name__}.")


def _as_batch(X, y, d=None):
    """(ChunkedBatch, already checked) from partial_fit's arguments."""
    if isinstance(X, ChunkedBatch):
        if y is not None:
            raise TypeError("pass y inside the ChunkedBatch's chunks, not separately.")
        return X, False
    data = as_regression(X, y)
    X, y = check_rows(data.X, data.y, d=d)
    return ChunkedBatch.from_arrays(X, y), True


class _LazyBatches:
    """The first ``count`` batches of a stream, each turned into a ChunkedBatch on access."""

    def __init__(self, stream, count):
        self._stream = stream
        self._count = count

    def __len__(self):
        return self._count

    def __getitem__(self, i):
        if not 0 <= i < self._count:
            raise IndexError(i)
        b = self._stream[i]
        if isinstance(b, ChunkedBatch):
            return b
        if isinstance(b, RegressionData) or (isinstance(b, (tuple, list)) and len(b) == 2):
            data = as_regression(b).checked()
            return ChunkedBatch.from_arrays(data.X, data.y)
        raise TypeError(f"batch {i} of the stream is a {type(b).__name__}; expected an "
                        "(X, y) pair, a RegressionData or a ChunkedBatch.")
