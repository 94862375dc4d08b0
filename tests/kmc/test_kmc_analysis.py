"""kmviz.kmc.analysis against oracles: numpy's SVD and eigendecomposition, the estimator's
own predict / evaluate, the Nyström formulas written out; and the figures built from them."""

import math

import numpy as np
import pandas as pd
import pytest

from kmviz.data.ratings import Ratings
from kmviz.data.splits import Split
from kmviz.kmc import KernelMatrixCompletion, gaussian_kernel
from kmviz.kmc import analysis as an
from kmviz.kmc import krr
from kmviz.kmc import figures as fg
from kmviz.kmc.nystrom import nystrom_approximation, ridge_leverage_scores

N, L = 24, 18
COLD_ROW, COLD_COL = 3, 5


@pytest.fixture(scope="module")
def problem():
    """A complete rank-2 matrix with smooth row / column kernels; row 3 and column 5 have
    no training value (cold start), 60 % of the rest is training, the remainder test."""
    rng = np.random.default_rng(0)
    xr, xc = rng.normal(size=(N, 2)), rng.normal(size=(L, 2))
    F = xr @ xc.T + 5.0
    Kr, Kc = gaussian_kernel(xr, xr, gamma=0.5), gaussian_kernel(xc, xc, gamma=0.5)
    u, i = np.meshgrid(np.arange(N), np.arange(L), indexing="ij")
    u, i = u.ravel(), i.ravel()
    cold = (u == COLD_ROW) | (i == COLD_COL)
    train = ~cold & (rng.random(u.shape[0]) < 0.6)
    common = dict(n_users=N, n_items=L, r_min=float(F.min()), r_max=float(F.max()))
    tr = Ratings(u[train], i[train], F[u, i][train], **common)
    te = Ratings(u[~train], i[~train], F[u, i][~train], **common)
    split = Split(train=tr, validation=None, test=te, val_size=0.0, test_size=0.4,
                  by="random", seed=0)
    model = KernelMatrixCompletion(mu=1e-3, center=True, solver="direct").fit(
        tr, row_kernel=Kr, col_kernel=Kc)
    return F, Kr, Kc, split, model


# ----------------------------------------------------------------------------- completion
def test_known_matrix_holds_every_value_and_its_part(problem):
    F, _, _, split, _ = problem
    values, part = an.known_matrix(split)
    np.testing.assert_array_equal(values, F)  # every entry is in train or test
    tr = split.train
    assert (part[np.asarray(tr.users), np.asarray(tr.items)] == an.PARTS["train"]).all()
    assert (part == an.PARTS["train"]).sum() == tr.n_ratings
    assert (part == an.PARTS["test"]).sum() == split.test.n_ratings


def test_completion_view_matches_the_model_and_marks_cold_start(problem):
    F, _, _, split, model = problem
    view = an.completion_view(model, split)
    assert not view.sampled and view.note == ""
    assert view.truth.shape == view.estimate.shape == (N, L)
    np.testing.assert_allclose(view.estimate, model.completed_matrix(), rtol=1e-10)
    np.testing.assert_allclose(view.error, view.estimate - F, rtol=1e-10)
    assert np.flatnonzero(view.cold_rows).tolist() == [COLD_ROW]
    assert np.flatnonzero(view.cold_cols).tolist() == [COLD_COL]


def test_batch_predict_and_block_estimate_equal_the_per_pair_sums(problem):
    """``predict`` (the batch formula that replaced ``analysis.predict_pairs``) equals the
    per-pair sums of KKMCEX and the whole estimate."""
    _, _, _, split, model = problem
    rng = np.random.default_rng(1)
    u, i = rng.integers(0, N, 500), rng.integers(0, L, 500)
    per_pair = krr.kkmcex_predict(model.row_kernel_, model.col_kernel_, model.train_rows_,
                                  model.train_cols_, model.coef_, u, i, route="pairs")
    np.testing.assert_allclose(model.predict(u, i), per_pair + model.offset_, rtol=1e-10)
    # both association orders: few pairs (per pair N) and many (per pair L)
    uu, ii = np.meshgrid(np.arange(N), np.arange(L), indexing="ij")
    np.testing.assert_allclose(model.predict(uu, ii).ravel(),
                               model.completed_matrix().ravel(), rtol=1e-10)
    rows, cols = np.array([0, COLD_ROW, 7]), np.array([COLD_COL, 2])
    np.testing.assert_allclose(an.block_estimate(model, rows, cols),
                               model.completed_matrix()[np.ix_(rows, cols)], rtol=1e-10)
    rr = KernelMatrixCompletion(method="rrmcex", n_components=30).fit(
        split.train, row_kernel=model.row_kernel_, col_kernel=model.col_kernel_)
    np.testing.assert_allclose(rr.predict(u, i), rr.completed_matrix()[u, i], rtol=1e-10)
    np.testing.assert_allclose(an.block_estimate(rr, rows, cols),
                               rr.completed_matrix()[np.ix_(rows, cols)], rtol=1e-10)


