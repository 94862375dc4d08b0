"""Safe to serve (issue 13, "The server"): a private app by default, local paths only under
the operator's data directories, runs that belong to whoever made them, a private store."""

import os
import shutil
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from kmviz.exceptions import RunStoreError
from kmviz.runs import RunStore
from kmviz.trace import Trace

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- binding
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> list[str]:
    """Local addresses (hex, as in /proc/net/tcp*) of the sockets listening on ``port``."""
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A = LISTEN
                out.append(address)
    return out


LOOPBACK = {"0100007F", "00000000000000000000000001000000"}  # 127.0.0.1, ::1


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="needs Linux /proc/net/tcp")
@pytest.mark.parametrize("how", ["kmviz app", "streamlit run app.py"])
def test_the_app_listens_on_localhost_only_by_default(tmp_path, how):
    port = _free_port()
    common = ["--server.port", str(port), "--server.headless", "true",
              "--browser.gatherUsageStats", "false"]
    if how == "kmviz app":  # from another directory: the flag, not the config, makes it private
        cmd, cwd = [sys.executable, "-m", "kmviz", "app", "--", *common], tmp_path
    else:  # the repository's .streamlit/config.toml
        streamlit = shutil.which("streamlit", path=str(Path(sys.executable).parent))
        cmd, cwd = [streamlit, "run", "app.py", *common], ROOT
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                            env=dict(os.environ, KMVIZ_RUNS_DIR=str(tmp_path / "runs")))
    try:
        end = time.time() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                            timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.time() < end, "the app did not start"
            time.sleep(0.3)
        addresses = _listening(port)
        assert addresses and set(addresses) <= LOOPBACK, addresses
        # stopping the command (a service manager's SIGTERM) stops the server it started
        proc.terminate()
        proc.wait(timeout=30)
        end = time.time() + 15
        while _listening(port) and time.time() < end:
            time.sleep(0.3)
        assert not _listening(port), "the server outlived the command that started it"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


# ----------------------------------------------------------------------------- data dirs
@pytest.fixture()
def data_dir(tmp_path, monkeypatch):
    """A data directory named by the operator, with a small ratings file; a secret outside."""
    d = tmp_path / "data"
    d.mkdir()
    (d / "r.csv").write_text("user,item,rating\n1,1,4\n1,2,3\n2,1,5\n2,2,1\n3,1,2\n3,2,4\n")
    secret = tmp_path / "secret.csv"
    secret.write_text("user,item,rating\nroot:x:0:0:the-secret-line,1,1\n")
    monkeypatch.setenv("KMVIZ_DATA_DIRS", str(d))
    return d


def _no_reads(monkeypatch):
    import kmviz.ui.datasets as ds

    def refuse(*a, **k):
        raise AssertionError("a refused path was read")

    monkeypatch.setattr(ds, "_load", refuse)
    monkeypatch.setattr(ds, "_load_path_cached", refuse)


def test_local_paths_are_off_without_data_dirs(tmp_path, monkeypatch):
    import kmviz.ui.datasets as ds

    monkeypatch.delenv("KMVIZ_DATA_DIRS", raising=False)
    _no_reads(monkeypatch)
    assert ds.data_dirs() == []
    with pytest.raises(ValueError, match="turned off.*--data-dir"):
        ds.load_path("/etc/passwd")


def test_local_paths_inside_a_data_dir_load(data_dir, monkeypatch):
    import kmviz.ui.datasets as ds

    assert ds.data_dirs() == [data_dir.resolve()]
    assert ds.resolve_local_path("r.csv") == (data_dir / "r.csv").resolve()  # relative
    assert ds.resolve_local_path(str(data_dir / "sub" / ".." / "r.csv")) == \
        (data_dir / "r.csv").resolve()
    assert ds.load_path("r.csv").n_ratings == 6


@pytest.mark.parametrize("how", ["absolute", "dotdot", "symlink", "dir-with-link",
                                 "prefix-sibling"])
