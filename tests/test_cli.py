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
        trace.record(objective=5.0 - i, train_nrmse=0.25, validation_nrmse=0.3)
        trace.stop_reason = "max_iter"
        store.save("km", trace, {"theta": np.full((4, 3), 1 / 3), "psi": np.eye(3)},
                   dataset="toy", params={"D": 3, "gamma": 100.0},
                   metrics={"validation_nrmse": 0.3 + i / 100, "train_nrmse": 0.25},
                   label=label, note=f"note of the {label}")
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
                   "--mu-psi", "--seed", "--test-size", "--save", "--dir",
                   # generated from the declared parameters, and the new split/run options
                   "--bqp-solver", "--max-iter", "--n-rand", "--set", "--val-size", "--split",
                   "--label", "--note", "--option"):
        assert option in out
    assert "--random-state" not in out  # --seed sets it


@pytest.mark.slow
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
        (["train", "km", "--data", "km-toy", "--D", "two"],
         "The 'D' parameter of KolmogorovModel must be an int"),
        (["train", "km", "--data", "km-toy", "--set", "nope=1"],
         "KolmogorovModel has no parameter 'nope'"),
        (["train", "km", "--data", "km-toy", "--set", "D=0"],
         "The 'D' parameter of KolmogorovModel"),
        (["train", "km", "--data", "km-toy", "--set", "D"], "--set takes name=value"),
        (["train", "nofamily", "--data", "km-toy"], "invalid choice: 'nofamily'"),
        (["train", "km", "--data", "km-toy", "--val-size", "-0.1"], "-0.1 is not in [0, 1)"),
        (["train", "km", "--data", "km-toy", "--split", "item"], "invalid choice: 'item'"),
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
    header = lines[0].split()
    assert header[:2] == ["RUN_ID", "CREATED"]
    # the registry's headline metrics that some run has, in the registry's order
    assert [h for h in header if h.endswith(("_NRMSE", "_RMSE"))] == [
        "VALIDATION_NRMSE", "TRAIN_NRMSE"]
    ids = store.list()["run_id"].tolist()
    assert [line.split()[0] for line in lines[2:4]] == ids
    assert "second run" in lines[2] and "0.31" in lines[2] and "0.25" in lines[2]
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
    assert ["note", "note of the first run"] in pairs
    assert ["theta", "float64 (4, 3)"] in pairs
    assert ["validation_nrmse", "0.3"] in pairs and ["gamma", "100"] in pairs
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


def test_runs_export_out_option_and_default_name(capsys, store, tmp_path, monkeypatch):
    run_id = store.list()["run_id"].iloc[0]
    d = str(store.path)
    dest = tmp_path / "x.zip"
    code, out, err = run(capsys, "runs", "export", run_id, "--out", str(dest), "--dir", d)
    assert code == 0, err
    assert str(dest) in out
    with zipfile.ZipFile(dest) as zf:
        names = zf.namelist()
    assert {f"{run_id}/trace.csv", f"{run_id}/arrays.npz"} <= set(names)
    code, _, err = run(capsys, "runs", "export", run_id, "-o", str(dest), "--dir", d)
    assert_user_error(code, err, "already exists")
    code, _, err = run(capsys, "runs", "export", run_id, "-o", str(dest), "--dir", d,
                       "--overwrite")
    assert code == 0, err
    # no destination at all: RUN.zip in the working directory
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "runs", "export", run_id, "--dir", d)
    assert code == 0, err
    assert (tmp_path / f"{run_id}.zip").is_file()


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


def _capture_app(monkeypatch):
    """Replace the streamlit subprocess; returns the list of (cmd, env) it was called with."""
    calls = []
    monkeypatch.setattr(cli, "_serve",
                        lambda cmd, env=None, cwd=None: calls.append((cmd, env, cwd)) or 0)
    return calls


def test_app_runs_streamlit_on_the_repo_app(capsys, monkeypatch):
    calls = _capture_app(monkeypatch)
    monkeypatch.delenv("KMVIZ_DATA_DIRS", raising=False)
    monkeypatch.delenv("KMVIZ_SHARED_RUNS", raising=False)
    code, out, err = run(capsys, "app", "--port", "8600", "--", "--server.headless", "true")
    assert code == 0
    cmd, env, cwd = calls[0]
    assert cwd == str(cli._app_path().parent)  # so streamlit reads the repo's config
    assert cmd[:4] == [sys.executable, "-m", "streamlit", "run"]
    assert cmd[4].endswith("app.py") and cmd[4] == str(cli._app_path())
    # private by default: this machine only
    assert cmd[5:] == ["--server.address", "127.0.0.1", "--server.port", "8600",
                       "--server.headless", "true"]
    assert "Running" in out and err == ""  # no warning for the default
    assert "KMVIZ_DATA_DIRS" not in env and "KMVIZ_SHARED_RUNS" not in env


