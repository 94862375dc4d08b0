"""Hostile inputs (issue 13): every one fails as a kmviz ``ValueError`` subclass whose message
names the file (or the run) and the fix, within bounded memory; never a raw ``BadZipFile``,
``MemoryError``, ``TypeError``, ``UnicodeDecodeError`` or ``sqlite3.OperationalError``.

The data files are written by the tests (tmp_path); memory is measured with tracemalloc,
which sees NumPy's allocations.
"""

import gzip
import io
import json
import os
import sqlite3
import struct
import time
import tracemalloc
import zipfile

import numpy as np
import pandas as pd
import pytest

import kmviz.runs.index as runs_module
from kmviz.cli import main as cli_main
from kmviz.data import Ratings, load, load_matrix_market
from kmviz.data.ratings import check_ratings_finite
from kmviz.exceptions import (
    DataError,
    DataValueError,
    EmptyDataError,
    FileFormatError,
    FileTooLargeError,
    KmvizError,
    RunStoreBusyError,
    RunStoreError,
)
from kmviz.runs import RunStore
from kmviz.trace import Trace

MB = 1024 * 1024


@pytest.fixture
def write(tmp_path):
    """write(name, text_or_bytes, encoding="utf-8") -> Path of the new file in tmp_path."""

    def _write(name, content, encoding="utf-8"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding=encoding, newline="\n")
        return path

    return _write


def assert_clear(excinfo, cls, *names, fix=r"Fix: "):
    """The error is ``cls`` (a kmviz ValueError) and its message names ``names`` and a fix."""
    err = excinfo.value
    assert isinstance(err, cls) and isinstance(err, KmvizError) and isinstance(err, ValueError)
    message = str(err)
    for name in names:
        assert str(name) in message, (name, message)
    assert pd.Series([message]).str.contains(fix).all(), message
    return message


