"""One place decides the Numba options used by every kernel in kmviz.

fastmath is restricted to a flag subset: ``nnan``/``ninf`` would turn NaN checks into
constants, so they are left out on purpose.
"""

JIT = dict(cache=True, nogil=True, fastmath={"reassoc", "contract", "arcp"})
PJIT = dict(JIT, parallel=True)
