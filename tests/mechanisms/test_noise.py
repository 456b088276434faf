"""The float-safe samplers: exact laws (chi-square against the pmf), OpenDP's samplers as the reference,
exact privacy ratios of the lattice sampler, and the release-level properties issue 13 asks for."""

import math

import numpy as np
import pytest
from scipy.stats import chi2, chi2_contingency, kstest, laplace

from blowfish_nb import Domain, datasets, mechanisms, policy, workload
from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.mechanisms import noise


def dlap_pmf(z, b):
    t = math.exp(-1.0 / b)
    return (1 - t) / (1 + t) * t ** np.abs(z)


def chi_square_pvalue(draws, b, cut):
    """Goodness of fit of whole-number draws to the discrete Laplace pmf, |z| > cut pooled into one cell."""
    z = np.arange(-cut, cut + 1)
    observed = np.array([(draws == v).sum() for v in z] + [(np.abs(draws) > cut).sum()])
    p = dlap_pmf(z, b)
    expected = np.r_[p, 1 - p.sum()] * draws.size
    stat = np.sum((observed - expected) ** 2 / expected)
    return chi2.sf(stat, df=len(observed) - 1)


@pytest.mark.parametrize("b", [0.3, 1.0, 3.0, 20.0])
def test_discrete_laplace_has_the_exact_law(b):
    draws = noise.discrete_laplace(np.random.default_rng(int(b * 10)), b, 200_000)
    assert np.all(draws == np.round(draws))
    cut = max(2, int(4 * b))
    assert chi_square_pvalue(draws, b, cut) > 1e-3
    assert abs(draws.var() - noise.variance(b)) < 5 * noise.variance(b) * math.sqrt(5 / draws.size)


def test_per_value_scales_and_zero_scale():
    scales = np.array([0.0, 1.0, 5.0])
    draws = noise.discrete_laplace(np.random.default_rng(1), scales, (100_000, 3))
    assert np.all(draws[:, 0] == 0)
    for j in (1, 2):
        assert chi_square_pvalue(draws[:, j], scales[j], int(4 * scales[j])) > 1e-3


@pytest.mark.parametrize("b", [1.0, 4.0])
def test_same_law_as_opendp(b):
    """OpenDP's exact integer Laplace is the reference (two-sample chi-square on |z| ≤ 3b, the rest pooled)."""
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=b)
    theirs = np.array(meas([0] * 20_000))
    ours = noise.discrete_laplace(np.random.default_rng(7), b, 20_000)
    cut = int(3 * b)
    table = [[int((d == v).sum()) for v in range(-cut, cut + 1)] + [int((np.abs(d) > cut).sum())]
             for d in (ours, theirs)]
    assert chi2_contingency(table)[1] > 1e-3
    assert meas.map(1) == pytest.approx(1 / b)  # their ε for a unit change: the calibration we use


def test_lattice_sampler_privacy_ratio_is_exact_at_most_e_epsilon():
    """Brute force: for values Δ apart (L1, spread over m coordinates), every output's probability ratio ≤ e^ε."""
    rng = np.random.default_rng(3)
    eps, delta, m = 0.7, 1.5, 3
    gamma = noise.lattice_step(delta, m)
    assert gamma <= delta / m * 2.0**-12 < 2 * gamma  # the largest power of two below 2^-12·Δ/m
    scale = (delta / gamma + m) / eps
    worst = 0.0
    for _ in range(200):
        v = rng.normal(size=m) * 10
        d = rng.dirichlet(np.ones(m)) * delta * rng.choice([-1, 1], size=m)
        w, w2 = np.round(v / gamma), np.round((v + d) / gamma)
        # log-ratio of the product pmfs at any output o: Σ (|o − w2| − |o − w|)/scale ≤ Σ |w − w2|/scale
        worst = max(worst, np.abs(w - w2).sum() / scale)
    assert worst <= eps + 1e-12
    out = noise.lattice_noisy(np.array([0.3, -1.7, 2.25]), delta, eps, m, np.random.default_rng(0))
    assert np.all(out / gamma == np.round(out / gamma))  # on the public grid: exact multiples of γ


def test_selection_noise_is_laplace_with_long_tails():
    x = noise.selection_laplace(np.random.default_rng(0), 2.0, 100_000)
    assert kstest(x, laplace(scale=2.0).cdf).pvalue > 1e-3
    u = noise.uniform_open(np.random.default_rng(1), 1_000_000)
    assert u.min() > 0 and u.max() < 1
    e = noise.standard_exponential(np.random.default_rng(2), 2_000_000)
    assert kstest(e[:200_000], "expon").pvalue > 1e-3 and np.isfinite(e).all()


def test_noisy_refuses_fractions_and_huge_scales():
    with pytest.raises(InvalidParameterError, match="whole numbers"):
        noise.noisy(np.array([0.5]), 1.0, np.random.default_rng(0))
    with pytest.raises(InvalidParameterError, match="epsilon=1e-300"):
        noise.noisy(np.array([1.0]), 1e300, np.random.default_rng(0), epsilon=1e-300)


@pytest.mark.parametrize("mech", [mechanisms.Laplace(), mechanisms.Ordered(), mechanisms.Hierarchical(2),
                                  mechanisms.Privelet(), mechanisms.Transformed()], ids=lambda m: m.name)
