"""Kernel MC's convergence curve: under conjugate gradients the training RMSE can jump far
above its start while CG does exactly what it promises (its A-norm error, equivalently the
quadratic (1/2) c^T A c - m^T c, falls at every iteration); the page says so when a run's
curve rises."""

import numpy as np
import pandas as pd

from kmviz.kmc.rkhs import gaussian_kernel
from kmviz.kmc.krr import KKMCEXConjugateGradient, KronGram
from kmviz.kmc.teaching import convergence_note, training_rmse_rise


def _cg_trace(preconditioner="jacobi", iters=40, seed=0):
    """CG on K_OO + mu I with the structure of the measured MovieLens settings (identity plus
    constant rows, Gaussian plus constant columns, mu = 3): the training RMSE and the
    quadratic CG minimizes, per iteration."""
    rng = np.random.default_rng(seed)
    N, L, s, mu = 60, 50, 900, 3.0
    X = rng.normal(size=(L, 3))
    Kr, Kc = np.eye(N) + 1.0, gaussian_kernel(X, X, gamma=0.3) + 1.0
    cells = rng.choice(N * L, s, replace=False)
    rows, cols = cells % N, cells // N
    m = rng.normal(size=s)
    cg = KKMCEXConjugateGradient(KronGram(Kr, Kc, rows, cols), m, mu,
                                 preconditioner=preconditioner)
    # the oracle: K_OO formed by brute force, entry by entry
    K = Kr[np.ix_(rows, rows)] * Kc[np.ix_(cols, cols)]
    A = K + mu * np.eye(s)
    c_star = np.linalg.solve(A, m)
    out = []
    for k in range(1, iters + 1):
        cg.step()
        e = cg.x - c_star
        out.append({"iteration": k, "train_rmse": float(np.sqrt(np.mean((m - K @ cg.x) ** 2))),
                    "a_norm_error": float(np.sqrt(e @ A @ e)),
                    "quadratic": float(0.5 * cg.x @ A @ cg.x - m @ cg.x),
                    "cg_residual": cg.relative_residual})
    return pd.DataFrame(out), float(np.sqrt(np.mean(m ** 2)))


def test_cg_lowers_its_error_norm_every_iteration_while_the_training_rmse_jumps():
    frame, start = _cg_trace()
    assert np.all(np.diff(frame["a_norm_error"]) <= 1e-9 * frame["a_norm_error"].iloc[0])
    assert np.all(np.diff(frame["quadratic"]) <= 1e-9)
    # the RMSE of the iterates goes well above the RMSE of c = 0 (the values themselves)
    assert frame["train_rmse"].max() > 2.0 * start
    assert frame["train_rmse"].iloc[-1] < start


def test_the_note_names_the_rise_and_explains_cg():
    frame, _ = _cg_trace()
    rise = training_rmse_rise(frame)
    peak = int(frame["train_rmse"].idxmax())
    assert rise["iteration"] == frame["iteration"].iloc[peak]
    assert rise["peak"] == frame["train_rmse"].max()
    assert rise["final"] == frame["train_rmse"].iloc[-1]
    note = convergence_note(frame)
    assert note.startswith(f"The training RMSE rises to {rise['peak']:.3g} at iteration "
                           f"{rise['iteration']}")
    assert "not a divergence" in note and "K_OO + μI" in note


def test_no_note_for_a_falling_curve_or_a_small_wiggle():
    falling = pd.DataFrame({"iteration": [1, 2, 3, 4], "train_rmse": [2.0, 1.5, 1.2, 1.1]})
    assert training_rmse_rise(falling) is None and convergence_note(falling) is None
    wiggle = pd.DataFrame({"iteration": [1, 2, 3], "train_rmse": [2.0, 1.0, 1.05]})
    assert convergence_note(wiggle) is None
    one = pd.DataFrame({"iteration": [1], "train_rmse": [1.0]})
    assert convergence_note(one) is None


def test_a_rise_without_cg_gets_the_methods_own_words():
    frame = pd.DataFrame({"iteration": [1, 2, 3, 4], "train_rmse": [1.0, 0.8, 1.3, 0.7]})
    note = convergence_note(frame, "sgd")
    assert "rises to 1.3 at iteration 3 (from 0.8)" in note and "SGD lowers its own" in note


def test_the_note_names_the_highest_point_of_a_rise():
    # the largest relative rise is at iteration 5 (1.0 -> 4.0), the highest point at 3
    frame = pd.DataFrame({"iteration": [1, 2, 3, 4, 5, 6],
                          "train_rmse": [6.0, 3.0, 12.0, 1.0, 4.0, 0.9]})
    rise = training_rmse_rise(frame)
    assert (rise["iteration"], rise["peak"], rise["before"]) == (3, 12.0, 3.0)
