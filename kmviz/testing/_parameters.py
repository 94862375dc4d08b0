"""The contract checks of the registry entry and the parameters (:mod:`kmviz.testing`)."""

from __future__ import annotations

import re

from ._checker import FamilyChecker
from ._expect import (ContractError, bad_values, declaration, expect,
                      public_fitted_attributes, raises)


#: What each method of the family's estimator is for (the fix when one is missing).
_METHODS = {
    "evaluate": "evaluate(ratings) -> dict of metric name -> float",
    "_fitted_arrays": "_fitted_arrays() -> dict of the arrays a saved run keeps",
    "_from_fitted_arrays": "_from_fitted_arrays(arrays) restoring them (the reverse)",
    "_fit_start": "_fit_start(ratings, params, *, validation=None) -> the fit state",
    "_fit_step": "_fit_step(state, trace, iteration) -> kmviz._base.Step",
    "_fit_publish": "_fit_publish(state, n_iter, trace) setting the fitted attributes",
}



def check_registry_entry_is_complete(c: FamilyChecker):
    from .. import families

    fam = c.family
    cls = fam.estimator_class()
    expect(fam.quick_params, f"family {fam.name!r} has no quick_params.",
           "set Family.quick_params to settings that fit in a second or two on its "
           "contract_data.")
    expect(fam.contract_data.get("source"),
           f"family {fam.name!r}: contract_data {fam.contract_data} has no 'source'.",
           "set Family.contract_data = {'source': <a catalogue dataset or a path>, "
           "<its loader options>}.")
    unknown = sorted(set(fam.quick_params) - set(cls._parameter_constraints))
    expect(not unknown, f"family {fam.name!r}: quick_params {unknown} are not parameters "
                        f"of {cls.__name__}.",
           f"use the names of {cls.__name__}._parameter_constraints: "
           f"{', '.join(cls._parameter_constraints)}.")
    for method, what in _METHODS.items():
        expect(callable(getattr(cls, method, None)), f"{cls.__name__} has no {method}().",
               f"define {what} (see kmviz._base.IterativeEstimator).")
    expect(families.get(fam.name) is fam,
           f"family {fam.name!r} is not the registered one: kmviz.families.get({fam.name!r})"
           " gives another Family.",
           "check the Family that kmviz.families.register (or the entry point) registered.")


_DOC_FIXES = (
    (r"is declared but not documented",
     "add `{name} : {kind}, default={default!r}` and a line of help to the Parameters "
     "section of {owner}'s docstring (or remove {name!r} from _parameter_constraints)."),
    (r"is documented but not declared",
     "declare it in {owner}._parameter_constraints ({name!r}: Param(...)) and take it in "
     "__init__, or remove it from the Parameters section of the docstring."),
    (r"is documented with default=",
     "write default={default!r} in the docstring (or change the __init__ default)."),
    (r"is documented with options",
     "list the declared options in the docstring: `{name} : {options}`."),
)


def _docstring_problem(cls, problem: str) -> str:
    """``problem`` (from :func:`kmviz._params.docstring_mismatches`) with the declaration,
    the documented line and the fix."""
    import inspect

    from .._params import documented_parameters

    found = re.search(r"'([^']+)'", problem)
    name = found.group(1) if found else "?"
    spec = cls._parameter_constraints.get(name)
    documented = documented_parameters(cls).get(name)
    default = next((p.default for p in inspect.signature(cls.__init__).parameters.values()
                    if p.name == name), None)
    options = "{" + ", ".join(repr(o) for o in getattr(spec, "options", ()) if o is not None) \
        + "}"
    kind = getattr(getattr(spec, "kind", None), "__name__", "str" if spec is None else
                   str(spec.kind))
    fix = next((text for pattern, text in _DOC_FIXES if re.search(pattern, problem)),
               "make the docstring's Parameters section and _parameter_constraints agree.")
    declared = declaration(spec) if spec is not None else "nothing"
    shown = f"`{name} : {documented}`" if documented is not None else "nothing"
    return (f"{problem} (declared: {declared}; documented: {shown}). Fix: "
            + fix.format(name=name, kind=kind, default=default, owner=cls.__name__,
                         options=options))


def check_docstring_documents_every_parameter(c: FamilyChecker):
    from .._params import docstring_mismatches

    cls = c.family.estimator_class()
    problems = docstring_mismatches(cls)
    if problems:
        raise ContractError(f"{cls.__name__}'s docstring does not match its declared "
                            "parameters:\n" + "\n".join(f"- {_docstring_problem(cls, p)}"
                                                         for p in problems))


