"""Widgets that return parameter dicts. Values persist under our own keys across pages."""

from __future__ import annotations

import streamlit as st

from kmviz._params import RANDOM_STATE

from .text import md_escape

def _persisted(store_key: str, defaults: dict) -> dict:
    """Our copy of the form values (survives page changes, unlike widget state)."""
    values = dict(defaults)
    values.update(st.session_state.get(store_key) or {})
    return values


#: What an optional parameter's empty box or "automatic" choice means, in the widgets.
AUTOMATIC = "automatic"


def _help(spec) -> str | None:
    """The parameter's help, plus what leaving it automatic means for an optional one."""
    text = spec.help or ""
    if spec.none_ok and spec.kind != RANDOM_STATE:
        extra = ("Automatic: the estimator decides (see above)." if spec.kind is bool
                 else "Leave the box empty for automatic (the estimator decides).")
        text = f"{text} {extra}".strip()
    return text or None


def _form_bounds(spec, value) -> tuple:
    """(low, high) of a number box: the form's tighter bounds (``form_low`` /
    ``form_high``), widened to hold ``value`` when it lies beyond them but within the
    parameter's own range, so a measured setting, a link's or a saved run's (gFM's 300
    ALS passes on Boston, past the form's 200) is shown and used as it is, never reset."""
    lo = spec.form_low if spec.form_low is not None else spec.low
    hi = spec.form_high if spec.form_high is not None else spec.high
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if hi is not None and value > hi and (spec.high is None or value <= spec.high):
            hi = value
        if lo is not None and value < lo and (spec.low is None or value >= spec.low):
            lo = value
    return lo, hi


def _widget(name: str, spec, key: str) -> None:
    """One widget for a declared parameter (:class:`kmviz._params.Param`).

    A parameter that accepts None (``none_ok``) reads None as "automatic": a number box
    may be left empty (its placeholder says so), a yes/no choice offers "automatic" first.
    """
    label = spec.label or name
    optional = spec.none_ok and spec.kind != RANDOM_STATE
    if optional and spec.kind is bool and not spec.options:
        names = {None: AUTOMATIC, True: "yes", False: "no"}
        st.selectbox(label, [None, True, False], key=key, help=_help(spec),
                     format_func=names.get, placeholder=AUTOMATIC)  # None shows as such
        return
    # value=None makes the box clearable (empty = None); the session state holds the value
    placeholder = {"placeholder": AUTOMATIC, "value": None} if optional else {}
    if spec.options:
        labels = spec.option_labels
        st.selectbox(label, list(spec.options), key=key, help=spec.help or None,
                     format_func=lambda o: labels.get(o, str(o)))
    elif spec.kind is bool:
        st.checkbox(label, key=key, help=spec.help or None)
    elif spec.kind == RANDOM_STATE:
        st.number_input(label, min_value=0, max_value=2**31 - 1, step=1, key=key,
                        help=spec.help or None)
    elif spec.kind is int:
        lo, hi = _form_bounds(spec, st.session_state.get(key))
        st.number_input(label, min_value=None if lo is None else int(lo),
                        max_value=None if hi is None else int(hi), step=int(spec.step or 1),
                        key=key, help=_help(spec), **placeholder)
    else:
        lo, hi = _form_bounds(spec, st.session_state.get(key))
        st.number_input(label, min_value=None if lo is None else float(lo),
                        max_value=None if hi is None else float(hi),
                        step=float(spec.step or 0.1), key=key, help=_help(spec),
                        format="%.1e" if (spec.step or 1) < 1e-2 else "%g", **placeholder)


