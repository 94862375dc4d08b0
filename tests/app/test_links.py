"""Links that restore a view (kmviz.ui.links): round trips, bad parameters, kept uploads."""

import numpy as np
import pytest

from kmviz import families
from kmviz._params import Param
from kmviz.ui import links
from kmviz.ui.links import Context, Link, link_query, parse_link


def _context(**extra):
    datasets = {"planted-km": links.generator_params(
        {"n_users": 200, "D": 8, "noise": 0.05, "scale": "unit", "max_support": None},
        bounds={"n_users": (2, 100_000), "D": (1, 16), "noise": (0.0, 1.0),
                "max_support": (0, 16)},
        choices={"scale": {"unit": "unit", "stars": "stars"}}),
        "movielens-small": {}}
    fams = {name: families.get(name).constraints() for name in families.names()}
    return Context(pages=("", "train", "km_dual", "km_implications"), datasets=datasets,
                   families=fams, default_family="km", **extra)


def _round_trip(link):
    query = link_query(link)
    # what a browser sends back: every value is a string
    assert all(isinstance(v, str) for v in query.values())
    back, notices = parse_link(link.page, query, _context())
    return back, notices


def test_round_trip_keeps_every_part_of_the_view():
    link = Link(page="train", dataset="planted-km", data_options={"D": 5, "noise": 0.1,
                                                                  "scale": "stars"},
                split={"seed": 3, "by": "user"}, family="km",
                settings={"D": 5, "lambda_theta": 1e-4, "evd": "lanczos"},
                run="20261201-101010-ab12cd34", item="Toy Story (1995)", lesson=True,
                present=True, step=2)
    back, notices = _round_trip(link)
    assert notices == []
    assert back == link
    assert link.path().startswith("/train?dataset=planted-km&data.D=5")


def test_values_are_written_readably_and_read_back_exactly():
    assert links.value_text(1e-4) == "0.0001"
    assert links.value_text(1e-5) == "1e-05"
    assert links.value_text(100.0) == "100"
    assert links.value_text(True) == "true" and links.value_text(None) == "none"
    rng = np.random.default_rng(0)
    for x in rng.lognormal(0, 8, size=200):
        assert float(links.value_text(float(x))) == float(x)


def test_only_settings_off_the_defaults_are_written():
    defaults = families.get("km").default_params()
    params = {**defaults, "D": defaults["D"] + 1}
    assert links.changed(params, defaults) == {"D": defaults["D"] + 1}
    # 1 and 1.0 are the same setting; True is not 1
    assert links.changed({"a": 1.0, "b": True}, {"a": 1, "b": 1}) == {"b": True}


@pytest.mark.parametrize("query, named", [
    ({"family": "nope"}, "family='nope'"),
    ({"dataset": "no-such-set"}, "dataset='no-such-set'"),
    ({"dataset": "../../etc/passwd"}, "dataset='../../etc/passwd'"),
    ({"dataset": "upload:../x"}, "dataset='upload:../x'"),
    ({"family": "km", "D": "100000"}, "D='100000'"),   # above the form's bound
    ({"family": "km", "D": "0"}, "D='0'"),
    ({"family": "km", "D": "2.5"}, "D='2.5'"),
    ({"family": "km", "D": "eight"}, "D='eight'"),
    ({"family": "km", "evd": "magic"}, "evd='magic'"),
    ({"family": "km", "bogus": "1"}, "bogus='1'"),
    ({"dataset": "planted-km", "data.D": "99"}, "data.D='99'"),
    ({"dataset": "planted-km", "data.colour": "red"}, "data.colour='red'"),
    ({"split.by": "sideways"}, "split.by='sideways'"),
    ({"split.seed": "-1"}, "split.seed='-1'"),
    ({"run": "<script>"}, "run='<script>'"),
    ({"lesson": "maybe"}, "lesson='maybe'"),
    ({"step": "0"}, "step='0'"),
])
def test_a_bad_parameter_is_ignored_with_a_notice_naming_it(query, named):
    link, notices = parse_link("train", {"family": "km", **query}, _context())
    assert len(notices) == 1 and notices[0].startswith(named), notices
    # the rest of the link still holds
    assert link.page == "train"
    if "family" not in query or query["family"] == "km":
        assert link.family == "km"
    assert link.settings == {}


