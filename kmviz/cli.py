"""The ``kmviz`` command line: datasets, training, saved runs and the app.

::

    kmviz data list
    kmviz data describe SOURCE [--format FORMAT] [--option key=value ...]
    kmviz train FAMILY --data SOURCE [--set name=value ...] [--save]
    kmviz train FAMILY --data SOURCE [--<setting> VALUE ...] [--iters N] [--save]
    kmviz train FAMILY --data SOURCE --dask ADDRESS|local:N     (fit on a Dask cluster)
    kmviz sweep FAMILY --data SOURCE --grid NAME=V1,V2 [--seeds N] [--random N] [--save]
    kmviz runs list [--family F] | show RUN | export RUN --out DEST | import FILE.zip
               | delete RUN [--yes]                                          [--dir DIR]
    kmviz app [--port N] [--host HOST] [--data-dir DIR ...] [--shared-runs] [--dask ADDRESS]
              [--max-fits N]
              [-- streamlit args]

FAMILY is any registered model family (``kmviz train --help`` lists them, including those
of installed distributions' ``kmviz.families`` entry points); each setting of its estimator
is an option.

Mistakes a user can make (an unknown dataset, a bad option, a missing run) end with one line
``error: ...`` on stderr and exit code 2; anything else is a bug and keeps its traceback.
Heavy modules (pandas, the model kernels) are imported by the commands that need them, so
``kmviz --help`` answers at once.

This module builds the parser and runs `kmviz app`, `kmviz warmup` and :func:`main`; the
other commands' bodies are :mod:`kmviz.cli_data`, :mod:`kmviz.cli_train`,
:mod:`kmviz.cli_runs` and :mod:`kmviz.cli_sweep`'s, and what they share
``kmviz/_cli_common.py``'s.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from ._cli_common import (  # noqa: F401 - re-exported: kmviz.cli.<name> keeps working
    EXIT_OK,
    EXIT_USAGE,
    EXIT_INTERRUPTED,
    SPLIT_CHOICES,
    UserError,
    _Parser,
    _cell,
    _table,
    MIN_TABLE_WIDTH,
    _terminal_width,
    _compact_runs,
    _pairs,
    _parse_options,
    _load,
    cli_owner,
    _store,
    _train_example,
    _positive_int,
    _fraction,
)

#: Environment variables `kmviz app` hands to the app (read in kmviz.ui).
DATA_DIRS_ENV = "KMVIZ_DATA_DIRS"
SHARED_RUNS_ENV = "KMVIZ_SHARED_RUNS"
#: The app's fits run on this Dask cluster (``kmviz app --dask``; :mod:`kmviz.parallel`).
DASK_ENV = "KMVIZ_DASK"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


# ------------------------------------------------------------------------------ warmup
def _cmd_warmup(args) -> int:
    from . import families
    from .ui.warmup import FAILED, warm_all

    result = warm_all([(f.name, f.short or f.title, f.warmup)
                       for f in families.all_families()], out=sys.stdout)
    return EXIT_USAGE if any(state == FAILED for state, _, _ in result.values()) else EXIT_OK


# ------------------------------------------------------------------------------ app
def _app_path() -> Path:
    """``app.py`` of the source checkout kmviz is installed from (editable install)."""
    return Path(__file__).resolve().parent.parent / "app.py"


def _cmd_app(args) -> int:
    import importlib.util

    app = _app_path()
    if not app.is_file():
        raise UserError(
            f"cannot find the Streamlit app: {app} does not exist. `kmviz app` runs app.py "
            "from the kmviz source checkout; install kmviz from it with `pip install -e .`")
    if importlib.util.find_spec("streamlit") is None:
        raise UserError("streamlit is not installed in this Python; `pip install streamlit`")
    for arg in args.streamlit_args:
        if arg.split("=", 1)[0] == "--server.address":
            raise UserError("set the address with `kmviz app --host HOST`, not "
                            "--server.address after `--`")
    env = dict(os.environ)
    dirs = _data_dirs(args.data_dir, env.get(DATA_DIRS_ENV, ""))
    if dirs:
        env[DATA_DIRS_ENV] = os.pathsep.join(dirs)
    if args.shared_runs:
        env[SHARED_RUNS_ENV] = "1"
    if args.lesson:  # checked now: a broken lesson file is said here, not in the browser
        from .ui.lesson import LESSON_ENV, lesson_path, read_lesson

        lesson = read_lesson(args.lesson)
        env[LESSON_ENV] = str(lesson_path(args.lesson))
        print(f"Lesson: {lesson.title} ({len(lesson.steps)} steps); the app opens in lesson "
              "mode (its sidebar switch turns it off).", flush=True)
    if args.dask:
        from ._cluster import parse_client

        parse_client(args.dask)     # a bad spec fails here, not at the server's first fit
        env[DASK_ENV] = args.dask
    if args.max_fit_memory is not None:  # each fit of the server refuses above it
        from ._memory import ENV_VAR

        env[ENV_VAR] = str(args.max_fit_memory)
    if args.max_fits is not None:  # fits that run at once; the others queue
        from .ui.scheduler import MAX_FITS_ENV

        env[MAX_FITS_ENV] = str(args.max_fits)
    if args.max_fits_per_owner is not None:  # a served app: running-or-queued per browser
        from .ui.scheduler import MAX_FITS_PER_OWNER_ENV

        env[MAX_FITS_PER_OWNER_ENV] = str(args.max_fits_per_owner)
    if env.get("KMVIZ_RUNS_DIR"):  # the app runs from its own folder: no relative paths
        env["KMVIZ_RUNS_DIR"] = str(Path(env["KMVIZ_RUNS_DIR"]).expanduser().resolve())
    cmd = [sys.executable, "-m", "streamlit", "run", str(app), "--server.address", args.host]
    if args.port is not None:
        cmd += ["--server.port", str(args.port)]
    cmd += list(args.streamlit_args)
    from ._hosts import is_loopback

    if not is_loopback(args.host):
        print(f"warning: the app listens on {args.host}: anyone who can reach this machine "
              "on the network can use it, train on its CPU, and read the runs and data "
              f"it shows (its run store, and files under {DATA_DIRS_ENV} if set). Use the "
              "default --host 127.0.0.1 unless you mean to share it.", file=sys.stderr,
              flush=True)
    print("Running " + " ".join(cmd), flush=True)
    # from the app's folder, so Streamlit reads its .streamlit/config.toml (upload limit,
    # no file watcher ...) wherever `kmviz app` is started
    return _serve(cmd, env, str(app.parent))


def _serve(cmd: list[str], env: dict, cwd: str) -> int:
    """Run the Streamlit server. On POSIX this process becomes the server (exec): the CLI
    would otherwise stay resident beside it for nothing (about 185 MB with numpy and
    pandas imported), and signals and the exit code are the server's own. Elsewhere the
    server runs as a child whose exit code is returned."""
    if os.name == "posix":
        os.chdir(cwd)
        os.execve(cmd[0], cmd, env)  # does not return
    import signal

    def stop(signum, frame):  # SIGTERM: subprocess.call ends the server, then we exit
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        return subprocess.call(cmd, env=env, cwd=cwd)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)


def _data_dirs(given, env_value: str) -> list[str]:
    """The data directories for Local path: the environment's, then ``--data-dir`` ones,
    each an existing directory (resolved), without repeats."""
    out = [str(Path(d).expanduser().resolve()) for d in env_value.split(os.pathsep)
           if d.strip()]
    for d in given or []:
        if not d.strip():  # Path("") is ".": the server's working directory
            raise UserError(f"--data-dir {d!r}: an empty path names no directory (it would "
                            "serve the current directory); name an existing directory "
                            "whose files the app may read, or leave --data-dir out")
        path = Path(d).expanduser()
        if not path.is_dir():
            raise UserError(f"--data-dir {d}: not a directory; name an existing directory "
                            "whose files the app may read")
        out.append(str(path.resolve()))
    return list(dict.fromkeys(out))


def _port(text) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: expected a number") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {port}: expected 1 to 65535")
    return port


def _memory_size(text) -> int:
    from ._memory import parse_bytes
    from .exceptions import InvalidParameterError

    try:
        return parse_bytes(text)
    except InvalidParameterError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# ------------------------------------------------------------------------------ parser
def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kmviz",
        description="Learn and look inside interpretable factorization models.",
        epilog="Run `kmviz COMMAND --help` for the options of one command.",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"kmviz {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    # data ------------------------------------------------------------------
    from .cli_data import cmd_data_describe, cmd_data_list

    data = commands.add_parser("data", help="list and inspect datasets")
    data_cmds = data.add_subparsers(dest="data_command", metavar="ACTION",
                                  parser_class=_Parser, required=True)
    p = data_cmds.add_parser("list", help="the built-in dataset catalogue")
    p.add_argument("-l", "--long", action="store_true",
                   help="print full descriptions, sources and licences")
    p.set_defaults(func=cmd_data_list)
    option_help = ("a loader option as key=value, repeatable (for example delimiter=';', "
                   "duplicates=mean, n_users=50)")
    p = data_cmds.add_parser("describe", help="counts, scale and side information of a dataset")
    p.add_argument("source", metavar="SOURCE", help="a catalogue name or a file/directory/zip")
    p.add_argument("--option", action="append", metavar="KEY=VALUE", help=option_help)
    p.add_argument("--format", metavar="FORMAT",
                   help="the reader of a file: delimited (triplets), basket (a line of items "
                        "per user), table (users x items with a header of item names), "
                        "matrix-market ...; default: detected")
    p.set_defaults(func=cmd_data_describe)

    # train -----------------------------------------------------------------
    from . import families
    from .cli_train import add_train_parser

    train = commands.add_parser("train", help="fit a model and print its progress")
    train_cmds = train.add_subparsers(dest="model", metavar="FAMILY", parser_class=_Parser,
                                      required=True)
    for fam in families.all_families():
        try:
            add_train_parser(train_cmds, fam, option_help)
        except (ImportError, AttributeError, ValueError) as exc:  # an installed family's bug
            print(f"warning: model family {fam.name!r} left out of `kmviz train`: {exc}",
                  file=sys.stderr)

    # the families' own commands (KM: implications) ------------------------
    for fam in families.all_families():
        if fam.commands:
            try:
                families._import_object(fam.commands, "commands")(commands, option_help)
            except (ImportError, AttributeError, ValueError) as exc:
                print(f"warning: the commands of model family {fam.name!r} left out: {exc}",
                      file=sys.stderr)

    from .cli_sweep import add_sweep_parser

    add_sweep_parser(commands, _Parser)  # kmviz sweep FAMILY --grid ... (kmviz/cli_sweep.py)

    # runs ------------------------------------------------------------------
    runs = commands.add_parser("runs", help="saved runs: list, show, export, import, delete")
    store_opt = argparse.ArgumentParser(add_help=False)
    store_opt.add_argument("--dir", metavar="DIR",
                           help="run store directory (default: $KMVIZ_RUNS_DIR or the user "
                                "data dir)")
    runs_cmds = runs.add_subparsers(dest="runs_command", metavar="ACTION",
                                  parser_class=_Parser, required=True)
    from .cli_runs import add_list_options, add_runs_commands, cmd_runs_delete, \
        cmd_runs_export, cmd_runs_show

    p = runs_cmds.add_parser("list", parents=[store_opt], help="all saved runs, newest first")
    add_list_options(p)
    p = runs_cmds.add_parser("show", parents=[store_opt], help="one run's settings and results")
    p.add_argument("run", metavar="RUN", help="run id (see `kmviz runs list`)")
    p.set_defaults(func=cmd_runs_show)
    p = runs_cmds.add_parser("export", parents=[store_opt],
                             help="write a run's trace (CSV, JSON), arrays (NPZ) and meta")
    p.add_argument("run", metavar="RUN", help="run id")
    p.add_argument("dest", metavar="DEST", nargs="?",
                   help="a directory, or a path ending in .zip (or use --out)")
    p.add_argument("--out", "-o", metavar="DEST",
                   help="a directory, or a path ending in .zip (default: RUN.zip here)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing export")
    p.set_defaults(func=cmd_runs_export)
    p = runs_cmds.add_parser("delete", parents=[store_opt], help="remove a run")
    p.add_argument("run", metavar="RUN", help="run id")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p.set_defaults(func=cmd_runs_delete)
    add_runs_commands(runs_cmds, store_opt, _Parser)

    # warmup ----------------------------------------------------------------
    p = commands.add_parser(
        "warmup", help="compile every family's Numba kernels ahead of time (before a class)",
        description="Compile every model family's Numba kernels into Numba's disk cache, "
                    "with progress, so that the app's first fits start at once.")
    p.set_defaults(func=_cmd_warmup)

    # app -------------------------------------------------------------------
    p = commands.add_parser(
        "app", help="open the Streamlit app",
        description="Run `streamlit run app.py`. Arguments after `--` go to streamlit.")
    p.add_argument("--port", type=_port, help="server port (default: streamlit's, 8501)")
    p.add_argument("--host", default="127.0.0.1", metavar="HOST",
                   help="address to listen on (default 127.0.0.1: this machine only); "
                        "0.0.0.0 exposes the app to the network")
    p.add_argument("--data-dir", action="append", metavar="DIR",
                   help="a directory whose files the Data page may load by path (Local "
                        f"path), repeatable; also ${DATA_DIRS_ENV}. Without one, Local path "
                        "is not offered")
    p.add_argument("--dask", metavar="ADDRESS|local:N",
                   help="run the app's fits on a Dask cluster (a scheduler address, or local:N "
                        "worker processes); shown on the Train page")
    p.add_argument("--shared-runs", action="store_true",
                   help="when served to others (--host not loopback), let every browser "
                        "rename, note and delete every run and load its data (also "
                        f"${SHARED_RUNS_ENV}=1); by default a browser manages only the runs "
                        "it made. On 127.0.0.1 every run is the local user's anyway")
    p.add_argument("--max-fit-memory", type=_memory_size, metavar="SIZE",
                   help="memory one fit may use (bytes, or with K, M, G: 2G); a fit whose "
                        "estimate is above it is refused before it starts. Default: half of "
                        "the memory available when the fit starts (also $KMVIZ_MAX_FIT_BYTES)")
    p.add_argument("--max-fits", type=_positive_int, metavar="N",
                   help="how many fits may run at once on the server; the others wait in a "
                        "queue, first come first served, each shown its place in line. "
                        "Default: one per two cores, at least 1 (also $KMVIZ_MAX_FITS)")
    p.add_argument("--max-fits-per-owner", type=_positive_int, metavar="N",
                   help="when served to others (--host not loopback), how many fits one "
                        "browser may have running or queued at once; a further Train click "
                        "says why it waits. Default 1 (also $KMVIZ_MAX_FITS_PER_OWNER)")
    p.add_argument("--lesson", metavar="FILE|NAME",
                   help="a lesson: a TOML file of app links walked through with Next / Back "
                        "in lesson mode, or the name of a shipped one (km, kmc, ocmf, gfm, "
                        "similarity; see lessons/)")
    p.set_defaults(func=_cmd_app, streamlit_args=[])
    return parser


def main(argv=None) -> int:
    """Run the command line; returns the exit code (0 ok, 2 user error, 130 interrupted)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    streamlit_args = []
    # Everything after `--` belongs to streamlit; split it off before argparse sees it.
    if argv[:1] == ["app"] and "--" in argv:
        cut = argv.index("--")
        argv, streamlit_args = argv[:cut], argv[cut + 1:]
    parser = build_parser()
    from .exceptions import NumericalError
    from .parallel import ClusterError

    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help and --version
            return int(exc.code or 0)
        if args.command is None:  # bare `kmviz`: show what there is to do
            parser.print_help()
            return EXIT_OK
        if args.command == "app":
            args.streamlit_args = streamlit_args
        return args.func(args)
    except UserError as exc:
        return _fail(str(exc))
    except (ValueError, NumericalError, ClusterError) as exc:
        # kmviz's own errors (DataError, InvalidParameterError, RunStoreError ...) are all
        # ValueErrors whose messages are written for users.
        return _fail(str(exc))
    except (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError) as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _fail(message: str) -> int:
    print("error: " + " ".join(message.split()), file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