def test_app_host_exposes_it_with_a_warning(capsys, monkeypatch):
    calls = _capture_app(monkeypatch)
    code, out, err = run(capsys, "app", "--host", "0.0.0.0")
    assert code == 0
    cmd, _, _ = calls[0]
    assert cmd[5:7] == ["--server.address", "0.0.0.0"]
    assert err.startswith("warning: the app listens on 0.0.0.0")
    assert "anyone who can reach this machine" in err and "read the runs" in err
    for host in ("localhost", "::1"):
        run(capsys, "app", "--host", host)
        assert capsys.readouterr().err == ""


def test_app_refuses_an_address_passed_to_streamlit(capsys, monkeypatch):
    calls = _capture_app(monkeypatch)
    code, _, err = run(capsys, "app", "--", "--server.address=0.0.0.0")
    assert_user_error(code, err, "kmviz app --host HOST")
    assert calls == []


def test_app_data_dirs_and_shared_runs_reach_the_app_environment(capsys, monkeypatch,
                                                                 tmp_path):
    import os

    calls = _capture_app(monkeypatch)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    monkeypatch.setenv("KMVIZ_DATA_DIRS", "/srv/data")
    code, _, _ = run(capsys, "app", "--data-dir", str(a), "--data-dir", str(b / ".." / "b"),
                     "--shared-runs")
    assert code == 0
    _, env, _ = calls[0]
    assert env["KMVIZ_DATA_DIRS"].split(os.pathsep) == ["/srv/data", str(a), str(b)]
    assert env["KMVIZ_SHARED_RUNS"] == "1"
    code, _, err = run(capsys, "app", "--data-dir", str(tmp_path / "missing"))
    assert_user_error(code, err, "not a directory")


@pytest.mark.parametrize("empty", ["", " ", "\t "])
def test_app_refuses_an_empty_data_dir(capsys, monkeypatch, tmp_path, empty):
    """`--data-dir ""` would resolve to the working directory and serve it."""
    calls = _capture_app(monkeypatch)
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "app", "--data-dir", empty)
    assert_user_error(code, err, "an empty path names no directory")
    assert calls == []
    code, _, err = run(capsys, "app", "--data-dir", str(tmp_path), "--data-dir", empty)
    assert_user_error(code, err, "--data-dir")
    assert calls == []


