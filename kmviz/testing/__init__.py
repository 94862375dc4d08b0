"""The contract every model family meets, as public functions (like scikit-learn's
``check_estimator``).

::

    from kmviz import families
    from kmviz.testing import check_family

    check_family(families.get("toy"))   # raises AssertionError naming the failed check

Each check fits the family's estimator on its small contract dataset
(``Family.contract_data``) with its quick settings (``Family.quick_params``): parameters
(get/set/clone, numpydoc Parameters against the declarations, validation from the declared
constraints), the shared outer loop (callback stop, trace, validation columns, tol and
ConvergenceWarning, non-finite objective), determinism, ``score`` against ``evaluate`` and the
run format (save_run/open_run, model files, metric names ``{part}_{metric}``), the base's
``save`` / ``load`` and, where the estimator offers it, ``recommend``.

The family must be registered (in :mod:`kmviz.families` or through the ``kmviz.families``
entry point): saved runs are reopened through the registry. Nothing here needs pytest;
kmviz's own tests run every check of every registered family as one test each
(:func:`family_checks`, ``tests/test_family_contract.py``).
"""

from __future__ import annotations

from . import _loop, _methods, _parameters, _run_format
from ._checker import FamilyChecker
from ._expect import ContractError, bad_values

__all__ = ["CHECKS", "ContractError", "FamilyChecker", "bad_values", "check_family",
           "family_checks"]


#: Every check, by name (the function's name without ``check_``), in the order they run.
CHECKS = {name[len("check_"):]: func for module in (_parameters, _loop, _run_format, _methods)
          for name, func in vars(module).items()
          if name.startswith("check_") and callable(func) and func.__module__ == module.__name__}
globals().update({f"check_{name}": func for name, func in CHECKS.items()})


def family_checks(family) -> list[tuple[str, object]]:
    """``(name, run)`` of every check of ``family``; ``run()`` raises
    :class:`ContractError` (an AssertionError) saying what is wrong and the fix, or the
    estimator's own error, when the check fails. The checks share one
    :class:`FamilyChecker` (its data and fitted model are made once)."""
    checker = FamilyChecker(family)
    return [(name, (lambda func=func: func(checker))) for name, func in CHECKS.items()]


def check_family(family) -> None:
    """Run every contract check on ``family`` (a :class:`kmviz.families.Family`, registered).

    Raises
    ------
    AssertionError
        At the first check that fails: a :class:`ContractError` naming the family, the
        check, what is wrong (the parameter, the declaration, the method) and the fix; the
        original error is its cause.
    """
    for name, run in family_checks(family):
        try:
            run()
        except Exception as exc:
            raise ContractError(f"kmviz.testing: family {family.name!r} fails the check "
                                f"{name!r}: {type(exc).__name__}: {exc}") from exc
