"""Bad input gives a DataError naming the file, the line, what was found and what was expected."""

import os
import zipfile

import pytest

from kmviz.data import load, load_delimited, load_movielens_100k, load_movielens_csv
from kmviz.data import load_movielens_dat, load_zip, max_upload_bytes
from kmviz.exceptions import (
    DataValueError,
    DuplicateRatingsError,
    EmptyDataError,
    FileFormatError,
    FileTooLargeError,
    InvalidParameterError,
    MissingFileError,
)


# --------------------------------------------------------------------------- the file itself
def test_missing_file(tmp_path):
    with pytest.raises(MissingFileError, match=r"nope\.csv: no such file, directory or dataset "
                                               r"name; expected an existing path"):
        load(tmp_path / "nope.csv")
    with pytest.raises(FileNotFoundError, match=r"nope\.csv: file not found"):
        load_delimited(tmp_path / "nope.csv")


def test_unknown_name_lists_the_catalogue():
    with pytest.raises(MissingFileError, match="movielens-small, km-toy, planted-km"):
        load("movielens-smal")


def test_empty_file(write):
    with pytest.raises(EmptyDataError, match=r"empty\.csv: the file is empty \(0 bytes\)"):
        load(write("empty.csv", ""))


def test_blank_file(write):
    with pytest.raises(EmptyDataError, match=r"blank\.csv: the file holds only blank lines"):
        load(write("blank.csv", "\n \n\n"))


def test_header_only(write):
    with pytest.raises(EmptyDataError, match=r"head\.csv: no data lines"):
        load(write("head.csv", "user,item,rating\n"))


def test_binary_content_is_refused_before_parsing(write):
    with pytest.raises(FileFormatError, match=r"bin\.csv, line 2: found binary content \(a NUL "
                                              r"byte.*expected a plain-text file"):
        load(write("bin.csv", b"user,item,rating\n1,\x00\x01\x02,3\n"))


def test_undecodable_text(write):
    with pytest.raises(FileFormatError, match=r"l1\.csv, line 3: found bytes that are not valid "
                                              r"utf-8 text.*encoding='latin-1'"):
        load(write("l1.csv", b"user,item,rating\n1,a,3\n2,caf\xe9,4\n"))
    # the fix in the message works
    assert load(write("l1.csv", b"user,item,rating\n1,a,3\n2,caf\xe9,4\n"),
                encoding="latin-1").n_items == 2


def test_file_too_large_is_checked_before_reading(tmp_path):
    path = tmp_path / "huge.csv"
    with open(path, "wb") as f:  # sparse: 600 MB on paper, nothing on disk, all NUL bytes
        f.truncate(600 * 1024 * 1024)
    # had the file been read first, the NUL bytes would give a binary-content error instead
    with pytest.raises(FileTooLargeError, match=r"huge\.csv: the file is 600\.0 MB, over the "
                                                r"limit of 500\.0 MB.*KMVIZ_MAX_UPLOAD_MB"):
        load(path)


def test_size_limit_option_and_environment(write, monkeypatch):
    path = write("small.csv", "user,item,rating\n1,1,3\n1,2,4\n2,1,5\n")
    with pytest.raises(FileTooLargeError, match=r"over the limit of 10 bytes"):
        load(path, max_bytes=10)
    monkeypatch.setenv("KMVIZ_MAX_UPLOAD_MB", "0.00001")
    assert max_upload_bytes() == 10
    with pytest.raises(FileTooLargeError, match=r"small\.csv: the file is 35 bytes"):
        load(path)
    monkeypatch.setenv("KMVIZ_MAX_UPLOAD_MB", "lots")
    with pytest.raises(InvalidParameterError, match="KMVIZ_MAX_UPLOAD_MB must be a positive"):
        load(path)


# --------------------------------------------------------------------------- layout
def test_wrong_delimiter_finds_one_column(write):
    path = write("semi.csv", "user;item;rating\n1;1;3\n2;2;4\n")
    with pytest.raises(FileFormatError, match=r"semi\.csv, line 1: found 1 column "
                                              r"\('user;item;rating'\) when splitting on comma.*"
                                              r"expected at least 2 columns.*"
                                              r"delimiter=';'"):
        load(path, delimiter=",")
    assert load(path).n_ratings == 2