def traced_peak(func, *args, **kwargs):
    """(result or exception, peak bytes traced while calling func)."""
    tracemalloc.start()
    try:
        try:
            out = func(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - returned for the caller to check
            out = exc
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ============================================================================ zip archives
RATINGS = b"user,item,rating\n" + b"".join(b"%d,%d,%d\n" % (u, i, 1 + (u + i) % 5)
                                           for u in range(40) for i in range(25))


def make_zip(members, compression=zipfile.ZIP_DEFLATED) -> bytearray:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return bytearray(buf.getvalue())


def patch_headers(data: bytearray, *, local=None, central=None) -> bytearray:
    """Overwrite fields of every local (``PK\\3\\4``) and central (``PK\\1\\2``) header:
    ``{offset: (struct format, value)}``."""
    for signature, fields in ((b"PK\x03\x04", local or {}), (b"PK\x01\x02", central or {})):
        i = data.find(signature)
        while i >= 0:
            for offset, (fmt, value) in fields.items():
                struct.pack_into(fmt, data, i + offset, value)
            i = data.find(signature, i + 4)
    return data


# field offsets in the local / central headers
CRC = {"local": 14, "central": 16}
USIZE = {"local": 22, "central": 24}
FLAGS = {"local": 6, "central": 8}


def forged(field, fmt, value):
    return patch_headers(make_zip({"r.csv": RATINGS}),
                         local={field["local"]: (fmt, value)},
                         central={field["central"]: (fmt, value)})


def test_zip_with_forged_size_fields(tmp_path):
    # the member declares 100 bytes but holds more: zipfile stops there and the CRC fails
    path = tmp_path / "forged.zip"
    path.write_bytes(forged(USIZE, "<I", 100))
    with pytest.raises(FileFormatError) as e:
        load(path)
    assert_clear(e, FileFormatError, "forged.zip", "member 'r.csv' cannot be read",
                 "re-create the archive")


def test_zip_declaring_a_huge_member_is_refused_before_extracting(tmp_path):
    path = tmp_path / "claims.zip"
    path.write_bytes(forged(USIZE, "<I", 4_000_000_000))
    with pytest.raises(FileTooLargeError) as e:
        load(path)
    assert_clear(e, FileTooLargeError, "claims.zip", "would extract to", "KMVIZ_MAX_UPLOAD_MB")


def test_encrypted_zip(tmp_path):
    path = tmp_path / "secret.zip"
    path.write_bytes(forged(FLAGS, "<H", 0x1))
    with pytest.raises(FileFormatError) as e:
        load(path)
    assert_clear(e, FileFormatError, "secret.zip", "member 'r.csv' is encrypted",
                 "without a password")


def test_zip_with_a_bad_crc(tmp_path):
    path = tmp_path / "crc.zip"
    path.write_bytes(forged(CRC, "<I", 0x12345678))
    with pytest.raises(FileFormatError) as e:
        load(path)
    assert_clear(e, FileFormatError, "crc.zip", "Bad CRC-32", "re-create the archive")


def test_zip_with_corrupt_compressed_data(tmp_path):
    data = make_zip({"r.csv": RATINGS})
    start = data.find(b"PK\x03\x04") + 30 + len("r.csv") + 8
    data[start:start + 24] = b"\xff" * 24
    path = tmp_path / "broken.zip"
    path.write_bytes(data)
    with pytest.raises(FileFormatError) as e:
        load(path)
    assert_clear(e, FileFormatError, "broken.zip", "member 'r.csv' cannot be read")


@pytest.mark.parametrize("order", [["d", "d/r.csv"], ["d/r.csv", "d"]])
def test_zip_member_that_is_both_a_file_and_a_folder(tmp_path, order):
    path = tmp_path / "clash.zip"
    path.write_bytes(make_zip({name: (b"x" if name == "d" else RATINGS) for name in order}))
    with pytest.raises(FileFormatError) as e:
        load(path)
    assert_clear(e, FileFormatError, "clash.zip", "member 'd' is both a file and a folder",
                 "re-create the archive")


def test_zip_member_with_a_300_character_name(tmp_path):
    path = tmp_path / "long.zip"
    path.write_bytes(make_zip({"a" * 296 + ".csv": RATINGS}))
    with pytest.raises(FileFormatError) as e:
        load(path)
    assert_clear(e, FileFormatError, "long.zip", "a name of 300 characters",
                 "shorten the names")


def test_zip_member_twice(tmp_path):
    path = tmp_path / "twice.zip"
    path.write_bytes(make_zip({"r.csv": RATINGS}))
    with zipfile.ZipFile(path, "a") as z, pytest.warns(UserWarning, match="Duplicate name"):
        z.writestr("r.csv", b"1,1,1\n")
    with pytest.raises(FileFormatError) as e:
        load(path)
    assert_clear(e, FileFormatError, "twice.zip", "member 'r.csv' appears twice")


def test_zip_with_too_many_members(tmp_path):
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as z:
        for k in range(10_001):
            z.writestr(f"f{k}.txt", b"")
    with pytest.raises(FileFormatError) as e:
        load(path)
    assert_clear(e, FileFormatError, "many.zip", "holds 10,001 members", "zip only the data")


def test_archives_nested_deeply(tmp_path):
    inner = bytes(make_zip({"r.csv": RATINGS}))
    for k in range(5):
        inner = bytes(make_zip({f"level{k}.zip": inner}))
    path = tmp_path / "matryoshka.zip"
    path.write_bytes(inner)
    with pytest.raises(FileFormatError) as e:
        load(path)
    assert_clear(e, FileFormatError, "matryoshka.zip", "nested more than 3 deep",
                 "unpack the inner archives first")


def test_zip_errors_inside_keep_naming_the_archive_and_member(tmp_path):
    path = tmp_path / "in.zip"
    path.write_bytes(make_zip({"data/r.csv": b"user,item,rating\n1,1,3\n2,2,1e308\n"}))
    with pytest.raises(DataValueError) as e:
        load(path)
    assert_clear(e, DataValueError, "in.zip:data/r.csv, line 3", "too large in magnitude")


def test_zip_of_ratings_still_loads(tmp_path):
    path = tmp_path / "ok.zip"
    path.write_bytes(make_zip({"folder/r.csv": RATINGS, "__MACOSX/._r.csv": b"junk"}))
    r = load(path)
    assert (r.n_users, r.n_items, r.n_ratings) == (40, 25, 1000)


# ============================================================================ gzip
def test_gzip_files_load_as_the_uploader_offers(tmp_path):
    path = tmp_path / "ratings.csv.gz"
    path.write_bytes(gzip.compress(RATINGS))
    r = load(path)
    assert (r.n_users, r.n_items, r.n_ratings) == (40, 25, 1000)
    assert r.name == "ratings.csv.gz" and r.source == str(path)
    mtx = tmp_path / "m.mtx.gz"
    mtx.write_bytes(gzip.compress(b"%%MatrixMarket matrix coordinate real general\n"
                                  b"3 3 3\n1 1 2\n2 3 4\n3 2 1\n"))
    assert load(mtx).n_ratings == 3


def test_gzip_upload_type_is_offered_and_loads(tmp_path):
    pytest.importorskip("streamlit")
    from kmviz.ui.datasets import UPLOAD_TYPES

    for ext in UPLOAD_TYPES:
        if ext == "gz":
            path = tmp_path / "upload.csv.gz"
            path.write_bytes(gzip.compress(RATINGS))
            assert load(path).n_ratings == 1000


def test_gzip_bomb_is_capped_while_decompressing(tmp_path):
    path = tmp_path / "bomb.csv.gz"
    path.write_bytes(gzip.compress(b"1,1,1\n" * 200_000))  # 1.2 MB from a few KB
    assert path.stat().st_size < 20_000
    with pytest.raises(FileTooLargeError) as e:
        load(path, max_bytes=100_000)
    assert_clear(e, FileTooLargeError, "bomb.csv.gz", "decompresses to more than 100000 bytes",
                 "KMVIZ_MAX_UPLOAD_MB")


def test_truncated_gzip(tmp_path):
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(gzip.compress(RATINGS)[:60])
    with pytest.raises(FileFormatError) as e:
        load(path)
    assert_clear(e, FileFormatError, "cut.csv.gz", "not a readable gzip file",
                 "compress the file again")


def test_gzip_errors_name_the_gzip_file_and_line(tmp_path):
    path = tmp_path / "bad.csv.gz"
    path.write_bytes(gzip.compress(b"user,item,rating\n1,1,3\n2,2,abc\n"))
    with pytest.raises(DataValueError) as e:
        load(path)
    assert_clear(e, DataValueError, "bad.csv.gz, line 3", "found 'abc'")


# ============================================================================ Matrix Market
def test_matrix_market_absurd_dimensions_allocate_nothing_of_their_size(tmp_path):
    path = tmp_path / "huge.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n"
                    "100000000 100000000 3\n1 1 2\n5 7 3\n99999999 3 1\n")
    r, peak = traced_peak(load, path)
    assert isinstance(r, Ratings), r
    assert peak < 20 * MB  # np.arange(10**8) id lists took 2.4 GB
    assert list(r.user_ids) == [1, 5, 99999999] and list(r.item_ids) == [1, 3, 7]


