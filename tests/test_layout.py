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


# ------------------------------------------------------------------------ import cycles
def _module_names(root: Path, package: str) -> dict:
    """Dotted module name -> (path, the package its relative imports start from) of every
    ``.py`` file of the package ``package`` found at ``root / package``."""
    out = {}
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            out[".".join(parts[:-1])] = (path, ".".join(parts[:-1]))
        else:
            out[".".join(parts)] = (path, ".".join(parts[:-1]))
    return out


def import_graph(root: Path, package: str = "kmviz") -> dict:
    """The imports between the modules of ``package`` (under ``root``), read from the source:
    module -> {imported module: first line}. Module-level imports and those inside functions
    alike (a function-level import is a cycle deferred, not removed), and
    ``importlib.import_module("literal")``.

    ``from pkg import name`` points at the module ``pkg.name`` when there is one, else at
    ``pkg``; ``import a.b.c`` at the deepest of ``a.b.c``, ``a.b`` ... that is a module. An
    import of a module's own enclosing package (``from . import CONSTANT``) is no edge:
    Python runs the package's ``__init__`` before any module in it, so that edge orders
    nothing (every module has it)."""
    modules = _module_names(root, package)

    def known(name):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for name, (path, base_package) in modules.items():
        edges = graph.setdefault(name, {})

        def add(target, line, name=name, edges=edges):
            target = known(target)
            if target and target != name and not name.startswith(target + "."):
                edges.setdefault(target, line)

        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    add(alias.name, node.lineno)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = base_package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    add(full if full in modules else base, node.lineno)
            elif (isinstance(node, ast.Call) and node.args
                  and isinstance(node.args[0], ast.Constant)
                  and isinstance(node.args[0].value, str)
                  and getattr(node.func, "attr", getattr(node.func, "id", "")) ==
                  "import_module"):
                add(node.args[0].value, node.lineno)
    return graph


