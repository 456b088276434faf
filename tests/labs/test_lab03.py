"""Lab 3's checks: the library's answer passes, each known mistake gets its own hint, no hint gives the value."""

import math
import re

import numpy as np
import pytest

from blowfish_nb import Domain, datasets, policy
from tests.labs import known_mistake, lab_and_key, type_hint
from blowfish_nb.labs._check import NOT_RECOGNISED, LabCheckFailed
from blowfish_nb.mechanisms import Laplace, Ordered

lab03 = lab_and_key("lab03")

PLACEHOLDER = "replace the `...`"
LINE = policy.line(Domain.grid(lab03.K))
DP = policy.dp(Domain.grid(lab03.K))
R = lab03.range_query()

EXPECTED = {
    "q1": Ordered().sensitivity(LINE),
    "q2": Ordered().expected_error(R, LINE, lab03.EPSILON),
    "q4": Laplace().expected_error(R, DP, lab03.EPSILON) / Ordered().expected_error(R, LINE, lab03.EPSILON),
    "q5": lab03.EPSILON * Ordered().sensitivity(policy.threshold(Domain.grid(lab03.K), lab03.THETA)),
}

B = Ordered().noise_scale(LINE, lab03.EPSILON)
MISTAKES = {  # question → the wrong answers a student typically gives
    "q1": [Laplace().sensitivity(LINE), Ordered().sensitivity(DP)],
    "q2": [2 * B**2, math.sqrt(EXPECTED["q2"]), 2 * B**2 * (lab03.RANGE[1] - lab03.RANGE[0] + 1)],
    "q4": [math.sqrt(EXPECTED["q4"]), 1 / EXPECTED["q4"], 4 * EXPECTED["q4"], 2 * EXPECTED["q4"]],
    "q5": [lab03.EPSILON / lab03.THETA, lab03.EPSILON * math.sqrt(lab03.THETA), lab03.EPSILON],
}


def _hint(name, answer):
    """The one-line hint, or NOT_RECOGNISED when the check returns quietly."""
    try:
        getattr(lab03, name)(answer)
    except LabCheckFailed as failed:
        return str(failed)
    return NOT_RECOGNISED


def _gives_away(message, value):
    """Whether any number written in the hint equals the expected value."""
    hint = message.split("Hint:", 1)[-1]
    numbers = [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", hint)]
    return any(math.isclose(n, value, rel_tol=1e-3) for n in numbers)


def test_the_library_values_are_what_the_lab_teaches():
    # Δ of the prefix sums under G¹ is 1, and a range in the middle needs two noisy prefix sums of variance ~2b²
    assert EXPECTED["q1"] == 1
    assert EXPECTED["q2"] == pytest.approx(2 * 2 * B**2, rel=1e-3)
    assert EXPECTED["q4"] == pytest.approx((lab03.RANGE[1] - lab03.RANGE[0] + 1) / 2, rel=1e-3)
    assert EXPECTED["q5"] == pytest.approx(lab03.EPSILON * lab03.THETA)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_library_answer_passes(name):
    getattr(lab03, name)(EXPECTED[name])


@pytest.mark.parametrize("name", sorted(EXPECTED) + ["q3"])
def test_the_placeholder_asks_for_an_answer(name):
    assert PLACEHOLDER in _hint(name, ...)


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_each_mistake_gets_its_own_hint_without_the_value(name):
    """A kept mistake gets its own hint without the value; a listed mistake the build dropped as answer-revealing,
    and any unforeseen answer, get no hint at all (the check returns quietly)."""
    hints = []
    for wrong in MISTAKES[name]:
        h = _hint(name, wrong)
        if not known_mistake("lab03", name, wrong):
            assert h == NOT_RECOGNISED or type_hint(h), h
            continue
        assert "not yet. Hint:" in h and not _gives_away(h, EXPECTED[name]), h
        hints.append(h)
    assert len(set(hints)) == len(hints), hints
    other = _hint(name, EXPECTED[name] * 7.3 + 11)
    assert other == NOT_RECOGNISED or ("one of" in other and not _gives_away(other, EXPECTED[name])), other


# question 3 (a function, graded by running it): tests/labs/test_lab03_q3.py


def test_the_histogram_comes_from_dpbench_when_present(tmp_path):
    try:
        folder = datasets.reference_data_dir()
    except FileNotFoundError:
        pytest.skip("reference data not installed")
    x, where = lab03.load_histogram(folder)
    assert where.startswith("DPBench") and x.shape == (lab03.K,)
    assert np.array_equal(x, np.load(folder / "dpbench" / f"{lab03.DPBENCH}.npy"))


def test_the_histogram_falls_back_to_the_embedded_salaries(tmp_path):
    x, where = lab03.load_histogram(tmp_path)  # a folder without dpbench/
    assert "not installed" in where and "salaries" in where
    assert x.shape == (lab03.K,) and x.sum() == 50_000 and x.dtype == np.int64
