"""A minimal PEP 517 build backend for this fixture: a pure-Python wheel from pyproject.toml.

kmviz's test environment may have no ``wheel`` package (setuptools < 70 needs it for
``bdist_wheel``) and no network for build isolation, so the fixture builds itself: the
package's files, METADATA, WHEEL, entry_points.txt and RECORD, zipped. Only what ``pip
install`` of this fixture needs.
"""

from __future__ import annotations

import base64
import hashlib
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _dist_info(project: dict) -> dict[str, str]:
    meta = project["project"]
    lines = ["Metadata-Version: 2.1", f"Name: {meta['name']}", f"Version: {meta['version']}",
             f"Summary: {meta.get('description', '')}"]
    lines += [f"Requires-Dist: {r}" for r in meta.get("dependencies", [])]
    entry_points = []
    for group, points in meta.get("entry-points", {}).items():
        entry_points.append(f"[{group}]")
        entry_points += [f"{name} = {value}" for name, value in points.items()]
        entry_points.append("")
    return {"METADATA": "\n".join(lines) + "\n",
            "WHEEL": "Wheel-Version: 1.0\nGenerator: toy_build\nRoot-Is-Purelib: true\n"
                     "Tag: py3-none-any\n",
            "entry_points.txt": "\n".join(entry_points)}


def _names(project: dict) -> tuple[str, str]:
    meta = project["project"]
    return meta["name"].replace("-", "_"), meta["version"]


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    project = _project()
    name, version = _names(project)
    folder = Path(metadata_directory) / f"{name}-{version}.dist-info"
    folder.mkdir(parents=True, exist_ok=True)
    for fname, text in _dist_info(project).items():
        (folder / fname).write_text(text, encoding="utf-8")
    return folder.name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = _project()
    name, version = _names(project)
    info = f"{name}-{version}.dist-info"
    files = {p.relative_to(ROOT).as_posix(): p.read_bytes()
             for package in project["tool"]["toy_build"]["packages"]
             for p in sorted((ROOT / package).rglob("*.py"))}
    files.update({f"{info}/{k}": v.encode("utf-8") for k, v in _dist_info(project).items()})
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode("utf-8")
    wheel = f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(Path(wheel_directory) / wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    return wheel
