"""The benchmarks' index, generated from their docstrings: every ``bench/AREA/*.py`` by area
(a folder per family, plus the relation miner, Dask, the app and the data layer), with the
first sentence of its docstring. The modules the areas share stay in ``bench/`` itself:
``_common`` (the parser, tables, ``--json``), ``_shapes`` (MovieLens-shaped data),
``_peers`` (the peers' adapters and the ranking metrics), ``_ocmf_protocol`` and
``_threads_env``; each script puts ``bench/`` on its path to import them.

    python bench/index.py            print the index
    python bench/index.py --write    put it into bench/README.md, between its markers
    python bench/index.py --check    exit 1 if bench/README.md's index is not current
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
README = HERE / "README.md"
START, END = "<!-- index:start (python bench/index.py --write) -->", "<!-- index:end -->"

#: Words a sentence does not end at ("Alg. 2", "Figs. 3.5", "e.g. this").
ABBREVIATIONS = {"Alg", "Algs", "Fig", "Figs", "Sec", "Secs", "Eq", "eq", "eqs", "Thm", "vs",
                 "e.g", "i.e", "g", "e", "cf", "No", "Ch", "al", "approx"}

#: The area folders, in the index's order, with their headings.
AREAS = {
    "km": "KM (the paper's tables and scaling)",
    "miner": "The relation miner",
    "kmc": "Kernel MC",
    "ocmf": "One-class MF",
    "gfm": "Generalized FM",
    "similarity": "Similarity learning",
    "dask": "Dask",
    "app": "The app",
    "data": "Data, defaults and memory bounds",
}


def summary(path: Path) -> str:
    """The first sentence of the script's docstring (one line), or a note that it has none."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    text = " ".join(doc.split("\n\n")[0].split())
    if not text:
        return "(no docstring)"
    for end in re.finditer(r"(?<=[a-z0-9)\]`'])\.(\s|$)", text):
        word = re.search(r"(\w+)$", text[:end.start()])
        if word is None or word.group(1) not in ABBREVIATIONS:
            return text[:end.start() + 1].replace("|", "\\|")
    return text.replace("|", "\\|")


def scripts() -> list[Path]:
    """Every benchmark script: the ``*.py`` of the area folders, shared ``_*`` modules aside."""
    return sorted(p for p in HERE.glob("*/*.py") if not p.name.startswith("_"))


def stray() -> list[Path]:
    """Scripts outside an area folder, or in a folder the index does not know."""
    loose = [p for p in HERE.glob("*.py") if not p.name.startswith("_") and p.name != "index.py"]
    return sorted(loose + [p for p in scripts() if p.parent.name not in AREAS])


def render() -> str:
    groups: dict[str, list[str]] = {name: [] for name in AREAS.values()}
    for path in scripts():
        if path.parent.name in AREAS:
            groups[AREAS[path.parent.name]].append(
                f"| `{path.parent.name}/{path.name}` | {summary(path)} |")
    out = [START, ""]
    for name, rows in groups.items():
        if rows:
            out += [f"**{name}**", "", "| script | what it measures |", "|---|---|", *rows, ""]
    out.append(END)
    return "\n".join(out)


def current() -> str | None:
    text = README.read_text(encoding="utf-8")
    if START not in text or END not in text:
        return None
    return text[text.index(START):text.index(END) + len(END)]


def main() -> int:
    index = render()
    if "--check" in sys.argv:
        ok = current() == index
        print("bench/README.md's index is current." if ok else
              "bench/README.md's index is stale: run python bench/index.py --write.")
        return 0 if ok else 1
    if "--write" in sys.argv:
        text = README.read_text(encoding="utf-8")
        old = current()
        text = text.replace(old, index) if old else text.rstrip() + "\n\n## Index\n\n" + \
            index + "\n"
        README.write_text(text, encoding="utf-8")
        print(f"wrote the index of {len(scripts())} scripts into {README}")
        return 0
    print(index)
    return 0


if __name__ == "__main__":
    sys.exit(main())
