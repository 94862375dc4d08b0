"""The estimator contract every registered model family must meet.

The checks themselves are public, in :mod:`kmviz.testing` (``check_family(family)``, as
scikit-learn's ``check_estimator``), so a family installed from its own distribution runs
the same suite. Here each check runs as its own test for each entry of
:func:`kmviz.families.all_families` (test id ``<check>[<family>]``), on the family's small
contract dataset with its quick settings: parameters (get/set/clone, numpydoc, validation
from the declared constraints), the shared outer loop (callback stop, trace, validation
columns, tol and ConvergenceWarning, non-finite objective), determinism, score, and the run
format (save_run/open_run and model files).
"""

from __future__ import annotations

import pytest

from kmviz import families
from kmviz.testing import CHECKS, FamilyChecker

FAMILIES = families.all_families()


@pytest.fixture(scope="module", params=FAMILIES, ids=[f.name for f in FAMILIES])
def checker(request):
    """One :class:`FamilyChecker` per family: its data and fitted model are made once."""
    return FamilyChecker(request.param)


@pytest.mark.parametrize("check", list(CHECKS))
def test_contract(check, checker):
    CHECKS[check](checker)


def test_every_family_names_its_paper():
    for fam in FAMILIES:
        assert fam.reference and "*" in fam.reference, fam.name  # the title in italics
