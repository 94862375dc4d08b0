"""Basket files (a line of items per user) and users x items tables (a header of item
names): round trips against the data written, the detection rule, every malformed case."""

import gzip
import io
import zipfile

import numpy as np
import pytest

from kmviz import cli
from kmviz.data import detect_format, load, load_basket, load_table
from kmviz.data.loaders import checks
from kmviz.exceptions import (
    DataValueError,
    DuplicateRatingsError,
    EmptyDataError,
    FileFormatError,
    FileTooLargeError,
    InvalidParameterError,
)

NAMES = ["Coffee", "Milk, oat", "Ice cream", "Tea", "Jam", "Bread", "Basil", "Rice"]


def _pairs(r):
    """The (user id, item name) pairs of a Ratings, as a set."""
    return {(r.user_ids[u], r.item_names[i]) for u, i in zip(r.users, r.items)}


def _random_baskets(rng, n_users=40):
    baskets = []
    for _ in range(n_users):
        k = int(rng.integers(1, 6))
        baskets.append(list(rng.choice(NAMES, size=k, replace=False)))
    return baskets


def _quote(name, sep):
    return f'"{name}"' if (sep in name or " " in name) else name


def _write(tmp_path, name, text, mode="w"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return path


# ----------------------------------------------------------------------------- baskets
@pytest.mark.parametrize("sep", [",", "\t", ";", " "])
def test_a_basket_file_round_trips_with_every_delimiter(tmp_path, sep):
    rng = np.random.default_rng(len(sep) + ord(sep))
    baskets = _random_baskets(rng)
    text = "\n".join(sep.join(_quote(n, sep) for n in b) for b in baskets) + "\n"
    path = _write(tmp_path, "b.txt", text)
    assert detect_format(path) == "basket"
    r = load(path)
    expected = {(k + 1, n) for k, b in enumerate(baskets) for n in b}
    assert _pairs(r) == expected
    assert r.implicit and r.info["format"] == "basket"
    assert set(r.item_ids) == {n for b in baskets for n in b}
    assert r.item_label(0) == r.item_ids[0]  # the name, not "item <id>"


def test_basket_user_ids_blank_lines_repeats_bom_and_crlf(tmp_path):
    text = ("\ufeffu7,Coffee,Tea,Coffee\r\n\r\n"
            "u2,Jam\r\n"
            "u7,Bread,Tea\r\n"
            "   \r\n"
            "u3,Tea,,Rice,\r\n")
    path = _write(tmp_path, "ids.csv", text)
    r = load(path, format="basket", user_col=0)
    assert _pairs(r) == {("u7", "Coffee"), ("u7", "Tea"), ("u7", "Bread"), ("u2", "Jam"),
                         ("u3", "Tea"), ("u3", "Rice")}
    assert r.info["repeated_items"] == 1          # Coffee twice on one line
    assert r.info["repeated_user_items"] == 1     # Tea on both lines of u7
    assert r.info["blank_lines"] == 2
    # without the user column the ids are read as items, one basket a line
    plain = load(path, format="basket")
    assert plain.n_users == 4 and "u7" in set(plain.item_ids)


def test_basket_numeric_user_ids_become_integers(tmp_path):
    path = _write(tmp_path, "n.csv", "10 1 2 3\n7 2 5\n10 9\n")
    r = load_basket(path, user_col=0)
    assert sorted(r.user_ids.tolist()) == [7, 10]
    assert _pairs(r) == {(10, "1"), (10, "2"), (10, "3"), (7, "2"), (7, "5"), (10, "9")}


def test_a_header_line_is_skipped_when_asked(tmp_path):
    path = _write(tmp_path, "h.csv", "items\nCoffee,Tea\nTea,Jam,Rice\n")
    r = load(path, format="basket", header=True)
    assert _pairs(r) == {(1, "Coffee"), (1, "Tea"), (2, "Tea"), (2, "Jam"), (2, "Rice")}
    only = _write(tmp_path, "only.csv", "items\n")
    with pytest.raises(EmptyDataError, match=r"only\.csv: holds only a header line"):
        load(only, format="basket", header=True)


@pytest.mark.parametrize("text, error, pattern", [
    ("", EmptyDataError, r"empty \(0 bytes\)"),
    ("\n\n  \n", EmptyDataError, r"only blank lines"),
    ("Coffee\nCoffee\nCoffee,Coffee\n", EmptyDataError, r"only 1 distinct item"),
    ("Coffee,Tea\n", EmptyDataError, r"only 1 distinct user"),
    ("a,b\x00c\n", FileFormatError, r"binary content"),
])
def test_malformed_basket_files_are_refused_clearly(tmp_path, text, error, pattern):
    path = _write(tmp_path, "bad.csv", text.encode())
    with pytest.raises(error, match=pattern) as e:
        load(path, format="basket")
    assert "bad.csv" in str(e.value)


def test_a_basket_line_without_its_user_id_names_the_line(tmp_path):
    path = _write(tmp_path, "ids.csv", "u1,Coffee,Tea\n,Jam\n")
    with pytest.raises(FileFormatError, match=r"ids\.csv, line 2: found no user id in field "
                                              r"1.*user_col=None"):
        load(path, format="basket", user_col=0)
    with pytest.raises(InvalidParameterError, match="user_col"):
        load(path, format="basket", user_col=-1)


def test_a_huge_basket_line_is_refused_with_its_line(tmp_path):
    line = ",".join(f"item{k}" for k in range(20_000))  # > 128 KB
    path = _write(tmp_path, "huge.csv", "Coffee,Tea\nTea,Jam\n" + line + "\n")
    with pytest.raises(FileFormatError, match=r"huge\.csv, line 3: the line is (more than )?"
                                              r"[\d,]+ bytes "
                                              r"long, over the limit"):
        load(path, format="basket")


def test_basket_files_inside_archives_and_under_the_size_limit(tmp_path):
    text = b"Coffee,Tea,Jam\nTea\nJam,Rice\n"
    gz = _write(tmp_path, "b.csv.gz", gzip.compress(text))
    assert _pairs(load(gz)) == _pairs(load(_write(tmp_path, "b.csv", text)))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("two.csv", b"Coffee,Tea\nJam,Rice\n")  # same width: chosen by format=
    zp = _write(tmp_path, "b.zip", buf.getvalue())
    assert load(zp, format="basket").n_items == 4
    with pytest.raises(FileTooLargeError, match="over the limit"):
        load(gz, max_bytes=10)


# ----------------------------------------------------------------------------- tables
def _table_text(matrix, names, *, ids=None, sep=",", header0="user"):
    head = ([header0] if ids is not None else []) + list(names)
    rows = [sep.join(head)]
    for u, row in enumerate(matrix):
        cells = ["" if np.isnan(v) else f"{v:g}" for v in row]
        rows.append(sep.join(([ids[u]] if ids is not None else []) + cells))
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize("with_ids", [True, False])
@pytest.mark.parametrize("sep", [",", "\t", ";"])
def test_a_ratings_table_round_trips(tmp_path, sep, with_ids):
    rng = np.random.default_rng(3)
    m = rng.integers(1, 6, size=(30, 7)).astype(float)
    m[rng.random(m.shape) < 0.4] = np.nan
    m[0, :2] = [1, 5]  # the full scale occurs
    ids = [f"s{k:02d}" for k in range(30)] if with_ids else None
    names = [f"Subject {k}" for k in range(7)]
    path = _write(tmp_path, "t.csv", _table_text(m, names, ids=ids, sep=sep))
    assert detect_format(path) == "table"
    r = load(path)
    assert not r.implicit and r.info["format"] == "table"
    got = {(r.user_ids[u], r.item_names[i]): v for u, i, v in zip(r.users, r.items, r.values)}
    expected = {((ids[u] if ids else u + 1), names[i]): m[u, i]
                for u, i in zip(*np.nonzero(~np.isnan(m)))}
    assert got == expected


def test_a_01_table_gives_interactions_and_can_be_read_as_ratings(tmp_path):
    rng = np.random.default_rng(5)
    m = (rng.random((25, 6)) < 0.4).astype(float)
    m[0, :] = 1
    m[1, :] = 0
    names = list("ABCDEF")
    path = _write(tmp_path, "flags.csv", _table_text(m, names))
    r = load(path)
    assert r.implicit and r.n_ratings == int(m.sum())
    assert _pairs(r) == {(u + 1, names[i]) for u, i in zip(*np.nonzero(m))}
    graded = load(path, implicit=False)
    assert not graded.implicit and graded.n_ratings == m.size - 0  # every cell, 0s too
    assert set(graded.values.tolist()) == {0.0, 1.0}


@pytest.mark.parametrize("text, fmt", [
    ("user,item,rating\n1,2,3\n2,3,4\n", "delimited"),
    ("1,2,3\n2,3,4\n4,5,1\n", "delimited"),
    ("user,item,rating,timestamp\n1,2,3,99\n2,3,4,98\n", "delimited"),
    ("userId,movieId,rating,timestamp\n1,2,3,99\n", "movielens-csv"),
    ("a,b,c\n1,0,1\n0,1,1\n", "delimited"),             # three columns: tables only by name
    ("196\t242\t3\t881250949\n186\t302\t3\t891717742\n", "delimited"),  # no header
    ("A,B,C,D\n1,0,,1\n0,1,1,\n", "table"),
    ("id,A,B,C\nx1,1,0,1\nx2,0,1,1\n", "table"),
    ("name,city,country,zip\nAnn,Oslo,Norway,0150\nBo,Lund,Sweden,22100\n", "delimited"),
    ("A,B,C,D\n1,0,x,1\n0,1,1,0\n", "delimited"),       # 1 cell in 7 text: not a table
    ("A,B,C,D\n" + "1,0,1,1\n" * 4 + "0,yes,1,1\n", "table"),  # 1 in 19: a table's typo
    ("Coffee,Tea\nJam\nRice,Tea,Bread\n", "basket"),
    ("1 2 3 4 5\n2 7\n9 4 1\n", "basket"),
    ("1,2,3\n4,5\n", "delimited"),                       # a short triplet line stays an error
    # triplets under column names of their own: ids and timestamps are not a table's cells
    ("uid2,iid2,stars2,ts\n1,2,3,881250949\n2,3,4,891717742\n", "delimited"),
    ("a,b,c,d\n17,20345,4,1\n3,5,2,0\n", "delimited"),
])
def test_the_detection_rule(tmp_path, text, fmt):
    assert detect_format(_write(tmp_path, "x.csv", text)) == fmt


def test_a_short_triplet_line_is_still_reported_as_one(tmp_path):
    path = _write(tmp_path, "short.csv", "1,2,3\n4,5\n")
    with pytest.raises(FileFormatError, match=r"line 2: found 2 field"):
        load(path)


def test_table_user_column_choices(tmp_path):
    path = _write(tmp_path, "t.csv", "Coffee,Tea,Jam,Rice\n1,0,1,1\n0,1,1,0\n")
    assert load(path).n_users == 2 and load(path).n_items == 4  # no id column detected
    r = load(path, format="table", user_col=0)
    assert sorted(r.user_ids.tolist()) == [0, 1] and r.n_items == 3
    r = load(path, format="table", user_col="Rice")
    assert "Rice" not in set(r.item_ids)
    named = _write(tmp_path, "n.csv", "user,Coffee,Tea,Jam\n7,1,0,1\n9,0,1,1\n")
    assert sorted(load(named).user_ids.tolist()) == [7, 9]
    assert load(named, user_col="none").n_items == 4
    with pytest.raises(FileFormatError, match="no column named 'x'"):
        load(named, format="table", user_col="x")


def test_a_repeated_user_row_is_a_duplicate_unless_merged(tmp_path):
    path = _write(tmp_path, "rep.csv", "user,A,B,C\nu1,5,,3\nu2,1,2,\nu1,4,,\n")
    with pytest.raises(DuplicateRatingsError, match=r"rep\.csv, line 4"):
        load(path)
    r = load(path, duplicates="mean")
    got = {(r.user_ids[u], r.item_names[i]): v for u, i, v in zip(r.users, r.items, r.values)}
    assert got[("u1", "A")] == 4.5


@pytest.mark.parametrize("text, error, pattern", [
    ("A,B,C,D\n1,0,1,1\n0,1\n", FileFormatError,
     r"line 3: found 2 field\(s\), the header has 4"),
    ("A,B,C,D\n1,0,1,1\n0,1,1,1,1\n", FileFormatError, r"line 3: found 5 field\(s\), the header "
                                                        r"has 4"),
    ("A,B,C,D\n1,0,1,1\n0,yes,1,1\n", DataValueError, r"line 3: found 'yes' in column 'B'"),
    ("A,B,C,D\n1,0,1,1\n0,NaN,1,1\n", DataValueError,
     r"line 3: found 'NaN' in column 'B', which is not a finite number.*missing='NaN'"),
    ("A,B,C,D\n1,0,inf,1\n", DataValueError, r"line 2: found 'inf' in column 'C'"),
    ("", EmptyDataError, r"the file is empty \(0 bytes\)"),
    ("\r\n\r\n", EmptyDataError, r"only blank lines"),
    ("A,B,C,D\n", EmptyDataError, r"holds only a header line"),
    ("A,B,C,D\n,,,\n\n", EmptyDataError, r"no rows after the header|no rated cell"),
    ("A,B,A,D\n1,0,1,1\n", FileFormatError, r"the item name 'A' is in columns 1 and 3"),
    ("A,,C,D\n1,0,1,1\n", FileFormatError, r"column 2 has no item name"),
])
def test_malformed_tables_are_refused_with_file_line_and_fix(tmp_path, text, error, pattern):
    path = _write(tmp_path, "bad.csv", text)
    with pytest.raises(error, match=pattern) as e:
        load(path, format="table")
    message = str(e.value)
    assert message.startswith(str(path)) and "expected" in message


def test_a_table_inside_a_zip_or_gzip_loads_like_the_file(tmp_path):
    text = "user,A,B,C,D\nx,5,,1,\ny,1,2,,4\nz,3,,,2\n"
    plain = _write(tmp_path, "t.csv", text)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("t.csv", text)
    zp = _write(tmp_path, "t.zip", buf.getvalue())
    gz = _write(tmp_path, "t.csv.gz", gzip.compress(text.encode()))
    want = _pairs(load(plain))
    assert _pairs(load(zp)) == want and _pairs(load(gz)) == want
    assert _pairs(load(zp, format="table")) == want
    bad = io.BytesIO()
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("t.csv", text.replace("x,5", "x,five"))
    with pytest.raises(DataValueError, match=r"bad\.zip:t\.csv, line 2: found 'five' in "
                                             r"column 'A'"):
        load(_write(tmp_path, "bad.zip", bad.getvalue()), format="table")


def test_missing_markers_bom_crlf_and_implicit_checks(tmp_path):
    text = "\ufeffuser,A,B,C\r\nu1,5,NA,3\r\n\r\nu2,NA,2,1\r\n"
    path = _write(tmp_path, "na.csv", text)
    r = load(path, missing="NA")
    assert r.n_ratings == 4 and r.user_ids.tolist() == ["u1", "u2"]
    assert list(r.item_ids) == ["A", "B", "C"]  # the BOM is not part of a name
    with pytest.raises(DataValueError, match=r"line 2: found 5 in column 'A'; expected 0 or 1"):
        load(path, missing="NA", implicit=True)


def test_a_wide_header_loads_and_a_huge_table_line_is_refused(tmp_path):
    n = 20_000  # a 200 KB header: more than a triplet line may hold
    head = ",".join(f"item{k}" for k in range(n))
    rows = [",".join("1" if (u + k) % 7 == 0 else "" for k in range(n)) for u in range(3)]
    path = _write(tmp_path, "wide.csv", "\n".join([head] + rows) + "\n")
    r = load(path, format="table")
    rated = {k for u in range(3) for k in range(n) if (u + k) % 7 == 0}
    assert r.n_items == len(rated) and r.n_ratings == sum(row.count("1") for row in rows)
    assert set(r.item_ids) == {f"item{k}" for k in rated}
    assert r.info["items_without_ratings"] == n - len(rated)
    huge = _write(tmp_path, "huge.csv", "A,B,C,D\n1,0,1,1\n" + "1," * (3 * 2**20) + "1\n")
    with pytest.raises(FileFormatError, match=r"huge\.csv, line 3: the line is (more than )?"
                                              r"[\d,]+ bytes "
                                              r"long, over the limit of 4,194,304"):
        load(huge, format="table")
    small = _write(tmp_path, "s.csv", "A,B,C,D\n1,0,1,1\n0,1,1,0\n")
    with pytest.raises(FileTooLargeError):
        load(small, max_bytes=5)


def test_an_option_of_another_reader_says_how_to_choose_it(tmp_path):
    path = _write(tmp_path, "t.csv", "user,item,rating\n1,2,3\n2,1,4\n")
    with pytest.raises(InvalidParameterError, match=r"'missing' is not taken by the delimited "
                                                    r"loader.*format="):
        load(path, missing="NA")
    with pytest.raises(InvalidParameterError, match="'format' parameter must be one of"):
        load(path, format="xlsx")


def test_load_table_and_load_basket_directly(tmp_path):
    path = _write(tmp_path, "t.csv", "A,B,C,D\n1,0,1,1\n0,1,1,0\n")
    assert load_table(path).n_ratings == 5
    assert load_basket(path, header=True).n_items == 2  # "1" and "0" as item names


# ----------------------------------------------------------------------------- the CLI
def test_data_describe_reads_both_formats(tmp_path, capsys):
    b = _write(tmp_path, "b.csv", "Coffee,Tea\nJam\nRice,Tea,Bread\n")
    assert cli.main(["data", "describe", str(b)]) == 0
    out = capsys.readouterr().out
    assert "format" in out and "basket" in out and "users          3" in out
    t = _write(tmp_path, "t.csv", "user,A,B,C\nu1,5,,3\nu2,1,2,\n")
    assert cli.main(["data", "describe", str(t), "--format", "table"]) == 0
    assert "table" in capsys.readouterr().out
    bad = _write(tmp_path, "bad.csv", "A,B,C,D\n" + "1,0,1,1\n" * 4 + "0,yes,1,1\n")
    assert cli.main(["data", "describe", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line 6: found 'yes' in column 'B'" in err


def test_the_shipped_samples_hold_their_planted_relations(sample_dir):
    b = load(sample_dir / "baskets.csv")
    assert b.implicit and (b.n_users, b.n_items) == (200, 20)
    baskets = {}
    for u, i in zip(b.users, b.items):
        baskets.setdefault(u, set()).add(b.item_names[i])
    for left, right in [({"Espresso"}, "Coffee"), ({"Croissant"}, "Butter"),
                        ({"Cappuccino"}, "Milk, oat"), ({"Pasta", "Tomatoes"}, "Basil")]:
        having = [s for s in baskets.values() if left <= s]
        assert len(having) >= 5 and all(right in s for s in having), left
    for half in ("Pasta", "Tomatoes"):  # the conjunctive rule holds for neither half alone
        assert any(half in s and "Basil" not in s for s in baskets.values())
    t = load(sample_dir / "ratings-table.csv")
    assert (t.n_users, t.n_items) == (150, 12) and (t.r_min, t.r_max) == (1, 5)
    m = np.full(t.shape, np.nan)
    m[t.users, t.items] = t.values
    col = {t.item_names[k]: k for k in range(t.n_items)}
    for left, right in [("Calculus", "Algebra"), ("Physics", "Calculus"),
                        ("Literature", "History")]:
        fans = m[:, col[left]] >= 4
        assert fans.sum() >= 10 and (m[fans, col[right]] >= 4).all(), left
    assert checks.MAX_LINE_BYTES > 0
