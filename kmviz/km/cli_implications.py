"""``kmviz implications``: the relation miner's default path, headless, every row to a file.

KM's own subcommand, registered through its family entry (``Family.commands``).

    kmviz implications --data PATH --out relations.csv
    kmviz implications --run RUN_ID --out relations.parquet --max-antecedent 1

Runs :func:`kmviz.km.relations.mine_relations` on a dataset (a catalogue name or a file, read
by the same loaders as ``kmviz train``) or on a saved run's training part (its validation
part gives the held-out columns; a KM run's D, regularization and likes threshold are the
refits' settings), and writes every row, CSV or Parquet by the suffix, through
:func:`kmviz.tabular_export.write_table` (spreadsheet formulas neutralized). The columns:
``antecedent`` and ``consequent`` as item names (several items joined with " & "), then
``antecedent_items`` / ``consequent_item`` (indices) and every statistic of the table.
Progress and how the defaults were chosen go to stderr; bad input exits 2 with the loaders'
message.
"""

from __future__ import annotations

import sys
import time

import pandas as pd

__all__ = ["add_parser", "export_frame", "run_implications"]


def export_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The written form of a relation table: names first, then indices and statistics."""
    out = table.copy()
    items = out.pop("antecedent")
    cons = out.pop("consequent")
    a_name = out.pop("antecedent_name")
    c_name = out.pop("consequent_name")
    front = pd.DataFrame({"antecedent": a_name, "consequent": c_name,
                          "antecedent_items": [" ".join(str(k) for k in t) for t in items],
                          "consequent_item": cons.astype("int64")})
    rank = out.pop("rank")
    return pd.concat([rank.to_frame(), front, out], axis=1)


def _progress(done, total, what):
    print(f"[{done}/{total}] {what}", file=sys.stderr, flush=True)


def run_implications(args) -> int:
    from .._cli_common import EXIT_OK, UserError, _load
    from ..tabular_export import table_format, write_table
    from .relations import mine_relations
    from .run_relations import mine_run_relations

    table_format(args.out)          # a bad suffix fails before any work
    if (args.data is None) == (args.run is None):
        raise UserError("give either --data SOURCE or --run RUN_ID (one of them)")
    opened = None
    if args.run is not None:
        from ..runs import RunStore, open_run

        opened = open_run(args.run, RunStore(args.dir) if args.dir else None)
        if opened.split is None:
            raise UserError(opened.problem or f"run {args.run} carries no data to mine")
        ratings = opened.split.train
        where = f"run {args.run} (training part, {ratings.n_ratings:,} ratings)"
    else:
        ratings = _load(args.data, args.option)
        where = f"{ratings.name}: {ratings.n_users:,} users x {ratings.n_items:,} items"
    liked = args.liked
    if liked is not None and liked != "interacted":
        try:
            liked = float(liked)
        except ValueError:
            raise UserError(f"--liked takes a rating threshold or 'interacted'; got "
                            f"{args.liked!r}") from None
    print(f"Mining relations in {where}.", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    common = dict(liked=liked, max_antecedent=args.max_antecedent, n_refits=args.refits,
                  rank=args.rank, random_state=args.seed, progress=_progress)
    table = (mine_run_relations(opened, **common) if opened is not None
             else mine_relations(ratings, **common))
    chosen = table.attrs.get("chosen", {})
    print(f"How the default was chosen: {chosen.get('summary', '')}", file=sys.stderr)
    for w in chosen.get("warnings", []):
        print(f"warning: {w}", file=sys.stderr)
    path = write_table(export_frame(table), args.out)
    print(f"Wrote {len(table):,} relations ({int((table['size'] > 1).sum()):,} with two "
          f"items on the left) to {path} in {time.perf_counter() - t0:.1f} s. Confidence is "
          "among the antecedent's fans who rated the consequent; classic_confidence among "
          "all of them.")
    return EXIT_OK


def add_parser(commands, option_help: str) -> None:
    """Register ``kmviz implications`` on the CLI's subcommands."""
    from .relations import RANKINGS

    p = commands.add_parser(
        "implications", help="mine the relations in a dataset or a run, every row to a file",
        description="Run the relation miner's default path (KM chosen on validation, "
                    "stability refits, pairs and {a, b} => c conjunctions) and write every "
                    "row to a CSV or Parquet file.")
    p.add_argument("--data", metavar="SOURCE", help="a catalogue name or a file/directory/zip")
    p.add_argument("--option", action="append", metavar="KEY=VALUE", help=option_help)
    p.add_argument("--run", metavar="RUN_ID", help="mine a saved run's training part instead")
    p.add_argument("--dir", metavar="DIR", help="run store directory (with --run)")
    p.add_argument("--out", "-o", required=True, metavar="FILE",
                   help="the table to write: .csv or .parquet")
    p.add_argument("--liked", metavar="THRESHOLD|interacted",
                   help="what counts as a like (default: the top quarter of the scale)")
    p.add_argument("--max-antecedent", type=int, default=2, choices=(1, 2),
                   help="items on the left of a rule (default 2: pairs and conjunctions)")
    p.add_argument("--refits", type=int, metavar="B", help="KM refits for the stability")
    p.add_argument("--rank", default="score", choices=RANKINGS,
                   help="the order of the rows (default: score)")
    p.add_argument("--seed", type=int, default=0, help="seed of the split and the refits")
    p.set_defaults(func=run_implications)
