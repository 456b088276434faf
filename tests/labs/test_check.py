"""The hint machinery (blowfish_nb/labs/_check.py) and the autograder's comparisons (blowfish_nb/labs/_grade.py)."""

import json
import math

import numpy as np
import pytest

from blowfish_nb.labs import _grade
from blowfish_nb.labs._check import Grader, canonical, digest, matches
from blowfish_nb.labs._key import Part, Question, Wrong, hint_table


def _table(expected, kind="number", rtol=1e-6, mistakes=(), choices=()):
    q = {"q": Question("q (t)", [Part("a", expected, otherwise="think again", kind=kind, rtol=rtol,
                                      mistakes=mistakes, choices=choices)])}
    return hint_table("labtest", q, {"q": ["a"]})["questions"]["q"]["parts"][0]


@pytest.mark.parametrize("answer, expected, kind, rtol", [
    (2, 2.0, "number", 1e-6), (np.int64(9), 9, "number", 1e-6), (np.inf, np.inf, "number", 1e-6),
    (4.48, math.exp(1.5), "number", 1e-3), (4.4855, math.exp(1.5), "number", 1e-3), (0.0, -0.0, "number", 1e-6),
    (0.236, 0.2303, "number", 0.05), (True, True, "bool", 1e-6), (" Line ", "line", "choice", 1e-6),
])
def test_a_right_answer_meets_the_hash_within_its_tolerance(answer, expected, kind, rtol):
    part = _table(expected, kind, rtol)
    assert matches(answer, part["right"], kind, part["salt"])


@pytest.mark.parametrize("answer, expected, kind, rtol", [
    (3, 2, "number", 1e-6), (4.5, math.exp(1.5), "number", 1e-3), (2.001, 2, "number", 1e-6),
    (0.26, 0.2303, "number", 0.05), (np.inf, 5, "number", 1e-6), (1, True, "bool", 1e-6), ("dp", "line", "choice", 1e-6),
    ("2", 2, "number", 1e-6), (np.nan, 1, "number", 1e-6),
])
def test_a_wrong_answer_does_not(answer, expected, kind, rtol):
    part = _table(expected, kind, rtol)
    assert not matches(answer, part["right"], kind, part["salt"])


def test_the_table_holds_no_value_only_salted_hashes():
    part = _table(123.456, mistakes=[Wrong(246.912, "twice")])
    text = json.dumps(part)
    assert "123" not in text and "246" not in text and "twice" in text
    assert part["right"]["hashes"] == [digest(part["salt"], canonical(123.456, "number", 8))]


def test_the_grader_shows_one_line_and_keeps_the_first_attempt(tmp_path):
    g = Grader("lab02", attempts_dir=tmp_path)
    env = {"delta_hist_dp": 7}
    first = g.check("q1", env)
    assert not first.passed and "\n" not in first.message and "Traceback" not in repr(first)
    env["delta_hist_dp"] = 1
    second = g.check("q1", env)
    assert second.passed and second.first_attempt == "7"
    assert json.loads((tmp_path / "lab02-first-attempts.json").read_text()) == {"q1": "7"}
    assert "first attempt" in repr(second) and "All test cases passed" in repr(second)


def test_the_grader_reports_a_broken_student_function_in_one_line(tmp_path):
    def fixed_draw(x, size, rng):
        raise ZeroDivisionError("oops")

    result = Grader("lab05", attempts_dir=tmp_path).check("q2", {"fixed_draw": fixed_draw})
    assert not result.passed and "ZeroDivisionError: oops" in result.message and "\n" not in result.message


def test_a_question_checked_with_the_placeholder_records_nothing(tmp_path):
    result = Grader("lab02", attempts_dir=tmp_path).check("q1", {"delta_hist_dp": ...})
    assert "replace the `...`" in result.message and not list(tmp_path.iterdir())


class _AlwaysEqual(float):
    def __eq__(self, other):
        return True

    __hash__ = float.__hash__


@pytest.mark.parametrize("cheat", [_AlwaysEqual(0.0), "2", [2], True, None, ...])
def test_the_autograder_refuses_anything_but_a_plain_number(cheat):
    with pytest.raises(AssertionError):
        _grade.expect_number(cheat, 2.0)


def test_the_autograder_comparisons():
    _grade.expect_number(np.float32(0.5), 0.5)
    _grade.expect_number(float("inf"), float("inf"))
    _grade.expect_choice(" Threshold", "threshold")
    _grade.expect_bool(np.bool_(False), False)
    _grade.expect_pair((5, 4), [(4, 5)])
    for call in (lambda: _grade.expect_bool(0, False), lambda: _grade.expect_choice(["line"], "line"),
                 lambda: _grade.expect_pair((3, 4), [(4, 5)]), lambda: _grade.expect_number(2.1, 2.0)):
        with pytest.raises(AssertionError):
            call()


def test_expect_mean_is_a_monte_carlo_comparison():
    rng = np.random.default_rng(0)
    _grade.expect_mean(list(rng.exponential(10.0, 1000)), 10.0)
    with pytest.raises(AssertionError):
        _grade.expect_mean(list(rng.exponential(12.0, 1000)), 10.0)
    with pytest.raises(AssertionError):
        _grade.expect_mean([10.0] * 50, 10.0)
