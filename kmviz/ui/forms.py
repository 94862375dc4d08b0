"""Widgets that return parameter dicts. Values persist under our own keys across pages."""

from __future__ import annotations

import streamlit as st

#: One-line help per KM hyperparameter: the paper's symbol and where it is defined.
KM_HELP = {
    "D": "Dimension D of the KM, eq. (1): the number of elementary events.",
    "bqp_solver": "Solver of the binary QP (4): dual GD (Alg. 1), enhanced GD with EVD "
                  "elimination (Alg. 2), fast = enhanced GD with the initial step of Sec. IV-A, "
                  "exact enumeration, branch and bound, SDR with randomization, quasi-Newton.",
    "evd": "Exact EVD or the modified Lanczos of Alg. 5 with threshold δ of (20).",
    "gamma": "Regularization γ of the SDP (11), Sec. III-A.",
    "n_rand": "I_rand of Alg. 3: Gaussian randomization samples per item.",
    "max_iter": "I_BCD: maximum number of BCD iterations of Alg. 4.",
    "tol": "Stop when the objective's relative decrease in one BCD iteration is below this.",
    "lambda_theta": "Regularizer λ_u on θ_u (Table V), added to the simplex QP (3).",
    "mu_psi": "Regularizer μ_i on ψ_i (Table V), a penalty on the support size in (4).",
    "probability": "Ratings to empirical probabilities p_ui: (r − r_min)/(r_max − r_min), "
                   "the paper's r / r_max (eq. (6)), or as given.",
    "lanczos_a": "a in (20): larger a lowers δ, so Lanczos runs more iterations m.",
    "dual_eps": "ε of the dual GD stopping rule ||t Δu|| ≤ ε (Alg. 1/2).",
    "random_state": "Seed of the initialization and randomization (same seed, same trace).",
    "init": "Initialization of θ (Dirichlet(1)).",
}

BQP_SOLVER_LABELS = {
    "fast": "fast: semismooth Newton on the dual (default)",
    "enhanced": "enhanced: GD with EVD elimination (Alg. 2)",
    "gd": "gd: original dual GD (Alg. 1)",
    "exact": "exact: enumeration of all 2^D (small D)",
    "bnb": "bnb: branch and bound",
    "sdr": "sdr: SDP relaxation + randomization",
    "bfgs": "bfgs: quasi-Newton on the dual",
}


def _persisted(store_key: str, defaults: dict) -> dict:
    """Our copy of the form values (survives page changes, unlike widget state)."""
    values = dict(defaults)
    values.update(st.session_state.get(store_key) or {})
    return values


def km_params_form(defaults: dict, *, store_key: str = "kmviz_train_params",
                   overrides: dict | None = None) -> tuple[dict, bool]:
    """The KM hyperparameter form; returns (params, submitted).

    ``defaults`` come from ``KolmogorovModel().get_params()``; ``overrides`` (a saved run's
    configuration from the Runs page) replace the remembered values once.
    """
    values = _persisted(store_key, defaults)
    if overrides:
        values.update({k: v for k, v in overrides.items() if k in defaults})
        for k in defaults:
            st.session_state.pop(f"train_{k}", None)
    for k, v in values.items():
        if f"train_{k}" not in st.session_state and k in defaults:
            st.session_state[f"train_{k}"] = v
    if st.session_state.get("train_random_state") is None:
        st.session_state["train_random_state"] = 0

    with st.form("train_form", border=True):
        c1, c2, c3 = st.columns(3)
        with c1:
            st.number_input("D (dimension)", min_value=1, max_value=16, step=1,
                            key="train_D", help=KM_HELP["D"])
            st.selectbox("BQP solver", list(BQP_SOLVER_LABELS), key="train_bqp_solver",
                         format_func=BQP_SOLVER_LABELS.get, help=KM_HELP["bqp_solver"])
            st.selectbox("EVD", ["exact", "lanczos"], key="train_evd", help=KM_HELP["evd"])
            st.number_input("a (Lanczos threshold)", min_value=0.01, max_value=100.0,
                            step=0.1, key="train_lanczos_a", help=KM_HELP["lanczos_a"])
        with c2:
            st.number_input("γ (gamma)", min_value=0.001, step=10.0, key="train_gamma",
                            help=KM_HELP["gamma"])
            st.number_input("I_rand (n_rand)", min_value=1, max_value=1000, step=10,
                            key="train_n_rand", help=KM_HELP["n_rand"])
            st.number_input("max BCD iterations", min_value=1, max_value=500, step=1,
                            key="train_max_iter", help=KM_HELP["max_iter"])
            st.number_input("tol", min_value=0.0, step=1e-4, format="%.1e", key="train_tol",
                            help=KM_HELP["tol"])
        with c3:
            st.number_input("λ_u (lambda_theta)", min_value=0.0, step=1.0,
                            key="train_lambda_theta", help=KM_HELP["lambda_theta"])
            st.number_input("μ_i (mu_psi)", min_value=0.0, step=0.5, key="train_mu_psi",
                            help=KM_HELP["mu_psi"])
            st.selectbox("probability mapping", ["minmax", "max", "identity"],
                         key="train_probability", help=KM_HELP["probability"])
            st.number_input("seed", min_value=0, step=1, key="train_random_state",
                            help=KM_HELP["random_state"])
        submitted = st.form_submit_button("Train", type="primary", icon=":material/play_arrow:")
    params = {k: st.session_state.get(f"train_{k}", v) for k, v in defaults.items()}
    for k in ("D", "n_rand", "max_iter", "random_state"):
        if params.get(k) is not None:
            params[k] = int(params[k])
    for k in ("gamma", "tol", "lambda_theta", "mu_psi", "lanczos_a", "dual_eps"):
        if params.get(k) is not None:
            params[k] = float(params[k])
    st.session_state[store_key] = params
    return params, submitted


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
    "alpha": "Dirichlet concentration of θ_u; small values give users focused on few events.",
    "random_state": "Seed of the generator: the same seed gives the same data.",
    "rank": "Rank of the planted matrix.",
    "n_user_features": "Number of user side features.",
    "n_item_features": "Number of item side features.",
}
#: Enumerated generator parameters: value -> label.
GENERATOR_CHOICES = {"scale": {"unit": "unit (probabilities in [0, 1])",
                               "stars": "stars (1-5)"}}
