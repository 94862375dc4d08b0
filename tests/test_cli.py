"""The kmviz command line, through main() and (for the entry points) a subprocess."""

import subprocess
import sys
import zipfile

import numpy as np
import pytest

import kmviz.cli as cli
from kmviz.cli import main
from kmviz.runs import RunStore
from kmviz.trace import Trace


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_user_error(code, err, match):
    """Exit 2 and exactly one `error:` line on stderr, no traceback."""
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert match in lines[0]
    assert "Traceback" not in err


@pytest.fixture
def store(tmp_path):
    store = RunStore(tmp_path / "store")
    for i, label in enumerate(["first run", "second run"]):
        trace = Trace("km.enhanced", {"D": 3})
        trace.record(objective=5.0 - i, train_rmse=0.25, val_nrmse=0.3)
        trace.stop_reason = "max_iter"
        store.save("km", trace, {"theta": np.full((4, 3), 1 / 3), "psi": np.eye(3)},
                   dataset="toy", params={"D": 3, "gamma": 100.0},
                   metrics={"val_nrmse": 0.3 + i / 100, "train_rmse": 0.25}, label=label)
    return store


@pytest.fixture
def ratings_csv(tmp_path):
    path = tmp_path / "tiny.csv"
    rows = ["user,item,rating", "u1,a,1", "u1,b,5", "u2,a,3", "u2,c,4", "u3,b,2", "u3,c,5"]
    path.write_text("\n".join(rows) + "\n")
    return path


# ----------------------------------------------------------------------------- help, entry points


