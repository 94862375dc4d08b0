"""``kmviz.testing.check_family`` on deliberately wrong families: each failure names what is
wrong (the parameter, its declaration, the method) and the fix, never a bare
"AssertionError:".

The families are the toy biased mean of ``tests/toyfamily`` (NumPy only, fits in
milliseconds) with one thing broken each, registered for the test only.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from kmviz import families
from kmviz._params import Param
from kmviz.testing import CHECKS, ContractError, FamilyChecker, check_family



def _load(name: str, relative: str):
    """A file of the toy distribution as a module of a private name (its folder is not put
    on sys.path: the plug-in tests' installed copy stays the only ``kmviz_toyfamily``)."""
    spec = importlib.util.spec_from_file_location(
        name, Path(__file__).resolve().parent / "toyfamily" / "kmviz_toyfamily" / relative)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (dataclasses look their module up there)
    spec.loader.exec_module(module)
    return module


BiasedMean = _load("_contract_toy_model", "model.py").BiasedMean
toy_family = _load("_contract_toy_entry", "__init__.py").family

_DOC = BiasedMean.__doc__


class WrongDocstring(BiasedMean):
    """The toy with a docstring that disagrees with its declarations.

    Parameters
    ----------
    reg : float, default=2.0
        Documented with a default that is not __init__'s.
    max_iter : int, default=10
        Alternating iterations at most.
    alpha : float, default=0.5
        Documented but not declared.
    random_state : int or None, default=None
        Seed.
    """


class WrongOptions(BiasedMean):
    """The toy with an option set documented wrong.

    Parameters
    ----------
    reg : float, default=1.0
        Ridge penalty.
    max_iter : int, default=10
        Iterations.
    tol : float, default=1e-6
        Tolerance.
    random_state : int or None, default=None
        Seed.
    mode : {"plain", "fancy"}, default="plain"
        Documented with an option it does not declare.
    """

    _parameter_constraints = {**BiasedMean._parameter_constraints,
                              "mode": Param(str, options=("plain", "ridge"), label="mode")}

    def __init__(self, reg=1.0, max_iter=10, tol=1e-6, random_state=None, mode="plain"):
        super().__init__(reg=reg, max_iter=max_iter, tol=tol, random_state=random_state)
        self.mode = mode


class Unvalidated(BiasedMean):
    """Skips the validation of ``reg`` (reads it unchecked)."""

    __doc__ = _DOC

    def _validate_params(self):
        reg, self.reg = self.reg, 1.0
        try:
            params = super()._validate_params()
        finally:
            self.reg = reg
        return {**params, "reg": reg}


class GlobalRandom(BiasedMean):
    """Draws its start from NumPy's global generator, not from ``random_state``."""

    __doc__ = _DOC

    def _fit_start(self, ratings, params, *, validation=None):
        state = super()._fit_start(ratings, params, validation=validation)
        state.item_bias = np.random.normal(0.0, 0.01, state.item_bias.size)
        return state


class LossyArrays(BiasedMean):
    """Restores its item biases as float32 from a saved run."""

    __doc__ = _DOC

    @classmethod
    def _from_fitted_arrays(cls, arrays, params, trace, train=None):
        model = super()._from_fitted_arrays(arrays, params, trace, train=train)
        model.item_bias_ = model.item_bias_.astype(np.float32)
        return model


class Unbounded(BiasedMean):
    """Declares ``reg`` without an upper bound."""

    __doc__ = _DOC
    _parameter_constraints = {**BiasedMean._parameter_constraints,
                              "reg": Param(float, low=0.0, label="reg")}


class NotSelf(BiasedMean):
    """Its fit returns None."""

    __doc__ = _DOC

    def fit(self, *args, **kwargs):
        super().fit(*args, **kwargs)


@pytest.fixture()
def wrong(monkeypatch):
    """``wrong(cls)``: the toy family with estimator ``cls``, registered for the test (the
    classes are reached through a module of their own, whatever pytest's import mode)."""
    toys = types.ModuleType("kmviz_contract_toys")
    monkeypatch.setitem(sys.modules, toys.__name__, toys)

    def make(cls):
        setattr(toys, cls.__name__, cls)
        fam = dataclasses.replace(toy_family(), name=f"wrong-{cls.__name__.lower()}",
                                  estimator=f"{toys.__name__}:{cls.__name__}")
        monkeypatch.setitem(families._FAMILIES, fam.name, fam)
        return fam

    return make


def _message(check: str, family) -> str:
    with pytest.raises(ContractError) as info:
        CHECKS[check](FamilyChecker(family))
    return str(info.value)


def test_the_toy_itself_passes_every_check(wrong):
    check_family(wrong(BiasedMean))


def test_a_wrong_docstring_fails_check_family_naming_parameter_declaration_and_fix(wrong):
    fam = wrong(WrongDocstring)
    with pytest.raises(AssertionError) as info:
        check_family(fam)
    text = str(info.value)
    assert text.startswith(f"kmviz.testing: family {fam.name!r} fails the check "
                           "'docstring_documents_every_parameter': ContractError: "
                           "WrongDocstring's docstring does not match")
    # declared but not documented: the declaration and the line to add
    assert "'tol' is declared but not documented (declared: Param(float, low=0.0, " \
           "high=1.0); documented: nothing). Fix: add `tol : float, default=1e-06`" in text
    # documented but not declared
    assert "'alpha' is documented but not declared (declared: nothing; documented: " \
           "`alpha : float, default=0.5`). Fix: declare it in " \
           "WrongDocstring._parameter_constraints ('alpha': Param(...))" in text
    # a wrong default: the fix gives the right one
    assert "'reg' is documented with default=2.0 but __init__ says 1.0" in text
    assert "Fix: write default=1.0 in the docstring" in text
    assert isinstance(info.value.__cause__, ContractError)


def test_a_wrong_option_set_names_the_declared_options(wrong):
    text = _message("docstring_documents_every_parameter", wrong(WrongOptions))
    assert "'mode' is documented with options ['fancy', 'plain'] but declares " \
           "['plain', 'ridge']" in text
    assert "declared: Param(str, options=('plain', 'ridge'))" in text
    assert "Fix: list the declared options in the docstring: `mode : {'plain', 'ridge'}`" \
        in text


def test_an_unvalidated_parameter_names_the_value_the_declaration_and_the_fix(wrong):
    text = _message("every_declared_parameter_is_validated_with_the_template",
                    wrong(Unvalidated))
    assert text.startswith("Unvalidated(reg='abc').fit(train) (declared: Param(float, "
                           "low=0.0, high=1000000000000.0)) raised ")
    assert "instead of InvalidParameterError. Fix: let IterativeEstimator.fit validate " \
           "'reg' against its declaration" in text


def test_a_fit_not_seeded_by_random_state_says_where_to_draw_from(wrong):
    text = _message("same_random_state_gives_identical_fits", wrong(GlobalRandom))
    assert text.startswith("GlobalRandom: two fits with random_state=0 give objectives")
    assert "Fix: draw every random number from np.random.default_rng(" \
           "params['random_state'])" in text


@pytest.mark.parametrize("check", ["save_run_open_run_round_trip",
                                   "model_file_round_trip_arrays_only"])
def test_a_lossy_round_trip_names_the_array(wrong, check):
    text = _message(check, wrong(LossyArrays))
    assert "the fitted array 'item_bias' has dtype float32, expected float64. " \
           "Fix: _fitted_arrays() must return every array" in text


def test_an_unbounded_setting_names_its_declaration(wrong):
    text = _message("work_is_bounded_before_the_fit_starts", wrong(Unbounded))
    assert text == ("Unbounded: numeric settings without an upper bound: reg "
                    "(Param(float, low=0.0)). Fix: declare high= in each Param (the most a "
                    "fit can use).")


def test_a_fit_that_does_not_return_self_says_so(wrong):
    text = _message("fit_returns_self_and_the_trace_counts_iterations", wrong(NotSelf))
    assert text.startswith("NotSelf.fit returned NoneType, not the model. Fix: end fit "
                           "with `return self`")


def test_the_checks_raise_even_under_python_o(wrong):
    """The checks raise ContractError themselves (no ``assert`` statement, which -O drops)."""
    import ast

    import kmviz.testing as testing

    folder = Path(testing.__file__).parent
    asserts = [f"{p.name}:{n.lineno}" for p in folder.glob("*.py") if p.name != "browser.py"
               for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
               if isinstance(n, ast.Assert)]
    assert asserts == []


class RecommendsSeen(BiasedMean):
    """The toy biased mean with a ``recommend`` that forgets to leave out the user's
    training ratings: it lists the items user 0 rated in training first."""

    def fit(self, data, **kw):
        self._rated_by_0 = np.unique(data.items[data.users == 0]).astype(np.int64)
        return super().fit(data, **kw)

    def recommend(self, users, k=10, exclude_seen=True):
        rest = np.setdiff1d(np.arange(self.item_bias_.size), self._rated_by_0)
        order = np.concatenate([self._rated_by_0, rest])[:k]
        users = np.asarray(users)
        return order if users.ndim == 0 else np.tile(order, (users.size, 1))


def test_a_recommend_that_lists_seen_items_is_named(wrong):
    fam = wrong(RecommendsSeen)
    assert FamilyChecker(fam).split.train.items[
        FamilyChecker(fam).split.train.users == 0].size  # user 0 has training ratings
    text = _message("recommend_where_offered", fam)
    assert "RecommendsSeen.recommend(0) lists a training positive of user 0" in text
    assert "FactorServing implements it" in text


def test_save_and_load_live_on_the_base_for_every_family():
    from kmviz._base import IterativeEstimator

    for name in families.names():
        cls = families.get(name).estimator_class()
        assert cls.save is IterativeEstimator.save, name
        assert cls.load.__func__ is IterativeEstimator.load.__func__, name
