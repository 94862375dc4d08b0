"""A toy kmviz model family (biased mean), found by kmviz through its entry point.

The entry point ``toy = "kmviz_toyfamily:family"`` (group ``kmviz.families``) names
:func:`family`, a callable returning the registry entry; kmviz imports the estimator and
the Explore page only when they are used.
"""

from kmviz.families import ExplorePage, Family


def family() -> Family:
    """The registry entry of the toy family."""
    return Family(
        name="toy",
        title="Toy biased mean (plug-in)",
        short="Toy",
        estimator="kmviz_toyfamily.model:BiasedMean",
        summary=("rating ≈ μ + $b_u$ + $c_i$: a global mean plus ridge-regularized user and "
                 "item biases, fitted by alternating exact updates. A plug-in example."),
        metrics=("validation_rmse", "test_rmse", "train_rmse"),
        label_params=("reg",),
        explore=(ExplorePage("kmviz_toyfamily.pages:toy_biases", "Biases",
                             ":material/bar_chart:"),),
        quick_params={"reg": 1.0, "max_iter": 4, "random_state": 0},
        contract_data={"source": "planted-lowrank", "n_users": 40, "n_items": 30,
                       "random_state": 1},
        cli_aliases={"iters": "max_iter"},
        reference="*A toy model*, kmviz's tests (no paper)",
        demo_dataset="planted-lowrank",
    )
