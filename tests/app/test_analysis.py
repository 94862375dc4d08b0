"""The KM Explore views' helpers (kmviz.km.analysis) without a browser: the item filter,
the restricted graph, the implications in words, and how user text reaches the page."""

import numpy as np

from kmviz.data import Ratings
from kmviz.km import analysis as an
from kmviz.km.interpret import implication_graph
from kmviz.ui.text import md_escape, pieces_markdown


def test_default_min_ratings_rule():
    small = Ratings.from_arrays([0, 1, 1], [0, 0, 1], [1.0, 2.0, 3.0])
    assert an.default_min_ratings(small) == 1
    big = Ratings.from_arrays(np.arange(20_001) % 500, np.arange(20_001) // 500,
                              np.arange(20_001) % 5 + 1.0)
    assert an.default_min_ratings(big) == an.LARGE_DATA_MIN_RATINGS == 20


def test_restrict_graph_drops_hidden_items_and_keeps_edges():
    psi = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 0], [1, 1, 1]])  # 0 => {1, 2} => 3
    G = implication_graph(psi, ["a", "b", "c", "d"], transitive_reduction=False)
    keep = np.array([True, False, True, True])
    H = an.restrict_graph(G, keep)
    members = sorted(m for _, d in H.nodes(data=True) for m in d["members"])
    assert members == [0, 2, 3]
    assert H.number_of_nodes() == 3 and H.number_of_edges() == 3
    node_c = an.node_of_item(H, 2)
    assert H.nodes[node_c]["names"] == ["c"] and H.nodes[node_c]["label"] == "c"
    H2 = an.restrict_graph(G, np.array([True, False, False, True]))
    assert H2.number_of_nodes() == 2 and an.node_of_item(H2, 1) is None


def test_influence_summary_counts_hidden_items_with_score_one():
    scores = np.array([1.0, 1.0, 0.5, 0.25])
    s = an.influence_summary(scores, np.array([False, True, True, True]))
    assert s == {"shown": 3, "hidden": 1, "one_shown": 1, "one_hidden": 1, "top3": [1, 2, 3]}
    assert an.filter_caption(s, 20) == ("Showing 3 of 4 items: 1 hidden with fewer than 20 "
                                        "training ratings, 1 of them with ς = 1.")


def _text(pieces) -> str:
    return "".join(t for t, _ in pieces)


def test_plain_words_returns_text_and_bold_pieces():
    psi = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 0], [1, 1, 1]])  # 0 => {1, 2} => 3
    names = ["a", "b", "c", "d"]
    said, told = an.plain_words(psi, 1, names)
    for pieces in (said, told):
        assert all(isinstance(t, str) and isinstance(b, bool) for t, b in pieces)
    # supp(psi_j) within supp(psi_i): liking j implies liking i
    assert _text(said) == "Everyone who likes b also likes c, d."
    assert _text(told) == "Everyone who likes any of a, c also likes b."
    assert [t for t, bold in said if bold] == ["b", "c", "d"]  # item names in bold
    assert [t for t, bold in said if not bold] == ["Everyone who likes ", " also likes ",
                                                   ", ", "."]
    # nothing shown implies liking the item with the smallest support ...
    assert _text(an.plain_words(psi, 0, names)[0]) == "Everyone who likes a also likes b, c, d."
    assert _text(an.plain_words(psi, 0, names)[1]) == "No other item shown implies liking a."
    # ... and liking the item with the largest support implies nothing
    assert _text(an.plain_words(psi, 3, names)[0]) == \
        "Liking d implies nothing about the items shown."
    assert _text(an.plain_words(psi, 3, names)[1]) == \
        "Everyone who likes any of a, b, c also likes d."


def test_plain_words_hidden_items_limit_and_empty_support():
    psi = np.array([[1, 0], [1, 1], [1, 1], [0, 0]])
    names = ["a", "b", "c", "e"]
    keep = np.array([False, True, True, True])
    said, told = an.plain_words(psi, 1, names, keep=keep)
    assert _text(said) == "Everyone who likes b also likes c."
    assert _text(told) == ("Everyone who likes any of c also likes b. "
                           "(1 rarely rated item(s) hidden)")
    said, _ = an.plain_words(psi, 0, names, limit=1)
    assert _text(said) == "Everyone who likes a also likes b and 1 more."
    empty, same = an.plain_words(psi, 3, names)
    assert empty == same and "has an empty support" in _text(empty)


def test_item_names_with_markdown_stay_text():
    """Names are user data: the pieces keep them raw and pieces_markdown escapes them."""
    psi = np.array([[1, 1], [1, 0]])
    names = ["[x](http://evil)", "**bold** <b>b</b> $x$"]
    said, told = an.plain_words(psi, 0, names)
    assert ("[x](http://evil)", True) in said
    md = pieces_markdown(said) + pieces_markdown(told)
    assert "](http" not in md and "[x]" not in md and "<b>" not in md and "$x$" not in md
    assert "**\\[x\\]\\(http\\://evil\\)**" in md  # bold, every special char escaped
    assert "\\*\\*bold\\*\\*" in md and "\\$x\\$" in md
    assert md_escape("a  b\nc") == "a b c"
