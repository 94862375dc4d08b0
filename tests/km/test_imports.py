"""Import structure of ``kmviz.km`` (its subpackage ``kernels`` included): the test twins stay
out of production, and ``solvers`` (the BQP solvers) and ``baselines`` do not import each other.

The modules are parsed with ``ast`` (not imported), so imports inside functions count too.
"""

import ast
import math
from pathlib import Path

import numpy as np
import pytest

import kmviz.km
from kmviz.km import _reference as R
from kmviz.km import lanczos as L

from tests.km.instances import random_symmetric

PKG = "kmviz.km"
PKG_DIR = Path(kmviz.km.__file__).resolve().parent


def _package_of(path):
    """The package a file's relative imports start from: its folder under kmviz/km as a dotted
    name (kmviz.km for a file outside the package, as the resolver test's own)."""
    try:
        rel = path.resolve().relative_to(PKG_DIR)
    except ValueError:
        return PKG
    return ".".join([PKG, *rel.parent.parts])


def _module_name(path):
    rel = path.resolve().relative_to(PKG_DIR).with_suffix("")
    return ".".join([PKG, *(part for part in rel.parts if part != "__init__")])


MODULES = {_module_name(p): p for p in sorted(PKG_DIR.rglob("*.py"))
           if p != PKG_DIR / "__init__.py"}
REFERENCE = f"{PKG}._reference"


def _imported_modules(path):
    """Every module an ``import`` / ``from ... import`` anywhere in the file (functions
    included) may bind, as absolute dotted names. For ``from X import a`` both X and X.a are
    listed, since ``a`` may be a submodule."""
    out = set()
    package = _package_of(path)
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - (node.level - 1)])
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module
            out.add(mod)
            out.update(f"{mod}.{alias.name}" for alias in node.names)
    return out


def _km_imports(name):
    """The modules of kmviz.km (other than itself) that module ``name`` imports."""
    return {m for m in _imported_modules(MODULES[name]) if m in MODULES and m != name}


def test_parser_sees_the_package():
    assert {f"{PKG}.lanczos", f"{PKG}.solvers", f"{PKG}.baselines", REFERENCE} <= set(MODULES)
    assert f"{PKG}._kernels" in _km_imports(f"{PKG}.lanczos")
    assert f"{PKG}._kernels.newton" in MODULES
    # relative imports inside the subpackage resolve against it
    assert {f"{PKG}._kernels.dual", f"{PKG}._kernels.eigen"} <= _km_imports(f"{PKG}._kernels.newton")


def test_resolver_handles_every_import_form(tmp_path):
    src = tmp_path / "mod.py"
    src.write_text(
        "from . import _reference as R\n"
        "def f():\n"
        "    from ._reference import ritz_pairs\n"
        "    import kmviz.km._reference\n"
        "    from kmviz.km import _reference\n"
        "    from .. import exceptions\n")
    got = _imported_modules(src)
    assert REFERENCE in got and "kmviz.exceptions" in got
    src.write_text("def f():\n    from .solvers import BQPResult\n")
    assert f"{PKG}.solvers" in _imported_modules(src)  # function-level imports count


@pytest.mark.parametrize("name", sorted(set(MODULES) - {REFERENCE}))
def test_production_modules_do_not_import_the_test_twins(name):
    assert REFERENCE not in _imported_modules(MODULES[name]), (
        f"{name} imports {REFERENCE}, the plain-NumPy oracles kept for tests")


def test_package_init_does_not_import_the_test_twins():
    assert REFERENCE not in _imported_modules(PKG_DIR / "__init__.py")


def test_reference_is_independent_of_the_code_it_checks():
    assert not _km_imports(REFERENCE), f"{REFERENCE} must not call production code"


def test_bqp_and_baselines_do_not_import_each_other():
    bqp, base = f"{PKG}.solvers", f"{PKG}.baselines"
    both = bqp in _km_imports(base) and base in _km_imports(bqp)
    assert not both, "bqp and baselines import each other"
    # the direction chosen: bqp dispatches to the baselines, which only see lower modules
    assert bqp not in _km_imports(base)


def test_lanczos_helpers_match_the_papers_definitions():
    """lanczos.py carries its own threshold terms and Ritz pairs: checked against Lemma 3 and
    eq. (20) worked by hand, the spectrum (tr C = sum of the eigenvalues, tr C^2 = sum of their
    squares), the bounds on the largest eigenvalue, and the eigen-equation of H_m, not
    against a copy of the same code."""
    # by hand: C = [[2, 1, 0], [1, 2, 0], [0, 0, -1]], D + 1 = 3, tr C = 3, tr C^2 = 11
    C = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, -1.0]])
    got = L._threshold_terms(C, 1.0)
    assert got["sigma_UB"] == pytest.approx(1 + 4 / math.sqrt(3), rel=1e-14)
    assert got["sigma_LB"] == pytest.approx(1 + 2 / math.sqrt(3), rel=1e-14)
    assert got["sigma_Minkowski"] == pytest.approx(7 / 3, rel=1e-14)
    assert got["delta"] == pytest.approx((2 / math.sqrt(3) + 7 / 3) / (2 * math.log(2)),
                                         rel=1e-14)
    for n, seed in ((2, 0), (3, 1), (9, 2)):
        C = random_symmetric(n, seed)
        D, a = n - 1, 1.5
        lam = np.linalg.eigvalsh(C)
        mean, spread = lam.mean(), lam.std()  # from the spectrum, not from traces
        minkowski = sum(abs(C[i, j]) for i in range(n) for j in range(n)) / n
        got = L._threshold_terms(C, a)
        assert got["sigma_UB"] == pytest.approx(mean + spread * math.sqrt(D), rel=1e-12)
        assert got["sigma_LB"] == pytest.approx(mean + spread / math.sqrt(D), rel=1e-12)
        # they bound the largest eigenvalue (Wolkowicz-Styan)
        assert got["sigma_LB"] - 1e-12 <= lam[-1] <= got["sigma_UB"] + 1e-12
        assert got["sigma_Minkowski"] == pytest.approx(minkowski, rel=1e-12)
        want = 0.0 if D < 2 else ((got["sigma_UB"] - got["sigma_LB"]) + minkowski) / (
            a * D * math.log(D))
        assert got["delta"] == pytest.approx(want, rel=1e-12, abs=1e-300)
        # Ritz pairs of a full run (delta = 0): H_m Q = Q diag(theta), theta = the spectrum,
        # and the Ritz vectors P Q are orthonormal eigenvectors of C
        al, be, P = R.lanczos_tridiag(C, R.lanczos_start(n), 0.0)
        theta, Y, Q = L._ritz_pairs(al, be, P)
        m = al.size
        H = np.diag(al) + np.diag(be[: m - 1], 1) + np.diag(be[: m - 1], -1)
        np.testing.assert_allclose(H @ Q, Q * theta, atol=1e-12)
        assert np.all(np.diff(theta) >= 0)
        np.testing.assert_allclose(Y, P @ Q, rtol=1e-13, atol=1e-14)
        if m == n:
            np.testing.assert_allclose(theta, lam, atol=1e-10)
            np.testing.assert_allclose(Y.T @ Y, np.eye(n), atol=1e-10)
            np.testing.assert_allclose(C @ Y, Y * theta, atol=1e-10)
