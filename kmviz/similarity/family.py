"""The registry entry of the similarity-learning family (registered by
:mod:`kmviz.families`; importing it loads no Numba kernel)."""

from __future__ import annotations

from ..families import Family

FAMILY = Family(
    name="similarity",
    title="Similarity learning with nonlinear embeddings (two towers, all pairs)",
    short="SimL",
    short_title="Similarity learning",
    estimator="kmviz.similarity.estimator:SimilarityLearning",
    summary=(
        "Positives only, like one-class MF, but each side is a tower of any kind: an "
        "embedding table, a linear map or an MLP over ids and side features. A convex loss "
        "on the observed pairs and a weighted squared loss toward $\\tilde Y$ on all other "
        "$m \\times n$ pairs, computed through $k \\times k$ Gramians, never formed; "
        "Gauss-Newton + CG (the paper's fastest) or six first-order and stochastic "
        "solvers."),
    metrics=("validation_map_at_5", "test_map_at_5", "test_precision_at_5",
             "test_ndcg_at_5"),
    label_params=("k", "user_tower", "item_tower", "solver"),
    telemetry="kmviz.similarity.telemetry",
    quick_params={"k": 4, "max_iter": 3, "threshold": 0.5, "random_state": 0},
    contract_data={"source": "planted-lowrank", "n_users": 60, "n_items": 40, "rank": 3,
                   "random_state": 1},
    cli_aliases={"iters": "max_iter"},
    warmup="kmviz.similarity.warmup",
    reference=("Yuan, Li, Quan, Lin, *Efficient optimization methods for extreme similarity "
               "learning with nonlinear embeddings*, KDD 2021 "
               "([doi:10.1145/3447548.3467363](https://doi.org/10.1145/3447548.3467363))"),
)
