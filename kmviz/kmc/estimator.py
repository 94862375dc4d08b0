"""``KernelMatrixCompletion``: kernel matrix completion with prior information (the thesis's
Chapters 2-3), on the shared outer loop of :class:`kmviz._base.IterativeEstimator`.

Methods (``method=``):

``"kkmcex"``  Kronecker kernel MC and extrapolation, eq. (3.46), exactly: one closed-form step
              by a dense Cholesky of ``K_OO + mu I`` (``solver="direct"``) or matrix-free
              preconditioned conjugate gradients, one CG iteration per trace row with its
              residual (``solver="cg"``; never forms K_OO).
``"rrmcex"``  ridge regression on d Kronecker features (3.59): the top-d products of the two
              kernels' eigenpairs (``rr_features="eigen"``) or of the SVDs of the two feature
              matrices (``"linear"``, §3.5.3). Closed form.
``"online_rrmcex"``  the SGD (3.63) of RRMCEX over a circular stream of the observed entries,
              ``batch_size`` updates per trace row; the whole matrix changes at every update.
              Each update carries the per-sample share ``mu / s`` of the ridge term, so that
              the iterates converge to RRMCEX's (3.62) with the same mu: (3.63) as printed
              (``+ mu xi`` per sample) minimizes (3.62) with ``s mu``.
``"als"``     kernel-regularized factorization (3.28) by the corrected Algorithm 2.
``"sgd"``     the same objective by per-entry SGD (KPMF-style).
``"pg"``      nuclear-norm proximal gradient (2.15) with the FPC / SPG / VPG schedules of
              Table 2.1, zero or graph initialization (2.42), and the Laplacian-regularized
              variant (2.51) (``lap_weight > 0``).

KKMCEX keeps a side kernel with an exact low-rank form as a factor ``K = F F^T`` (or the
identity) and never forms it (``factor_kernels=True``; ``kernel_rank=`` approximates
full-rank kernels): each CG product is then O(s r + N r_r r_c) through
:class:`krr.FactoredKronGram`, and predictions come from the factors of the estimate.

Kernels: ``fit(ratings, row_kernel=..., col_kernel=...)`` takes them as arrays (checked:
shape, symmetry, PSD; ``jitter=`` repairs); otherwise each side's kernel is built from the
ratings' side information by ``row_prior`` / ``col_prior``: a graph-Laplacian kernel of
``user_graph`` / ``item_graph``, a feature kernel of ``user_features`` / ``item_features``, or
the identity (no prior information).
"""

from __future__ import annotations

import math
import time
import warnings
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from .._base import IterativeEstimator, LoopPolicy, Step
from .._params import RANDOM_STATE, Param
from .._validation import check_index_pairs, check_random_state
from ..exceptions import ConvergenceWarning, DataValueError, InvalidParameterError
from ..trace import Trace
from . import factorization as fz
from . import kernels as kn
from . import krr

METHODS = ("kkmcex", "rrmcex", "online_rrmcex", "als", "sgd", "pg")
SOLVERS = ("auto", "direct", "cg")
PRECONDITIONERS = ("jacobi", "eigen", "none")
PRIORS = ("auto", "graph", "features", "identity")
RR_FEATURES = ("eigen", "linear")
PG_INITS = ("zero", "graph")
#: ``solver="auto"`` solves KKMCEX directly up to this many observations (a dense s x s
#: Cholesky: 72 MB and about 0.3 s at s = 3000 on the 2-core box) and by CG above.
DIRECT_MAX_S = 3000
#: ALS / SGD log a trace warning above this (lower estimate of the) kernel condition number.
ILL_CONDITIONED = 1e10
#: Methods that use the row and column kernels.
KERNEL_METHODS = ("kkmcex", "rrmcex", "online_rrmcex", "als", "sgd")

METHOD_LABELS = {
    "kkmcex": "KKMCEX: Kronecker kernel ridge regression (3.46)",
    "rrmcex": "RRMCEX: ridge regression on d eigen features (3.59)",
    "online_rrmcex": "online RRMCEX: SGD over a stream of entries (3.63)",
    "als": "ALS on kernel MC (3.28), corrected Alg. 2",
    "sgd": "SGD on kernel MC (3.28)",
    "pg": "nuclear-norm proximal gradient (2.15), Table 2.1 schedules",
}


def _numeric_features(df):
    if df is None:
        return None
    import pandas as pd

    if isinstance(df, pd.DataFrame):
        num = df.select_dtypes(include=[np.number, bool])
        if num.shape[1] == 0:
            return None
        return num.to_numpy(dtype=np.float64)
    return np.asarray(df, dtype=np.float64)


