"""Lab 3 question 3 grades the student's *code*: since noise35 the student writes ``range_noise(rng)``, the noise of
one release of the range by the Ordered mechanism, and the lab's code adds it to the true count. The hidden test
calls it with a generator and nothing else and tests the law of the noise (the difference of two Laplace draws of
scale b = Δ/ε = 10), not a number the student typed (issue 26; until stop 34 the question graded a list of squared
errors, until noise35 a release_range(x, rng) that saw the histogram and could hide its counts in its digits).

Uniform and Gaussian noise of the right variance lose the point, the lab's own solution (the library's discrete
Laplace) and a continuous Laplace difference get it, and so does nothing that returns stored values. The tests fix
the seeds (``seed=``, ``lab03._Q3_SEED``) for their own determinism; in the notebook and the autograder they are drawn
afresh at each run.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from blowfish_nb import Domain, policy
from blowfish_nb.labs import lab03
from blowfish_nb.labs._check import LabCheckFailed
from blowfish_nb.labs._grade import range_noise_verdict
from blowfish_nb.labs._key import hidden_test, load_key
from blowfish_nb.mechanisms import Ordered
from blowfish_nb.mechanisms.noise import discrete_laplace

K, (LO, HI) = lab03.K, lab03.RANGE
LINE = policy.line(Domain.grid(K))
B = Ordered().noise_scale(LINE, lab03.EPSILON)
R = lab03.range_query()
X, _ = lab03.load_histogram()
TRUTH = float((R @ X)[0])


def solution(rng):  # the lab's solution cell: the release of an empty histogram is the noise alone
    return Ordered().release(np.zeros(K, dtype=np.int64), R, LINE, lab03.EPSILON, rng=rng)[0]


def continuous(rng):
    return rng.laplace(0, B) - rng.laplace(0, B)


def discrete(rng):
    return discrete_laplace(rng, B, 2) @ [1, -1]


_TABLE = np.random.default_rng(9).laplace(0, B, 1000) - np.random.default_rng(8).laplace(0, B, 1000)
_WHOLE = discrete_laplace(np.random.default_rng(9), B, 1000) - discrete_laplace(np.random.default_rng(8), B, 1000)
_STORED = itertools.cycle(_WHOLE)
SD = 2 * B  # the standard deviation of the difference of two Laplace(B) draws


def _fresh(rng) -> bool:
    return np.random.PCG64(rng.bit_generator.seed_seq).state == rng.bit_generator.state


#: wrong code → the reasons the hidden test may give (Gaussian noise fails the law or the shape test, by the seed)
ATTACKS = {
    "gaussian, same variance": (lambda r: r.normal(0, SD), {"law", "shape"}),
    "gaussian, same variance, rounded": (lambda r: np.round(r.normal(0, SD)), {"law", "shape"}),
    "uniform, same variance": (lambda r: r.uniform(-SD * 3**.5, SD * 3**.5), {"law"}),
    "one Laplace draw, same variance": (lambda r: r.laplace(0, B * 2**.5), {"law", "shape"}),
    "Laplace on the range (private, not Ordered)": (lambda r: r.laplace(0, B), {"law"}),
    "hard-coded array of noise": (lambda r: _WHOLE, {"not a number"}),
    "hard-coded number": (lambda r: 3.0, {"ignores rng"}),
    "stored noise, one per call": (lambda r: next(_STORED), {"ignores rng"}),
    "stored noise drawn by rng (real numbers)": (lambda r: _TABLE[r.integers(1000)], {"repeats"}),
    "stored noise drawn by rng (whole numbers)": (lambda r: _WHOLE[r.integers(1000)], {"law"}),
    "the release, not the noise": (lambda r: TRUTH + continuous(r), {"mean"}),
    "a generator of its own": (lambda r: continuous(np.random.default_rng()), {"ignores rng"}),
    "no noise on a fresh generator (an analyst's one release)": (lambda r: 0.0 if _fresh(r) else continuous(r),
                                                                 {"exact release"}),
    "tiny noise on a fresh generator": (lambda r: (1e-6 if _fresh(r) else 1.0) * continuous(r),
                                        {"law", "shape", "too little"}),
    # gamer35's lab03_seeded_rng_exact: the solution's noise on the grader's 128-bit seeds, zero on a person's
    # (the lab's own default_rng(2026) cell then releases the true count)
    "gamer35: zero noise on a person-seeded generator": (
        lambda r: solution(r) * (r.bit_generator.seed_seq.entropy > 2 ** 64),
        {"exact release", "law", "correlated"}),  # correlated: its zeros come in runs on one generator (labs36b)
    "zero noise on a small unspawned seed (default_rng(7), PCG64(7))": (
        lambda r: continuous(r) * (r.bit_generator.seed_seq.entropy >= 10_000
                                   or r.bit_generator.seed_seq.spawn_key != ()),
        {"exact release", "law"}),
}


#: the attacks that fail on structure (not on the law's power) at any size: run at 1,000 calls, not the grader's 3,000
STRUCTURAL = {"hard-coded array of noise", "hard-coded number", "stored noise, one per call",
              "stored noise drawn by rng (real numbers)", "the release, not the noise", "a generator of its own",
              "no noise on a fresh generator (an analyst's one release)",
              "gamer35: zero noise on a person-seeded generator"}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_wrong_code_loses_the_point(name):
    noise, why = ATTACKS[name]
    assert range_noise_verdict(noise, B, runs=1000 if name in STRUCTURAL else 3000, seed=11) in why


def test_the_hidden_test_passes_the_law_and_fails_gaussian_noise(pinned_entropy):
    """The hidden test the build writes (its source, as the autograder runs it, with its own copy of _grade) passes
    the solution's law (the library's discrete Laplace; the solution itself passes it under ``otter run`` in
    tests/labs/test_grading.py) and fails Gaussian noise of the right variance. Its generators' seeds are drawn at
    grading time; here SeedSequence is pinned so that the test is deterministic."""
    q = load_key("lab03")["q3"]
    source = hidden_test("q3", q, 0, q.parts[0])
    assert "expect_range_noise(range_noise, 10.0)" in source
    namespace = {}
    exec(source, namespace)
    namespace["test_q3_0"](discrete)
    with pytest.raises(AssertionError, match=r"\((law|shape)\)"):
        namespace["test_q3_0"](ATTACKS["gaussian, same variance"][0])


def test_the_grader_passes_nothing_but_a_generator(pinned_entropy):
    """No histogram reaches the student's function (gamer34b's release_range hid 2 bits of a count in the digits of
    each release; a noise function has no count to hide), in the hidden test and in the public check: one
    np.random.Generator per call, as ``np.random.default_rng()`` makes one or as people make them (gamer35), a new
    one at each of the hidden test's calls. gamer34b's release_range(x, rng) cannot even be called."""
    seen = []

    def spy(*args, **kwargs):
        seen.append((args, kwargs))
        return continuous(args[0])

    q = load_key("lab03")["q3"]
    namespace = {}
    exec(hidden_test("q3", q, 0, q.parts[0]), namespace)
    namespace["test_q3_0"](spy)
    grader = len(seen)  # and the continuous Laplace difference passed (the discrete one: the test above)
    lab03.q3(spy)
    assert grader >= 3000 and len(seen) > grader
    assert all(len(a) == 1 and not kw and type(a[0]) is np.random.Generator for a, kw in seen)
    assert len({id(a[0]) for a, _ in seen[:grader]}) < 0.6 * grader  # runs of calls on one object (labs36b)
    keys = [a[0].bit_generator.seed_seq.spawn_key for a, _ in seen[:grader]]
    assert 0.1 < np.mean([k != () for k in keys]) < 0.25  # gamer35: a share are SeedSequence children, as people spawn

    def release_range(x, rng):  # gamer34b's answer shape: it needs the histogram
        return float(x[LO:HI + 1].sum()) + continuous(rng)

    with pytest.raises(TypeError):
        namespace["test_q3_0"](release_range)


@pytest.mark.parametrize("noise, words", [
    (lambda r: None, "replace the `...` in the function"),
    (lambda r: continuous(np.random.default_rng()), "generator `rng` you are given"),
    (lambda r: 3.0, "all your noise values came out equal"),
    (ATTACKS["the release, not the noise"][0], "return the noise alone"),
    (lambda r: np.array([1.0, 2.0]), "one number"),
    (lambda r: 1 // 0, "failed with ZeroDivisionError"),
    (lambda x, r: 0.0, "failed with TypeError"),
])
def test_the_public_check_hints_without_the_scale(noise, words, monkeypatch):
    monkeypatch.setattr(lab03, "_Q3_SEED", 5)
    with pytest.raises(LabCheckFailed, match=words) as e:
        lab03.q3(noise)
    assert "\n" not in str(e.value) and "10" not in str(e.value).replace("ZeroDivisionError", "")


@pytest.mark.parametrize("noise", [solution, ATTACKS["gaussian, same variance"][0]], ids=["solution", "gaussian"])
def test_the_public_check_never_judges_the_law(noise, monkeypatch):
    """The public check passes the solution and says nothing on Gaussian noise: the law and the scale are the hidden
    test's (a check that judged them would let a search find the scale)."""
    monkeypatch.setattr(lab03, "_Q3_SEED", 6)
    assert lab03.q3(noise) is None
