"""Thread counts for a benchmark, set before numpy, OpenBLAS or Numba are imported.

OpenBLAS, MKL, OpenMP and Numba read their thread counts from the environment once, when
they load, so a bench script calls :func:`pin_threads` before its first numpy import. This
module imports nothing else for that reason.
"""

from __future__ import annotations

import os
import sys

VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS", "NUMBA_NUM_THREADS")


def pin_threads(default: str) -> str:
    """The value of the command line's ``--threads`` (else ``default``), set as every
    library's thread count unless the environment already sets one; returns it."""
    threads = default
    for i, arg in enumerate(sys.argv):
        if arg == "--threads" and i + 1 < len(sys.argv):
            threads = sys.argv[i + 1]
    for var in VARIABLES:
        os.environ.setdefault(var, threads)
    return threads
