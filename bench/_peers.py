"""The peers' adapters the one-class and similarity benchmarks share: implicit's ALS
and BPR, LightFM's WARP (with its hybrid feature recipe), their hyper-parameter grids,
the side-feature encodings kmviz is compared with, and the top-5 ranking metrics all of
them are scored by. Import it after ``_threads_env.pin_threads`` (it loads NumPy)."""

from __future__ import annotations

import time

import numpy as np

ALS_GRID = [(r, a) for r in (1.0, 3.0, 10.0, 30.0, 100.0) for a in (0.3, 1.0, 3.0, 10.0, 30.0)]
BPR_GRID = [(lr, r) for lr in (0.01, 0.05, 0.1) for r in (0.001, 0.01, 0.1)]


KS = (1, 2, 3, 4, 5)
def ranking(scores, train, test, candidates=None):
    """p@1..5, nDCG@1..5, capped p@5 (percent) and the number of evaluated users; with
    ``candidates`` (a mask over items) only those items are ranked."""
    from kmviz import metrics

    scores = np.asarray(scores, dtype=np.float64)
    if candidates is not None:
        # below every candidate; exact ties among the candidates (a model with nothing to
        # say about new items) are broken at random, not by the item index (MovieLens ids
        # follow popularity, which would hand such a model a popularity ranking)
        jitter = np.random.default_rng(0).random(scores.shape)
        scores = scores + 1e-9 * max(1.0, float(np.abs(scores).max())) * jitter
        scores[:, ~candidates] = scores.min() - 1e6
    ranked = metrics.rank_items(scores, 5, exclude=train.csr)
    rel = [set() for _ in range(train.n_users)]
    for u, i in zip(np.asarray(test.users), np.asarray(test.items)):
        rel[int(u)].add(int(i))
    out = {}
    for k in KS:
        out[f"p@{k}"] = 100 * metrics.precision_at_k(ranked, rel, k)
    for k in KS:
        out[f"n@{k}"] = 100 * metrics.ndcg_at_k(ranked, rel, k)
    out["capped p@5"] = 100 * metrics.capped_precision_at_k(ranked, rel, 5)
    out["users"] = sum(1 for r in rel if r)
    return out


#: ML-100K's user age buckets (MovieLens 1M's groups: under 18, 18-24, 25-34, ...)
AGE_EDGES = (18, 25, 35, 45, 50, 56)
STYLES = ("plain", "binned", "binned+bias")
def feature_inputs(pos, sides, style):
    """``user_features`` / ``item_features`` for OneClassMF.fit from the loaders' tables.

    ``sides``: "item", "user" or "both". ``style``: "plain" encodes as
    ``side_features=`` does (one-hot text columns, 0/1 flags, standardized numbers);
    "binned" cuts age into MovieLens' buckets and year into decades (one indicator per
    interval) and scales each row to unit l2 norm (kmviz.ocmf.encode_features options);
    "binned+bias" is "binned" plus a constant user column (``encode_features(...,
    bias=True)``) whatever ``sides`` is: every user gets one shared vector w_0, so
    w_0^T h_j is a learned item popularity term. Without user features in use (``sides`` =
    "item", or a dataset without them such as latest-small) the user matrix is that column
    alone.
    """
    import scipy.sparse as sp

    from kmviz.ocmf import encode_features

    out = {}
    for who in ("user", "item"):
        df = getattr(pos, f"{who}_features")
        if df is None or sides not in (who, "both"):
            continue
        opts = {}
        if style.startswith("binned"):
            bins = {c: v for c, v in (("age", list(AGE_EDGES)), ("year", 10))
                    if c in df.columns}
            opts = {"bins": bins, "normalize": "l2"}
        if style == "binned+bias" and who == "user":
            opts["bias"] = True
        out[f"{who}_features"] = encode_features(df, missing="zero", **opts)[0]
    if style == "binned+bias" and "user_features" not in out:
        out["user_features"] = sp.csr_matrix(np.ones((pos.n_users, 1)))
    return out


def implicit_available():
    import importlib.util

    return importlib.util.find_spec("implicit") is not None


def als_fit(train, k, reg, alpha, threads, iters=15, seed=0):
    from implicit.cpu.als import AlternatingLeastSquares

    from threadpoolctl import threadpool_limits

    model = AlternatingLeastSquares(factors=k, regularization=reg, alpha=alpha,
                                    iterations=iters, num_threads=threads, random_state=seed)
    t0 = time.perf_counter()
    with threadpool_limits(1, "blas"):  # implicit's advice: its own threads, BLAS single
        model.fit(train.csr.astype(np.float32), show_progress=False)
    return model, (time.perf_counter() - t0) / iters


def bpr_fit(train, k, lr, reg, threads, iters=100, seed=0):
    from implicit.cpu.bpr import BayesianPersonalizedRanking

    model = BayesianPersonalizedRanking(factors=k, learning_rate=lr, regularization=reg,
                                        iterations=iters, num_threads=threads,
                                        random_state=seed)
    t0 = time.perf_counter()
    model.fit(train.csr.astype(np.float32), show_progress=False)
    return model, (time.perf_counter() - t0) / iters


def implicit_scores(model):
    U = np.asarray(model.user_factors, dtype=np.float64)
    V = np.asarray(model.item_factors, dtype=np.float64)
    return U @ V.T


def lightfm_available():
    import importlib.util

    return importlib.util.find_spec("lightfm") is not None


def lightfm_features(F):
    """LightFM's hybrid recipe: an identity column per row beside the features."""
    import scipy.sparse as sp

    if F is None:
        return None
    return sp.hstack([sp.identity(F.shape[0], format="csr"), sp.csr_matrix(F)]).tocsr()


def lightfm_fit(train, k, lr, alpha, epochs, threads, seed=0, uf=None, vf=None, val=None,
                every=5):
    """WARP, one epoch at a time; validation p@5 every ``every`` epochs (not timed)."""
    from lightfm import LightFM

    model = LightFM(no_components=k, loss="warp", learning_rate=lr, user_alpha=alpha,
                    item_alpha=alpha, random_state=seed)
    Y = train.csr.tocoo()
    Y.data[:] = 1.0
    hist, spent = [], 0.0
    for ep in range(1, epochs + 1):
        t0 = time.perf_counter()
        model.fit_partial(Y, user_features=uf, item_features=vf, epochs=1,
                          num_threads=threads)
        spent += time.perf_counter() - t0
        if val is not None and ep % every == 0:
            hist.append((ep, ranking(lightfm_scores(model, uf, vf), train, val)["p@5"]))
    return model, spent / epochs, hist


def lightfm_scores(model, uf=None, vf=None):
    ub, U = model.get_user_representations(uf)
    ib, V = model.get_item_representations(vf)
    return (np.asarray(U, dtype=np.float64) @ np.asarray(V, dtype=np.float64).T
            + ub[:, None] + ib[None, :])
