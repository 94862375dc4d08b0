"""MovieLens readers: 100K (``u.data`` with ``u.item``, ``u.user``, ``u.genre``), 1M/10M
(``ratings.dat`` with ``movies.dat``, ``users.dat``) and the latest releases
(``ratings.csv`` with ``movies.csv``)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ...exceptions import FileFormatError, MissingFileError
from ..ratings import Ratings
from .checks import _Text, _UNIT_SEP, _scan
from .tables import _Parsed, _parse, _split


#: The 19 genre flags of MovieLens 100K ``u.item``, used when ``u.genre`` is absent.
ML100K_GENRES = (
    "unknown", "Action", "Adventure", "Animation", "Children's", "Comedy", "Crime",
    "Documentary", "Drama", "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery", "Romance",
    "Sci-Fi", "Thriller", "War", "Western",
)

_YEAR = re.compile(r"\((\d{4})\)\s*$")

#: Most distinct genres read from a movies file (MovieLens has about 20).
_MAX_GENRES = 100


def _year_from_title(titles: pd.Series) -> pd.Series:
    return pd.to_numeric(titles.str.extract(_YEAR, expand=False), errors="coerce")


def _one_hot_genres(ids, genres: np.ndarray, path) -> pd.DataFrame:
    """'Action|Comedy' strings -> one int8 column per genre (without '(no genres listed)').

    Each distinct genre string is split once; more than :data:`_MAX_GENRES` distinct genres
    is refused (it is not a genre column).
    """
    codes, combos = pd.factorize(np.asarray(genres, dtype=object))
    tags: dict[str, int] = {}
    split = []
    for combo in combos:
        cols = []
        for tag in str(combo).split("|"):
            if not tag or tag.startswith("(no genres"):
                continue
            if tag not in tags:
                if len(tags) == _MAX_GENRES:
                    raise FileFormatError(
                        f"found more than {_MAX_GENRES} distinct genres", path=path,
                        expected="a genres column of a few '|'-separated names",
                        fix="check that this is a MovieLens movies file")
                tags[tag] = len(tags)
            cols.append(tags[tag])
        split.append(cols)
    names = sorted(tags)
    table = np.zeros((len(combos), len(names)), dtype=np.int8)
    position = {t: k for k, t in enumerate(names)}
    remap = np.array([position[t] for t in tags], dtype=np.int64)
    for r, cols in enumerate(split):
        table[r, remap[cols]] = 1
    return pd.DataFrame(table[codes], index=ids, columns=names)


def _find(directory: Path, *names: str) -> Path | None:
    for n in names:
        p = directory / n
        if p.is_file():
            return p
    return None


_RATING_COLUMNS = {0: ("id", "user id"), 1: ("id", "item id"), 2: ("number", "rating")}


def _ml_ratings(table: _Parsed, path, *, r_min, r_max, duplicates, name, **extra) -> Ratings:
    cols = table.columns
    return Ratings.from_arrays(cols.pop(0), cols.pop(1), cols.pop(2), r_min=r_min,
                               r_max=r_max, duplicates=duplicates, line_numbers=table.lines,
                               name=name, source=str(path), **extra)


def _format_name(folder: str, fmt: str) -> str:
    """The name of data read from a MovieLens layout: its folder, and the format.

    Never "MovieLens ..." alone: the layout says nothing about where the values come from
    (``sample_data/planted-ml100k`` is a planted model in MovieLens 100K format).
    """
    return f"{folder} ({fmt} format)" if folder else f"data in {fmt} format"


def _side_text(path, max_bytes) -> _Text:
    """A MovieLens side file: UTF-8, or latin-1 (the older releases) when UTF-8 fails."""
    return _scan(path, encoding="utf-8", fallback="latin-1", max_bytes=max_bytes)


def load_movielens_100k(path, *, duplicates="error", max_bytes=None) -> Ratings:
    """Read a MovieLens 100K directory (``u.data``, and ``u.item`` / ``u.user`` if present).

    Parameters
    ----------
    path : str or Path
        The directory, or its ``u.data`` file (siblings are then looked up beside it).
    duplicates : {"error", "mean", "first", "last"}, default="error"
        Policy for repeated (user, item) pairs, see :meth:`Ratings.from_arrays`.
    max_bytes : int, optional
        Size limit per file (see :func:`max_upload_bytes`).

    Returns
    -------
    Ratings
        Named after the folder, e.g. "ml-100k (MovieLens 100K format)": the layout does not
        tell GroupLens's data from other data in it. Scale 1-5. ``item_names`` are the
        titles; ``item_features`` the 19 genre flags (names from ``u.genre`` when present)
        plus ``year`` (release year, NaN when unknown); ``user_features`` are ``age``,
        ``gender`` and ``occupation``. Side files are read as UTF-8, or as latin-1 (the
        encoding of GroupLens's release) when they are not valid UTF-8.
    """
    path = Path(path)
    directory = path if path.is_dir() else path.parent
    data = _find(directory, "u.data") if path.is_dir() else path
    if data is None:
        raise MissingFileError("no u.data file in this directory", path=directory,
                               expected="a MovieLens 100K directory with u.data",
                               fix="point to the folder that holds u.data")
    src = _scan(data, max_bytes=max_bytes)
    first = src.nonblank(0, 1)
    sep = "\t" if first and "\t" in first[0][1] else " "
    table = _parse(src, sep=sep, quoting=csv.QUOTE_NONE, n_fields=3, want=_RATING_COLUMNS,
                   categorical=True)
    extra = {}
    item_file = _find(directory, "u.item")
    if item_file is not None:
        extra.update(_read_u_item(item_file, directory, max_bytes))
    user_file = _find(directory, "u.user")
    if user_file is not None:
        extra["user_features"] = _read_u_user(user_file, max_bytes)
    return _ml_ratings(table, data, r_min=1.0, r_max=5.0, duplicates=duplicates,
                       name=_format_name(directory.name, "MovieLens 100K"), **extra)


def _genre_names(directory: Path, max_bytes) -> list[str]:
    f = _find(directory, "u.genre")
    if f is None:
        return list(ML100K_GENRES)
    lines = _side_text(f, max_bytes).nonblank(0, len(ML100K_GENRES) + 1)
    rows = [ln.split("|") for _, ln in lines]
    names = [r[0] for r in sorted(rows, key=lambda r: int(r[1]) if r[1:] and r[1].isdigit()
                                  else 0)]
    return names if len(names) == len(ML100K_GENRES) else list(ML100K_GENRES)


def _read_u_item(path: Path, directory: Path, max_bytes) -> dict:
    """Titles, genre flags and release years from ``u.item`` ('|'-separated)."""
    genres = _genre_names(directory, max_bytes)
    want = {0: ("id", "movie id"), 1: ("text", "title"), 2: ("text", "release date")}
    want.update({5 + k: ("number", g) for k, g in enumerate(genres)})
    table = _parse(_side_text(path, max_bytes), sep="|", quoting=csv.QUOTE_NONE,
                   n_fields=5 + 19, want=want)
    cols = table.columns
    ids = cols[0]
    flags = pd.DataFrame({g: cols[5 + k].astype(np.int8) for k, g in enumerate(genres)},
                         index=ids)
    titles = pd.Series(cols[1], dtype=object)
    # The release date looks like 01-Jan-1995; fall back to the "(1995)" in the title.
    year = pd.to_numeric(pd.Series(cols[2], dtype=object).str[-4:], errors="coerce")
    year = year.fillna(_year_from_title(titles))
    flags["year"] = year.to_numpy(dtype=np.float64)
    return {"item_names": dict(zip(ids.tolist(), titles.tolist())), "item_features": flags}


def _read_u_user(path: Path, max_bytes) -> pd.DataFrame:
    table = _parse(_side_text(path, max_bytes), sep="|", quoting=csv.QUOTE_NONE, n_fields=4,
                   want={0: ("id", "user id"), 1: ("number", "age"), 2: ("text", "gender"),
                         3: ("text", "occupation")})
    cols = table.columns
    return pd.DataFrame({
        "age": cols[1].astype(np.int64),
        "gender": pd.Categorical(cols[2]),
        "occupation": pd.Categorical(cols[3]),
    }, index=cols[0])


def load_movielens_dat(path, *, r_min=None, r_max=5.0, duplicates="error",
                       max_bytes=None) -> Ratings:
    """Read MovieLens 1M/10M ``ratings.dat`` (``user::movie::rating::timestamp``).

    ``movies.dat`` (``movie::title::Genre1|Genre2``) and ``users.dat``
    (``user::gender::age::occupation::zip``) next to it are read when present. Files are
    read as UTF-8, or as latin-1 (GroupLens's encoding) when they are not valid UTF-8.

    Parameters
    ----------
    path : str or Path
        The ``ratings.dat`` file or the directory holding it.
    r_min : float, optional
        Lower end of the scale. By default 1 when every rating is a whole star (1M) and 0.5
        otherwise (10M uses half stars).
    r_max : float, default=5.0
    duplicates : {"error", "mean", "first", "last"}, default="error"
    max_bytes : int, optional

    Returns
    -------
    Ratings
        ``item_names`` are titles; ``item_features`` one-hot genres plus ``year``;
        ``user_features`` (1M only) ``gender``, ``age`` (the dataset's age-group code) and
        ``occupation`` (its integer code).
    """
    path = Path(path)
    data = _find(path, "ratings.dat") if path.is_dir() else path
    if data is None:
        raise MissingFileError("no ratings.dat file in this directory", path=path,
                               expected="a MovieLens 1M/10M directory with ratings.dat")
    directory = data.parent
    src = _side_text(data, max_bytes)
    _require_separator(src, "::")
    src.replace_colons = True
    table = _parse(src, sep=_UNIT_SEP, quoting=csv.QUOTE_NONE, n_fields=3,
                   want=_RATING_COLUMNS, categorical=True)
    if r_min is None:
        values = table.columns[2]
        r_min = 1.0 if np.all(values == np.round(values)) and values.min() >= 1 else 0.5
    extra = {}
    movies = _find(directory, "movies.dat")
    if movies is not None:
        msrc = _side_text(movies, max_bytes)
        msrc.replace_colons = True
        mt = _parse(msrc, sep=_UNIT_SEP, quoting=csv.QUOTE_NONE, n_fields=3,
                    want={0: ("id", "movie id"), 1: ("text", "title"), 2: ("text", "genres")})
        extra.update(_titles_and_genres(mt.columns[0], mt.columns[1], mt.columns[2], movies))
    users = _find(directory, "users.dat")
    if users is not None:
        usrc = _side_text(users, max_bytes)
        usrc.replace_colons = True
        ut = _parse(usrc, sep=_UNIT_SEP, quoting=csv.QUOTE_NONE, n_fields=4,
                    want={0: ("id", "user id"), 1: ("text", "gender"), 2: ("number", "age"),
                          3: ("number", "occupation")})
        extra["user_features"] = pd.DataFrame({
            "gender": pd.Categorical(ut.columns[1]),
            "age": ut.columns[2].astype(np.int64),
            "occupation": ut.columns[3].astype(np.int64),
        }, index=ut.columns[0])
    return _ml_ratings(table, data, r_min=r_min, r_max=r_max, duplicates=duplicates,
                       name=_format_name(directory.name or data.name, "MovieLens 1M/10M"),
                       **extra)


def _require_separator(src: _Text, sep: str):
    number, line = src.nonblank(0, 1, raw=True)[0]
    if sep not in line:
        raise FileFormatError(f"found no {sep!r} separator in {line[:80]!r}", path=src.path,
                              line=number, expected=f"fields separated by {sep!r}",
                              fix="check the format; for other delimiters use load_delimited")


def _titles_and_genres(ids, titles: np.ndarray, genres: np.ndarray, path) -> dict:
    titles = pd.Series(titles, dtype=object)
    features = _one_hot_genres(ids, genres, path)
    features["year"] = _year_from_title(titles).to_numpy(dtype=np.float64)
    return {"item_names": dict(zip(ids.tolist(), titles.tolist())), "item_features": features}


def load_movielens_csv(path, *, r_min=0.5, r_max=5.0, duplicates="error",
                       max_bytes=None) -> Ratings:
    """Read MovieLens "latest" ``ratings.csv`` (``userId,movieId,rating,timestamp`` header).

    ``movies.csv`` (``movieId,title,genres``) next to it is read when present.

    Parameters
    ----------
    path : str or Path
        The ``ratings.csv`` file or the directory holding it.
    r_min, r_max : float, default=0.5, 5.0
    duplicates : {"error", "mean", "first", "last"}, default="error"
    max_bytes : int, optional

    Returns
    -------
    Ratings
        ``item_names`` are titles; ``item_features`` one-hot genres plus ``year``.
    """
    path = Path(path)
    data = _find(path, "ratings.csv") if path.is_dir() else path
    if data is None:
        raise MissingFileError("no ratings.csv file in this directory", path=path,
                               expected="a MovieLens directory with ratings.csv")
    src = _scan(data, max_bytes=max_bytes)
    header = _check_header(src, ("userId", "movieId", "rating"))
    table = _parse(src, sep=",", skip=header, n_fields=3, want=_RATING_COLUMNS,
                   categorical=True)
    extra = {}
    movies = _find(data.parent, "movies.csv")
    if movies is not None:
        msrc = _scan(movies, max_bytes=max_bytes)
        mh = _check_header(msrc, ("movieId", "title", "genres"))
        mt = _parse(msrc, sep=",", skip=mh, n_fields=3,
                    want={0: ("id", "movieId"), 1: ("text", "title"), 2: ("text", "genres")})
        extra.update(_titles_and_genres(mt.columns[0], mt.columns[1], mt.columns[2], movies))
    return _ml_ratings(table, data, r_min=r_min, r_max=r_max, duplicates=duplicates,
                       name=_format_name(data.parent.name or data.name, "MovieLens latest"),
                       **extra)


def _check_header(src: _Text, names) -> int:
    """Check the header line starts with ``names``; return the number of lines up to it."""
    number, line = src.nonblank(0, 1)[0]
    found = [f.strip() for f in _split(line, ",")]
    if found[:len(names)] != list(names):
        raise FileFormatError(f"found header {line[:80]!r}", path=src.path, line=number,
                              expected="a header starting with " + ",".join(names),
                              fix="for other column layouts use load_delimited")
    return number
