"""Pieces shared by the ``kmviz`` subcommands (:mod:`kmviz.cli` and the command modules it
registers: runs, sweeps, a family's own commands): exit codes, the user-error type, the
argument parser class, tables sized to the terminal, option and value parsing, the run store
of ``--dir`` and the CLI's owner. It imports nothing of kmviz at module level, so every
command module can import it and :mod:`kmviz.cli` can import them without a cycle."""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys


EXIT_OK = 0


EXIT_USAGE = 2


EXIT_INTERRUPTED = 130


#: ``--split`` choices: kmviz.data.ratings.SPLIT_KINDS, spelled out so that ``--help`` does
#: not import the data layer (tests/test_cli.py keeps the two equal).
SPLIT_CHOICES = ("random", "user", "cold_users", "cold_items")


class UserError(Exception):
    """A mistake in the command line or its inputs; reported as ``error: ...``, exit 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one ``error:`` line instead of usage + message."""

    def error(self, message):
        raise UserError(f"{message} (see `{self.prog} --help`)")


def _cell(value, width=None, digits=4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        text = "-"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, float):
        text = f"{value:.{digits}g}"
    else:
        text = str(value)
    text = " ".join(text.split())  # one line per row, whatever the value holds
    if width is not None and len(text) > width:
        text = text[: width - 3] + "..."
    return text


def _table(rows: list[list], header: list[str], *, max_width: int = 48) -> str:
    """A plain left-aligned text table; cells longer than ``max_width`` are shortened."""
    cells = [[_cell(v, max_width) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[j]) for r in cells]) for j, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    return "\n".join(lines)


#: The narrowest table ``kmviz runs list`` makes, whatever the terminal says.
MIN_TABLE_WIDTH = 60


def _terminal_width() -> int | None:
    """The width a table must fit: ``$COLUMNS`` when set, else the terminal's when the
    output is one; None (no limit) when the output goes to a file or a pipe."""
    if not os.environ.get("COLUMNS") and not sys.stdout.isatty():
        return None
    return max(MIN_TABLE_WIDTH, shutil.get_terminal_size((100, 24)).columns)


def _compact_runs(df, metric_cols, families, width: int) -> tuple[str, list[str]]:
    """``kmviz runs list`` for a terminal narrower than the whole table: run id (never
    cut), date and time, family, name, iterations and one ``HEADLINE`` column with the
    run's own first headline metric ("val_nrmse 0.2425", "val_precision_at_5 0.31"), then
    dataset, status and seconds while they fit; names and datasets cut to 24, then 16
    characters. Returns the table and the columns left out."""
    firsts = {f.name: [m for m in f.metrics if m in metric_cols] for f in families.all_families()}
    rows = []
    for rec in df.to_dict("records"):
        name = next((m for m in firsts.get(rec.get("family"), []) + metric_cols
                     if rec.get(m) is not None and rec.get(m) == rec.get(m)), None)
        headline = (f"{name.replace('validation_', 'val_')} {rec[name]:.4g}" if name else "")
        seconds = rec.get("duration_s")
        rows.append({"RUN_ID": rec["run_id"], "CREATED": rec["created"].strftime("%m-%d %H:%M"),
                     "FAMILY": rec.get("family"), "LABEL": rec.get("label"),
                     "N_ITER": rec.get("n_iter"), "HEADLINE": headline,
                     "DATASET": rec.get("dataset"), "STATUS": rec.get("status"),
                     "SECONDS": None if seconds is None or seconds != seconds
                     else f"{seconds:.1f}"})
    columns = list(rows[0]) if rows else []
    hidden = []
    cut = {"LABEL", "DATASET"}
    while True:
        for limit in (32, 24, 16):
            cells = [[_cell(r[c], limit if c in cut else 10_000) for c in columns] for r in rows]
            text = _table(cells, columns, max_width=10_000)
            if max(len(line) for line in text.splitlines()) <= width:
                return text, hidden
        if columns[-1] == "HEADLINE":
            return text, hidden
        hidden.append(columns.pop().lower())


def _pairs(items: list[tuple[str, object]]) -> str:
    width = max(len(k) for k, _ in items)
    return "\n".join(f"  {k.ljust(width)}  {_cell(v, digits=6)}" for k, v in items)


def _parse_options(pairs) -> dict:
    """``["sep=;", "r_max=5"]`` -> ``{"sep": ";", "r_max": 5}`` (JSON values, else text)."""
    out = {}
    for pair in pairs or []:
        key, eq, text = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or not key.isidentifier():
            raise UserError(f"--option takes key=value (for example delimiter=';'); got {pair!r}")
        literals = {"True": True, "False": False, "None": None}
        if text in literals:
            value = literals[text]
        else:
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                value = text
        out[key] = value
    return out


def _load(source, option_pairs):
    from .data import load

    return load(source, **_parse_options(option_pairs))


def cli_owner() -> str:
    """The owner recorded in runs the command line saves: ``cli:<user name>``."""
    import getpass

    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no user name for this uid (containers)
        user = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
    return f"cli:{user}"


def _store(args):
    from .runs import RunStore

    return RunStore(args.dir)


def _train_example() -> str:
    """A ``kmviz train`` command that works, from the registry: its first family on that
    family's demo data (or ``--data SOURCE``)."""
    from . import families

    names = families.names()
    if not names:
        return "`kmviz train FAMILY --data SOURCE --save`"
    fam = families.get(names[0])
    return f"`kmviz train {fam.name} --data {fam.demo_dataset or 'SOURCE'} --save`"


def _positive_int(text) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number (e.g. 2)")
    return value


def _fraction(text) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid fraction {text!r}") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"{value:g} is not in [0, 1)")
    return value
