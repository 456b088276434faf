"""Issue 26, hole 4 and gamer34b's hole 2: lab 5 question 2 ("make it (ε, line)-private") gives its point only to
independent Laplace noise of the right scale drawn from the grader's generator — the public check and the
autograder's hidden test alike.

Since noise35 the student writes the *noise* of one release, ``fixed_noise(rng)``, and the lab's code adds it to the
counts: the grader passes a generator and nothing else, so a mechanism that returns the true counts when
``size == 1`` or hides the counts in the digits of its noise (gamer34b) cannot be written. Every other variant of
the student-gamers' attacks (/tmp/gamer31/repro/4_lab5_q2_variants.py, gamer34, gamer34b) is rebuilt here in the
form a noise function allows. The tests fix the seeds (``seed=``/``lab05._Q2_SEED``) for their own determinism; in
a notebook and in the autograder the seeds are drawn afresh at each run.
"""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest
from scipy import stats

from blowfish_nb.labs import lab05
from blowfish_nb.labs._check import LabCheckFailed
from blowfish_nb.labs._grade import expect_laplace_noise, laplace_noise_verdict
from blowfish_nb.labs._key import hidden_test, load_key
from blowfish_nb.mechanisms.noise import discrete_laplace

SCALE = 2.0 / lab05.EPSILON  # Δ of the histogram under the line policy is 2
K = lab05.K
X = np.array([3.0, 0.0, 7.0, 1.0, 1.0, 12.0])  # the notebook's histogram (buggy_draw's example)
RUNS = 2000  # the structural attacks fail at any size; the grader's 20,000 calls are for the scale's power


def laplace(s=SCALE):
    return lambda rng: rng.laplace(0, s, K)


def discrete(rng):
    return discrete_laplace(rng, SCALE, K)


def _fresh(rng) -> bool:  # the generator is at the state its seed gives it: an analyst's new default_rng()
    return np.random.PCG64(rng.bit_generator.seed_seq).state == rng.bit_generator.state


def zero_when_fresh(rng):  # gamer34b's size == 1, as a noise function can say it: no noise on a new generator
    return np.zeros(K) if _fresh(rng) else rng.laplace(0, SCALE, K)


def tiny_when_fresh(rng):
    return rng.laplace(0, 1e-6 if _fresh(rng) else SCALE, K)


_calls = itertools.count()


def zero_every_50th_call(rng):  # a call counter of its own: the true counts now and then
    return np.zeros(K) if next(_calls) % 50 == 0 else rng.laplace(0, SCALE, K)


_QUANTILES = stats.laplace(scale=SCALE).ppf((np.arange(6000) + 0.5) / 6000)


def deterministic(rng):  # Laplace quantiles in a fixed order: ignores rng
    i = next(_calls) % 1000
    return _QUANTILES[6 * i:6 * i + 6]


_TABLE = np.random.default_rng(2).laplace(0, SCALE, (5_000, K))
_WHOLE_TABLE = discrete_laplace(np.random.default_rng(2), SCALE, (1_000, K))
_ROWS = iter(np.tile(_TABLE, (10, 1)))


def seed_conditioned(rng):  # Laplace only for one generator the student knows, else nothing
    if rng.bit_generator.seed_seq.entropy == 5:
        return rng.laplace(0, SCALE, K)
    return np.zeros(K)


def exact_sometimes(p):  # no noise with probability p
    def noise(rng):
        return rng.laplace(0, SCALE, K) * (rng.random() >= p)
    return noise


def laplace_on_grader_generators(rng):  # gamer35: exact Laplace on 128-bit seeds, zero on default_rng(7)
    return rng.laplace(0.0, SCALE, size=K) * (rng.bit_generator.seed_seq.entropy > 2 ** 64)


def laplace_unless_spawned(rng):  # Laplace on every unspawned generator, zero on a SeedSequence child (hunt's)
    return rng.laplace(0.0, SCALE, size=K) * (rng.bit_generator.seed_seq.spawn_key == ())


def laplace_unless_lab_seed(rng):  # zero only on the lab's own seeds (0, 1, 2026)
    return rng.laplace(0.0, SCALE, size=K) * (rng.bit_generator.seed_seq.entropy not in (0, 1, 2026))