def test_matrix_market_declaring_a_billion_entries_is_refused_before_allocating(tmp_path):
    path = tmp_path / "nnz.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n"
                    "3 3 1000000000\n1 1 2\n2 2 3\n")
    err, peak = traced_peak(load, path)
    assert isinstance(err, FileFormatError), err
    assert peak < 20 * MB  # scipy preallocated 3.7 GB
    msg = str(err)
    assert "nnz.mtx, line 2: the size line declares 1,000,000,000 entries" in msg
    assert "Fix: correct the size line" in msg


def test_matrix_market_with_fewer_entries_than_declared(tmp_path):
    path = tmp_path / "short.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n% comment\n"
                    "3 3 3\n1 1 2\n2 2 3\n" + "\n" * 20)
    with pytest.raises(FileFormatError) as e:
        load(path)
    assert_clear(e, FileFormatError, "short.mtx, line 3",
                 "declares 3 entries but the file holds 2")


def test_matrix_market_dense_array_larger_than_the_file(tmp_path):
    path = tmp_path / "dense.mtx"
    path.write_text("%%MatrixMarket matrix array real general\n1000000 1000000\n1\n2\n")
    err, peak = traced_peak(load, path)
    assert isinstance(err, FileFormatError) and peak < 20 * MB
    assert "dense.mtx, line 2: the size line declares 1,000,000,000,000 entries" in str(err)


@pytest.mark.parametrize("entry, found", [("4 1 2", "row number 4"),
                                          ("1 0 2", "column number 0"),
                                          ("1.5 1 2", "row number 1.5")])
def test_matrix_market_entry_outside_the_declared_size(tmp_path, entry, found):
    path = tmp_path / "out.mtx"
    path.write_text(f"%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n{entry}\n")
    with pytest.raises(DataValueError) as e:
        load(path)
    assert_clear(e, DataValueError, "out.mtx, line 4", found, "integer from 1 to 3")


