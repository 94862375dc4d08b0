"""The loader modules import one another in one direction (issue 31, item 4): no cycle,
counting imports inside functions too; the archives unpack and the dispatcher loads."""

import ast
from pathlib import Path

LOADERS = Path(__file__).resolve().parents[2] / "kmviz" / "data" / "loaders"


def _graph():
    graph = {}
    for path in LOADERS.glob("*.py"):
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    deps.add(node.module.split(".")[0])
                else:  # from . import x
                    deps.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.startswith("kmviz.data.loaders."):
                deps.add(node.module.split(".")[3])
        graph[path.stem] = deps - {path.stem}
    return graph


def test_the_loader_modules_import_without_a_cycle():
    graph = _graph()
    assert "dispatch" in graph["__init__"] and "archives" in graph["dispatch"]
    state = {}

    def visit(node, stack):
        assert state.get(node) != "open", f"import cycle: {' -> '.join(stack + [node])}"
        if state.get(node) == "done":
            return
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if nxt != "__init__":
                visit(nxt, stack + [node])
        state[node] = "done"

    for node in graph:
        visit(node, [])


def test_the_archive_module_imports_no_reader():
    readers = {"dispatch", "delimited", "basket", "wide", "movielens", "matrix_market"}
    assert not (_graph()["archives"] & readers)
