"""Session-state keys and their defaults, and the run record the Explore pages read.

Results live under these keys, never under widget keys: Streamlit drops widget state when
the user changes page, but keeps these.
"""

from __future__ import annotations

import copy
import hashlib
import os
import secrets
import time
from dataclasses import dataclass, field

import streamlit as st

from kmviz._hosts import is_loopback
from kmviz.data.splits import Split  # noqa: F401 (re-exported for the pages)

from .scheduler import scheduler, set_job_owner


class StateKeys:
    """Names of the session-state entries the pages share."""

    DATASET = "kmviz_dataset"            # Ratings: the whole loaded dataset
    DATASET_SPEC = "kmviz_dataset_spec"  # dict: how it was loaded (kind, source, options, licence)
    SPLIT = "kmviz_split"                # Split: train / validation / test parts
    JOB = "kmviz_training_job"           # TrainingJob of this session (or None)
    RUNS = "kmviz_session_runs"          # dict run_id -> RunRecord, this session's fitted runs
    ACTIVE_RUN = "kmviz_active_run"      # run_id shown by the Explore pages
    FAMILY = "kmviz_family"              # the family chosen on the Train page
    RERUN_CONFIG = "kmviz_rerun_config"  # (family, params) handed from the Runs page to Train
    NOTICE = "kmviz_notice"              # one-shot message shown at the top of the next page
    ITEM = "kmviz_item"                  # dict run_id -> item shown by the per-item views
    OWNER = "kmviz_owner"                # str: this browser's owner token for runs
    NEW_BROWSER_SECRET = "kmviz_new_browser_secret"  # str: a secret to set as the cookie
    TRAIN_REQUEST = "kmviz_train_request"  # dict: a Train click not yet started (id, family, params)
    DATA_LOAD = "kmviz_data_load"        # dict: what the Data page's last Load did, not shown yet
    PENDING_LOAD = "kmviz_pending_load"  # dict: a Load callback's result not yet applied
    LESSON_ON = "kmviz_lesson_on"        # bool: lesson mode (kmviz.ui.lesson)


INIT_STATES = {
    StateKeys.DATASET: None,
    StateKeys.DATASET_SPEC: None,
    StateKeys.SPLIT: None,
    StateKeys.JOB: None,
    StateKeys.RUNS: {},
    StateKeys.ACTIVE_RUN: None,
    StateKeys.FAMILY: None,
    StateKeys.RERUN_CONFIG: None,
    StateKeys.NOTICE: None,
    StateKeys.ITEM: {},
    StateKeys.TRAIN_REQUEST: None,
    StateKeys.DATA_LOAD: None,
    StateKeys.PENDING_LOAD: {},
}


def init_state() -> None:
    """Set every key this app uses to its default if it is not set yet."""
    for key, default in INIT_STATES.items():
        if key not in st.session_state:
            st.session_state[key] = copy.deepcopy(default)
    owner = session_owner()
    remember_browser()
    note_session(owner)


def session_id() -> str | None:
    """This script run's Streamlit session id (one per tab), None outside a server."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
    except Exception:  # noqa: BLE001 - no script run context
        return None
    return getattr(ctx, "session_id", None) if ctx is not None else None


def fit_owner() -> str | None:
    """The owner the fit queue counts and watches this session's fits under: this
    browser's token on a served app, None on a private one (no per-browser rules)."""
    return None if private_app() else session_owner()


def note_session(owner: str | None = None) -> None:
    """Tell the fit queue this tab of the browser is alive (every script run), so its
    fits are not taken for orphans (:meth:`kmviz.ui.scheduler.FitScheduler.sweep`)."""
    if private_app():
        return
    scheduler().note_session(owner or session_owner(), session_id())


# jobs through the fit queue's gate (refits, solver comparisons) are watched under the
# browser that makes them
set_job_owner(lambda: (fit_owner(), session_id()))


#: Operator switch (``kmviz app --shared-runs``): every session may manage every run.
SHARED_RUNS_ENV = "KMVIZ_SHARED_RUNS"
#: Addresses that only this machine can reach: an app served there is private.
LOOPBACK_ADDRESSES = ("127.0.0.1", "localhost", "::1")
#: The browser cookie that keeps a browser's identity across reloads and server restarts
#: when the app is served to others (a random secret; runs store only its hash).
OWNER_COOKIE = "kmviz_browser"
_SECRET_LENGTH = 32  # hex characters of a browser secret


def private_app() -> bool:
    """True when the server listens on a loopback address only (the default of ``kmviz app``
    and of ``streamlit run app.py`` here): the person at the keyboard is the only user, so
    every run in the run store is theirs, whoever saved it (any tab, an earlier server, the
    CLI)."""
    # any loopback spelling: 127.0.0.0/8, ::1 (also [::1], 0:0:0:0:0:0:0:1), ::ffff:127.x
    return is_loopback(st.get_option("server.address"))


def owner_from_secret(secret: str) -> str:
    """The owner token a browser secret stands for (its hash: the token saved with runs
    never gives the secret away)."""
    return "app:" + hashlib.sha256(secret.encode("ascii")).hexdigest()[:32]


