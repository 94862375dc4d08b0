"""Basket files: one line of items per user (``Coffee,Espresso,Milk``), read as 0/1
interactions, like R arules' ``read.transactions(format="basket")``."""

from __future__ import annotations

from array import array
from pathlib import Path

import numpy as np
import pandas as pd

from ...exceptions import EmptyDataError, FileFormatError, InvalidParameterError
from ..ratings import Ratings
from .checks import _scan
from .layout import DELIMITERS, basket_delimiter, split_fields
from .tables import _describe_sep, _plain_ints


def load_basket(path, *, delimiter=None, user_col=None, header=False, encoding="utf-8",
                max_bytes=None, name=None) -> Ratings:
    """Read a basket file: each non-blank line lists the items one user has (0/1 data).

    Item names are kept as they are written (surrounding spaces dropped, quotes honoured:
    ``"Milk, whole"`` is one item in a comma-separated file) and are the items' ids and
    names. An item written twice on one line counts once (``info["repeated_items"]``
    counts them); empty fields (``a,,b`` or a trailing comma) are skipped. Blank lines are
    skipped; without a user column, user k is the k-th non-blank line (1-based).

    Parameters
    ----------
    path : str or Path
    delimiter : str, optional
        The separator of items; ``" "`` means runs of whitespace. By default detected: the
        first of tab, semicolon, comma and pipe found on most lines, else spaces.
    user_col : int, optional
        The 0-based field holding a user id on every line (``0``: ``u1,Coffee,Milk``). Off
        by default. Lines of the same user are merged into one basket.
    header : bool, default=False
        Skip the first non-blank line (column titles).
    encoding : str, default="utf-8"
    max_bytes : int, optional
        The size limit of the file (see :func:`~kmviz.data.loaders.max_upload_bytes`).
    name : str, optional
        Label of the dataset (default: the file name).

    Returns
    -------
    Ratings
        One-class interactions (value 1), ``info["format"] == "basket"``.

    Raises
    ------
    FileFormatError
        A line without the user column, a user id without items throughout, a binary file.
    EmptyDataError
        An empty file, only a header, fewer than two users or items.
    """
    path = Path(path)
    user_col = _check_user_col(user_col)
    if not isinstance(header, (bool, np.bool_)):
        raise InvalidParameterError(f"The 'header' parameter of a basket file must be True "
                                    f"or False. Got {header!r} instead.")
    src = _scan(path, encoding=encoding, max_bytes=max_bytes)
    sample = src.nonblank(0, 50)
    if header:
        sample = sample[1:]
        if not sample:
            raise EmptyDataError("holds only a header line", path=path,
                                 expected="one line of items per user after the header",
                                 fix="add the baskets, or pass header=False")
    sep = _delimiter(delimiter, [ln for _, ln in sample])
    users, items, lines = array("q"), array("q"), array("q")
    item_codes, user_codes = {}, {}
    repeated = blank = 0
    skip_first = bool(header)
    for number, line in src.lines():
        if not line.strip():
            blank += 1
            continue
        if skip_first:
            skip_first = False
            continue
        fields = _fields(line, sep)
        if user_col is not None:
            if len(fields) <= user_col or not fields[user_col]:
                raise FileFormatError(
                    f"found no user id in field {user_col + 1} ({line[:80]!r})", path=path,
                    line=number, expected=f"a user id in field {user_col + 1} of every line "
                                          f"(user_col={user_col})",
                    fix="complete the line, or pass user_col=None if the lines hold items only")
            uid = fields.pop(user_col)
            u = user_codes.setdefault(uid, len(user_codes))
        else:
            u = len(user_codes)
            user_codes[u + 1] = u
        seen = set()
        for f in fields:
            if not f:
                continue
            if f in seen:
                repeated += 1
                continue
            seen.add(f)
            users.append(u)
            items.append(item_codes.setdefault(f, len(item_codes)))
            lines.append(number)
    if not items:
        raise EmptyDataError("holds no items", path=path,
                             expected="one line of items per user",
                             fix="check that this is a basket file and the delimiter")
    u = np.frombuffer(users, dtype=np.int64)
    i = np.frombuffer(items, dtype=np.int64)
    line_numbers = np.frombuffer(lines, dtype=np.int64)
    n_users = len(user_codes)
    merged = 0
    if user_col is not None:  # a user on several lines: one basket, each item once
        key = u * len(item_codes) + i
        _, first = np.unique(key, return_index=True)
        merged = int(key.shape[0] - first.shape[0])
        first.sort()
        u, i, line_numbers = u[first], i[first], line_numbers[first]
    ratings = Ratings.from_arrays(
        pd.Categorical.from_codes(u, categories=_user_ids(user_codes, n_users), validate=False)
        if user_col is not None else u + 1,
        pd.Categorical.from_codes(i, categories=pd.Index(list(item_codes), dtype=object),
                                  validate=False),
        None, implicit=True, line_numbers=line_numbers,
        item_names={k: k for k in item_codes}, name=name or path.name, source=str(path))
    ratings.info.update(format="basket", delimiter=_describe_sep(sep) if sep else "none")
    if repeated:
        ratings.info["repeated_items"] = repeated
    if merged:
        ratings.info["repeated_user_items"] = merged
    if blank:
        ratings.info["blank_lines"] = blank
    return ratings


def _check_user_col(user_col):
    if user_col is None or user_col is False or (isinstance(user_col, str)
                                                 and user_col.strip().lower() == "none"):
        return None
    if isinstance(user_col, bool) or not isinstance(user_col, (int, np.integer)) \
            or user_col < 0:
        raise InvalidParameterError(
            f"The 'user_col' parameter of a basket file is the 0-based field holding the "
            f"user id (0 for the first) or None for none. Got {user_col!r} instead.")
    return int(user_col)


def _delimiter(delimiter, lines) -> str | None:
    if delimiter is None:
        return basket_delimiter(lines)
    if delimiter in ("\\s+", "whitespace"):
        return " "
    if not isinstance(delimiter, str) or len(delimiter) != 1:
        raise InvalidParameterError(
            f"The 'delimiter' parameter must be one character ({', '.join(map(repr, DELIMITERS))}"
            f"). Got {delimiter!r} instead.")
    return delimiter


def _fields(line: str, sep: str | None) -> list[str]:
    if sep is None:
        return [line.strip()]
    if '"' not in line:
        parts = line.split() if sep == " " else line.split(sep)
        return [p.strip() for p in parts]
    return [p.strip() for p in split_fields(line, sep)]


def _user_ids(user_codes: dict, n: int) -> pd.Index:
    ids = np.empty(n, dtype=object)
    ids[:] = list(user_codes)
    ints = _plain_ints(ids)
    if ints is not None and np.unique(ints).shape[0] == n:
        return pd.Index(ints)
    return pd.Index(ids, dtype=object)
