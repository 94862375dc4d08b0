"""The relation miner on one-class data (a basket file: only what each user has). Its KM
fits see every absent pair as a 0; before that, the choice of settings divided 0 by 0 (the
training mean predicts a matrix of ones exactly) and the miner stopped with "All-NaN slice
encountered"."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from kmviz.data import load
from kmviz.km.relations import INTERACTION_CANDIDATES, km_training_data, mine_relations

PAIRS = [("Tent", "Sleeping bag"), ("Printer", "Ink"), ("Skis", "Ski wax")]
CONJ = (("Tent", "Camping stove"), "Gas canister")


def write_baskets(path, n_users=300, seed=5):
    """One line of items per user: random fillers with popularity skew, the planted pairs
    (whoever has A has B) and the conjunction (Tent and Camping stove => Gas canister, which
    neither half implies)."""
    rng = np.random.default_rng(seed)
    fillers = [f"Item {k}" for k in range(20)]
    pop = rng.uniform(0.05, 0.35, len(fillers))
    lines = []
    for _ in range(n_users):
        act = rng.uniform(0.5, 1.5)
        have = {f for f, p in zip(fillers, pop) if rng.random() < p * act}
        for a, b in PAIRS:
            if rng.random() < 0.2 * act:
                have.add(a)
            if rng.random() < 0.12 * act:
                have.add(b)
            if a in have:
                have.add(b)
        for extra, p in (("Camping stove", 0.3), ("Gas canister", 0.08)):
            if rng.random() < p * act:
                have.add(extra)
        if {"Tent", "Camping stove"} <= have:
            have.add("Gas canister")
        if have:
            lines.append(", ".join(sorted(have)))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_baskets_give_the_planted_relations_first(tmp_path):
    ratings = load(str(write_baskets(tmp_path / "baskets.txt")))
    assert ratings.implicit
    fitted = km_training_data(ratings)
    assert not fitted.implicit and set(np.unique(fitted.values)) == {0.0, 1.0}
    assert fitted.n_ratings == ratings.n_users * ratings.n_items
    table = mine_relations(ratings, n_refits=4, random_state=0)
    named = list(zip(table["antecedent_name"], table["consequent_name"]))
    for pair in PAIRS:
        assert pair in named[:6], (pair, named[:8])
    conj = table[table["size"] == 2]
    stated = {(tuple(sorted(n.split(" & "))), c)
              for n, c in zip(conj["antecedent_name"], conj["consequent_name"])}
    assert (tuple(sorted(CONJ[0])), CONJ[1]) in stated
    singles = set(named) - {(n, c) for n, c in zip(conj["antecedent_name"],
                                                    conj["consequent_name"])}
    assert ("Tent", "Gas canister") not in singles             # the halves are not rules
    assert ("Camping stove", "Gas canister") not in singles
    chosen = table.attrs["chosen"]["table"]                    # every setting was judged
    assert len(chosen) == len(INTERACTION_CANDIDATES)
    assert np.isfinite(chosen["skill"]).all()


@pytest.mark.slow
def test_the_cli_mines_a_basket_file(tmp_path):
    data = write_baskets(tmp_path / "baskets.txt")
    out = tmp_path / "rules.csv"
    proc = subprocess.run([sys.executable, "-m", "kmviz", "implications", "--data", str(data),
                           "--out", str(out), "--refits", "4"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = pd.read_csv(out)
    assert set(PAIRS) <= set(zip(rows["antecedent"].head(8), rows["consequent"].head(8)))
    assert "All-NaN" not in proc.stderr
