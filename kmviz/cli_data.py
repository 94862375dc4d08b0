"""``kmviz data list [--long]`` and ``kmviz data describe SOURCE``: the bodies of the ``data``
subcommands (registered in :mod:`kmviz.cli`)."""

from __future__ import annotations

from ._cli_common import EXIT_OK, _load, _pairs, _table


def cmd_data_list(args) -> int:
    from .data.catalogue import list_datasets

    entries = list_datasets()
    if args.long:
        for e in entries:
            print(f"{e.name}: {e.title}\n  {e.description}\n  source:  {e.source}\n"
                  f"  licence: {e.licence}\n")
        return EXIT_OK
    rows = [[e.name, e.title, e.description, e.source] for e in entries]
    print(_table(rows, ["NAME", "TITLE", "DESCRIPTION", "SOURCE"], max_width=40))
    print("\nLoad one with `kmviz data describe NAME`; `kmviz data list --long` shows "
          "full descriptions and licences.")
    return EXIT_OK


def cmd_data_describe(args) -> int:
    option = list(args.option or [])
    if getattr(args, "format", None):
        option.append(f"format={args.format}")
    ratings = _load(args.source, option)
    d = ratings.describe()

    def columns(cols):
        if cols is None:
            return "none"
        shown = ", ".join(str(c) for c in cols[:12])
        more = f", ... ({len(cols)} in all)" if len(cols) > 12 else f" ({len(cols)})"
        return shown + more

    kind = ("one-class interactions (values 1; absent pairs unknown)" if d["implicit"]
            else f"ratings in [{d['r_min']:g}, {d['r_max']:g}]")
    items = [
        ("name", d["name"]),
        ("source", d["source"] or args.source),
        ("users", f"{d['n_users']:,}"),
        ("items", f"{d['n_items']:,}"),
        ("ratings", f"{d['n_ratings']:,}"),
        ("density", f"{100 * d['density']:.3g}%"),
        ("scale", kind),
        ("fingerprint", ratings.fingerprint()),
        ("item titles", d["item_names"]),
        ("user names", d["user_names"]),
        ("item features", columns(d["item_features"])),
        ("user features", columns(d["user_features"])),
        ("item graph", d["item_graph"]),
        ("user graph", d["user_graph"]),
    ]
    items += [(k[len("info_"):].replace("_", " "), v) for k, v in d.items()
              if k.startswith("info_")]
    print(_pairs(items))
    return EXIT_OK
