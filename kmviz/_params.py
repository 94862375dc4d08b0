"""Declared parameter constraints: one place for an estimator's options, bounds and help.

An estimator lists its hyperparameters as data::

    _parameter_constraints = {
        "D": Param(int, low=1, form_high=16, label="D (dimension)", help="..."),
        "evd": Param(str, options=("exact", "lanczos"), help="..."),
    }

and everything else reads that declaration: validation at ``fit`` (one message template,
:mod:`kmviz._validation`), the app's Train form (widgets, bounds, help), the CLI's
``--set name=value`` parsing and the run store's re-run settings. Nothing re-types an option
list or a bound.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ._validation import check_number, check_option, check_random_state
from .exceptions import InvalidParameterError

RANDOM_STATE = "random_state"


@dataclass(frozen=True)
class Param:
    """One hyperparameter's constraint and its description for people.

    Parameters
    ----------
    kind : int, float, str, bool or "random_state"
        The type. ``str`` parameters take one of ``options``.
    low, high, closed :
        The allowed interval for numbers (``closed`` as in :func:`check_number`).
    options : tuple
        The allowed values of an enumerated parameter.
    option_labels : dict
        Display text per option (forms).
    label, help : str
        Widget label and one-line help (the paper's symbol and where it is defined).
    form_low, form_high : number, optional
        Tighter bounds a form offers (for example D up to 16 in the browser); validation
        still uses ``low``/``high``.
    step : number, optional
        Form step.
    none_ok : bool
        None is allowed (means "the estimator's default behaviour").
    advanced : bool
        Shown in a folded "more settings" part of forms.
    when : dict
        The settings this one depends on: ``{"method": ("pg",)}`` means it is used only when
        ``method`` is ``"pg"`` (forms show it only then, docs say so). Empty: always used.
    """

    kind: object
    low: float | None = None
    high: float | None = None
    closed: str = "both"
    options: tuple = ()
    option_labels: dict = field(default_factory=dict)
    label: str = ""
    help: str = ""
    form_low: float | None = None
    form_high: float | None = None
    step: float | None = None
    none_ok: bool = False
    advanced: bool = False
    when: dict = field(default_factory=dict)

    def applies(self, params: dict) -> bool:
        """Whether this setting is used with the other settings ``params``."""
        return all(params.get(name) in values for name, values in self.when.items())

    def check(self, owner: str, name: str, value):
        """The value converted to its kind, or :class:`InvalidParameterError`."""
        if value is None and self.none_ok:
            return None
        if self.kind == RANDOM_STATE:
            try:  # numpy refuses negative seeds with its own ValueError
                check_random_state(value)
            except (InvalidParameterError, ValueError, TypeError):
                raise InvalidParameterError(
                    f"The {name!r} parameter of {owner} must be None, a non-negative int "
                    f"or a numpy Generator. Got {value!r} instead.") from None
            return value
        if self.kind is bool:
            if not isinstance(value, bool):
                raise InvalidParameterError(
                    f"The {name!r} parameter of {owner} must be True or False. "
                    f"Got {value!r} instead.")
            return value
        if self.kind is str or self.options:
            return check_option(owner, name, value, self.options)
        return check_number(owner, name, value, kind=self.kind, low=self.low, high=self.high,
                            closed=self.closed)

    def parse(self, owner: str, name: str, text: str):
        """A value from command-line text (``--set name=text``), then checked."""
        text = text.strip()
        if text in ("None", "none", "null") and (self.none_ok or self.kind == RANDOM_STATE):
            return None
        try:
            if self.kind is bool:
                lowered = text.lower()
                if lowered in ("true", "yes", "1"):
                    value = True
                elif lowered in ("false", "no", "0"):
                    value = False
                else:
                    value = text
            elif self.kind is int or self.kind == RANDOM_STATE:
                value = int(text)
            elif self.kind is float:
                value = float(text)
            else:
                value = text
        except ValueError:
            value = text
        return self.check(owner, name, value)

    def describe(self) -> str:
        """The constraint in words, for ``--help`` and error messages."""
        if self.options:
            return "one of " + ", ".join(map(str, self.options))
        if self.kind == RANDOM_STATE:
            return "an integer seed or None"
        if self.kind is bool:
            return "true or false"
        kind = "integer" if self.kind is int else "number"
        article = "an" if kind == "integer" else "a"
        if self.low is None and self.high is None:
            return f"{article} {kind}"
        left = "[" if self.closed in ("left", "both") and self.low is not None else "("
        right = "]" if self.closed in ("right", "both") and self.high is not None else ")"
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        return f"{article} {kind} in {left}{lo}, {hi}{right}"


def validate_params(estimator) -> dict:
    """Every declared parameter of ``estimator`` checked and converted (name -> value),
    except those whose ``when`` does not hold for the others: a setting that is not read
    (another method's) is passed through as given, not refused."""
    owner, specs = type(estimator).__name__, type(estimator)._parameter_constraints
    out = {name: spec.check(owner, name, getattr(estimator, name))
           for name, spec in specs.items() if not spec.when}
    for name, spec in specs.items():
        if spec.when:
            value = getattr(estimator, name)
            out[name] = spec.check(owner, name, value) if spec.applies(out) else value
    return {name: out[name] for name in specs}


def parse_assignments(estimator_cls, pairs) -> dict:
    """``["D=8", "evd=lanczos"]`` -> checked values, by the estimator's declarations.

    Unknown names and bad values raise :class:`InvalidParameterError` naming the parameter,
    what is allowed and the valid names.
    """
    constraints = estimator_cls._parameter_constraints
    out = {}
    for pair in pairs or []:
        name, eq, text = str(pair).partition("=")
        name = name.strip().replace("-", "_")
        if not eq:
            raise InvalidParameterError(
                f"--set takes name=value (for example D=8); got {pair!r}.")
        if name not in constraints:
            raise InvalidParameterError(
                f"{estimator_cls.__name__} has no parameter {name!r}. Valid parameters: "
                f"{', '.join(constraints)}.")
        out[name] = constraints[name].parse(estimator_cls.__name__, name, text)
    return out


def json_safe(params: dict) -> dict:
    """Parameters as JSON scalars (a numpy Generator as random_state becomes None)."""
    out = {}
    for k, v in params.items():
        if hasattr(v, "item") and not isinstance(v, (list, dict)):
            try:
                v = v.item()
            except (TypeError, ValueError):
                pass
        if not (v is None or isinstance(v, (bool, int, float, str))):
            try:
                json.dumps(v)
            except (TypeError, ValueError):
                v = None
        out[k] = v
    return out


def documented_parameters(cls) -> dict:
    """The numpydoc ``Parameters`` section of ``cls``'s docstring: name -> the text after
    the colon of its heading line (``"{"a", "b"}, default="a"``). ``a, b : ...`` documents
    both names."""
    import inspect
    import re

    doc = inspect.cleandoc(cls.__doc__ or "")
    match = re.search(r"^Parameters\n-{3,}\n(.*?)(?=^\S[^\n]*\n-{3,}\n|\Z)", doc,
                      re.MULTILINE | re.DOTALL)
    out = {}
    if not match:
        return out
    for line in match.group(1).splitlines():
        if not line or line[0].isspace():
            continue
        names, _, kind = line.partition(" : ")
        names = [n.strip() for n in names.split(",")]
        found = re.search(r"default\s*=\s*(.+?)\s*$", kind)
        # "a, b : ..., default=1, 2": one default each
        each = found.group(1).split(", ") if found and len(names) > 1 else []
        for i, name in enumerate(names):
            text = kind.strip()
            if len(each) == len(names):
                text = \
                    kind[:found.start()].strip() + f" default={each[i].strip()}"
            out[name] = text
    return out


def docstring_mismatches(cls) -> list[str]:
    """Where the numpydoc ``Parameters`` section of ``cls`` disagrees with its declared
    ``_parameter_constraints`` and its ``__init__`` defaults: a parameter documented but not
    declared (or the reverse), a ``default=`` that is not the ``__init__`` default, or an
    option set ``{...}`` that is not the declared ``options``. Empty when they agree."""
    import ast
    import inspect
    import re

    declared = dict(getattr(cls, "_parameter_constraints", {}))
    documented = documented_parameters(cls)
    defaults = {p.name: p.default for p in inspect.signature(cls.__init__).parameters.values()
                if p.name != "self"}
    owner = cls.__name__
    problems = [f"{owner}: {name!r} is declared but not documented"
                for name in declared if name not in documented]
    problems += [f"{owner}: {name!r} is documented but not declared"
                 for name in documented if name not in declared]
    for name, kind in documented.items():
        if name not in declared:
            continue
        spec = declared[name]
        found = re.search(r"default\s*=\s*(.+?)\s*$", kind)
        if found and name in defaults:
            text = found.group(1)
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                value = text
            if not (value == defaults[name] or str(value) == str(defaults[name])):
                problems.append(f"{owner}: {name!r} is documented with default={text} but "
                                f"__init__ says {defaults[name]!r}")
        options = re.match(r"\{(.*?)\}", kind)
        if options and spec.options:
            listed = {ast.literal_eval(o.strip()) if o.strip()[:1] in "\"'" else o.strip()
                      for o in options.group(1).split(",") if o.strip()}
            wanted = {o for o in spec.options if o is not None}
            if listed != wanted:
                problems.append(f"{owner}: {name!r} is documented with options "
                                f"{sorted(map(str, listed))} but declares "
                                f"{sorted(map(str, wanted))}")
    return problems
