"""The tune-refit-test protocol that bench/ocmf/ocmf_sparse.py and bench/ocmf/ocmf_cold.py share (issue 10).

Every method is tuned on a validation split carved out of the training part, refitted on the
whole training part with the chosen setting and scored on test; the whole protocol (split,
validation split, tuning, refit, test) is repeated over ``--seeds`` seeds and summarized with
paired differences (:func:`summary_rows`), because a p@5 over the ~60-100 users of one sparse
group, or the few hundred positives of one cold split, moves by several points between
splits.

- :func:`p_at_5`: test or validation p@5 (percent) of the users with a positive in ``part``
  (kmviz.metrics: hits / 5, the user's training positives never ranked), over all items or
  only the ``candidates`` (cold items: each user's top 5 of the new items); exact ties are
  broken at random, not by the item index, which follows popularity on MovieLens.
- :func:`coordinate_search`: OCMF's settings, one axis at a time from a start point (each
  axis's values tried with the others held, the best kept; a second sweep when anything
  moved), each point fitted for 15 outer iterations and scored at its best iteration.
- :func:`cold_item_folds`, :func:`mean_curve`: several disjoint cold-item validation
  groups, and the choice of a setting and its iteration count by the mean of its
  validation curves over them (``folds=`` of :func:`ocmf_tuned` and
  :func:`lightfm_tuned`; one group, the default, is the single split above).
- :func:`ocmf_tuned`, :func:`als_tuned`, :func:`bpr_tuned`, :func:`lightfm_tuned`,
  :func:`popularity_p5`: one method each, tuned and tested; they return ``(test p@5, text
  of the chosen setting)``.
"""

from __future__ import annotations

import math
import time

import numpy as np
from _common import footer, header, load_ml100k, table
from _peers import als_fit, bpr_fit, feature_inputs, lightfm_fit, lightfm_scores

#: the method every summary row compares against
OURS = "OCMF"
#: OCMF's losses a search may choose between: the paper's LR-wSQ (logistic on the
#: positives, unobserved entries pulled to -1) and SQ-wSQ with a_bar = 0, the weighted MF
#: that implicit's ALS solves (rho = 1 / alpha, lambda = reg / alpha), here with side
#: features, the bias column and the graph on top
LOSSES = {"LR-wSQ": {"loss": "logistic", "a_bar": -1.0},
          "WRMF": {"loss": "squared", "a_bar": 0.0}}


# ----------------------------------------------------------------------------- metric
def p_at_5(score_rows, train, part, candidates=None) -> float:
    """p@5 (percent) over the users with a positive in ``part``; ``score_rows(users)`` gives
    their score rows (len(users) x n_items). With ``candidates`` (a mask over items) only
    those items are ranked."""
    from kmviz import metrics

    users = np.unique(np.asarray(part.users))
    S = np.asarray(score_rows(users), dtype=np.float64)
    excl = train.csr[users]
    items = np.asarray(part.items)
    if candidates is not None:
        cols = np.flatnonzero(candidates)
        S = S[:, cols]
        excl = excl[:, cols]
        where = np.full(train.n_items, -1)
        where[cols] = np.arange(cols.size)
        items = where[items]
    # exact ties (a model with nothing to say about new items or users: ALS's zero factors,
    # popularity's zero counts) are broken at random, not by the item index
    jitter = np.random.default_rng(0).random(S.shape)
    S = S + 1e-9 * max(1.0, float(np.abs(S).max())) * jitter
    ranked = metrics.rank_items(S, 5, exclude=excl)
    row_of = np.full(train.n_users, -1)
    row_of[users] = np.arange(users.size)
    rel = [set() for _ in range(users.size)]
    for u, i in zip(row_of[np.asarray(part.users)], items):
        if i >= 0:
            rel[int(u)].add(int(i))
    return 100 * metrics.precision_at_k(ranked, rel, 5)


def _rows(M):
    """score_rows of a full score matrix."""
    return lambda users: M[users]


