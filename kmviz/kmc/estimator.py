"""``KernelMatrixCompletion``: kernel matrix completion with prior information (the thesis's
Chapters 2-3), on the shared outer loop of :class:`kmviz._base.IterativeEstimator`.

The estimator holds the settings every method shares (kernels and their priors, mu,
centering, seed) and dispatches once, by ``method``, to a solver module of
:mod:`kmviz.kmc.solvers` (KKMCEX direct or CG, RRMCEX, online RRMCEX, ALS, SGD, proximal
gradient): the fit's state, the method's steps and its predictions live there.
:mod:`kmviz.kmc._state` builds what the methods share (checked data, kernels, which rows can
be predicted); :mod:`kmviz.kmc.params` declares the settings.
"""

from __future__ import annotations

import math

import numpy as np

from .._base import IterativeEstimator, LoopPolicy, Step
from .._validation import check_index_pairs, check_random_state
from ..trace import Trace
from . import krr
from . import _state as pb
from .params import METHODS, PARAMETERS
from .params import (DIRECT_MAX_S, KERNEL_METHODS, METHOD_LABELS, PG_INITS,  # noqa: F401
                     PRECONDITIONERS, PRIORS, RR_FEATURES, SOLVERS)  # (their old home)
from .solvers import MODULES, REGISTRY  # noqa: F401 (MODULES: its old home)
from .solvers._common import ILL_CONDITIONED  # noqa: F401

__all__ = ["METHODS", "KernelMatrixCompletion"]


