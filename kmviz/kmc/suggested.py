"""Kernel MC settings measured on catalogue datasets (the Train page offers them through
:func:`kmviz.data.suggested_settings`; the registry entry points here)."""

from ..data.catalogue import Suggestion, check_values_vary

#: Catalogue dataset name -> the settings measured on it.
SUGGESTIONS = {
    "movielens-small": Suggestion(
        params={"method": "kkmcex", "center": True, "mu": 3.0, "add_constant": True,
                "kernel_rank": 300, "tol": 1e-3, "random_state": 0},
        note="Measured by `python bench/data/suggested_settings.py` on the app's default "
             "split: test RMSE 0.916 (0.904 on validation) against 1.057 for the "
             "training mean, in 123 CG iterations (about 10 s); "
             "`bench/kmc/kmc_movielens.py` compares it with other kernels. The ratings "
             "are centred, the all-ones kernel is added on each side (global, "
             "per-user and per-movie terms), and the Gaussian kernel of the movies' "
             "genres and years is replaced by a rank-300 factor, so the 9,066 × 9,066 "
             "kernel is never formed. The thesis's defaults (values as given, "
             "μ = 0.01) are worse than the mean here, and the fit warns so."),
    "gapminder": Suggestion(
        params={"method": "kkmcex", "graph_kernel": "regularized_laplacian", "eta": 10.0,
                "mu": 1e-4, "center": True, "max_iter": 1000},
        options={"indicator": "life_expectancy", "year_width": 3},
        note="The best of 80 settings (graph kernel, η, μ, centring) on the validation "
             "part of the default random split (`python bench/kmc/kmc_gapminder.py`): test "
             "RMSE 0.80 years, against 5.10 with the thesis's defaults (diffusion "
             "kernel, η = 1, μ = 0.01, values as given) and 5.99 for each country's own "
             "mean; about 400 CG iterations. The region graph joins whole regions into "
             "cliques, where the diffusion kernel all but merges their countries; the "
             "regularized Laplacian keeps each country's own part."),
    "km-toy": Suggestion(
        params={"mu": 300.0},
        note="km-toy is independent U[0, 1] noise, where no model beats the training mean "
             "in expectation. Of μ in {3, 30, 300, 3000} on top of the rule (centred "
             "values, constant kernels), μ = 300 had the lowest validation RMSE over three "
             "seeds of the set, the mean's (ratio 1.000; μ = 3 fits the noise), `python "
             "bench/data/small_set_settings.py --cells km-toy/kmc`."),
}

#: A side with more rows than this gets a low-rank factor of its kernel by default (a dense
#: N x N kernel of 9,066 movies is 660 MB and makes every CG product slow).
LARGE_SIDE = 2500
#: Rank of that factor (MovieLens latest-small's measured setting).
LARGE_SIDE_RANK = 300


def defaults_for(ratings, dataset=None, options=None) -> Suggestion:
    """Kernel MC's defaults for ``ratings`` (``Family.defaults_for``; the settings measured
    on a catalogue dataset go on top): values whose mean is far from 0 compared with their
    spread (ratings, life expectancies) are centred, since the kernel ridge estimate shrinks
    toward 0; star ratings (half-star steps up to 4-10) also get the constant kernel on each side (global, per-row and
    per-column terms) and a larger μ (3, measured on MovieLens latest-small), and a side
    with more than :data:`LARGE_SIDE` rows gets a rank-:data:`LARGE_SIDE_RANK` factor of its
    kernel with a looser CG tolerance (1e-3) instead of the full kernel."""
    import numpy as np

    check_values_vary(ratings)
    values = np.asarray(ratings.values, dtype=np.float64)
    params, why = {}, []
    mean, spread = float(values.mean()), float(values.std())
    if not ratings.implicit and abs(mean) > spread:
        params["center"] = True
        why.append(f"the values are centred (mean {mean:.3g}, spread {spread:.3g})")
        lo, hi = float(ratings.r_min), float(ratings.r_max)
        if lo >= 0 and 4 <= hi <= 10 and np.allclose(values * 2, np.round(values * 2)):
            params.update(mu=3.0, add_constant=True)
            why.append("ratings get μ = 3 and the constant kernel (rating biases)")
    sides = (ratings.user_features, ratings.item_features, ratings.user_graph,
             ratings.item_graph)
    if all(x is None for x in sides) and "add_constant" not in params:
        # measured on planted-km (python bench/data/defaults_table.py): test RMSE 0.148 with
        # mu = 3 against 0.210 for the mean (0.149 at mu = 0.01)
        params.update(add_constant=True, mu=params.get("mu", 3.0))
        why.append("no side information: the constant kernel adds per-row and per-column "
                   "terms to the identity kernels, with μ = 3")
    if max(ratings.n_users, ratings.n_items) > LARGE_SIDE:
        params.update(kernel_rank=LARGE_SIDE_RANK, tol=1e-3)
        why.append(f"the {max(ratings.n_users, ratings.n_items):,}-row side's kernel is "
                   f"replaced by a rank-{LARGE_SIDE_RANK} factor (CG tolerance 1e-3)")
    note = ("; ".join(why) + ".") if why else "the thesis's defaults."
    return Suggestion(params=params, note=note[0].upper() + note[1:])