def test_single_column_file(write):
    with pytest.raises(FileFormatError, match=r"one\.txt, line 2: found 1 column \('17'\).*"
                                              r"expected at least 2 columns"):
        load(write("one.txt", "\n17\n18\n"))


def test_named_column_missing(write):
    path = write("cols.csv", "user,item,rating\n1,1,3\n2,2,4\n")
    with pytest.raises(FileFormatError, match=r"cols\.csv, line 1: no column named 'stars'; "
                                              r"found columns 'user', 'item', 'rating'"):
        load(path, value_col="stars")


def test_named_column_without_header(write):
    path = write("nohead.csv", "1,1,3\n2,2,4\n")
    with pytest.raises(FileFormatError, match=r"nohead\.csv, line 1: user_col='user' names a "
                                              r"column but the file has no header"):
        load(path, user_col="user")


def test_unnamed_column(write):
    path = write("unnamed.csv", "user,,rating\n1,1,3\n2,2,4\n")
    with pytest.raises(FileFormatError, match=r"unnamed\.csv, line 1: the item column \(field "
                                              r"2\) has no name.*header=False"):
        load(path)


def test_short_line_names_its_line(write):
    path = write("short.csv", "user,item,rating\n1,1,3\n\n2,2\n")
    with pytest.raises(FileFormatError, match=r"short\.csv, line 4: found 2 field\(s\) "
                                              r"\('2,2'\) but column 'rating' is field 3"):
        load(path)


def test_extra_field_names_its_line(write):
    path = write("long.csv", "user,item,rating\n1,1,3\n2,2,4,9\n")
    with pytest.raises(FileFormatError, match=r"long\.csv, line 3: found 4 fields; "
                                              r"expected 3 fields"):
        load(path)


def test_empty_id(write):
    path = write("noid.csv", "user,item,rating\n1,1,3\n2, ,4\n")
    with pytest.raises(FileFormatError, match=r"noid\.csv, line 3: empty value in column "
                                              r"'item'"):
        load(path)


# --------------------------------------------------------------------------- values
def test_non_numeric_value_names_line_and_column(write):
    path = write("txt.csv", "user,item,rating\n1,1,3\n\n1,2,abc\n2,1,4\n")
    with pytest.raises(DataValueError, match=r"txt\.csv, line 4: found 'abc' in column "
                                             r"'rating'.*expected a number"):
        load(path)


@pytest.mark.parametrize("bad", ["nan", "NaN", "inf", "-Infinity"])
def test_non_finite_values(write, bad):
    path = write("nan.csv", f"user,item,rating\n1,1,3\n2,2,{bad}\n")
    with pytest.raises(DataValueError, match=rf"nan\.csv, line 3: found '{bad}' in column "
                                             r"'rating', which is not a finite number"):
        load(path)


def test_value_outside_declared_scale(write):
    path = write("scale.csv", "user,item,rating\n1,1,3\n1,2,6\n2,1,4\n")
    with pytest.raises(DataValueError, match=r"scale\.csv, line 3: rating 6 lies outside the "
                                             r"declared scale \[1, 5\]"):
        load(path, r_min=1, r_max=5)


def test_movielens_csv_scale_is_enforced(write):
    path = write("ml/ratings.csv", "userId,movieId,rating,timestamp\n1,1,4,0\n2,1,5.5,0\n")
    with pytest.raises(DataValueError, match=r"ratings\.csv, line 3: rating 5\.5 lies outside "
                                             r"the declared scale \[0\.5, 5\]"):
        load(path)


def test_duplicates_default_error(write):
    path = write("dup.csv", "user,item,rating\n1,1,3\n2,1,4\n1,1,5\n2,1,1\n2,2,3\n")
    with pytest.raises(DuplicateRatingsError, match=r"dup\.csv, line 4: 2 repeated \(user, "
                                                    r"item\) pair\(s\), first user 1 / item 1.*"
                                                    r"duplicates='mean'"):
        load(path)


def test_single_user(write):
    path = write("solo.csv", "user,item,rating\n7,1,3\n7,2,4\n")
    with pytest.raises(EmptyDataError, match=r"solo\.csv: only 1 distinct user\(s\).*"
                                             r"at least 2 users"):
        load(path)


def test_single_item(write):
    path = write("oneitem.csv", "user,item,rating\n1,9,3\n2,9,4\n")
    with pytest.raises(EmptyDataError, match=r"oneitem\.csv: only 1 distinct item\(s\)"):
        load(path)


