"""The layout rules of the house, checked on the source: ui/ is glue without hidden import
loops, and the generic modules never import a model family's package."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UI = ROOT / "kmviz" / "ui"
#: Modules and pages that must work for every family, so never import one.
GENERIC = [*(UI / n for n in ("state.py", "datasets.py", "runs.py", "training.py", "forms.py",
                              "views.py", "errors.py", "text.py")),
           ROOT / "kmviz" / "cli.py", *sorted((ROOT / "kmviz" / "runs").glob("*.py")),
           ROOT / "kmviz" / "_base.py",
           ROOT / "kmviz" / "_params.py", ROOT / "kmviz" / "trace.py", ROOT / "app.py",
           *(ROOT / "app_pages" / n for n in ("home.py", "data.py", "train.py", "runs.py",
                                             "convergence.py")),
           *sorted((ROOT / "kmviz" / "viz").glob("*.py"))]
FAMILY_PACKAGES = {"kmviz.km", "kmviz.kmc", "kmviz.ocmf", "kmviz.gfm"}


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


@pytest.mark.parametrize("path", GENERIC, ids=lambda p: str(p.relative_to(ROOT)))
def test_generic_code_imports_no_family_package(path):
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1]) or "app"
    bad = [mod for mod, _ in _imports(path, package)
           if any(mod == f or mod.startswith(f + ".") for f in FAMILY_PACKAGES)]
    assert bad == [], f"{path.name} imports {bad}; go through kmviz.families instead"


def test_pages_are_not_in_a_folder_streamlit_lists_by_itself():
    assert not (ROOT / "pages").exists()
    from kmviz import families

    listed = {p.path for f in families.all_families() for p in f.explore}
    on_disk = {f"app_pages/{p.name}" for p in (ROOT / "app_pages").glob("*.py")}
    shared = {f"app_pages/{n}.py" for n in ("home", "data", "train", "runs", "convergence")}
    assert listed | shared == on_disk  # every page is reachable, none is orphaned
