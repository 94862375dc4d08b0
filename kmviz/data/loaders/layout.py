"""Which kind of delimited text a file holds, from its first lines: triplets (one rating a
line), a basket file (one line of items a user) or a users x items table (a header row of
item names, one row a user).

The rule (:func:`detect_layout`), on the first :data:`SAMPLE_LINES` non-blank lines:

1. **Table**: the first line is a header of at least :data:`TABLE_MIN_COLUMNS` distinct,
   non-empty names, not all numbers, none of them (after the first, which may name the
   user column) a triplet column name (user, item, rating, timestamp ...); every sampled
   row has as many fields as the header; and at least 90 % of the non-empty fields after
   the first are numbers (NA, NaN, null count as empty), with at least one number. A table
   of fewer columns is read as one only when asked (``format="table"``): it cannot be told
   from triplets.
2. **Basket**: no table, the first line is not a triplet header, and the lines do not all
   have the same number of fields (baskets hold different numbers of items); when every
   field is a number, some line must also hold more than four (so a triplet file with a
   short or long line is reported as one, not read as baskets).
3. Otherwise **triplets**; ``format="basket"`` / ``format="table"`` choose the other readers
   for files the rule cannot tell apart (a basket file whose lines all hold two items).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from .tables import _NOT_FINITE, _split


#: Lines read to decide; and most bytes read for them.
SAMPLE_LINES = 50
_SAMPLE_BYTES = 64 * 1024
#: Fewest columns (user ids included) of a header that makes a users x items table.
TABLE_MIN_COLUMNS = 4
#: A header this narrow whose cells hold a number above ID_LIKE (an id, a timestamp) is read
#: as triplets: a table of so few items holds ratings or 0/1, not such numbers.
FEW_COLUMNS = 6
ID_LIKE = 10_000

# Column names of triplet files (compared case-insensitively): a header holding one of them
# after its first field is a triplet header, not a row of item names.
TRIPLET_NAMES = ("user", "userid", "user_id", "uid", "item", "itemid", "item_id", "iid",
                 "movie", "movieid", "movie_id", "product", "product_id", "rating", "ratings",
                 "value", "score", "stars", "weight", "count", "timestamp", "time", "date")

_QUOTED = re.compile(r'"[^"]*"')

#: The delimiters tried, in this order (spaces last: item names often hold spaces).
DELIMITERS = ("\t", ";", ",", "|", " ")


def sample_lines(path: Path, encoding: str = "utf-8") -> list[str]:
    """The first :data:`SAMPLE_LINES` non-blank lines (at most 64 KB read; a BOM dropped)."""
    with open(path, "rb") as f:
        head = f.read(_SAMPLE_BYTES)
    if len(head) == _SAMPLE_BYTES and b"\n" in head:
        head = head[:head.rfind(b"\n")]  # drop the unfinished last line
    text = head.decode("utf-8-sig" if encoding.lower().replace("_", "-") in
                       ("utf-8", "utf8") else encoding, errors="replace")
    return [ln for ln in text.splitlines() if ln.strip()][:SAMPLE_LINES]


def split_fields(line: str, sep: str) -> list[str]:
    """The fields of one line, quotes honoured; spaces: runs of whitespace."""
    if sep == " ":
        line = line.strip()
        if '"' not in line:
            return line.split()
        try:
            return next(csv.reader([line], delimiter=" ", skipinitialspace=True), [])
        except csv.Error:  # a quoted field over csv's field limit: split plainly
            return line.split()
    if '"' not in line:
        return line.split(sep)
    try:
        return _split(line, sep)
    except csv.Error:
        return line.split(sep)


def basket_delimiter(lines) -> str | None:
    """The delimiter of a basket file: the first of tab, semicolon, comma and pipe found
    outside quotes on most lines, else on any line, else spaces if lines hold any; None
    when every line is one item."""
    bare = [_QUOTED.sub('""', ln.strip()) for ln in lines]
    n = max(1, len(bare))
    for sep in DELIMITERS[:-1]:
        if sum(sep in ln for ln in bare) * 2 >= n:
            return sep
    for sep in DELIMITERS[:-1]:  # few lines with two items or more: any of them will do
        if any(sep in ln for ln in bare):
            return sep
    if any(" " in ln for ln in bare):
        return " "
    return None


def table_delimiter(lines) -> str | None:
    """The delimiter giving every sampled line the same number (>= 2) of fields, the most
    fields winning; spaces only when nothing else does."""
    best, best_n = None, 1
    for sep in DELIMITERS[:-1]:
        counts = {len(split_fields(ln, sep)) for ln in lines}
        if len(counts) == 1 and (n := counts.pop()) > best_n:
            best, best_n = sep, n
    if best is None:
        counts = {len(split_fields(ln, " ")) for ln in lines}
        if len(counts) == 1 and counts.pop() >= 2:
            best = " "
    return best


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_triplet_header(fields) -> bool:
    return any(f.strip().lower() in TRIPLET_NAMES for f in fields)


def looks_like_table(lines) -> bool:
    """Rule 1 of the module docstring on the sampled lines."""
    if len(lines) < 2:
        return False
    sep = table_delimiter(lines)
    if sep is None:
        return False
    header = [f.strip() for f in split_fields(lines[0], sep)]
    if len(header) < TABLE_MIN_COLUMNS or _is_triplet_header(header[1:]):
        return False
    items = header[1:]
    if any(not h for h in items) or len(set(items)) < len(items) or \
            all(is_number(h) for h in items):  # numbers: a headerless file of ratings
        return False
    numbers = text = large = 0
    for ln in lines[1:]:
        for c in split_fields(ln, sep)[1:]:
            c = c.strip()
            if c and c.lower() not in _NOT_FINITE:
                if is_number(c):
                    numbers += 1
                    large += abs(float(c)) > ID_LIKE
                else:
                    text += 1
    if large and len(header) <= FEW_COLUMNS:
        # A few columns holding ids or timestamps (user,item,rating,ts under names of its
        # own) is a triplet file, not a table of a handful of items.
        return False
    return numbers > 0 and text <= 0.1 * (numbers + text)


def looks_like_basket(lines) -> bool:
    """Rule 2 of the module docstring on the sampled lines."""
    if len(lines) < 2:
        return False
    sep = basket_delimiter(lines)
    if sep is None:
        return False
    first = split_fields(lines[0], sep)
    if _is_triplet_header(first):
        return False
    rows = [split_fields(ln, sep) for ln in lines]
    counts = {len(r) for r in rows}
    if len(counts) < 2:
        return False
    numeric = all(is_number(f) for r in rows for f in r if f.strip())
    return not numeric or max(counts) > 4


def detect_layout(path, encoding: str = "utf-8") -> str:
    """"table", "basket" or "delimited" (triplets) for a plain text file (module docstring)."""
    lines = sample_lines(Path(path), encoding)
    if looks_like_table(lines):
        return "table"
    if looks_like_basket(lines):
        return "basket"
    return "delimited"