def form_params(family) -> dict:
    """The settings in ``family``'s form as estimator parameters (the widgets' values,
    converted to the declared kinds; for a setting not shown now, the value it was last
    given, else its default)."""
    constraints = family.constraints()
    prefix = f"train_{family.name}_"
    remembered = st.session_state.get(f"kmviz_params_{family.name}") or {}
    params = {}
    for k, v in family.default_params().items():
        # a setting the form does not show now keeps the value it was last given
        value = st.session_state.get(prefix + k, remembered.get(k, v))
        spec = constraints.get(k)
        if spec is not None and value is not None:
            if spec.kind is int or (spec.kind == RANDOM_STATE):
                value = int(value)
            elif spec.kind is float:
                value = float(value)
        params[k] = value
    return params


def form_layout(constraints: dict, values: dict) -> dict:
    """Which declared parameters a settings form draws, and where, for the current
    ``values``: ``controls``, the settings others depend on (named in some ``Param.when``),
    drawn first and outside the form, since a widget inside a form changes nothing until
    the form is submitted; then ``main`` and ``more`` (advanced), the other settings whose
    ``when`` holds for ``values`` (:meth:`kmviz._params.Param.applies`). A setting of
    another method is left out; it keeps its value."""
    depended_on = {name for spec in constraints.values() for name in spec.when}
    shown = [k for k, spec in constraints.items() if spec.applies(values)]
    return {"controls": [k for k in shown if k in depended_on],
            "main": [k for k in shown if k not in depended_on
                     and not constraints[k].advanced],
            "more": [k for k in shown if k not in depended_on and constraints[k].advanced]}


