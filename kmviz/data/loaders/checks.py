"""File checks shared by every reader: the size limit, the encoding, the one pass over a
file in :data:`_BLOCK`-sized blocks that finds empty, binary or undecodable files before
anything is parsed (:class:`_Text`), and gzip detection."""

from __future__ import annotations

import codecs
import io
import itertools
import os
import stat
from pathlib import Path

import numpy as np

from ...exceptions import (
    EmptyDataError,
    FileFormatError,
    FileTooLargeError,
    InvalidParameterError,
    MissingFileError,
)


DEFAULT_MAX_MB = 500
MAX_MB_ENV = "KMVIZ_MAX_UPLOAD_MB"
#: An uploaded archive (zip, gzip, nested ones together) may expand to at most this many
#: times the upload limit (the app passes it as ``max_expanded_bytes``): ratings text
#: compresses 3-4 times, so an archive near the limit still loads, while a small archive of
#: a huge file is refused while it streams.
EXPANSION_FACTOR = 4
MAX_EXPANDED_ENV = "KMVIZ_MAX_EXPANDED_MB"
#: Longest line of a text file, in bytes (Python's csv module refuses longer fields).
MAX_LINE_BYTES = 128 * 1024

# ASCII unit separator: stands in for MovieLens' two-character '::' so pandas' C parser can
# read .dat files (multi-character separators force its much slower Python engine).
_UNIT_SEP = "\x1f"

#: Bytes read at a time when checking a file.
_BLOCK = 1 << 20

_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"


def max_upload_bytes(max_bytes=None) -> int:
    """The size limit in bytes: ``max_bytes`` if given, else ``$KMVIZ_MAX_UPLOAD_MB``, else 500 MB.

    The same limit caps a file on disk, the uncompressed size of a gzip stream and the total
    uncompressed size of a zip archive's members.

    Raises
    ------
    InvalidParameterError
        If the limit or the environment variable is not a positive number.
    """
    given = _given_limit(max_bytes, "max_bytes", MAX_MB_ENV)
    return DEFAULT_MAX_MB * 1024 * 1024 if given is None else given


def max_expanded_bytes(max_bytes=None, max_expanded=None) -> int:
    """How many bytes an archive may expand to, nested archives counted together:
    ``max_expanded`` if given, else ``$KMVIZ_MAX_EXPANDED_MB``, else the size limit of a
    file (:func:`max_upload_bytes` of ``max_bytes``: an archive never yields more text than
    a file could hold). The app allows :data:`EXPANSION_FACTOR` times its upload limit.

    Raises
    ------
    InvalidParameterError
        If the limit or the environment variable is not a positive number.
    """
    given = _given_limit(max_expanded, "max_expanded_bytes", MAX_EXPANDED_ENV)
    return max_upload_bytes(max_bytes) if given is None else given


def _given_limit(value, parameter: str, variable: str) -> int | None:
    """A byte limit: ``value`` (the parameter ``parameter``) if not None, checked to be a
    positive number; else the environment variable ``variable``, in megabytes; None when
    neither is set (a blank variable is not set)."""
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) \
                or not value > 0:
            raise InvalidParameterError(f"The {parameter!r} parameter must be a positive "
                                        f"number. Got {value!r} instead.")
        return int(value)
    env = os.environ.get(variable)
    if env is None or not env.strip():
        return None
    try:
        mb = float(env)
    except ValueError:
        mb = float("nan")
    if not mb > 0 or not np.isfinite(mb):
        raise InvalidParameterError(
            f"The environment variable {variable} must be a positive number of megabytes. "
            f"Got {env!r} instead.")
    return int(mb * 1024 * 1024)


