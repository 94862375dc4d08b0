"""Unpacking gzip files and zip archives safely (:func:`gunzipped`, :func:`unzipped`):
sizes declared inside an archive are checked against the expansion limit before anything
is extracted, the bytes written are counted while streaming (over nested archives
together), and errors name the archive and the member. Loading what they hold is the
dispatcher's (:func:`kmviz.data.loaders.load_zip`, :func:`~kmviz.data.loaders.load_gzip`):
this module imports no reader."""

from __future__ import annotations

import contextlib
import contextvars
import errno
import gzip
import re
import stat
import tempfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from ...exceptions import DataError, FileFormatError, FileTooLargeError
from ..ratings import Ratings
from .bounds import ExpansionGuard
from .checks import (
    MAX_EXPANDED_ENV,
    MAX_MB_ENV,
    _BLOCK,
    _format_size,
    check_file,
    max_expanded_bytes,
)


#: Most members a zip archive may hold, and most nested archives (a zip in a zip ...).
_MAX_MEMBERS = 10_000
_MAX_NESTING = 3
#: Longest file or folder name in an archive (bytes of UTF-8, as most file systems allow).
_MAX_NAME_BYTES = 255

# The nesting depth of archives being unpacked in this context (zip in gz in zip ...).
_NESTING = contextvars.ContextVar("kmviz_archive_nesting", default=0)
# The expansion budget of the outermost archive, shared by the archives inside it.
_BUDGET = contextvars.ContextVar("kmviz_archive_budget", default=None)


class _Budget:
    """Bytes an archive and the archives inside it may still expand to."""

    def __init__(self, limit: int, path: Path, max_ratio=None):
        self.limit, self.used, self.path = limit, 0, path
        # the ratio to the outermost archive and the memory of the parse, as bytes come
        self.guard = ExpansionGuard(path.stat().st_size, max_ratio)

    def refusal(self, problem: str, path: Path) -> FileTooLargeError:
        return FileTooLargeError(
            problem, path=path, expected=f"at most {_format_size(self.limit)} once unpacked",
            fix=f"load the data file itself, or a smaller sample; or raise the limit "
                f"(max_expanded_bytes= or {MAX_EXPANDED_ENV}; max_bytes= or {MAX_MB_ENV} "
                "sets both the file and the expansion limit)")

    def add(self, n: int, path: Path, verb: str) -> None:
        """Count ``n`` more bytes written while unpacking ``path``."""
        self.used += n
        nested = "" if path == self.path else f" (inside {self.path.name})"
        if self.used > self.limit:
            raise self.refusal(f"{verb} more than {_format_size(self.limit)}{nested}, the "
                               "limit on what an archive expands to", path)
        problem = self.guard.problem(self.used)
        if problem is not None:
            raise FileTooLargeError(
                f"the archive{nested} {problem}", path=path,
                expected="an archive of a data file of a size this machine can load",
                fix="load a smaller sample; if the data is this repetitive (a very sparse "
                    "0/1 table), pass max_expansion_ratio= or give it as a basket file")


@contextlib.contextmanager
def _budget(path: Path, max_bytes, max_expanded, max_ratio=None):
    """The shared expansion budget: made by the outermost archive, reused inside it."""
    current = _BUDGET.get()
    if current is not None:
        yield current
        return
    budget = _Budget(max_expanded_bytes(max_bytes, max_expanded), path, max_ratio)
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)


@contextlib.contextmanager
def _nested(path: Path):
    """Count archives unpacked inside one another (a zip in a zip ...), refusing deep ones."""
    depth = _NESTING.get()
    if depth >= _MAX_NESTING:
        raise FileFormatError(
            f"is an archive nested more than {_MAX_NESTING} deep in other archives", path=path,
            expected="an archive of data files", fix="unpack the inner archives first")
    token = _NESTING.set(depth + 1)
    try:
        yield
    finally:
        _NESTING.reset(token)


def _relocate(e: DataError, tmp: str, shown: str, single: Path | None = None) -> DataError:
    """``e`` with a path inside the temporary folder ``tmp`` named after the archive."""
    inner = e.path
    if e.path and e.path.startswith(tmp):
        if single is not None and Path(e.path) == single:
            inner = shown
        else:
            inner = f"{shown}:{Path(e.path).relative_to(tmp).as_posix()}"
    elif not e.path:
        inner = shown
    return type(e)(e.problem, path=inner, line=e.line, expected=e.expected, fix=e.fix)