@pytest.mark.parametrize("banner, found", [
    ("%%MatrixMarket matrix coordinate complex general", "holds complex values"),
    ("%%MatrixMarket tensor coordinate real general", "found the banner"),
    ("%%MatrixMarket matrix array real symmetric", "in array format, which is not read"),
])
def test_matrix_market_bad_banner(tmp_path, banner, found):
    path = tmp_path / "banner.mtx"
    path.write_text(f"{banner}\n2 2 2\n1 1 1 0\n2 2 1 0\n")
    with pytest.raises(FileFormatError) as e:
        load_matrix_market(path)
    assert_clear(e, FileFormatError, "banner.mtx, line 1", found)


def test_matrix_market_bad_size_line(tmp_path):
    path = tmp_path / "size.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n3 x 3\n1 1 1\n")
    with pytest.raises(FileFormatError) as e:
        load(path)
    assert_clear(e, FileFormatError, "size.mtx, line 2", "found the size line '3 x 3'")


def test_matrix_market_symmetric_and_pattern(tmp_path):
    sym = tmp_path / "sym.mtx"
    sym.write_text("%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 2\n2 1 3\n"
                   "3 2 1\n")
    r = load(sym)
    assert r.n_ratings == 5 and r.csr[0, 1] == 3 and r.csr[1, 0] == 3
    pat = tmp_path / "pat.mtx"
    pat.write_text("%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 1\n2 3\n3 2\n")
    assert load(pat).implicit


# ============================================================================ text files
def test_plain_and_text_ids(write):
    r = load(write("ids.csv", "user,item,rating\n007,a,1\n7,a,2\n7,b,3\n"))
    assert sorted(r.user_ids) == ["007", "7"] and r.n_users == 2  # two users
    ints = load(write("ints.csv", "user,item,rating\n1,10,1\n-2,10,2\n1,20,3\n0,20,1\n"))
    assert ints.user_ids.dtype == np.int64 and list(ints.user_ids) == [-2, 0, 1]
    plus = load(write("plus.csv", "user,item,rating\n+7,a,1\n7,b,2\n"))
    assert sorted(plus.user_ids) == ["+7", "7"]


def test_text_id_after_many_integer_ids_keeps_every_id(write):
    rows = "".join(f"{u},{u % 7},{1 + u % 5}\n" for u in range(1, 20_001))
    r = load(write("late.csv", "user,item,rating\n" + rows + "0042,3,4\n"))
    assert r.n_users == 20_001 and r.user_ids.dtype == object
    assert "0042" in set(r.user_ids) and "42" in set(r.user_ids)
    assert r.item_ids.dtype == np.int64  # the item column stays integer
    assert r.csr[list(r.user_ids).index("0042"), list(r.item_ids).index(3)] == 4


def test_utf8_u_item_is_read_as_utf8(write):
    write("ml/u.data", "1\t10\t5\t0\n2\t20\t3\t0\n2\t10\t1\t0\n")
    flags = "|".join(["0"] * 19)
    write("ml/u.item", f"10|Café Society (1995)|01-Jan-1995||u|{flags}\n"
                       f"20|Ōkami (2006)|01-Jan-2006||u|{flags}\n", encoding="utf-8")
    r = load(write("ml/u.user", "1|24|M|x|1\n2|30|F|y|2\n").parent)
    assert list(r.item_names) == ["Café Society (1995)", "Ōkami (2006)"]  # not CafÃ©


def test_value_a_rounding_error_beyond_the_scale_is_clipped(write):
    r = load(write("round.csv", "user,item,rating\n1,1,1.0000000000000002\n2,1,0\n1,2,0.5\n"),
             r_min=0, r_max=1)
    assert r.values.max() == 1.0 and r.info["clipped_to_scale"] == 1
    arrays = Ratings.from_arrays([1, 2, 1], [1, 1, 2], [1 + 2.3e-16, -1e-17, 0.5],
                                 r_min=0, r_max=1)
    assert arrays.values.min() == 0.0 and arrays.values.max() == 1.0
    with pytest.raises(DataValueError, match=r"rating 1.001 lies outside the declared scale"):
        Ratings.from_arrays([1, 2], [1, 2], [1.001, 0.5], r_min=0, r_max=1)


