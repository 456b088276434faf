"""Lab 4's checks: the library's answer passes, each known mistake gets its own hint, no hint gives the value."""

import math
import re

import pytest

from blowfish_nb import policy
from tests.labs import known_mistake, lab_and_key, type_hint
from blowfish_nb.labs._check import NOT_RECOGNISED, LabCheckFailed
from blowfish_nb.mechanisms import HThetaRanges
from blowfish_nb.workload import all_ranges, matrix

lab04 = lab_and_key("lab04")

PLACEHOLDER = "replace the `...`"
G = lab04.policy()
TREES = lab04.trees()
X = matrix(lab04.edge_counts_matrix(TREES["htheta"]))

PAPER = HThetaRanges(budget="stretch").sensitivity(G)
RATIO = (HThetaRanges().sensitivity(G) / PAPER) ** 2
EXPECTED = {
    "q1": len(TREES["htheta"].edges()),
    "q2": policy.stretch(G, TREES["htheta"]),
    "q2b": policy.stretch(G, lab04.comb_tree()),
    "q3": G.sensitivity(X) / lab04.EPSILON,
    "q4a": "htheta",
    "q4b": 4,
    "q5": HThetaRanges().sensitivity(G),
}
MISTAKES = {
    "q1": [len(G.edges()), lab04.K],
    "q2": [1, lab04.THETA, 2],
    "q2b": [policy.stretch(G, TREES["htheta"]), 1, 2],
    "q3": [TREES["htheta"].sensitivity(X) / lab04.EPSILON, G.sensitivity(X) * lab04.EPSILON],
    "q4a": ["a star", "path", "bfs"],
    "q4b": [EXPECTED["q4b"] - 1, 1],
    "q5": [PAPER, PAPER * RATIO, PAPER / RATIO, PAPER / math.sqrt(RATIO)],
}
# a wrong answer no mistake explains
WRONG = {"q4a": "Path ", "q1": 99, "q2": 7, "q2b": 9, "q3": 0.3, "q4b": 9, "q5": 100}


def _hint(name, answer):
    """The one-line hint, or NOT_RECOGNISED when the check returns quietly."""
    try:
        getattr(lab04, name)(answer)
    except LabCheckFailed as failed:
        return str(failed)
    return NOT_RECOGNISED


def _gives_away(message, value):
    hint = message.split("Hint:", 1)[-1]
    if isinstance(value, str):  # naming every option is fine; singling out the answer is not
        return value in hint and not all(t in hint for t in lab04.TREES)
    numbers = [float(n) for n in re.findall(r"\d+(?:\.\d+)?", hint)]
    return any(math.isclose(n, value, rel_tol=1e-6) for n in numbers)


def test_the_library_values_are_what_the_lab_teaches():
    assert EXPECTED["q1"] == lab04.K - 1  # a tree on k vertices
    assert EXPECTED["q2"] == 3  # H^θ's stretch (Haney et al. §5.3.1)
    assert G.sensitivity(X) == EXPECTED["q2"] and TREES["htheta"].sensitivity(X) == 1  # stretch multiplies Δ
    assert EXPECTED["q5"] <= HThetaRanges(budget="stretch").sensitivity(G)


def test_the_comb_is_a_spanning_tree_of_the_policy_no_better_than_the_path():
    comb = lab04.comb_tree()
    assert comb.is_tree() and len(comb.edges()) == lab04.K - 1
    assert all(G.distance(u, v) == 1 for u, v in comb.edges().tolist())  # its edges are edges of G^θ
    assert EXPECTED["q2b"] == policy.stretch(G, TREES["path"]) > EXPECTED["q2"]  # denser red cells do not help


def test_q5_is_read_off_the_error_table_to_three_digits():
    ranges = all_ranges(lab04.K)
    paper = round(HThetaRanges(budget="stretch").expected_error(ranges, G, 0.5), 1)
    exact = round(HThetaRanges().expected_error(ranges, G, 0.5), 1)
    lab04.q5(float(f"{PAPER * math.sqrt(exact / paper):.3g}"))


def test_q4b_is_where_the_path_stops_winning():
    path = [policy.stretch(lab04.policy(t), lab04.trees(t)["path"]) for t in range(1, 6)]
    htheta = [policy.stretch(lab04.policy(t), lab04.trees(t)["htheta"]) for t in range(1, 6)]
    first = next(t for t, (p, h) in enumerate(zip(path, htheta), start=1) if h < p)
    assert first == EXPECTED["q4b"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_library_answer_passes(name):
    getattr(lab04, name)(EXPECTED[name])


def test_a_tree_name_is_read_without_case_or_spaces():
    lab04.q4a(" HTheta ")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_placeholder_asks_for_an_answer(name):
    assert PLACEHOLDER in _hint(name, ...)


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_each_mistake_gets_its_own_hint_without_the_value(name):
    """A kept mistake gets its own hint without the value; a listed mistake the build dropped as answer-revealing,
    and any unforeseen answer, get no hint at all (the check returns quietly)."""
    hints = []
    for wrong in MISTAKES[name]:
        h = _hint(name, wrong)
        if not known_mistake("lab04", name, wrong):
            assert h == NOT_RECOGNISED or type_hint(h), h
            continue
        assert "not yet. Hint:" in h and not _gives_away(h, EXPECTED[name]), h
        hints.append(h)
    assert len(set(hints)) == len(hints), hints
    other = _hint(name, WRONG[name])
    assert other == NOT_RECOGNISED or ("one of" in other and not _gives_away(other, EXPECTED[name])), other