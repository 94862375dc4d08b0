"""``kmviz runs list [--family F ...] | show RUN | export RUN | delete RUN | import FILE.zip``:
the bodies of the ``runs`` subcommands (registered in :mod:`kmviz.cli`)."""

from __future__ import annotations

import argparse
import json
import sys

from ._cli_common import (EXIT_OK, UserError, _cell, _compact_runs, _pairs, _store, _table,
                          _terminal_width, _train_example, cli_owner)

#: Optional columns of ``runs list``, dropped in this order when the terminal is narrow.
_DROP_FIRST = ("SECONDS", "STATUS", "DATASET")


def _families_arg(values) -> list[str]:
    """``--family km --family ocmf`` or ``--family km,ocmf``, checked against the registry."""
    from . import families

    out = []
    for value in values or []:
        for name in str(value).split(","):
            name = name.strip()
            if not name:
                continue
            if name not in families.names():
                raise UserError(f"--family {name!r} is not a model family; the families are "
                                f"{', '.join(families.names())}")
            if name not in out:
                out.append(name)
    return out


def _short(column: str) -> str:
    return column.replace("VALIDATION_", "VAL_")


def cmd_runs_list(args) -> int:
    """The runs, newest first, with the metric columns of the families listed."""
    from . import families

    store = _store(args)
    df = store.list()
    wanted_families = _families_arg(getattr(args, "family", None))
    if not df.empty and wanted_families:
        df = df[df["family"].isin(wanted_families)].reset_index(drop=True)
    if df.empty:
        which = f" of {', '.join(wanted_families)}" if wanted_families else ""
        print(f"No runs{which} in {store.path}. Train one with {_train_example()}.")
        return EXIT_OK
    listed = wanted_families or [f for f in pd_unique(df["family"])]
    wanted = []
    for fam in families.all_families():
        if fam.name in listed:
            wanted += [m for m in fam.metrics if m not in wanted]
    metric_cols = [c for c in wanted if c in df.columns and df[c].notna().any()]
    cols = ["run_id", "created", "family", "label", "dataset", "status", "n_iter",
            "duration_s"] + metric_cols
    records = []
    for rec in df[cols].to_dict("records"):
        seconds = rec["duration_s"]
        rec["duration_s"] = None if seconds is None or seconds != seconds else f"{seconds:.1f}"
        records.append(rec)
    header = [c.upper() if c != "duration_s" else "SECONDS" for c in cols]
    width = _terminal_width()

    def render(columns, limit, created_fmt, short):
        rows = []
        for rec in records:
            row = []
            for c, h in zip(cols, header):
                if h not in columns:
                    continue
                v = rec[c]
                if c == "created":
                    v = v.strftime(created_fmt)
                row.append(_cell(v, limit if c in ("label", "dataset") else 10_000))
            rows.append(row)
        return _table(rows, [_short(h) if short else h for h in columns], max_width=10_000)

    text = render(header, 32, "%Y-%m-%d %H:%M", False)
    narrowed = None
    if width is not None and max(len(x) for x in text.splitlines()) > width:
        shown, dropped = list(header), []
        candidates = [h for h in _DROP_FIRST] + [_ for _ in reversed(
            [h for h, c in zip(header, cols) if c in metric_cols][1:])]
        while True:
            fits = None
            for limit in (32, 24, 16):
                text = render(shown, limit, "%m-%d %H:%M", True)
                if max(len(x) for x in text.splitlines()) <= width:
                    fits = text
                    break
            if fits is not None or not candidates:
                break
            drop = candidates.pop(0)
            shown.remove(drop)
            dropped.append(drop.lower())
        if fits is None or (len(listed) > 1 and any(c in dropped
                                                    for c in metric_cols)):
            text, hidden = _compact_runs(df, metric_cols, families, width)
            narrowed = (f"each run's headline metric (its family's first); left out: "
                        f"{', '.join(hidden) or 'nothing else'}; `--family NAME` shows one "
                        "family's metric columns")
        else:
            text = fits
            narrowed = f"left out: {', '.join(dropped) or 'nothing'}"
    print(text)
    if narrowed is not None:
        print(f"\n(Narrowed to {width} columns: {narrowed}. `kmviz runs show RUN` has every "
              "field; piped to a file, or with COLUMNS=400, the table has every column.)")
    print(f"\n{len(df)} run(s) in {store.path}.")
    return EXIT_OK


