"""Readers for rating files: MovieLens (100K, 1M/10M, latest), delimited triplets, Matrix Market,
gzip-compressed files and zip archives of any of these.

Every reader checks the file before parsing it (exists, size under the limit, not empty, not
binary, decodable) and reports bad content with the real 1-based file line, what was found,
what was expected and how to fix it (see :class:`kmviz.exceptions.DataError`).

Memory: a file is never held whole in memory. It is checked in 1 MB blocks, then parsed in
chunks of at most about :data:`tables._CHUNK_FIELDS` fields, each converted at once to compact
arrays (int64 ids, float64 values, codes into one table of distinct string ids), so the peak
of a load stays within a few times the file's text plus the final arrays. Sizes declared
inside a file (Matrix Market headers, zip members, gzip streams) are checked against the
file and the size limit before anything is allocated or extracted.

Ids: a user or item column is read as integers when every id in it is a plain integer (an
optional ``-`` and at most 18 digits, without leading zeros: ``0``, ``7``, ``-12``);
otherwise every id of that column is kept as text, so ``007`` and ``7`` are two different
users and ``+7`` is not ``7``.

The package has one module per step; its public names are all re-exported here:

- :mod:`.checks`: the size limit, encodings, the checked pass over a file;
- :mod:`.tables`: chunked parsing of delimited text into id and value columns;
- :mod:`.movielens`, :mod:`.delimited`, :mod:`.matrix_market`, :mod:`.basket` (a line of
  items per user), :mod:`.wide` (a users x items table): the readers of each format;
- :mod:`.layout`: which of triplets, baskets and tables a delimited text file holds;
- :mod:`.archives`: unpacking gzip files and zip archives safely (no reader imported);
- :mod:`.bounds`: the memory a parse needs and what an archive may expand to;
- :mod:`.dispatch`: :func:`detect_format` and :func:`load_path`, which picks the reader,
  and :func:`load_gzip` / :func:`load_zip`, which load what an archive holds.

The modules import one another in one direction only (checks, tables, layout and bounds
at the bottom; the readers and archives above them; dispatch on top).
"""

from .basket import load_basket
from .checks import DEFAULT_MAX_MB, MAX_MB_ENV, check_file, max_upload_bytes, read_text
from .delimited import ITEM_NAMES, USER_NAMES, VALUE_NAMES, load_delimited
from .dispatch import FORMATS, detect_format, load_gzip, load_path, load_zip
from .matrix_market import load_matrix_market
from .movielens import ML100K_GENRES, load_movielens_100k, load_movielens_csv, load_movielens_dat
from .wide import load_table

__all__ = [
    "DEFAULT_MAX_MB",
    "FORMATS",
    "ITEM_NAMES",
    "MAX_MB_ENV",
    "ML100K_GENRES",
    "USER_NAMES",
    "VALUE_NAMES",
    "check_file",
    "detect_format",
    "load_basket",
    "load_delimited",
    "load_gzip",
    "load_matrix_market",
    "load_movielens_100k",
    "load_movielens_csv",
    "load_movielens_dat",
    "load_path",
    "load_table",
    "load_zip",
    "max_upload_bytes",
    "read_text",
]