def test_huge_values_are_refused_at_load(write):
    with pytest.raises(DataValueError) as e:
        load(write("huge.csv", "user,item,rating\n1,1,3\n2,2,1e308\n1,2,4\n"))
    assert_clear(e, DataValueError, "huge.csv, line 3", "rating value 1e+308 is too large",
                 "check the value column")
    with pytest.raises(DataValueError, match=r"r_max=1e\+300 is not a usable scale bound"):
        Ratings.from_arrays([1, 2], [1, 2], [1.0, 2.0], r_min=0, r_max=1e300)


def test_non_finite_value_count_covers_the_whole_file(write):
    rows = "".join(f"{u},{u % 9},3\n" for u in range(1, 30_000))
    path = write("nans.csv", "user,item,rating\n1,100,nan\n" + rows + "5,100,inf\n")
    with pytest.raises(DataValueError) as e:
        load(path)
    assert_clear(e, DataValueError, "nans.csv, line 2", "(2 such value(s) in all)",
                 "remove or fill")


def test_binary_file_is_refused_at_its_first_block(tmp_path):
    path = tmp_path / "image.csv"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 3_000_000)
    with pytest.raises(FileFormatError) as e:
        load(path)
    assert_clear(e, FileFormatError, "image.csv, line 3", "found binary content", "export")


def test_check_ratings_finite():
    train = Ratings.from_arrays([1, 2, 1], [1, 1, 2], [1.0, 5.0, 3.0], r_min=1, r_max=5,
                                name="train")
    check_ratings_finite(train, "training data")
    nan = train._replace_entries(train.users, train.items, np.array([1.0, np.nan, 3.0]),
                                 name="val")
    with pytest.raises(DataValueError, match=r"validation data \(val\) holds 1 value\(s\) "
                                             r"that are not finite.*Fix: remove or fill"):
        check_ratings_finite(nan, "validation data")
    off = train._replace_entries(train.users, train.items, np.array([1.0, 85.0, 3.0]),
                                 name="val")
    with pytest.raises(DataValueError, match=r"outside the rating scale \[1, 5\].*85.*Fix: "):
        check_ratings_finite(off, "validation data", scale=(train.r_min, train.r_max))
    edge = train._replace_entries(train.users, train.items, np.array([1.0, 5 + 1e-15, 3.0]))
    check_ratings_finite(edge, "validation data")  # a rounding error is fine


# ============================================================================ memory
def _generated_csv(path, n, text_ids=False):
    k = np.arange(n, dtype=np.int64)
    key = (k * 2_654_435_761) % (20_000 * 6_000)
    users, items = key // 6_000, key % 6_000
    frame = pd.DataFrame({
        "user": pd.Series(users).map("user-{}".format) if text_ids else users,
        "item": pd.Series(items).map("item-{}".format) if text_ids else items,
        "rating": 1 + k % 5, "timestamp": 900_000_000 + k})
    frame.to_csv(path, index=False)
    return path


def _final_bytes(r):
    total = sum(a.nbytes for a in (r.users, r.items, r.values, r.user_ids, r.item_ids))
    for ids in (r.user_ids, r.item_ids):
        if ids.dtype == object:
            total += sum(len(x) + 50 for x in ids)
    return total


@pytest.mark.slow
@pytest.mark.parametrize("text_ids", [False, True])
def test_load_peak_memory_is_within_4x_text_plus_final_arrays(tmp_path, text_ids):
    path = _generated_csv(tmp_path / "big.csv", 150_000, text_ids)
    load(path)  # imports and caches out of the measurement
    r, peak = traced_peak(load, path)
    assert isinstance(r, Ratings), r
    text = path.stat().st_size
    budget = 4 * text + _final_bytes(r)
    assert peak <= budget, f"peak {peak / MB:.1f} MB > budget {budget / MB:.1f} MB"


#: Each case loads 150,000 rows twice under tracemalloc (15-25 s on a busy box): the fast loop
#: keeps one gz and the nested zip, with text ids (the most memory); the rest are slow.
_SLOW = pytest.mark.slow


@pytest.mark.parametrize("archive, text_ids", [
    pytest.param("zip", False, marks=_SLOW), pytest.param("zip", True, marks=_SLOW),
    pytest.param("gz", False, marks=_SLOW), ("gz", True),
    pytest.param("zip in zip", False, marks=_SLOW), ("zip in zip", True)])
