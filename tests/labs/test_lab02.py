"""Lab 2's checks: the sensitivity from the definition passes, each typical mistake gets its own hint, no hint
gives the value away, the placeholder asks for an answer. Right answers come from tests/brute.py (every edge of
the policy written from its definition, ‖W(e_u − e_v)‖₁ on dense matrices), not from the library."""

from __future__ import annotations

import numpy as np
import pytest

from tests.labs import lab_and_key
from blowfish_nb.labs._check import LabCheckFailed
from tests.brute import brute_edges, brute_sensitivity_edges
from tests.labs import assert_each_mistake_has_its_own_hint, value_shown

lab02 = lab_and_key("lab02")

DOMAIN = lab02.salary_domain()
K = DOMAIN.size
SPECS = {
    "dp": (("dp", {}), True), "bounded": (("bounded", {}), False), "line": (("threshold", {"theta": 1}), False),
    "threshold": (("threshold", {"theta": lab02.THETA}), False),
    "partition": (("partition", {"blocks": [list(b) for b in lab02.PARTITION_BLOCKS]}), False),
}
RANGES = np.array([[1.0 if lo <= c <= hi else 0.0 for c in range(K)] for lo, hi in lab02.RANGES])
MATRICES = {"histogram": np.eye(K), "cumulative": np.tril(np.ones((K, K))), "ranges": RANGES}


def delta(query: str, policy: str) -> float:
    spec, bottom = SPECS[policy]
    return brute_sensitivity_edges(MATRICES[query], brute_edges(spec, DOMAIN, bottom))


D = delta
#: question -> (check, Δ from the definition, [(typical wrong answer, words of its hint)])
CASES = {
    "q1": (lab02.q1, D("histogram", "dp"), [(2, "adds or removes")]),
    "q2": (lab02.q2, D("histogram", "bounded"), [(1, "a move is not one change")]),
    "q3": (lab02.q3, D("histogram", "line"), [(1, "a short move is still a move")]),
    "q4": (lab02.q4, D("cumulative", "dp"), [(K - 1, "which end counts"), (1, "that is the histogram's")]),
    "q5": (lab02.q5, D("cumulative", "bounded"), [(K, "keeps the number of records"), (2 * (K - 1), "at most one"),
                                                  (2, "that is the histogram's")]),
    "q6": (lab02.q6, D("cumulative", "line"), [(2, "that is the histogram's"), (K - 1, "that is bounded DP's")]),
    "q7": (lab02.q7, D("cumulative", "threshold"), [(1, "that is the line policy's"), (lab02.THETA + 1, "which end counts"),
                                                    (K - 1, "that is bounded DP's")]),
    "q8": (lab02.q8, D("ranges", "dp"), [(1, "more than one of the ranges"), (3, "all the ranges at once")]),
    "q9": (lab02.q9, D("ranges", "bounded"), [(2, "do not cancel"), (4, "no move can leave two ranges")]),
    "q10": (lab02.q10, D("cumulative", "partition"), [(K - 1, "inside its block"), (4, "which end counts"),
                                                      (1, "not only adjacent ones")]),
}


def test_the_questions_have_distinct_mistakes():
    for question, (_, expected, mistakes) in CASES.items():
        values = [w for w, _ in mistakes]
        assert expected not in values and len(set(values)) == len(values), question


@pytest.mark.parametrize("question", CASES)
def test_the_right_answer_passes(question):
    check, expected, _ = CASES[question]
    check(expected)
    check(int(expected))  # an int is as good as the float the library computes


@pytest.mark.parametrize("question", CASES)
def test_each_typical_mistake_gets_its_own_hint(question):
    assert_each_mistake_has_its_own_hint(question, *CASES[question])


@pytest.mark.parametrize("question", CASES)
def test_an_unforeseen_wrong_answer_gets_no_verdict(question):
    check, expected, mistakes = CASES[question]
    assert check(17) is None  # no known mistake: quiet, the hidden tests grade it


@pytest.mark.parametrize("question", CASES)
def test_the_placeholder_asks_for_an_answer(question):
    check, _, _ = CASES[question]
    with pytest.raises(LabCheckFailed, match=r"replace the `\.\.\.`"):
        check(...)


def test_the_summary_table_agrees_with_the_definitions():
    for query in MATRICES:
        for policy in SPECS:
            assert lab02.sensitivity(query, policy) == pytest.approx(delta(query, policy)), (query, policy)