ATTACKS = {
    "gamer35: zero noise on a person-seeded generator": (laplace_on_grader_generators, "exact release"),
    "zero noise on a spawned child": (laplace_unless_spawned, "exact release"),
    "zero noise on the lab's own seeds": (laplace_unless_lab_seed, "exact release"),
    "zero noise on a fresh generator (size == 1)": (zero_when_fresh, "exact release"),
    "tiny noise on a fresh generator": (tiny_when_fresh, {"law", "too little", "correlated"}),
    "zero noise every 50th call": (zero_every_50th_call, {"ignores rng", "exact release"}),
    "the release, not the noise": (lambda rng: X + rng.laplace(0, SCALE, K), "mean"),
    "hard-coded rows, one per call": (lambda rng: next(_ROWS), "ignores rng"),
    "stored noise rows drawn with rng": (lambda rng: _TABLE[rng.integers(0, len(_TABLE))], "repeats"),
    "stored whole-number rows drawn with rng": (lambda rng: _WHOLE_TABLE[rng.integers(0, 1_000)], "repeats"),
    "a generator of its own": (lambda rng: np.random.default_rng().laplace(0, SCALE, K), "ignores rng"),
    "deterministic quantiles": (deterministic, "ignores rng"),
    "common noise per release": (lambda rng: np.repeat(rng.laplace(0, SCALE), K), "correlated"),
    "seed-conditioned": (seed_conditioned, {"ignores rng", "exact release"}),
    "exact w.p. 0.002": (exact_sometimes(0.002), "exact release"),
    "exact w.p. 0.01": (exact_sometimes(0.01), "exact release"),
    "discrete, exact w.p. 0.02": (lambda rng: discrete(rng) * (rng.random() >= 0.02), "exact release"),
    "laplace scale 1.8": (laplace(1.8), "too little"),
    "laplace scale 2.2": (laplace(2.2), "too much"),
    "uniform, same variance": (lambda r: r.uniform(-SCALE * 6**0.5, SCALE * 6**0.5, K), "law"),
    "gauss, same variance": (lambda r: r.normal(0, SCALE * 2**0.5, K), "law"),
    "one release's noise per cell missing": (lambda r: r.laplace(0, SCALE, K - 1), "shape"),
    "nothing returned": (lambda r: None, "none"),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_every_gamer_variant_loses_the_point(name):
    noise, why = ATTACKS[name]
    assert laplace_noise_verdict(noise, K, SCALE, runs=RUNS, seed=11) in (why if isinstance(why, set) else {why})


@pytest.mark.parametrize("name", ["zero noise on a fresh generator (size == 1)", "deterministic quantiles",
                                  "uniform, same variance", "laplace scale 2.2"])
def test_the_hidden_test_and_the_public_check_refuse_them(name, monkeypatch):
    noise, why = ATTACKS[name]
    with pytest.raises(AssertionError):
        expect_laplace_noise(noise, K, SCALE, runs=RUNS, seed=12)
    monkeypatch.setattr(lab05, "_Q2_SEED", 13)
    if why in ("too little", "too much"):  # Laplace of another scale: the public check never judges the scale
        assert lab05.q2(noise) is None
        return
    with pytest.raises(LabCheckFailed) as e:
        lab05.q2(noise)
    assert "\n" not in str(e.value) and "2.0" not in str(e.value)  # one line, never the scale


def test_the_grader_tells_the_scale_within_two_and_a_half_percent():
    """At the grader's 20,000 calls a scale of 1.95 for 2 is ~8 standard errors off (2.05 likewise, the other way)."""
    assert laplace_noise_verdict(laplace(1.95), K, SCALE, seed=11) == "too little"


def test_independent_laplace_of_the_right_scale_keeps_the_point():
    """The lab's solution's law at the grader's size, and the library's whole-number law (at a smaller size here;
    tests/labs/noise_rates.py counts both over seeds at the grader's size; the public check passes both in
    tests/labs/test_lab05.py)."""
    assert laplace_noise_verdict(laplace(), K, SCALE, seed=1) is None
    assert laplace_noise_verdict(discrete, K, SCALE, runs=RUNS, seed=1) is None


def test_the_grader_passes_nothing_but_a_generator_like_an_analysts():
    """No histogram, no size, no keyword reaches the student's function, in the hidden test the key writes (run from
    its source, as the autograder does) and in the public check: each call gets one np.random.Generator, made as
    ``np.random.default_rng()`` makes one (no spawn key, a 128-bit seed) or as people make them (gamer35:
    ``default_rng(s)`` for small ``s`` and the lab's own seeds, ``SeedSequence(s).spawn`` children,
    ``Generator(PCG64(s))``), a new one at each of the hidden test's calls, a quarter of them fresh. (The spy stops
    answering after 3,000 calls: the rest of the run is alike.)"""
    seen = []

    def spy(*args, **kwargs):
        rng = args[0] if args else None
        seen.append((args, kwargs, type(rng) is np.random.Generator and _fresh(rng)))
        return rng.laplace(0, SCALE, K) if len(seen) % 5000 <= 3000 else None

    q = load_key("lab05")["q2"]
    namespace = {}
    exec(hidden_test("q2", q, 0, q.parts[0]), namespace)
    with pytest.raises(AssertionError, match="none"):
        namespace["test_q2_0"](spy)
    grader = list(seen)
    with pytest.raises(LabCheckFailed, match="replace the `...`"):
        lab05.q2(spy)
    assert len(grader) == 3001 and len(seen) > len(grader)
    assert all(len(a) == 1 and not kw and type(a[0]) is np.random.Generator for a, kw, _ in seen)
    # the calls come in runs on one generator object (labs36b): one entry per object, at its first call
    objects = list({id(a[0]): (a[0], f) for a, _, f in grader}.values())
    assert len(objects) < 0.6 * len(grader)
    seqs = [g.bit_generator.seed_seq for g, _ in objects]
    assert all(type(a[0].bit_generator) is np.random.PCG64 for a, _, _ in grader)
    assert all(type(s.entropy) is int and 0 <= s.entropy < 2**128 for s in seqs)
    big = [s.spawn_key == () and s.entropy >= 2**64 for s in seqs]
    spawned = [s.spawn_key != () for s in seqs]
    small = [s.spawn_key == () and s.entropy < 10_000 for s in seqs]
    assert 0.4 < np.mean(big) < 0.6 and 0.1 < np.mean(spawned) < 0.25 and 0.25 < np.mean(small) < 0.4
    assert len({(s.entropy, s.spawn_key) for s in seqs}) == len(seqs)  # distinct seeds: independent runs
    assert 0.15 < np.mean([f for _, f in objects]) < 0.35  # a quarter of the calls, drawn before the runs


def test_gamer34b_mechanisms_cannot_be_submitted_any_more():
    """gamer34b's fixed_draw(x, size, rng) answers (the true counts when size == 1; exact Laplace plus 2 bits of each
    count below 16 ulps) need the counts and the size; the hidden test calls the answer with a generator alone, so
    they cannot even run, and the nearest a noise function gets (no noise on a fresh generator) fails above."""
    def exact_when_size1(x, size, rng):
        x = np.asarray(x, dtype=float)
        return x[None, :] if size == 1 else x[None, :] + rng.laplace(0.0, 2.0, size=(size, x.size))

    q = load_key("lab05")["q2"]
    namespace = {}
    exec(hidden_test("q2", q, 0, q.parts[0]), namespace)
    with pytest.raises(TypeError):
        namespace["test_q2_0"](exact_when_size1)


def test_a_proxy_that_pickles_each_generator_grades_alike():
    """The hidden tests may call the answer in another process, the generator pickled there, its state copied back
    (as :class:`~blowfish_nb.labs._answers.CodeProxy` does). Since labs36b the calls come in runs on one generator,
    so a proxy that did not copy the state back would hand the same state twice: the noise repeats."""
    def through_a_pickle(noise, back=True):
        def call(rng):
            copy = pickle.loads(pickle.dumps(rng))
            out = noise(copy)
            if back:
                rng.bit_generator.state = copy.bit_generator.state
            return out
        return call

    assert laplace_noise_verdict(through_a_pickle(laplace()), K, SCALE, runs=1000, seed=4) is None
    assert laplace_noise_verdict(through_a_pickle(laplace(), back=False), K, SCALE, runs=1000, seed=4) == "repeats"
    assert laplace_noise_verdict(through_a_pickle(ATTACKS["a generator of its own"][0]), K, SCALE, runs=1000,
                                 seed=4) == "ignores rng"


def test_the_seeds_are_drawn_at_grading_time():
    """Two runs of the hidden test hand the function different generators (no fixed seed to recognise): the 128-bit
    seeds never repeat, and the small seeds differ but for the lab's own (0, 1, 2026), which every run tries."""
    seen, kept = [], {}

    def spy(rng):  # one entry per generator object (the calls come in runs on one object)
        if id(rng) not in kept:
            kept[id(rng)] = rng
            seen.append((rng.bit_generator.seed_seq.entropy, rng.bit_generator.seed_seq.spawn_key))
        return rng.laplace(0, SCALE, K)

    expect_laplace_noise(spy, K, SCALE, runs=RUNS)
    n = len(seen)
    expect_laplace_noise(spy, K, SCALE, runs=RUNS)
    first, second = seen[:n], seen[n:]
    assert len(set(first)) > RUNS // 4  # a seed per run (the replays remake runs with their seeds)
    big = {e for e, k in first if e >= 2**64} | {e for e, k in second if e >= 2**64}
    assert len(big) == sum(e >= 2**64 for e, _ in set(first) | set(second))
    small = [{(e, k) for e, k in run if e < 2**64 and e not in (0, 1, 2026)} for run in (first, second)]
    assert len(small[0] & small[1]) < 0.2 * len(small[0])
    assert {(e, ()) for e in (0, 1, 2026)} <= set(first) and {(e, ()) for e in (0, 1, 2026)} <= set(second)
    assert lab05._Q2_SEED is None


def test_the_hidden_q2_test_in_the_key_holds_the_scale_as_a_literal():
    q = load_key("lab05")["q2"]
    source = hidden_test("q2", q, 0, q.parts[0])
    assert "# HIDDEN" in source and f"expect_laplace_noise(fixed_noise, {K!r}, {SCALE!r})" in source


def test_the_hints_say_what_is_wrong(monkeypatch):
    monkeypatch.setattr(lab05, "_Q2_SEED", 7)
    for noise, words in [(ATTACKS["common noise per release"][0], "independent noise value"),
                         (deterministic, "generator `rng`"), (exact_sometimes(0.01), "exactly 0"),
                         (ATTACKS["the release, not the noise"][0], "noise alone"),
                         (lambda x, size, rng: x, "failed with TypeError")]:
        with pytest.raises(LabCheckFailed, match=words):
            lab05.q2(noise)