def test_streamlit_config_is_private_and_its_upload_limit_is_the_pages():
    import tomllib

    from kmviz.ui.datasets import MAX_UPLOAD_MB

    config = tomllib.loads((cli._app_path().parent / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "127.0.0.1"
    assert config["server"]["maxUploadSize"] == MAX_UPLOAD_MB


def test_cli_runs_are_owned_by_the_cli_user(capsys, tmp_path):
    import getpass

    code, _, _ = run(capsys, "train", "km", "--data", "km-toy", "--option", "n_users=12",
                     "--option", "n_items=8", "--D", "2", "--max-iter", "1", "--save",
                     "--dir", str(tmp_path / "s"))
    assert code == 0
    store = RunStore(tmp_path / "s")
    (rid,) = store.ids()
    assert store.load_meta(rid)["owner"] == f"cli:{getpass.getuser()}" == cli.cli_owner()
    # the CLI itself does not check owners: deleting works whoever made the run
    assert run(capsys, "runs", "delete", rid, "--yes", "--dir", str(tmp_path / "s"))[0] == 0


def test_app_becomes_the_server_on_posix(monkeypatch, tmp_path):
    """No kmviz process stays resident beside the server: the CLI execs Streamlit."""
    seen = []

    def execve(path, argv, env):  # the real one never returns
        seen.append(("execve", path, argv, env))
        raise SystemExit(0)

    monkeypatch.setattr(cli.os, "chdir", lambda d: seen.append(("chdir", d)))
    monkeypatch.setattr(cli.os, "execve", execve)
    monkeypatch.setattr(cli.subprocess, "call", lambda *a, **k: pytest.fail("not exec"))
    monkeypatch.setattr(cli.os, "name", "posix")
    with pytest.raises(SystemExit):
        cli._serve(["/bin/py", "-m", "streamlit"], {"A": "1"}, str(tmp_path))
    assert seen == [("chdir", str(tmp_path)),
                    ("execve", "/bin/py", ["/bin/py", "-m", "streamlit"], {"A": "1"})]


def test_app_runs_the_server_as_a_child_elsewhere(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(cli.os, "execve", lambda *a: pytest.fail("exec off POSIX"))
    monkeypatch.setattr(cli.subprocess, "call",
                        lambda cmd, env=None, cwd=None: calls.append((cmd, env, cwd)) or 7)
    monkeypatch.setattr(cli.os, "name", "nt")
    assert cli._serve(["py"], {"A": "1"}, str(tmp_path)) == 7
    assert calls == [(["py"], {"A": "1"}, str(tmp_path))]


def test_app_passes_streamlits_exit_code(capsys, monkeypatch):
    monkeypatch.setattr(cli, "_serve", lambda cmd, env=None, cwd=None: 3)
    assert run(capsys, "app")[0] == 3


def test_app_without_app_py(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(cli, "_app_path", lambda: tmp_path / "app.py")
    code, _, err = run(capsys, "app")
    assert_user_error(code, err, f"cannot find the Streamlit app: {tmp_path / 'app.py'}")


# ----------------------------------------------------------------------------- train


def _iter_lines(out):
    return [line for line in out.splitlines() if " iter " in line]


def _iter_metrics(line):
    """The ``name value`` pairs of one progress line, by name."""
    words = line.split()
    return {w: float(words[k + 1]) for k, w in enumerate(words[:-1])
            if w.startswith(("train_", "validation_"))}


def _summary(out):
    """The summary block after "Done.": key -> text."""
    block = out.split("Done.", 1)[1].splitlines()[1:]
    return {line.split(None, 1)[0]: line.split(None, 1)[1].strip()
            for line in block if line.startswith("  ") and len(line.split(None, 1)) == 2}


def test_train_km_prints_progress_and_saves(capsys, tmp_path):
    """The old flags (--D --bqp --evd --iters) still work."""
    d = tmp_path / "store"
    code, out, err = run(capsys, "train", "km", "--data", "km-toy", "--D", "3", "--bqp",
                         "enhanced", "--evd", "lanczos", "--iters", "3", "--seed", "1",
                         "--save", "--dir", str(d), "--label", "cli test", "--note", "why")
    assert code == 0, err
    iter_lines = _iter_lines(out)
    assert 1 <= len(iter_lines) <= 3
    assert iter_lines[0].startswith("[") and "iter 1/3" in iter_lines[0]
    for key in ("objective", "train_nrmse", "validation_nrmse"):
        assert key in iter_lines[0]
    assert "val_nrmse" not in out  # the old names are gone everywhere
    assert "Saved run" in out
    # the split is the app's: 10 % validation, 20 % test, random, seeded
    assert "560 train / 80 validation / 160 test ratings (random split, seed 1)" in out

    store = RunStore(d)
    df = store.list()
    assert len(df) == 1 and df["label"].iloc[0] == "cli test" and df["note"].iloc[0] == "why"
    saved = store.load(df["run_id"].iloc[0])
    assert saved.params["D"] == 3 and saved.params["bqp_solver"] == "enhanced"
    assert saved.params["evd"] == "lanczos" and saved.params["max_iter"] == 3
    assert saved.params["random_state"] == 1  # --seed seeds the model too
    assert "split" not in saved.params
    assert {k: saved.meta["split"][k] for k in ("val_size", "test_size", "by", "seed")} == {
        "val_size": 0.1, "test_size": 0.2, "by": "random", "seed": 1}
    assert saved.meta["provenance"]["writer"] == "cli"
    assert saved.arrays["theta"].shape == (20, 3) and saved.arrays["psi"].shape == (40, 3)
    np.testing.assert_allclose(saved.arrays["theta"].sum(axis=1), 1.0)
    assert saved.trace.n_iter == len(iter_lines)
    last = saved.trace.rows[-1]
    assert saved.metrics["validation_nrmse"] == pytest.approx(last["validation_nrmse"])
    assert saved.metrics["train_nrmse"] == pytest.approx(last["train_nrmse"])
    assert {"test_nrmse", "test_rmse", "train_rmse", "validation_rmse"} <= set(saved.metrics)


def test_train_progress_and_summary_share_the_metric_names(capsys):
    code, out, err = run(capsys, "train", "km", "--data", "km-toy", "--D", "2", "--iters", "2")
    assert code == 0, err
    lines = _iter_lines(out)
    progress = _iter_metrics(lines[-1])
    assert {"train_nrmse", "validation_nrmse"} <= set(progress)
    summary = _summary(out)
    assert {"train_nrmse", "validation_nrmse", "test_nrmse", "iterations"} <= set(summary)
    assert set(progress) <= set(summary)  # every name in a progress line is in the summary
    # the last progress line and the summary report the same final values
    for name, value in progress.items():
        assert float(summary[name]) == pytest.approx(value, abs=1e-4)
    assert "{part}_{metric}" in out


def test_train_with_set_and_the_generated_flags(capsys, tmp_path):
    d = tmp_path / "store"
    code, out, err = run(capsys, "train", "km", "--data", "km-toy", "--set", "D=3", "--set",
                         "max_iter=2", "--set", "evd=lanczos", "--bqp-solver", "gd",
                         "--n-rand", "7", "--val-size", "0.2", "--test-size", "0.1",
                         "--split", "user", "--seed", "4", "--save", "--dir", str(d))
    assert code == 0, err
    assert "iter 1/2" in out and "(user split, seed 4)" in out
    store = RunStore(d)
    saved = store.load(store.ids()[0])
    p = saved.params
    assert (p["D"], p["max_iter"], p["evd"], p["bqp_solver"], p["n_rand"]) == (
        3, 2, "lanczos", "gd", 7)
    assert saved.meta["split"]["by"] == "user" and saved.meta["split"]["val_size"] == 0.2
    assert saved.meta["split"]["test_size"] == 0.1 and saved.meta["split"]["seed"] == 4
    # --set wins over a flag given for the same parameter; --set random_state over --seed
    code, out, err = run(capsys, "train", "km", "--data", "km-toy", "--D", "4", "--set", "D=2",
                         "--set", "random_state=9", "--iters", "1", "--save", "--dir", str(d))
    assert code == 0, err
    newest = store.load(store.ids()[0])
    assert newest.params["D"] == 2 and newest.params["random_state"] == 9
    assert newest.label.startswith("KM D=2")  # the family's default label


def test_train_km_without_validation_or_save(capsys, tmp_path):
    code, out, err = run(capsys, "train", "km", "--data", "km-toy", "--D", "2", "--iters", "1",
                         "--val-size", "0", "--test-size", "0")
    assert code == 0, err
    assert "validation_nrmse" not in out and "800 train / 0 validation / 0 test" in out
    assert "train_nrmse" in out
    assert "Not saved" in out


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--data", "km-toy", "--bqp", "nope"], "The 'bqp_solver' parameter of KolmogorovModel"),
        (["--data", "km-toy", "--bqp-solver", "nope"],
         "The 'bqp_solver' parameter of KolmogorovModel"),
        (["--data", "km-toy", "--gamma", "-1"], "The 'gamma' parameter of KolmogorovModel"),
        (["--data", "km-toy", "--set", "gamma=-1"], "The 'gamma' parameter of KolmogorovModel"),
        (["--data", "km-toy", "--set", "max_iter=0"],
         "The 'max_iter' parameter of KolmogorovModel"),
        (["--data", "missing.csv"], "missing.csv: no such file"),
    ],
)
def test_train_km_errors(capsys, argv, match):
    code, _, err = run(capsys, "train", "km", *argv)
    assert_user_error(code, err, match)


@pytest.mark.parametrize("pair, name", [("nope=1", "'nope'"), ("D=0", "'D'"),
                                        ("D=two", "'D'"), ("evd=qr", "'evd'")])
def test_train_set_errors_name_the_parameter(capsys, tmp_path, pair, name):
    d = tmp_path / "store"
    code, _, err = run(capsys, "train", "km", "--data", "km-toy", "--set", pair, "--save",
                       "--dir", str(d))
    assert_user_error(code, err, name)
    assert "KolmogorovModel" in err
    assert not d.exists() or len(RunStore(d)) == 0  # nothing trained, nothing saved