def test_archive_load_peak_memory_is_within_4x_text_plus_final_arrays(tmp_path, text_ids,
                                                                       archive):
    """An archive streams its text to a temporary file: the bound of a plain file holds
    with the expanded text as the text."""
    plain = _generated_csv(tmp_path / "big.csv", 150_000, text_ids)
    data = plain.read_bytes()
    if archive == "gz":
        path = tmp_path / "big.csv.gz"
        path.write_bytes(gzip.compress(data))
    else:
        path = tmp_path / "big.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("big.csv", data)
        if archive == "zip in zip":
            inner = path.read_bytes()
            path = tmp_path / "outer.zip"
            with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("big.zip", inner)
    load(path)  # imports and caches out of the measurement
    r, peak = traced_peak(load, path)
    assert isinstance(r, Ratings), r
    budget = 4 * len(data) + _final_bytes(r)
    assert peak <= budget, f"peak {peak / MB:.1f} MB > budget {budget / MB:.1f} MB"


# ============================================================================ the run store
def make_trace():
    t = Trace("km.enhanced", {"D": 2})
    t.record(objective=1.0, train_nrmse=0.2)
    t.stop_reason = "max_iter"
    return t


@pytest.fixture
def store(tmp_path):
    return RunStore(tmp_path / "store")


def save(store, **arrays):
    return store.save("km", make_trace(), arrays or {"theta": np.ones((3, 2))}, dataset="toy",
                      params={"D": 2}, metrics={"validation_nrmse": 0.2})


