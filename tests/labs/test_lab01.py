"""Lab 1's checks: the answer from the definitions passes, each typical mistake gets its own hint, no hint gives
the value away, the placeholder asks for an answer. Right answers come from tests/brute.py (edges written from
the policy definitions, distances by networkx), not from the library the checks call."""

from __future__ import annotations

import math

import networkx as nx
import pytest

from tests.labs import lab_and_key
from blowfish_nb.labs._check import LabCheckFailed
from tests.brute import brute_edges, brute_graph
from tests.labs import assert_each_mistake_has_its_own_hint, value_shown

lab01 = lab_and_key("lab01")

DOMAIN = lab01.salary_domain()
BLOCKS = [list(b) for b in lab01.PARTITION_BLOCKS]


def _d(spec, u, v, *, domain=DOMAIN, bottom=False, extra=()):
    g = brute_graph(brute_edges(spec, domain, bottom) | set(extra), domain.size, bottom)
    try:
        return nx.shortest_path_length(g, u, v)
    except nx.NetworkXNoPath:
        return math.inf


def _attr_d():
    dom = lab01.salary_department_domain()
    a, b = dom.index((1, 0)), dom.index((4, 2))  # engineering, research
    return _d(("attribute", {}), a, b, domain=dom)


def _which_policy():
    k = DOMAIN.size
    specs = {
        "dp": (("dp", {}), True), "bounded": (("bounded", {}), False), "line": (("threshold", {"theta": 1}), False),
        "threshold": (("threshold", {"theta": 2}), False), "partition": (("partition", {"blocks": BLOCKS}), False),
    }
    fits = [name for name, (spec, bottom) in specs.items() if not bottom
            and all(_d(spec, i, j) == 1 for i in range(k) for j in range(i + 1, min(i + 2, k - 1) + 1))
            and _d(spec, 0, k - 1) > 1]
    assert len(fits) == 1, fits  # the scenario has one answer
    return fits[0]


D_LINE = _d(("threshold", {"theta": 1}), 1, 4)
#: question -> (check, right answer from the definitions, [(typical wrong answer, words of its hint)])
CASES = {
    "q1": (lab01.q1, D_LINE, [(D_LINE + 1, "ends included"), (1, "neighbouring bin")]),
    "q2": (lab01.q2, _d(("dp", {}), 1, 4, bottom=True), [(1, "bounded DP"), (D_LINE, "line policy's answer")]),
    "q3": (lab01.q3, _d(("threshold", {"theta": 2}), 1, 8), [(7, "distance under the line policy"),
                                                              (3, "does your last jump land"),
                                                              (1, "make these bins neighbours")]),
    "q4": (lab01.q4, math.isfinite(_d(("partition", {"blocks": BLOCKS}), 1, 6)), [(True, "path of edges")]),
    "q5": (lab01.q5, math.exp(lab01.EPSILON * D_LINE), [
        (math.exp(lab01.EPSILON), "neighbouring values"), (lab01.EPSILON * D_LINE, "e raised to it"),
        (math.exp(lab01.EPSILON * _d(("dp", {}), 1, 4, bottom=True)), "unbounded DP")]),
    "q6": (lab01.q6, _attr_d(), [(1, "one attribute only"), (D_LINE, "bin by bin")]),
    "q7": (lab01.q7, _which_policy(), [("dp", "vanish"), ("bounded", "lowest and highest"),
                                        ("line", "two edges apart"), ("partition", "boundary between the blocks")]),
    "q8": (lab01.q8, _d(("threshold", {"theta": 1}), 1, 8, extra={(1, 6)}), [
        (7, "before the edit"), (1, "steps after the shortcut")]),
}


@pytest.mark.parametrize("question", CASES)
def test_the_right_answer_passes(question):
    check, expected, _ = CASES[question]
    check(expected)


@pytest.mark.parametrize("question", CASES)
def test_each_typical_mistake_gets_its_own_hint(question):
    assert_each_mistake_has_its_own_hint(question, *CASES[question])


@pytest.mark.parametrize("question", CASES)
def test_an_unforeseen_wrong_answer_gets_no_verdict(question):
    check, expected, mistakes = CASES[question]
    if isinstance(expected, bool):
        assert check(not expected) is None  # a yes/no question recognises no mistake: the other value is the answer
        return
    if isinstance(expected, str):  # a name not among the choices gets the list of choices (no answer needed)
        with pytest.raises(LabCheckFailed, match="one of"):
            check("no such policy")
        return
    assert check(17.25) is None


@pytest.mark.parametrize("question", CASES)
def test_the_placeholder_asks_for_an_answer(question):
    check, _, _ = CASES[question]
    with pytest.raises(LabCheckFailed, match=r"replace the `\.\.\.`"):
        check(...)


def test_the_choice_ignores_case_and_spaces():
    lab01.q7(f"  {_which_policy().upper()} ")


@pytest.mark.parametrize("digits", [3, 4, 5])
def test_the_guarantee_rounded_by_hand_passes(digits):
    bound = math.exp(lab01.EPSILON * D_LINE)
    lab01.q5(float(f"{bound:.{digits}g}"))


def test_the_guarantee_rounded_to_two_digits_gets_no_verdict():
    bound = math.exp(lab01.EPSILON * D_LINE)
    assert lab01.q5(float(f"{bound:.2g}")) is None  # no right-answer hash, no tolerance: the hidden test grades
