"""The layout rules of the house, checked on the source: ui/ is glue without hidden import
loops, and the generic modules never name a model family.

"Generic" is everything that must work for any family, including one installed from its
own distribution: the top-level modules of kmviz (but the registry, ``families.py``, whose
job is to name kmviz's own families), the run store (``runs.py`` or a ``runs/`` package),
``kmviz/data``, ``kmviz/viz``, ``kmviz/ui`` (but ``kmviz/ui/families/``, the glue a family
owns), ``app.py`` and the shared pages. In those files the code (not the prose: docstrings
and comments may cite a family as an example) must not

- import a family's package (found from the registry: the package of each estimator),
- hold a string literal equal to a family's name ("km") or naming one of its modules
  ("kmviz.km", "kmviz.km.estimator:...", but "kmviz.kmc" is not km's),
- use an estimator's class name (as a name, an attribute, an import or a string).

Dataset names such as "planted-km" or "km-toy" are data, not family names: a catalogue
entry may be made for one family, and only an exact family name refers to it.
"""

import ast
from pathlib import Path

import pytest

from kmviz import families

ROOT = Path(__file__).resolve().parents[1]
KMVIZ = ROOT / "kmviz"
UI = KMVIZ / "ui"
SHARED_PAGES = ("home", "data", "train", "runs", "convergence")
#: Modules and pages that must work for every family, so never name one.
GENERIC = sorted(
    {p for p in KMVIZ.glob("*.py") if p.name != "families.py"}
    | set((KMVIZ / "runs").rglob("*.py"))
    | {p for p in UI.rglob("*.py") if "families" not in p.relative_to(UI).parts}
    | set((KMVIZ / "viz").rglob("*.py")) | set((KMVIZ / "data").rglob("*.py"))
    | {ROOT / "app.py"} | {ROOT / "app_pages" / f"{n}.py" for n in SHARED_PAGES})
#: The package of each registered family's estimator ("kmviz.km" for
#: "kmviz.km.estimator:KolmogorovModel").
FAMILY_PACKAGES = {f.estimator.partition(":")[0].rpartition(".")[0]
                   or f.estimator.partition(":")[0] for f in families.all_families()}
FAMILY_NAMES = set(families.names())
ESTIMATOR_CLASSES = {f.estimator.partition(":")[2] for f in families.all_families()}


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _package(path: Path) -> str:
    if not path.is_relative_to(ROOT):
        return "app"
    return ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1]) or "app"


def _names_a_family_package(module: str) -> bool:
    return any(module == f or module.startswith((f + ".", f + ":")) for f in FAMILY_PACKAGES)


def _imports(path: Path, package: str):
    """(module, is_top_level) of every import in a file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, id(node) in top
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            yield base, id(node) in top


def test_ui_has_no_function_local_imports_of_kmviz():
    local = [(p.name, mod) for p in UI.glob("*.py") for mod, top in _imports(p, "kmviz.ui")
             if not top and mod.startswith("kmviz")]
    assert local == []


def test_ui_modules_import_each_other_without_a_cycle():
    graph = {p.stem: {mod.split(".")[2] for mod, _ in _imports(p, "kmviz.ui")
                      if mod.startswith("kmviz.ui.")} for p in UI.glob("*.py")}
    seen, stack = set(), []

    def visit(node):
        assert node not in stack, f"import cycle in kmviz/ui: {' -> '.join(stack + [node])}"
        if node in seen:
            return
        stack.append(node)
        for nxt in graph.get(node, ()):
            visit(nxt)
        stack.pop()
        seen.add(node)

    for node in graph:
        visit(node)


@pytest.mark.parametrize("path", GENERIC, ids=_id)
def test_generic_code_imports_no_family_package(path):
    bad = [mod for mod, _ in _imports(path, _package(path)) if _names_a_family_package(mod)]
    assert bad == [], f"{path.name} imports {bad}; go through kmviz.families instead"


def _documentation(tree) -> set:
    """ids of the string constants that are prose: docstrings and bare string statements."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)}