#: Optional numeric parameters whose "None" is entered as 0 (the help says what 0 means).
GENERATOR_ZERO_IS_NONE = {"max_support": int, "star_step": float}
#: Widget bounds (min, max) per parameter; None = unbounded.
GENERATOR_BOUNDS = {
    "n_users": (2, 100_000), "n_items": (2, 100_000), "D": (1, 16), "noise": (0.0, 1.0),
    "observed": (0.01, 1.0), "star_step": (0.0, 4.0), "n_chains": (1, 64),
    "max_support": (0, 16), "alpha": (0.01, 100.0), "random_state": (0, 2**31 - 1),
    "rank": (1, 100), "n_user_features": (1, 100), "n_item_features": (1, 100),
}


def generator_options_form(defaults: dict, *, prefix: str) -> dict:
    """Widgets for a synthetic generator's parameters: selectboxes for enumerated options,
    bounded number inputs (0 standing for "default" where the help says so), checkboxes."""
    out = {}
    cols = st.columns(min(4, max(1, len(defaults))))
    for k, (name, default) in enumerate(defaults.items()):
        key = f"{prefix}_{name}"
        lo, hi = GENERATOR_BOUNDS.get(name, (None, None))
        helptext = GENERATOR_HELP.get(name)
        with cols[k % len(cols)]:
            if name in GENERATOR_CHOICES:
                labels = GENERATOR_CHOICES[name]
                options = list(labels)
                out[name] = st.selectbox(name, options, key=key, help=helptext,
                                         index=options.index(default) if default in options
                                         else 0, format_func=labels.get)
            elif name in GENERATOR_ZERO_IS_NONE:
                kind = GENERATOR_ZERO_IS_NONE[name]
                disabled = name == "star_step" and out.get("scale") == "unit"
                start = kind(0 if default is None else default)
                value = st.number_input(name, value=start, step=kind(1 if kind is int else 0.5),
                                        min_value=kind(lo if lo is not None else 0),
                                        max_value=None if hi is None else kind(hi), key=key,
                                        help=helptext, disabled=disabled,
                                        format="%d" if kind is int else "%g")
                out[name] = None if value == 0 else kind(value)
            elif isinstance(default, bool):
                out[name] = st.checkbox(name, value=default, key=key, help=helptext)
            elif isinstance(default, int):
                out[name] = int(st.number_input(name, value=default, step=1, key=key,
                                                min_value=lo, max_value=hi, help=helptext))
            elif isinstance(default, float):
                out[name] = float(st.number_input(
                    name, value=default, key=key, format="%g", help=helptext,
                    min_value=None if lo is None else float(lo),
                    max_value=None if hi is None else float(hi),
                    step=0.05 if hi is not None and hi <= 1.0 else 0.1))
            elif default is None:
                text = st.text_input(name, value="", key=key, help=(helptext or "") +
                                     " Empty = the generator's default.")
                if text.strip():
                    try:
                        out[name] = int(text)
                    except ValueError:
                        out[name] = text
            else:
                out[name] = st.text_input(name, value=str(default), key=key, help=helptext)
    return out


def split_form(current=None) -> tuple[dict, bool]:
    """Train / validation / test fractions, random vs per-user, seed; returns (params, applied)."""
    cur = current or {"val_size": 0.1, "test_size": 0.2, "by": "random", "seed": 0}
    with st.form("data_split_form"):
        c1, c2, c3, c4 = st.columns(4)
        val = c1.number_input("validation fraction", 0.0, 0.5, float(cur["val_size"]), 0.05,
                              key="data_val_size")
        test = c2.number_input("test fraction", 0.0, 0.5, float(cur["test_size"]), 0.05,
                               key="data_test_size")
        by = c3.radio("split", ["random", "user"], index=0 if cur["by"] == "random" else 1,
                      format_func={"random": "random ratings", "user": "per user"}.get,
                      key="data_split_by", horizontal=True,
                      help="per user: every user keeps ratings in training and sends a share "
                           "of them to validation/test")
        seed = c4.number_input("seed", 0, 2**31 - 1, int(cur["seed"]), 1, key="data_split_seed")
        applied = st.form_submit_button("Apply split")
    return {"val_size": float(val), "test_size": float(test), "by": by, "seed": int(seed)}, applied
