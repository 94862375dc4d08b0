"""Tests of the file readers on small files written by the tests."""

import zipfile

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from kmviz.data import (
    detect_format,
    load,
    load_delimited,
    load_matrix_market,
    load_movielens_100k,
    load_movielens_dat,
    load_zip,
)
from kmviz.exceptions import DataValueError


def value_of(r, user, item):
    u = list(r.user_ids).index(user)
    i = list(r.item_ids).index(item)
    return r.csr[u, i]


# --------------------------------------------------------------------------- MovieLens 100K
def test_movielens_100k_directory(ml100k_dir):
    r = load_movielens_100k(ml100k_dir)
    assert (r.n_users, r.n_items, r.n_ratings) == (3, 3, 5)
    assert (r.r_min, r.r_max) == (1.0, 5.0)
    # "3 " with a trailing blank in u.data still reads as 3
    assert value_of(r, 1, 20) == 3.0
    assert list(r.item_names) == ["Café Society (1995)", "Heat (1995)", "unknown"]
    f = r.item_features
    assert f.shape == (3, 20) and f.loc[10, "Action"] == 1 and f.loc[10, "Comedy"] == 1
    assert f.loc[20, "Drama"] == 1 and f.loc[20, "Action"] == 0
    assert f.loc[10, "year"] == 1995 and np.isnan(f.loc[30, "year"])
    u = r.user_features
    assert list(u.columns) == ["age", "gender", "occupation"]
    assert u.loc[2, "age"] == 53 and u.loc[2, "gender"] == "F"
    assert u.loc[3, "occupation"] == "writer"


def test_movielens_formats_are_named_after_their_folder_not_movielens(ml100k_dir, write,
                                                                     tmp_path):
    # the layout does not make data MovieLens: the name says folder and format
    assert load_movielens_100k(ml100k_dir).name == "ml (MovieLens 100K format)"
    assert load(ml100k_dir / "u.data").name == "ml (MovieLens 100K format)"
    dat = write("one-m/ratings.dat", "1::1::5::0\n2::2::4::0\n")
    assert load(dat.parent).name == "one-m (MovieLens 1M/10M format)"
    csv = write("latest/ratings.csv", "userId,movieId,rating\n1,1,4.0\n2,2,3.5\n")
    assert load(csv).name == "latest (MovieLens latest format)"
    flat = tmp_path / "my-export.zip"  # u.data at the archive's top level
    with zipfile.ZipFile(flat, "w") as z:
        for f in ml100k_dir.iterdir():
            z.write(f, f.name)
    assert load(flat).name == "my-export (MovieLens 100K format)"


def test_movielens_100k_from_u_data_path_and_load(ml100k_dir):
    r = load(ml100k_dir / "u.data")
    assert r.item_names is not None and r.n_ratings == 5
    assert detect_format(ml100k_dir) == "movielens-100k"


def test_movielens_100k_without_side_files(write):
    path = write("bare/u.data", "1\t1\t5\t0\n2\t2\t4\t0\n")
    r = load(path.parent)
    assert r.item_names is None and r.user_features is None and r.n_ratings == 2


# --------------------------------------------------------------------------- MovieLens 1M / 10M
def test_movielens_dat_with_movies_and_users(write):
    path = write("m1/ratings.dat",
                 "1::1193::5::978300760\n1::661::3::978302109\n2::1193::4::978298413\n")
    write("m1/movies.dat", "1193::One Flew Over the Cuckoo's Nest (1975)::Drama\n"
                           "661::James and the Giant Peach (1996)::Animation|Children's|Musical\n",
          encoding="latin-1")
    write("m1/users.dat", "1::F::1::10::48067\n2::M::56::16::70072\n")
    r = load(path.parent)
    assert (r.n_users, r.n_items, r.n_ratings) == (2, 2, 3)
    assert (r.r_min, r.r_max) == (1.0, 5.0)
    assert list(r.item_names) == ["James and the Giant Peach (1996)",
                                  "One Flew Over the Cuckoo's Nest (1975)"]
    f = r.item_features
    assert set(f.columns) == {"Animation", "Children's", "Musical", "Drama", "year"}
    assert f.loc[661, "Musical"] == 1 and f.loc[1193, "Musical"] == 0
    assert f.loc[1193, "year"] == 1975
    assert r.user_features.loc[2, "gender"] == "M" and r.user_features.loc[2, "age"] == 56


def test_movielens_10m_half_stars_get_half_star_scale(write):
    path = write("ratings.dat", "1::122::5::838985046\n1::185::4.5::838983525\n2::122::0.5::1\n")
    r = load_movielens_dat(path)
    assert (r.r_min, r.r_max) == (0.5, 5.0)
    assert detect_format(path) == "movielens-dat"


# --------------------------------------------------------------------------- MovieLens latest
def test_movielens_latest_csv_with_movies(write):
    path = write("lat/ratings.csv", "userId,movieId,rating,timestamp\n1,1,4.0,964982703\n"
                             "1,3,4.5,964981247\n2,1,0.5,964982224\n")
    write("lat/movies.csv", 'movieId,title,genres\n1,Toy Story (1995),Adventure|Animation\n'
                            '3,"American President, The (1995)",Comedy|Drama|Romance\n'
                            '5,Nothing (2000),(no genres listed)\n')
    r = load(path.parent)
    assert detect_format(path.parent) == "movielens-csv" == detect_format(path)
    assert (r.r_min, r.r_max) == (0.5, 5.0)
    assert (r.n_users, r.n_items, r.n_ratings) == (2, 2, 3)
    assert list(r.item_names) == ["Toy Story (1995)", "American President, The (1995)"]
    f = r.item_features
    assert "(no genres listed)" not in f.columns
    assert f.loc[3, "Romance"] == 1 and f.loc[1, "Romance"] == 0 and f.loc[3, "year"] == 1995