def _browser_secret() -> str | None:
    """This browser's secret from its cookie, if it has a well-formed one."""
    try:
        value = st.context.cookies.get(OWNER_COOKIE)
    except Exception:  # noqa: BLE001 - no browser context (bare scripts, some tests)
        return None
    if isinstance(value, str) and len(value) == _SECRET_LENGTH and all(
            c in "0123456789abcdef" for c in value):
        return value
    return None


def session_owner() -> str:
    """This browser's owner token: the runs it saves carry it, and (when the app is served
    to others) only it may rename, note or delete them or load their data. It comes from a
    cookie, so a reload or a server restart keeps it; a browser without the cookie gets a
    new secret, set as the cookie by :func:`remember_browser`."""
    token = st.session_state.get(StateKeys.OWNER)
    if not token:
        secret = _browser_secret()
        if secret is None:
            secret = st.session_state[StateKeys.NEW_BROWSER_SECRET] = secrets.token_hex(
                _SECRET_LENGTH // 2)
        token = st.session_state[StateKeys.OWNER] = owner_from_secret(secret)
    return token


#: How long a new tab waits after offering its secret before it checks which secret the
#: browser kept (two tabs opened at once may both offer one; the last write wins).
ADOPT_AFTER_MS = 250


def remember_browser() -> None:
    """In a browser that came without the owner cookie (once per session): set it to this
    session's new secret unless another tab has set one meanwhile, and if the browser keeps
    another tab's secret, reload this tab so its session takes that one. So two tabs a new
    browser opens at once end with one owner, on their first render, before either can
    save a run."""
    secret = st.session_state.pop(StateKeys.NEW_BROWSER_SECRET, None)
    if secret is None:
        return
    st.html(_adopt_script(secret), unsafe_allow_javascript=True)


def _adopt_script(secret: str) -> str:
    """The script of :func:`remember_browser` (``secret``: 32 hex characters)."""
    if len(secret) != _SECRET_LENGTH or any(c not in "0123456789abcdef" for c in secret):
        raise ValueError("a browser secret is 32 lower-case hex characters")
    return ("<script>(function () {"
            f"var name = '{OWNER_COOKIE}', mine = '{secret}';"
            "function kept() { var m = document.cookie.match("
            f"/(?:^|;\\s*){OWNER_COOKIE}=([0-9a-f]{{{_SECRET_LENGTH}}})(?:;|$)/);"
            " return m ? m[1] : null; }"
            "if (!kept()) { document.cookie = name + '=' + mine + "
            "'; path=/; max-age=31536000; SameSite=Strict'; }"
            "setTimeout(function () { var now = kept();"
            " if (now && now !== mine) { window.top.location.reload(); } }, "
            f"{ADOPT_AFTER_MS});"
            "})();</script>")


def shared_runs() -> bool:
    """True when every session may manage every run: the app is private (loopback), or the
    operator shared the runs (``kmviz app --shared-runs``, KMVIZ_SHARED_RUNS=1)."""
    shared = os.environ.get(SHARED_RUNS_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    return shared or private_app()


def owns(meta: dict) -> bool:
    """Whether this session may manage the run of ``meta`` and load its saved data."""
    return shared_runs() or (meta or {}).get("owner") == session_owner()


def manage_owner() -> str | None:
    """The ``owner=`` for RunStore.update/delete: this session's token, None when shared."""
    return None if shared_runs() else session_owner()


#: Why another session's run is read-only here (shown beside the disabled buttons).
NOT_YOURS = ("This run was made by another browser (or the command line), so it is "
             "read-only here: you can look at its settings and curves and re-run its "
             "settings, but not rename, note or delete it, download its data, or load the "
             "data it was trained on. The operator can share every run with `kmviz app "
             "--shared-runs`.")


@dataclass
class RunRecord:
    """A fitted run of this session (trained here or reopened): what the Explore pages read.

    ``model`` is the fitted estimator and ``split`` its data; either may be None for a run
    reopened from the store that cannot give them, and ``problem`` then says why.
    """

    run_id: str
    label: str
    family: str
    params: dict
    trace: object                  # kmviz.trace.Trace
    model: object
    split: Split | None
    dataset_name: str
    fingerprint: str
    metrics: dict
    stop_reason: str = ""
    created: float = field(default_factory=time.time)
    reopened: bool = False         # True for a run opened from the run store
    problem: str = ""
    saved: bool = True             # False when the run store could not keep it
    replay_iteration: int | None = None   # set on a copy showing an earlier iteration


def session_runs() -> dict:
    return st.session_state.get(StateKeys.RUNS) or {}


def active_run() -> RunRecord | None:
    """The run the Explore pages show: the chosen one, else the newest of this session."""
    runs = session_runs()
    rid = st.session_state.get(StateKeys.ACTIVE_RUN)
    if rid in runs:
        return runs[rid]
    if runs:
        return max(runs.values(), key=lambda r: r.created)
    return None


def add_run(record: RunRecord) -> None:
    runs = dict(session_runs())
    runs[record.run_id] = record
    st.session_state[StateKeys.RUNS] = runs
    st.session_state[StateKeys.ACTIVE_RUN] = record.run_id


def forget_run(run_id: str) -> None:
    runs = dict(session_runs())
    runs.pop(run_id, None)
    st.session_state[StateKeys.RUNS] = runs
    if st.session_state.get(StateKeys.ACTIVE_RUN) == run_id:
        st.session_state[StateKeys.ACTIVE_RUN] = None