def test_the_good_parts_of_a_link_survive_its_bad_parts():
    link, notices = parse_link("km_dual", {"family": "km", "D": "5", "gamma": "oops",
                                           "dataset": "planted-km", "data.D": "4",
                                           "item": "#3"}, _context())
    assert link.settings == {"D": 5} and link.data_options == {"D": 4}
    assert link.item == "#3" and len(notices) == 1 and "gamma" in notices[0]


def test_an_unknown_page_falls_back_to_home():
    link, notices = parse_link("nowhere", {}, _context())
    assert link.page == "" and "nowhere" in notices[0]


def test_values_of_optional_settings_and_generators():
    link, notices = parse_link("train", {"dataset": "planted-km", "data.max_support": "none",
                                         "split.val_size": "0.6", "split.test_size": "0.5"},
                               _context())
    assert link.data_options == {"max_support": None}
    assert link.split == {} and "split.val_size" in notices[0]


def test_item_names_and_indices():
    labels = ["Alien", "Heat", "Heat", "#7 odd"]
    assert links.item_text(0, labels) == "Alien"
    assert links.item_text(1, labels) == "#1"      # the name is shared
    assert links.item_text(3, labels) == "#3"      # a label that looks like an index
    for i in range(len(labels)):
        assert links.resolve_item(links.item_text(i, labels), labels) == i
    assert links.resolve_item("Nope", labels) is None
    assert links.resolve_item("#9", labels) is None


def test_generator_declarations_follow_the_defaults():
    specs = links.generator_params({"n": 3, "x": 0.5, "flag": True, "log": None},
                                   bounds={"n": (1, 10)},
                                   choices={"log": {None: "auto", True: "log", False: "raw"}})
    assert specs["n"] == Param(int, low=1, high=10)
    assert specs["x"].kind is float and specs["flag"].kind is bool
    assert specs["log"].parse("g", "log", "none") is None
    assert specs["log"].parse("g", "log", "true") is True


class _Data:
    def __init__(self, n):
        self.n = n


def test_kept_uploads_are_bounded_in_count_and_bytes():
    kept = links.KeptDatasets(max_count=2, max_bytes=100, secret=b"s")
    a = kept.keep(_Data(1), {"kind": "upload"}, fingerprint="a", n_bytes=10)
    b = kept.keep(_Data(2), {"kind": "upload"}, fingerprint="b", n_bytes=10)
    assert kept.get(a)[0].n == 1  # a is now the most recent
    c = kept.keep(_Data(3), {"kind": "upload"}, fingerprint="c", n_bytes=10)
    assert kept.get(b) is None and kept.get(a) is not None and kept.get(c) is not None
    big = kept.keep(_Data(4), {}, fingerprint="d", n_bytes=95)  # pushes the others out
    assert len(kept) == 1 and kept.get(big)[0].n == 4
    assert kept.keep(_Data(5), {}, fingerprint="e", n_bytes=101) is None
    # tokens are the link's format, differ per data and per server secret
    assert links._TOKEN.match(a) and a != b
    assert links.KeptDatasets(secret=b"t").token("a") != a
    assert kept.get("../../etc/passwd") is None


def test_a_lesson_named_in_the_link_and_the_switch_left_unsaid():
    context = _context(lessons=("km", "kmc"))
    link, notices = parse_link("train", {"lesson": "km", "step": "3"}, context)
    assert notices == [] and link.lesson is True and link.lesson_name == "km" and link.step == 3
    assert link_query(link) == {"lesson": "km", "step": "3"}
    plain, _ = parse_link("train", {"family": "km"}, context)
    assert plain.lesson is None  # a link that does not say leaves the session's switch alone
    off, _ = parse_link("train", {"lesson": "0"}, context)
    assert off.lesson is False and "lesson" not in link_query(off)
    bad, notices = parse_link("train", {"lesson": "chemistry"}, context)
    assert bad.lesson is None and notices[0].startswith("lesson='chemistry' was ignored")