class Unpacked:
    """What an archive was unpacked to: ``target`` (the data file or MovieLens folder to
    load), ``limit`` (the size limit of that file: the archive's expansion budget) and
    ``tmp`` (the temporary folder, removed when the block ends)."""

    def __init__(self, target: Path, limit: int, tmp: str, single: bool):
        self.target, self.limit, self.tmp, self.single = target, limit, tmp, single

    def finish(self, ratings: Ratings, path: Path) -> Ratings:
        """``ratings`` loaded from :attr:`target`, named after the archive ``path``, not
        the temporary folder."""
        if self.single and ratings.name == self.target.name:
            ratings.name = path.name
        else:
            ratings.name = str(ratings.name).replace(Path(self.tmp).name, path.stem)
        ratings.source = str(path)
        return ratings


@contextlib.contextmanager
def gunzipped(path, *, max_bytes=None, max_expanded_bytes=None, max_expansion_ratio=None):
    """Decompress a gzip file into a temporary folder and yield an :class:`Unpacked`; a
    :class:`~kmviz.exceptions.DataError` raised in the block that names the temporary file
    is raised again naming the archive. The limits are those of
    :func:`kmviz.data.loaders.load_gzip`."""
    path = check_file(path, max_bytes=max_bytes)
    inner = path.name[:-3] if path.name.lower().endswith(".gz") else path.name + ".txt"
    with _nested(path), _budget(path, max_bytes, max_expanded_bytes,
                                max_expansion_ratio) as budget, \
            tempfile.TemporaryDirectory(prefix="kmviz-gz-") as tmp:
        target = Path(tmp) / (inner or "data")
        _gunzip(path, target, budget)
        try:
            yield Unpacked(target, budget.limit, tmp, single=True)
        except DataError as e:
            raise _relocate(e, tmp, str(path), single=target) from None


@contextlib.contextmanager
def unzipped(path, *, max_bytes=None, max_expanded_bytes=None, max_expansion_ratio=None):
    """Extract a zip archive safely into a temporary folder and yield an :class:`Unpacked`
    whose target is its MovieLens folder or single data file; errors as in
    :func:`gunzipped`. The checks and limits are those of
    :func:`kmviz.data.loaders.load_zip`."""
    path = check_file(path, max_bytes=max_bytes)
    with _nested(path), _budget(path, max_bytes, max_expanded_bytes,
                                max_expansion_ratio) as budget, \
            tempfile.TemporaryDirectory(prefix="kmviz-zip-") as tmp:
        _extract(path, Path(tmp), budget)
        target = _pick_zip_target(Path(tmp), path)
        try:
            yield Unpacked(target, budget.limit, tmp, single=False)
        except DataError as e:
            raise _relocate(e, tmp, str(path)) from None


def _gunzip(path: Path, target: Path, budget: _Budget) -> None:
    try:
        with gzip.open(path, "rb") as src, open(target, "wb") as out:
            while chunk := src.read(_BLOCK):
                # counted as it streams: the size in the header is only a claim
                budget.add(len(chunk), path, "decompresses to")
                out.write(chunk)
    except (OSError, EOFError, zlib.error) as e:
        reason = "it is truncated" if isinstance(e, EOFError) else str(e) or type(e).__name__
        raise FileFormatError(f"is not a readable gzip file ({reason})", path=path,
                              expected="a complete .gz file",
                              fix="compress the file again (gzip FILE), or upload it "
                                  "uncompressed") from None


_ZIP_FIX = "re-create the archive from the data folder (for example with zip -r), " \
           "without a password"


def _extract(path: Path, dest: Path, budget: _Budget):
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
            NotImplementedError) as e:
        raise FileFormatError(f"is not a valid zip archive ({e})", path=path,
                              expected="a .zip file", fix="re-create the archive") from None
    with archive:
        members = archive.infolist()
        if len(members) > _MAX_MEMBERS:
            raise FileFormatError(f"holds {len(members):,} members", path=path,
                                  expected=f"at most {_MAX_MEMBERS:,} files",
                                  fix="zip only the data files")
        targets = _check_members(members, dest, path, budget)
        for m, target in targets:
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(m) as src, open(target, "wb") as out:
                    while chunk := src.read(_BLOCK):
                        # declared sizes can be forged: count what is written
                        budget.add(len(chunk), path, "the archive extracts to")
                        out.write(chunk)
            except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError,
                    NotImplementedError, ValueError) as e:
                raise FileFormatError(
                    f"member {m.filename!r} cannot be read ({e})", path=path,
                    expected="an intact, unencrypted zip archive", fix=_ZIP_FIX) from None
            except OSError as e:
                if e.errno == errno.ENOSPC:
                    raise DataError(f"no disk space left to extract member {m.filename!r}",
                                    path=path, fix="free disk space, or unpack the archive "
                                                   "and load its data file") from None
                raise FileFormatError(
                    f"member {m.filename!r} cannot be extracted "
                    f"({e.strerror or type(e).__name__})", path=path,
                    expected="plain file and folder names", fix=_ZIP_FIX) from None


