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


def _sq_errors(runs, seed, scale=1.0):
    x, _ = lab03.load_histogram()
    out = Ordered().sample(x, R, LINE, lab03.EPSILON, runs, rng=np.random.default_rng(seed))
    return (scale * (out - R @ x) ** 2).ravel()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_q3_accepts_a_correct_monte_carlo_run(seed):
    lab03.q3(_sq_errors(1000, seed))


def test_q3_explains_the_usual_monte_carlo_mistakes():
    e = _sq_errors(1000, 0)
    assert "at least 200" in _hint("q3", e[:50])
    assert _hint("q3", np.sqrt(e)) == NOT_RECOGNISED  # |error|: only the mean is off, and the mean is q2's answer
    assert "square each error" in _hint("q3", np.sqrt(e) * np.where(np.arange(e.size) % 2, 1, -1))  # signed
    assert _hint("q3", e * 4) == NOT_RECOGNISED  # too large: no check compares with q2's answer (the hidden test does)
    assert "list or array" in _hint("q3", ["many", "errors"])
    assert "create the generator once" in _hint("q3", np.full(e.size, e[0]))  # re-seeded inside the loop
    assert _hint("q3", e) == NOT_RECOGNISED  # the genuine errors: no verdict either


def test_q3_refuses_a_list_made_from_the_predicted_error():
    """The right mean with made-up noise of one's own (q2's answer plus a little Gaussian noise) loses the point in
    the public check and in the hidden test, which asks the errors to spread as independent releases' do."""
    from blowfish_nb.labs._grade import expect_mean
    from blowfish_nb.labs._key import hidden_test, load_key

    q = load_key("lab03")["q3"]
    source = hidden_test("q3", q, 0, q.parts[0])
    assert f"min_cv={lab03.MIN_CV!r}" in source
    rng = np.random.default_rng(0)
    genuine = _sq_errors(1000, 0)
    expect_mean(list(genuine), EXPECTED["q2"], min_size=200, min_cv=lab03.MIN_CV)
    for fake in (EXPECTED["q2"] + rng.normal(0, 10, 1000), rng.uniform(0, 2 * EXPECTED["q2"], 1000)):
        assert "vary far less" in _hint("q3", list(fake))
        with pytest.raises(AssertionError, match="too little spread"):
            expect_mean(list(fake), EXPECTED["q2"], min_size=200, min_cv=lab03.MIN_CV)
    assert "create the generator once" in _hint("q3", [EXPECTED["q2"]] * 500)  # the exact value, repeated


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
