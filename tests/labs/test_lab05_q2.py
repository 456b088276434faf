"""Issue 26, hole 4: lab 5 question 2 ("make it (ε, line)-private") gives its point only to independent Laplace noise
of the right scale drawn from the grader's generator — the public check and the autograder's hidden test alike.

Every variant of the student-gamer's attack (/tmp/gamer31/repro/4_lab5_q2_variants.py) is rebuilt here. The tests
fix the seeds (``seed=``/``lab05._Q2_SEED``) for their own determinism; in a notebook and in the autograder the seeds
are drawn afresh at each run.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from blowfish_nb.labs import lab05
from blowfish_nb.labs._check import LabCheckFailed
from blowfish_nb.labs._grade import expect_laplace_noise, laplace_noise_verdict
from blowfish_nb.mechanisms.noise import discrete_laplace

SCALE = 2.0 / lab05.EPSILON  # Δ of the histogram under the line policy is 2
X = lab05.Q2_DATA
FIXED = np.random.default_rng(5).bit_generator.state  # the generator the old test used


def laplace(s=SCALE):
    return lambda x, size, rng: x + rng.laplace(0, s, (size, len(x)))


def discrete(x, size, rng):
    return x + discrete_laplace(rng, SCALE, (size, len(x)))


def deterministic(x, size, rng):  # Laplace quantiles in a fixed order: ignores rng
    n = size * len(x)
    q = stats.laplace(scale=SCALE).ppf((np.arange(n) + 0.5) / n)
    return x + q[np.argsort(np.arange(n) * 7919 % n)].reshape(size, len(x))


def common_noise(x, size, rng):  # one Laplace value per release, added to every bin
    return x + rng.laplace(0, SCALE, (size, 1))


def common_stratified(x, size, rng):  # the same, with stratified quantiles (a perfect KS fit)
    q = stats.laplace(scale=SCALE).ppf((rng.permutation(size) + 0.5) / size)
    return x + q[:, None]


def seed_conditioned(x, size, rng):  # Laplace only for the old grader's generator, else the true counts
    if rng.bit_generator.state == FIXED:
        return x + rng.laplace(0, SCALE, (size, len(x)))
    return np.tile(x, (size, 1)).astype(float)


def exact_sometimes(p):  # the true histogram with probability p
    def draw(x, size, rng):
        out = x + rng.laplace(0, SCALE, (size, len(x)))
        out[rng.random(size) < p] = x
        return out
    return draw


def discrete_exact_sometimes(x, size, rng):
    out = discrete(x, size, rng)
    out[rng.random(size) < 0.01] = x
    return out


def shared_noise_vector(x, size, rng):  # one noise vector reused by every release
    return x + np.tile(rng.laplace(0, SCALE, (1, len(x))), (size, 1))


_STORED = np.asarray(X) + np.random.default_rng(1).laplace(0, SCALE, (20_000, len(X)))
_TABLE = np.random.default_rng(2).laplace(0, SCALE, (5_000, len(X)))
_WHOLE_TABLE = discrete_laplace(np.random.default_rng(2), SCALE, (1_000, len(X)))


def stored_offset(x, size, rng):  # stored releases, sliced at an offset chosen with rng
    o = rng.integers(0, len(_STORED) - size)
    return _STORED[o:o + size]


def recognises_the_graded_input(x, size, rng):  # gamer34: Laplace on the public Q2_DATA, near-exact elsewhere
    if np.array_equal(x, X):
        return x + rng.laplace(0, SCALE, (size, len(x)))
    return x + rng.laplace(0, 1e-3, (size, len(x)))


def steganographic(x, size, rng):  # gamer34: exact Laplace to 3 decimals, the true counts in decimals 4–9
    noisy = x + rng.laplace(0, SCALE, (size, len(x)))
    return np.floor(noisy * 1e3) / 1e3 + (np.mod(x, 1000) + 0.5) * 1e-6


def exact_one_at_a_time(x, size, rng):  # gamer34b: Laplace for the grader's batches, the true counts for size 1
    if size == 1:
        return np.asarray(x, dtype=float)[None, :]
    return x + rng.laplace(0, SCALE, (size, len(x)))


ATTACKS = {
    "exact when size is 1": (exact_one_at_a_time, "exact release"),
    "recognises the graded input": (recognises_the_graded_input, "depends on the data"),
    "steganographic Laplace": (steganographic, "depends on the data"),
    "hard-coded array of releases": (lambda x, s, r: _STORED[:s], "ignores rng"),
    "hard-coded array, offset drawn with rng": (stored_offset, {"repeats", "depends on the data"}),
    "stored noise rows drawn with rng": (lambda x, s, r: x + _TABLE[r.integers(0, len(_TABLE), s)], "repeats"),
    "stored whole-number rows drawn with rng": (lambda x, s, r: x + _WHOLE_TABLE[r.integers(0, 1_000, s)], "repeats"),
    "deterministic quantiles": (deterministic, "ignores rng"),
    "common noise per release": (common_noise, "correlated"),
    "common noise, stratified": (common_stratified, {"repeats", "exact release"}),  # same quantiles per block; size 1: 0
    "seed-conditioned": (seed_conditioned, "ignores rng"),
    "exact w.p. 0.002": (exact_sometimes(0.002), "exact release"),
    "exact w.p. 0.01": (exact_sometimes(0.01), "exact release"),
    "discrete, exact w.p. 0.01": (discrete_exact_sometimes, "exact release"),
    "shared noise vector": (shared_noise_vector, "repeats"),
    "laplace scale 1.95": (laplace(1.95), "too little"),
    "laplace scale 2.05": (laplace(2.05), "too much"),
    "uniform, same variance": (lambda x, s, r: x + r.uniform(-SCALE * 6**0.5, SCALE * 6**0.5, (s, len(x))), "law"),
    "gauss, same variance": (lambda x, s, r: x + r.normal(0, SCALE * 2**0.5, (s, len(x))), "law"),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_every_gamer_variant_loses_the_point_in_the_hidden_test_and_the_public_check(name, monkeypatch):
    draw, why = ATTACKS[name]
    assert laplace_noise_verdict(draw, X, SCALE, seed=11) in (why if isinstance(why, set) else {why})
    with pytest.raises(AssertionError):
        expect_laplace_noise(draw, X, SCALE, seed=12)
    monkeypatch.setattr(lab05, "_Q2_SEED", 13)
    if why in ("too little", "too much"):  # Laplace of another scale: the public check never judges the scale
        assert lab05.q2(draw) is None
        return
    with pytest.raises(LabCheckFailed) as e:
        lab05.q2(draw)
    assert "\n" not in str(e.value) and "2.0" not in str(e.value)  # one line, never the scale


@pytest.mark.parametrize("draw", [laplace(), discrete], ids=["continuous", "discrete"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_independent_laplace_of_the_right_scale_keeps_the_point(draw, seed, monkeypatch):
    assert laplace_noise_verdict(draw, X, SCALE, seed=seed) is None
    monkeypatch.setattr(lab05, "_Q2_SEED", seed + 100)
    lab05.q2(draw)


def test_the_seeds_are_drawn_at_grading_time():
    """Two runs of the hidden test hand ``draw`` different generators (no fixed seed to recognise)."""
    seen = []

    def spy(x, size, rng):
        seen.append(rng.bit_generator.state["state"]["state"])
        return x + rng.laplace(0, SCALE, (size, len(x)))

    expect_laplace_noise(spy, X, SCALE)
    expect_laplace_noise(spy, X, SCALE)
    # per run: 4 blocks, 300 small calls, the data-independence pair (one seed given twice, to x and to a drawn x′),
    # 2 repeat pairs
    assert len(seen) == 2 * 308 and len(set(seen)) == 2 * 307
    assert lab05._Q2_SEED is None


def test_the_hints_say_what_is_wrong(monkeypatch):
    monkeypatch.setattr(lab05, "_Q2_SEED", 7)
    for draw, words in [(common_noise, "independent noise value"), (deterministic, "generator `rng`"),
                        (exact_sometimes(0.01), "true counts")]:
        with pytest.raises(LabCheckFailed, match=words):
            lab05.q2(draw)
