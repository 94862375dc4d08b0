"""The Kolmogorov model estimator: block coordinate descent over psi (binary QP) and theta
(simplex QP), as in Algorithm 4 of the paper.

The loop lives in Python so that every iteration is timed, recorded in a :class:`Trace`,
passed to the callback, and can be stopped; the per-item and per-user work runs in Numba
kernels (:mod:`kmviz.km._kernels.simplex`) and in the batched binary QP solver
(:func:`kmviz.km.solvers.solve_bqp_batch`).
"""

from __future__ import annotations

from dataclasses import replace

import math

import numpy as np

from .._base import IterativeEstimator, LoopPolicy
from .._params import RANDOM_STATE, Param
from .._threads import single_blas_thread
from .._validation import check_index_pairs
from ..data.ratings import check_ratings_finite
from ..exceptions import EmptyDataError, RunStoreError
from ..parallel import active_backend
from ..trace import Trace
from . import _step
from ._kernels import simplex as _simplex
from ._state import check_saved_shapes, memory_parts, new_state, partitioned_state
from ._scale import (  # noqa: F401 - to_* / from_* are public here too
    _compressed, from_probability, to_probability, to_targets)
from ._step import FW_MAX_ITER, FW_TOL, FW_VARIANT  # noqa: F401 - kept importable here
from .solvers import METHODS, batch_settings

#: The BQP methods (``kmviz.km.solvers.BQP_METHODS``, the one list of them).
BQP_SOLVERS = METHODS
EVD_MODES = ("exact", "lanczos")
PROBABILITY_MODES = ("minmax", "max", "identity")
INIT_MODES = ("random",)

#: Bytes of Gaussian draws one BQP chunk of the psi step holds (n_rand x (D + 1) per item).
BQP_CHUNK_BYTES = 64 * 2**20
#: Fewest items per chunk (a chunk's threads join at its end).
BQP_CHUNK_MIN = 1024