def pd_unique(values) -> list:
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def cmd_runs_show(args) -> int:
    run = _store(args).load(args.run)
    m = run.meta
    ds = m["dataset"]
    items = [("run", m["run_id"]), ("label", m["label"]), ("family", m["family"]),
             ("created", m["created"]), ("status", m["status"]),
             ("note", m.get("note") or "-"),
             ("sweep", (m.get("sweep") or {}).get("id") or "-"),
             ("tags", ", ".join(m.get("tags") or []) or "-"),
             ("duration", None if m.get("duration_s") is None else f"{m['duration_s']:.2f} s"),
             ("dataset", f"{ds.get('name')} (fingerprint {ds.get('fingerprint') or '-'})")]
    if "n_users" in ds:
        items.append(("data size", f"{ds['n_users']:,} users x {ds['n_items']:,} items, "
                                   f"{ds.get('n_ratings', 0):,} ratings"))
    print(_pairs(items))
    print("params:")
    print(_pairs([(k, json.dumps(v) if isinstance(v, (dict, list)) else v)
                  for k, v in m["params"].items()]) if m["params"] else "  (none)")
    print("metrics:")
    print(_pairs(list(m["metrics"].items())) if m["metrics"] else "  (none)")
    print("arrays:")
    print(_pairs([(k, f"{a.dtype} {a.shape}") for k, a in run.arrays.items()])
          if run.arrays else "  (none)")
    t = run.trace
    print(f"trace: {t.solver}, {t.n_iter} iteration(s), stop reason {t.stop_reason}, "
          f"{len(t.events)} event(s)")
    if t.rows:
        print(_pairs([(k, v) for k, v in t.rows[-1].items()]))
    return EXIT_OK


def cmd_runs_export(args) -> int:
    dest = args.out or args.dest or f"{args.run}.zip"
    out = _store(args).export(args.run, dest, overwrite=args.overwrite)
    print(f"Exported run {args.run} to {out}.")
    return EXIT_OK


def cmd_runs_delete(args) -> int:
    store = _store(args)
    meta = store.load_meta(args.run)  # fails with the usual message if there is no such run
    if not args.yes:
        if not sys.stdin.isatty():
            raise UserError(f"not deleting run {args.run} without confirmation; "
                            "pass --yes to delete it")
        answer = input(f"Delete run {args.run} ({meta['label']})? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("Not deleted.")
            return EXIT_OK
    store.delete(args.run)
    print(f"Deleted run {args.run}.")
    return EXIT_OK


def cmd_runs_import(args) -> int:
    """Import an exported run (a zip from ``kmviz runs export``); never overwrites a run."""
    from .runs import import_run_zip

    store = _store(args)
    result = import_run_zip(store, args.file, owner=cli_owner())
    print(f"{result.message} Store: {store.path}.")
    return EXIT_OK


def add_runs_commands(runs_cmds, store_opt, parser_class) -> None:
    """Register ``runs import`` (``runs list --family`` is added by :func:`add_list_options`)."""
    p = runs_cmds.add_parser(
        "import", parents=[store_opt], help="add an exported run (a .zip) to the store",
        description="Read a zip written by `kmviz runs export RUN --out RUN.zip` (or the Runs "
                    "page's download): every member is checked first, nothing is unpickled, "
                    "and a run id already in the store gets a new id instead of being "
                    "overwritten.")
    p.add_argument("file", metavar="FILE.zip", help="the exported run")
    p.set_defaults(func=cmd_runs_import)


def add_list_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--family", action="append", metavar="FAMILY",
                   help="only runs of this family (repeatable, or comma-separated); the "
                        "table shows the listed families' metric columns")
    p.set_defaults(func=cmd_runs_list)
