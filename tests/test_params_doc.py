"""Each setting is written once: the numpydoc Parameters section, the declared constraints
and the __init__ defaults are checked against each other."""

import pytest

from kmviz import families
from kmviz._params import Param, docstring_mismatches, documented_parameters


class Toy:
    """A toy estimator.

    Parameters
    ----------
    k : int, default=4
        Rank.
    loss, penalty : {"a", "b"}, default="a", "b"
        Two settings in one entry.

    Attributes
    ----------
    k_ : int
    """

    _parameter_constraints = {"k": Param(int, low=1), "loss": Param(str, options=("a", "b")),
                              "penalty": Param(str, options=("a", "b"))}

    def __init__(self, k=4, loss="a", penalty="b"):
        self.k, self.loss, self.penalty = k, loss, penalty


def test_the_parser_reads_shared_entries_and_stops_at_the_next_section():
    doc = documented_parameters(Toy)
    assert set(doc) == {"k", "loss", "penalty"}
    assert doc["penalty"].endswith('default="b"') and docstring_mismatches(Toy) == []


def test_every_disagreement_is_named():
    class Wrong(Toy):
        __doc__ = Toy.__doc__.replace("default=4", "default=5").replace(
            '{"a", "b"}', '{"a", "c"}').replace("    k : int", "    kk : int")

        def __init__(self, k=4, loss="a", penalty="b"):
            super().__init__(k, loss, penalty)

    problems = "\n".join(docstring_mismatches(Wrong))
    assert "'k' is declared but not documented" in problems
    assert "'kk' is documented but not declared" in problems
    assert "'loss' is documented with options ['a', 'c'] but declares ['a', 'b']" in problems

    class WrongDefault(Toy):
        __doc__ = Toy.__doc__.replace("default=4", "default=5")

    assert docstring_mismatches(WrongDefault) == [
        "WrongDefault: 'k' is documented with default=5 but __init__ says 4"]


@pytest.mark.parametrize("family", families.all_families(), ids=lambda f: f.name)
def test_registered_estimators_document_exactly_their_declared_settings(family):
    assert docstring_mismatches(family.estimator_class()) == []
