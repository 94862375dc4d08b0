"""A family explains what its convergence curves show that looks wrong but is not, through
its telemetry module (Family.convergence_note), for the generic Convergence page."""

from kmviz import families
from kmviz.trace import Trace


def _trace(rmse, **extra):
    t = Trace(solver="kmc.kkmcex", params={"method": "kkmcex"})
    for i, r in enumerate(rmse, start=1):
        t.rows.append({"iteration": i, "train_rmse": r, **extra})
    return t


def test_kernel_mc_explains_a_rise_of_the_training_rmse_under_cg():
    note = families.get("kmc").convergence_note(
        _trace([6.07, 9.0, 13.2, 4.0, 0.84], cg_residual=1e-3))
    assert note.startswith("The training RMSE rises to 13.2 at iteration 3")
    assert "conjugate gradients" in note


def test_nothing_to_say_for_a_falling_curve_or_a_family_without_a_note():
    assert families.get("kmc").convergence_note(_trace([3.0, 2.0, 1.0])) is None
    assert families.get("km").convergence_note(_trace([6.0, 9.0, 1.0])) is None


def test_a_one_step_direct_solve_says_why_each_curve_is_one_point():
    note = families.get("kmc").convergence_note(_trace([0.5]))
    assert note.startswith("One point per curve") and "direct solve" in note


def test_km_explains_a_flat_curve_by_its_fixed_point():
    from kmviz.data import load, make_split
    from kmviz.km import KolmogorovModel

    ratings = load("planted-km")
    split = make_split(ratings)
    fit = KolmogorovModel(max_iter=10, random_state=0).fit(split.train,
                                                           validation=split.validation)
    rows = fit.trace_.rows
    assert rows[1]["n_psi_changed"] == 0 and rows[1]["objective"] == rows[0]["objective"]
    note = families.get("km").convergence_note(fit.trace_)
    assert note.startswith("Flat from the first point: after iteration 1 no item's ψ changed")
    assert f"{rows[-1]['objective']:.4g}" in note
    later = Trace(solver="km", rows=[
        {"iteration": i, "objective": o, "n_psi_changed": c}
        for i, (o, c) in enumerate([(19.7, 60), (18.2, 2), (17.5, 1), (17.5, 0)], start=1)])
    assert families.get("km").convergence_note(later).startswith("Flat from iteration 4")
    moving = Trace(solver="km", rows=[{"iteration": 1, "objective": 2.0, "n_psi_changed": 5},
                                      {"iteration": 2, "objective": 1.0, "n_psi_changed": 1}])
    assert families.get("km").convergence_note(moving) is None