def _bqp_chunk(n_items, n_rand, D):
    """Items per ``solve_bqp_batch`` call of the psi step: draws within BQP_CHUNK_BYTES, at
    least BQP_CHUNK_MIN items."""
    return max(BQP_CHUNK_MIN, BQP_CHUNK_BYTES // (8 * n_rand * (D + 1)), 1)


# ----------------------------------------------------------------------------- estimator
class KolmogorovModel(IterativeEstimator):
    """Kolmogorov model (KM): ``P(X_ui = 1) = theta_u^T psi_i`` (paper eq. (1)).

    Each user u has a probability vector ``theta_u`` on the simplex over D elementary
    events; each item i has a binary vector ``psi_i`` marking the events in which the user
    likes it. Training minimizes eq. (2), the squared error to the empirical probabilities
    p_ui of the training ratings, by block coordinate descent (Algorithm 4): every
    iteration solves the binary QP (4) for all items, then the simplex QP (3) for all users.
    ``score(ratings)`` is minus the NRMSE of :meth:`evaluate` (higher is better).

    Parameters
    ----------
    D : int, default=8
        Dimension D of the model (number of elementary events).
    bqp_solver : {"gd", "enhanced", "fast", "exact", "bnb", "sdr", "bfgs"}, default="fast"
        Solver of the binary QP (4), passed to :func:`kmviz.km.solvers.solve_bqp_batch`:
        dual GD (Alg. 1), enhanced GD with EVD elimination (Alg. 2), "fast" (a semismooth
        Newton method on the same dual (14), warm-started from the previous BCD iteration;
        not in the paper, and measured faster: see bench/), exact enumeration, branch and
        bound, SDR with randomization, quasi-Newton on the dual.
    evd : {"exact", "lanczos"}, default="exact"
        Eigen-decomposition inside the dual solver: LAPACK, or a Lanczos method. For "gd"
        and "enhanced" it is the paper's Alg. 5 stopped by the threshold (20); for "fast" a
        Lanczos run certified by its Ritz residuals (see :mod:`kmviz.km.solvers`).
    gamma : float, default=100.0
        Regularization gamma > 0 of the SDP relaxation (11).
    n_rand : int, default=50
        Number of Gaussian randomization samples I_rand (Alg. 3).
    max_iter : int, default=20
        Maximum number of BCD iterations I_BCD.
    tol : float, default=1e-4
        Stop when the relative decrease of the objective in one iteration falls below tol
        (0: run all max_iter iterations).
    lambda_theta : float, default=0.0
        lambda_u >= 0: adds ``lambda_theta * ||theta_u||^2`` to each user's simplex QP
        (Q_u + lambda I). On the simplex this pulls theta_u toward the uniform vector.
    mu_psi : float, default=0.0
        mu_i >= 0: adds ``mu_psi * ||psi_i||^2`` to each item's binary QP. Since psi is
        binary, ``||psi||^2 = 1^T psi``, so this is the BQP with ``v_i - mu/2 * 1`` in
        place of ``v_i``: a penalty on the support size. The paper's Table V tunes
        (lambda_u, mu_i) by validation and leaves their form to its reference [14]; the
        squared-norm form used here is our choice.
    probability : {"minmax", "max", "identity"}, default="minmax"
        How ratings become empirical probabilities p: ``(r - r_min)/(r_max - r_min)``,
        the paper's ``r / r_max`` (eq. (6)), or the values as they are (must be in [0, 1]).
        On a [0, 1] rating scale all three coincide.
    threshold : float or None, default=None
        Train on likes: with a threshold, p_ui is 1 when the rating is >= threshold and 0
        otherwise (``probability`` is then unused), so theta_u^T psi_i models P(rating >=
        threshold) and the supports' implications are about liking in exactly that sense
        (the paper's MovieLens reading, "liked" = r >= 4). None (default): the ratings
        mapped to [0, 1] by ``probability``. Every metric, prediction and item problem of
        the fitted model uses the same targets; ``predict_ratings`` then returns P(like).
    init : {"random"}, default="random"
        theta_u ~ Dirichlet(1) (uniform on the simplex). psi is not initialized: as in
        Algorithm 4, each iteration updates psi first (from the current theta), then theta;
        the first psi update starts from the incumbent psi = 0.
    lanczos_a : float, default=1.0
        Threshold parameter a > 0 of the Lanczos stopping rule (eq. (20)).
    dual_eps : float, default=1e-6
        Stopping tolerance epsilon of the dual GD (``||t Delta u|| <= eps``).
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the initialization and the randomization; the same int gives the same trace.

    Attributes
    ----------
    theta_ : ndarray, shape (n_users, D)
        Probability vectors (rows on the simplex).
    psi_ : ndarray, shape (n_items, D)
        Binary indicator vectors (0.0/1.0).
    dual_u_ : ndarray, shape (n_items, D+1)
        Last dual variables of each item's binary QP (NaN for items without ratings).
    known_users_, known_items_ : ndarray of bool
        True for users/items with at least one training rating.
    trace_ : Trace
        One row per BCD iteration (objective, RMSE, phase times, BQP counters).
    n_iter_ : int
        Number of BCD iterations run.
    r_min_, r_max_, probability_ : the training scale and mapping.
    threshold_ : float or None
        The liked threshold the model was trained with (the ``threshold`` parameter).
    mean_p_ : float
        Mean training probability (the prediction for items without training ratings).

    Notes
    -----
    ``fit(ratings, *, callback=None, validation=None)`` runs the shared outer loop of
    :class:`kmviz._base.IterativeEstimator`, one BCD iteration per step: ``callback(row)``
    after every iteration (returning False or raising StopIteration ends the fit cleanly,
    ``trace_.stop_reason == "callback"``); ``validation`` ratings in the same index space add
    ``validation_nrmse`` (the RMSE on the probability scale, the paper's NRMSE for KM,
    Sec. V-B) to every row. A NaN or infinite objective raises NumericalError naming the
    iteration.

    Users and items absent from the training set have no data to fit. The rules:
    an unseen user gets the mean theta of the training users (a point of the simplex), so
    its prediction for item i is that mean's mass on supp(psi_i); an unseen item gets
    ``psi = 0`` (empty support, hence no implications, see :mod:`kmviz.km.interpret`) and
    every prediction for it is ``mean_p_``, the training mean probability.

    The BCD objective (eq. (2) plus the two regularizers) never rises: the BQP step is given
    the incumbent psi and returns nothing worse, and Frank-Wolfe with exact line search
    starts from the current theta. Each row records ``objective_increase`` (0 up to
    rounding); a rise beyond rounding is logged as a trace event.

    References
    ----------
    Kolmogorov model learning via dual gradient descent, Alg. 4, eqs. (1)-(7), (21).
    """

    #: Solver names as the app shows them; the first is the default.
    BQP_SOLVER_LABELS = {
        "fast": "fast: semismooth Newton on the dual (default)",
        "enhanced": "enhanced: GD with EVD elimination (Alg. 2)",
        "gd": "gd: original dual GD (Alg. 1)",
        "exact": "exact: enumeration of all 2^D (small D)",
        "bnb": "bnb: branch and bound (exact)",
        "sdr": "sdr: SDP relaxation + randomization (needs kmviz[sdp])",
        "bfgs": "bfgs: quasi-Newton on the dual",
    }
    _parameter_constraints = {
        "D": Param(int, low=1, high=1024, form_high=16, label="D (dimension)",
                   help="Dimension D of the KM, eq. (1): the number of elementary events."),
        "bqp_solver": Param(
            str, options=BQP_SOLVERS, option_labels=BQP_SOLVER_LABELS, label="BQP solver",
            help="Solver of the binary QP (4). fast (default): a semismooth Newton method on "
                 "the dual (13)-(14), warm-started from the previous BCD iteration (not in "
                 "the paper; measured faster, see bench/). enhanced: dual GD with EVD "
                 "elimination (Alg. 2); gd: the original dual GD (Alg. 1); exact "
                 "enumeration, branch and bound, SDR with randomization, quasi-Newton."),
        "evd": Param(str, options=EVD_MODES, label="EVD",
                     help="Eigen-decomposition inside the dual solver: exact (LAPACK) or the "
                          "modified Lanczos of Alg. 5 with the threshold δ of (20)."),
        "gamma": Param(float, low=0, high=1e12, closed="neither", form_low=0.001, step=10.0,
                       label="γ (gamma)", help="Regularization γ of the SDP (11), Sec. III-A."),
        "n_rand": Param(int, low=1, high=100_000, form_high=1000, step=10, label="I_rand (n_rand)",
                        help="I_rand of Alg. 3: Gaussian randomization samples per item."),
        "max_iter": Param(int, low=1, high=100_000, form_high=500, label="max BCD iterations",
                          help="I_BCD: maximum number of BCD iterations of Alg. 4."),
        "tol": Param(float, low=0, high=1.0, step=1e-4, label="tol",
                     help="Stop when the objective's relative decrease in one BCD iteration "
                          "is below this (0: run every iteration)."),
        "lambda_theta": Param(float, low=0, high=1e12, step=1.0, label="λᵤ (lambda_theta)",
                              help="Regularizer λᵤ on θᵤ (Table V): adds λ‖θᵤ‖² to the "
                                   "simplex QP (3), pulling θᵤ toward uniform."),
        "mu_psi": Param(float, low=0, high=1e12, step=0.5, label="μᵢ (mu_psi)",
                        help="Regularizer μᵢ on ψᵢ (Table V): a penalty on the support size "
                             "in the binary QP (4)."),
        "probability": Param(str, options=PROBABILITY_MODES, label="probability mapping",
                             help="Ratings to empirical probabilities pᵤᵢ: (r − r_min)/(r_max "
                                  "− r_min), the paper's r / r_max (eq. (6)), or as given."),
        "threshold": Param(float, low=-1e12, high=1e12, none_ok=True, step=0.5, label="train on likes: rating ≥",
                           help="Fit the liked indicator (1 if rating ≥ threshold, else 0) "
                                "instead of the scaled ratings, so the implications are "
                                "about liking in exactly that sense (e.g. 4 on a 1-5 "
                                "scale). Empty: fit the ratings scaled to [0, 1]."),
        "init": Param(str, options=INIT_MODES, label="init", advanced=True,
                      help="Initialization of θ: Dirichlet(1), uniform on the simplex."),
        "lanczos_a": Param(float, low=0, high=1e6, closed="neither", form_low=0.01, form_high=100.0,
                           step=0.1, label="a (Lanczos threshold)",
                           help="a in (20): larger a lowers δ, so Lanczos runs more "
                                "iterations m."),
        "dual_eps": Param(float, low=0, high=1.0, closed="neither", label="ε (dual_eps)", advanced=True,
                          help="ε of the dual GD stopping rule ‖t Δu‖ ≤ ε (Alg. 1/2)."),
        "random_state": Param(RANDOM_STATE, none_ok=True, label="seed",
                              help="Seed of the initialization and randomization (same seed, "
                                   "same trace)."),
    }
    _numerical_hint = "check the ratings for extreme values or lower gamma."

    def __init__(self, D=8, *, bqp_solver="fast", evd="exact", gamma=100.0, n_rand=50,
                 max_iter=20, tol=1e-4, lambda_theta=0.0, mu_psi=0.0, probability="minmax",
                 threshold=None, init="random", lanczos_a=1.0, dual_eps=1e-6,
                 random_state=None):
        self.D = D
        self.bqp_solver = bqp_solver
        self.evd = evd
        self.gamma = gamma
        self.n_rand = n_rand
        self.max_iter = max_iter
        self.tol = tol
        self.lambda_theta = lambda_theta
        self.mu_psi = mu_psi
        self.probability = probability
        self.threshold = threshold
        self.init = init
        self.lanczos_a = lanczos_a
        self.dual_eps = dual_eps
        self.random_state = random_state

    # ------------------------------------------------------------------ validation
    @staticmethod
    def _check_ratings(ratings, what="ratings"):
        for attr in ("users", "items", "values", "n_users", "n_items", "r_min", "r_max"):
            if not hasattr(ratings, attr):
                raise TypeError(f"{what} must be a kmviz.data.Ratings; got "
                                f"{type(ratings).__name__} (no {attr!r}).")
        if len(ratings.values) == 0:
            raise EmptyDataError(f"the {what} hold no ratings", expected="at least one rating",
                                 fix="check the split or the file")

    def _check_fitted(self):
        super()._check_fitted("theta_")

    # ------------------------------------------------------------------ fitting
    def _loop_policy(self, params, state) -> LoopPolicy:
        # every block step minimizes the objective over its block: it can never rise
        return replace(super()._loop_policy(params, state), monotone=True)

    def _solver_name(self, prm, state):
        return f"km.{prm['bqp_solver']}"

    def _fit_context(self, prm):
        return single_blas_thread()

    def _trace_metrics(self, state, validation):
        return {"nrmse": self.nrmse(validation)}

    def _memory_estimate(self, prm, ratings, **inputs):
        D, n_rand = prm["D"], prm["n_rand"]
        return memory_parts(prm, ratings, lambda n: min(n, _bqp_chunk(n, n_rand, D)))

    def _fit_start(self, ratings, prm, *, validation=None):
        if getattr(ratings, "partitioned", False):
            return partitioned_state(self, ratings, prm, validation)
        self._check_ratings(ratings)
        D = prm["D"]
        n_users, n_items = int(ratings.n_users), int(ratings.n_items)
        r_min, r_max = float(ratings.r_min), float(ratings.r_max)
        mode = prm["probability"]
        users = np.asarray(ratings.users, dtype=np.int64)
        items = np.asarray(ratings.items, dtype=np.int64)
        check_ratings_finite(ratings, "the training ratings")
        threshold = prm["threshold"]
        p = to_targets(ratings.values, r_min, r_max, mode, threshold)
        if threshold is not None and not p.any():
            self._no_likes(threshold, np.min(ratings.values), np.max(ratings.values))
        self._check_validation(validation, n_users, n_items, r_min, r_max)
        u_ptr, u_idx, u_p = _compressed(users, items, p, n_users)
        i_ptr, i_idx, i_p = _compressed(items, users, p, n_items)
        known_users = np.diff(u_ptr) > 0
        known_items = np.diff(i_ptr) > 0
        return self._state(
            prm, known_users, known_items, r_min, r_max, float(p.mean()), p.shape[0],
            users=users, items=items, p=p,
            u_ptr=u_ptr, u_idx=u_idx, u_p=u_p, i_ptr=i_ptr, i_idx=i_idx, i_p=i_p,
            S=np.empty((n_items, D, D)), v=np.empty((n_items, D)), rho=np.empty(n_items))

    @staticmethod
    def _no_likes(threshold, lo, hi):
        raise ValueError(
            f"no training rating is >= threshold={threshold:g} (ratings lie in "
            f"[{float(lo):g}, {float(hi):g}]), so nothing counts as liked; lower the "
            f"threshold.")

    def _check_validation(self, validation, n_users, n_items, r_min, r_max):
        if validation is None:
            return
        self._check_ratings(validation, "validation ratings")
        if (validation.n_users, validation.n_items) != (n_users, n_items):
            raise ValueError(
                f"validation has shape ({validation.n_users}, {validation.n_items}) but "
                f"the training ratings have ({n_users}, {n_items}); split one Ratings so "
                f"both share the index space.")
        check_ratings_finite(validation, "the validation ratings", scale=(r_min, r_max))

    def _state(self, prm, known_users, known_items, r_min, r_max, mean_p, n_ratings, **data):
        """The fit's state, with what is chosen once per fit: the half-steps (in process, or
        on the backend active now), the BQP settings (checked here, not per iteration) and
        the items per BQP call."""
        st = new_state(prm, known_users, known_items, r_min, r_max, mean_p, n_ratings,
                       random_state=self.random_state,
                       fw_code=_simplex.FW_VARIANTS[FW_VARIANT], **data)
        D = prm["D"]
        st.step = _step.choose_step(active_backend())
        st.bqp = batch_settings(type(self).__name__, method=prm["bqp_solver"], evd=prm["evd"],
                                gamma=prm["gamma"], n_rand=prm["n_rand"], a=prm["lanczos_a"],
                                eps=prm["dual_eps"], D=D)
        st.bqp_chunk = _bqp_chunk(st.kitems.size, prm["n_rand"], D)
        return st

    def _fit_step(self, st, trace, it):
        """One BCD iteration of Algorithm 4: psi for all items, then theta for all users,
        with the half-steps chosen at the fit's start (:mod:`kmviz.km._step`)."""
        return _step.bcd_iteration(st, trace, self._no_likes)

    def _fit_publish(self, st, n_iter, trace):
        self._set_fitted(st.theta, st.psi, st.dual_u, st.known_users, st.known_items,
                         st.r_min, st.r_max, st.mode, st.mean_p, n_iter, trace)

    def _fit_finish(self, st, trace, validation):
        """Warn (trace event and :class:`~kmviz.exceptions.NoBetterThanMeanWarning`) when the
        validation NRMSE is no better than predicting the training mean probability, with
        the change to try (:func:`kmviz.km._step.warn_if_no_better_than_mean`)."""
        _step.warn_if_no_better_than_mean(self, trace, validation)

    def _set_fitted(self, theta, psi, dual_u, known_users, known_items, r_min, r_max, mode,
                    mean_p, n_iter, trace):
        theta = np.array(theta, dtype=np.float64)
        if known_users.any() and not known_users.all():
            theta[~known_users] = theta[known_users].mean(axis=0)
        psi = np.array(psi, dtype=np.float64)
        psi[~known_items] = 0.0
        self.theta_ = theta
        self.psi_ = psi
        self.dual_u_ = np.array(dual_u, dtype=np.float64)
        self.known_users_ = np.array(known_users, dtype=bool)
        self.known_items_ = np.array(known_items, dtype=bool)
        self.r_min_, self.r_max_, self.probability_ = float(r_min), float(r_max), str(mode)
        self.threshold_ = None if self.threshold is None else float(self.threshold)
        self.mean_p_ = float(mean_p)
        self.n_iter_ = int(n_iter)
        self.trace_ = trace

    # ------------------------------------------------------------------ prediction
    def _check_pairs(self, users, items):
        return check_index_pairs(users, items, self.theta_.shape[0], self.psi_.shape[0])

    def predict(self, users, items):
        """Predicted probabilities ``theta_u^T psi_i`` (eq. (5)) for pairs of indices.

        Users without training ratings use the mean training theta; items without training
        ratings get ``mean_p_``. Out-of-range indices raise ValueError.
        """
        self._check_fitted()
        users, items = self._check_pairs(users, items)
        shape = users.shape
        u = np.ascontiguousarray(users.ravel(), dtype=np.int64)
        i = np.ascontiguousarray(items.ravel(), dtype=np.int64)
        out = np.empty(u.shape[0])
        _simplex.predict_pairs(u, i, self.theta_, self.psi_, out)  # Numba threads, no BLAS
        out[~self.known_items_[i]] = self.mean_p_
        return out.reshape(shape)

    def _targets(self, values):
        """What the fitted model predicts for these ratings: the liked indicator with a
        ``threshold_``, else the probabilities of the training scale and mapping."""
        return to_targets(values, self.r_min_, self.r_max_, self.probability_,
                          getattr(self, "threshold_", None))

    def predict_ratings(self, users, items):
        """Predictions mapped back to the training rating scale (inverse of ``probability``);
        a model trained on likes (``threshold``) returns P(like), its own scale."""
        if getattr(self, "threshold_", None) is not None:
            return self.predict(users, items)
        return from_probability(self.predict(users, items), self.r_min_, self.r_max_,
                                self.probability_)

    #: :meth:`score` is ``-nrmse`` of :meth:`evaluate` (the base class's higher-is-better rule).
    score_metric = "-nrmse"

    def nrmse(self, ratings):
        """The paper's NRMSE of KM on ``ratings`` (Sec. V-B): the RMSE on the probability
        scale, ``sqrt(mean((p_ui - theta_u^T psi_i)^2))`` with p from the training scale and
        mapping (the liked indicator for a model trained on likes); :meth:`score` is its
        negative."""
        self._check_fitted()
        self._check_ratings(ratings)
        p = self._targets(ratings.values)
        err = self.predict(ratings.users, ratings.items) - p
        return float(np.sqrt(np.mean(err ** 2)))

    # ------------------------------------------------------------------ diagnostics
    @classmethod
    def from_fitted(cls, theta, psi, ratings, *, trace=None, dual_u=None, **params):
        """A fitted model from learned ``theta`` and ``psi`` without refitting.

        Rebuilds what :meth:`fit` derives from the training ratings (scale, probability
        mapping, known users and items, mean probability), for example for a run reopened
        from the run store.

        Parameters
        ----------
        theta : array-like, shape (n_users, D)
        psi : array-like of 0/1, shape (n_items, D)
        ratings : kmviz.data.Ratings
            The training ratings theta and psi were learned on.
        trace : kmviz.trace.Trace, optional
            The fit's trace (an empty one by default).
        dual_u : array-like, shape (n_items, D + 1), optional
            The items' dual solutions (NaN by default).
        **params
            Estimator parameters (``D`` must match theta's columns).
        """
        model = cls(**params)
        prm = model._check_params()
        model._check_ratings(ratings)
        theta = np.asarray(theta, dtype=np.float64)
        psi = np.asarray(psi, dtype=np.float64)
        shape = (ratings.n_users, prm["D"]), (ratings.n_items, prm["D"])
        if theta.shape != shape[0] or psi.shape != shape[1]:
            raise ValueError(f"theta {theta.shape} and psi {psi.shape} do not match the ratings "
                             f"and D={prm['D']}: expected {shape[0]} and {shape[1]}.")
        mode = prm["probability"]
        p = to_targets(ratings.values, ratings.r_min, ratings.r_max, mode, prm["threshold"])
        if dual_u is None:
            dual_u = np.full((psi.shape[0], psi.shape[1] + 1), np.nan)
        if trace is None:
            trace = Trace(solver=f"km.{prm['bqp_solver']}", params=model.get_params())
        model._set_fitted(theta, psi, dual_u, ratings.user_counts() > 0,
                          ratings.item_counts() > 0, ratings.r_min, ratings.r_max, mode,
                          float(p.mean()), trace.n_iter, trace)
        return model

    def item_problem(self, ratings, item):
        """The binary QP (4) of one item at the fitted theta: ``(S_i, v_i)``.

        ``S_i = sum_u theta_u theta_u^T`` and ``v_i = sum_u theta_u p_ui`` over the users who
        rated ``item`` in ``ratings``, built by the same kernel, probability mapping and
        ``mu_psi`` shift (``v_i - mu/2``) as the psi step of :meth:`fit`. This is the problem
        the per-item diagnostics (dual GD trajectories, Lanczos on C(u*)) look at.

        Parameters
        ----------
        ratings : kmviz.data.Ratings
            The training ratings the model was fitted on (same index space).
        item : int
            Item index.

        Returns
        -------
        S : ndarray, shape (D, D)
        v : ndarray, shape (D,)

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ValueError
            If ``ratings`` has another shape than the model, ``item`` is out of range or
            has no ratings.
        """
        self._check_fitted()
        self._check_ratings(ratings)
        n_users, n_items = self.theta_.shape[0], self.psi_.shape[0]
        if (int(ratings.n_users), int(ratings.n_items)) != (n_users, n_items):
            raise ValueError(
                f"ratings have shape ({ratings.n_users}, {ratings.n_items}) but the model was "
                f"fitted on ({n_users}, {n_items}); pass the training ratings of the fit.")
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, (int, np.integer)):
            raise ValueError(f"item must be an integer index; got {item!r}.")
        item = int(item)
        if not 0 <= item < n_items:
            raise ValueError(f"item index {item} is out of range; the model was fitted on "
                             f"{n_items} items (indices 0..{n_items - 1}).")
        items = np.asarray(ratings.items, dtype=np.int64)
        mask = items == item
        if not mask.any():
            raise ValueError(f"item {item} has no ratings in the given ratings, so it has no "
                             f"binary QP; pick an item with ratings.")
        users = np.asarray(ratings.users, dtype=np.int64)[mask]
        p = self._targets(np.asarray(ratings.values)[mask])
        # the fit's CSC layout restricted to one item (users sorted, so the sums run in the
        # same order as in fit and the result is bitwise equal)
        i_ptr, i_idx, i_p = _compressed(np.zeros(users.size, dtype=np.int64), users, p, 1)
        D = self.theta_.shape[1]
        S, v, rho = np.empty((1, D, D)), np.empty((1, D)), np.empty(1)
        _simplex.build_item_stats(i_ptr, i_idx, i_p, np.ascontiguousarray(self.theta_),
                                  S, v, rho)
        mu = float(self.mu_psi or 0.0)
        S, v = S[0], v[0]
        if mu > 0.0:
            v = v - 0.5 * mu  # mu ||psi||^2 = mu 1^T psi for binary psi, as in fit
        return np.ascontiguousarray(S), np.ascontiguousarray(v)

    # ------------------------------------------------------------------ runs
    def evaluate(self, ratings) -> dict:
        """Metrics on ``ratings`` (same index space), named without their part.

        ``nrmse``: the paper's NRMSE of KM, the RMSE on the probability scale (Sec. V-B);
        ``rmse``: the RMSE of :meth:`predict_ratings` on the rating scale. A model trained on
        likes (``threshold``) has the liked indicator as its scale: both are the RMSE of
        P(like) against 1[r >= threshold].
        """
        self._check_fitted()
        self._check_ratings(ratings)
        p = self._targets(ratings.values)
        pred = self.predict(ratings.users, ratings.items)
        if self.threshold_ is not None:
            err = float(np.sqrt(np.mean((pred - p) ** 2)))
            return {"nrmse": err, "rmse": err}
        rating_pred = from_probability(pred, self.r_min_, self.r_max_, self.probability_)
        return {"nrmse": float(np.sqrt(np.mean((pred - p) ** 2))),
                "rmse": float(np.sqrt(np.mean((rating_pred - np.asarray(ratings.values)) ** 2)))}

    def mean_predictor_metrics(self, train, ratings) -> dict:
        """:meth:`evaluate`'s metrics for the yardstick that predicts the training mean
        (on the probability scale, with this model's mapping) for every rating."""
        self._check_ratings(train, "training ratings")
        self._check_ratings(ratings)
        mode = self.probability_ if hasattr(self, "probability_") else self.probability
        r_min, r_max = float(train.r_min), float(train.r_max)
        threshold = self.threshold_ if hasattr(self, "threshold_") else self.threshold
        p_train = to_targets(train.values, r_min, r_max, mode, threshold)
        p = to_targets(ratings.values, r_min, r_max, mode, threshold)
        if threshold is not None:
            err = float(np.sqrt(np.mean((p - p_train.mean()) ** 2)))
            return {"nrmse": err, "rmse": err}
        mean_rating = float(from_probability(p_train.mean(), r_min, r_max, mode))
        return {"nrmse": float(np.sqrt(np.mean((p - p_train.mean()) ** 2))),
                "rmse": float(np.sqrt(np.mean((np.asarray(ratings.values) - mean_rating) ** 2)))}

    def _fitted_arrays(self) -> dict:
        """The learned state a saved run keeps: theta, psi, the duals, the known users and
        items, the scale (r_min, r_max, mean p) and the probability mapping."""
        self._check_fitted()
        return {"theta": self.theta_, "psi": self.psi_, "dual_u": self.dual_u_,
                "known_users": self.known_users_, "known_items": self.known_items_,
                "scale": np.array([self.r_min_, self.r_max_, self.mean_p_]),
                "probability": np.array(self.probability_)}

    @classmethod
    def _from_fitted_arrays(cls, arrays, params, trace, train=None):
        """A fitted model from :meth:`_fitted_arrays` and its params. Runs saved by kmviz
        0.1.0 kept only theta and psi: those are rebuilt with their training ratings."""
        if "scale" not in arrays:
            if train is None:
                raise RunStoreError("this run keeps only theta and psi (kmviz 0.1.0) and no "
                                    "training ratings to rebuild the rest of the model from")
            return cls.from_fitted(arrays["theta"], arrays["psi"], train, trace=trace,
                                   dual_u=arrays.get("dual_u"), **params)
        model = cls(**params)
        model._validate_params()
        check_saved_shapes(arrays)
        r_min, r_max, mean_p = (float(x) for x in arrays["scale"])
        model._set_fitted(arrays["theta"], arrays["psi"], arrays["dual_u"],
                          arrays["known_users"], arrays["known_items"], r_min, r_max,
                          str(arrays["probability"]), mean_p, trace.n_iter, trace)
        return model

    # ------------------------------------------------------------------ persistence
    # save / load: IterativeEstimator's (the run format, kmviz.runs.save_model_file)
    @classmethod
    def _open_legacy_model_file(cls, path):
        """The run store's hook for older model files: kmviz 0.1.0's single ``.npz`` at
        ``path`` as a fitted model, or None if it is not one (:mod:`kmviz.km.legacy`)."""
        from .legacy import open_v1_model_file

        return open_v1_model_file(cls, path)
