"""Does validation pick SL MLP's cold-item setting, or one validation group's luck? (issue 21)

For one cold-item split of bench/similarity/similarity_peers.py (``--seed`` s: 10% of the items cold
for test, 10% of the training items cold for validation, seed s + 1), every point of a
method's lean grid is fitted ONCE on the validation sub-part and that one fit is scored
after each iteration on both the validation cold items and the test cold items (the test
items are cold in the sub-part too, so the same model ranks both). Printed per point: the
validation p@5 at the iteration validation chooses, the test p@5 at that same iteration,
and the best test p@5 over the iterations (an oracle, for scale only); then the rank
correlation of validation and test over the points, per value of the cold side's id
columns, and the point validation chooses. No refit on the training part: this measures
only whether the validation score orders the settings as the test score does.

    python bench/similarity/similarity_cold_diagnose.py --method mlp --seed 0
    python bench/similarity/similarity_cold_diagnose.py --method ocmf --seed 0
"""

from __future__ import annotations

import itertools
import time
import warnings

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _threads_env import pin_threads

pin_threads("2")  # before numpy

import numpy as np  # noqa: E402
from _common import header, load_ml100k, parser  # noqa: E402
from _ocmf_protocol import _model_rows, ocmf_params, p_at_5, style_inputs  # noqa: E402
from _peers import feature_inputs  # noqa: E402
from similarity_peers import ocmf_axes, sl_grids, sl_params  # noqa: E402


def both_paths(model, fit, sub, val, test, cand_val, cand_test, patience=12):
    """(val p@5 at the val-chosen iteration, test p@5 there, that iteration, best test,
    its iteration) of one fit on ``sub``; the fit stops ``patience`` iterations after its
    best validation score, as the peers bench's fits do."""
    hv, ht = [], []

    def record(row):
        hv.append(p_at_5(_model_rows(model), sub, val, cand_val))
        ht.append(p_at_5(_model_rows(model), sub, test, cand_test))
        return len(hv) - 1 - int(np.argmax(hv)) < patience

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(record)
    it = int(np.argmax(hv))
    return hv[it], ht[it], it + 1, max(ht), int(np.argmax(ht)) + 1


def main():
    from scipy.stats import spearmanr

    from kmviz.ocmf import OneClassMF, cold_item_split
    from kmviz.similarity import SimilarityLearning

    p = parser(__doc__.splitlines()[0])
    p.add_argument("--method", choices=("mlp", "ocmf"), default="mlp")
    p.add_argument("--k", type=int, default=64)
    p.add_argument("--max-iter", type=int, default=80)
    p.add_argument("--points", type=int, default=0, help="only the first N points (smoke)")
    args = p.parse_args()
    header("SL MLP / OCMF on cold items: validation against test, point by point")
    ratings = load_ml100k(args.ml100k)
    if ratings is None:
        return
    pos, seed = ratings.binarize(4), args.seed
    train, test, cand_test = cold_item_split(pos, 0.1, random_state=seed)
    sub, val, cand_val = cold_item_split(train, 0.1, random_state=seed + 1)
    print(f"seed {seed}: {int(cand_val.sum())} validation cold items, "
          f"{int(cand_test.sum())} test cold items\n", flush=True)
    if args.method == "mlp":
        axes, side = sl_grids("lean", "cold-items")[2], "ids"
        feats = feature_inputs(pos, "both", "binned")

        def model_fit(pt):
            m = SimilarityLearning(**sl_params(pt, args.k, seed, args.max_iter, "item"))
            return m, lambda cb: m.fit(sub, validation=val, callback=cb, **feats)
    else:
        axes, side = ocmf_axes("lean", "cold-items", "both")[0], "identity"
        inputs = {s: style_inputs(pos, "item", s) for s in axes["style"]}

        def model_fit(pt):
            m = OneClassMF(**ocmf_params(pt, args.k, seed, "cointeraction", "item"))
            return m, lambda cb: m.fit(sub, validation=val, callback=cb,
                                       **inputs[pt["style"]])
    points = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    if args.points:
        points = points[:args.points]
    rows = []
    print("| point | val p@5 | test p@5 (same iteration) | iteration | best test | at |")
    print("|---|---|---|---|---|---|")
    for pt in points:
        t0 = time.perf_counter()
        model, fit = model_fit(pt)
        r = both_paths(model, fit, sub, val, test, cand_val, cand_test)
        rows.append((pt, r))
        text = " ".join(f"{a}={pt[a]}" for a in axes)
        print(f"| {text} | {r[0]:.2f} | {r[1]:.2f} | {r[2]} | {r[3]:.2f} | {r[4]} | "
              f"<!-- {time.perf_counter() - t0:.0f} s -->", flush=True)
    print()
    groups = {"all points": rows}
    for value in axes[side]:
        groups[f"{side}={value}"] = [x for x in rows if x[0][side] == value]
    for name, rs in groups.items():
        if len(rs) < 3:
            continue
        v = np.array([r[0] for _, r in rs])
        t = np.array([r[1] for _, r in rs])
        print(f"{name}: {len(rs)} points, validation {v.min():.2f}-{v.max():.2f}, test "
              f"{t.min():.2f}-{t.max():.2f} (mean {t.mean():.2f}), Spearman(val, test) "
              f"{spearmanr(v, t).correlation:.2f}")
    best = max(rows, key=lambda x: x[1][0])
    print(f"chosen by validation: {best[0]}: val {best[1][0]:.2f}, test {best[1][1]:.2f}; "
          f"best test over the points {max(r[1] for _, r in rows):.2f}")


if __name__ == "__main__":
    main()