def family_mentions(path: Path) -> list[str]:
    """Where the code of ``path`` names a family (see the module docstring), as
    ``"line N: what"``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    prose = _documentation(tree)
    package = _package(path)
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in prose:
            text = node.value
            if text in FAMILY_NAMES:
                found.append(f"line {line}: the family name {text!r}")
            elif _names_a_family_package(text):
                found.append(f"line {line}: the family module {text!r}")
            elif text in ESTIMATOR_CLASSES:
                found.append(f"line {line}: the estimator class {text!r}")
        elif isinstance(node, ast.Name) and node.id in ESTIMATOR_CLASSES:
            found.append(f"line {line}: the estimator class {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in ESTIMATOR_CLASSES:
            found.append(f"line {line}: the estimator class {node.attr}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            base = ""
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                name = f"{base}.{alias.name}" if base else alias.name
                if _names_a_family_package(name):
                    found.append(f"line {line}: imports {name}")
                elif alias.name.rpartition(".")[2] in ESTIMATOR_CLASSES:
                    found.append(f"line {line}: imports the estimator class {alias.name}")
    return found


@pytest.mark.parametrize("path", GENERIC, ids=_id)
def test_generic_code_names_no_family(path):
    assert family_mentions(path) == [], \
        f"{_id(path)} names a family; read it from kmviz.families instead"


BAD_SOURCE = '''"""Docstring about km and kmviz.km is prose."""
import kmviz.km.estimator
from kmviz.kmc import telemetry
from kmviz import ocmf
family = get_family('km')
module = 'kmviz.ocmf.estimator:OneClassMF'
kind = 'KolmogorovModel'
model = KernelMatrixCompletion()
other = x.GeneralizedFM
'''
GOOD_SOURCE = '''DATA = ("planted-km", "km-toy", "kmviz", "kmviz.kmcx", "kms", "KM")
def f():
    """Fit KM, kmviz.km and KolmogorovModel."""
    # a comment on km and kmviz.kmc
'''


def test_the_family_rule_sees_what_it_should(tmp_path):
    """The checker itself: it flags the ways generic code could name a family and lets data
    names and prose pass."""
    bad = tmp_path / "bad.py"
    bad.write_text(BAD_SOURCE)
    found = family_mentions(bad)
    assert "line 2: imports kmviz.km.estimator" in found
    assert "line 3: imports kmviz.kmc.telemetry" in found
    assert "line 4: imports kmviz.ocmf" in found
    assert "line 5: the family name 'km'" in found
    assert "line 6: the family module 'kmviz.ocmf.estimator:OneClassMF'" in found
    assert "line 7: the estimator class 'KolmogorovModel'" in found
    assert "line 8: the estimator class KernelMatrixCompletion" in found
    assert "line 9: the estimator class GeneralizedFM" in found
    assert not any(f.startswith("line 1:") for f in found)
    good = tmp_path / "good.py"
    good.write_text(GOOD_SOURCE)
    assert family_mentions(good) == []


def test_family_packages_come_from_the_registry():
    assert {"kmviz.km", "kmviz.kmc", "kmviz.ocmf", "kmviz.gfm"} <= FAMILY_PACKAGES
    generic = {_id(p) for p in GENERIC}
    assert "kmviz/runs.py" in generic or (KMVIZ / "runs").is_dir()
    assert {"app.py", "kmviz/cli.py", "kmviz/data/catalogue.py", "kmviz/viz/convergence.py",
            "kmviz/ui/views.py", "app_pages/home.py"} <= generic
    assert "kmviz/families.py" not in generic
    assert not any(p.startswith("kmviz/ui/families/") for p in generic)


def test_pages_are_not_in_a_folder_streamlit_lists_by_itself():
    assert not (ROOT / "pages").exists()

    listed = {p.path for f in families.all_families() for p in f.explore if not p.is_function}
    on_disk = {f"app_pages/{p.name}" for p in (ROOT / "app_pages").glob("*.py")}
    shared = {f"app_pages/{n}.py" for n in SHARED_PAGES}
    assert listed | shared == on_disk  # every page is reachable, none is orphaned