def test_factored_kernels_are_never_formed_by_the_page_helpers(problem):
    """A model whose kernels are factors (here exact: linear kernels on 2 features) goes
    through its own factored predictions: the same values as the dense-kernel model, and the
    N x N / L x L kernels are not built on the way."""
    F, _, _, split, _ = problem
    rng = np.random.default_rng(0)
    xr, xc = rng.normal(size=(N, 2)), rng.normal(size=(L, 2))
    dense = KernelMatrixCompletion(mu=1e-2, center=True, solver="direct").fit(
        split.train, row_kernel=xr @ xr.T, col_kernel=xc @ xc.T)
    factored = KernelMatrixCompletion(mu=1e-2, center=True, solver="direct").fit(
        split.train, row_kernel_factor=xr, col_kernel_factor=xc)
    assert factored.side_kernel("row").kind == "factor" == factored.side_kernel("col").kind
    u, i = rng.integers(0, N, 300), rng.integers(0, L, 300)
    np.testing.assert_allclose(factored.predict(u, i), dense.predict(u, i),
                               rtol=1e-8, atol=1e-8)
    rows, cols = np.array([0, COLD_ROW, 7]), np.array([COLD_COL, 2])
    np.testing.assert_allclose(an.block_estimate(factored, rows, cols),
                               dense.completed_matrix()[np.ix_(rows, cols)], rtol=1e-8,
                               atol=1e-8)
    an.error_table(factored, split)
    refit = an.cold_start_refit(factored, split, n_rows=2)[0]
    assert refit.side_kernel("row").kind == "factor" == refit.side_kernel("col").kind
    dense_refit = an.cold_start_refit(dense, split, n_rows=2)[0]
    np.testing.assert_allclose(refit.predict(u, i), dense_refit.predict(u, i), rtol=1e-8,
                               atol=1e-8)
    assert factored._kernel_cache == {}  # no dense kernel was formed


def test_completion_view_samples_big_matrices_cold_first(problem):
    _, _, _, split, model = problem
    view = an.completion_view(model, split, max_rows=8, max_cols=6)
    assert view.sampled and "8 of 24 rows" in view.note and "6 of 18 columns" in view.note
    assert COLD_ROW in view.rows and COLD_COL in view.cols
    assert (np.diff(view.rows) > 0).all()
    uu, ii = np.meshgrid(view.rows, view.cols, indexing="ij")
    np.testing.assert_allclose(view.estimate, model.predict(uu, ii), rtol=1e-10)


def test_error_table_agrees_with_evaluate_and_splits_cold_start(problem):
    F, _, _, split, model = problem
    table = an.error_table(model, split).set_index(["part", "entries"])
    test = split.test
    assert table.loc[("test", "all"), "nmse"] == pytest.approx(model.evaluate(test)["nmse"])
    assert table.loc[("test", "all"), "rmse"] == pytest.approx(model.evaluate(test)["rmse"])
    assert table.loc[("test", "warm"), "n"] + table.loc[("test", "cold start"), "n"] == \
        test.n_ratings
    assert table.loc[("test", "cold start"), "n"] == N + L - 1
    # the oracle of the cold-start NMSE and of the mean predictor
    u, i, y = np.asarray(test.users), np.asarray(test.items), np.asarray(test.values)
    cold = (u == COLD_ROW) | (i == COLD_COL)
    e = model.predict(u[cold], i[cold]) - y[cold]
    assert table.loc[("test", "cold start"), "nmse"] == pytest.approx(
        e @ e / (y[cold] @ y[cold]))
    mean = np.mean(split.train.values)
    assert table.loc[("test", "all"), "mean_predictor_nmse"] == pytest.approx(
        ((y - mean) @ (y - mean)) / (y @ y))
    # training has no cold entries: no "warm" row repeating "all"
    assert ("train", "warm") not in table.index
    assert (table["unpredictable"] == 0).all()