def import_cycles(graph: dict) -> list[list[str]]:
    """One cycle (``[a, b, ..., a]``) per strongly connected group of modules that import
    each other, shortest first within the group, groups sorted by their first module."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def connect(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    cycles = []
    for group in groups:
        start = min(group)
        paths, seen = {start: [start]}, {start}
        frontier = [start]
        cycle = None
        while frontier and cycle is None:  # breadth first: the shortest way back to start
            nxt = []
            for v in frontier:
                for w in sorted(graph[v]):
                    if w == start:
                        cycle = paths[v] + [start]
                        break
                    if w in group and w not in seen:
                        seen.add(w)
                        paths[w] = paths[v] + [w]
                        nxt.append(w)
                if cycle:
                    break
            frontier = nxt
        cycles.append(cycle)
    return sorted(cycles)


def describe_cycle(graph: dict, cycle: list[str]) -> str:
    """``a (line 3) -> b (line 40) -> a``: each module with the line of its import of the
    next."""
    steps = [f"{a} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])]
    return " -> ".join(steps + [cycle[-1]])


@pytest.fixture(scope="module")
def kmviz_graph():
    """The import graph of kmviz/ (parsing every file takes seconds: made once)."""
    return import_graph(ROOT)


def test_kmviz_has_no_import_cycle(kmviz_graph):
    """No module of kmviz imports, directly or through others, a module that imports it
    back: not at module level and not inside a function. A family's warm-up is reached
    through the registry (``Family.compile_kernels``), the registry never through the
    data catalogue."""
    graph = kmviz_graph
    new = import_cycles(graph)
    assert not new, "import cycles in kmviz (fix: import in one direction only; a " \
                    "function-level import does not count as a fix):\n" + \
                    "\n".join(describe_cycle(graph, c) for c in new)


def test_the_cycle_finder_sees_module_and_function_level_cycles(tmp_path):
    pkg = tmp_path / "toy"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from .a import A\n",
        "a.py": "A = 1\nfrom . import b\n",                   # a -> b (module level)
        "b.py": "def f():\n    from .sub.c import C\n",      # b -> sub.c (in a function)
        "sub/__init__.py": "",
        "sub/c.py": "import toy.a\nC = 2\n",                  # sub.c -> a: a -> b -> c -> a
        "sub/d.py": "from .. import A\nfrom . import c\n",    # d -> toy (its ancestor: no edge)
        "e.py": "import importlib\nimportlib.import_module('toy.f')\n",
        "f.py": "def g():\n    from toy import e\n",          # e <-> f (literal import_module)
        "g.py": "from toy import sub\nfrom .sub import d\n",  # no cycle
    }
    for name, text in files.items():
        (pkg / name).write_text(text)
    graph = import_graph(tmp_path, "toy")
    assert graph["toy.sub.d"] == {"toy.sub.c": 2}
    assert graph["toy.g"] == {"toy.sub": 1, "toy.sub.d": 2}
    cycles = import_cycles(graph)
    assert cycles == [["toy.a", "toy.b", "toy.sub.c", "toy.a"], ["toy.e", "toy.f", "toy.e"]]
    assert describe_cycle(graph, cycles[0]) == \
        "toy.a (line 2) -> toy.b (line 2) -> toy.sub.c (line 1) -> toy.a"


def _recording_warm_up(monkeypatch, with_cluster: bool):
    """A warm-up module (put in sys.modules) that records which of its functions ran."""
    import types

    module = types.ModuleType("kmviz_layout_test_warmup")
    module.calls = []
    module.compile_kernels = lambda: module.calls.append("compile_kernels") or 1.5
    if with_cluster:
        module.compile_cluster_kernels = \
            lambda: module.calls.append("compile_cluster_kernels") or 2.5
    monkeypatch.setitem(__import__("sys").modules, module.__name__, module)
    return module


@pytest.mark.parametrize("with_cluster", [True, False])
def test_family_compile_kernels_runs_the_registered_warm_up(monkeypatch, with_cluster):
    import dataclasses

    module = _recording_warm_up(monkeypatch, with_cluster)
    fam = dataclasses.replace(families.get("km"), warmup=module.__name__)
    assert fam.compile_kernels() == 1.5
    assert fam.compile_kernels(cluster=True) == (2.5 if with_cluster else 1.5)
    assert module.calls == ["compile_kernels", "compile_cluster_kernels" if with_cluster
                            else "compile_kernels"]
    assert dataclasses.replace(fam, warmup="").compile_kernels(cluster=True) == 0.0


@pytest.mark.parametrize("family, module", [("km", "kmviz.km._dist"),
                                            ("ocmf", "kmviz.ocmf._dist"),
                                            ("similarity", "kmviz.similarity._dist")])
def test_distributed_fit_code_warms_up_through_the_registry(monkeypatch, family, module):
    """What a backend runs before a fit's blocks go to the workers (``backend.warm(name,
    _warm)``) is the warm-up the registry names for the family, cluster kernels included."""
    import dataclasses
    import importlib

    warm = _recording_warm_up(monkeypatch, with_cluster=True)
    monkeypatch.setitem(families._FAMILIES, family,
                        dataclasses.replace(families.get(family), warmup=warm.__name__))
    importlib.import_module(module)._warm()
    assert warm.calls == ["compile_cluster_kernels"]


# ------------------------------------------------------------------------ the family template
def _literal_blocks(doc: str) -> list[list[str]]:
    """The indented ``::`` blocks of a docstring, as lists of their non-empty lines."""
    import inspect

    blocks, current = [], None
    for line in inspect.cleandoc(doc).splitlines():
        if line.rstrip().endswith("::"):
            current = []
            blocks.append(current)
        elif current is not None and (line.startswith("    ") or not line.strip()):
            if line.strip():
                current.append(line.strip())
        elif current is not None and current:
            current = None
    return blocks


def family_template() -> tuple[dict, list[tuple[str, str]]]:
    """From the ``kmviz.families`` docstring: role -> (who needs it, what it is), and the
    moves still to do as ``(old, new)``."""
    blocks = _literal_blocks(families.__doc__)
    roles = {}
    for line in next(b for b in blocks if b and b[0].startswith("estimator ")):
        name, _, text = line.partition(" ")
        who, _, what = text.strip().partition(":")
        roles[name] = (who.strip(), what.strip())
    listed = next((b for b in blocks if b and "->" in b[0]), [])  # none left: all done
    moves = [tuple(part.strip() for part in line.split("->")) for line in listed]
    return roles, moves


def _family_dir(fam) -> Path:
    return ROOT / Path(*fam.estimator.partition(":")[0].split(".")[:-1])


def _has_module(folder: Path, name: str) -> bool:
    return (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()


def _uses_numba(folder: Path) -> bool:
    return any(mod.split(".")[0] == "numba" for p in folder.rglob("*.py")
               for mod, _ in _imports(p, "x"))


def _several_methods(fam) -> bool:
    return any((name in ("solver", "method") or name.endswith("_solver"))
               and len([o for o in spec.options if o is not None]) > 1
               for name, spec in fam.constraints().items())


def _needs(fam, who: str) -> bool:
    folder = _family_dir(fam)
    rules = {"every family": lambda: True,
             "with Numba code": lambda: _uses_numba(folder),
             "with several methods": lambda: _several_methods(fam),
             "distributed families": lambda: fam.distributed}
    assert who in rules, f"the template names an unknown condition {who!r}"
    return rules[who]()


def _exists(target: str) -> bool:
    """A dotted module or package of the repo, or a path in it."""
    if "/" in target:
        return (ROOT / target).exists()
    parts = target.split(".")
    return _has_module(ROOT / Path(*parts[:-1]), parts[-1])


KMVIZ_FAMILIES = [f for f in families.all_families()
                  if f.estimator.startswith("kmviz.") and _family_dir(f).is_dir()]


def test_the_template_is_written_in_the_registry_docstring():
    roles, moves = family_template()
    assert {"estimator", "_kernels", "_reference", "_state", "solvers", "_dist", "analysis",
            "figures", "warmup", "telemetry", "suggested"} <= set(roles)
    assert all(len(m) == 2 and all(m) for m in moves)
    assert {f.name for f in KMVIZ_FAMILIES} >= {"km", "kmc", "ocmf", "gfm", "similarity"}


def test_every_family_package_follows_the_template_or_lists_the_move():
    """Each role a family needs is its module (or package) of that name, or a move still to
    do in the ``kmviz.families`` docstring names it as the target; so is the Explore glue
    ``kmviz/ui/families/<family>.py``."""
    roles, moves = family_template()
    planned = {new for _, new in moves}
    missing = []
    for fam in KMVIZ_FAMILIES:
        package = ".".join(_family_dir(fam).relative_to(ROOT).parts)
        for role, (who, what) in roles.items():
            target = f"{package}.{role}"
            if _needs(fam, who) and not _exists(target) and target not in planned:
                missing.append(f"{target} ({what})")
        glue = f"kmviz.ui.families.{fam.name}"
        if not _exists(glue) and glue not in planned:
            missing.append(f"{glue} (the Explore glue)")
    assert missing == [], ("family packages off the template (fix: add the module, or list "
                           "the move in the kmviz.families docstring):\n" + "\n".join(missing))


def test_the_moves_still_to_do_are_still_to_do():
    """A move done (its target exists, its source is gone) must leave the list."""
    _, moves = family_template()
    done = [f"{old} -> {new}" for old, new in moves if _exists(new) or not _exists(old)]
    assert done == [], ("moves listed in the kmviz.families docstring that are done or name "
                        "nothing (fix: remove them from the list):\n" + "\n".join(done))


def test_no_family_module_is_named_kernels_unless_its_move_is_listed():
    """"kernels" means the Numba kernels (``_kernels``) in every family; another module of
    that name (KM's Numba package, Kernel MC's RKHS kernels) is a move still to do."""
    _, moves = family_template()
    sources = {old for old, _ in moves}
    odd = [f"{'.'.join(_family_dir(f).relative_to(ROOT).parts)}.{name}"
           for f in KMVIZ_FAMILIES for name in ("kernels", "_numba")
           if _has_module(_family_dir(f), name)]
    assert [m for m in odd if m not in sources] == []
