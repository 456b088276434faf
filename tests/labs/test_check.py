"""The hint machinery (blowfish_nb/labs/_check.py) and the autograder's comparisons (blowfish_nb/labs/_grade.py)."""

import json
import math

import numpy as np
import pytest

from blowfish_nb.labs import _grade
from blowfish_nb.labs._check import NOT_RECOGNISED, Grader, canonical, digest, matches
from blowfish_nb.labs._key import Part, Question, Wrong, hint_table


def _table(expected, kind="number", rtol=1e-6, mistakes=(), choices=()):
    q = {"q": Question("q (t)", [Part("a", expected, otherwise="think again", kind=kind, rtol=rtol,
                                      mistakes=mistakes, choices=choices)])}
    return hint_table("labtest", q, {"q": ["a"]})["questions"]["q"]["parts"][0]


@pytest.mark.parametrize("answer, mistake, kind, rtol", [
    (2, 2.0, "number", 1e-6), (np.int64(9), 9, "number", 1e-6), (np.inf, np.inf, "number", 1e-6),
    (4.48, math.exp(1.5), "number", 1e-3), (4.4855, math.exp(1.5), "number", 1e-3), (0.0, -0.0, "number", 1e-6),
    (0.236, 0.2303, "number", 0.05), (" Line ", "line", "choice", 1e-6),
])
def test_a_known_mistake_meets_its_hash_within_its_tolerance(answer, mistake, kind, rtol):
    part = _table(1234.5 if kind == "number" else "grid", kind, rtol, mistakes=[Wrong(mistake, "that one")])
    assert matches(answer, part["mistakes"][0], kind, part["salt"])


@pytest.mark.parametrize("answer, mistake, kind, rtol", [
    (3, 2, "number", 1e-6), (4.5, math.exp(1.5), "number", 1e-3), (2.001, 2, "number", 1e-6),
    (0.26, 0.2303, "number", 0.05), (np.inf, 5, "number", 1e-6), ("dp", "line", "choice", 1e-6),
    ("2", 2, "number", 1e-6), (np.nan, 1, "number", 1e-6),
])
def test_another_answer_does_not(answer, mistake, kind, rtol):
    part = _table(1234.5 if kind == "number" else "grid", kind, rtol, mistakes=[Wrong(mistake, "that one")])
    assert not matches(answer, part["mistakes"][0], kind, part["salt"])


def test_the_table_holds_no_value_and_nothing_of_the_right_answer():
    part = _table(123.456, mistakes=[Wrong(77.5, "a typical slip")])
    text = json.dumps(part)
    assert "123" not in text and "77" not in text and "a typical slip" in text and "right" not in text
    assert part["mistakes"][0]["hashes"] == [digest(part["salt"], canonical(77.5, "number", 8))]
    assert digest(part["salt"], canonical(123.456, "number", 8)) not in text


@pytest.mark.parametrize("mistake", [246.912, 124.456, 61.728, 1 / 123.456, math.sqrt(123.456), 123.456])
def test_a_mistake_that_is_a_simple_transform_of_the_answer_is_dropped(mistake):
    part = _table(123.456, mistakes=[Wrong(mistake, "twice"), Wrong(77.5, "a typical slip")])
    assert [m["hint"] for m in part["mistakes"]] == ["a typical slip"]


def test_a_yes_no_question_recognises_no_mistake_and_a_choice_keeps_three_unrecognised():
    assert _table(True, "bool", mistakes=[Wrong(False, "think again")])["mistakes"] == []
    choices = ("a", "b", "c", "d", "e")
    part = _table("a", "choice", mistakes=[Wrong(c, f"not {c}") for c in "bcde"], choices=choices)
    assert [m["hint"] for m in part["mistakes"]] == ["not b", "not c"]  # a, d, e stay unrecognised


def test_an_unrecognised_answer_gets_no_verdict_and_a_type_gets_its_hint(tmp_path):
    g = Grader("lab02", attempts_dir=tmp_path)
    quiet = g.check("q1", {"delta_hist_dp": 12345})
    assert not quiet.hinted and quiet.message.endswith(NOT_RECOGNISED) and "correct" not in repr(quiet).lower()
    typed = g.check("q2", {"delta_hist_bounded": "1"})
    assert typed.hinted and "remove the quotes" in typed.message


def test_the_grader_shows_one_line_and_keeps_the_first_attempt(tmp_path):
    g = Grader("lab02", attempts_dir=tmp_path)
    env = {"delta_hist_dp": "7"}
    first = g.check("q1", env)
    assert first.hinted and "\n" not in first.message and "Traceback" not in repr(first)
    env["delta_hist_dp"] = 1
    second = g.check("q1", env)
    assert second.first_attempt == "'7'"
    assert json.loads((tmp_path / "lab02-first-attempts.json").read_text()) == {"q1": "'7'"}
    assert "first attempt" in repr(second) and "passed" not in repr(second)


def test_the_general_hint_is_shown_on_request_whatever_the_answer():
    hint = Grader("lab01").hint("q1")
    assert hint.startswith("q1 (") and "edges" in hint


def test_the_grader_reports_a_broken_student_function_in_one_line(tmp_path):
    def fixed_noise(rng):
        raise ZeroDivisionError("oops")

    result = Grader("lab05", attempts_dir=tmp_path).check("q2", {"fixed_noise": fixed_noise})
    assert result.hinted and "ZeroDivisionError: oops" in result.message and "\n" not in result.message


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
