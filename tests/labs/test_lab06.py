"""Lab 6's checks: the library's answer passes, each known mistake gets its own hint, no hint gives the value."""

import math

import pytest

from tests.labs import hint_of, known_mistake, lab_and_key, type_hint
from blowfish_nb.labs._check import NOT_RECOGNISED, LabCheckFailed

lab06 = lab_and_key("lab06")

PLACEHOLDER = "replace the `...`"


def _expected():
    """Every question's right answer, computed by the library (as the checks do)."""
    return {
        "q1": lab06.sequential_total(),
        "q2": lab06.spent_after_refusal(),
        "q3": lab06.laplace_quote(),
        "q4a": lab06.parallel_total("partition"),
        "q4b": lab06.parallel_total("line"),
        "q5": lab06.halving_ratio(),
    }


EXPECTED = _expected()
DELTA = lab06.histogram_sensitivity()


def _call(name, answer):
    """Run question ``name``'s check on ``answer`` (question 3 with the right Δ beside its ε)."""
    if name == "q3":
        return lab06.q3(answer, DELTA)
    return getattr(lab06, name)(answer)


def _hint(name, answer):
    """The one-line hint, or NOT_RECOGNISED when the check returns quietly."""
    try:
        _call(name, answer)
    except LabCheckFailed as failed:
        return str(failed)
    return NOT_RECOGNISED


def _no_value(message, value):
    """The message shows the expected value in none of the usual spellings."""
    spellings = {repr(value), f"{value:g}", f"{value:.2f}", f"{value:.3f}", f"{value:.4g}"}
    return not any(s in message.split("Hint:", 1)[-1] for s in spellings)


def test_the_library_answers_match_composition_and_the_quote():
    # the three values the lab teaches, from the session itself
    assert EXPECTED["q1"] == pytest.approx(math.fsum(lab06.RELEASES))  # sequential: the sum
    assert EXPECTED["q2"] == pytest.approx(math.fsum(lab06.RELEASES) + lab06.SMALLER)  # a refusal charges nothing
    assert EXPECTED["q4a"] == max(lab06.BLOCK_EPSILONS)  # parallel under the partition policy
    assert EXPECTED["q4b"] == pytest.approx(sum(lab06.BLOCK_EPSILONS))  # the line policy joins the groups


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_library_answer_passes(name):
    _call(name, EXPECTED[name])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_placeholder_asks_for_an_answer(name):
    assert PLACEHOLDER in _hint(name, ...)


def test_q3_the_lab_formula_passes_within_the_stated_tolerance():
    alpha, beta = lab06.ACCURACY
    k = lab06.session().attribute("age").size
    formula = 2 / alpha * math.log(1 / (1 - (1 - beta) ** (1 / k)))
    assert formula != pytest.approx(EXPECTED["q3"], rel=1e-6)  # the discrete quote differs from the formula …
    lab06.q3(formula, DELTA)  # … by less than the lab's tolerance
    lab06.q3(float(f"{formula:.3g}"), DELTA)  # rounded by hand to 3 significant digits
    lab06.q3(EXPECTED["q3"] * (1 + 0.9 * lab06.FORMULA_RTOL), DELTA)
    # no tolerance around the answer is installed: just outside it, the check still has no verdict (the hidden
    # test, with its literal and this tolerance, grades)
    assert lab06.q3(EXPECTED["q3"] * (1 + 1.5 * lab06.FORMULA_RTOL), DELTA) is None


def test_q3_delta_is_the_line_policy_sensitivity():
    d = lab06.session().attribute("age")
    assert DELTA == bf_line_delta(d.size)


def bf_line_delta(k):
    """Brute force: the largest L1 change of a k-bin histogram when one record moves to a neighbouring bin."""
    return max(sum(abs(a - b) for a, b in zip(_unit(k, u), _unit(k, u + 1))) for u in range(k - 1))


def _unit(k, i):
    return [1 if j == i else 0 for j in range(k)]


@pytest.mark.parametrize("delta, words", [(1, "plain DP"), ("two", "not text"), (4, "Δ is a number"),
                                          (..., PLACEHOLDER)])
def test_q3_judges_delta_even_with_the_right_epsilon(delta, words):
    # finding 5 of the review: a wrong Δ no longer passes beside the right ε
    message = hint_of(lambda: lab06.q3(EXPECTED["q3"], delta)) or NOT_RECOGNISED
    if message == NOT_RECOGNISED:  # a Δ the build dropped as answer-revealing (e.g. 1, Δ under DP: Δ/2)
        assert not known_mistake("lab06", "q3", delta)
        return
    assert words in message and "Δ" in message
    assert _no_value(message, DELTA)


def _formula(delta, k, alpha, beta):
    return delta / alpha * math.log(1 / (1 - (1 - beta) ** (1 / k)))


alpha, beta = lab06.ACCURACY
MISTAKES = [
    ("q1", max(lab06.RELEASES), "sequential composition"),
    ("q1", lab06.RELEASES[-1], "does not forget"),
    ("q1", sum(lab06.RELEASES) / 3, "does not average"),
    ("q1", lab06.BUDGET - sum(lab06.RELEASES), "what is left"),
    ("q2", sum(lab06.RELEASES), "closes the session"),
    ("q2", sum(lab06.RELEASES) + lab06.OVERSPEND, "*before*"),
    ("q2", lab06.BUDGET, "cannot pay"),
    ("q2", lab06.SMALLER, "last release alone"),
    ("q3", _formula(1, 31, alpha, beta), "plain DP"),
    ("q3", 2 * math.log(1 / beta) / alpha, "every"),
    ("q3", math.log(1 / beta) / alpha, "two things are missing"),
    ("q3", 1 / _formula(2, 31, alpha, beta), "upside down"),
    ("q4a", sum(lab06.BLOCK_EPSILONS), "parallel"),
    ("q4a", min(lab06.BLOCK_EPSILONS), "protected least"),
    ("q4b", max(lab06.BLOCK_EPSILONS), "across the boundary"),
    ("q4b", min(lab06.BLOCK_EPSILONS), "into the other"),
    ("q5", 4.0, "variance?"),
    ("q5", 0.5, "costs *more*"),
    ("q5", 1.0, "cannot cost the same"),
]


@pytest.mark.parametrize("name, answer, words", MISTAKES)
def test_each_known_mistake_gets_its_own_hint_without_the_value(name, answer, words):
    """A kept mistake gets its hint without the value; one the build dropped as answer-revealing gets none."""
    value = answer
    message = _hint(name, value)
    if not known_mistake("lab06", name, value) and not type_hint(message):
        assert message == NOT_RECOGNISED, message
        return
    assert words in message
    assert _no_value(message, EXPECTED[name])


@pytest.mark.parametrize("name, answer", [("q1", 0.9), ("q2", 0.0), ("q3", 3.0), ("q4a", 0.1), ("q4b", 2.0),
                                          ("q5", 7.0)])
def test_an_unexplained_answer_gets_no_verdict(name, answer):
    assert _hint(name, answer) == NOT_RECOGNISED  # no known mistake: the hidden tests grade it