def test_paths_outside_the_data_dirs_are_refused_without_a_read(data_dir, tmp_path,
                                                                monkeypatch, how):
    import kmviz.ui.datasets as ds

    secret = tmp_path / "secret.csv"
    if how == "absolute":
        typed = str(secret)
    elif how == "dotdot":
        typed = str(data_dir / ".." / "secret.csv")
    elif how == "symlink":
        (data_dir / "link.csv").symlink_to(secret)
        typed = "link.csv"
    elif how == "dir-with-link":
        (data_dir / "ml").mkdir()
        (data_dir / "ml" / "u.data").write_text("1\t1\t5\t0\n")
        (data_dir / "ml" / "u.item").symlink_to(secret)
        typed = str(data_dir / "ml")
    else:  # /.../data-2 starts with /.../data but is not inside it
        sibling = tmp_path / "data-2"
        sibling.mkdir()
        (sibling / "r.csv").write_text(secret.read_text())
        typed = str(sibling / "r.csv")
    _no_reads(monkeypatch)
    with pytest.raises(ValueError) as info:
        ds.load_path(typed)
    message = str(info.value)
    assert "outside the data directories" in message and "the-secret-line" not in message
    assert str(data_dir.resolve()) in message  # says where paths may point


def test_a_missing_path_inside_a_data_dir_says_so(data_dir, monkeypatch):
    import kmviz.ui.datasets as ds

    _no_reads(monkeypatch)
    with pytest.raises(ValueError, match="no such file or directory"):
        ds.load_path("nope.csv")
    with pytest.raises(ValueError, match="No path given"):
        ds.load_path("  ")


# ----------------------------------------------------------------------------- run owners
def _save(store, owner=None, label="run"):
    trace = Trace("km.enhanced", {"D": 2})
    trace.record(objective=1.0, train_nrmse=0.2)
    return store.save("km", trace, {"theta": np.ones((3, 2)), "psi": np.eye(2)},
                      dataset="toy", params={"D": 2}, metrics={}, label=label, owner=owner)


def test_runs_record_their_owner_and_only_the_owner_edits_or_deletes(tmp_path):
    store = RunStore(tmp_path / "s")
    mine, legacy = _save(store, owner="app:aaa"), _save(store)
    assert store.load_meta(mine)["owner"] == "app:aaa"
    assert store.load_meta(legacy)["owner"] is None
    for rid in (mine, legacy):
        with pytest.raises(RunStoreError, match="belongs to someone else.*--shared-runs"):
            store.update(rid, label="taken", owner="app:bbb")
        with pytest.raises(RunStoreError, match="cannot be deleted"):
            store.delete(rid, owner="app:bbb")
    assert store.load_meta(mine)["label"] == "run" and len(store) == 2  # nothing changed
    assert store.update(mine, label="renamed", owner="app:aaa")["label"] == "renamed"
    assert store.update(legacy, note="n")["note"] == "n"  # owner None: no check (CLI, Python)
    store.delete(mine, owner="app:aaa")
    store.delete(legacy)
    assert len(store) == 0


def test_save_run_passes_the_owner(tmp_path):
    from kmviz.data import load
    from kmviz.data.splits import make_split
    from kmviz.km import KolmogorovModel
    from kmviz.runs import save_run

    split = make_split(load("km-toy", n_users=12, n_items=8))
    model = KolmogorovModel(D=2, max_iter=1).fit(split.train)
    store = RunStore(tmp_path / "s")
    rid = save_run(model, split, store=store, owner="app:xyz")
    assert store.load_meta(rid)["owner"] == "app:xyz"


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_the_store_is_private_to_its_owner(tmp_path):
    store = RunStore(tmp_path / "s")
    rid = _save(store)
    store.update(rid, note="a note")  # rewrites meta.json
    for d in (store.path, store.runs_dir, store.runs_dir / rid):
        assert _mode(d) == 0o700, d
    files = [store.runs_dir / rid / n for n in ("arrays.npz", "trace.json", "meta.json")]
    files += [p for p in store.path.glob("index.sqlite*")]
    assert store.index_path in files
    for f in files:
        assert _mode(f) == 0o600, f


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_a_store_made_open_by_an_older_version_is_made_private(tmp_path):
    store = RunStore(tmp_path / "s")
    rid = _save(store)
    for d in (store.path, store.runs_dir):
        os.chmod(d, 0o755)
    os.chmod(store.index_path, 0o644)
    store = RunStore(tmp_path / "s")
    store.list()
    assert _mode(store.path) == _mode(store.runs_dir) == 0o700
    assert _mode(store.index_path) == 0o600
    assert store.load_meta(rid)["label"] == "run"