def _factors(U, V):
    """score_rows of factors U (n_users x k), V (n_items x k)."""
    U = np.asarray(U, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    return lambda users: U[users] @ V.T


def _model_rows(model):
    return lambda users: model.score_items(users)


# ----------------------------------------------------------------------------- OCMF
def coordinate_search(axes, start, evaluate, sweeps=2):
    """Best point of ``evaluate(point) -> (validation p@5, extra)`` found one axis at a time.

    ``axes``: {name: values}; ``start``: {name: value}. Each sweep tries every value of each
    axis (in order) with the other axes at the best point so far and moves to a value only
    if it is strictly better (ties keep the earlier point); up to ``sweeps`` sweeps, until
    one moves nothing. Points are fitted once (cache).
    Returns ``(value, extra, point, n_points_fitted)``.
    """
    cache = {}

    def get(pt):
        key = tuple(pt[a] for a in axes)
        if key not in cache:
            cache[key] = evaluate(dict(pt))
        return cache[key]

    best = dict(start)
    bv = get(best)
    for _ in range(sweeps):
        moved = False
        for name, values in axes.items():
            for v in values:
                pt = {**best, name: v}
                r = get(pt)
                if r[0] > bv[0]:
                    best, bv, moved = pt, r, True
        if not moved:
            break
    return bv[0], bv[1], best, len(cache)


def grid_edges(axes, point):
    """The numeric axes whose chosen value is the smallest or largest offered."""
    out = []
    for a, values in axes.items():
        nums = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(nums) < 2 or point[a] not in nums:
            continue
        if point[a] == min(nums):
            out.append(f"{a}={point[a]} lowest")
        elif point[a] == max(nums):
            out.append(f"{a}={point[a]} highest")
    return out


def ocmf_curve(train, val, prm, inputs, candidates=None):
    """Validation p@5 after each outer iteration of one OneClassMF fit (a list)."""
    from kmviz.ocmf import OneClassMF

    model = OneClassMF(**prm)
    hist = []

    def record(row):
        # with ``validation`` the model is published before the callback runs
        hist.append(p_at_5(_model_rows(model), train, val, candidates))

    model.fit(train, validation=val, callback=record, **inputs)
    return hist


def ocmf_path(train, val, prm, inputs, candidates=None):
    """Validation p@5 after each outer iteration of one OneClassMF fit: (best, iterations)."""
    return mean_curve([ocmf_curve(train, val, prm, inputs, candidates)])


# ----------------------------------------------------------------------------- folds
def mean_curve(curves):
    """``(best value, its 1-based index)`` of the mean of validation curves (one per
    fold; a curve that stopped early is extended by its last value), so the iteration
    count is chosen once for all folds. An empty curve counts as -1."""
    curves = [list(c) if len(c) else [-1.0] for c in curves]
    n = max(len(c) for c in curves)
    M = np.array([c + [c[-1]] * (n - len(c)) for c in curves], dtype=np.float64)
    mean = M.mean(axis=0)
    it = int(np.argmax(mean))
    return float(mean[it]), it + 1


def cold_item_folds(train, fraction, n_folds, seed):
    """Validation folds of the cold-item task inside ``train``: a list of ``(sub, val,
    candidates)``, where ``val`` holds every positive of a ``fraction`` of the training
    items, ``sub`` the rest and ``candidates`` the mask of those items (the only ones
    ranked). One fold is ``cold_item_split(train, fraction, random_state=seed)`` (the
    single split of the ocmf benches); several are disjoint item groups of the same size
    from one permutation (seed ``seed``), so a setting is chosen by its mean over
    ``n_folds`` x ``fraction`` of the items instead of one group's luck."""
    from kmviz.ocmf import cold_item_split

    if n_folds == 1:
        sub, val, mask = cold_item_split(train, fraction, random_state=seed)
        return [(sub, val, mask)]
    items = np.asarray(train.items)
    present = np.unique(items)
    size = int(round(fraction * present.size))
    if size < 1 or n_folds * size > present.size:
        raise ValueError(f"{n_folds} folds of {fraction:g} x {present.size} items do not fit "
                         "in the training items; use fewer folds or a smaller fraction")
    order = np.random.default_rng(seed).permutation(present)
    folds = []
    for f in range(n_folds):
        mask = np.zeros(train.n_items, dtype=bool)
        mask[order[f * size:(f + 1) * size]] = True
        out = mask[items]
        folds.append((train.subset(~out, name=f"{train.name} (fold {f}: cold items out)"),
                      train.subset(out, name=f"{train.name} (fold {f}: cold items)"), mask))
    return folds


def ocmf_params(point, k, seed, graph_kind, identity_side=None):
    """OneClassMF parameters of a search point: log2 rho ``rho``, log2 lambda ``lam``
    (lambda_w = lambda_h), ``graph`` = log2(lambda_w lambda_g) or None (no graph),
    ``identity`` for the cold side (``identity_side``), ``loss`` one of :data:`LOSSES`
    (LR-wSQ when the point has none)."""
    lam = 2.0 ** point["lam"]
    prm = dict(k=k, max_iter=15, rho=2.0 ** point["rho"], lambda_w=lam, lambda_h=lam,
               random_state=seed, **LOSSES[point.get("loss", "LR-wSQ")])
    if point.get("graph") is not None:
        prm.update(graph=graph_kind, lambda_g=2.0 ** point["graph"] / lam)
    if identity_side is not None:
        prm[f"{identity_side}_identity"] = point["identity"]
    return prm


def style_inputs(pos, sides, style):
    """``fit`` inputs of a feature style: one of ocmf_ml100k.feature_inputs's styles on
    ``sides``; ``"item <style>"`` that style on the item side only; ``"none"`` no side
    features (plain one-class MF); ``"bias"`` the user bias column alone (a learned item
    popularity term)."""
    import scipy.sparse as sp

    if style == "none":
        return {}
    if style == "bias":
        return {"user_features": sp.csr_matrix(np.ones((pos.n_users, 1)))}
    if style.startswith("item "):
        return feature_inputs(pos, "item", style[5:])
    return feature_inputs(pos, sides, style)


def ocmf_tuned(pos, sub, val, train, test, *, sides, axes, start, k, seed, graph_kind,
               identity_side=None, cand_val=None, cand_test=None, folds=None):
    """OCMF tuned by :func:`coordinate_search` over ``axes`` (``style``: see
    :func:`style_inputs`, "binned+bias" adding the user bias column; ``rho``, ``lam``,
    ``graph``, ``identity``, ``loss``), refitted on ``train`` for the best iteration count,
    scored on ``test``. ``folds`` (a list of ``(sub, val, candidates)``, see
    :func:`cold_item_folds`) replaces the single (sub, val, cand_val): each point is
    scored by its mean validation curve over them (:func:`mean_curve`). Returns (test
    p@5, setting text)."""
    from kmviz.ocmf import OneClassMF

    inputs = {s: style_inputs(pos, sides, s) for s in axes["style"]}
    folds = folds or [(sub, val, cand_val)]

    def evaluate(point):
        prm = ocmf_params(point, k, seed, graph_kind, identity_side)
        return mean_curve([ocmf_curve(fs, fv, prm, inputs[point["style"]], fc)
                           for fs, fv, fc in folds])

    v, iters, point, n_fits = coordinate_search(axes, start, evaluate)
    prm = {**ocmf_params(point, k, seed, graph_kind, identity_side), "max_iter": iters}
    model = OneClassMF(**prm).fit(train, **inputs[point["style"]])
    t = p_at_5(_model_rows(model), train, test, cand_test)
    graph = "none" if point.get("graph") is None else f"2^{point['graph']}"
    text = (f"{point.get('loss', 'LR-wSQ')} {point['style']} rho=2^{point['rho']} lambda=2^{point['lam']} graph={graph}"
            + (f" {identity_side}_identity={point['identity']}" if identity_side else "")
            + f" iters={iters} (val {v:.2f}; {n_fits} fits"
            + (f" x {len(folds)} folds)" if len(folds) > 1 else ")"))
    edges = grid_edges(axes, point)
    return t, text + (" EDGE: " + ", ".join(edges) if edges else "")


# ----------------------------------------------------------------------------- peers
def _grid_tuned(grid, fit, sub, val, train, test, cand_val, cand_test):
    """Fit every setting of ``grid`` on ``sub``, keep the best by validation p@5, refit it
    on ``train``; ``fit(data, setting) -> score_rows``."""
    tried = [(p_at_5(fit(sub, g), sub, val, cand_val), g) for g in grid]
    v, g = max(tried, key=lambda t: t[0])
    return p_at_5(fit(train, g), train, test, cand_test), g, v


def als_tuned(sub, val, train, test, k, threads, seed, grid, cand_val=None, cand_test=None):
    """implicit ALS over (reg, alpha) in ``grid``, 15 iterations."""
    def fit(data, g):
        m, _ = als_fit(data, k, g[0], g[1], threads, seed=seed)
        return _factors(m.user_factors, m.item_factors)

    t, (reg, alpha), v = _grid_tuned(grid, fit, sub, val, train, test, cand_val, cand_test)
    edges = grid_edges({"reg": sorted({g[0] for g in grid}),
                        "alpha": sorted({g[1] for g in grid})}, {"reg": reg, "alpha": alpha})
    return t, f"reg={reg:g} alpha={alpha:g} (val {v:.2f})" + \
        (" EDGE: " + ", ".join(edges) if edges else "")


def bpr_tuned(sub, val, train, test, k, threads, seed, grid, cand_val=None, cand_test=None):
    """implicit BPR over (learning rate, reg) in ``grid``, 100 iterations."""
    def fit(data, g):
        m, _ = bpr_fit(data, k, g[0], g[1], threads, seed=seed)
        return _factors(m.user_factors, m.item_factors)

    t, (lr, reg), v = _grid_tuned(grid, fit, sub, val, train, test, cand_val, cand_test)
    return t, f"lr={lr:g} reg={reg:g} (val {v:.2f})"


#: LightFM's validation checkpoints: epochs 1, 2, 3, then every 5
def _checkpoint(ep):
    return ep in (1, 2, 3) or ep % 5 == 0


def lightfm_path(train, val, k, lr, alpha, threads, seed, uf, vf, candidates, max_epochs,
                 patience=15):
    """Validation p@5 of WARP at the checkpoint epochs, stopping ``patience`` epochs after
    the best one: (best p@5, its epoch)."""
    curve = lightfm_curve(train, val, k, lr, alpha, threads, seed, uf, vf, candidates,
                          max_epochs, patience)
    return max(curve, key=lambda c: (c[1], -c[0]))[::-1]


def lightfm_mean_path(curves):
    """(best mean p@5, its epoch) of several :func:`lightfm_curve` results, each
    extended by its last value to the longest (:func:`mean_curve` at the checkpoints)."""
    longest = max(curves, key=len)
    v, i = mean_curve([[c[1] for c in curve] for curve in curves])
    return v, longest[i - 1][0]


def lightfm_curve(train, val, k, lr, alpha, threads, seed, uf, vf, candidates, max_epochs,
                  patience=15):
    """[(epoch, validation p@5)] of WARP at the checkpoint epochs, stopping ``patience``
    epochs after the best one."""
    from lightfm import LightFM

    model = LightFM(no_components=k, loss="warp", learning_rate=lr, user_alpha=alpha,
                    item_alpha=alpha, random_state=seed)
    Y = train.csr.tocoo()
    Y.data[:] = 1.0
    best = (-1.0, 0)
    curve = []
    for ep in range(1, max_epochs + 1):
        model.fit_partial(Y, user_features=uf, item_features=vf, epochs=1,
                          num_threads=threads)
        if _checkpoint(ep):
            v = p_at_5(_rows(lightfm_scores(model, uf, vf)), train, val, candidates)
            curve.append((ep, v))
            if v > best[0]:
                best = (v, ep)
            elif ep - best[1] >= patience:
                break
    return curve


def lightfm_inputs(F_user, F_item, identity):
    """LightFM's feature matrices for a fit on ``data``: ``inputs(data) -> (uf, vf)``.

    ``identity`` "all": an identity column per user / item beside the features (LightFM's
    hybrid recipe, ocmf_ml100k.lightfm_features); "known": identity columns only for the
    users / items with positives in ``data`` (OCMF's user_identity / item_identity =
    "known": an entity without positives is its features alone, not an identity vector
    that WARP only ever saw as a sampled negative). A side without features gets None
    (LightFM's own identity)."""
    import scipy.sparse as sp

    def side(F, counts):
        if F is None:
            return None
        cols = np.arange(F.shape[0]) if identity == "all" else np.flatnonzero(counts)
        eye = sp.identity(F.shape[0], format="csr")[:, cols]
        return sp.hstack([eye, sp.csr_matrix(F)]).tocsr()

    def inputs(data):
        cu = np.bincount(np.asarray(data.users), minlength=data.n_users)
        ci = np.bincount(np.asarray(data.items), minlength=data.n_items)
        return side(F_user, cu), side(F_item, ci)

    return inputs


def lightfm_tuned(sub, val, train, test, k, threads, seed, variants, lrs, alphas,
                  max_epochs=50, cand_val=None, cand_test=None, folds=None):
    """LightFM WARP tuned on the validation split: every variant (``variants``: {label:
    inputs}, ``inputs(data) -> (user features, item features)`` in LightFM's form, see
    :func:`lightfm_inputs`) x learning rate at the first L2 alpha, then the other alphas at
    the best of those; epochs by the checkpoints up to ``max_epochs``. ``folds`` (see
    :func:`cold_item_folds`) replaces (sub, val, cand_val): each setting is scored by its
    mean curve over them. Returns (test p@5, setting text)."""
    folds = folds or [(sub, val, cand_val)]
    feats = {}

    def path(label, lr, al):
        curves = []
        for f, (fs, fv, fc) in enumerate(folds):
            if (label, f) not in feats:
                feats[label, f] = variants[label](fs)
            u, v = feats[label, f]
            curves.append(lightfm_curve(fs, fv, k, lr, al, threads, seed, u, v, fc,
                                        max_epochs))
        return lightfm_mean_path(curves)

    tried = [(*path(lab, lr, alphas[0]), lab, lr, alphas[0]) for lab in variants
             for lr in lrs]
    _, _, lab, lr, _ = max(tried, key=lambda t: t[0])
    tried += [(*path(lab, lr, al), lab, lr, al) for al in alphas[1:]]
    v, ep, label, lr, al = max(tried, key=lambda t: t[0])
    fu, fv = variants[label](train)
    m, _, _ = lightfm_fit(train, k, lr, al, ep, threads, seed=seed, uf=fu, vf=fv)
    t = p_at_5(_rows(lightfm_scores(m, fu, fv)), train, test, cand_test)
    shown = f"{label} " if len(variants) > 1 else ""
    runs = f"{len(tried)} runs" + (f" x {len(folds)} folds" if len(folds) > 1 else "")
    return t, f"{shown}lr={lr:g} alpha={al:g} epochs={ep} (val {v:.2f}; {runs})"


def popularity_p5(train, test, candidates=None):
    from kmviz.ocmf import popularity_scores

    counts = popularity_scores(train, 1)[0]
    return p_at_5(lambda users: np.broadcast_to(counts, (users.size, counts.size)), train,
                  test, candidates)


# ----------------------------------------------------------------------------- summary
def _t_quantile(df):
    from scipy import stats

    return float(stats.t.ppf(0.975, df))


def summary_rows(rows, group_cols, methods, ours=OURS):
    """Per group (``group_cols`` of the per-seed rows) and method: the mean test p@5 over
    the seeds; for every other method, ``ours``'s (OCMF's unless given) paired difference
    (mean, standard error std / sqrt(N) with ddof 1, the seeds it wins), PASS / MISS on the
    mean, and what the standard error allows: the difference's 95% t-interval (N - 1
    degrees of freedom). Column names keep "OCMF" only when ``ours`` is OCMF."""
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r[c] for c in group_cols), []).append(r)
    out = []
    for key, rs in groups.items():
        n = len(rs)
        if any(ours not in r for r in rs):
            continue
        mine = np.array([r[ours] for r in rs], dtype=np.float64)
        for meth in methods:
            if any(meth not in r for r in rs):
                continue
            x = np.array([r[meth] for r in rs], dtype=np.float64)
            row = dict(zip(group_cols, key))
            row.update({"method": meth, "seeds": n, "mean test p@5": float(x.mean())})
            if meth != ours:
                d = mine - x
                mean = float(d.mean())
                se = float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
                row.update({f"{ours} - method": mean, "SE": se,
                            f"{ours} wins": f"{int((d > 0).sum())}/{n}"
                                         + (f" ({int((d == 0).sum())} ties)" if (d == 0).any()
                                            else ""),
                            "on the mean": "PASS" if mean > 0 else "MISS"})
                if n < 2:
                    row["95% interval / reading"] = "one seed: no error estimate"
                else:
                    h = _t_quantile(n - 1) * se
                    lo, hi = mean - h, mean + h
                    verdict = (f"{ours} above" if lo > 0 else f"{ours} below" if hi < 0
                               else "not resolved")
                    row["95% interval / reading"] = f"[{lo:+.2f}, {hi:+.2f}]: {verdict}"
            out.append(row)
    return out