def _check_members(members, dest: Path, path: Path, budget: _Budget) -> list:
    """(member, target) pairs to extract, after every check that needs no extraction."""
    declared = 0
    targets, files, folders = [], {}, set()
    for m in members:
        target = _safe_member(m, dest, path)
        if target is None:
            continue
        if m.flag_bits & 0x1:
            raise FileFormatError(f"member {m.filename!r} is encrypted", path=path,
                                  expected="an archive without a password", fix=_ZIP_FIX)
        parts = target.relative_to(dest).parts
        longest = max(parts, key=lambda p: len(p.encode("utf-8", "replace")))
        if len(longest.encode("utf-8", "replace")) > _MAX_NAME_BYTES:
            raise FileFormatError(
                f"member {m.filename[:60]!r}... has a name of {len(longest)} characters",
                path=path, expected=f"file and folder names of at most {_MAX_NAME_BYTES} "
                                    "bytes", fix="shorten the names and re-create the archive")
        key = "/".join(parts)
        if key in files:
            raise FileFormatError(f"member {m.filename!r} appears twice", path=path,
                                  expected="each file once", fix=_ZIP_FIX)
        files[key] = m
        folders.update("/".join(parts[:k]) for k in range(1, len(parts)))
        declared += m.file_size
        targets.append((m, target))
    clash = sorted(set(files) & folders)
    if clash:
        raise FileFormatError(
            f"member {clash[0]!r} is both a file and a folder", path=path,
            expected="each name either a file or a folder", fix=_ZIP_FIX)
    if budget.used + declared > budget.limit:
        nested = "" if path == budget.path else \
            f" (with {_format_size(budget.used)} unpacked from {budget.path.name} before it)"
        raise budget.refusal(f"the archive would extract to {_format_size(declared)}{nested}, "
                             f"over the limit of {_format_size(budget.limit)}", path)
    problem = budget.guard.problem(budget.used + declared)
    if problem is not None:  # the sizes the archive declares: refused before extracting
        raise FileTooLargeError(
            f"the archive declares that it {problem}", path=path,
            expected="an archive of a data file of a size this machine can load",
            fix="load a smaller sample; if the data is this repetitive (a very sparse 0/1 "
                "table), pass max_expansion_ratio= or give it as a basket file")
    return targets


def _safe_member(member: zipfile.ZipInfo, dest: Path, path: Path) -> Path | None:
    """The extraction target of ``member``, None for directories, or an error if unsafe."""
    name = member.filename
    pure = PurePosixPath(name.replace("\\", "/"))
    mode = member.external_attr >> 16
    if pure.is_absolute() or ".." in pure.parts or re.match(r"^[A-Za-z]:", name) \
            or stat.S_ISLNK(mode):
        raise FileFormatError(f"member {name!r} points outside the archive", path=path,
                              expected="relative member paths without '..' or links",
                              fix="re-create the archive from the data folder")
    parts = [p for p in pure.parts if p not in ("", ".")]
    if member.is_dir() or not parts or parts[0] == "__MACOSX" or parts[-1].startswith("."):
        return None
    return dest.joinpath(*parts)


def _pick_zip_target(root: Path, path: Path) -> Path:
    """The MovieLens directory or the single data file inside an extracted archive."""
    files = [p for p in sorted(root.rglob("*")) if p.is_file()]
    for marker in ("u.data", "ratings.dat", "ratings.csv"):
        hits = [p for p in files if p.name == marker]
        if hits:
            return hits[0].parent if marker == "u.data" else hits[0]
    data = [p for p in files if p.suffix.lower() not in (".txt", ".md", ".html", ".pdf")
            and p.name.lower() not in ("readme", "license")]
    if len(data) == 1:
        return data[0]
    listing = ", ".join(str(p.relative_to(root)) for p in files[:10]) or "nothing"
    raise FileFormatError(
        f"holds {listing}", path=path,
        expected="a MovieLens folder (u.data, ratings.dat or ratings.csv) or a single data file",
        fix="zip one ratings file, or the MovieLens folder")