def test_help_lists_the_commands(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for command in ("data", "train", "runs", "app"):
        assert command in out


def test_bare_kmviz_prints_help(capsys):
    code, out, _ = run(capsys)
    assert code == 0 and "usage: kmviz" in out


def test_train_km_help_names_the_options(capsys):
    code, out, _ = run(capsys, "train", "km", "--help")
    assert code == 0
    for option in ("--data", "--D", "--bqp", "--evd", "--iters", "--gamma", "--lambda-theta",
                   "--mu-psi", "--seed", "--test-size", "--save", "--dir"):
        assert option in out


@pytest.mark.parametrize("entry", [["-m", "kmviz"], ["-c", "from kmviz.cli import main; "
                                                           "raise SystemExit(main())"]])
def test_entry_points_in_a_subprocess(entry):
    ok = subprocess.run([sys.executable, *entry, "runs", "--help"], capture_output=True,
                        text=True, timeout=120)
    assert ok.returncode == 0 and "export" in ok.stdout
    bad = subprocess.run([sys.executable, *entry, "runs", "frobnicate"], capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip().startswith("error: argument ACTION: invalid choice: 'frobnicate'")
    assert "Traceback" not in bad.stderr


@pytest.mark.parametrize(
    "argv, match",
    [
        (["bogus"], "invalid choice: 'bogus'"),
        (["data"], "the following arguments are required: ACTION"),
        (["runs", "list", "--colour"], "unrecognized arguments: --colour"),
        (["train", "km"], "the following arguments are required: --data"),
        (["train", "km", "--data", "km-toy", "--D", "two"], "invalid int value: 'two'"),
        (["train", "km", "--data", "km-toy", "--test-size", "1.5"], "1.5 is not in [0, 1)"),
        (["app", "--port", "70000"], "invalid port 70000"),
    ],
)
def test_usage_mistakes_are_one_line(capsys, argv, match):
    code, _, err = run(capsys, *argv)
    assert_user_error(code, err, match)


# ----------------------------------------------------------------------------- data


def test_data_list_shows_the_catalogue(capsys):
    from kmviz.data.catalogue import list_datasets

    code, out, _ = run(capsys, "data", "list")
    assert code == 0
    assert out.splitlines()[0].split()[:2] == ["NAME", "TITLE"]
    for entry in list_datasets():
        assert entry.name in out
    code, out, _ = run(capsys, "data", "list", "--long")
    assert code == 0
    for entry in list_datasets():
        assert f"licence: {entry.licence}" in out


def test_data_describe_a_file(capsys, ratings_csv):
    code, out, _ = run(capsys, "data", "describe", str(ratings_csv))
    assert code == 0
    fields = {line.split("  ")[1].strip(): line.split("  ", 2)[-1].strip()
              for line in out.splitlines()}
    assert fields["users"] == "3" and fields["items"] == "3" and fields["ratings"] == "6"
    assert fields["density"] == "66.7%"  # 6 of 9 pairs
    assert fields["scale"] == "ratings in [1, 5]"
    assert fields["item titles"] == "no" and fields["item features"] == "none"
    assert fields["item graph"] == "no"


def test_data_describe_with_options(capsys, ratings_csv):
    ratings_csv.write_text(ratings_csv.read_text() + "u1,a,3\n")  # a repeated pair
    code, _, err = run(capsys, "data", "describe", str(ratings_csv))
    assert_user_error(code, err, "repeated (user, item) pair")
    code, out, _ = run(capsys, "data", "describe", str(ratings_csv), "--option",
                       "duplicates=mean")
    assert code == 0 and "duplicates merged  1" in out


def test_data_describe_side_information(capsys):
    code, out, _ = run(capsys, "data", "describe", "planted-lowrank", "--option", "n_users=30",
                       "--option", "n_items=20")
    assert code == 0
    assert "users          30" in out
    feature_lines = [line for line in out.splitlines() if "features" in line]
    assert any(line.split()[-1].startswith("(") for line in feature_lines)  # columns counted


@pytest.mark.parametrize(
    "argv, match",
    [
        (["data", "describe", "no-such-dataset"], "no-such-dataset: no such file, directory or "
                                                  "dataset name"),
        (["data", "describe", "km-toy", "--option", "colour=red"],
         "does not take the option 'colour'"),
        (["data", "describe", "km-toy", "--option", "noequals"], "--option takes key=value"),
    ],
)
def test_data_errors(capsys, argv, match):
    code, _, err = run(capsys, *argv)
    assert_user_error(code, err, match)


def test_option_values_are_parsed():
    assert cli._parse_options(["a=5", "b=0.5", "c=true", "d=None", "e=;", "f-g=x y"]) == {
        "a": 5, "b": 0.5, "c": True, "d": None, "e": ";", "f_g": "x y"}


# ----------------------------------------------------------------------------- runs


def test_runs_list(capsys, store):
    code, out, _ = run(capsys, "runs", "list", "--dir", str(store.path))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["RUN_ID", "CREATED"] and "VAL_NRMSE" in lines[0]
    ids = store.list()["run_id"].tolist()
    assert [line.split()[0] for line in lines[2:4]] == ids
    assert "second run" in lines[2] and "0.31" in lines[2]
    assert "2 run(s)" in out


def test_runs_list_empty_and_env_dir(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("KMVIZ_RUNS_DIR", str(tmp_path / "empty"))
    code, out, _ = run(capsys, "runs", "list")
    assert code == 0 and f"No runs in {tmp_path / 'empty'}" in out


def test_runs_show(capsys, store):
    run_id = store.list()["run_id"].iloc[-1]
    code, out, _ = run(capsys, "runs", "show", run_id, "--dir", str(store.path))
    assert code == 0
    pairs = [line.split(None, 1) for line in out.splitlines() if line.startswith("  ")]
    assert ["run", run_id] in pairs and ["label", "first run"] in pairs
    assert ["theta", "float64 (4, 3)"] in pairs
    assert ["val_nrmse", "0.3"] in pairs and ["gamma", "100"] in pairs
    assert "1 iteration(s), stop reason max_iter" in out


def test_runs_export_zip_and_dir(capsys, store, tmp_path):
    run_id = store.list()["run_id"].iloc[0]
    dest = tmp_path / "export.zip"
    code, out, _ = run(capsys, "runs", "export", run_id, str(dest), "--dir", str(store.path))
    assert code == 0 and str(dest) in out
    with zipfile.ZipFile(dest) as zf:
        assert f"{run_id}/trace.csv" in zf.namelist()
    code, _, err = run(capsys, "runs", "export", run_id, str(dest), "--dir", str(store.path))
    assert_user_error(code, err, "already exists")
    code, _, _ = run(capsys, "runs", "export", run_id, str(tmp_path / "d"), "--dir",
                     str(store.path))
    assert code == 0 and (tmp_path / "d" / run_id / "arrays.npz").is_file()


def test_runs_delete_needs_confirmation(capsys, store, monkeypatch):
    first, second = store.list()["run_id"].tolist()
    d = str(store.path)
    # stdin is not a terminal under pytest: refuse rather than hang
    code, _, err = run(capsys, "runs", "delete", first, "--dir", d)
    assert_user_error(code, err, "pass --yes")
    assert len(store) == 2

    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    code, out, _ = run(capsys, "runs", "delete", first, "--dir", d)
    assert code == 0 and "Not deleted" in out and len(store) == 2
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    code, out, _ = run(capsys, "runs", "delete", first, "--dir", d)
    assert code == 0 and f"Deleted run {first}" in out
    assert store.ids() == [second]

    code, out, _ = run(capsys, "runs", "delete", second, "--dir", d, "--yes")
    assert code == 0 and store.ids() == []


@pytest.mark.parametrize("action", ["show", "delete", "export"])
def test_missing_run(capsys, store, tmp_path, action):
    extra = [str(tmp_path / "x.zip")] if action == "export" else []
    code, _, err = run(capsys, "runs", action, "20200101-000000-00000000", *extra, "--dir",
                       str(store.path))
    assert_user_error(code, err, "No run '20200101-000000-00000000'")
    assert "kmviz runs list" in err


# ----------------------------------------------------------------------------- app


def test_app_runs_streamlit_on_the_repo_app(capsys, monkeypatch):
    calls = []
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd: calls.append(cmd) or 0)
    code, out, _ = run(capsys, "app", "--port", "8600", "--", "--server.headless", "true")
    assert code == 0
    cmd = calls[0]
    assert cmd[:4] == [sys.executable, "-m", "streamlit", "run"]
    assert cmd[4].endswith("app.py") and cmd[4] == str(cli._app_path())
    assert cmd[5:] == ["--server.port", "8600", "--server.headless", "true"]
    assert "Running" in out


def test_app_passes_streamlits_exit_code(capsys, monkeypatch):
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd: 3)
    assert run(capsys, "app")[0] == 3


def test_app_without_app_py(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(cli, "_app_path", lambda: tmp_path / "app.py")
    code, _, err = run(capsys, "app")
    assert_user_error(code, err, f"cannot find the Streamlit app: {tmp_path / 'app.py'}")


# ----------------------------------------------------------------------------- train


def test_train_km_prints_progress_and_saves(capsys, tmp_path):
    d = tmp_path / "store"
    code, out, err = run(capsys, "train", "km", "--data", "km-toy", "--D", "3", "--bqp",
                         "enhanced", "--evd", "lanczos", "--iters", "3", "--seed", "1",
                         "--save", "--dir", str(d), "--label", "cli test")
    assert code == 0, err
    iter_lines = [line for line in out.splitlines() if " iter " in line]
    assert 1 <= len(iter_lines) <= 3
    assert iter_lines[0].startswith("[") and "iter 1/3" in iter_lines[0]
    for key in ("objective", "train_rmse", "val_nrmse"):
        assert key in iter_lines[0]
    assert "validation NRMSE" in out and "Saved run" in out

    store = RunStore(d)
    df = store.list()
    assert len(df) == 1 and df["label"].iloc[0] == "cli test"
    saved = store.load(df["run_id"].iloc[0])
    assert saved.params["D"] == 3 and saved.params["bqp_solver"] == "enhanced"
    assert saved.params["split"] == {"seed": 1, "test_size": 0.2}
    assert saved.arrays["theta"].shape == (20, 3) and saved.arrays["psi"].shape == (40, 3)
    np.testing.assert_allclose(saved.arrays["theta"].sum(axis=1), 1.0)
    assert saved.trace.n_iter == len(iter_lines)
    assert saved.metrics["val_nrmse"] == pytest.approx(saved.trace.rows[-1]["val_nrmse"])


def test_train_km_without_validation_or_save(capsys, tmp_path):
    code, out, err = run(capsys, "train", "km", "--data", "km-toy", "--D", "2", "--iters", "1",
                         "--test-size", "0")
    assert code == 0, err
    assert "val_nrmse" not in out and "800 train / 0 validation" in out
    assert "Not saved" in out


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--data", "km-toy", "--bqp", "nope"], "The 'bqp_solver' parameter of KolmogorovModel"),
        (["--data", "km-toy", "--gamma", "-1"], "The 'gamma' parameter of KolmogorovModel"),
        (["--data", "missing.csv"], "missing.csv: no such file"),
    ],
)
def test_train_km_errors(capsys, argv, match):
    code, _, err = run(capsys, "train", "km", *argv)
    assert_user_error(code, err, match)