def print_summary(rows, group_cols, methods, table, final):
    """The summary table (running after each seed, final at the end)."""
    seeds = sorted({r["seed"] for r in rows})
    what = "Summary" if final else "Running summary"
    print(f"\n## {what} over {len(seeds)} seed(s) {seeds}: mean test p@5 (percent), OCMF's "
          "paired difference to each method\n")
    print("SE = std of the per-seed differences (ddof 1) / sqrt(N); 'on the mean' is PASS "
          "when OCMF's mean is above; the interval is the mean difference +- t(0.975, N-1) "
          "SE: 'OCMF above' / 'OCMF below' only when it excludes 0.\n")
    print(table(summary_rows(rows, group_cols, methods), floatfmt="{:.2f}"), flush=True)


def rows_from_outputs(paths, methods):
    """The per-seed rows of earlier runs, read back from their printed "## Seed s" tables
    (so seeds run in separate processes can be summarized together); a (group, seed) seen
    twice is kept once."""
    rows, seen = [], set()
    for path in paths:
        with open(path) as f:
            lines = f.read().splitlines()
        i = 0
        while i < len(lines):
            if not lines[i].startswith("## Seed "):
                i += 1
                continue
            j = i + 1
            while j < len(lines) and not lines[j].startswith("|"):
                j += 1
            cols = [c.strip() for c in lines[j].strip("|").split("|")]
            j += 2
            while j < len(lines) and lines[j].startswith("|"):
                cells = [c.strip() for c in lines[j].strip("|").split("|")]
                r = dict(zip(cols, cells))
                r["seed"] = int(r["seed"])
                for m in methods:
                    if r.get(m, "-") not in ("-", None):
                        r[m] = float(r[m])
                    else:
                        r.pop(m, None)
                key = tuple(v for c, v in r.items() if c not in methods)
                if key not in seen:
                    seen.add(key)
                    rows.append(r)
                j += 1
            i = j
    return rows