def check_get_params_set_params(c: FamilyChecker):
    fam = c.family
    model = fam.make(fam.quick_params)
    owner = type(model).__name__
    params = model.get_params()
    declared = set(type(model)._parameter_constraints)
    # every constructor argument is declared, so everything is validated at fit
    expect(not set(params) - declared,
           f"{owner}.__init__ takes {sorted(set(params) - declared)}, which "
           "_parameter_constraints does not declare (so fit never validates them).",
           "declare each __init__ argument in _parameter_constraints (name: Param(...)).")
    expect(not declared - set(params),
           f"{owner} declares {sorted(declared - set(params))}, which __init__ does not take.",
           "take each declared parameter in __init__ and store it as given.")
    for name, value in fam.quick_params.items():
        expect(params[name] == value,
               f"{owner}({name}={value!r}).get_params()[{name!r}] is {params[name]!r}.",
               f"store each __init__ argument unchanged: self.{name} = {name}.")
    expect(model.set_params(**params) is model, f"{owner}.set_params does not return self.",
           "use kmviz._base's set_params (it returns the model).")
    expect(model.get_params() == params,
           f"{owner}: get_params() after set_params(**get_params()) is "
           f"{model.get_params()}, expected {params}.", "store parameters as given.")
    with raises(ValueError, match="no_such_parameter",
                what=f"{owner}.set_params(no_such_parameter=1)",
                fix="refuse unknown names, naming them (kmviz._base's set_params does)."):
        model.set_params(no_such_parameter=1)
    expect(model.get_params() == params,
           f"{owner}: a refused set_params changed the parameters to {model.get_params()}.",
           "check every name before setting any.")
    expect(repr(model).startswith(owner + "("),
           f"repr({owner}(...)) is {repr(model)!r}, not '{owner}(...)'.",
           "keep kmviz._base's __repr__.")


def check_clone_gives_equal_params_and_an_unfitted_model(c: FamilyChecker):
    from .._base import clone
    from ..exceptions import NotFittedError

    fitted = c.fitted
    owner = c.owner
    for source, which in ((c.family.make(c.family.quick_params), "an unfitted"),
                          (fitted, "a fitted")):
        copy = clone(source)
        expect(type(copy) is type(source) and copy is not source,
               f"clone of {which} {owner} gave {type(copy).__name__} "
               f"{'(the same object)' if copy is source else ''}.",
               "keep kmviz._base.clone working: __init__ takes exactly the parameters.")
        expect(copy.get_params() == source.get_params(),
               f"clone of {which} {owner}: get_params() {copy.get_params()}, expected "
               f"{source.get_params()}.", "store each __init__ argument as given.")
        attrs = public_fitted_attributes(copy)
        expect(not attrs, f"clone of {which} {owner} has fitted attributes {attrs}.",
               "set attributes ending in '_' in fit (_fit_publish) only, never in "
               "__init__.")
        with raises(NotFittedError, what=f"evaluate() on a clone of {which} {owner}",
                    fix="call self._check_fitted() first in evaluate and predict."):
            copy.evaluate(c.split.test)
    expect(public_fitted_attributes(fitted),
           f"cloning a fitted {owner} removed the original's fitted attributes.",
           "clone must not touch the model it copies.")


def check_unknown_parameter_in_make_is_refused(c: FamilyChecker):
    from ..exceptions import InvalidParameterError

    fam = c.family
    cls = fam.estimator_class()
    with raises(InvalidParameterError,
                match=rf"{cls.__name__} has no parameter 'no_such_parameter'",
                what=f"families.get({fam.name!r}).make({{..., 'no_such_parameter': 1}})",
                fix="declare the parameters in _parameter_constraints (Family.make reads "
                    "them).") as info:
        fam.make({**fam.quick_params, "no_such_parameter": 1})
    missing = [n for n in cls._parameter_constraints if n not in str(info[0])]
    expect(not missing, f"the refusal {str(info[0])!r} does not list the valid names "
                        f"{missing}.", "keep Family.make's message (it lists them all).")


def check_every_declared_parameter_is_validated_with_the_template(c: FamilyChecker):
    from ..exceptions import InvalidParameterError

    fam = c.family
    cls = fam.estimator_class()
    checked = 0
    for name, param in cls._parameter_constraints.items():
        template = re.escape(f"The '{name}' parameter of {cls.__name__} must be")
        used = {k: v[0] for k, v in param.when.items()}  # settings under which it is read
        for bad in bad_values(param):
            model = fam.make({**fam.quick_params, **used, name: bad})
            with raises(InvalidParameterError, match=template,
                        what=f"{cls.__name__}({name}={bad!r}).fit(train) (declared: "
                             f"{declaration(param)})",
                        fix=f"let IterativeEstimator.fit validate {name!r} against its "
                            "declaration before the fit reads it (do not read self."
                            f"{name} before super().fit; bounds and options go in the "
                            "Param)."):
                model.fit(c.split.train)
            attrs = public_fitted_attributes(model)
            expect(not attrs, f"{cls.__name__}({name}={bad!r}).fit was refused but set "
                              f"{attrs}.", "validate before setting any fitted attribute.")
            checked += 1
    expect(checked >= len(cls._parameter_constraints),
           f"{cls.__name__}: only {checked} bad values for "
           f"{len(cls._parameter_constraints)} parameters.",
           "give every parameter a kind with bounds or options.")
