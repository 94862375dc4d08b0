"""One outer iteration of each gFM solver (the template's ``solvers``):
:func:`onepass_step` consumes one batch (:mod:`kmviz.gfm.onepass`), :func:`als_step` makes
one ALS pass (:mod:`kmviz.gfm.als`); both return the trace row's values. The state they
advance is :mod:`kmviz.gfm._state`.

:data:`REGISTRY` (solver name -> :class:`OnePassSolver` / :class:`ALSSolver`) holds them as
:class:`kmviz.solver.Solver` objects, which the estimator's fit loop drives; ``publish``
gives the fitted arrays in the original feature units (:func:`fitted_factors`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .._base import Step
from ..exceptions import ConvergenceWarning, InvalidParameterError
from . import als, onepass
from ._state import FitState, StreamState, raw_factors, standardize_setting
from .recovery import recovery_errors

#: What to do when Algorithm 1 diverges (the trace's warning and the NumericalError say it).
DIVERGENCE_ADVICE = (
    "Algorithm 1 assumes roughly Gaussian, standardized features and batches of 10-20 k d "
    "instances or more; one-hot ids, skewed columns and small batches are far from that. "
    "Use solver='als' (alternating least squares over all the data, the solver for real "
    "data), or larger batches (a larger batch_size, fewer n_batches), and keep standardize "
    "on.")

#: A batch error this many times the first batch's (the error of predicting the mean, as
#: the model starts at M = 0, w = 0) is reported as diverging: a working fit never gets
#: much worse than the mean; on one-hot data the error grows ~10x per batch.
DIVERGENCE_FACTOR = 3.0

#: The timed phases of each solver: every row gets all of them (0 s when not run), so
#: per-phase sums and charts need no gaps filled.
PHASES = {"als": ("init", "caches", "solve_U", "solve_V", "sweep", "objective"),
          "onepass": ("init", "residual", "qr", "v_update")}


def _add_recovery(stream: StreamState, row: dict, trace, *, basis_from_qr: bool) -> None:
    """The recovery errors of the current model against ``stream.truth`` into ``row``."""
    m = stream.model
    with trace.phase("truth"):
        w, U, V, _ = raw_factors(m)
        if basis_from_qr:
            basis = U if m.std.is_identity else np.linalg.qr(U)[0]
            errs = recovery_errors(stream.truth, w, U, V, basis=basis)
        else:
            errs = recovery_errors(stream.truth, w, U, V)
    row.update(errs)
    prev = stream.prev_eps
    row["contraction"] = errs["eps"] / prev if prev > 0 else math.nan
    stream.prev_eps = errs["eps"]


def onepass_step(stream: StreamState, batch, prm, trace, *, owner: str,
                 check=True) -> dict:
    """One batch: the initialization (first) or one power step (later); the row.

    ``check=False`` skips the per-chunk checks of data already checked as a whole. The
    settings are not checked here: a fit checks them once, ``partial_fit`` before each
    call (:func:`check_stream_rank`)."""
    engine = prm["engine"]
    if stream.model is None:
        with trace.phase("init"):
            stream.model, info = onepass.initialize(
                batch, prm["rank"], standardize=standardize_setting(prm),
                fit_intercept=prm["fit_intercept"], rng=stream.rng, engine=engine,
                check=check)
    else:
        info = onepass.update(stream.model, batch, engine=engine, timer=trace.phase,
                              check=check)
    m = stream.model
    watch_divergence(stream, info, trace)
    row = {"t": m.n_batches - 1, "n_seen": m.n_seen, "batch_size": info["n"],
           "objective": info["objective"], "train_rmse": info["rmse"], "h2": info["h2"],
           "h3_norm": info["h3_norm"], "n_matvec": int(info.get("n_matvec", 0))}
    if stream.truth is not None:
        _add_recovery(stream, row, trace, basis_from_qr=True)
    return row


def check_stream_rank(stream: StreamState, prm, owner: str) -> None:
    """InvalidParameterError when ``rank`` changed since the stream began (the check of
    ``partial_fit``'s entry; within one fit the settings cannot change)."""
    if stream.model is not None and stream.model.rank != prm["rank"]:
        raise InvalidParameterError(
            f"The 'rank' parameter of {owner} was changed from {stream.model.rank} to "
            f"{prm['rank']} during a stream; call fit to restart.")


def watch_divergence(stream: StreamState, info, trace) -> None:
    """One trace warning, in plain words, when the batch error grows beyond
    :data:`DIVERGENCE_FACTOR` times the first batch's (non-finite counts too)."""
    first = stream.first_rmse
    if first is None:
        stream.first_rmse = info["rmse"]
        return
    rmse = info["rmse"]
    growth = rmse / max(first, 1e-300) if math.isfinite(rmse) else math.inf
    if not stream.warned and growth > DIVERGENCE_FACTOR:
        stream.warned = True
        batch = stream.model.n_batches - 1 if stream.model is not None else 0
        message = (f"One-pass gFM is diverging: the batch error grew to {growth:.3g} "
                   f"times that of predicting the mean by batch {batch}. "
                   + DIVERGENCE_ADVICE)
        trace.event("warning", message, growth=growth, advice=True)
        # 4: above watch_divergence < onepass_step < the estimator's _fit_step/partial_fit
        warnings.warn(message, ConvergenceWarning, stacklevel=4)


def als_step(st: FitState, trace, it: int) -> dict:
    """One ALS pass over all the data (the start first); the row."""
    prm, stream = st.prm, st.stream
    if stream.model is None:
        with trace.phase("init"):
            stream.model = als.start(st.X, st.y, prm["rank"],
                                     standardize=standardize_setting(prm, st.X),
                                     fit_intercept=prm["fit_intercept"], rng=stream.rng)
    info = als.one_pass(stream.model, st.X, st.y, l2=float(prm["l2"]), timer=trace.phase)
    m = stream.model
    row = {"pass": it, "n_seen": m.n_seen, "objective": info["objective"],
           "train_rmse": info["rmse"], "n_inner": info["n_inner"]}
    if stream.truth is not None:
        _add_recovery(stream, row, trace, basis_from_qr=False)
    return row


def fitted_factors(stream: StreamState) -> dict:
    """The fitted arrays of a stream's model: ``coef`` (w), ``U``, ``V``, ``intercept``
    (b) in the original feature units, and the counts ``n_seen``, ``n_features``."""
    m = stream.model
    w, U, V, b = raw_factors(m)
    return {"coef": w, "U": U, "V": V, "intercept": float(b), "n_seen": int(m.n_seen),
            "n_features": int(m.d)}


class _GFMSolver:
    key = ""

    def start(self, state, rng) -> None:
        """Nothing to set up before the first step (which draws the model's start, timed
        as the "init" phase); the stream keeps the fit's generator."""
        if state.stream.rng is None:
            state.stream.rng = rng

    def publish(self, state) -> dict:
        return fitted_factors(state.stream)

    def name(self, state) -> str:
        return f"gfm.{self.key}"

    def __repr__(self):
        return f"{type(self).__name__}()"


class OnePassSolver(_GFMSolver):
    """Algorithm 1: one batch per step (``state.batches[iteration - 1]``)."""

    key = "onepass"

    def step(self, st: FitState, trace, it) -> Step:
        if it == 1 and st.n_unused:
            trace.event("info", f"{st.n_unused} rows beyond n_batches x batch_size were not "
                        "used", rows_unused=st.n_unused)
        return Step(onepass_step(st.stream, st.batches[it - 1], st.prm, trace,
                                 owner=st.owner, check=st.check))


class ALSSolver(_GFMSolver):
    """Alternating least squares: one pass over all the data (``state.X``, ``state.y``)
    per step."""

    key = "als"

    def step(self, st: FitState, trace, it) -> Step:
        return Step(als_step(st, trace, it))


#: solver name -> its :class:`kmviz.solver.Solver` ("auto" is resolved before the lookup).
REGISTRY = {"onepass": OnePassSolver(), "als": ALSSolver()}
