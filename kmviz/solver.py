"""The solver protocol: how a family with several methods plugs each one into its fit.

A family whose estimator offers more than one method (a ``solver=`` or ``method=``
setting) keeps a registry ``REGISTRY = {name: solver}`` in its ``solvers`` module. Each
solver is a module or an object with the members of :class:`Solver`; the estimator looks
the method up once, in ``_fit_start``, keeps it on the fit state (``state.solver``) and its
fit loop calls, the same way in every family::

    solver.start(state, rng)              # in _fit_start, after the data checks
    solver.step(state, trace, iteration)  # in _fit_step, once per outer iteration
    solver.publish(state)                 # in _fit_publish: the fitted arrays

The state is the family's fit state, a :class:`kmviz._state.FitStateBase`. The checks of
the data and of the settings run once, before ``start``; ``step`` works on what ``start``
set up and repeats none of them.

:func:`check_solver` and :func:`check_registry` say which member a solver lacks or takes
the wrong arguments in (the layout tests run them over every family's registry).
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol, runtime_checkable

from .exceptions import KmvizError

__all__ = ["OPTIONAL", "REQUIRED", "Solver", "SolverProtocolError", "check_members",
           "check_registry", "check_solver"]


@runtime_checkable
class Solver(Protocol):
    """One method of a family, as the fit loop drives it.

    ``start(state, rng)``
        Set up the method's work on the fit state (its own arrays, a resolved choice such
        as a direct or iterative solve, a step size); returns None. ``rng`` is the fit's
        random generator (``numpy.random.Generator``).
    ``step(state, trace, iteration)``
        One outer iteration (``iteration`` counts from 1), its named phases timed with
        ``trace.phase(name)``; returns a :class:`kmviz._base.Step` with the trace row's
        values (at least ``objective``) and whether the method's own criterion is met.
    ``publish(state)``
        The method's fitted arrays, as a dict of name -> array (or value), from the
        current state; it does not change the state, so it may be called after any step.

    Optional: ``estimate(state)``, the whole current estimate (for error measures against
    a planted truth), and ``name(state)``, the trace's dotted solver name.
    """

    def start(self, state, rng) -> None: ...

    def step(self, state, trace, iteration) -> Any: ...

    def publish(self, state) -> dict: ...


#: member -> the number of positional arguments it takes (``self`` not counted).
REQUIRED = {"start": 2, "step": 3, "publish": 1}
OPTIONAL = {"estimate": 1, "name": 1}


class SolverProtocolError(KmvizError, TypeError):
    """A registered solver lacks a member of :class:`Solver` or takes other arguments."""


def _positional_count(func):
    """(least, most) positional arguments ``func`` accepts (most None: any number)."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):  # a builtin without a signature: trust it
        return None
    least, most = 0, 0
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            most = None
        elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            if most is not None:
                most += 1
            if p.default is p.empty:
                least += 1
        elif p.kind is p.KEYWORD_ONLY and p.default is p.empty:
            return least, -1   # a required keyword argument: the loop never passes one
    return least, most


def check_solver(solver, name: str = "") -> None:
    """Raise :class:`SolverProtocolError` naming the member of :class:`Solver` that
    ``solver`` lacks, or whose arguments do not fit the calls the fit loop makes."""
    what = f"solver {name!r}" if name else f"solver {solver!r}"
    members = {**REQUIRED, **{k: v for k, v in OPTIONAL.items() if hasattr(solver, k)}}
    for member, n_args in members.items():
        func = getattr(solver, member, None)
        if func is None:
            raise SolverProtocolError(
                f"{what} has no {member!r}: a solver needs start(state, rng), "
                f"step(state, trace, iteration) and publish(state) (kmviz.solver.Solver). "
                f"Fix: define {member}.")
        if not callable(func):
            raise SolverProtocolError(f"{what}: {member!r} is not callable.")
        counts = _positional_count(func)
        if counts is None:
            continue
        least, most = counts
        if most == -1 or least > n_args or (most is not None and most < n_args):
            wanted = ", ".join(_ARGS[member])
            raise SolverProtocolError(
                f"{what}: {member}{inspect.signature(func)} cannot be called as "
                f"{member}({wanted}), the call the fit loop makes. Fix: give {member} "
                f"exactly these positional arguments.")


_ARGS = {"start": ("state", "rng"), "step": ("state", "trace", "iteration"),
         "publish": ("state",), "estimate": ("state",), "name": ("state",)}


def check_members(obj, members: dict, what: str, protocol: str) -> None:
    """Raise :class:`SolverProtocolError` naming the first member of ``members`` that
    ``obj`` lacks or cannot be called as: ``members`` maps a name to the positional
    arguments its calls pass (a tuple of names, ``self`` not counted) or to None for a plain
    attribute. ``what`` names the object in the message, ``protocol`` the protocol class.
    For a family's inner protocols (such as a BQP method of a fit's solver); the fit loop's
    own :class:`Solver` is checked by :func:`check_solver`."""
    for member, args in members.items():
        if not hasattr(obj, member):
            raise SolverProtocolError(
                f"{what} has no {member!r}: {protocol} needs "
                + ", ".join(m if a is None else f"{m}({', '.join(a)})"
                            for m, a in members.items())
                + f". Fix: define {member}.")
        if args is None:
            continue
        func = getattr(obj, member)
        if not callable(func):
            raise SolverProtocolError(f"{what}: {member!r} is not callable. Fix: make "
                                      f"{member} a method.")
        counts = _positional_count(func)
        if counts is None:
            continue
        least, most = counts
        n_args = len(args)
        if most == -1 or least > n_args or (most is not None and most < n_args):
            raise SolverProtocolError(
                f"{what}: {member}{inspect.signature(func)} cannot be called as "
                f"{member}({', '.join(args)}), the call made to it. Fix: give {member} "
                f"exactly these positional arguments.")


def check_registry(registry: dict, family: str = "") -> None:
    """:func:`check_solver` on every entry of a family's ``REGISTRY``."""
    if not isinstance(registry, dict) or not registry:
        raise SolverProtocolError(f"the solver registry of {family or 'the family'} is "
                                  "empty or not a dict of name -> solver.")
    for key, solver in registry.items():
        check_solver(solver, f"{family}.{key}" if family else key)
