"""Session-state keys and their defaults.

Results live under these keys, never under widget keys: Streamlit drops widget state when
the user changes page, but keeps these.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import numpy as np
import streamlit as st


class StateKeys:
    """Names of the session-state entries the pages share."""

    DATASET = "kmviz_dataset"            # Ratings: the whole loaded dataset
    DATASET_SPEC = "kmviz_dataset_spec"  # dict: how it was loaded (kind, source, options, licence)
    SPLIT = "kmviz_split"                # Split: train / validation / test parts
    JOB = "kmviz_training_job"           # TrainingJob of this session (or None)
    RUNS = "kmviz_session_runs"          # dict run_id -> RunRecord, this session's fitted runs
    ACTIVE_RUN = "kmviz_active_run"      # run_id shown by the Explore pages
    RERUN_CONFIG = "kmviz_rerun_config"  # params dict handed from the Runs page to Train
    NOTICE = "kmviz_notice"              # one-shot message shown at the top of the next page


INIT_STATES = {
    StateKeys.DATASET: None,
    StateKeys.DATASET_SPEC: None,
    StateKeys.SPLIT: None,
    StateKeys.JOB: None,
    StateKeys.RUNS: {},
    StateKeys.ACTIVE_RUN: None,
    StateKeys.RERUN_CONFIG: None,
    StateKeys.NOTICE: None,
}


def init_state() -> None:
    """Set every key this app uses to its default if it is not set yet."""
    for key, default in INIT_STATES.items():
        if key not in st.session_state:
            st.session_state[key] = copy.deepcopy(default)


@dataclass
class Split:
    """The parts a model is trained and evaluated on, and how they were made."""

    train: object
    validation: object | None
    test: object | None
    val_size: float
    test_size: float
    by: str
    seed: int

    def describe(self) -> dict:
        return {
            "train": self.train.n_ratings,
            "validation": 0 if self.validation is None else self.validation.n_ratings,
            "test": 0 if self.test is None else self.test.n_ratings,
            "by": self.by,
            "seed": self.seed,
            "val_size": self.val_size,
            "test_size": self.test_size,
        }

    def settings(self) -> dict:
        """The arguments that remake this split from the whole dataset (Data page form)."""
        return {"val_size": self.val_size, "test_size": self.test_size, "by": self.by,
                "seed": self.seed}


@dataclass
class RunRecord:
    """A fitted run of this session: what the Explore pages read."""

    run_id: str
    label: str
    family: str
    params: dict
    trace: object                  # kmviz.trace.Trace
    theta: np.ndarray | None
    psi: np.ndarray | None
    dataset_name: str
    fingerprint: str
    metrics: dict
    split: Split | None = None     # None for runs reopened from the store without their data
    model: object = None
    stop_reason: str = ""
    created: float = field(default_factory=time.time)
    reopened: bool = False         # True for a run opened from the run store


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
