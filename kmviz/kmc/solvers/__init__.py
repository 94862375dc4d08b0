"""The Kernel MC methods, one solver module each, behind one interface.

Every module is a :class:`kmviz.solver.Solver` (the protocol every multi-solver family
follows) registered in :data:`REGISTRY` (method -> module), which
:class:`~kmviz.kmc.KernelMatrixCompletion` looks up once per fit. Each offers:

``start(st, rng)``
    Set up the method's work arrays in the fit's state ``st`` (a
    :class:`kmviz.kmc._state.KMCState` built by :func:`kmviz.kmc._state.start`: data,
    kernels, settings ``st.prm``). Sets ``st.iterative`` for a method with more than one
    step.
``name(st) -> str``
    The trace's solver name (``"kmc.kkmcex.cg"``: KKMCEX's resolved solver).
``step(st, trace, iteration) -> Step``
    One outer iteration; converged with the method's own reason (a CG residual, the last
    mu of a PG schedule, a relative decrease below tol).
``estimate(st) -> ndarray``
    The whole current estimate (N x L, offset not included), for ``truth_nmse``.
``publish(st) -> dict``
    The method's fitted arrays (``kind``: ``"kron"``, ``"factors"`` or ``"dense"``).
``predict(arrays, users, items)`` / ``completed(arrays)``
    Predictions for index pairs / the whole matrix from those arrays (offset not included),
    so that a reopened run predicts the same way.
"""

from __future__ import annotations

from . import als, kkmcex, online_rrmcex, pg, rrmcex, sgd

REGISTRY = {"kkmcex": kkmcex, "rrmcex": rrmcex, "online_rrmcex": online_rrmcex, "als": als,
            "sgd": sgd, "pg": pg}
#: The registry's older name.
MODULES = REGISTRY

__all__ = ["MODULES", "REGISTRY"]
