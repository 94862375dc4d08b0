"""``kmviz train FAMILY --data SOURCE ...``: one parser per registered family, its options
made from the estimator's declared parameters, and the fit that prints one line per iteration
and saves the run on ``--save`` (registered in :mod:`kmviz.cli`)."""

from __future__ import annotations

import math
import sys
import time
import warnings

from ._cli_common import EXIT_OK, SPLIT_CHOICES, _fraction, _pairs, _parse_options, cli_owner


def _row_metrics(row: dict) -> list[tuple[str, float]]:
    """The metric columns of a trace row, in the run vocabulary ({part}_{metric})."""
    keys = [k for k in row if k.startswith(("train_", "validation_"))]
    return [(k, row[k]) for k in keys if isinstance(row[k], (int, float))]


class _ProgressPrinter:
    """The fit callback: one line per outer iteration with a progress bar."""

    def __init__(self, max_iter: int, stream=None, bar_width: int = 20):
        self.max_iter = max(int(max_iter), 1)
        self.stream = stream if stream is not None else sys.stdout
        self.bar_width = bar_width

    def __call__(self, row: dict) -> None:
        it = int(row.get("iteration", 0))
        filled = min(self.bar_width, round(self.bar_width * it / self.max_iter))
        bar = "#" * filled + "." * (self.bar_width - filled)
        parts = [f"[{bar}] iter {it:>{len(str(self.max_iter))}}/{self.max_iter}",
                 f"objective {row.get('objective', math.nan):.6g}"]
        parts += [f"{k} {v:.4f}" for k, v in _row_metrics(row)]
        parts.append(f"elapsed {row.get('wall_s', math.nan):7.2f} s")
        print("  ".join(parts), file=self.stream, flush=True)


def _train_params(fam, args) -> dict:
    """Estimator settings from ``--<param>`` flags, old aliases and ``--set name=value``."""
    from ._params import parse_assignments

    cls = fam.estimator_class()
    constraints = cls._parameter_constraints
    given = {}
    for name, spec in constraints.items():
        text = getattr(args, f"param_{name}", None)
        if text is not None:
            given[name] = spec.parse(cls.__name__, name, text)
    given.update(parse_assignments(cls, args.set))
    if "random_state" in constraints and "random_state" not in given:
        given["random_state"] = args.seed
    return given


def cmd_train(args) -> int:
    from . import families
    from .data import load
    from .data.splits import make_split

    fam = families.get(args.model)
    options = _parse_options(args.option)
    ratings = load(args.data, **options)
    model = fam.make(_train_params(fam, args))
    params = model.get_params()
    checked = model._validate_params()  # bad settings fail before the data is split
    split = make_split(ratings, val_size=args.val_size, test_size=args.test_size, by=args.split,
                       seed=args.seed)
    from ._memory import check_fit_memory

    check_fit_memory(model, checked, split.train)  # too large: one line, before any output
    sizes = split.describe()
    shown = ", ".join(f"{k}={params[k]}" for k in fam.label_params if k in params)
    planned = model.planned_iterations(split.train)  # ALS passes, batches, max_iter ...
    limit = f"max_iter={params['max_iter']}" if "max_iter" in params else \
        f"at most {planned} iterations"
    print(f"Training {fam.title} ({shown}, {limit}) on "
          f"{ratings.name}: {ratings.n_users:,} users x {ratings.n_items:,} items; "
          f"{sizes['train']:,} train / {sizes['validation']:,} validation / "
          f"{sizes['test']:,} test ratings ({sizes['by']} split, seed {sizes['seed']}).",
          flush=True)
    print("The first iteration includes compiling the Numba kernels (cached afterwards).",
          flush=True)
    from .parallel import describe, parallel_backend

    with parallel_backend("dask" if args.dask else "numba", client=args.dask) as backend:
        print(describe(backend), flush=True)
        start = time.perf_counter()
        from .history import History, recording

        # a saved run keeps its iterations for the app's replay (kmviz.history)
        with warnings.catch_warnings(record=True) as caught, \
                recording(History() if args.save else None):
            warnings.simplefilter("always")
            model.fit(split.train, callback=_ProgressPrinter(planned),
                      validation=split.validation)
        elapsed = time.perf_counter() - start
    for w in caught:
        print(f"note: {w.message}", file=sys.stderr)

    from .runs import run_metrics

    trace = model.trace_
    metrics = run_metrics(model, split)
    summary = [("iterations", f"{trace.n_iter} ({trace.stop_reason}: {trace.stop_message})"),
               ("time", f"{elapsed:.2f} s")]
    summary += [(k, v) for k, v in metrics.items() if k != "n_iter"]
    phases = {name: float(sum(trace.column(f"t_{name}_s"))) for name in trace.phase_names()}
    if phases:
        summary.append(("time per phase", ", ".join(f"{k} {v:.2f} s" for k, v in phases.items())))
    meaning = (" (nrmse: the RMSE on the model's [0, 1] scale; rmse: on the rating scale)"
               if any(k.endswith("_nrmse") for k in metrics) else "")
    print(f"Done. Metrics are named {{part}}_{{metric}}{meaning}.\n" + _pairs(summary))

    if args.save:
        from .runs import RunStore, save_run

        store = RunStore(args.dir)
        spec = {"kind": "cli", "source": args.data, "options": options}
        run_id = save_run(model, split, dataset=ratings, spec=spec, label=args.label,
                          note=args.note or "", store=store, writer="cli", metrics=metrics,
                          duration_s=elapsed, owner=cli_owner())
        print(f"Saved run {run_id} in {store.path}.")
        history = getattr(model, "history_", None)
        if history is not None and len(history):
            from .history import save_history

            save_history(run_id, history, store=store)
    else:
        print("Not saved; add --save to keep this run.")
    return EXIT_OK