def _format_size(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB" if n >= 1024 * 1024 else f"{n} bytes"


def _too_large(what: str, size: int, limit: int, path) -> FileTooLargeError:
    return FileTooLargeError(
        f"{what} {_format_size(size)}, over the limit of {_format_size(limit)}", path=path,
        expected=f"at most {_format_size(limit)}",
        fix=f"pass a larger max_bytes= or set {MAX_MB_ENV}, or use a smaller sample")


def file_kind(path) -> str | None:
    """What ``path`` is when it exists but is neither a regular file nor a directory (a
    named pipe, a socket, a device), in words; None otherwise. Never opens the path: opening
    a named pipe waits for a writer."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    for test, words in ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return words
    return None


def refuse_special_file(path) -> None:
    """Raise :class:`FileFormatError` at once if ``path`` is a named pipe, socket or device
    (:func:`file_kind`): reading one could wait forever or never end."""
    kind = file_kind(path)
    if kind is not None:
        raise FileFormatError(f"is {kind}, not a regular file", path=path,
                              expected="a data file (or a folder of them)",
                              fix="save the data to a file and load that file")


def check_file(path, *, max_bytes=None) -> Path:
    """Check that ``path`` is an existing, non-empty file under the size limit, before reading.

    Parameters
    ----------
    path : str or Path
    max_bytes : int, optional
        The size limit (see :func:`max_upload_bytes`).

    Returns
    -------
    Path

    Raises
    ------
    MissingFileError, FileFormatError, FileTooLargeError, EmptyDataError
    """
    path = Path(path)
    if not path.exists():
        raise MissingFileError("file not found", path=path, expected="an existing file",
                               fix="check the path and the working directory")
    refuse_special_file(path)
    if not path.is_file():
        raise FileFormatError("is not a regular file", path=path, expected="a file")
    limit = max_upload_bytes(max_bytes)
    size = os.path.getsize(path)
    if size > limit:
        raise _too_large("the file is", size, limit, path)
    if size == 0:
        raise EmptyDataError("the file is empty (0 bytes)", path=path,
                             expected="one rating per line", fix="choose the right file")
    return path


def _check_encoding(encoding: str) -> str:
    try:
        return codecs.lookup(encoding).name
    except (LookupError, TypeError):
        raise InvalidParameterError(
            f"The 'encoding' parameter must name a text encoding such as 'utf-8' or "
            f"'latin-1'. Got {encoding!r} instead.") from None


class _Text:
    """A checked text file, read in pieces: it is never held whole in memory.

    ``encoding`` is the one that decodes the whole file; ``replace_colons`` turns MovieLens'
    ``::`` separators into :data:`_UNIT_SEP` on the fly.
    """

    def __init__(self, path: Path, encoding: str, size: int, replace_colons: bool = False):
        self.path = path
        self.encoding = encoding
        self.size = size
        self.replace_colons = replace_colons

    @property
    def pandas_encoding(self) -> str:
        return "utf-8-sig" if self.encoding == "utf-8" else self.encoding

    def open_binary(self):
        raw = open(self.path, "rb")
        if not self.replace_colons:
            return raw
        return io.BufferedReader(_ColonsReader(raw), buffer_size=_BLOCK)

    def lines(self, start: int = 0, *, raw: bool = False):
        """Yield (1-based line number, line) lazily, from line ``start + 1`` on."""
        with open(self.path, encoding=self.pandas_encoding, errors="replace",
                  newline=None) as f:
            for k, line in enumerate(f):
                if k >= start:
                    line = line.rstrip("\r\n")
                    if self.replace_colons and not raw:
                        line = line.replace("::", _UNIT_SEP)
                    yield k + 1, line

    def nonblank(self, start: int = 0, limit: int | None = None, *, raw: bool = False):
        """The first ``limit`` non-blank lines after line ``start``, with their numbers."""
        found = ((n, ln) for n, ln in self.lines(start, raw=raw) if ln.strip())
        return list(itertools.islice(found, limit))

    def line(self, number: int) -> str:
        """The text of line ``number`` (1-based); only needed to explain an error."""
        return next((ln for _, ln in self.lines(number - 1)), "")


class _ColonsReader(io.RawIOBase):
    """A binary stream with every ``::`` replaced by the unit separator, block by block.

    A trailing run of ``:`` is held back until the next block, so no pair is split.
    """

    def __init__(self, raw):
        self._raw = raw
        self._out = b""
        self._tail = b""
        self._eof = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._out and not self._eof:
            data = self._raw.read(_BLOCK)
            if not data:
                self._eof = True
                data, self._tail = self._tail, b""
            else:
                data = self._tail + data
                body = data.rstrip(b":")
                data, self._tail = body, data[len(body):]
            self._out = data.replace(b"::", _UNIT_SEP.encode())
        n = min(len(buffer), len(self._out))
        buffer[:n] = self._out[:n]
        self._out = self._out[n:]
        return n

    def close(self):
        self._raw.close()
        super().close()


def _scan(path, *, encoding="utf-8", fallback=None, max_bytes=None,
          max_line=MAX_LINE_BYTES, record="one short record (user, item, value ...) per "
                                         "line") -> _Text:
    """Check a text file in 1 MB blocks: size, binary content, decoding, not blank.

    NUL bytes mean binary content (a spreadsheet, an archive, an image) and are reported
    with their line before any parsing; so are bytes that ``encoding`` cannot decode, unless
    a ``fallback`` encoding is given (then the whole file is read with it).
    """
    path = check_file(path, max_bytes=max_bytes)
    enc = _check_encoding(encoding)
    decoding = True
    content = False
    newlines = 0  # newlines in the bytes checked so far
    carry = b""   # the last, unfinished line
    first = True
    with open(path, "rb") as f:
        while True:
            block = f.read(_BLOCK)
            nul = block.find(b"\x00")
            if nul >= 0:
                raise FileFormatError(
                    f"found binary content (a NUL byte at offset {f.tell() - len(block) + nul})",
                    path=path, line=newlines + block.count(b"\n", 0, nul) + 1,
                    expected="a plain-text file",
                    fix="export the data as CSV/TSV text (spreadsheets and archives are not "
                        "read directly; zip and gzip files are, by their .zip and .gz names)")
            if block:
                data = carry + block
                cut = data.rfind(b"\n") + 1
                piece, carry = data[:cut], data[cut:]
            else:
                piece, carry = carry, b""
            _check_line_lengths(piece, carry, newlines, path, max_line, record)
            if first and piece.startswith(_BOM):
                piece = piece[len(_BOM):]
            if piece:
                first = False
            if decoding and piece:
                try:
                    piece.decode(enc)
                except UnicodeDecodeError as e:
                    if fallback is None:
                        raise FileFormatError(
                            f"found bytes that are not valid {encoding} text "
                            f"({piece[e.start:e.start + 4]!r})", path=path,
                            line=newlines + piece.count(b"\n", 0, e.start) + 1,
                            expected=f"a {encoding} text file",
                            fix="save the file as UTF-8, or pass encoding='latin-1'") from None
                    enc = _check_encoding(fallback)
                    decoding = False  # a single-byte fallback decodes everything
            if not content and piece.strip():
                content = True
            newlines += piece.count(b"\n")
            if not block and not carry:
                break
    if not content:
        raise EmptyDataError("the file holds only blank lines", path=path,
                             expected="one rating per line")
    return _Text(path, enc, os.path.getsize(path))


def _check_line_lengths(piece: bytes, carry: bytes, newlines: int, path,
                        limit: int = MAX_LINE_BYTES, record: str = "") -> None:
    """Refuse a line longer than ``limit`` bytes (:data:`MAX_LINE_BYTES`): ``piece`` holds
    whole lines (the first is line ``newlines + 1``), ``carry`` the start of an unfinished
    one after them; ``record`` says what a line should hold."""
    if len(piece) > limit:
        ends = np.flatnonzero(np.frombuffer(piece, dtype=np.uint8) == 10)
        starts = np.concatenate(([0], ends[:-1] + 1)) if ends.size else np.zeros(1, np.int64)
        stops = ends if ends.size else np.array([len(piece)])
        long = np.flatnonzero(stops - starts > limit)
        if long.size:
            k = int(long[0])
            _long_line(path, newlines + k + 1, int(stops[k] - starts[k]), limit, record)
    if len(carry) > limit:
        _long_line(path, newlines + piece.count(b"\n") + 1, len(carry), limit, record,
                   more=True)


def _long_line(path, line: int, length: int, limit: int = MAX_LINE_BYTES, record: str = "",
               more: bool = False):
    raise FileFormatError(
        f"the line is {'more than ' if more else ''}{length:,} bytes long, over the limit "
        f"of {limit:,} bytes per line", path=path, line=line,
        expected=record or "one short record (user, item, value ...) per line",
        fix="check that this is a ratings table with one record per line (not a file "
            "without line breaks), and shorten or remove that line")


def read_text(path, *, encoding="utf-8", max_bytes=None) -> str:
    """Read a small text file whole after checking it (see :func:`check_file`).

    The loaders stream their files instead; this is for callers that want the text.
    A UTF-8 byte-order mark is dropped.

    Raises
    ------
    MissingFileError, FileTooLargeError, EmptyDataError, FileFormatError
    """
    src = _scan(path, encoding=encoding, max_bytes=max_bytes)
    text = Path(src.path).read_bytes().decode(src.encoding)
    return text[1:] if text.startswith("\ufeff") else text


def _is_gzip(path: Path) -> bool:
    if file_kind(path) is not None:  # never opened: refused by check_file
        return False
    try:
        with open(path, "rb") as f:
            return f.read(2) == _GZIP_MAGIC
    except OSError:
        return False
