"""The settings of :class:`~kmviz.kmc.KernelMatrixCompletion`, declared once as data.

Validation, the Train form, the CLI's ``--set`` and the run store read :data:`PARAMETERS`;
a setting used by some methods only says so with ``when={"method": (...)}``: the form shows
it only for those methods and validation does not check it for the others.
"""

from __future__ import annotations

from .._params import RANDOM_STATE, Param
from . import factorization as fz
from . import rkhs as kn

METHODS = ("kkmcex", "rrmcex", "online_rrmcex", "als", "sgd", "pg")
SOLVERS = ("auto", "direct", "cg")
PRECONDITIONERS = ("jacobi", "eigen", "none")
PRIORS = ("auto", "graph", "features", "identity")
RR_FEATURES = ("eigen", "linear")
PG_INITS = ("zero", "graph")
#: ``solver="auto"`` solves KKMCEX directly up to this many observations (a dense s x s
#: Cholesky: 72 MB and about 0.3 s at s = 3000 on the 2-core box) and by CG above.
DIRECT_MAX_S = 3000
#: Methods that use the row and column kernels.
KERNEL_METHODS = ("kkmcex", "rrmcex", "online_rrmcex", "als", "sgd")
#: Methods that iterate (``max_iter``, ``tol``); RRMCEX is closed-form (KKMCEX's direct
#: solver too, but its CG is not).
ITERATIVE_METHODS = ("kkmcex", "online_rrmcex", "als", "sgd", "pg")

METHOD_LABELS = {
    "kkmcex": "KKMCEX: Kronecker kernel ridge regression (3.46)",
    "rrmcex": "RRMCEX: ridge regression on d eigen features (3.59)",
    "online_rrmcex": "online RRMCEX: SGD over a stream of entries (3.63)",
    "als": "ALS on kernel MC (3.28), corrected Alg. 2",
    "sgd": "SGD on kernel MC (3.28)",
    "pg": "nuclear-norm proximal gradient (2.15), Table 2.1 schedules",
}

_KERNELS = {"method": KERNEL_METHODS}
_KKMCEX = {"method": ("kkmcex",)}
_PG = {"method": ("pg",)}
_EIGEN = {"method": ("kkmcex", "rrmcex", "online_rrmcex")}
_RRMCEX = {"method": ("rrmcex", "online_rrmcex")}
_FACTORS = {"method": ("als", "sgd", "pg")}
_ITERATIVE = {"method": ITERATIVE_METHODS}
_SGD_STEP = {"method": ("online_rrmcex", "sgd")}
_ONLINE = {"method": ("online_rrmcex",)}

