"""What the Kernel MC pages say about a chart that looks wrong but is not.

KKMCEX solved by conjugate gradients (``solver="cg"``) writes one trace row per CG
iteration. CG lowers ``||c - c*||`` in the norm of ``A = K_OO + mu I`` at every iteration
(over a Krylov space that grows by one direction each time), and nothing else: the training
RMSE ``||m - K_OO c|| / sqrt(s)`` weighs the same error by the eigenvalues of ``K_OO`` once
more, so error left along the few very large eigenvalues (the all-ones kernel gives ``K_OO``
an eigenvalue of the order of the number of observations) shows magnified, and the RMSE (and
the objective (3.40), which contains it) can jump far above its starting value before CG
settles those directions. On MovieLens latest-small at the measured settings the training RMSE
reads 6.1 after the first iteration and 13.2 at the twelfth, then falls to 0.838, while
``(1/2) c^T A c - m^T c`` falls at every iteration (checked by ``tests/kmc/test_kmc_teaching.py``
on a small kernel with the same structure). :func:`convergence_note` finds such a rise in a
run's trace and says this in a sentence for the page that shows the curve.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: A rise of the training RMSE above its best value so far by more than this share is worth
#: a sentence (smaller wiggles are not what a reader asks about).
RISE_SHARE = 0.10


def training_rmse_rise(frame: pd.DataFrame) -> dict | None:
    """The highest point of ``train_rmse`` among those above its best value so far by more
    than :data:`RISE_SHARE` (the first value counts as the best before the second) in a
    trace frame: ``iteration``, ``peak``, ``before`` (the best value before it), ``final``;
    None without such a rise."""
    if "train_rmse" not in frame or len(frame) < 2:
        return None
    rmse = pd.to_numeric(frame["train_rmse"], errors="coerce").to_numpy(dtype=np.float64)
    ok = np.isfinite(rmse)
    if ok.sum() < 2:
        return None
    its = (frame["iteration"].to_numpy() if "iteration" in frame
           else np.arange(1, len(frame) + 1))[ok]
    rmse = rmse[ok]
    best = np.minimum.accumulate(rmse)
    before = np.concatenate([[rmse[0]], best[:-1]])
    excess = rmse / np.maximum(before, 1e-300) - 1.0
    rising = excess > RISE_SHARE
    if not rising.any():
        return None
    k = int(np.argmax(np.where(rising, rmse, -np.inf)))  # the highest point of a rise
    return {"iteration": int(its[k]), "peak": float(rmse[k]), "before": float(before[k]),
            "final": float(rmse[-1])}


def convergence_note(frame: pd.DataFrame, method: str = "kkmcex") -> str | None:
    """A sentence explaining a rise of the training RMSE in a Kernel MC trace (see the
    module docstring), or None when the curve does not rise."""
    rise = training_rmse_rise(frame)
    if rise is None:
        return None
    head = (f"The training RMSE rises to {rise['peak']:.3g} at iteration {rise['iteration']} "
            f"(from {rise['before']:.3g}) before it settles at {rise['final']:.3g}.")
    if "cg_residual" in frame and pd.to_numeric(frame["cg_residual"], errors="coerce").notna().any():
        return (head + " That is how conjugate gradients behave, not a divergence: each CG "
                "iteration lowers the error of the coefficients in the norm of K_OO + μI, "
                "and only that. The training RMSE weighs the same error by K_OO's eigenvalues "
                "once more, so error left along its few very large ones (the all-ones kernel "
                "and wide kernels make them) shows magnified until CG settles those "
                "directions; the objective (3.40) jumps with it. The stopping rule reads the "
                "relative residual.")
    names = {"als": "ALS", "sgd": "SGD", "online_rrmcex": "online RRMCEX", "pg": "PG"}
    return (head + f" {names.get(method, method)} lowers its own objective, not the training "
            "RMSE, which can rise for a while on the way.")


__all__ = ["RISE_SHARE", "convergence_note", "training_rmse_rise"]
