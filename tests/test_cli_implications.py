"""`kmviz implications`: the CLI's output equals the Python table; bad input exits 2."""

import numpy as np
import pandas as pd
import pytest

from kmviz.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


OPTS = ("--option", "n_users=200", "--option", "n_items=40", "--option", "random_state=4")


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_cli_output_equals_the_python_table(capsys, tmp_path, suffix):
    from kmviz.data import load
    from kmviz.km.relations import mine_relations

    out = tmp_path / f"rel{suffix}"
    code, stdout, err = run(capsys, "implications", "--data", "planted-relations", *OPTS,
                            "--refits", "2", "--out", str(out))
    assert code == 0, err
    assert "How the default was chosen: KM D =" in err and "[1/4]" in err
    got = pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out)
    want = mine_relations(load("planted-relations", n_users=200, n_items=40, random_state=4),
                          n_refits=2, random_state=0)
    assert len(got) == len(want) and f"Wrote {len(want):,} relations" in stdout
    assert got["antecedent"].tolist() == want["antecedent_name"].tolist()
    assert got["consequent"].tolist() == want["consequent_name"].tolist()
    assert got["antecedent_items"].tolist() == [" ".join(map(str, t))
                                                for t in want["antecedent"]]
    for col in ("rank", "size", "support", "co_support", "confidence", "confidence_lower",
                "classic_confidence", "lift", "stability", "score"):
        np.testing.assert_allclose(got[col].to_numpy(float), want[col].to_numpy(float),
                                   rtol=1e-9, equal_nan=True)
    assert (want["size"] == 2).any() and " & " in " ".join(got["antecedent"])


def test_bad_input_exits_2_with_the_loaders_message(capsys, tmp_path):
    code, _, err = run(capsys, "implications", "--data", str(tmp_path / "missing.csv"),
                       "--out", str(tmp_path / "x.csv"))
    assert code == 2 and "no such file" in err and "Traceback" not in err
    bad = tmp_path / "bad.csv"
    bad.write_text("user,item,rating\n1,2,abc\n")
    code, _, err = run(capsys, "implications", "--data", str(bad), "--out",
                       str(tmp_path / "x.csv"))
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err
    code, _, err = run(capsys, "implications", "--data", "planted-relations", "--out",
                       str(tmp_path / "x.txt"))
    assert code == 2 and ".parquet" in err
    code, _, err = run(capsys, "implications", "--out", str(tmp_path / "x.csv"))
    assert code == 2 and "--data" in err
    code, _, err = run(capsys, "implications", "--data", "planted-relations", *OPTS,
                       "--refits", "0", "--out", str(tmp_path / "x.csv"))
    assert code == 2 and "n_refits" in err


@pytest.mark.slow
def test_cli_mines_a_saved_run(capsys, tmp_path):
    store = tmp_path / "store"
    code, out, err = run(capsys, "train", "km", "--data", "planted-relations", *OPTS,
                         "--max-iter", "3", "--save", "--dir", str(store))
    assert code == 0, err
    run_id = out.strip().splitlines()[-1].split()[2]
    dest = tmp_path / "rel.csv"
    code, out, err = run(capsys, "implications", "--run", run_id, "--dir", str(store),
                         "--refits", "2", "--out", str(dest))
    assert code == 0, err
    from kmviz.km.run_relations import run_warnings
    from kmviz.runs import RunStore, open_run

    weak = run_warnings(open_run(run_id, RunStore(store)))   # its fit no better than the mean
    assert f"run {run_id}" in err
    # a run that beats the mean hands its settings to the refits; one that does not, does not
    assert ("the miner chose its own" in err) == bool(weak)
    assert ("settings given by the caller" in err) == (not weak)
    got = pd.read_csv(dest)
    assert len(got) > 0 and "heldout_confidence" in got.columns
    code, _, err = run(capsys, "implications", "--run", "nosuchrun", "--dir", str(store),
                       "--out", str(dest))
    assert code == 2 and "Traceback" not in err


@pytest.mark.slow
def test_cli_says_when_km_is_no_better_than_the_mean(capsys, tmp_path):
    rng = np.random.default_rng(0)
    u, i = np.nonzero(rng.random((80, 30)) < 0.5)
    v = rng.integers(1, 6, u.size)
    path = tmp_path / "noise.csv"
    path.write_text("user,item,rating\n" + "".join(f"{a},{b},{c}\n" for a, b, c in zip(u, i, v)))
    code, _, err = run(capsys, "implications", "--data", str(path), "--refits", "2",
                       "--out", str(tmp_path / "rel.csv"))
    assert code == 0, err
    assert "warning: KM is no better than the mean on validation" in err and "Fix:" in err
    assert "or train on the likes" not in err   # the settings tried already did


def test_the_no_better_fix_never_advises_what_was_tried():
    import pandas as pd

    from kmviz.km.relation_settings import no_better_fix

    both = pd.DataFrame({"train_on": ["ratings", "likes"]})
    assert "likes" not in no_better_fix(both).split(";")[0]
    assert "on the ratings and on the likes, lost to the mean" in no_better_fix(both)
    assert no_better_fix(pd.DataFrame({"train_on": ["ratings"]})) == \
        "Fix: more ratings per user."


@pytest.mark.slow
def test_cli_flags_reach_the_miner(capsys, tmp_path):
    dest = tmp_path / "rel.csv"
    code, _, err = run(capsys, "implications", "--data", "planted-relations", *OPTS,
                       "--refits", "1", "--max-antecedent", "1", "--liked", "5",
                       "--rank", "lift", "--out", str(dest))
    assert code == 0, err
    got = pd.read_csv(dest)
    assert (got["size"] == 1).all() and len(got)
    assert (np.diff(got["lift"].to_numpy()) <= 1e-12).all()    # ranked by lift
    assert "ranked by lift" in err
    code, _, err = run(capsys, "implications", "--data", "planted-relations", "--liked",
                       "nine", "--out", str(dest))
    assert code == 2 and "--liked" in err