PARAMETERS = {
    "method": Param(str, options=METHODS, option_labels=METHOD_LABELS, label="method",
                    help="KKMCEX (3.46), RRMCEX (3.59), online RRMCEX (3.63), the "
                         "baselines ALS / SGD on (3.28) and nuclear-norm PG (2.15)."),
    "mu": Param(float, low=0, high=1e12, closed="neither", form_low=1e-10, step=0.01, label="μ (mu)",
                help="Regularization μ: ridge weight of (3.40)/(3.58), kernel weight of "
                     "(3.28), nuclear-norm weight μ̄ of (2.15) for PG."),
    "center": Param(bool, label="center",
                    help="Fit the values minus their mean (added back to predictions); "
                         "the thesis uses the values as given."),
    "solver": Param(str, options=SOLVERS, label="KKMCEX solver",
                    help="Dense Cholesky of K_OO + μI, or matrix-free conjugate gradients "
                         "(vec trick, residual per iteration); auto: direct up to "
                         f"s = {DIRECT_MAX_S}.",
                    when=_KKMCEX),
    "preconditioner": Param(str, options=PRECONDITIONERS, label="CG preconditioner",
                            advanced=True,
                            help="Jacobi diag(K_OO) + μ, or the d leading Kronecker eigen "
                                 "features (Woodbury), or none.",
                            when=_KKMCEX),
    "row_prior": Param(str, options=PRIORS, label="row kernel from",
                       help="Source of the row (user) kernel when none is passed: the "
                            "user graph (Laplacian kernel), the user features, or the "
                            "identity (no prior information: no cold start).",
                       when=_KERNELS),
    "col_prior": Param(str, options=PRIORS, label="column kernel from",
                       help="Source of the column (item) kernel when none is passed: the "
                            "item graph, the item features, or the identity.",
                       when=_KERNELS),
    "graph_kernel": Param(str, options=kn.GRAPH_KERNELS, label="graph kernel",
                          help="K = Q r⁺(Λ) Qᵀ (3.65): diffusion exp(−ηλ), regularized "
                               "Laplacian 1/(1 + ηλ), bandlimited (3.66).",
                          when=_KERNELS),
    "eta": Param(float, low=0, high=1e6, closed="neither", form_low=0.01, form_high=20.0, step=0.1,
                 label="η (eta)", help="Diffusion time / Laplacian weight η of the graph "
                                       "kernels (1 in the thesis's synthetic test).",
                 when=_KERNELS),
    "bandwidth": Param(int, low=1, high=1_000_000, none_ok=True, label="bandwidth", advanced=True,
                       help="Graph frequencies kept by the bandlimited kernel (3.66); "
                            "empty: a tenth of the nodes.",
                       when=_KERNELS),
    "feature_kernel": Param(str, options=kn.FEATURE_KERNELS, label="feature kernel",
                            help="Kernel of side features (§3.5.2): Gaussian "
                                 "exp(−γ‖x − x′‖²), linear XXᵀ, Pearson correlation.",
                            when=_KERNELS),
    "gamma": Param(float, low=0, high=1e12, closed="neither", none_ok=True, label="γ (gamma)",
                   help="Width γ of the Gaussian feature kernel; empty: 1 / n_features.",
                   when=_KERNELS),
    "jitter": Param(float, low=0, high=1e6, none_ok=True, label="jitter", advanced=True,
                    help="Added to every kernel's diagonal before the PSD check; empty: "
                         "a kernel that is not PSD is refused. ALS/SGD invert the "
                         "kernels: diffusion kernels need ~1e-4 there.",
                    when=_KERNELS),
    "factor_kernels": Param(bool, label="factored kernels", advanced=True,
                            help="KKMCEX: keep kernels with an exact low-rank form "
                                 "(identity, linear kernel on few features, few distinct "
                                 "feature rows, bandlimited graph) as factors K = F Fᵀ and "
                                 "never build them: same result, each CG product "
                                 "O(s r + N r²) instead of O(N²L + NL²).",
                            when=_KKMCEX),
    "kernel_rank": Param(int, low=1, high=1_000_000, none_ok=True, form_high=5000, step=50,
                         label="kernel rank (approximate)", advanced=True,
                         help="KKMCEX: approximate each full-rank side kernel (Gaussian, "
                              "diffusion, regularized Laplacian) by its best rank-r part "
                              "(eigenpairs, or Nyström above 2,500 distinct feature "
                              "rows): much faster on large item sets such as MovieLens "
                              "latest-small, but a different kernel. Empty: exact "
                              "kernels.",
                         when=_KKMCEX),
    "add_constant": Param(bool, label="add constant kernel",
                          help="Use K + 11ᵀ on each side (I + 11ᵀ for the identity): "
                               "the model also learns a global term and per-row / "
                               "per-column terms (rating biases).",
                          when=_KERNELS),
    "n_components": Param(int, low=1, high=1_000_000, form_high=5000, step=50, label="d (RRMCEX features)",
                          help="d: RRMCEX's Kronecker eigen features (3.59) (250 in the "
                               "thesis's synthetic test); rank of the eigen "
                               "preconditioner.",
                          when=_EIGEN),
    "rr_features": Param(str, options=RR_FEATURES, label="RRMCEX features", advanced=True,
                         help="Top-d products of the kernels' eigenpairs, or of the SVDs "
                              "of the side-feature matrices (linear kernel, §3.5.3).",
                         when=_RRMCEX),
    "rank": Param(int, low=1, high=100_000, form_high=100, label="p (ALS / SGD rank)",
                  help="Factor rank p of ALS/SGD (10 in the thesis); P eigenvectors of "
                       "PG's graph initialization (2.42).",
                  when=_FACTORS),
    "max_iter": Param(int, low=1, high=1_000_000, form_high=5000, label="max iterations",
                      help="CG iterations, ALS sweeps, SGD epochs, online blocks or PG "
                           "iterations (closed-form methods run one step).",
                      when=_ITERATIVE),
    "tol": Param(float, low=0, high=1.0, step=1e-6, label="tolerance",
                 help="CG: relative residual; ALS/SGD/online: relative objective "
                      "decrease; PG: relative change of F at the final μ. 0: run "
                      "max_iter.",
                 when=_ITERATIVE),
    "learning_rate": Param(float, low=0, high=1e6, closed="neither", none_ok=True,
                           label="learning rate", advanced=True,
                           help="Online RRMCEX: t₀ of tₙ = t₀/(1 + t₀μn/s), capped at "
                                "1/‖φₙ‖² (default 1/mean‖φ‖²); SGD: the step (default "
                                "0.05/rms).",
                           when=_SGD_STEP),
    "batch_size": Param(int, low=1, high=10_000_000, none_ok=True, label="entries per row", advanced=True,
                        help="Online RRMCEX: stream entries per trace row; empty: one "
                             "pass.",
                        when=_ONLINE),
    "schedule": Param(str, options=fz.SCHEDULES, label="PG schedule", advanced=True,
                      help="μ schedule of Table 2.1: fixed (pg), FPC, SPG, VPG.",
                      when=_PG),
    "mu0_factor": Param(float, low=1, high=1e12, none_ok=True, label="μ₀ / μ̄", advanced=True,
                        help="PG's starting μ₀ = factor · μ̄ (Table 2.2: 10; 5 with the "
                             "graph init).",
                        when=_PG),
    "decay": Param(float, low=0, high=1, closed="neither", none_ok=True,
                   label="schedule η", advanced=True,
                   help="μ reduction factor (Table 2.2: FPC 0.75, SPG 0.65, VPG 0.85).",
                   when=_PG),
    "switch_tol": Param(float, low=0, high=1.0, closed="neither", none_ok=True,
                        label="schedule ε", advanced=True,
                        help="Switching tolerance (Table 2.2: FPC 1e-4, SPG 0.06).",
                        when=_PG),
    "pg_init": Param(str, options=PG_INITS, label="PG start", advanced=True,
                     help="Zero, or the graph-based initialization (2.42) from the row "
                          "graph.",
                     when=_PG),
    "lap_weight": Param(float, low=0, high=1e12, label="PG α (Laplacian weight)", step=0.1,
                        advanced=True,
                        help="α of the Laplacian-regularized PG (2.51) on the row graph.",
                        when=_PG),
    "step": Param(float, low=0, high=1e12, closed="neither", none_ok=True, label="PG step t",
                  advanced=True,
                  help="Step t of (2.24); empty: 1/(1 + 2α λ_max(L)).",
                  when=_PG),
    "random_state": Param(RANDOM_STATE, none_ok=True, label="seed",
                          help="Seed of the factor initialization and the SGD orders "
                               "(same seed, same model)."),
}