class KernelMatrixCompletion(IterativeEstimator):
    """Matrix completion with prior information in RKHSs (Giménez-Febrer, 2020).

    Methods (``method=``): ``"kkmcex"``, Kronecker kernel MC and extrapolation (3.46),
    exactly (dense Cholesky or matrix-free CG); ``"rrmcex"``, ridge regression on d
    Kronecker features (3.59); ``"online_rrmcex"``, its SGD (3.63) over a stream of the
    entries; ``"als"`` / ``"sgd"``, kernel-regularized factorization (3.28); ``"pg"``,
    nuclear-norm proximal gradient (2.15) with the schedules of Table 2.1. Each is a module of
    :mod:`kmviz.kmc.solvers`. Settings used by some methods only say so below.

    Parameters
    ----------
    method : {"kkmcex", "rrmcex", "online_rrmcex", "als", "sgd", "pg"}, default="kkmcex"
        The method (above); each has its solver module in :mod:`kmviz.kmc.solvers`.
    mu : float > 0, default=0.01
        Regularization weight: the ridge mu of (3.40)/(3.58) (KKMCEX, RRMCEX), the kernel
        weight of (3.28) (ALS, SGD), the nuclear-norm weight mu_bar of (2.15) (PG; its scale
        is that of the singular values of the data).
    center : bool, default=False
        Subtract the mean training value before fitting and add it back to predictions. The
        thesis regresses the values as given (False).
    solver : {"auto", "direct", "cg"}, default="auto"
        KKMCEX only: dense Cholesky of the s x s system, or matrix-free conjugate
        gradients; ``auto`` is direct up to s = 3000 observations.
    preconditioner : {"jacobi", "eigen", "none"}, default="jacobi"
        KKMCEX only, its CG path: ``diag(K_OO) + mu``, or ``Phi Phi^T + mu I`` with the
        ``n_components`` leading Kronecker eigen features (Woodbury, O(s d) per iteration).
    row_prior, col_prior : {"auto", "graph", "features", "identity"}, default="auto"
        Kernel methods (all but PG): where a side's kernel comes from when it is not
        passed to ``fit``: the ratings' ``user_graph``/``item_graph`` (a graph-Laplacian
        kernel), their ``user_features``/``item_features`` (a feature kernel), or nothing
        (the identity, which cannot extrapolate). ``auto``: graph, else features, else
        identity.
    graph_kernel : {"diffusion", "regularized_laplacian", "bandlimited"}, default="diffusion"
        Kernel methods (all but PG): kernel of a graph (3.65)-(3.66).
    eta : float > 0, default=1.0
        Kernel methods (all but PG): diffusion time / Laplacian weight of the graph
        kernels (the thesis's eta).
    bandwidth : int >= 1, optional
        Kernel methods (all but PG): kept graph frequencies of the bandlimited kernel
        (default: a tenth of the nodes).
    feature_kernel : {"gaussian", "linear", "pearson"}, default="gaussian"
        Kernel methods (all but PG): kernel of feature vectors (§3.5.2).
    gamma : float > 0, optional
        Kernel methods (all but PG): width of the Gaussian feature kernel
        ``exp(-gamma ||x - x'||^2)``; default ``1 / n_features``.
    jitter : float >= 0, optional
        Kernel methods (all but PG): added to the diagonal of every kernel before the PSD
        check. Without it a kernel that is not PSD within rounding is refused. ALS and SGD
        invert the kernels (3.28): diffusion kernels are numerically singular (cond
        ~1e15), and there a jitter of about 1e-4 turns NMSE ~1 into ~0.01 (the trace logs a
        warning above cond 1e10).
    factor_kernels : bool, default=True
        KKMCEX only: keep a side kernel that has an exact low-rank form as that form and
        never build it: the identity, a linear (or Pearson) kernel on fewer features than
        entities (``K = X X^T``), any feature kernel whose entities take few distinct feature
        rows (``K = E K_u E^T``: MovieLens users by age, items by genres and year), a
        bandlimited graph kernel, or a factor passed to ``fit``. Each CG product then costs
        O(s r + N r_r r_c) instead of O(N^2 L + N L^2) (or O(s (N + L))), with the same
        result within rounding. False: dense kernels (the reference path).
    kernel_rank : int >= 1, optional
        KKMCEX only: replace a full-rank side kernel (Gaussian on many distinct features,
        diffusion or regularized-Laplacian graph kernels) by a rank-``kernel_rank``
        approximation ``F F^T``: the leading eigenpairs (graph kernels; feature kernels up
        to ``rkhs.DISTINCT_MAX`` distinct rows) or Nyström with uniform landmarks
        (seeded by ``random_state``). This changes the model (an approximate kernel), so it
        is off by default; exact factors of lower rank are kept as they are.
    add_constant : bool, default=False
        Kernel methods (all but PG): add the all-ones kernel to each side's kernel
        (``K + 1 1^T``; with an identity prior, ``I + 1 1^T``). The Kronecker kernel
        ``(K_r + J) ⊗ (K_c + J)`` then also holds a global term, a term per row shared over
        columns and a term per column shared over rows (the biases of rating data) next to
        the kernels' own. Factors stay factors (one more column, or a shifted identity).
    n_components : int >= 1, default=100
        KKMCEX, RRMCEX and online RRMCEX: d, the RRMCEX features, and the rank of the
        KKMCEX CG's eigen preconditioner.
    rr_features : {"eigen", "linear"}, default="eigen"
        RRMCEX and online RRMCEX: the features are the eigenpairs of the two kernels, or
        the SVDs of the two feature matrices (the linear kernel, §3.5.3; needs features on
        both sides).
    rank : int >= 1, default=10
        ALS, SGD and PG: p, the factor rank of ALS and SGD; P, the eigenvectors of the
        graph initialization of PG.
    max_iter : int >= 1, default=200
        Iterative methods (all but RRMCEX): CG iterations, ALS sweeps, SGD epochs, online
        blocks, PG iterations. Closed-form steps (RRMCEX, KKMCEX direct) run once.
    tol : float >= 0, default=1e-6
        Iterative methods (all but RRMCEX): CG relative residual
        ``||m - (K_OO + mu I) c|| / ||m||``; ALS, SGD and online RRMCEX relative objective
        decrease; PG relative change
        ``||F_k - F_k-1||_F / ||F_k-1||_F`` at the final mu. 0: run max_iter.
    learning_rate : float > 0, optional
        Online RRMCEX and SGD: t_0 of online RRMCEX (default ``1 / mean ||phi||^2``, with
        ``t_n = min(t_0 / (1 + t_0 (mu / s) n), 1 / ||phi_n||^2)``), the step of SGD
        (default ``0.05 / rms(m)``).
    batch_size : int >= 1, optional
        Online RRMCEX only: entries per trace row (default: one pass over the s entries).
    schedule : {"pg", "fpc", "spg", "vpg"}, default="fpc"
        PG only: the mu schedule (Table 2.1).
    mu0_factor : float >= 1, optional
        PG only: the starting mu_0 = mu0_factor * mu (Table 2.2: 10, or 5 with the graph
        init).
    decay : float in (0, 1), optional
        PG only: the schedule's eta (Table 2.2: FPC 0.75, SPG 0.65, VPG 0.85).
    switch_tol : float > 0, optional
        PG only: the schedule's eps (Table 2.2: FPC 1e-4, SPG 0.06).
    pg_init : {"zero", "graph"}, default="zero"
        PG only: start from zero, or the graph-based initialization (2.42) from the row
        graph.
    lap_weight : float >= 0, default=0.0
        PG only: alpha of the Laplacian-regularized PG (2.51) on the row graph.
    step : float > 0, optional
        PG only: the step t (default ``1 / (1 + 2 alpha lambda_max(L))``, the inverse
        Lipschitz constant).
    random_state : None, int or Generator
        Seeds the factor initialization, the SGD orders and the online stream.

    Attributes
    ----------
    method_, solver_ : str
    row_kernel_, col_kernel_ : ndarray or None
        The kernels used (after checks and jitter); formed on first access when KKMCEX kept
        them as factors or the identity (an L x L matrix: 0.66 GB for MovieLens
        latest-small's 9,066 items).
    row_kernel_factor_, col_kernel_factor_ : ndarray or None
        KKMCEX with factored kernels: the factor F of a side kernel ``F F^T`` (plus
        ``shift I`` when ``add_constant`` met the identity).
    coef_ : ndarray
        KKMCEX: the s dual coefficients c (gamma on Omega, (3.45)); RRMCEX: xi (3.59).
    train_rows_, train_cols_ : ndarray of int
        KKMCEX: the observed entries the coefficients belong to.
    row_factors_, col_factors_ : ndarray
        Factor form ``prediction = sum_k row_factors_[u, k] col_factors_[i, k] + offset_``
        (RRMCEX: ``Q_row[:, a] * w * xi`` and ``Q_col[:, b]``; ALS/SGD: W and H).
    feature_pairs_, feature_eigenvalues_ : ndarray
        RRMCEX: the (a, b) eigenpair indices of the d features and their eigenvalues.
    matrix_ : ndarray (N, L)
        PG: the completed matrix.
    offset_ : float
    known_rows_, known_cols_ : ndarray of bool
        Rows / columns with at least one training entry.
    predictable_rows_, predictable_cols_ : ndarray of bool
        Rows / columns the model can predict (known, or reached through the kernel or graph).
    n_iter_ : int
    trace_ : Trace

    Notes
    -----
    Cold start: a row (column) without training entries is predicted from the kernel values
    between it and the observed rows (KKMCEX, RRMCEX: the extrapolation of §3.3; ALS, SGD: the
    kernel prior's conditional mean). When nothing links it to an observed row (identity
    kernel, an isolated graph node) or the method has no kernel (PG without a Laplacian term),
    ``predict`` raises ValueError instead of returning a mean.

    References
    ----------
    P. J. Giménez-Febrer, "Matrix completion with prior information in reproducing kernel
    Hilbert spaces", PhD thesis, UPC, 2020: (2.15), (2.24), (2.42), (2.51), Table 2.1, (3.28),
    Alg. 2, (3.46), (3.59), (3.63), (3.65).
    """

    _parameter_constraints = PARAMETERS
    score_metric = "-nmse"  # score(ratings): minus the NMSE (3.68), the headline metric
    _numerical_hint = ("lower the learning rate (SGD, online RRMCEX) or raise mu; check the "
                       "kernels and data for extreme values.")

    def __init__(self, method="kkmcex", *, mu=1e-2, center=False, solver="auto",
                 preconditioner="jacobi", row_prior="auto", col_prior="auto",
                 graph_kernel="diffusion", eta=1.0, bandwidth=None, feature_kernel="gaussian",
                 gamma=None, jitter=None, factor_kernels=True, kernel_rank=None,
                 add_constant=False,
                 n_components=100, rr_features="eigen", rank=10,
                 max_iter=200, tol=1e-6, learning_rate=None, batch_size=None, schedule="fpc",
                 mu0_factor=None, decay=None, switch_tol=None, pg_init="zero", lap_weight=0.0,
                 step=None, random_state=None):
        self.method = method
        self.mu = mu
        self.center = center
        self.solver = solver
        self.preconditioner = preconditioner
        self.row_prior = row_prior
        self.col_prior = col_prior
        self.graph_kernel = graph_kernel
        self.eta = eta
        self.bandwidth = bandwidth
        self.feature_kernel = feature_kernel
        self.gamma = gamma
        self.jitter = jitter
        self.factor_kernels = factor_kernels
        self.kernel_rank = kernel_rank
        self.add_constant = add_constant
        self.n_components = n_components
        self.rr_features = rr_features
        self.rank = rank
        self.max_iter = max_iter
        self.tol = tol
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.schedule = schedule
        self.mu0_factor = mu0_factor
        self.decay = decay
        self.switch_tol = switch_tol
        self.pg_init = pg_init
        self.lap_weight = lap_weight
        self.step = step
        self.random_state = random_state

    def fit(self, ratings, *, row_kernel=None, col_kernel=None, row_graph=None, col_graph=None,
            row_features=None, col_features=None, callback=None, validation=None, truth=None,
            row_kernel_factor=None, col_kernel_factor=None):
        """Fit on ``ratings`` (a :class:`kmviz.data.Ratings`).

        Parameters
        ----------
        ratings : Ratings
            Training entries: users are rows (0..N-1), items columns (0..L-1).
        row_kernel, col_kernel : array (N, N), (L, L), optional
            Kernels overriding the ones built from side information (checked: shape,
            finiteness, symmetry, PSD within rounding; see ``jitter``).
        row_graph, col_graph : array or sparse, optional
            Adjacencies overriding ``ratings.user_graph`` / ``item_graph``.
        row_features, col_features : array or DataFrame, optional
            Features overriding ``ratings.user_features`` / ``item_features``.
        callback : callable, optional
            ``callback(row)`` after each outer iteration; False or StopIteration stops cleanly
            with the model learned so far.
        validation : Ratings, optional
            Held-out entries in the same index space: ``validation_nmse`` and
            ``validation_rmse`` in every row.
        truth : array (N, L), optional
            The whole true matrix (synthetic data): ``truth_nmse``, the thesis's NMSE (3.68)
            of the current estimate over all N L entries, in every row (the whole-matrix
            error as entries arrive, for online RRMCEX). Costs one N x L estimate per row.
        row_kernel_factor, col_kernel_factor : array (N, r), (L, r) or krr.SideKernel, optional
            A kernel given as a factor F (the kernel is ``F F^T``, PSD by construction, never
            formed by KKMCEX): e.g. a Nyström feature map; or a :class:`krr.SideKernel`, such
            as ``SideKernel(N, factor=np.ones((N, 1)), shift=1.0)`` for ``I + 1 1^T`` (a
            per-entity term plus a shared one). Overrides ``row_kernel`` / ``col_kernel``
            and the side information.

        Returns
        -------
        self
        """
        return super().fit(ratings, callback=callback, validation=validation,
                           row_kernel=row_kernel, col_kernel=col_kernel, row_graph=row_graph,
                           col_graph=col_graph, row_features=row_features,
                           col_features=col_features, truth=truth,
                           row_kernel_factor=row_kernel_factor,
                           col_kernel_factor=col_kernel_factor)

    def _memory_estimate(self, prm, ratings, **inputs):
        from .._memory import F8, data_sizes

        N, L, s = data_sizes(ratings)
        method, parts = prm["method"], {f"the {s} ratings": 8 * F8 * s}
        linear = method in ("rrmcex", "online_rrmcex") and prm["rr_features"] == "linear"
        if method in KERNEL_METHODS and not linear:
            r = prm["kernel_rank"] if method == "kkmcex" else None
            parts[f"row and column kernels ({N} and {L}" + (f", rank {r})" if r else ")")] = \
                3 * F8 * (N + L) * r if r else 3 * F8 * (N * N + L * L)
        if method == "kkmcex" and (prm["solver"] == "direct" or (
                prm["solver"] == "auto" and s <= DIRECT_MAX_S)):
            parts[f"the dense {s} x {s} system of the direct solver"] = 2 * F8 * s * s
        if method in ("kkmcex", "rrmcex", "online_rrmcex"):
            d = prm["n_components"]
            parts[f"eigen features: ({N} + {L}) x n_components={d}, and d x d"] = \
                F8 * (3 * (N + L) * d + 2 * d * d)
        if method in ("als", "sgd", "pg"):
            p = prm["rank"]
            parts[f"factors: ({N} + {L}) x rank={p}"] = F8 * (4 * (N + L) * p + 4 * p * p)
            if method == "als":  # one p x p system per row and per column
                parts[f"ALS systems: ({N} + {L}) x rank={p} x rank"] = 2 * F8 * (N + L) * p * p
        if method == "pg":
            parts[f"the dense {N} x {L} iterate and its SVD"] = 8 * F8 * N * L
        return parts

    def _fit_start(self, ratings, prm, *, validation=None, **inputs):
        rng = check_random_state(self.random_state)
        st = pb.start(ratings, prm, rng, validation=validation, **inputs)
        REGISTRY[st.method].start(st, rng)
        if validation is not None:  # fail now, not at iteration 1, on unpredictable pairs
            users, items, _ = st.validation
            pb.check_predictable(users, items, st.predictable_rows, st.predictable_cols,
                                 st.method, "validation ratings")
        return st

    def _trace_metrics(self, st, validation):
        # the validation entries were checked once by _fit_start: the unchecked core
        return self._pair_metrics(*st.validation)

    def _solver_name(self, params, state):
        return REGISTRY[state.method].name(state)  # KKMCEX's solver is resolved by start

    def _loop_policy(self, params, state) -> LoopPolicy:
        """One step for the closed-form methods (KKMCEX direct, RRMCEX), else max_iter; the
        loop's objective test is not ours: every method decides its convergence (CG
        residual, PG change at the final mu ...) in its step."""
        if not state.iterative:
            return LoopPolicy(max_iter=1, end_message="closed-form solution")
        return LoopPolicy(max_iter=int(params["max_iter"]),
                          budget="max_iter" if state.tol > 0 else None)

    def _fit_step(self, st, trace, it):
        solver = REGISTRY[st.method]
        st.flush(trace)  # the set-up's phase times and notes, before the first row
        step = solver.step(st, trace, it)
        if st.truth is None:
            return step
        with trace.phase("truth"):
            values = dict(step.values, truth_nmse=krr.nmse(solver.estimate(st) + st.offset,
                                                           st.truth))
        return Step(values, converged=step.converged, reason=step.reason)

    def _fit_publish(self, st, n_iter, trace):
        arrays = {"method": np.array(st.method), "solver": np.array(""),
                  "offset": np.array([st.offset]), "known_rows": st.known_rows,
                  "known_cols": st.known_cols, "predictable_rows": st.predictable_rows,
                  "predictable_cols": st.predictable_cols}
        arrays.update(REGISTRY[st.method].publish(st))
        self._set_fitted(arrays, n_iter, trace)

    def _fit_finish(self, st, trace, validation):
        pb.compare_with_mean(st, trace, validation)

    #: Fitted arrays published as attributes of the same name plus "_" (``coef_`` ...).
    _ARRAY_ATTRS = ("coef", "train_rows", "train_cols", "row_kernel_factor",
                    "col_kernel_factor", "row_factors", "col_factors", "feature_pairs",
                    "feature_eigenvalues", "matrix", "known_rows", "known_cols",
                    "predictable_rows", "predictable_cols")

    def _set_fitted(self, arrays, n_iter, trace):
        self._arrays = dict(arrays)
        for key in self._ARRAY_ATTRS:
            setattr(self, f"{key}_", arrays.get(key))
        self.method_ = str(arrays["method"])
        self.solver_ = str(arrays["solver"])
        self.offset_ = float(np.asarray(arrays["offset"]).ravel()[0])
        self.n_rows_ = int(np.asarray(arrays["known_rows"]).shape[0])
        self.n_cols_ = int(np.asarray(arrays["known_cols"]).shape[0])
        self.n_iter_ = int(n_iter)
        self.trace_ = trace
        self._matrix_cache = None
        self._kernel_cache = {}

    def side_kernel(self, side) -> krr.SideKernel | None:
        """The fitted model's kernel on one side (``"row"`` or ``"col"``) as a
        :class:`krr.SideKernel`, in the form it was kept (dense, factor, identity); None when
        the method keeps no kernel (PG)."""
        self._check_fitted()
        a = self._arrays
        n = self.n_rows_ if side == "row" else self.n_cols_
        if a.get(f"{side}_kernel") is not None:
            return krr.SideKernel(n, dense=a[f"{side}_kernel"])
        if a.get(f"{side}_kernel_factor") is not None:
            shift = a.get(f"{side}_kernel_shift")
            return krr.SideKernel(n, factor=a[f"{side}_kernel_factor"],
                                  shift=0.0 if shift is None else float(shift))
        if a.get(f"{side}_kernel_identity") is not None:
            return krr.SideKernel(n, identity=True)
        return None

    def _kernel_attr(self, side):
        if "_arrays" not in self.__dict__:
            raise AttributeError(f"{side}_kernel_ (the model is not fitted)")
        if side not in self._kernel_cache:
            sk = self.side_kernel(side)
            self._kernel_cache[side] = None if sk is None else sk.dense()
        return self._kernel_cache[side]

    @property
    def row_kernel_(self):
        """The row kernel used (N x N; formed on first access when it was kept as a factor
        or the identity: see ``row_kernel_factor_``)."""
        return self._kernel_attr("row")

    @property
    def col_kernel_(self):
        """The column kernel used (L x L; formed on first access when kept as a factor)."""
        return self._kernel_attr("col")

    def _check_fitted(self, attribute="trace_"):
        super()._check_fitted("method_")  # trace_ exists from the first row on

    def predict(self, users, items):
        """Predicted values for pairs of indices (broadcast), ``offset_`` included, by the
        method's own formula (KKMCEX: the kernels' rows times the coefficient matrix once,
        then one dot product per pair; factor methods: one dot product per pair).

        Raises ValueError for a row or column the model cannot predict (no training entries
        and no kernel or graph link to one with entries).
        """
        self._check_fitted()
        users, items = check_index_pairs(users, items, self.n_rows_, self.n_cols_)
        shape = users.shape
        u = users.ravel().astype(np.int64)
        i = items.ravel().astype(np.int64)
        pb.check_predictable(u, i, self.predictable_rows_, self.predictable_cols_,
                             self.method_)
        if u.size == 0:
            return np.zeros(shape)
        out = REGISTRY[self.method_].predict(self._arrays, u, i)
        return (np.asarray(out, dtype=np.float64) + self.offset_).reshape(shape)

    def completed_matrix(self) -> np.ndarray:
        """The whole estimate ``F_hat`` (N x L; unpredictable rows/columns are NaN)."""
        self._check_fitted()
        if self._matrix_cache is None:
            F = REGISTRY[self.method_].completed(self._arrays) + self.offset_
            F[~self.predictable_rows_] = np.nan
            F[:, ~self.predictable_cols_] = np.nan
            F.setflags(write=False)
            self._matrix_cache = F
        return self._matrix_cache

    def predict_new(self, row_kernel_rows=None, col_kernel_rows=None) -> np.ndarray:
        """KKMCEX's extrapolation to entities outside the index space (§3.3).

        ``row_kernel_rows`` (P x N): kernel values between P new row entities and the N
        training rows (None: the N training rows themselves); ``col_kernel_rows`` (Q x L)
        likewise. Returns the P x Q predictions ``k_r Gamma k_c^T + offset``.
        """
        self._check_fitted()
        if self.method_ != "kkmcex":
            raise ValueError(f"predict_new needs the kernel form of KKMCEX; this model is "
                             f"method={self.method_!r}.")
        return REGISTRY["kkmcex"].predict_new(
            self._arrays, self.side_kernel("row"), self.side_kernel("col"), self.n_rows_,
            self.n_cols_, row_kernel_rows, col_kernel_rows) + self.offset_

    def evaluate(self, ratings) -> dict:
        """``{"nmse": ..., "rmse": ...}`` on ``ratings`` (same index space).

        ``nmse`` is the thesis's (3.68) on the given entries: ``sum (pred - y)^2 / sum y^2``
        (not variance-normalized); ``rmse`` the root mean squared error.
        """
        self._check_fitted()
        users, items, values, _, _ = pb.check_ratings(ratings)
        users, items = check_index_pairs(users, items, self.n_rows_, self.n_cols_)
        users, items = users.ravel().astype(np.int64), items.ravel().astype(np.int64)
        pb.check_predictable(users, items, self.predictable_rows_, self.predictable_cols_,
                             self.method_)
        return self._pair_metrics(users, items, values)

    def _pair_metrics(self, users, items, values) -> dict:
        """:meth:`evaluate`'s metrics on checked, predictable int64 pairs, no checks."""
        users = np.ascontiguousarray(users, dtype=np.int64)
        items = np.ascontiguousarray(items, dtype=np.int64)
        if users.size == 0:
            pred = np.zeros(users.shape)
        else:
            pred = np.asarray(REGISTRY[self.method_].predict(self._arrays, users, items),
                              dtype=np.float64) + self.offset_
        e = pred - values
        den = float(values @ values)
        return {"nmse": float(e @ e) / den if den > 0 else math.nan,
                "rmse": math.sqrt(float(e @ e) / e.shape[0])}

    def mean_predictor_metrics(self, train, ratings) -> dict:
        """:meth:`evaluate`'s metrics for the yardstick that predicts the training mean."""
        _, _, tv, _, _ = pb.check_ratings(train, "training ratings")
        _, _, values, _, _ = pb.check_ratings(ratings)
        e = values - float(tv.mean())
        den = float(values @ values)
        return {"nmse": float(e @ e) / den if den > 0 else math.nan,
                "rmse": math.sqrt(float(e @ e) / e.shape[0])}

    def _fitted_arrays(self) -> dict:
        """The learned state a saved run keeps (kernels included for kernel methods)."""
        self._check_fitted()
        return {k: v for k, v in self._arrays.items() if v is not None}

    @classmethod
    def _from_fitted_arrays(cls, arrays, params, trace, train=None):
        """A fitted model from :meth:`_fitted_arrays` and its params."""
        model = cls(**params)
        model._validate_params()
        if trace is None:
            trace = Trace(solver=f"kmc.{params.get('method', 'kkmcex')}", params=dict(params))
        own = {k: np.asarray(v) for k, v in arrays.items() if not k.startswith("data_")}
        model._set_fitted(own, trace.n_iter, trace)
        return model
