"""The registry entry of the similarity-learning family (registered by
:mod:`kmviz.families`; importing it loads no Numba kernel).

``FAMILY`` is built on first access (a module ``__getattr__``): the registry imports this
module at its end, and this module needs the registry's ``Family``, so building it at import
made ``import kmviz.similarity.family`` fail when it came before ``import kmviz.families``.
"""

from __future__ import annotations


def _build():
    from ..families import ExplorePage, Family

    if "FAMILY" in globals():  # the registry's import built it while we imported it
        return globals()["FAMILY"]
    return (
        Family(
            name="similarity",
            title="Similarity learning with nonlinear embeddings (two towers, all pairs)",
            short="SimL",
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
            explore=(
                ExplorePage("app_pages/similarity_optimizers.py", "Optimizers", ":material/speed:"),
                ExplorePage("app_pages/similarity_embeddings.py", "Embeddings",
                            ":material/scatter_plot:"),
            ),
            quick_params={"k": 4, "max_iter": 3, "threshold": 0.5, "random_state": 0},
            contract_data={"source": "planted-lowrank", "n_users": 60, "n_items": 40, "rank": 3,
                           "random_state": 1},
            cli_aliases={"iters": "max_iter"},
            warmup="kmviz.similarity.warmup",
            reference=("Yuan, Li, Quan, Lin, *Efficient optimization methods for extreme "
                       "similarity "
                       "learning with nonlinear embeddings*, KDD 2021 "
                       "([doi:10.1145/3447548.3467363](https://doi.org/10.1145/3447548.3467363))"),
        )
    )


def __getattr__(name):
    if name == "FAMILY":
        globals()["FAMILY"] = family = _build()
        return family
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