def test_error_table_of_a_part_that_is_all_cold_start(problem):
    _, _, _, split, model = problem
    test = split.test
    cold = (np.asarray(test.users) == COLD_ROW) | (np.asarray(test.items) == COLD_COL)
    only_cold = Split(train=split.train, validation=None, test=test.subset(cold),
                      val_size=0.0, test_size=0.4, by="cold_users", seed=0)
    table = an.error_table(model, only_cold)
    assert table["entries"].tolist() == ["all", "all (every one cold start)"]
    assert table["nmse"].iloc[1] == pytest.approx(model.evaluate(test.subset(cold))["nmse"])


def test_singular_value_spectra_equal_numpy_svd(problem):
    F, _, _, split, model = problem
    spectra, note = an.singular_value_spectra(model, split)
    assert note == ""
    got = {name: g["sigma"].to_numpy() for name, g in spectra.groupby("matrix", sort=False)}
    truth, estimate = list(got)
    assert truth.startswith("F, the data (complete)")
    np.testing.assert_allclose(got[truth], np.linalg.svd(F, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose(got[estimate],
                               np.linalg.svd(model.completed_matrix(), compute_uv=False),
                               rtol=1e-9)


def test_spectra_of_sparse_data_use_the_rescaled_observed_matrix(problem):
    _, _, _, split, model = problem
    spectra, _ = an.singular_value_spectra(model, split, coverage_min=1.01)
    name = spectra["matrix"].iloc[0]
    assert name.startswith("P_Ω(F) / p")
    values, part = an.known_matrix(split)
    train = part == an.PARTS["train"]
    P = np.where(train, values, 0.0) / train.mean()
    np.testing.assert_allclose(spectra.loc[spectra["matrix"] == name, "sigma"],
                               np.linalg.svd(P, compute_uv=False), rtol=1e-10)


def test_spectra_size_guard(problem):
    _, _, _, split, model = problem
    spectra, note = an.singular_value_spectra(model, split, max_side=10)
    assert "10 most-observed rows of 24" in note and "10 most-observed columns of 18" in note
    assert spectra.groupby("matrix").size().max() == 10


def test_cold_start_refit_hides_whole_rows(problem):
    _, Kr, _, split, model = problem
    refit, new_split, rows, cols = an.cold_start_refit(model, split, n_rows=3, random_state=1)
    assert len(rows) == 3 and len(cols) == 0 and COLD_ROW not in rows
    assert not np.isin(np.asarray(new_split.train.users), rows).any()
    assert new_split.train.n_ratings + new_split.test.n_ratings == N * L
    assert not refit.known_rows_[rows].any() and refit.predictable_rows_[rows].all()
    np.testing.assert_allclose(refit.row_kernel_, model.row_kernel_)
    table = an.error_table(refit, new_split).set_index(["part", "entries"])
    assert table.loc[("test", "cold start"), "n"] >= 3 * (L - 1)


def test_cold_start_refit_refuses_pg_and_big_data(problem):
    _, _, _, split, model = problem
    pg = KernelMatrixCompletion(method="pg", max_iter=5, tol=0.0).fit(split.train)
    with pytest.raises(ValueError, match="cannot predict rows"):
        an.cold_start_refit(pg, split)
    with pytest.raises(ValueError, match="limited to 10"):
        an.cold_start_refit(model, split, max_train=10)


def test_fraction_observed_curve(problem):
    _, _, _, split, model = problem
    calls = []
    frame, note = an.fraction_observed_curve(
        model, split, methods=("kkmcex", "rrmcex"), fractions=(0.3, 1.0),
        progress=lambda done, total, msg: calls.append((done, total)))
    assert calls[-1] == (4, 4) and note == ""
    assert list(frame["method"]) == ["kkmcex", "kkmcex", "rrmcex", "rrmcex"]
    n_train = split.train.n_ratings
    assert frame["n_train"].tolist() == [round(0.3 * n_train), n_train] * 2
    np.testing.assert_allclose(frame["observed_fraction"], frame["n_train"] / (N * L))
    assert (frame["error"] == "").all() and np.isfinite(frame["nmse"]).all()
    assert (frame["time_s"] > 0).all()
    # at 100 % with the run's settings KKMCEX is the run itself
    assert frame["nmse"].iloc[1] == pytest.approx(model.evaluate(split.test)["nmse"],
                                                  rel=1e-6)
    assert frame["nmse"].iloc[1] < frame["nmse"].iloc[0]


def test_fraction_observed_curve_guards(problem):
    _, _, _, split, model = problem
    frame, note = an.fraction_observed_curve(model, split, methods=("kkmcex",),
                                             fractions=(1.0,), max_side=10)
    assert "10 x 10 block" in note
    frame, note = an.fraction_observed_curve(model, split, methods=("kkmcex",),
                                             fractions=(0.5, 1.0), time_budget_s=-1)
    assert frame.empty and "2 fit(s) not started" in note


# ----------------------------------------------------------------------------- Nyström
@pytest.fixture(scope="module")
def mixture():
    return an.points_data("mixture", gamma=0.5)


def test_points_data_is_the_gaussian_kernel_of_the_points(mixture):
    assert mixture.n == 2000 and mixture.coords.shape == (2000, 2)
    np.testing.assert_allclose(mixture.K, gaussian_kernel(mixture.X, mixture.X, gamma=0.5))
    assert set(mixture.groups) == {"far cluster", "main clusters"}
    boston = an.points_data("boston")
    assert boston.X.shape == (506, 13) and boston.gamma == pytest.approx(1 / 13)
    with pytest.raises(ValueError, match="unknown point data"):
        an.points_data("nope")


def test_leverage_scores_equal_the_definition_and_sum_to_d_eff(problem):
    _, Kr, _, _, _ = problem
    data = an.KernelData(name="k", K=Kr, coords=np.zeros((N, 2)), labels=list(range(N)))
    for alpha in (1e-3, 0.1, 10.0):
        scores, d_eff = an.leverage_scores(data, alpha)
        oracle = np.diag(Kr @ np.linalg.inv(Kr + alpha * np.eye(N)))
        np.testing.assert_allclose(scores, oracle, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(scores, ridge_leverage_scores(Kr, alpha), rtol=1e-8)
        assert d_eff == pytest.approx(scores.sum(), rel=1e-12)
        assert d_eff == pytest.approx(np.trace(Kr @ np.linalg.inv(Kr + alpha * np.eye(N))))
    grid = an.alpha_grid(data)
    assert (np.diff(grid) > 0).all() and grid[0] > 0
    _, d_eff = an.leverage_scores(data, an.alpha_for_landmarks(data, 5))
    assert d_eff == pytest.approx(5.0, rel=1e-6)  # the scale m landmarks can cover


def test_approximate_scores_with_every_point_in_the_sketch_are_exact(problem):
    _, Kr, _, _, _ = problem
    data = an.KernelData(name="k", K=Kr, coords=np.zeros((N, 2)), labels=list(range(N)))
    exact, _ = an.leverage_scores(data, 0.05)
    approx = an.approximate_scores(data, 0.05, N)
    np.testing.assert_allclose(approx, exact, rtol=1e-6, atol=1e-10)
    agree = an.score_agreement(exact, approx)
    assert agree["pearson"] == pytest.approx(1.0) and agree["spearman"] == pytest.approx(1.0)
    assert agree["median_ratio"] == pytest.approx(1.0, rel=1e-6)


def test_nystrom_features_give_the_nystrom_approximation(mixture):
    idx, _ = an.draw_landmarks(mixture, 30, "uniform", random_state=0)
    assert len(np.unique(idx)) == 30
    Z = an.nystrom_features(mixture.K, idx)
    np.testing.assert_allclose(Z @ Z.T, nystrom_approximation(mixture.K, idx), atol=1e-8)


@pytest.mark.slow
def test_leverage_draws_use_the_default_ridge_and_favour_the_far_cluster(mixture):
    idx, alpha = an.draw_landmarks(mixture, 40, "leverage", random_state=0)
    assert alpha == pytest.approx(an.default_alpha(mixture, 40))
    far = np.flatnonzero(mixture.groups == "far cluster")
    scores, _ = an.leverage_scores(mixture, 1.0)
    assert scores[far].mean() > 5 * np.median(scores)  # the 20 far points stick out
    assert len(np.unique(idx)) == 40  # m distinct landmarks, as Nystroem draws them
    uniq, counts, err = an.sample_landmarks(mixture, 40, "leverage", random_state=0)
    assert len(uniq) == 40 and (counts == 1).all() and 0 <= err < 1
    for scheme in ("approximate_leverage", "recursive"):
        idx, _ = an.draw_landmarks(mixture, 40, scheme, random_state=0)
        assert idx.shape[0] == 40 and idx.min() >= 0 and idx.max() < mixture.n
    with pytest.raises(ValueError, match="unknown sampling"):
        an.draw_landmarks(mixture, 10, "nope")


def test_nystrom_error_curve_against_nystrom_errors(problem):
    _, Kr, _, _, _ = problem
    X = np.random.default_rng(3).normal(size=(N, 2))
    data = an.KernelData(name="k", K=gaussian_kernel(X, X, gamma=0.5), coords=X,
                         labels=list(range(N)), X=X, gamma=0.5)
    curve = an.nystrom_error_curve(data, [5, N], samplings=("uniform",), n_repeats=2,
                                   measures=("trace", "frobenius", "spectral"))
    ours = curve[curve["sampling"] == "uniform"]
    assert set(ours["measure"]) == {"trace", "frobenius", "spectral"}
    full = ours[ours["m"] == N].set_index("measure")["error"]
    assert (full < 1e-8).all()  # every point a landmark: K_hat = K
    # the oracle of one draw
    idx, _ = an.draw_landmarks(data, 5, "uniform", random_state=0 + 1000 * 0 + 5)
    E = data.K - nystrom_approximation(data.K, idx)
    got = ours[(ours["m"] == 5) & (ours["repeat"] == 0)].set_index("measure")["error"]
    assert got["trace"] == pytest.approx(np.trace(E) / np.trace(data.K), rel=1e-6)
    assert got["frobenius"] == pytest.approx(np.linalg.norm(E) / np.linalg.norm(data.K),
                                             rel=1e-6)
    assert got["spectral"] == pytest.approx(
        np.abs(np.linalg.eigvalsh(E)).max() / np.linalg.eigvalsh(data.K).max(), rel=1e-6)
    if an.sklearn_available():
        assert "sklearn" in set(curve["sampling"])
    kernel_only = an.KernelData(name="k", K=data.K, coords=X, labels=list(range(N)))
    curve2 = an.nystrom_error_curve(kernel_only, [5], samplings=("uniform",), n_repeats=1)
    assert set(curve2["sampling"]) == {"uniform"}  # scikit-learn's needs the points
    with pytest.raises(ValueError, match="limited to 10"):
        an.nystrom_error_curve(data, [5], max_points=10)


def test_error_bands_are_quantiles_over_repeats():
    curve = pd.DataFrame({"sampling": "uniform", "m": 10, "repeat": range(5),
                          "measure": "trace", "error": [1.0, 2.0, 3.0, 4.0, 5.0],
                          "time_s": 0.0})
    b = an.error_bands(curve).iloc[0]
    assert b["median"] == 3.0 and b["repeats"] == 5
    assert b["low"] == pytest.approx(np.quantile([1, 2, 3, 4, 5], 0.1))
    assert b["high"] == pytest.approx(np.quantile([1, 2, 3, 4, 5], 0.9))


def test_run_kernel_data_of_a_fitted_model(problem):
    _, Kr, _, split, model = problem
    data = an.run_kernel_data(model, split, "row")
    assert data.n == N and set(data.groups) == {"has training entries", "cold start"}
    assert data.groups[COLD_ROW] == "cold start"
    # kernel PCA: the top two eigenpairs of the centred kernel H K H
    H = np.eye(N) - 1.0 / N
    sig, Q = np.linalg.eigh(H @ data.K @ H)
    top = np.argsort(sig)[::-1][:2]
    np.testing.assert_allclose(np.abs(data.coords), np.abs(Q[:, top] * np.sqrt(sig[top])),
                               atol=1e-10)
    small = an.run_kernel_data(model, split, "col", max_points=10)
    assert small.n == 10 and "A random 10 of the 18 columns" in small.note


def test_kron_scores_equal_the_kronecker_definition(problem):
    _, Kr, Kc, _, model = problem
    alpha = 0.3
    exact, approx, d_eff = an.kron_scores(model, alpha)
    K = np.kron(model.col_kernel_, model.row_kernel_)  # vec stacks columns: entry (i, j)
    oracle = np.diag(K @ np.linalg.inv(K + alpha * np.eye(N * L)))  # is i + j N
    np.testing.assert_allclose(exact.ravel(order="F"), oracle, rtol=1e-8, atol=1e-12)
    assert d_eff == pytest.approx(oracle.sum(), rel=1e-10)
    r = ridge_leverage_scores(model.row_kernel_, math.sqrt(alpha))
    c = ridge_leverage_scores(model.col_kernel_, math.sqrt(alpha))
    np.testing.assert_allclose(approx, np.outer(r, c), rtol=1e-10)
    grid = an.kron_alpha_grid(model)
    top = np.linalg.eigvalsh(model.row_kernel_)[-1] * np.linalg.eigvalsh(model.col_kernel_)[-1]
    assert grid[-1] == pytest.approx(10 * top) and grid[0] == pytest.approx(1e-6 * top)
    with pytest.raises(ValueError, match="limited to 10 a side"):
        an.kron_scores(model, alpha, max_side=10)
    fig = fg.kron_scores_figure(exact, approx, list(range(N)), list(range(L)))
    assert [t.type for t in fig.data] == ["heatmap", "heatmap"]


# ----------------------------------------------------------------------------- figures
@pytest.mark.slow
def test_figures_are_built_from_the_results(problem, mixture):
    _, _, _, split, model = problem
    view = an.completion_view(model, split)
    for which in ("truth", "mask", "estimate", "error"):
        fig = fg.completion_map_figure(view, which)
        assert fig.data[0].type == "heatmap"
        assert len(fig.layout.shapes) == 2  # one cold row, one cold column
        assert any(str(t).startswith("❄") for t in fig.layout.yaxis.ticktext)
    frame, _ = an.fraction_observed_curve(model, split, methods=("kkmcex",),
                                          fractions=(0.5, 1.0))
    fig = fg.fraction_curve_figure(frame)
    assert [t.name for t in fig.data] == ["KKMCEX", "KKMCEX"]
    spectra, _ = an.singular_value_spectra(model, split)
    assert len(fg.spectra_figure(spectra).data) == 2
    scores, _ = an.leverage_scores(mixture, 1.0)
    assert fg.leverage_map_figure(mixture, scores).data[0].marker.color is not None
    assert len(fg.score_scatter_figure(scores, scores, groups=mixture.groups).data) == 3
    idx, counts, _ = an.sample_landmarks(mixture, 20, "leverage")
    assert len(fg.landmarks_figure(mixture, idx, counts).data[1].x) == len(idx)
    curve = an.nystrom_error_curve(mixture, [10, 20], samplings=("uniform", "leverage"),
                                   n_repeats=2, include_sklearn=False)
    fig = fg.nystrom_error_figure(an.error_bands(curve))
    assert [t.name for t in fig.data if t.name] == ["uniform", "ridge leverage (exact)"]
    assert not math.isnan(fig.data[1].y[0])


def test_kernel_block_of_a_factor_equals_the_dense_block():
    from kmviz.kmc.krr import SideKernel

    rng = np.random.default_rng(0)
    F = rng.normal(size=(30, 4))
    idx = np.array([1, 5, 7, 20])
    for kernel in (SideKernel(30, factor=F, shift=0.5), SideKernel(30, dense=F @ F.T),
                   SideKernel(30, identity=True)):
        np.testing.assert_allclose(an.kernel_block(kernel, idx),
                                   kernel.dense()[np.ix_(idx, idx)], atol=1e-12)


def test_kron_sample_states_the_sample_and_its_scores_match_the_blocks(problem):
    _, _, _, _, model = problem
    whole = an.kron_sample(model)
    assert whole.note == "" and whole.Kr.shape == (model.n_rows_, model.n_rows_)
    part = an.kron_sample(model, max_side=6, random_state=1)
    assert part.Kr.shape == (6, 6) and len(part.rows) == 6
    assert "uniform random sample" in part.note and "6 of the" in part.note
    exact, approx, d_eff = an.kron_scores(part, an.kron_alpha_grid(part)[20])
    assert exact.shape == (part.Kr.shape[0], part.Kc.shape[0]) and d_eff > 0
