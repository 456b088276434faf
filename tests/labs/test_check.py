"""judge(): the one comparison every lab question makes."""

import numpy as np
import pytest

from blowfish_nb.labs._check import LabCheckFailed, Mistake, judge


@pytest.mark.parametrize("answer, expected", [
    (2, 2.0), ([1, 2], np.array([1.0, 2.0])), (np.inf, np.inf), ([1, np.inf], [1.0, np.inf]),
    (True, True), (" Line ", "line"),
])
def test_right_answers_pass(answer, expected):
    judge(answer, expected, question="q", otherwise="h")


@pytest.mark.parametrize("answer, expected", [
    (3, 2), ([1, 2], [1, 2, 3]), (np.inf, 5), (5, np.inf), (-np.inf, np.inf), (np.nan, np.nan),
    (1, True), ("true", True), ("dp", "line"), (object(), 1),
])
def test_wrong_answers_fail_with_the_general_hint(answer, expected):
    with pytest.raises(LabCheckFailed, match="q: not yet. Hint: think again"):
        judge(answer, expected, question="q", otherwise="think again")


def test_a_known_mistake_gets_its_own_hint_and_never_the_value():
    mistakes = [Mistake(4, "that is Δ under plain DP"), Mistake(lambda a: a < 0, "Δ is never negative")]
    with pytest.raises(LabCheckFailed) as e:
        judge(4, 7, question="q2", mistakes=mistakes, otherwise="other")
    assert "plain DP" in str(e.value) and "7" not in str(e.value)
    with pytest.raises(LabCheckFailed, match="never negative"):
        judge(-1, 7, question="q2", mistakes=mistakes, otherwise="other")


@pytest.mark.parametrize("placeholder", [..., None])
def test_the_placeholder_asks_for_an_answer(placeholder):
    with pytest.raises(LabCheckFailed, match=r"replace the `\.\.\.`"):
        judge(placeholder, 1, question="q", otherwise="h")