def show(capsys, store, run_id):
    code = cli_main(["runs", "show", run_id, "--dir", str(store.path)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("trace, found", [
    ({"solver": "km", "rows": "abc"}, "'rows' is the string 'abc'"),
    ({"solver": "km", "rows": [[1, 2]]}, "rows[0] is a list"),
    ({"solver": "km", "rows": [{"a": [1, 2]}]}, "rows[0]['a'] is a list"),
    ({"solver": 5, "rows": []}, "'solver' is a number"),
    ({"solver": "km", "rows": [], "params": [1]}, "'params' is a list"),
    ({"solver": "km", "rows": [], "format": "2"}, "'format' is the string '2'"),
    ({"solver": "km", "rows": [], "events": {"a": 1}}, "'events' is an object"),
    ({"solver": "km", "rows": [], "stop_reason": 3}, "'stop_reason' is a number"),
    ([1, 2, 3], "expected a JSON object with 'solver' and 'rows'"),
])
def test_trace_json_with_wrong_types(store, capsys, trace, found):
    run_id = save(store)
    (store.runs_dir / run_id / "trace.json").write_text(json.dumps(trace))
    with pytest.raises(RunStoreError) as e:
        store.load(run_id)
    assert_clear(e, RunStoreError, f"Run {run_id!r}: trace.json", found,
                 fix=f"Fix: delete the run \\(kmviz runs delete {run_id}")
    code, out, err = show(capsys, store, run_id)
    assert code != 0 and err.startswith(f"error: Run {run_id!r}: trace.json") and found in err


def test_trace_json_that_is_not_utf8(store, capsys):
    run_id = save(store)
    (store.runs_dir / run_id / "trace.json").write_bytes(b'{"solver": "km\xff", "rows": []}')
    with pytest.raises(RunStoreError) as e:
        store.load(run_id)
    assert_clear(e, RunStoreError, run_id, "trace.json", "not UTF-8 text")
    code, _, err = show(capsys, store, run_id)
    assert code != 0 and "not UTF-8 text" in err and "Traceback" not in err


@pytest.mark.parametrize("key, value, found", [
    ("params", [1, 2], "'params' is a list"),
    ("dataset", "toy", "'dataset' is a str"),
    ("label", 5, "'label' is a int"),
    ("duration_s", "slow", "'duration_s' is a str"),
])
def test_meta_json_with_wrong_types(store, capsys, key, value, found):
    run_id = save(store)
    path = store.runs_dir / run_id / "meta.json"
    meta = json.loads(path.read_text())
    meta[key] = value
    path.write_text(json.dumps(meta))
    with pytest.raises(RunStoreError) as e:
        store.load(run_id)
    assert_clear(e, RunStoreError, run_id, found)
    code, _, err = show(capsys, store, run_id)
    assert code != 0 and found in err


def test_meta_json_that_is_not_utf8(store):
    run_id = save(store)
    (store.runs_dir / run_id / "meta.json").write_bytes(b'{"format": 2, "label": "\xff"}')
    with pytest.raises(RunStoreError) as e:
        store.load(run_id)
    assert_clear(e, RunStoreError, run_id, "meta.json is malformed")


def _npz_with_header(shape, data: bytes, dtype="<f8") -> bytes:
    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        member, {"descr": dtype, "fortran_order": False, "shape": shape})
    member.write(data)
    return bytes(make_zip({"theta.npy": member.getvalue()}, zipfile.ZIP_STORED))


def test_npy_header_claiming_1e11_floats(store):
    run_id = save(store)
    (store.runs_dir / run_id / "arrays.npz").write_bytes(
        _npz_with_header((10 ** 11,), b"\x00" * 80))
    err, peak = traced_peak(store.load, run_id)
    assert isinstance(err, RunStoreError), err  # was MemoryError (745 GiB)
    assert peak < 20 * MB
    assert f"Run {run_id!r}: arrays.npz member 'theta.npy' declares shape (100000000000,)" \
        in str(err) and "Fix: delete the run" in str(err)


def test_npz_inflating_to_1_6_gb_is_refused_before_reading(store):
    run_id = save(store)
    n = 200_000_000  # 1.6 GB of float64
    data = bytearray(_npz_with_header((n,), b"\x00" * 800))
    header_len = data.find(b"\x00" * 800) - data.find(b"\x93NUMPY")
    size = header_len + 8 * n  # the zip's size fields forged to agree with the header
    patch_headers(data, local={USIZE["local"]: ("<I", size), 18: ("<I", size)},
                  central={USIZE["central"]: ("<I", size), 20: ("<I", size)})
    (store.runs_dir / run_id / "arrays.npz").write_bytes(bytes(data))
    err, peak = traced_peak(store.load, run_id)
    assert isinstance(err, RunStoreError), err
    assert peak < 50 * MB  # nothing of the declared size was allocated
    assert "its arrays take more than 1,024 MB" in str(err)
    assert "Fix: if the run is genuine, set KMVIZ_MAX_RUN_MB" in str(err)


def test_genuine_compressed_arrays_over_the_limit(store, monkeypatch):
    run_id = save(store, theta=np.zeros((512, 512)))  # 2 MB, compresses to little
    buf = io.BytesIO()
    np.savez_compressed(buf, theta=np.zeros((512, 512)))
    (store.runs_dir / run_id / "arrays.npz").write_bytes(buf.getvalue())
    monkeypatch.setenv("KMVIZ_MAX_RUN_MB", "1")
    with pytest.raises(RunStoreError, match=r"its arrays take more than 1 MB.*KMVIZ_MAX_RUN_MB"):
        store.load(run_id)
    monkeypatch.setenv("KMVIZ_MAX_RUN_MB", "4")
    assert store.load(run_id).arrays["theta"].shape == (512, 512)


def test_npz_member_with_a_bad_crc(store):
    run_id = save(store)
    path = store.runs_dir / run_id / "arrays.npz"
    data = bytearray(path.read_bytes())
    patch_headers(data, local={CRC["local"]: ("<I", 1)}, central={CRC["central"]: ("<I", 1)})
    path.write_bytes(bytes(data))
    with pytest.raises(RunStoreError) as e:
        store.load(run_id)
    assert_clear(e, RunStoreError, run_id, "arrays.npz member 'theta.npy'", "Bad CRC-32")


# ------------------------------------------------------------------ the index
def _foreign_index(root, schema):
    root.mkdir(parents=True)
    (root / "runs").mkdir()
    conn = sqlite3.connect(root / "index.sqlite")
    conn.executescript(schema)
    conn.commit()
    conn.close()
    return root / "index.sqlite"


@pytest.mark.parametrize("schema, found", [
    ("CREATE TABLE runs (run_id TEXT PRIMARY KEY, label TEXT, created TEXT);"
     "INSERT INTO runs VALUES ('a', 'b', 'c');",
     "its 'runs' table lacks the column(s) family, dataset, fingerprint"),
    ("CREATE TABLE photos (id INTEGER, path TEXT); INSERT INTO photos VALUES (1, 'x');",
     "it holds the tables 'photos' but no 'runs'"),
])
def test_old_or_foreign_index_is_refused_and_left_unchanged(tmp_path, capsys, schema, found):
    index = _foreign_index(tmp_path / "s", schema)
    before = index.read_bytes()
    mtime = index.stat().st_mtime_ns
    with pytest.raises(RunStoreError) as e:
        RunStore(tmp_path / "s").list()  # was sqlite3.OperationalError: no such column
    assert_clear(e, RunStoreError, str(index), found, "kmviz left it unchanged",
                 fix="Fix: point kmviz at another run directory")
    assert index.read_bytes() == before and index.stat().st_mtime_ns == mtime
    assert cli_main(["runs", "list", "--dir", str(tmp_path / "s")]) != 0
    assert found in capsys.readouterr().err
    assert index.read_bytes() == before


def test_index_with_an_unknown_schema_version_is_refused(tmp_path):
    store = RunStore(tmp_path / "s")
    save(store)
    conn = sqlite3.connect(store.index_path)
    conn.execute("PRAGMA user_version = 0")
    conn.close()
    before = store.index_path.read_bytes()
    with pytest.raises(RunStoreError, match="its schema version is 0, which no kmviz wrote"):
        RunStore(tmp_path / "s").list()
    assert store.index_path.read_bytes() == before


V1_SCHEMA = """
CREATE TABLE runs (run_id TEXT PRIMARY KEY, family TEXT NOT NULL, label TEXT NOT NULL,
    dataset TEXT, fingerprint TEXT, created TEXT NOT NULL, duration_s REAL, n_iter INTEGER,
    status TEXT NOT NULL, params TEXT NOT NULL, metrics TEXT NOT NULL, format INTEGER NOT NULL);
PRAGMA user_version = 1;
"""


def test_busy_index_says_busy_not_foreign(tmp_path, monkeypatch):
    index = _foreign_index(tmp_path / "s", V1_SCHEMA)  # kmviz 0.1.0's: needs migrating
    monkeypatch.setattr(runs_module, "_BUSY_TIMEOUT_MS", 200)
    holder = sqlite3.connect(index, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holding the lock
    try:
        with pytest.raises(RunStoreBusyError) as e:
            RunStore(tmp_path / "s").list()
        msg = assert_clear(e, RunStoreBusyError, str(index), "is busy", fix="try again")
        assert "not a kmviz run index" not in msg and "Move it away" not in msg
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    store = RunStore(tmp_path / "s")
    assert store.list().empty  # migrated once the lock is free
    conn = sqlite3.connect(index)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == runs_module.INDEX_SCHEMA
    conn.close()


def test_save_while_another_writer_holds_the_lock(store, monkeypatch):
    kept = save(store)
    monkeypatch.setattr(runs_module, "_BUSY_TIMEOUT_MS", 200)
    holder = sqlite3.connect(store.index_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        assert list(RunStore(store.path).list()["run_id"]) == [kept]  # readers go on
        with pytest.raises(RunStoreBusyError) as e:
            save(RunStore(store.path))
        assert_clear(e, RunStoreBusyError, str(store.index_path), "busy", fix="try again")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert sorted(p.name for p in store.runs_dir.iterdir()) == [kept]  # nothing half-saved


def test_list_reindexes_a_complete_run_without_its_row(store):
    kept, lost = save(store), save(store)
    conn = sqlite3.connect(store.index_path)
    conn.execute("DELETE FROM runs WHERE run_id = ?", (lost,))  # killed before the insert
    conn.commit()
    conn.close()
    fresh = store.runs_dir / lost
    assert sorted(store.list()["run_id"]) == [kept]  # too young: its writer may be alive
    old = time.time() - 3600
    os.utime(fresh, (old, old))
    assert sorted(store.list()["run_id"]) == sorted([kept, lost])
    assert store.load(lost).arrays["theta"].shape == (3, 2)


def test_list_skips_unreadable_orphan_folders(store):
    kept = save(store)
    junk = store.runs_dir / "20200101-000000-deadbeef"
    junk.mkdir()
    (junk / "meta.json").write_text("{broken")
    old = time.time() - 3600
    os.utime(junk, (old, old))
    assert list(store.list()["run_id"]) == [kept]
    assert store.repair()["unreadable"] == ["20200101-000000-deadbeef"]


def test_every_error_class_here_is_a_value_error():
    for cls in (DataError, EmptyDataError, FileFormatError, FileTooLargeError,
                DataValueError, RunStoreError, RunStoreBusyError):
        assert issubclass(cls, ValueError) and issubclass(cls, KmvizError)
