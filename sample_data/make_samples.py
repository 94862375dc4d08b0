"""Write the small sample files of ``sample_data/`` from kmviz's own generators.

Run ``python sample_data/make_samples.py [output_dir]``; the default output is the folder of
this script. The same seed always gives byte-identical files (the tests check this), and no
third-party data is used.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from kmviz.data.loaders import ML100K_GENRES
from kmviz.data.synthetic import make_planted_km

SEED = 20240601
OCCUPATIONS = ("engineer", "student", "writer", "artist", "doctor", "other")


def write_planted_ml100k(out: Path, rng: np.random.Generator) -> None:
    """A MovieLens-100K-format folder from a planted KM (100 users x 80 items, 1-5 stars).

    The first D genre flags of ``u.item`` are the items' planted supports, and ``u.genre``
    names them "support 0" ... so the loader's genre columns show the ground truth.
    """
    ratings, truth = make_planted_km(100, 80, 8, noise=0.05, observed=0.25, scale="stars",
                                     random_state=rng)
    d = truth.psi.shape[1]
    folder = out / "planted-ml100k"
    folder.mkdir(parents=True, exist_ok=True)
    stamps = 880_000_000 + rng.integers(0, 10_000_000, size=ratings.n_ratings)
    rows = [f"{u + 1}\t{i + 1}\t{v:g}\t{t}"
            for u, i, v, t in zip(ratings.users, ratings.items, ratings.values, stamps)]
    _write(folder / "u.data", rows)
    genres = [f"support {k}" for k in range(d)] + [f"unused {k}" for k in range(d, 19)]
    _write(folder / "u.genre", [f"{g}|{k}" for k, g in enumerate(genres)])
    years = rng.integers(1950, 2000, size=ratings.n_items)
    items = []
    for i in range(ratings.n_items):
        flags = list(truth.psi[i]) + [0] * (len(ML100K_GENRES) - d)
        title = f"Planted item {i + 1} ({years[i]})"
        items.append(f"{i + 1}|{title}|01-Jan-{years[i]}|||" + "|".join(map(str, flags)))
    _write(folder / "u.item", items, encoding="latin-1")
    ages = rng.integers(18, 70, size=ratings.n_users)
    genders = rng.choice(["M", "F"], size=ratings.n_users)
    jobs = rng.choice(OCCUPATIONS, size=ratings.n_users)
    _write(folder / "u.user", [f"{u + 1}|{ages[u]}|{genders[u]}|{jobs[u]}|{10000 + u}"
                               for u in range(ratings.n_users)], encoding="latin-1")


def write_triplets(out: Path, rng: np.random.Generator) -> None:
    """``planted-triplets.csv``: user,item,rating with a header, 60 users x 40 items, unit scale."""
    ratings, _ = make_planted_km(60, 40, 6, noise=0.05, observed=0.3, random_state=rng)
    rows = [f"{u},{i},{v:.3f}" for u, i, v in zip(ratings.users, ratings.items, ratings.values)]
    _write(out / "planted-triplets.csv", ["user,item,rating"] + rows)


def write_interactions(out: Path, rng: np.random.Generator) -> None:
    """``interactions.tsv``: tab-separated user/item pairs without header (0/1 data).

    A pair is listed when a planted-KM user would like the item (p >= 0.5) and it is sampled.
    """
    _, truth = make_planted_km(50, 30, 6, noise=0.0, random_state=rng)
    liked = (truth.p >= 0.5) & (rng.random(truth.p.shape) < 0.6)
    # every user needs two items and every item one, as the planted generator guarantees
    for u in np.flatnonzero(liked.sum(axis=1) < 2):
        liked[u, np.argsort(-truth.p[u])[:2]] = True
    for i in np.flatnonzero(~liked.any(axis=0)):
        liked[int(np.argmax(truth.p[:, i])), i] = True
    u, i = np.nonzero(liked)
    _write(out / "interactions.tsv", [f"user{a:03d}\titem{b:03d}" for a, b in zip(u, i)])


#: The planted rules of ``baskets.csv``: whoever has all the items on the left has the right.
BASKET_RULES = ((("Espresso",), "Coffee"), (("Croissant",), "Butter"),
                (("Cappuccino",), "Milk, oat"), (("Pasta", "Tomatoes"), "Basil"))
BASKET_ITEMS = ("Coffee", "Espresso", "Cappuccino", "Tea", "Milk, oat", "Sugar", "Croissant",
                "Butter", "Bread", "Jam", "Pasta", "Tomatoes", "Basil", "Cheese", "Apples",
                "Bananas", "Yogurt", "Honey", "Rice", "Eggs")
#: The planted rules of ``ratings-table.csv``: every fan (4 or 5 stars) of the left subject
#: rates the right one 4 or 5.
TABLE_RULES = (("Calculus", "Algebra"), ("Physics", "Calculus"), ("Literature", "History"))
TABLE_ITEMS = ("Algebra", "Calculus", "Geometry", "Statistics", "Physics", "Chemistry",
               "Biology", "History", "Literature", "Art", "Music", "Philosophy")


def write_baskets(out: Path, rng: np.random.Generator) -> None:
    """``baskets.csv``: one comma-separated line of items per user (200 users, 20 items,
    one quoted name holding a comma), with the :data:`BASKET_RULES` holding exactly."""
    popularity = rng.uniform(0.05, 0.35, size=len(BASKET_ITEMS))
    lines = []
    for _ in range(200):
        basket = {name for name, p in zip(BASKET_ITEMS, popularity) if rng.random() < p}
        if len(basket) < 2:
            basket |= set(rng.choice(BASKET_ITEMS, size=2, replace=False).tolist())
        for left, right in BASKET_RULES:
            if set(left) <= basket:
                basket.add(right)
        names = sorted(basket, key=BASKET_ITEMS.index)
        order = rng.permutation(len(names))
        lines.append(",".join(_quoted(names[k]) for k in order))
    _write(out / "baskets.csv", lines)


def _quoted(name: str) -> str:
    return f'"{name}"' if "," in name else name


def write_ratings_table(out: Path, rng: np.random.Generator) -> None:
    """``ratings-table.csv``: a users x subjects table (150 students, 12 subjects, 1-5 stars,
    an empty cell for a subject not rated, a first column of user ids), with the
    :data:`TABLE_RULES` holding exactly."""
    n_users, n_items = 150, len(TABLE_ITEMS)
    taste = rng.normal(3.2, 0.8, size=(n_users, 1)) + rng.normal(0, 0.3, size=(1, n_items))
    stars = np.clip(np.rint(taste + rng.normal(0, 1.0, size=(n_users, n_items))), 1, 5)
    seen = rng.random((n_users, n_items)) < 0.55
    col = {name: k for k, name in enumerate(TABLE_ITEMS)}
    for _ in range(len(TABLE_RULES)):  # the rules form a chain: repeat until all hold
        for left, right in TABLE_RULES:
            fans = seen[:, col[left]] & (stars[:, col[left]] >= 4)
            seen[fans, col[right]] = True
            stars[fans, col[right]] = np.maximum(stars[fans, col[right]], 4)
    rows = ["user," + ",".join(TABLE_ITEMS)]
    for u in range(n_users):
        cells = [f"{int(stars[u, i])}" if seen[u, i] else "" for i in range(n_items)]
        rows.append(f"s{u + 1:03d}," + ",".join(cells))
    _write(out / "ratings-table.csv", rows)


def _write(path: Path, lines, encoding="utf-8") -> None:
    path.write_text("\n".join(lines) + "\n", encoding=encoding, newline="\n")


def main(out=None) -> Path:
    """Write every sample into ``out`` (default: this folder) and return it."""
    out = Path(__file__).resolve().parent if out is None else Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    write_planted_ml100k(out, rng)
    write_triplets(out, rng)
    write_interactions(out, rng)
    rng = np.random.default_rng(SEED + 1)  # the files above stay as they were
    write_baskets(out, rng)
    write_ratings_table(out, rng)
    return out


if __name__ == "__main__":
    print(f"wrote samples to {main(sys.argv[1] if len(sys.argv) > 1 else None)}")