# ----------------------------------------------------------------------------- driver
def run_protocol(p, *, default_threads, title, heading, methods, group_cols, tasks):
    """The command line both benches share: ``p`` (a parser from _common) gets --k,
    --threads, --seeds, --datasets and --summarize; with --summarize only the summary of
    earlier outputs is printed. Otherwise every dataset (positives r >= 4) and seed runs
    ``tasks(pos, label, seed, k, threads, quick)``, which yields (row, settings) pairs; each
    seed's rows and settings are printed under ``heading``, then the running summary."""
    p.add_argument("--k", type=int, default=64)
    p.add_argument("--threads", default=default_threads)
    p.add_argument("--seeds", type=int, default=1,
                   help="repeat the whole protocol for seeds --seed .. --seed + N - 1")
    p.add_argument("--datasets", default="ml100k,movielens-small")
    p.add_argument("--summarize", nargs="+", metavar="OUTPUT",
                   help="only print the summary of the per-seed tables in these outputs of "
                        "earlier runs (seeds run in separate processes)")
    args = p.parse_args()
    if args.summarize:
        rows = rows_from_outputs(args.summarize, methods)
        print_summary(rows, group_cols, methods, table, final=True)
        return
    t_start = time.perf_counter()
    header(title)
    import numba

    from kmviz.data import load

    threads = int(args.threads)
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    data = {}
    for name in args.datasets.split(","):
        d = load_ml100k(args.ml100k) if name == "ml100k" else load(name)
        if d is not None:
            data["ML-100K" if name == "ml100k" else name] = d.binarize(4)
    rows = []
    seeds = range(args.seed, args.seed + args.seeds)
    for seed in seeds:
        done, settings = [], []
        for label, pos in data.items():
            for r, s in tasks(pos, label, seed, args.k, threads, args.quick):
                done.append(r)
                settings.append(s)
        rows.extend(done)
        print(f"\n## Seed {seed}: {heading}\n")
        print(table(done, floatfmt="{:.2f}"))
        print(f"Settings chosen on validation (seed {seed}):\n")
        print(table(settings, floatfmt="{:.2f}"), flush=True)
        if len(seeds) > 1:
            print_summary(rows, group_cols, methods, table, final=seed == seeds[-1])
    footer(t_start)
