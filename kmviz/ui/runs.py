"""Run-store helpers for the Runs page: listing columns, exports, re-run settings."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd

#: Columns of the runs table, in display order (those present are shown).
TABLE_COLUMNS = ["label", "created", "family", "dataset", "status", "n_iter", "duration_s",
                 "D", "bqp_solver", "evd", "gamma", "lambda_theta", "mu_psi",
                 "final_train_rmse", "validation_nrmse", "test_nrmse", "run_id"]
METRIC_COLUMNS = ["n_iter", "duration_s", "final_train_rmse", "final_objective",
                  "train_nrmse", "validation_nrmse", "test_nrmse"]


def table(df: pd.DataFrame) -> pd.DataFrame:
    out = df[[c for c in TABLE_COLUMNS if c in df]].copy()
    if "created" in out and len(out):
        out["created"] = pd.to_datetime(out["created"], utc=True).dt.strftime(
            "%Y-%m-%d %H:%M UTC")
    return out


def compare_metrics(df: pd.DataFrame, run_ids) -> pd.DataFrame:
    """Selected runs side by side: one column per run, metrics and settings as rows."""
    sub = df[df["run_id"].isin(list(run_ids))].set_index("run_id")
    rows = [c for c in METRIC_COLUMNS + ["D", "bqp_solver", "evd", "gamma", "n_rand",
                                          "lambda_theta", "mu_psi", "dataset", "status"]
            if c in sub]
    def fmt(x):
        return f"{x:.4g}" if isinstance(x, float) else str(x)

    return sub[rows].T.map(fmt)


def trace_csv(trace) -> str:
    return trace.to_frame().to_csv(index=False)


def arrays_npz(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return buf.getvalue()


def figures_html(figures: dict) -> str:
    """Several Plotly figures in one standalone HTML page (plotly.js included once)."""
    parts = []
    for k, (title, fig) in enumerate(figures.items()):
        parts.append(f"<h2>{title}</h2>")
        parts.append(fig.to_html(full_html=False, include_plotlyjs=k == 0))
    return ("<!doctype html><html><head><meta charset='utf-8'><title>kmviz run</title></head>"
            "<body>" + "\n".join(parts) + "</body></html>")


def rerun_params(params: dict, defaults: dict) -> dict:
    """The estimator settings of a saved run (bookkeeping keys dropped)."""
    return {k: v for k, v in params.items() if k in defaults}


def meta_json(meta: dict) -> str:
    return json.dumps(meta, indent=2, default=str)


# ------------------------------------------------------------- self-contained saved runs
#: Parts of a split saved with a run, as ``data_<part>_{users,items,values}`` arrays.
SPLIT_PARTS = ("train", "validation", "test")


def _id_array(ids) -> np.ndarray:
    """Original ids as an int64, float64 or fixed-width unicode array (never object)."""
    a = np.asarray(ids)
    if a.dtype.kind in "iub":
        return a.astype(np.int64)
    if a.dtype.kind == "f":
        return a.astype(np.float64)
    return a.astype(str)


def split_arrays(split) -> dict:
    """The split's entries and the id space, as arrays for the run's ``arrays.npz``."""
    out = {}
    for part in SPLIT_PARTS:
        r = getattr(split, part)
        if r is None:
            continue
        out[f"data_{part}_users"] = np.asarray(r.users, dtype=np.int64)
        out[f"data_{part}_items"] = np.asarray(r.items, dtype=np.int64)
        out[f"data_{part}_values"] = np.asarray(r.values, dtype=np.float64)
    out["data_user_ids"] = _id_array(split.train.user_ids)
    out["data_item_ids"] = _id_array(split.train.item_ids)
    return out


def dataset_meta(ratings, spec: dict | None, split) -> dict:
    """What the run store keeps about the data besides the arrays (JSON): name, source,
    fingerprints, scale, how it was loaded, and the item names."""
    names = None
    if ratings.item_names is not None:
        names = [None if x is None else str(x) for x in ratings.item_names]
    spec = {k: v for k, v in (spec or {}).items() if k != "split"}
    return {
        "name": str(ratings.name), "source": str(ratings.source),
        "fingerprint": ratings.fingerprint(), "train_fingerprint": split.train.fingerprint(),
        "n_users": int(ratings.n_users), "n_items": int(ratings.n_items),
        "n_ratings": int(ratings.n_ratings), "r_min": float(ratings.r_min),
        "r_max": float(ratings.r_max), "implicit": bool(ratings.implicit),
        "spec": json.loads(json.dumps(spec, default=str)), "item_names": names,
    }


def has_saved_data(run) -> bool:
    """True when the run carries its split (saved by this kmviz version or later)."""
    return all(f"data_train_{k}" in run.arrays for k in ("users", "items", "values"))


def split_settings(params: dict) -> dict:
    """The split arguments recorded in a run's params (defaults for missing ones)."""
    from .datasets import DEFAULT_SPLIT

    saved = params.get("split") or {}
    return {k: type(v)(saved.get(k, v)) for k, v in DEFAULT_SPLIT.items()}


