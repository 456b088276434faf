"""Lab 3 question 3 grades the student's *code*: the hidden test calls ``release_range(x, rng)`` on histograms and
generators of its own and tests the law of the noise (the difference of two Laplace draws of scale b = Δ/ε = 10),
not a number the student typed (issue 26; until stop 34 the question graded a list of squared errors).

Uniform and Gaussian noise of the right variance lose the point, the lab's own solution (the library's discrete
Laplace) and a continuous Laplace difference get it, and so does nothing that returns stored values. The tests fix
the seeds (``seed=``, ``lab03._Q3_SEED``) for their own determinism; in the notebook and the autograder they are drawn
afresh at each run.
"""

from __future__ import annotations

import numpy as np
import pytest

from blowfish_nb import Domain, policy
from blowfish_nb.labs import lab03
from blowfish_nb.labs._check import LabCheckFailed
from blowfish_nb.labs._grade import expect_range_noise, range_noise_verdict
from blowfish_nb.labs._key import hidden_test, load_key
from blowfish_nb.mechanisms import Ordered
from blowfish_nb.mechanisms.noise import discrete_laplace

K, (LO, HI) = lab03.K, lab03.RANGE
LINE = policy.line(Domain.grid(K))
B = Ordered().noise_scale(LINE, lab03.EPSILON)
R = lab03.range_query()
X, _ = lab03.load_histogram()
TRUTH = float((R @ X)[0])


def solution(x, rng):  # the lab's solution cell
    return Ordered().release(x, R, LINE, lab03.EPSILON, rng=rng)[0]


def continuous(x, rng):
    return x[LO:HI + 1].sum() + rng.laplace(0, B) - rng.laplace(0, B)


def discrete(x, rng):
    return x[LO:HI + 1].sum() + discrete_laplace(rng, B, 2) @ [1, -1]


def _stored(values):
    it = iter(np.tile(values, 20))
    return lambda x, rng: next(it)


_TABLE = np.random.default_rng(9).laplace(0, B, 1000) - np.random.default_rng(8).laplace(0, B, 1000)
_WHOLE = discrete_laplace(np.random.default_rng(9), B, 1000) - discrete_laplace(np.random.default_rng(8), B, 1000)
SD = 2 * B  # the standard deviation of the difference of two Laplace(B) draws

#: wrong code → the reasons the hidden test may give (Gaussian noise fails the law or the shape test, by the seed)
ATTACKS = {
    "gaussian, same variance": (lambda x, r: x[LO:HI + 1].sum() + r.normal(0, SD), {"law", "shape"}),
    "gaussian, same variance, rounded": (lambda x, r: x[LO:HI + 1].sum() + np.round(r.normal(0, SD)), {"law", "shape"}),
    "uniform, same variance": (lambda x, r: x[LO:HI + 1].sum() + r.uniform(-SD * 3**.5, SD * 3**.5), {"law"}),
    "one Laplace draw, same variance": (lambda x, r: x[LO:HI + 1].sum() + r.laplace(0, B * 2**.5), {"law", "shape"}),
    "Laplace on the range (private, not Ordered)": (lambda x, r: x[LO:HI + 1].sum() + r.laplace(0, B), {"law"}),
    "hard-coded array of releases": (lambda x, r: TRUTH + _WHOLE, {"not a number"}),
    "hard-coded number": (lambda x, r: TRUTH + 3.0, {"ignores rng"}),
    "stored releases, one per call": (_stored(TRUTH + _WHOLE), {"ignores rng"}),
    "stored noise drawn by rng (real numbers)": (lambda x, r: x[LO:HI + 1].sum() + _TABLE[r.integers(1000)],
                                                 {"repeats"}),
    "stored noise drawn by rng (whole numbers)": (lambda x, r: x[LO:HI + 1].sum() + _WHOLE[r.integers(1000)],
                                                  {"law"}),
    "the notebook's histogram, not x": (lambda x, r: TRUTH + r.laplace(0, B) - r.laplace(0, B),
                                        {"mean", "depends on the data"}),
    "a generator of its own": (lambda x, r: continuous(x, np.random.default_rng()), {"ignores rng"}),
    "steganographic (gamer34: the counts in the noise's digits)": (
        lambda x, r: np.floor(continuous(x, r) * 1e6) / 1e6 + (x[LO:HI + 1].sum() % 1000 + 0.5) * 1e-9,
        {"depends on the data"}),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_wrong_code_loses_the_point(name):
    draw, why = ATTACKS[name]
    assert range_noise_verdict(draw, K, (LO, HI), B, seed=11) in why


@pytest.mark.parametrize("release", [continuous, discrete], ids=["continuous", "discrete"])
@pytest.mark.parametrize("seed", [1])
def test_a_laplace_difference_of_the_right_scale_keeps_the_point(release, seed):
    expect_range_noise(release, K, (LO, HI), B, seed=seed)


def test_the_hidden_test_passes_the_law_and_fails_gaussian_noise(monkeypatch):
    """The hidden test the build writes (its source, as the autograder runs it, with its own copy of _grade) passes
    the solution's law (the library's discrete Laplace; the solution itself passes it under ``otter run`` in
    tests/labs/test_grading.py) and fails Gaussian noise of the right variance. Its generators' seeds are drawn at
    grading time; here SeedSequence is pinned so that the test is deterministic."""
    q = load_key("lab03")["q3"]
    source = hidden_test("q3", q, 0, q.parts[0])
    assert "expect_range_noise(release_range, 4096, (1024, 3071), 10.0)" in source
    real = np.random.SeedSequence
    monkeypatch.setattr(np.random, "SeedSequence", lambda entropy=None, **kw: real(
        3 if entropy is None else entropy, **kw))
    namespace = {}
    exec(source, namespace)
    namespace["test_q3_0"](discrete)
    with pytest.raises(AssertionError, match=r"\((law|shape)\)"):
        namespace["test_q3_0"](ATTACKS["gaussian, same variance"][0])


@pytest.mark.parametrize("release, words", [
    (lambda x, r: None, "replace the `...` in the function"),
    (lambda x, r: continuous(x, np.random.default_rng()), "generator `rng` you are given"),
    (lambda x, r: TRUTH + 3.0, "all your releases came out equal"),
    (ATTACKS["the notebook's histogram, not x"][0], "release the histogram `x`"),
    (lambda x, r: np.array([1.0, 2.0]), "one number"),
    (lambda x, r: 1 // 0, "failed with ZeroDivisionError"),
])
def test_the_public_check_hints_without_the_scale(release, words, monkeypatch):
    monkeypatch.setattr(lab03, "_Q3_SEED", 5)
    with pytest.raises(LabCheckFailed, match=words) as e:
        lab03.q3(release)
    assert "\n" not in str(e.value) and "10" not in str(e.value).replace("ZeroDivisionError", "")


@pytest.mark.parametrize("release", [solution, ATTACKS["gaussian, same variance"][0]], ids=["solution", "gaussian"])
def test_the_public_check_never_judges_the_law(release, monkeypatch):
    """The public check passes the solution and says nothing on Gaussian noise: the law and the scale are the hidden
    test's (a check that judged them would let a search find the scale)."""
    monkeypatch.setattr(lab03, "_Q3_SEED", 6)
    assert lab03.q3(release) is None
