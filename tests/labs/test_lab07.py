"""Lab 7's checks: the library's answer passes, each known mistake gets its own hint, no hint gives the value."""

import re

import numpy as np
import pytest

from tests.labs import known_mistake, lab_and_key, type_hint
from blowfish_nb.labs._check import NOT_RECOGNISED, LabCheckFailed

lab07 = lab_and_key("lab07")

PLACEHOLDER = "replace the `...`"

FEW = lab07.salary_histogram(lab07.data().head(lab07.FEW))
ALL = lab07.salary_histogram(lab07.data())
EXPECTED = {
    "q1": lab07.winner(FEW),
    "q2": lab07.winner(ALL),
    "q2b": lab07.crossover_size(),
    "q3": lab07.count_sensitivity(),
    "q4": lab07.boxes_sensitivity(),
    "q5": lab07.error_ratio(),
}


def _hint(name, answer):
    """The one-line hint, or NOT_RECOGNISED when the check returns quietly."""
    try:
        getattr(lab07, name)(answer)
    except LabCheckFailed as failed:
        return str(failed)
    return NOT_RECOGNISED


def _no_value(message, value):
    """The hint shows the expected value in none of the usual spellings (a name for the choice questions)."""
    hint = message.split("Hint:", 1)[-1].replace(str([int(n) for n in lab07.SIZES]), "")  # q2b's list of choices
    if isinstance(value, str):
        return f"'{value}'" not in hint.replace(", ".join(repr(c) for c in lab07.CONTENDERS), "")
    spellings = {repr(value), f"{value:g}", f"{value:.2f}", f"{value:.3f}"}
    return not any(re.search(rf"(?<![\d.]){re.escape(s)}(?![\d.])", hint) for s in spellings)


@pytest.mark.parametrize("x, winner", [(FEW, "dawa"), (ALL, "transformed")])
def test_the_winner_wins_by_many_standard_errors(x, winner):
    """The lab's claim, stated with its tolerance: the gap is at least 5 standard errors of the difference."""
    # twice the lab's trials: DAWA's histogram partition improved (issue 25), and on the full data the gap
    # (3.6 per bin) is 4.7 standard errors at the lab's 10 trials, 8.6 at 20
    (m_win, se_win), (m_lose, se_lose) = (lab07.mean_error(x, name, trials=2 * lab07.TRIALS) for name in
                                          (winner, *(c for c in lab07.CONTENDERS if c != winner)))
    assert m_lose - m_win > 5 * np.hypot(se_win, se_lose)


def test_the_data_independent_error_does_not_depend_on_the_data():
    assert lab07.mean_error(FEW, "transformed") == lab07.mean_error(ALL, "transformed")  # same seed, same noise


def test_the_crossover_is_outside_the_monte_carlo_noise():
    """Question 2b's answer is no coin toss: at the crossover the data-independent mechanism is ahead, and at the
    size before it behind, each by more than 2 standard errors of the difference; DAWA wins at the smallest size and
    loses at the largest (questions 1 and 2)."""
    table = lab07.size_table()
    dawa, transformed = lab07.CONTENDERS
    gap = (table[dawa] - table[transformed]) / np.hypot(table[f"{dawa} se"], table[f"{transformed} se"])
    sizes = list(table.index)
    i = sizes.index(EXPECTED["q2b"])
    assert 0 < i < len(sizes)
    assert gap.iloc[i] > 2 and gap.iloc[i - 1] < -2
    assert (gap.iloc[:i] < 0).all()  # DAWA ahead at every smaller size (not a lucky first crossing)
    assert gap.iloc[0] < 0 and gap.iloc[-1] > 0


def test_q2b_reads_a_whole_number_written_as_a_float_or_numpy_int():
    lab07.q2b(float(EXPECTED["q2b"]))
    lab07.q2b(np.int64(EXPECTED["q2b"]))


def _before_crossover():
    return lab07.SIZES[lab07.SIZES.index(EXPECTED["q2b"]) - 1]


def test_public_counts_raise_the_sensitivity_and_the_paper_understates_two_boxes():
    plain = 2.0  # the histogram under the line policy (lab 2)
    assert EXPECTED["q3"] > plain
    assert EXPECTED["q4"] > lab07.boxes_sensitivity("edges")
    assert EXPECTED["q5"] == pytest.approx((EXPECTED["q3"] / plain) ** 2, rel=lab07.RATIO_RTOL)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_library_answer_passes(name):
    getattr(lab07, name)(EXPECTED[name])


def test_names_are_read_without_case_or_spaces():
    lab07.q1(f"  {EXPECTED['q1'].upper()} ")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_placeholder_asks_for_an_answer(name):
    assert PLACEHOLDER in _hint(name, ...)


def _other(name):
    return next(c for c in lab07.CONTENDERS if c != EXPECTED[name])


MISTAKES = [
    ("q1", lambda: _other("q1"), "on these 300 people"),
    ("q1", lambda: "laplace", "answer with one of"),
    ("q2", lambda: _other("q2"), "on all 5,000 people"),
    ("q2", lambda: 3, "answer with one of"),
    ("q2b", _before_crossover, "still the smaller one"),
    ("q2b", lambda: lab07.SIZES[-1], "the first size where"),
    ("q2b", lambda: 1234, "answer with one of the sizes"),
    ("q2b", lambda: "many", "not text"),
    ("q3", lambda: 2, "without the public count"),
    ("q3", lambda: 1, "forces to change"),
    ("q3", lambda: 3, "count the changed cells"),
    ("q4", lambda: lab07.boxes_sensitivity("edges"), "Thm 8.6"),
    ("q4", lambda: 2, "without the public counts"),
    ("q5", lambda: EXPECTED["q3"] / 2, "the square of the scale"),
    ("q5", lambda: 2 / EXPECTED["q3"], "larger or smaller"),
    ("q5", lambda: 1.0, "changes Δ"),
]


@pytest.mark.parametrize("name, answer, words", MISTAKES)
def test_each_known_mistake_gets_its_own_hint_without_the_value(name, answer, words):
    """A kept mistake gets its hint without the value; one the build dropped as answer-revealing gets none."""
    value = answer()
    message = _hint(name, value)
    if not known_mistake("lab07", name, value) and not type_hint(message):
        assert message == NOT_RECOGNISED, message
        return
    assert words in message
    assert _no_value(message, EXPECTED[name])


@pytest.mark.parametrize("name, answer", [("q3", 10), ("q4", 12), ("q5", 9.0)])
def test_an_unexplained_answer_gets_no_verdict(name, answer):
    assert _hint(name, answer) == NOT_RECOGNISED  # no known mistake: the hidden tests grade it


def test_the_sensitivities_the_lab_teaches_match_enumerating_databases():
    """Questions 3 and 4 against every database of 3 people on the 6 bins (He et al. Def. 4.1, tests/brute)."""
    from blowfish_nb import constraints, policy
    from tests.brute_constraints import brute_histogram_sensitivity

    d = lab07.age_domain()
    count = constraints.count(d, list(lab07.KNOWN), "under 50")
    boxes = constraints.rectangles(d, [list(b) for b in lab07.BOXES])
    assert brute_histogram_sensitivity(policy.line(d), count, 3) == EXPECTED["q3"]
    assert brute_histogram_sensitivity(policy.line(d), boxes, 3) == EXPECTED["q4"]