def saved_data(run):
    """``(whole dataset, Split)`` rebuilt from a saved run's arrays, or None if it has none.

    The index space (ids, names, scale) is the one the model was fitted on, so theta and
    psi line up with the rebuilt ratings. Side information other than item names is not
    saved. Raises ValueError if the arrays are inconsistent.
    """
    from kmviz.data import Ratings

    from .state import Split

    if not has_saved_data(run):
        return None
    a, ds = run.arrays, run.dataset
    user_ids, item_ids = a.get("data_user_ids"), a.get("data_item_ids")
    n_users = int(ds.get("n_users", len(user_ids) if user_ids is not None else 0))
    n_items = int(ds.get("n_items", len(item_ids) if item_ids is not None else 0))
    r_min, r_max = float(ds["r_min"]), float(ds["r_max"])
    names = ds.get("item_names")
    if names is not None and len(names) != n_items:
        names = None
    base = Ratings(np.zeros(0), np.zeros(0), np.zeros(0), n_users=n_users, n_items=n_items,
                   r_min=r_min, r_max=r_max, user_ids=user_ids, item_ids=item_ids,
                   item_names=names, implicit=bool(ds.get("implicit", False)),
                   name=str(ds.get("name", "ratings")), source=str(ds.get("source", "")))
    parts = {}
    for part in SPLIT_PARTS:
        if f"data_{part}_users" not in a:
            parts[part] = None
            continue
        u = np.asarray(a[f"data_{part}_users"], dtype=np.int64)
        i = np.asarray(a[f"data_{part}_items"], dtype=np.int64)
        v = np.asarray(a[f"data_{part}_values"], dtype=np.float64)
        if not (u.shape == i.shape == v.shape) or (u.size and (
                u.min() < 0 or u.max() >= n_users or i.min() < 0 or i.max() >= n_items)) or (
                not np.all(np.isfinite(v))):
            raise ValueError(f"Run {run.run_id}: the saved {part} ratings are damaged "
                             f"(indices outside {n_users} users x {n_items} items or bad "
                             "values); this run's data cannot be reopened.")
        parts[part] = base._replace_entries(u, i, v, name=f"{base.name} ({part})")
    # the whole dataset: the parts together, in the (user, item) order of Ratings.from_arrays
    users = np.concatenate([p.users for p in parts.values() if p is not None])
    items = np.concatenate([p.items for p in parts.values() if p is not None])
    values = np.concatenate([p.values for p in parts.values() if p is not None])
    order = np.argsort(users * max(n_items, 1) + items, kind="stable")
    whole = base._replace_entries(users[order], items[order], values[order])
    s = split_settings(run.params)
    split = Split(train=parts["train"], validation=parts["validation"], test=parts["test"],
                  val_size=s["val_size"], test_size=s["test_size"], by=s["by"], seed=s["seed"])
    return whole, split


def km_model_from_saved(run, split):
    """A fitted KolmogorovModel from a saved run's theta, psi and training ratings."""
    from kmviz.km import KolmogorovModel

    from .training import default_params

    params = rerun_params(run.params, default_params("km"))
    return KolmogorovModel.from_fitted(run.arrays["theta"], run.arrays["psi"], split.train,
                                       trace=run.trace, dual_u=run.arrays.get("dual_u"),
                                       **params)


def record_from_saved(run):
    """A :class:`RunRecord` for the Explore pages from a saved run (split None if the run
    was saved without its data)."""
    from .state import RunRecord

    data = saved_data(run)
    split = model = None
    if data is not None:
        split = data[1]
        if run.family == "km" and "theta" in run.arrays and "psi" in run.arrays:
            model = km_model_from_saved(run, split)
    theta, psi = run.arrays.get("theta"), run.arrays.get("psi")
    created = pd.Timestamp(run.meta["created"]).timestamp()
    return RunRecord(
        run_id=run.run_id, label=run.label, family=run.family, params=dict(run.params),
        trace=run.trace, theta=None if theta is None else np.asarray(theta),
        psi=None if psi is None else np.asarray(psi),
        dataset_name=str(run.dataset.get("name", "")),
        fingerprint=str(run.dataset.get("fingerprint") or run.params.get("fingerprint", "")),
        metrics=dict(run.metrics), split=split, model=model,
        stop_reason=str(run.meta.get("status", "")), created=created, reopened=True)
