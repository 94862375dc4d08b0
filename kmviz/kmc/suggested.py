"""Kernel MC settings measured on catalogue datasets (the Train page offers them through
:func:`kmviz.data.suggested_settings`; the registry entry points here)."""

from ..data.catalogue import Suggestion

#: Catalogue dataset name -> the settings measured on it.
SUGGESTIONS = {
    "movielens-small": Suggestion(
        params={"method": "kkmcex", "center": True, "mu": 3.0, "add_constant": True,
                "kernel_rank": 300, "tol": 1e-3, "random_state": 0},
        note="Measured by `python bench/suggested_settings.py` on the app's default "
             "split: test RMSE 0.916 (0.904 on validation) against 1.057 for the "
             "training mean, in 123 CG iterations (about 10 s); "
             "`bench/kmc_movielens.py` compares it with other kernels. The ratings "
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
             "part of the default random split (`python bench/kmc_gapminder.py`): test "
             "RMSE 0.80 years, against 5.10 with the thesis's defaults (diffusion "
             "kernel, η = 1, μ = 0.01, values as given) and 5.99 for each country's own "
             "mean; about 400 CG iterations. The region graph joins whole regions into "
             "cliques, where the diffusion kernel all but merges their countries; the "
             "regularized Laplacian keeps each country's own part."),
}