def test_implicit_true_refuses_non_binary(write):
    path = write("clk.csv", "user,item,clicked\n1,1,1\n2,2,3\n")
    with pytest.raises(DataValueError, match=r"clk\.csv, line 3: found 3 in column 'clicked'; "
                                             r"expected 0 or 1"):
        load_delimited(path, value_col="clicked", implicit=True)


# --------------------------------------------------------------------------- MovieLens formats
def test_movielens_100k_bad_rating(write):
    path = write("ml/u.data", "1\t1\t5\t0\n1\t2\tfive\t0\n2\t1\t4\t0\n")
    with pytest.raises(DataValueError, match=r"u\.data, line 2: found 'five' in column 'rating'"):
        load_movielens_100k(path.parent)


def test_movielens_100k_directory_without_u_data(tmp_path):
    with pytest.raises(MissingFileError, match="no u.data file in this directory"):
        load_movielens_100k(tmp_path)


def test_movielens_100k_out_of_scale(write):
    path = write("ml/u.data", "1\t1\t5\t0\n1\t2\t0\t0\n2\t1\t4\t0\n")
    with pytest.raises(DataValueError, match=r"u\.data, line 2: rating 0 lies outside the "
                                             r"declared scale \[1, 5\]"):
        load(path.parent)


def test_movielens_dat_without_separator(write):
    path = write("ratings.dat", "1,1,5,0\n2,1,4,0\n")
    with pytest.raises(FileFormatError, match=r"ratings\.dat, line 1: found no '::' separator"):
        load_movielens_dat(path)


def test_movielens_csv_wrong_header(write):
    path = write("ratings.csv", "user,movie,stars\n1,1,4\n")
    with pytest.raises(FileFormatError, match=r"ratings\.csv, line 1: found header "
                                              r"'user,movie,stars'; expected a header starting "
                                              r"with userId,movieId,rating"):
        load_movielens_csv(path)


def test_matrix_market_without_banner(write):
    with pytest.raises(FileFormatError, match=r"x\.mtx, line 1: found '3 3 1'; expected a "
                                              r"'%%MatrixMarket"):
        load(write("x.mtx", "3 3 1\n1 1 2\n"))


# --------------------------------------------------------------------------- zip archives
def _zip(path, members):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


@pytest.mark.parametrize("member", ["../evil.csv", "/abs/evil.csv", "a/../../evil.csv"])
def test_zip_members_outside_the_archive_are_refused(tmp_path, member):
    path = _zip(tmp_path / "slip.zip", {member: "user,item,rating\n1,1,3\n2,2,4\n"})
    with pytest.raises(FileFormatError, match=r"slip\.zip: member .*evil\.csv' points outside"):
        load(path)
    assert not (tmp_path / "evil.csv").exists()


def test_zip_uncompressed_size_is_capped(tmp_path):
    path = _zip(tmp_path / "bomb.zip", {"big.csv": "1,1,3\n" * 50_000})
    assert os.path.getsize(path) < 10_000
    with pytest.raises(FileTooLargeError, match=r"bomb\.zip: the archive would extract to "
                                                r"300000 bytes, over the limit of 100000 bytes"):
        load_zip(path, max_bytes=100_000)


def test_zip_errors_name_the_member_and_line(tmp_path):
    path = _zip(tmp_path / "in.zip", {"d/data.csv": "user,item,rating\n1,1,3\n2,2,x\n"})
    with pytest.raises(DataValueError, match=r"in\.zip:d/data\.csv, line 3: found 'x'"):
        load(path)


def test_not_a_zip(write):
    with pytest.raises(FileFormatError, match=r"fake\.zip: is not a valid zip archive"):
        load(write("fake.zip", "user,item\n"))


def test_zip_with_several_data_files(tmp_path):
    path = _zip(tmp_path / "many.zip", {"a.csv": "1,1\n", "b.csv": "1,1\n"})
    with pytest.raises(FileFormatError, match=r"many\.zip: holds a\.csv, b\.csv; expected a "
                                              r"MovieLens folder"):
        load(path)


# --------------------------------------------------------------------------- options
def test_unknown_option_is_named(write):
    path = write("ok.csv", "user,item,rating\n1,1,3\n2,2,4\n")
    with pytest.raises(InvalidParameterError, match="option 'delimeter' is not taken by the "
                                                    "delimited loader"):
        load(path, delimeter=";")
