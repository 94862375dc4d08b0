"""Kernel matrix completion with prior information, Nyström and leverage-score sampling.

``KernelMatrixCompletion`` completes a partly observed matrix from kernels on its rows and
columns (Giménez-Febrer, PhD thesis, UPC 2020): KKMCEX, the closed-form Kronecker kernel ridge
regression (3.46) with a matrix-free conjugate-gradient path; RRMCEX on Kronecker eigen
features (3.59) and its online SGD (3.63); the baselines ALS / SGD on kernel MC (3.28) and
nuclear-norm proximal gradient with the FPC / SPG / VPG schedules (Ch. 2). Rows and columns
without observations are extrapolated through the kernels. Each method is a solver module of
:mod:`kmviz.kmc.solvers`; the estimator holds the shared settings and dispatches once.

:mod:`kmviz.kmc.rkhs` builds kernels from prior information (graph-Laplacian kernels,
Gaussian / linear / Pearson feature kernels, graph builders) and refuses kernels that are not
PSD. :mod:`kmviz.kmc.nystrom` has ridge leverage scores (exact Kronecker scores without the
Kronecker product, the thesis's approximation (5.23)), the effective dimension, samplers, the
``Nystroem`` transformer with uniform / leverage / approximate / recursive landmark sampling,
and the Nyström error measures. :mod:`kmviz.kmc.synthetic` has the thesis's test beds,
:mod:`kmviz.kmc.datasets` Gapminder (countries x years with region and year graphs) and
Boston housing, offline.
"""

from .estimator import METHODS, KernelMatrixCompletion
from .rkhs import (
    bandlimited_kernel,
    check_kernel,
    diffusion_kernel,
    erdos_renyi_graph,
    feature_kernel,
    gaussian_kernel,
    geodesic_weights,
    graph_kernel,
    group_graph,
    knn_graph,
    laplacian,
    linear_kernel,
    pearson_kernel,
    regularized_laplacian_kernel,
    spectral_weights,
    temporal_graph,
)
from . import rkhs
from .krr import kkmcex_direct, nmse
from .synthetic import (
    KernelMCTruth,
    gaussian_mixture,
    make_graph_lowrank,
    make_kernel_mc,
    observe,
    spectrum_shares,
)

#: The RKHS kernels' module under its name before the family template (kmviz.kmc.rkhs).
kernels = rkhs

__all__ = [
    "METHODS",
    "KernelMatrixCompletion",
    "KernelMCTruth",
    "bandlimited_kernel",
    "check_kernel",
    "diffusion_kernel",
    "erdos_renyi_graph",
    "feature_kernel",
    "gaussian_kernel",
    "gaussian_mixture",
    "geodesic_weights",
    "graph_kernel",
    "group_graph",
    "kkmcex_direct",
    "knn_graph",
    "laplacian",
    "linear_kernel",
    "make_graph_lowrank",
    "make_kernel_mc",
    "nmse",
    "observe",
    "pearson_kernel",
    "regularized_laplacian_kernel",
    "spectral_weights",
    "spectrum_shares",
    "temporal_graph",
]