def params_form(family, *, overrides: dict | None = None, on_submit=None) -> tuple[dict, bool]:
    """A family's settings form, built from its estimator's declared parameters; returns
    (params, submitted). Values persist across pages; ``overrides`` (a saved run's
    settings from the Runs page) replace the remembered values once. ``on_submit`` is the
    Train button's callback, called as ``on_submit(family.name)`` before the page reruns
    (with the submitted values in the session state)."""
    constraints = family.constraints()
    defaults = family.default_params()
    store_key = f"kmviz_params_{family.name}"
    prefix = f"train_{family.name}_"
    values = _persisted(store_key, defaults)
    if overrides:
        values.update({k: v for k, v in overrides.items() if k in defaults})
        for k in defaults:
            st.session_state.pop(prefix + k, None)
    if values.get("random_state") is None and "random_state" in constraints:
        values["random_state"] = 0
    for k, v in values.items():
        if prefix + k not in st.session_state and k in constraints:
            spec = constraints[k]
            if spec.kind is float and v is not None:
                v = float(v)
            st.session_state[prefix + k] = v

    # a widget's new value is in the session state before the page runs
    layout = form_layout(constraints, {k: st.session_state.get(prefix + k, v)
                                       for k, v in values.items()})
    if layout["controls"]:  # outside the form: a change redraws the form at once
        cols = st.columns(min(3, len(layout["controls"])))
        for n, name in enumerate(layout["controls"]):
            with cols[n % len(cols)]:
                _widget(name, constraints[name], prefix + name)
    main, more = layout["main"], layout["more"]
    with st.form(f"train_form_{family.name}", border=True):
        cols = st.columns(3)
        per_col = -(-len(main) // 3)
        for n, name in enumerate(main):
            with cols[n // per_col]:
                _widget(name, constraints[name], prefix + name)
        if more:
            with st.expander("More settings"):
                cols = st.columns(3)
                for n, name in enumerate(more):
                    with cols[n % 3]:
                        _widget(name, constraints[name], prefix + name)
        submitted = st.form_submit_button(
            "Train", type="primary", icon=":material/play_arrow:",
            on_click=on_submit, args=(family.name,) if on_submit is not None else None)
    params = form_params(family)
    st.session_state[store_key] = params
    return params, submitted


def _origin_key(family) -> str:
    return f"kmviz_params_origin_{family.name}"


def reset_form(family, defaults: dict) -> None:
    """Put ``defaults`` in ``family``'s form (the widgets and our copy); a button's callback."""
    prefix = f"train_{family.name}_"
    for k in family.default_params():
        st.session_state.pop(prefix + k, None)
    st.session_state[f"kmviz_params_{family.name}"] = dict(defaults)


def load_form(family, values: dict, origin: dict) -> None:
    """Put ``values`` in ``family``'s form as the settings for the data ``origin``
    (``{"key": fingerprint, "name": dataset name}``), so that the form keeps them instead
    of starting from the data's defaults (a link's settings, :mod:`kmviz.ui.address`)."""
    reset_form(family, values)
    st.session_state[_origin_key(family)] = dict(origin)


def start_from_defaults(family, defaults: dict, origin: dict) -> str | None:
    """Make ``family``'s form start from ``defaults`` when the data changed since it was
    last filled (``origin``: ``{"key": fingerprint, "name": dataset name}``): settings are
    never carried from one dataset to another. Returns the name of the dataset whose
    settings were replaced, when there were some, so that the page can say so."""
    before = st.session_state.get(_origin_key(family))
    if before is not None and before.get("key") == origin.get("key"):
        return None
    reset_form(family, defaults)
    st.session_state[_origin_key(family)] = dict(origin)
    return None if before is None else str(before.get("name") or "another dataset")


def defaults_panel(family, ratings, spec: dict, *, quiet: bool = False) -> dict:
    """Fill ``family``'s form with its defaults for the session's data when the data or
    the family changed (:meth:`kmviz.families.Family.dataset_defaults`), say where they
    come from, offer "Reset to defaults", and say before any click when the family cannot
    use the data. ``quiet``: no notice that the form was reset (a saved run's settings
    are loaded over it). Returns the defaults."""
    built_in = spec.get("kind") == "built-in"
    dataset = str(spec.get("source", "")) if built_in else None
    try:
        found = family.dataset_defaults(ratings, dataset, spec.get("options") if built_in
                                        else None)
    except ValueError as exc:
        st.error(f"{family.title} cannot use this dataset: {exc}", icon=":material/block:")
        defaults, why = family.default_params(), None
    else:
        defaults, why = found.params, found.note
    replaced = start_from_defaults(family, defaults, {"key": ratings.fingerprint(),
                                                      "name": ratings.name})
    left, right = st.columns([5, 1], vertical_alignment="center")
    if why is not None:
        left.caption(f"The form starts from {family.short or family.title}'s defaults "
                     f"for this dataset: {why}")  # written by the family, not user text
    if replaced and not quiet:
        left.info(f"The data changed: the form now holds the defaults for this dataset; "
                  f"the settings used on {md_escape(replaced)} were not kept.",
                  icon=":material/restart_alt:")
    right.button("Reset to defaults", key=f"train_reset_{family.name}",
                 icon=":material/restart_alt:", on_click=reset_form,
                 args=(family, defaults), help="Put this family's defaults for this "
                 "dataset back in the form.")
    return defaults


#: Help per synthetic-generator parameter (kmviz.data.synthetic docstrings, in short).
GENERATOR_HELP = {
    "n_users": "Number of users (at least 2).",
    "n_items": "Number of items (at least 2).",
    "D": "Dimension D of the planted model: the number of elementary events.",
    "noise": "Standard deviation of the Gaussian noise added to p before clipping to [0, 1].",
    "observed": "Fraction of (user, item) pairs observed, in (0, 1]. Every user still gets "
                "at least 2 ratings and every item at least 1.",
    "scale": "unit: the values are the probabilities p in [0, 1]; stars: 1 + 4p on a "
             "1-5 star scale.",
    "star_step": "With the stars scale, round to multiples of this (0.5 = half stars); "
                 "0 = no rounding (continuous stars).",
    "n_chains": "Number of chains of nested supports: each chain is a random ordering of "
                "the D events, and items along it have nested supports.",
    "max_support": "Largest support size of an item, at most D. 0 = the generator's "
                   "default, max(1, D // 2), so that no item is liked by everyone.",
    "alpha": "Dirichlet concentration of θᵤ; small values give users focused on few events.",
    "random_state": "Seed of the generator: the same seed gives the same data.",
    "rank": "Rank of the planted matrix.",
    "n_user_features": "Number of user side features.",
    "n_item_features": "Number of item side features.",
    "indicator": "Which Gapminder indicator fills the countries x years matrix.",
    "year_width": "Each year is linked to this many years before and after it in the year "
                  "graph (the temporal prior of kernel matrix completion).",
    "log": "Take log10 of the values; automatic does so for GDP and population, whose "
           "values span orders of magnitude.",
    "standardize": "Scale every feature to zero mean and unit variance.",
}
#: Enumerated generator parameters: value -> label.
GENERATOR_CHOICES = {"scale": {"unit": "unit (probabilities in [0, 1])",
                               "stars": "stars (1-5)"},
                     "indicator": {"life_expectancy": "life expectancy (years)",
                                   "fertility": "fertility (children per woman)",
                                   "infant_mortality": "infant mortality (per 1,000)",
                                   "gdp": "GDP (constant 2000 US$)",
                                   "population": "population"},
                     "log": {None: "automatic", True: "log10", False: "as they are"}}
#: Optional numeric parameters whose "None" is entered as 0 (the help says what 0 means).
GENERATOR_ZERO_IS_NONE = {"max_support": int, "star_step": float}
#: Widget bounds (min, max) per parameter; None = unbounded.
GENERATOR_BOUNDS = {
    "n_users": (2, 100_000), "n_items": (2, 100_000), "D": (1, 16), "noise": (0.0, 1.0),
    "observed": (0.01, 1.0), "star_step": (0.0, 4.0), "n_chains": (1, 64),
    "max_support": (0, 16), "alpha": (0.01, 100.0), "random_state": (0, 2**31 - 1),
    "year_width": (1, 20),
    "rank": (1, 100), "n_user_features": (1, 100), "n_item_features": (1, 100),
}


def _generator_value(name: str, default, raw):
    """A generator parameter's value from its widget's value ``raw`` (what the form shows
    as 0 for "the generator's default" becomes None, text boxes become numbers where they
    can)."""
    if name in GENERATOR_CHOICES:
        return raw
    if name in GENERATOR_ZERO_IS_NONE:
        kind = GENERATOR_ZERO_IS_NONE[name]
        return None if not raw else kind(raw)
    if isinstance(default, bool):
        return bool(raw)
    if isinstance(default, int):
        return int(raw)
    if isinstance(default, float):
        return float(raw)
    if default is None:
        text = str(raw or "").strip()
        if not text:
            return _OMIT
        try:
            return int(text)
        except ValueError:
            return text
    return raw


_OMIT = object()  # an empty text box: the generator's own default (the option is left out)


def generator_options(defaults: dict, *, prefix: str) -> dict:
    """The generator options the widgets of :func:`generator_options_form` hold now (read
    from the session state, so a button's callback gets what the user last typed; a widget
    not drawn yet counts as its default)."""
    out = {}
    for name, default in defaults.items():
        key = f"{prefix}_{name}"
        if key in st.session_state:
            raw = st.session_state[key]
        elif name in GENERATOR_ZERO_IS_NONE:
            raw = 0 if default is None else default
        elif default is None:
            raw = ""
        else:
            raw = default
        value = _generator_value(name, default, raw)
        if value is not _OMIT:
            out[name] = value
    return out


def generator_options_form(defaults: dict, *, prefix: str) -> dict:
    """Widgets for a synthetic generator's parameters: selectboxes for enumerated options,
    bounded number inputs (0 standing for "default" where the help says so), checkboxes;
    returns :func:`generator_options`."""
    cols = st.columns(min(4, max(1, len(defaults))))
    scale = None
    for k, (name, default) in enumerate(defaults.items()):
        key = f"{prefix}_{name}"
        lo, hi = GENERATOR_BOUNDS.get(name, (None, None))
        helptext = GENERATOR_HELP.get(name)
        with cols[k % len(cols)]:
            if name in GENERATOR_CHOICES:
                labels = GENERATOR_CHOICES[name]
                options = list(labels)
                value = st.selectbox(name, options, key=key, help=helptext,
                                     index=options.index(default) if default in options
                                     else 0, format_func=labels.get)
                if name == "scale":
                    scale = value
            elif name in GENERATOR_ZERO_IS_NONE:
                kind = GENERATOR_ZERO_IS_NONE[name]
                disabled = name == "star_step" and scale == "unit"
                start = kind(0 if default is None else default)
                st.number_input(name, value=start, step=kind(1 if kind is int else 0.5),
                                min_value=kind(lo if lo is not None else 0),
                                max_value=None if hi is None else kind(hi), key=key,
                                help=helptext, disabled=disabled,
                                format="%d" if kind is int else "%g")
            elif isinstance(default, bool):
                st.checkbox(name, value=default, key=key, help=helptext)
            elif isinstance(default, int):
                st.number_input(name, value=default, step=1, key=key, min_value=lo,
                                max_value=hi, help=helptext)
            elif isinstance(default, float):
                st.number_input(name, value=default, key=key, format="%g", help=helptext,
                                min_value=None if lo is None else float(lo),
                                max_value=None if hi is None else float(hi),
                                step=0.05 if hi is not None and hi <= 1.0 else 0.1)
            elif default is None:
                st.text_input(name, value="", key=key, help=(helptext or "") +
                              " Empty = the generator's default.")
            else:
                st.text_input(name, value=str(default), key=key, help=helptext)
    return generator_options(defaults, prefix=prefix)


#: The split kinds (kmviz.data.ratings.SPLIT_KINDS) as the Data page names them.
SPLIT_LABELS = {"random": "random ratings", "user": "per user",
                "cold_users": "whole users (cold start)", "cold_items": "whole items (cold start)"}


def split_form(current=None) -> tuple[dict, bool]:
    """Train / validation / test fractions, random vs per-user, seed; returns (params, applied)."""
    cur = current or {"val_size": 0.1, "test_size": 0.2, "by": "random", "seed": 0}
    with st.form("data_split_form"):
        c1, c2, c3, c4 = st.columns(4)
        val = c1.number_input("validation fraction", 0.0, 0.5, float(cur["val_size"]), 0.05,
                              key="data_val_size",
                              help="Share held out to watch the fit and pick settings "
                                   "(early stopping, the Explore pages' held-out figures).")
        test = c2.number_input("test fraction", 0.0, 0.5, float(cur["test_size"]), 0.05,
                               key="data_test_size",
                               help="Share held out for the final test metrics; never used "
                                    "in training.")
        kinds = list(SPLIT_LABELS)
        by = c3.selectbox("split", kinds, index=kinds.index(cur["by"]) if cur["by"] in kinds
                          else 0, format_func=SPLIT_LABELS.get, key="data_split_by",
                          help="per user: every user keeps ratings in training and sends a "
                               "share of them to validation/test. Whole users / items: the "
                               "fractions are of the users (items), whose every rating is "
                               "held out: cold start, which only models that read side "
                               "information (kernels, features) can predict.")
        seed = c4.number_input("seed", 0, 2**31 - 1, int(cur["seed"]), 1, key="data_split_seed",
                               help="Seed of the random split: the same seed, the same parts.")
        applied = st.form_submit_button("Apply split")
    return {"val_size": float(val), "test_size": float(test), "by": by, "seed": int(seed)}, applied


#: Choices of the file-reading options (the loaders' keyword options): value -> label.
ENCODINGS = {"utf-8": "UTF-8 (default)", "latin-1": "Latin-1 (ISO 8859-1)",
             "cp1252": "Windows-1252", "utf-16": "UTF-16"}
DELIMITERS = {None: "detect (default)", ",": "comma ,", "\t": "tab", ";": "semicolon ;",
              "|": "pipe |", " ": "spaces"}
HEADERS = {None: "detect (default)", True: "yes, the first line names the columns",
           False: "no, the first line is data"}
DUPLICATES = {"error": "refuse the file (default)", "mean": "average them",
              "first": "keep the first", "last": "keep the last"}


def _column(text: str):
    """A column given as a header name or a 0-based position (digits)."""
    text = text.strip()
    return int(text) if text.isdigit() else text


def loader_options(*, encoding="utf-8", delimiter=None, header=None, user_col="",
                   item_col="", value_col="", duplicates="error") -> dict:
    """The options a user changed, as the loaders' keyword options (defaults left out, so a
    MovieLens file or a Matrix Market matrix loads with the form untouched). Columns are
    header names or 0-based positions; the rating column "none" reads 0/1 interactions."""
    out = {}
    if encoding and encoding != "utf-8":
        out["encoding"] = encoding
    if delimiter is not None:
        out["delimiter"] = delimiter
    if header is not None:
        out["header"] = bool(header)
    for name, text in (("user_col", user_col), ("item_col", item_col)):
        if str(text or "").strip():
            out[name] = _column(str(text))
    value = str(value_col or "").strip()
    if value:
        out["value_col"] = None if value.lower() == "none" else _column(value)
    if duplicates and duplicates != "error":
        out["duplicates"] = duplicates
    return out


def reading_options_form(*, prefix: str) -> dict:
    """Widgets for the file-reading options that the loaders' error messages suggest
    (encoding=, delimiter=, header=, user_col=/item_col=/value_col=, duplicates=); returns
    :func:`loader_options` of what the user set."""
    with st.expander("Reading options: encoding, delimiter, columns, duplicates"):
        st.caption("Leave the defaults unless an error message suggests a change; the names "
                   "in brackets are the options the messages mention.")
        c = st.columns(4)
        encoding = c[0].selectbox("Encoding (encoding=)", list(ENCODINGS),
                                  format_func=ENCODINGS.get, key=f"{prefix}_encoding")
        delimiter = c[1].selectbox("Delimiter (delimiter=)", list(DELIMITERS),
                                   format_func=DELIMITERS.get, key=f"{prefix}_delimiter")
        header = c[2].selectbox("Header line (header=)", list(HEADERS),
                                format_func=HEADERS.get, key=f"{prefix}_header")
        duplicates = c[3].selectbox("Repeated user-item pairs (duplicates=)",
                                    list(DUPLICATES), format_func=DUPLICATES.get,
                                    key=f"{prefix}_duplicates")
        c = st.columns(3)
        column_help = "A column name from the header, or a 0-based position (0 = first)."
        user_col = c[0].text_input("User column (user_col=)", key=f"{prefix}_user_col",
                                   placeholder="detect", help=column_help)
        item_col = c[1].text_input("Item column (item_col=)", key=f"{prefix}_item_col",
                                   placeholder="detect", help=column_help)
        value_col = c[2].text_input("Rating column (value_col=)", key=f"{prefix}_value_col",
                                    placeholder="detect",
                                    help=column_help + " 'none' reads the file as 0/1 "
                                    "interactions (no rating column).")
    return loader_options(encoding=encoding, delimiter=delimiter, header=header,
                          user_col=user_col, item_col=item_col, value_col=value_col,
                          duplicates=duplicates)


def reading_options(*, prefix: str) -> dict:
    """The options the widgets of :func:`reading_options_form` hold now, read from the
    session state (for a button's callback); a widget not drawn yet counts as its default."""
    get = st.session_state.get
    return loader_options(encoding=get(f"{prefix}_encoding", "utf-8"),
                          delimiter=get(f"{prefix}_delimiter"),
                          header=get(f"{prefix}_header"),
                          user_col=get(f"{prefix}_user_col", ""),
                          item_col=get(f"{prefix}_item_col", ""),
                          value_col=get(f"{prefix}_value_col", ""),
                          duplicates=get(f"{prefix}_duplicates", "error"))
