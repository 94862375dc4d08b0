"""``kmviz sweep FAMILY --data D --grid NAME=V1,V2 ... [--seeds N] [--random N | --tpe N]
[--save]``: a grid (or random, or Optuna TPE) search over a family's declared settings, one
ordinary run per point (:mod:`kmviz.sweep`, :mod:`kmviz.search`). Registered in
:mod:`kmviz.cli`."""

from __future__ import annotations

import sys


def cmd_sweep(args) -> int:
    from . import families
    from ._cli_common import EXIT_INTERRUPTED, EXIT_OK, _cell, _parse_options, _table, cli_owner
    from .data import load
    from .data.splits import make_split
    from .sweep import plan_sweep, parse_grid, run_sweep

    fam = families.get(args.model)
    cls = fam.estimator_class()
    from ._params import parse_assignments

    base = parse_assignments(cls, args.set)
    grid = parse_grid(fam, args.grid)
    if args.tpe is not None:
        from .exceptions import InvalidParameterError
        from .search import plan_search

        if args.random is not None or args.seeds != 1:
            raise InvalidParameterError("--tpe chooses every point itself: give it without "
                                        "--random and with --seeds 1.")
        plan = plan_search(fam, grid, base=base, trials=args.tpe, seed=args.seed)
    else:
        plan = plan_sweep(fam, grid, base=base, seeds=args.seeds, random=args.random,
                          seed=args.seed)
    for params in plan.points[:1]:
        fam.make(params)._validate_params()  # bad fixed settings fail before loading
    options = _parse_options(args.option)
    ratings = load(args.data, **options)
    split = make_split(ratings, val_size=args.val_size, test_size=args.test_size,
                       by=args.split, seed=args.seed)
    print(f"{plan.describe()} of {fam.title} on {ratings.name} ({ratings.n_users:,} users x "
          f"{ratings.n_items:,} items; one {args.split} split, seed {args.seed}, for every "
          "point). Ctrl-C stops after the current fit; the points done are kept.", flush=True)
    from .runs import RunStore

    store = RunStore(args.dir) if args.save else None

    def progress(i, n, row):
        shown = " ".join(f"{k}={_cell(row[k])}" for k in plan.varied + (
            ["seed"] if plan.seeds > 1 else []))
        metric = next((m for m in fam.metrics if row.get(m) is not None), None)
        value = f"{metric} {row[metric]:.4g}" if metric else ""
        saved = f" saved {row['run_id']}" if row.get("run_id") else ""
        print(f"[{i}/{n}] {shown}: {value} ({row['seconds']:.1f} s){saved}", flush=True)

    result = run_sweep(plan, ratings, split, store=store, save=args.save,
                       spec={"kind": "cli", "source": args.data, "options": options},
                       owner=cli_owner(), writer="cli", tags=args.tag or (),
                       on_point=progress)
    df = result.table()
    print()
    if df.empty:
        print("No point finished.")
    else:
        first = next((m for m in fam.metrics if m in df), None)
        order = df.sort_values(first) if first and first.endswith(("rmse", "nmse")) else (
            df.sort_values(first, ascending=False) if first else df)
        cols = [c for c in order.columns if c != "point"]
        print(f"Summary ({len(df)} of {len(plan.points)} point(s), best {first} first):")
        print(_table(order[cols].values.tolist(), [c.upper() for c in cols], max_width=24))
    state = "stopped" if result.stopped else "done"
    where = f"; runs saved in {store.path}, tagged sweep (sweep id {plan.sweep_id})" \
        if args.save else "; not saved (add --save to keep every point as a run)"
    print(f"\nSweep {state}: {len(df)} fit(s) in {result.wall_s:.1f} s{where}.")
    if result.stopped:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK


def add_sweep_parser(commands, parser_class) -> None:
    """Register ``kmviz sweep FAMILY ...``."""
    from . import families
    from ._cli_common import SPLIT_CHOICES, _fraction, _positive_int

    sweep = commands.add_parser("sweep", help="fit a family over a grid of settings",
                                description="Fit one family at every point of a grid (or N "
                                "random points) of its settings, on one split; each point is "
                                "an ordinary run, tagged with its sweep.")
    cmds = sweep.add_subparsers(dest="model", metavar="FAMILY", parser_class=parser_class,
                                required=True)
    for fam in families.all_families():
        p = cmds.add_parser(fam.name, help=fam.title)
        p.add_argument("--data", required=True, metavar="SOURCE",
                       help="a catalogue name or a file/directory/zip")
        p.add_argument("--option", action="append", metavar="KEY=VALUE",
                       help="a loader option, repeatable")
        p.add_argument("--grid", action="append", required=True, metavar="NAME=V1,V2,...",
                       help="a setting and its values, repeatable (for example --grid "
                            "D=4,8,16); values are checked against the setting's declared "
                            "range")
        p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                       help="a setting fixed for every point, repeatable")
        p.add_argument("--seeds", type=_positive_int, default=1,
                       help="fits per point, with model seeds SEED, SEED+1, ... (default 1)")
        p.add_argument("--random", type=_positive_int, metavar="N",
                       help="N random points between the values given instead of the grid")
        p.add_argument("--tpe", type=_positive_int, metavar="N",
                       help="N points chosen one after the other by Optuna's TPE sampler "
                            "between the values given, from the validation metric of the "
                            "points before (pip install \"kmviz[search]\")")
        p.add_argument("--seed", type=int, default=0,
                       help="seed of the split, the first model seed and the random draws")
        p.add_argument("--val-size", type=_fraction, default=0.1)
        p.add_argument("--test-size", type=_fraction, default=0.2)
        p.add_argument("--split", choices=SPLIT_CHOICES, default="random")
        p.add_argument("--save", action="store_true", help="save every point as a run")
        p.add_argument("--tag", action="append", metavar="TAG",
                       help="a tag for every run, repeatable (sweep is always one)")
        p.add_argument("--dir", metavar="DIR", help="run store directory")
        p.set_defaults(func=cmd_sweep)
