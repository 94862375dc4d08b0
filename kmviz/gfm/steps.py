"""One outer iteration of each gFM solver, and the state a fit works on.

:class:`FitState` is everything a :meth:`~kmviz.gfm.GeneralizedFM.fit` needs while it runs
(the shared loop of :class:`kmviz._base.IterativeEstimator` hands it to every step); its
:class:`StreamState` is what Algorithm 1 carries from one batch to the next, kept after the
fit as the fitted attribute ``stream_`` so that ``partial_fit`` continues the stream.
:func:`onepass_step` consumes one batch (:mod:`kmviz.gfm.onepass`), :func:`als_step` makes
one ALS pass (:mod:`kmviz.gfm.als`); both return the trace row's values.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..exceptions import ConvergenceWarning, InvalidParameterError
from . import als, onepass
from .data import RegressionData
from .design import RatingsDesign
from .recovery import Truth, recovery_errors

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
PHASES = {"als": ("init", "solve_U", "solve_V", "objective"),
          "onepass": ("init", "residual", "qr", "v_update")}


@dataclass
class StreamState:
    """What a fit carries from one batch (or ALS pass) to the next.

    Attributes
    ----------
    model : OnePassState or None
        w, U, V, b in standardized coordinates, the scaling and the counters; None until
        the first batch (or ALS's start).
    rng : numpy.random.Generator
        Seeds the Lanczos start vector of the initialization (ALS: its random U).
    truth : Truth or None
        The planted truth whose recovery errors each row reports.
    prev_eps : float
        The last row's ``eps`` (for ``contraction``).
    first_rmse : float or None
        The first batch's error, the yardstick of the divergence check.
    warned : bool
        The divergence warning was given (once per stream).
    """

    model: onepass.OnePassState | None = None
    rng: np.random.Generator | None = None
    truth: Truth | None = None
    prev_eps: float = math.nan
    first_rmse: float | None = None
    warned: bool = False


@dataclass
class FitState:
    """Everything one fit (or one ``partial_fit`` call) works on.

    ``solver`` is "onepass" or "als" ("auto" resolved from the data); ``prm`` the checked
    settings. One-pass: ``batches`` (``n_unused`` rows left over, ``check``: the batches'
    chunks still need checking). ALS: all the training data ``X``, ``y``. Both: the FM
    ``design`` of ratings (None for arrays) and its automatic decisions ``design_events``
    (logged by the first step), the ``feature_names`` and the checked ``validation`` data.
    """

    prm: dict
    solver: str
    stream: StreamState
    design: RatingsDesign | None = None
    design_events: list = field(default_factory=list)
    feature_names: Sequence | None = None
    validation: RegressionData | None = None
    batches: Sequence | None = None
    n_unused: int = 0
    check: bool = True
    X: object = None
    y: np.ndarray | None = None


def standardize_setting(prm, als_X=None) -> bool:
    """The ``standardize`` setting resolved: None is on, except for the ALS solver on a
    sparse design (``als_X``). One-hot columns: scaling a rare column up by 1/std weakens its
    ridge; and standardizing only the other columns (age, year) measured worse too on
    MovieLens 100K (test RMSE 0.972 against 0.937 unscaled, k = 2)."""
    if prm["standardize"] is not None:
        return bool(prm["standardize"])
    return not (als_X is not None and sp.issparse(als_X))


def raw_factors(m: onepass.OnePassState):
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

    ``check=False`` skips the per-chunk checks of data already checked as a whole."""
    engine = prm["engine"]
    if stream.model is None:
        with trace.phase("init"):
            stream.model, info = onepass.initialize(
                batch, prm["rank"], standardize=standardize_setting(prm),
                fit_intercept=prm["fit_intercept"], rng=stream.rng, engine=engine,
                check=check)
    else:
        if stream.model.rank != prm["rank"]:
            raise InvalidParameterError(
                f"The 'rank' parameter of {owner} was changed from {stream.model.rank} to "
                f"{prm['rank']} during a stream; call fit to restart.")
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