# --------------------------------------------------------------------------- delimited
def test_csv_with_header_is_detected(write):
    path = write("t.csv", "user,item,rating\nalice,x,4\nbob,x,2\nbob,y,5\n")
    r = load(path)
    assert (r.n_users, r.n_items) == (2, 2) and not r.implicit
    assert value_of(r, "bob", "y") == 5.0
    assert detect_format(path) == "delimited"


@pytest.mark.parametrize("sep", [",", "\t", ";", "|", " "])
def test_delimiter_is_sniffed(write, sep):
    rows = ["1", "1", "3"], ["1", "2", "4"], ["2", "1", "5"]
    path = write("s.txt", "\n".join(sep.join(r) for r in rows) + "\n")
    r = load_delimited(path)
    assert r.n_ratings == 3 and value_of(r, 2, 1) == 5.0


def test_explicit_columns_by_name_and_position(write):
    path = write("c.csv", "ts,score,movie,person\n9,4,m1,p1\n9,2,m2,p1\n9,5,m1,p2\n")
    by_name = load_delimited(path, user_col="person", item_col="movie", value_col="score")
    by_pos = load_delimited(path, user_col=3, item_col=2, value_col=1)
    assert by_name.fingerprint() == by_pos.fingerprint()
    assert value_of(by_name, "p2", "m1") == 5.0


def test_header_false_reads_first_line_as_data(write):
    path = write("h.csv", "1,1,3\n1,2,4\n2,1,5\n")
    assert load_delimited(path, header=False).n_ratings == 3
    assert load_delimited(path).n_ratings == 3


def test_two_columns_are_implicit_interactions(write):
    path = write("i.tsv", "u1\ti1\nu1\ti2\nu2\ti1\n")
    r = load(path)
    assert r.implicit and np.all(r.values == 1.0) and (r.r_min, r.r_max) == (0.0, 1.0)


def test_value_col_none_reads_interactions(write):
    path = write("v.csv", "user,item,rating\n1,1,5\n1,2,4\n2,2,1\n")
    assert load(path, value_col=None).implicit


def test_implicit_true_keeps_the_ones(write):
    path = write("b.csv", "user,item,clicked\n1,1,1\n1,2,0\n2,2,1\n2,1,1\n")
    r = load_delimited(path, value_col="clicked", implicit=True)
    assert r.implicit and r.n_ratings == 3


def test_blank_lines_are_skipped(write):
    path = write("gap.csv", "user,item,rating\n\n1,1,3\n\n1,2,4\n2,1,5\n\n")
    assert load(path).n_ratings == 3


def test_duplicates_option(write):
    path = write("dup.csv", "user,item,rating\n1,1,2\n1,1,4\n2,2,5\n")
    r = load(path, duplicates="mean")
    assert value_of(r, 1, 1) == 3.0 and r.info["duplicates_merged"] == 1


def test_declared_scale(write):
    path = write("sc.csv", "user,item,rating\n1,1,2\n1,2,3\n2,1,4\n")
    r = load(path, r_min=1, r_max=5)
    assert (r.r_min, r.r_max) == (1.0, 5.0)


# --------------------------------------------------------------------------- Matrix Market
def test_matrix_market_explicit_entries_are_observed(tmp_path):
    m = sp.coo_matrix(([4.0, 0.0, 2.5, 1.0], ([0, 0, 1, 2], [0, 2, 1, 3])), shape=(3, 4))
    path = tmp_path / "m.mtx"
    scipy.io.mmwrite(str(path), m)
    r = load(path)
    assert (r.n_users, r.n_items, r.n_ratings) == (3, 4, 4)
    assert list(r.user_ids) == [1, 2, 3] and r.csr[0, 2] == 0.0 and r.csr[1, 1] == 2.5
    assert detect_format(path) == "matrix-market"


def test_matrix_market_pattern_is_implicit(write):
    path = write("p.mtx", "%%MatrixMarket matrix coordinate pattern general\n% c\n3 3 3\n"
                          "1 1\n2 2\n3 1\n")
    r = load_matrix_market(path)
    assert r.implicit and r.n_ratings == 3


# --------------------------------------------------------------------------- zip
def test_zipped_movielens_directory(ml100k_dir, tmp_path):
    path = tmp_path / "ml.zip"
    with zipfile.ZipFile(path, "w") as z:
        for f in ml100k_dir.iterdir():
            z.write(f, f"ml-100k/{f.name}")
        z.writestr("__MACOSX/ml-100k/._u.data", "junk")
    r = load(path)
    assert r.n_ratings == 5 and r.item_names is not None and r.user_features is not None
    assert r.source == str(path) and r.name == "ml-100k (MovieLens 100K format)"


def test_zipped_single_csv(tmp_path):
    path = tmp_path / "one.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("data/ratings_export.csv", "user,item,rating\n1,1,2\n1,2,4\n2,2,5\n")
    r = load_zip(path, r_min=1, r_max=5)
    assert r.n_ratings == 3 and r.r_max == 5.0


def test_windows_line_endings_and_bom(write):
    path = write("win.csv", b"\xef\xbb\xbfuser,item,rating\r\n1,1,3\r\n1,2,4\r\n2,1,x\r\n")
    with pytest.raises(DataValueError, match=r"win\.csv, line 4: found 'x' in column 'rating'"):
        load(path)
    ok = write("win2.csv", b"user,item,rating\r\n1,1,3\r\n1,2,4\r\n2,1,5\r\n")
    r = load(ok)
    assert r.n_ratings == 3 and value_of(r, 2, 1) == 5.0