class KernelMatrixCompletion(IterativeEstimator):
    """Matrix completion with prior information in RKHSs (Giménez-Febrer, 2020).

    Parameters
    ----------
    method : {"kkmcex", "rrmcex", "online_rrmcex", "als", "sgd", "pg"}, default="kkmcex"
        The estimator (module docstring).
    mu : float > 0, default=0.01
        Regularization weight: the ridge mu of (3.40)/(3.58) (KKMCEX, RRMCEX), the kernel
        weight of (3.28) (ALS, SGD), the nuclear-norm weight mu_bar of (2.15) (PG; its scale
        is that of the singular values of the data).
    center : bool, default=False
        Subtract the mean training value before fitting and add it back to predictions. The
        thesis regresses the values as given (False).
    solver : {"auto", "direct", "cg"}, default="auto"
        KKMCEX: dense Cholesky of the s x s system, or matrix-free conjugate gradients;
        ``auto`` is direct up to s = 3000 observations.
    preconditioner : {"jacobi", "eigen", "none"}, default="jacobi"
        Of the CG path: ``diag(K_OO) + mu``, or ``Phi Phi^T + mu I`` with the
        ``n_components`` leading Kronecker eigen features (Woodbury, O(s d) per iteration).
    row_prior, col_prior : {"auto", "graph", "features", "identity"}, default="auto"
        Where a side's kernel comes from when it is not passed to ``fit``: the ratings'
        ``user_graph``/``item_graph`` (a graph-Laplacian kernel), their
        ``user_features``/``item_features`` (a feature kernel), or nothing (the identity,
        which cannot extrapolate). ``auto``: graph, else features, else identity.
    graph_kernel : {"diffusion", "regularized_laplacian", "bandlimited"}, default="diffusion"
        Kernel of a graph (3.65)-(3.66).
    eta : float > 0, default=1.0
        Diffusion time / Laplacian weight of the graph kernels (the thesis's eta).
    bandwidth : int >= 1, optional
        Kept graph frequencies of the bandlimited kernel (default: a tenth of the nodes).
    feature_kernel : {"gaussian", "linear", "pearson"}, default="gaussian"
        Kernel of feature vectors (§3.5.2).
    gamma : float > 0, optional
        Width of the Gaussian feature kernel ``exp(-gamma ||x - x'||^2)``; default
        ``1 / n_features``.
    jitter : float >= 0, optional
        Added to the diagonal of every kernel before the PSD check. Without it a kernel that
        is not PSD within rounding is refused. ALS and SGD invert the kernels (3.28):
        diffusion kernels are numerically singular (cond ~1e15), and there a jitter of about
        1e-4 turns NMSE ~1 into ~0.01 (the trace logs a warning above cond 1e10).
    factor_kernels : bool, default=True
        KKMCEX: keep a side kernel that has an exact low-rank form as that form and never
        build it: the identity, a linear (or Pearson) kernel on fewer features than
        entities (``K = X X^T``), any feature kernel whose entities take few distinct feature
        rows (``K = E K_u E^T``: MovieLens users by age, items by genres and year), a
        bandlimited graph kernel, or a factor passed to ``fit``. Each CG product then costs
        O(s r + N r_r r_c) instead of O(N^2 L + N L^2) (or O(s (N + L))), with the same
        result within rounding. False: dense kernels (the reference path).
    kernel_rank : int >= 1, optional
        KKMCEX: replace a full-rank side kernel (Gaussian on many distinct features,
        diffusion or regularized-Laplacian graph kernels) by a rank-``kernel_rank``
        approximation ``F F^T``: the leading eigenpairs (graph kernels; feature kernels up
        to ``kernels.DISTINCT_MAX`` distinct rows) or Nyström with uniform landmarks
        (seeded by ``random_state``). This changes the model (an approximate kernel), so it
        is off by default; exact factors of lower rank are kept as they are.
    add_constant : bool, default=False
        Add the all-ones kernel to each side's kernel (``K + 1 1^T``; with an identity
        prior, ``I + 1 1^T``). The Kronecker kernel ``(K_r + J) ⊗ (K_c + J)`` then also holds
        a global term, a term per row shared over columns and a term per column shared over
        rows (the biases of rating data) next to the kernels' own. Factors stay factors
        (one more column, or a shifted identity).
    n_components : int >= 1, default=100
        d: RRMCEX features, and the rank of the CG's eigen preconditioner.
    rr_features : {"eigen", "linear"}, default="eigen"
        RRMCEX features: eigenpairs of the two kernels, or the SVDs of the two feature
        matrices (the linear kernel, §3.5.3; needs features on both sides).
    rank : int >= 1, default=10
        p: factor rank of ALS and SGD; P, the eigenvectors of the graph initialization of PG.
    max_iter : int >= 1, default=200
        Iterative methods: CG iterations, ALS sweeps, SGD epochs, online blocks, PG
        iterations. Closed-form methods run one step.
    tol : float >= 0, default=1e-6
        Stopping tolerance: CG relative residual ``||m - (K_OO + mu I) c|| / ||m||``; ALS,
        SGD and online RRMCEX relative objective decrease; PG relative change
        ``||F_k - F_k-1||_F / ||F_k-1||_F`` at the final mu. 0: run max_iter.
    learning_rate : float > 0, optional
        SGD step: t_0 of online RRMCEX (default ``1 / mean ||phi||^2``, with
        ``t_n = min(t_0 / (1 + t_0 (mu / s) n), 1 / ||phi_n||^2)``), the step of SGD
        (default ``0.05 / rms(m)``).
    batch_size : int >= 1, optional
        Online RRMCEX: entries per trace row (default: one pass over the s entries).
    schedule : {"pg", "fpc", "spg", "vpg"}, default="fpc"
        PG's mu schedule (Table 2.1).
    mu0_factor : float >= 1, optional
        PG's starting mu_0 = mu0_factor * mu (Table 2.2: 10, or 5 with the graph init).
    decay : float in (0, 1), optional
        The schedule's eta (Table 2.2: FPC 0.75, SPG 0.65, VPG 0.85).
    switch_tol : float > 0, optional
        The schedule's eps (Table 2.2: FPC 1e-4, SPG 0.06).
    pg_init : {"zero", "graph"}, default="zero"
        PG start: zero, or the graph-based initialization (2.42) from the row graph.
    lap_weight : float >= 0, default=0.0
        alpha of the Laplacian-regularized PG (2.51) on the row graph.
    step : float > 0, optional
        PG step t (default ``1 / (1 + 2 alpha lambda_max(L))``, the inverse Lipschitz
        constant).
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

    _parameter_constraints = {
        "method": Param(str, options=METHODS, option_labels=METHOD_LABELS, label="method",
                        help="KKMCEX (3.46), RRMCEX (3.59), online RRMCEX (3.63), the "
                             "baselines ALS / SGD on (3.28) and nuclear-norm PG (2.15)."),
        "mu": Param(float, low=0, closed="neither", form_low=1e-10, step=0.01, label="μ (mu)",
                    help="Regularization μ: ridge weight of (3.40)/(3.58), kernel weight of "
                         "(3.28), nuclear-norm weight μ̄ of (2.15) for PG."),
        "center": Param(bool, label="center",
                        help="Fit the values minus their mean (added back to predictions); "
                             "the thesis uses the values as given."),
        "solver": Param(str, options=SOLVERS, label="KKMCEX solver",
                        help="Dense Cholesky of K_OO + μI, or matrix-free conjugate gradients "
                             "(vec trick, residual per iteration); auto: direct up to "
                             f"s = {DIRECT_MAX_S}."),
        "preconditioner": Param(str, options=PRECONDITIONERS, label="CG preconditioner",
                                advanced=True,
                                help="Jacobi diag(K_OO) + μ, or the d leading Kronecker eigen "
                                     "features (Woodbury), or none."),
        "row_prior": Param(str, options=PRIORS, label="row kernel from",
                           help="Source of the row (user) kernel when none is passed: the "
                                "user graph (Laplacian kernel), the user features, or the "
                                "identity (no prior information: no cold start)."),
        "col_prior": Param(str, options=PRIORS, label="column kernel from",
                           help="Source of the column (item) kernel when none is passed: the "
                                "item graph, the item features, or the identity."),
        "graph_kernel": Param(str, options=kn.GRAPH_KERNELS, label="graph kernel",
                              help="K = Q r⁺(Λ) Qᵀ (3.65): diffusion exp(−ηλ), regularized "
                                   "Laplacian 1/(1 + ηλ), bandlimited (3.66)."),
        "eta": Param(float, low=0, closed="neither", form_low=0.01, form_high=20.0, step=0.1,
                     label="η (eta)", help="Diffusion time / Laplacian weight η of the graph "
                                           "kernels (1 in the thesis's synthetic test)."),
        "bandwidth": Param(int, low=1, none_ok=True, label="bandwidth", advanced=True,
                           help="Graph frequencies kept by the bandlimited kernel (3.66); "
                                "empty: a tenth of the nodes."),
        "feature_kernel": Param(str, options=kn.FEATURE_KERNELS, label="feature kernel",
                                help="Kernel of side features (§3.5.2): Gaussian "
                                     "exp(−γ‖x − x′‖²), linear XXᵀ, Pearson correlation."),
        "gamma": Param(float, low=0, closed="neither", none_ok=True, label="γ (gamma)",
                       help="Width γ of the Gaussian feature kernel; empty: 1 / n_features."),
        "jitter": Param(float, low=0, none_ok=True, label="jitter", advanced=True,
                        help="Added to every kernel's diagonal before the PSD check; empty: "
                             "a kernel that is not PSD is refused. ALS/SGD invert the "
                             "kernels: diffusion kernels need ~1e-4 there."),
        "factor_kernels": Param(bool, label="factored kernels", advanced=True,
                                help="KKMCEX: keep kernels with an exact low-rank form "
                                     "(identity, linear kernel on few features, few distinct "
                                     "feature rows, bandlimited graph) as factors K = F Fᵀ and "
                                     "never build them: same result, each CG product "
                                     "O(s r + N r²) instead of O(N²L + NL²)."),
        "kernel_rank": Param(int, low=1, none_ok=True, form_high=5000, step=50,
                             label="kernel rank (approximate)", advanced=True,
                             help="KKMCEX: approximate each full-rank side kernel (Gaussian, "
                                  "diffusion, regularized Laplacian) by its best rank-r part "
                                  "(eigenpairs, or Nyström above 2,500 distinct feature "
                                  "rows): much faster on large item sets such as MovieLens "
                                  "latest-small, but a different kernel. Empty: exact "
                                  "kernels."),
        "add_constant": Param(bool, label="add constant kernel",
                              help="Use K + 11ᵀ on each side (I + 11ᵀ for the identity): "
                                   "the model also learns a global term and per-row / "
                                   "per-column terms (rating biases)."),
        "n_components": Param(int, low=1, form_high=5000, step=50, label="d (RRMCEX features)",
                              help="d: RRMCEX's Kronecker eigen features (3.59) (250 in the "
                                   "thesis's synthetic test); rank of the eigen "
                                   "preconditioner."),
        "rr_features": Param(str, options=RR_FEATURES, label="RRMCEX features", advanced=True,
                             help="Top-d products of the kernels' eigenpairs, or of the SVDs "
                                  "of the side-feature matrices (linear kernel, §3.5.3)."),
        "rank": Param(int, low=1, form_high=100, label="p (ALS / SGD rank)",
                      help="Factor rank p of ALS/SGD (10 in the thesis); P eigenvectors of "
                           "PG's graph initialization (2.42)."),
        "max_iter": Param(int, low=1, form_high=5000, label="max iterations",
                          help="CG iterations, ALS sweeps, SGD epochs, online blocks or PG "
                               "iterations (closed-form methods run one step)."),
        "tol": Param(float, low=0, step=1e-6, label="tolerance",
                     help="CG: relative residual; ALS/SGD/online: relative objective "
                          "decrease; PG: relative change of F at the final μ. 0: run "
                          "max_iter."),
        "learning_rate": Param(float, low=0, closed="neither", none_ok=True,
                               label="learning rate", advanced=True,
                               help="Online RRMCEX: t₀ of tₙ = t₀/(1 + t₀μn/s), capped at "
                                    "1/‖φₙ‖² (default 1/mean‖φ‖²); SGD: the step (default "
                                    "0.05/rms)."),
        "batch_size": Param(int, low=1, none_ok=True, label="entries per row", advanced=True,
                            help="Online RRMCEX: stream entries per trace row; empty: one "
                                 "pass."),
        "schedule": Param(str, options=fz.SCHEDULES, label="PG schedule", advanced=True,
                          help="μ schedule of Table 2.1: fixed (pg), FPC, SPG, VPG."),
        "mu0_factor": Param(float, low=1, none_ok=True, label="μ₀ / μ̄", advanced=True,
                            help="PG's starting μ₀ = factor · μ̄ (Table 2.2: 10; 5 with the "
                                 "graph init)."),
        "decay": Param(float, low=0, high=1, closed="neither", none_ok=True,
                       label="schedule η", advanced=True,
                       help="μ reduction factor (Table 2.2: FPC 0.75, SPG 0.65, VPG 0.85)."),
        "switch_tol": Param(float, low=0, closed="neither", none_ok=True,
                            label="schedule ε", advanced=True,
                            help="Switching tolerance (Table 2.2: FPC 1e-4, SPG 0.06)."),
        "pg_init": Param(str, options=PG_INITS, label="PG start", advanced=True,
                         help="Zero, or the graph-based initialization (2.42) from the row "
                              "graph."),
        "lap_weight": Param(float, low=0, label="PG α (Laplacian weight)", step=0.1,
                            advanced=True,
                            help="α of the Laplacian-regularized PG (2.51) on the row graph."),
        "step": Param(float, low=0, closed="neither", none_ok=True, label="PG step t",
                      advanced=True,
                      help="Step t of (2.24); empty: 1/(1 + 2α λ_max(L))."),
        "random_state": Param(RANDOM_STATE, none_ok=True, label="seed",
                              help="Seed of the factor initialization and the SGD orders "
                                   "(same seed, same model)."),
    }
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

    # ------------------------------------------------------------------ fit
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

    def _fit_finish(self, st, trace, validation):
        self._compare_with_mean(st, trace, validation)

    def _compare_with_mean(self, st, trace, validation):
        """Warn (trace and ConvergenceWarning) when the fit is no better than predicting the
        training mean on the validation entries (or, without them, on the training ones)."""
        if not trace.rows:
            return
        last = trace.rows[-1]
        mean = float(st.values.mean())
        if validation is not None and last.get("validation_rmse") is not None:
            v = np.asarray(validation.values, dtype=np.float64)
            ours, where = float(last["validation_rmse"]), "validation"
        elif last.get("train_rmse") is not None:
            v, ours, where = st.values, float(last["train_rmse"]), "training"
        else:
            return
        base = math.sqrt(float(np.mean((v - mean) ** 2)))
        if not (math.isfinite(ours) and ours >= base):
            return
        hint = ""
        if not st.prm["center"] and abs(mean) > float(np.std(st.values)):
            hint = (f" The values are not centered (mean {mean:.3g}): the method shrinks its "
                    f"estimate toward 0, so try center=True")
            hint += " and a larger mu (1-10 on ratings)." if st.method == "kkmcex" else "."
        msg = (f"{st.method}'s {where} RMSE {ours:.4g} is no better than predicting the "
               f"training mean ({base:.4g}).{hint}")
        trace.event("warning", msg)
        warnings.warn(msg, ConvergenceWarning, stacklevel=3)

    def _solver_name(self, params):
        method = params["method"]
        if method == "kkmcex":
            return f"kmc.kkmcex.{self._resolved_solver}"
        if method == "pg":
            return f"kmc.pg.{params['schedule']}"
        return f"kmc.{method}"

    # ------------------------------------------------------------------ data
    @staticmethod
    def _check_ratings(ratings, what="ratings"):
        for attr in ("users", "items", "values", "n_users", "n_items"):
            if not hasattr(ratings, attr):
                raise DataValueError(f"{what} has no attribute {attr!r}",
                                     expected="a kmviz.data.Ratings",
                                     fix="load data with kmviz.data.load or Ratings.from_arrays")
        users = np.asarray(ratings.users, dtype=np.int64)
        items = np.asarray(ratings.items, dtype=np.int64)
        values = np.asarray(ratings.values, dtype=np.float64)
        N, L = int(ratings.n_users), int(ratings.n_items)
        if not (users.shape == items.shape == values.shape) or users.ndim != 1:
            raise DataValueError(f"{what} has users, items and values of different shapes")
        if users.size == 0:
            from ..exceptions import EmptyDataError

            raise EmptyDataError(f"{what} holds no entries", expected="at least one rating")
        if users.min() < 0 or users.max() >= N or items.min() < 0 or items.max() >= L:
            raise DataValueError(f"{what} has indices outside its {N} x {L} index space")
        bad = ~np.isfinite(values)
        if bad.any():
            raise DataValueError(f"{what} holds {int(bad.sum())} non-finite value(s)",
                                 expected="finite values")
        return users, items, values, N, L

    def _side_kernel(self, side, N, given, graph, features, prm, *, factor=None,
                     factored=False, rank=None, rng=None):
        """One side's kernel as a :class:`krr.SideKernel` and a sentence saying where it came
        from. ``factored``: keep an exact low-rank form (or a ``rank`` approximation) as a
        factor instead of the dense kernel (KKMCEX only)."""
        who = "row" if side == "row" else "column"
        name = f"{side}_kernel"
        jitter = prm["jitter"]
        if isinstance(factor, krr.SideKernel):
            if factor.n != N:
                raise DataValueError(f"{name}_factor is a kernel on {factor.n} entities",
                                     expected=f"{N}, one per entity")
            what = (f"{who} kernel: given ({factor.kind}, rank {factor.rank}"
                    + (f", plus {factor.shift:g} I" if factor.shift else "") + ")")
            if factored:
                return factor, what
            return krr.SideKernel(N, dense=kn.check_kernel(factor.dense(), name, n=N,
                                                           jitter=jitter)), what
        if factor is not None:
            F = np.asarray(factor, dtype=np.float64)
            if F.ndim != 2 or F.shape[0] != N:
                raise DataValueError(f"{name}_factor has shape {F.shape}",
                                     expected=f"({N}, r): one row per entity, K = F F^T")
            if not np.isfinite(F).all():
                raise DataValueError(f"{name}_factor holds non-finite values",
                                     expected="finite numbers")
            what = f"{who} kernel: given as a factor F F^T of rank {F.shape[1]}"
            if factored:
                return krr.SideKernel(N, factor=F), what
            return krr.SideKernel(N, dense=kn.check_kernel(F @ F.T, name, n=N,
                                                           jitter=jitter)), what
        if given is not None:
            return (krr.SideKernel(N, dense=kn.check_kernel(given, name, n=N, jitter=jitter)),
                    f"{who} kernel: given")
        prior = prm[f"{side}_prior"]
        entity = "user" if side == "row" else "item"
        if prior == "auto":
            prior = "graph" if graph is not None else (
                "features" if features is not None else "identity")
        F = None
        exact = True
        if prior == "graph":
            if graph is None:
                raise InvalidParameterError(
                    f"{side}_prior='graph' but there is no {entity} graph: the ratings have no "
                    f"{entity}_graph and no {side}_graph was passed to fit. Pass one, or "
                    f"choose {side}_prior='features' or 'identity'.")
            A = kn.check_adjacency(graph, f"{side}_graph", n=N)
            what = f"{who} kernel: {prm['graph_kernel']} kernel of the {entity} graph"
            if factored and (prm["graph_kernel"] == "bandlimited" or rank is not None):
                F, exact, note = kn.graph_kernel_factor(A, prm["graph_kernel"], eta=prm["eta"],
                                                        bandwidth=prm["bandwidth"], rank=rank)
            if F is None:
                K = kn.graph_kernel(A, prm["graph_kernel"], eta=prm["eta"],
                                    bandwidth=prm["bandwidth"])
        elif prior == "features":
            if features is None:
                raise InvalidParameterError(
                    f"{side}_prior='features' but there are no numeric {entity} features: "
                    f"the ratings have no {entity}_features and no {side}_features was passed "
                    f"to fit. Pass them, or choose {side}_prior='graph' or 'identity'.")
            X = kn._features(features, f"{side}_features")
            if X.shape[0] != N:
                raise DataValueError(f"{side}_features has {X.shape[0]} rows",
                                     expected=f"{N}, one per {entity}")
            what = f"{who} kernel: {prm['feature_kernel']} kernel of the {entity} features"
            if factored:
                F, exact, note = kn.feature_kernel_factor(
                    X, prm["feature_kernel"], gamma=prm["gamma"], rank=rank,
                    random_state=rng)
            if F is None:
                K = kn.feature_kernel(X, prm["feature_kernel"], gamma=prm["gamma"])
        else:
            what = f"{who} kernel: identity (no prior information)"
            if factored:
                return krr.SideKernel(N, identity=True), what
            K = np.eye(N)
        if F is not None:
            return (krr.SideKernel(N, factor=F, exact=exact, note=note),
                    f"{what}, factored: {note}")
        return krr.SideKernel(N, dense=kn.check_kernel(K, name, n=N, jitter=jitter)), what

    @staticmethod
    def _plus_constant(sk):
        """``K + 1 1^T`` in the same form: a factor gains a column of ones, the identity
        becomes the shifted factor ``I + 1 1^T``, a dense kernel gets 1 added."""
        ones = np.ones((sk.n, 1))
        if sk.kind == "identity":
            return krr.SideKernel(sk.n, factor=ones, shift=1.0, note=sk.note)
        if sk.kind == "factor":
            return krr.SideKernel(sk.n, factor=np.hstack([sk.F, ones]), shift=sk.shift,
                                  exact=sk.exact, note=sk.note)
        return krr.SideKernel(sk.n, dense=sk.K + 1.0)

    # ------------------------------------------------------------------ start
    def _fit_start(self, ratings, prm, *, validation=None, row_kernel=None, col_kernel=None,
                   row_graph=None, col_graph=None, row_features=None, col_features=None,
                   truth=None, row_kernel_factor=None, col_kernel_factor=None):
        rows, cols, values, N, L = self._check_ratings(ratings, "training ratings")
        if truth is not None:
            truth = np.asarray(truth, dtype=np.float64)
            if truth.shape != (int(ratings.n_users), int(ratings.n_items)):
                raise DataValueError(f"truth has shape {truth.shape}",
                                     expected=f"the whole matrix, ({N}, {L})")
            if not np.isfinite(truth).all():
                raise DataValueError("truth holds non-finite values", expected="finite values")
        method = prm["method"]
        st = SimpleNamespace(prm=prm, method=method, N=N, L=L, rows=rows, cols=cols,
                             pending={}, events=[], iterative=False, tol=prm["tol"],
                             max_iter=prm["max_iter"], converged_message="converged",
                             row_kernel=None, col_kernel=None, row_side=None, col_side=None,
                             engine=None, truth=truth, values=values)
        rng = check_random_state(self.random_state)
        st.offset = float(values.mean()) if prm["center"] else 0.0
        m = values - st.offset
        st.m = m
        st.known_rows = np.bincount(rows, minlength=N) > 0
        st.known_cols = np.bincount(cols, minlength=L) > 0
        if validation is not None:
            self._check_ratings(validation, "validation ratings")
            if (int(validation.n_users), int(validation.n_items)) != (N, L):
                raise DataValueError(
                    f"validation has shape ({validation.n_users}, {validation.n_items}) but "
                    f"the training ratings have ({N}, {L})",
                    fix="split one Ratings so both share the index space")
        graphs = {"row": row_graph if row_graph is not None else getattr(
            ratings, "user_graph", None),
                  "col": col_graph if col_graph is not None else getattr(
            ratings, "item_graph", None)}
        feats = {"row": _numeric_features(row_features if row_features is not None else
                                          getattr(ratings, "user_features", None)),
                 "col": _numeric_features(col_features if col_features is not None else
                                          getattr(ratings, "item_features", None))}
        for side, entity in (("row", "user"), ("col", "item")):
            X = feats[side]
            if X is not None and not np.isfinite(X).all():
                # missing side information (MovieLens films without a year) would make every
                # kernel value of that entity NaN: fill with the feature's mean, and say so
                bad = ~np.isfinite(X)
                means = np.nanmean(np.where(bad, np.nan, X), axis=0)
                X = np.where(bad, np.where(np.isfinite(means), means, 0.0)[None, :], X)
                feats[side] = X
                st.events.append(f"{int(bad.sum())} missing {entity} feature value(s) filled "
                                 f"with their feature's mean")
        self._resolved_solver = ""
        linear_rr = method in ("rrmcex", "online_rrmcex") and prm["rr_features"] == "linear"

        t0 = time.perf_counter()
        if method in KERNEL_METHODS and not linear_rr:
            factored = bool(method == "kkmcex" and prm["factor_kernels"]
                            and not prm["jitter"])
            rank = prm["kernel_rank"] if method == "kkmcex" else None
            sides = {}
            for side, n, given, fac in (("row", N, row_kernel, row_kernel_factor),
                                        ("col", L, col_kernel, col_kernel_factor)):
                sides[side], what = self._side_kernel(
                    side, n, given, graphs[side], feats[side], prm, factor=fac,
                    factored=factored, rank=rank, rng=rng)
                if prm["add_constant"]:
                    sides[side] = self._plus_constant(sides[side])
                    what += " + the all-ones kernel"
                st.events.append(what)
            st.row_side, st.col_side = sides["row"], sides["col"]
            st.row_kernel = st.row_side.K
            st.col_kernel = st.col_side.K
        elif linear_rr:
            for side, n, ent in (("row", N, "user"), ("col", L, "item")):
                if feats[side] is None:
                    raise InvalidParameterError(
                        f"rr_features='linear' needs {ent} features (numeric "
                        f"{ent}_features in the ratings or {side}_features= in fit); use "
                        f"rr_features='eigen' to work from kernels.")
                if feats[side].shape[0] != n:
                    raise DataValueError(f"{side}_features has {feats[side].shape[0]} rows",
                                         expected=f"{n}, one per {ent}")
            st.X_row = kn._features(feats["row"], "row_features")
            st.X_col = kn._features(feats["col"], "col_features")
            st.row_kernel = st.X_row @ st.X_row.T
            st.col_kernel = st.X_col @ st.X_col.T
            st.events += ["row kernel: linear kernel of the user features (SVD features)",
                          "column kernel: linear kernel of the item features (SVD features)"]
        st.pending["kernels"] = time.perf_counter() - t0

        # which rows / columns can be predicted
        if getattr(st, "row_side", None) is not None:
            st.predictable_rows = st.row_side.linked(st.known_rows)
            st.predictable_cols = st.col_side.linked(st.known_cols)
        elif st.row_kernel is not None:
            st.predictable_rows = kn.linked(st.row_kernel, st.known_rows)
            st.predictable_cols = kn.linked(st.col_kernel, st.known_cols)
        else:
            st.predictable_rows = st.known_rows.copy()
            st.predictable_cols = st.known_cols.copy()

        getattr(self, f"_start_{method}")(st, prm, rng, graphs, feats)

        if validation is not None:  # fail now, not at iteration 1, on unpredictable pairs
            self._check_predictable(np.asarray(validation.users), np.asarray(validation.items),
                                    st.predictable_rows, st.predictable_cols, method,
                                    "validation ratings")
        return st

    def _loop_policy(self, params, state) -> LoopPolicy:
        """One step for the closed-form methods (KKMCEX direct, RRMCEX), else max_iter; the
        loop's objective test is not ours: every method decides its convergence (CG
        residual, PG change at the final mu ...) in its step."""
        if not state.iterative:
            return LoopPolicy(max_iter=1, end_message="closed-form solution")
        return LoopPolicy(max_iter=int(params["max_iter"]),
                          budget="max_iter" if state.tol > 0 else None)

    def _start_kkmcex(self, st, prm, rng, graphs, feats):
        s = st.rows.shape[0]
        solver = prm["solver"]
        if solver == "auto":
            solver = "direct" if s <= DIRECT_MAX_S else "cg"
        self._resolved_solver = solver
        t0 = time.perf_counter()
        rs, cs = st.row_side, st.col_side
        st.factored = rs.kind != "dense" or cs.kind != "dense"
        if st.factored and not (rs.low_rank or cs.low_rank
                                or rs.kind == cs.kind == "identity"):
            # no pure low-rank side: the dense vec trick (the kernels formed)
            st.factored = False
            rs = st.row_side = krr.SideKernel(rs.n, dense=rs.dense())
            cs = st.col_side = krr.SideKernel(cs.n, dense=cs.dense())
            st.row_kernel, st.col_kernel = rs.K, cs.K
        if st.factored:
            st.gram = krr.FactoredKronGram(rs, cs, st.rows, st.cols)
            st.events.append(
                f"factored kernels: ranks {rs.rank} x {cs.rank} ({rs.kind} x {cs.kind}); each "
                f"product of K_OO through the {st.gram.route} route")
        else:
            st.gram = krr.KronGram(rs.K, cs.K, st.rows, st.cols)
        if solver == "cg":
            st.iterative = True
            feats_pc = None
            if prm["preconditioner"] == "eigen":
                t1 = time.perf_counter()
                sr, Qr = rs.eigen(prm["n_components"])
                sc, Qc = cs.eigen(prm["n_components"])
                st.pending["eig"] = time.perf_counter() - t1
                ef = krr.EigenFeatures(sr, Qr, sc, Qc, prm["n_components"])
                feats_pc = ef.rows(st.rows, st.cols)
            st.cg = krr.KKMCEXConjugateGradient(st.gram, st.m, prm["mu"],
                                                preconditioner=prm["preconditioner"],
                                                features=feats_pc)
            st.pending["setup"] = time.perf_counter() - t0 - st.pending.get("eig", 0.0)
            st.coef = st.cg.x
        else:
            st.pending["setup"] = time.perf_counter() - t0

    def _start_rrmcex(self, st, prm, rng, graphs, feats, online=False):
        t0 = time.perf_counter()
        if prm["rr_features"] == "linear":
            sr, Qr = krr.features_svd(st.X_row)
            sc, Qc = krr.features_svd(st.X_col)
        else:
            sr, Qr = krr.kernel_eigen(st.row_kernel)
            sc, Qc = krr.kernel_eigen(st.col_kernel)
        st.pending["eig"] = time.perf_counter() - t0
        st.features = krr.EigenFeatures(sr, Qr, sc, Qc, prm["n_components"])
        st.xi = np.zeros(st.features.d)
        if prm["n_components"] > st.features.d:
            st.events.append(f"only {st.features.d} features exist (N L or the kernels' "
                             f"ranks); d = {st.features.d}")

    def _start_online_rrmcex(self, st, prm, rng, graphs, feats):
        self._start_rrmcex(st, prm, rng, graphs, feats)
        st.iterative = True
        from ._numba import online_rr_feature_norms

        t0 = time.perf_counter()
        f = st.features
        # the features stay factored (U, V, w: (N + L) d numbers, built once); the
        # objective (3.62) is one O(s d) pass per row (no d x d Gram: O(s d^2))
        st.mm = float(st.m @ st.m)
        s = st.rows.shape[0]
        st.order = rng.permutation(s).astype(np.int64)
        st.batch = prm["batch_size"] or s
        st.n_done = 0
        if prm["learning_rate"] is not None:
            st.t0 = float(prm["learning_rate"])
        else:  # t_0 = 1 / mean ||phi||^2, each step capped at 1 / ||phi_n||^2 (ours):
            # on the thesis's synthetic test 1 / max ||phi||^2 (256 times smaller there)
            # left one pass at NMSE 0.74 where this reaches 0.28 (RRMCEX: 0.22)
            tot = online_rr_feature_norms(f.U, f.V, f.weights, st.rows, st.cols)
            st.t0 = s / max(tot, 1e-300)
        st.pending["features"] = time.perf_counter() - t0
        st.prev_obj = math.inf

    def _factor_start(self, st, prm):
        t0 = time.perf_counter()
        st.Aw, cond_r = fz.kernel_inverse(st.row_kernel, "row_kernel", return_condition=True)
        st.Ah, cond_c = fz.kernel_inverse(st.col_kernel, "col_kernel", return_condition=True)
        st.pending["invert"] = time.perf_counter() - t0
        for side, cond in (("row", cond_r), ("column", cond_c)):
            if cond > ILL_CONDITIONED:
                st.events.append(
                    f"the {side} kernel is ill-conditioned (cond >= {cond:.1e}): its inverse in "
                    f"(3.28) is dominated by rounding; consider jitter (e.g. 1e-4 times the "
                    f"largest kernel entry)")
        st.iterative = True
        st.prev_obj = math.inf

    def _start_als(self, st, prm, rng, graphs, feats):
        self._factor_start(st, prm)
        st.engine = fz.KernelALS(st.rows, st.cols, st.m, st.N, st.L, st.Aw, st.Ah, prm["mu"],
                                 prm["rank"], rng)

    def _start_sgd(self, st, prm, rng, graphs, feats):
        self._factor_start(st, prm)
        st.engine = fz.KernelSGD(st.rows, st.cols, st.m, st.N, st.L, st.Aw, st.Ah, prm["mu"],
                                 prm["rank"], rng, learning_rate=prm["learning_rate"])

    def _start_pg(self, st, prm, rng, graphs, feats):
        st.iterative = True
        N, L = st.N, st.L
        M = np.zeros((N, L))
        M[st.rows, st.cols] = st.m
        mask = np.zeros((N, L), dtype=bool)
        mask[st.rows, st.cols] = True
        need_graph = prm["lap_weight"] > 0 or prm["pg_init"] == "graph"
        if need_graph and graphs["row"] is None:
            raise InvalidParameterError(
                "PG with lap_weight > 0 or pg_init='graph' needs a row (user) graph: the "
                "ratings have no user_graph and no row_graph was passed to fit.")
        t0 = time.perf_counter()
        F0 = None
        mu0_factor = prm["mu0_factor"]
        if prm["pg_init"] == "graph":
            # (2.42) only needs A's eigenvectors: any symmetric matrix will do (the Ch. 2
            # synthetic "graph" is the projector U_T U_T^T, with negative entries)
            A0 = kn._symmetrized(kn._as_dense_square(graphs["row"], "row_graph", N),
                                 "row_graph")
            F0 = fz.graph_init(M, mask, A0, min(prm["rank"], N))
            mu0_factor = 5.0 if mu0_factor is None else mu0_factor
        st.pending["init"] = time.perf_counter() - t0
        lap = None
        if prm["lap_weight"] > 0:
            A = kn.check_adjacency(graphs["row"], "row_graph", n=N)
            lap = np.diag(A.sum(axis=1)) - A
            from scipy.sparse.csgraph import connected_components

            _, comp = connected_components(sp.csr_matrix(A), directed=False)
            reach = np.zeros(comp.max() + 1, dtype=bool)
            reach[comp[st.known_rows]] = True
            st.predictable_rows = reach[comp]
        st.engine = fz.NuclearPG(
            M, mask, prm["mu"], schedule=prm["schedule"],
            mu0=None if mu0_factor is None else mu0_factor * prm["mu"], decay=prm["decay"],
            switch_tol=prm["switch_tol"], step=prm["step"], lap=lap,
            lap_weight=prm["lap_weight"], F0=F0, tol=prm["tol"])

    # ------------------------------------------------------------------ steps
    def _flush(self, st, trace):
        for name, sec in st.pending.items():
            trace.add_time(name, sec)
        st.pending = {}
        for msg in st.events:
            trace.event("info", msg)
        st.events = []

    def _fit_step(self, st, trace, it):
        self._flush(st, trace)
        row = getattr(self, f"_step_{st.method}")(st, trace, it)
        if st.truth is not None:
            with trace.phase("truth"):
                row["truth_nmse"] = krr.nmse(self._current_matrix(st), st.truth)
        return Step(row, converged=st.converged,
                    reason=st.converged_message if st.converged else "")

    def _current_matrix(self, st):
        """The whole current estimate (offset included), for ``truth_nmse``."""
        method = st.method
        if method == "kkmcex":
            F = st.gram.full(st.cg.x if self._resolved_solver == "cg" else st.coef)
        elif method in ("rrmcex", "online_rrmcex"):
            f = st.features
            F = (f.U * (f.weights * st.xi)) @ f.V.T
        elif method == "als":
            F = st.engine.W @ st.engine.H.T
        elif method == "sgd":
            W, H = st.engine.factors()
            F = W @ H.T
        else:
            F = st.engine.F
        return F + st.offset

    def _train_rmse(self, st, pred):
        e = st.m - pred
        return math.sqrt(float(e @ e) / e.shape[0])

    def _step_kkmcex(self, st, trace, it):
        st.converged = False
        if self._resolved_solver == "direct":
            # one Cholesky: float32 factor + float64 refinement from krr.MIXED_MIN_S
            # observations up, float64 below or when refinement cannot reach its accuracy
            if st.factored:
                st.coef, info = krr.kkmcex_factored_cholesky(st.gram, st.m, st.prm["mu"])
            else:
                st.coef, info = krr.kkmcex_cholesky(st.row_kernel, st.col_kernel, st.rows,
                                                    st.cols, st.m, st.prm["mu"])
            for phase in ("gram", "factor", "refine", "solve"):
                if info[phase] > 0:
                    trace.add_time(phase, info[phase])
            if info["fallback"]:
                trace.event("info", f"float64 Cholesky: {info['fallback']}")
            extra = dict(refine_iter=info["refine_iter"], blas_threads=info["threads"],
                         mixed_precision=info["precision"] == "mixed")
            with trace.phase("objective"):
                # K_OO c = m - mu c at the exact solution
                Kc_part = st.m - st.prm["mu"] * st.coef
                obj = krr.kkmcex_objective(Kc_part, st.coef, st.m, st.prm["mu"])
            return dict(objective=obj, train_rmse=self._train_rmse(st, Kc_part),
                        n_observed=int(st.m.shape[0]), **extra)
        cg = st.cg
        with trace.phase("cg"):
            cg.step()
        st.coef = cg.x
        rel = cg.relative_residual
        st.converged = rel <= st.tol
        if st.converged:
            st.converged_message = (f"CG converged: relative residual {rel:.3g} <= tol "
                                    f"{st.tol:g} after {cg.n_iter} iterations")
        return dict(objective=cg.objective(), cg_residual=rel,
                    train_rmse=self._train_rmse(st, cg.Kx), n_matvec=int(cg.A.n_matvec),
                    n_observed=int(st.m.shape[0]))

    def _step_rrmcex(self, st, trace, it):
        st.converged = False
        f = st.features
        with trace.phase("features"):
            G, h = f.gram_and_rhs(st.rows, st.cols, st.m)
        with trace.phase("solve"):
            st.xi = krr.rrmcex_solve(G, h, st.prm["mu"])
        obj = krr.rrmcex_objective(G, h, float(st.m @ st.m), st.xi, st.prm["mu"])
        fit = max(float(st.m @ st.m) - 2 * st.xi @ h + st.xi @ (G @ st.xi), 0.0)
        return dict(objective=obj, train_rmse=math.sqrt(fit / st.m.shape[0]),
                    n_features=f.d)

    def _step_online_rrmcex(self, st, trace, it):
        from ._numba import online_rr_block, online_rr_sse

        f = st.features
        lam = st.prm["mu"] / st.order.shape[0]  # per-sample share of mu ||xi||^2 in (3.62)
        with trace.phase("sgd"):
            online_rr_block(f.U, f.V, f.weights, st.rows, st.cols, st.m, st.order,
                            st.n_done % st.order.shape[0], st.batch, st.n_done, st.xi,
                            lam, st.t0)
        st.n_done += st.batch
        with trace.phase("objective"):
            fit = online_rr_sse(f.U, f.V, f.weights, st.rows, st.cols, st.m, st.xi)
            obj = fit + st.prm["mu"] * float(st.xi @ st.xi)
        st.converged = self._decrease_converged(st, obj)
        return dict(objective=obj, train_rmse=math.sqrt(fit / st.m.shape[0]),
                    n_seen=int(st.n_done),
                    step_size=st.t0 / (1.0 + st.t0 * lam * st.n_done))

    def _decrease_converged(self, st, obj):
        prev = st.prev_obj
        st.prev_obj = obj
        if not math.isfinite(prev) or st.tol <= 0:
            return False
        dec = (prev - obj) / max(abs(prev), 1e-300)
        if abs(dec) < st.tol:
            st.converged_message = (f"converged: relative objective change {dec:.3g} below "
                                    f"tol {st.tol:g}")
            return True
        return False

    def _step_als(self, st, trace, it):
        with trace.phase("als"):
            st.engine.step()
        with trace.phase("objective"):
            obj, sse = st.engine.objective()
        st.converged = self._decrease_converged(st, obj)
        return dict(objective=obj, train_rmse=math.sqrt(sse / st.m.shape[0]))

    def _step_sgd(self, st, trace, it):
        with trace.phase("sgd"):
            st.engine.step()
        with trace.phase("objective"):
            obj, sse = st.engine.objective()
        st.converged = self._decrease_converged(st, obj)
        return dict(objective=obj, train_rmse=math.sqrt(sse / st.m.shape[0]))

    def _step_pg(self, st, trace, it):
        with trace.phase("prox"):
            row = dict(st.engine.step())
        st.converged = st.engine.converged
        if st.converged:
            st.converged_message = (f"PG converged at mu = {st.engine.mu_bar:g}: relative "
                                    f"change {row['rel_change']:.3g} < tol {st.tol:g}")
        row["train_rmse"] = math.sqrt(row["observed_sse"] / st.m.shape[0])
        return row

    # ------------------------------------------------------------------ publish
    def _fit_publish(self, st, n_iter, trace):
        method = st.method
        arrays = {"method": np.array(method), "solver": np.array(self._resolved_solver or ""),
                  "offset": np.array([st.offset]), "known_rows": st.known_rows,
                  "known_cols": st.known_cols, "predictable_rows": st.predictable_rows,
                  "predictable_cols": st.predictable_cols}
        if method == "kkmcex":
            coef = st.cg.x if self._resolved_solver == "cg" else getattr(
                st, "coef", np.zeros(st.rows.shape[0]))
            if st.factored:
                P, Q = st.gram.estimate_factors(coef)
                arrays.update(kind=np.array("factors"), coef=np.array(coef),
                              train_rows=st.rows, train_cols=st.cols,
                              row_factors=np.array(P), col_factors=np.array(Q))
                for side, sk in (("row", st.row_side), ("col", st.col_side)):
                    if sk.kind == "dense":
                        arrays[f"{side}_kernel"] = sk.K
                    elif sk.kind == "factor":
                        arrays[f"{side}_kernel_factor"] = sk.F
                        if sk.shift:
                            arrays[f"{side}_kernel_shift"] = np.array(sk.shift)
                    else:
                        arrays[f"{side}_kernel_identity"] = np.array(True)
            else:
                arrays.update(kind=np.array("kron"), coef=np.array(coef), train_rows=st.rows,
                              train_cols=st.cols, row_kernel=st.row_kernel,
                              col_kernel=st.col_kernel)
        elif method in ("rrmcex", "online_rrmcex"):
            f = st.features
            arrays.update(kind=np.array("factors"), coef=np.array(st.xi),
                          row_factors=f.U * (f.weights * st.xi), col_factors=f.V,
                          feature_pairs=np.stack([f.a, f.b], axis=1),
                          feature_eigenvalues=f.eigenvalues, row_kernel=st.row_kernel,
                          col_kernel=st.col_kernel)
        elif method in ("als", "sgd"):
            eng = st.engine
            W, H = eng.factors() if method == "sgd" else (eng.W, eng.H)
            arrays.update(kind=np.array("factors"), row_factors=np.array(W),
                          col_factors=np.array(H), row_kernel=st.row_kernel,
                          col_kernel=st.col_kernel)
        else:
            arrays.update(kind=np.array("dense"), matrix=np.array(st.engine.F))
        self._set_fitted(arrays, n_iter, trace)

    _ARRAY_ATTRS = {"coef": "coef_", "train_rows": "train_rows_", "train_cols": "train_cols_",
                    "row_kernel_factor": "row_kernel_factor_",
                    "col_kernel_factor": "col_kernel_factor_",
                    "row_factors": "row_factors_", "col_factors": "col_factors_",
                    "feature_pairs": "feature_pairs_",
                    "feature_eigenvalues": "feature_eigenvalues_", "matrix": "matrix_",
                    "known_rows": "known_rows_", "known_cols": "known_cols_",
                    "predictable_rows": "predictable_rows_",
                    "predictable_cols": "predictable_cols_"}

    def _set_fitted(self, arrays, n_iter, trace):
        self._arrays = dict(arrays)
        for key, attr in self._ARRAY_ATTRS.items():
            setattr(self, attr, arrays.get(key))
        self.method_ = str(arrays["method"])
        self.solver_ = str(arrays["solver"])
        self.offset_ = float(np.asarray(arrays["offset"]).ravel()[0])
        self.n_rows_ = int(np.asarray(arrays["known_rows"]).shape[0])
        self.n_cols_ = int(np.asarray(arrays["known_cols"]).shape[0])
        self.n_iter_ = int(n_iter)
        self.trace_ = trace
        self._matrix_cache = None
        self._kernel_cache = {}

    def _side(self, side):
        """The fitted model's kernel on one side as a :class:`krr.SideKernel` (None when the
        method keeps no kernel)."""
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
            sk = self._side(side)
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

    # ------------------------------------------------------------------ prediction
    def _check_fitted(self, attribute="trace_"):
        super()._check_fitted("method_")

    @staticmethod
    def _check_predictable(users, items, prow, pcol, method, what="the requested pairs"):
        for name, idx, ok, side, ent in (("users", users, prow, "row", "user"),
                                         ("items", items, pcol, "column", "item")):
            bad = ~ok[idx]
            if bad.any():
                first = int(np.asarray(idx)[bad].ravel()[0])
                n_bad = int(np.unique(np.asarray(idx)[bad]).shape[0])
                if method == "pg":
                    why = ("nuclear-norm MC (method='pg') cannot extrapolate"
                           + (" columns" if side == "column" else
                              " rows without lap_weight > 0 and a graph linking them to "
                              "observed rows"))
                    fix = ("use a kernel method (kkmcex, rrmcex, als) with a kernel on this "
                           "side, or leave these entities out")
                else:
                    why = (f"its {side} kernel links it to no {ent} with training entries "
                           f"(identity kernel or an isolated graph node)")
                    fix = (f"give a {side} kernel that relates it to others ({side}_kernel=, "
                           f"a {ent} graph or {ent} features), or leave it out")
                raise ValueError(
                    f"Cannot predict {what}: {ent} {first} has no training entries and {why} "
                    f"({n_bad} such {name} in all). Fix: {fix}.")

    def _pairs(self, users, items):
        return check_index_pairs(users, items, self.n_rows_, self.n_cols_)

    def predict(self, users, items):
        """Predicted values for pairs of indices (broadcast), ``offset_`` included.

        Raises ValueError for a row or column the model cannot predict (no training entries
        and no kernel or graph link to one with entries).
        """
        self._check_fitted()
        users, items = self._pairs(users, items)
        shape = users.shape
        u = users.ravel().astype(np.int64)
        i = items.ravel().astype(np.int64)
        self._check_predictable(u, i, self.predictable_rows_, self.predictable_cols_,
                                self.method_)
        a = self._arrays
        kind = str(a["kind"])
        if kind == "kron":
            out = krr.kkmcex_predict(a["row_kernel"], a["col_kernel"], a["train_rows"],
                                     a["train_cols"], a["coef"], u, i)
        elif kind == "factors":
            from ._numba import pair_rowdot

            out = np.empty(u.shape[0])
            pair_rowdot(np.ascontiguousarray(a["row_factors"], dtype=np.float64),
                        np.ascontiguousarray(a["col_factors"], dtype=np.float64), u, i, out)
        else:
            out = a["matrix"][u, i]
        return (out + self.offset_).reshape(shape)

    def completed_matrix(self) -> np.ndarray:
        """The whole estimate ``F_hat`` (N x L; unpredictable rows/columns are NaN)."""
        self._check_fitted()
        if self._matrix_cache is None:
            a = self._arrays
            kind = str(a["kind"])
            if kind == "kron":
                F = krr.KronGram(a["row_kernel"], a["col_kernel"], a["train_rows"],
                                 a["train_cols"]).full(a["coef"])
            elif kind == "factors":
                F = a["row_factors"] @ a["col_factors"].T
            else:
                F = np.array(a["matrix"])
            F = F + self.offset_
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
        a = self._arrays
        rs, cs = self._side("row"), self._side("col")
        Kr = None if row_kernel_rows is None else np.atleast_2d(
            np.asarray(row_kernel_rows, dtype=np.float64))
        Kc = None if col_kernel_rows is None else np.atleast_2d(
            np.asarray(col_kernel_rows, dtype=np.float64))
        if (Kr is not None and Kr.shape[1] != self.n_rows_) or (
                Kc is not None and Kc.shape[1] != self.n_cols_):
            raise ValueError(f"row_kernel_rows must have {self.n_rows_} columns and "
                             f"col_kernel_rows {self.n_cols_}; got "
                             f"{None if Kr is None else Kr.shape} and "
                             f"{None if Kc is None else Kc.shape}.")
        G = sp.csr_matrix((np.asarray(a["coef"], dtype=np.float64),
                           (np.asarray(a["train_rows"]), np.asarray(a["train_cols"]))),
                          shape=(self.n_rows_, self.n_cols_))  # repeats summed
        # left = K_r Gamma (P x L), then left K_c^T
        if Kr is not None:
            left = np.asarray((G.T @ Kr.T).T)
        else:
            left = np.asarray(rs.apply(G.toarray()))
        if Kc is not None:
            out = left @ Kc.T
        else:
            out = np.asarray(cs.apply(np.ascontiguousarray(left.T))).T
        return out + self.offset_

    # ------------------------------------------------------------------ metrics
    def evaluate(self, ratings) -> dict:
        """``{"nmse": ..., "rmse": ...}`` on ``ratings`` (same index space).

        ``nmse`` is the thesis's (3.68) on the given entries: ``sum (pred - y)^2 / sum y^2``
        (not variance-normalized); ``rmse`` the root mean squared error.
        """
        self._check_fitted()
        users, items, values, _, _ = self._check_ratings(ratings)
        pred = self.predict(users, items)
        e = pred - values
        den = float(values @ values)
        return {"nmse": float(e @ e) / den if den > 0 else math.nan,
                "rmse": math.sqrt(float(e @ e) / e.shape[0])}

    def score(self, ratings) -> float:
        """Minus the RMSE (higher is better)."""
        return -self.evaluate(ratings)["rmse"]

    def mean_predictor_metrics(self, train, ratings) -> dict:
        """:meth:`evaluate`'s metrics for the yardstick that predicts the training mean."""
        _, _, tv, _, _ = self._check_ratings(train, "training ratings")
        _, _, values, _, _ = self._check_ratings(ratings)
        e = values - float(tv.mean())
        den = float(values @ values)
        return {"nmse": float(e @ e) / den if den > 0 else math.nan,
                "rmse": math.sqrt(float(e @ e) / e.shape[0])}

    # ------------------------------------------------------------------ runs
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

    def save(self, path, *, split=None, dataset=None):
        """Write the fitted model in the run format (:func:`kmviz.runs.save_model_file`)."""
        from ..runs import save_model_file

        return save_model_file(path, self, split=split, dataset=dataset)