def _set_example(fam) -> str:
    """``name=value`` of the family's first quick setting, for the ``--set`` help."""
    name, value = next(iter(fam.quick_params.items()), ("name", "value"))
    return f"{name}={value}"


def add_train_parser(train_cmds, fam, option_help) -> None:
    """``kmviz train NAME``: options generated from the family's declared parameters."""
    cls = fam.estimator_class()
    p = train_cmds.add_parser(
        fam.name, help=fam.title,
        description=f"Fit {fam.short or fam.name}'s {cls.__name__} on a train / validation "
                    "/ test split (the app's default split) and print one line per "
                    "iteration. Settings left out keep the estimator's defaults; every "
                    "setting can also be given as --set name=value.")
    p.add_argument("--data", required=True, metavar="SOURCE",
                   help="a catalogue name or a file/directory/zip")
    p.add_argument("--option", action="append", metavar="KEY=VALUE", help=option_help)
    aliases = {v: k for k, v in fam.cli_aliases.items()}
    for name, spec in cls._parameter_constraints.items():
        if name == "random_state":
            continue
        flags = [f"--{name.replace('_', '-')}"]
        if name in aliases:
            flags.append(f"--{aliases[name]}")
        p.add_argument(*flags, dest=f"param_{name}", metavar="VALUE",
                       help=f"{spec.help} ({spec.describe()})".replace("%", "%%"))
    p.add_argument("--set", action="append", metavar="NAME=VALUE", default=[],
                   help="any estimator setting, repeatable (for example --set "
                        f"{_set_example(fam)})")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the split and, unless set otherwise, of the model (default 0)")
    p.add_argument("--val-size", type=_fraction, default=0.1,
                   help="validation fraction, 0 for none (default: 0.1, as in the app)")
    p.add_argument("--test-size", type=_fraction, default=0.2,
                   help="test fraction, 0 for none (default: 0.2, as in the app)")
    p.add_argument("--split", choices=SPLIT_CHOICES, default="random",
                   help="hold out random ratings, a share of each user's, or whole users or "
                        "items (cold start) (default random)")
    p.add_argument("--dask", metavar="ADDRESS|local:N",
                   help="fit on a Dask cluster: a scheduler address (tcp://host:8786) or "
                        "local:N for N worker processes on this machine (needs kmviz[dask])")
    p.add_argument("--save", action="store_true", help="save the run to the run store")
    p.add_argument("--label", help="display name of the saved run")
    p.add_argument("--note", help="a note kept with the saved run")
    p.add_argument("--dir", metavar="DIR",
                   help="run store directory (default: $KMVIZ_RUNS_DIR or the user data dir)")
    p.set_defaults(func=cmd_train)
