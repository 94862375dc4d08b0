"""The KM Explore views' helpers (kmviz.km.analysis) without a browser: the item filter,
the restricted graph, the implications in words, and how user text reaches the page."""

import numpy as np

from kmviz.data import Ratings
from kmviz.km import analysis as an
from kmviz.ui.text import md_escape, pieces_markdown


def test_default_min_ratings_rule():
    small = Ratings.from_arrays([0, 1, 1], [0, 0, 1], [1.0, 2.0, 3.0])
    assert an.default_min_ratings(small) == 1
    big = Ratings.from_arrays(np.arange(20_001) % 500, np.arange(20_001) // 500,
                              np.arange(20_001) % 5 + 1.0)
    assert an.default_min_ratings(big) == an.LARGE_DATA_MIN_RATINGS == 20


def test_influence_summary_counts_hidden_items_with_score_one():
    scores = np.array([1.0, 1.0, 0.5, 0.25])
    s = an.influence_summary(scores, np.array([False, True, True, True]))
    assert s == {"shown": 3, "hidden": 1, "one_shown": 1, "one_hidden": 1, "top3": [1, 2, 3]}
    assert an.filter_caption(s, 20) == ("Showing 3 of 4 items: 1 hidden with fewer than 20 "
                                        "training ratings, 1 of them with ς = 1.")


def test_item_names_with_markdown_stay_text():
    """Names are user data: the pieces keep them raw and pieces_markdown escapes them."""
    names = ["[x](http://evil)", "**bold** <b>b</b> $x$"]
    said = [("Everyone who likes ", False), (names[0], True), (" also likes ", False),
            (names[1], True), (".", False)]
    md = pieces_markdown(said)
    assert "](http" not in md and "[x]" not in md and "<b>" not in md and "$x$" not in md
    assert "**\\[x\\]\\(http\\://evil\\)**" in md  # bold, every special char escaped
    assert "\\*\\*bold\\*\\*" in md and "\\$x\\$" in md
    assert md_escape("a  b\nc") == "a b c"


def test_default_liked_follows_the_models_training_threshold():
    from kmviz.km import KolmogorovModel

    stars = Ratings.from_arrays([0, 0, 1, 1, 2], [0, 1, 0, 1, 1], [1.0, 5.0, 3.0, 4.0, 2.0],
                                r_min=1, r_max=5)
    assert an.default_liked(KolmogorovModel(2), stars) == 4.0  # top quarter of 1-5
    assert an.default_liked(KolmogorovModel(2, threshold=3.0), stars) == 3.0
    fitted = KolmogorovModel(2, threshold=4.5, max_iter=1, random_state=0).fit(stars)
    assert an.default_liked(fitted, stars) == 4.5
    clicks = Ratings.from_arrays([0, 1, 1], [0, 0, 1])
    assert an.default_liked(KolmogorovModel(2, threshold=1.0), clicks) == "interacted"