def test_measurements_are_whole_numbers_so_no_bit_pattern_carries_the_count(mech, monkeypatch):
    """Every released measurement is a whole count plus whole noise: the same set of floats for every input."""
    seen = []
    real = noise.noisy

    def spy(values, scale, rng, epsilon=None):
        out = real(values, scale, rng, epsilon=epsilon)
        seen.append(out)
        return out

    monkeypatch.setattr(noise, "noisy", spy)
    x = np.random.default_rng(0).poisson(5, size=16).astype(float)
    mech.release(x, workload.prefix(16), policy.line(Domain.grid(16)), 0.8, rng=1)
    assert seen and all(np.all(y == np.round(y)) for y in seen)


def test_the_issue_13_subtraction_no_longer_recovers_the_counts():
    """Issue 13 §2: answers − default_rng(seed).laplace(0, Δ/ε, k) returned the true counts to 1e-12."""
    df = datasets.salaries(n=2000, seed=3)
    r = df.blowfish.release("histogram", "age", bins=20, bounds=(0, 100), epsilon=0.5, rng=7)
    truth = df.blowfish.release("histogram", "age", bins=20, bounds=(0, 100), epsilon=1e6,
                                mechanism="laplace", rng=0).answers.round().to_numpy()
    guess = r.answers.to_numpy() - np.random.default_rng(7).laplace(0, 1 / 0.5, 20)
    assert not np.allclose(guess, truth, atol=1e-6)
    assert "seed" not in r.provenance and "rng" not in repr(r) and "seed=" not in repr(r.provenance)
    assert r.provenance["noise"].startswith("seeded")


@pytest.mark.parametrize("eps", [5e-324, 1e-300, 1e-13])
def test_absurdly_small_epsilon_is_refused_not_released(eps):
    """Issue 13 §6: epsilon=5e-324 returned ±inf answers (and was charged), 1e-300 raised OverflowError."""
    df = datasets.salaries(n=500, seed=1)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        df.blowfish.release("histogram", "age", bins=10, bounds=(0, 100), epsilon=eps)
    s = df.blowfish.session(1.0, bins={"age": 10}, bounds={"age": (0, 100)})
    with pytest.raises(InvalidParameterError, match="epsilon"):
        s.release("histogram", "age", epsilon=eps)
    assert s.spent == 0.0


def test_privacy_statement_warns_when_the_noise_is_replayable():
    df = datasets.salaries(n=300, seed=1)
    kw = dict(bins=10, bounds=(0, 100), epsilon=1.0)
    seeded = df.blowfish.release("histogram", "age", rng=3, **kw).privacy_statement()
    fresh = df.blowfish.release("histogram", "age", **kw).privacy_statement()
    generator = df.blowfish.release("histogram", "age", rng=np.random.default_rng(3), **kw)
    assert "anyone with the seed can remove the noise" in seeded and "Caution" not in fresh
    assert generator.provenance["noise"].startswith("drawn from the caller's generator")


def _discrete_laplace_as_before(rng, scale, shape):
    """discrete_laplace as written before issue 28 (a boolean-mask store for the zeros, a masked negation)."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    n = int(np.prod(shape))
    scale = np.asarray(scale, dtype=float)
    if scale.ndim:
        scale = np.broadcast_to(scale, shape).reshape(-1)
    out = noise.standard_exponential(rng, n)
    out *= scale
    np.floor(out, out=out)
    out += 1.0
    with np.errstate(divide="ignore"):
        zero = np.tanh(0.5 / scale)
    out[rng.random(n) < zero] = 0.0
    np.negative(out, out=out, where=noise._signs(rng, n))
    return out.reshape(shape)


@pytest.mark.parametrize("scale, shape", [(4.0, 100_003), (0.05, 5_000), (0.0, 64), (3e9, 1_000), (1.0, (7, 9)),
                                          (np.array([0.0, 0.3, 2.0, 50.0, 1e6]), (3_000, 5)),
                                          # block edges of the in-place form (noise.BLOCK), an empty draw, and
                                          # per-value scales (0 among them) across blocks
                                          (2.0, 0), (2.0, 1), (2.0, noise.BLOCK), (2.0, noise.BLOCK + 1),
                                          (np.r_[0.0, np.linspace(0.05, 40.0, 39_999)], 40_000),
                                          (7.5, (3, noise.BLOCK))])
def test_discrete_laplace_draws_the_same_bits_as_before(scale, shape):
    """Issue 28 made the sampler faster by multiplications in place of masked stores: the same generator state gives
    the same array, bit for bit (signed zeros included), and leaves the generator in the same state."""
    for seed in range(4):
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        new, old = noise.discrete_laplace(a, scale, shape), _discrete_laplace_as_before(b, scale, shape)
        assert new.shape == old.shape and new.tobytes() == old.tobytes()
        assert a.bit_generator.state == b.bit_generator.state


class _TailAt:
    """A generator whose exponentials put one value past 30 (probability e^-30 each: never seen in a test)."""

    def __init__(self, seed: int, where: int):
        self._rng, self._where = np.random.default_rng(seed), where
        self.bit_generator = self._rng.bit_generator

    def standard_exponential(self, n):
        e = self._rng.standard_exponential(n)
        e[self._where] = 31.0
        return e


def test_an_exponential_past_30_is_redrawn_as_30_plus_a_fresh_one():
    """The tail check is one reduction now: a value past 30 is still replaced (memorylessness), the rest kept."""
    e = noise.standard_exponential(_TailAt(3, 17), 100)
    plain = np.random.default_rng(3).standard_exponential(100)
    assert e[17] > 30.0 and e[17] != 31.0
    assert np.array_equal(np.delete(e, 17), np.delete(plain, 17))
