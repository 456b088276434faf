"""Discrete Laplace at tiny scales (attack 36b): below b ≈ 0.0267 tanh(1/(2b)) rounded to 1 and every draw was 0.

The sampler now draws Z ≠ 0 as U < p = 2t/(1 + t) (t = e^{−1/b}, U from ``uniform_open``) below ``TINY_SCALE``,
keeps the old draw (and its random stream) above it.
"""

from __future__ import annotations

import numpy as np
import pytest

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.mechanisms import noise


def _old_draw(seed: int, b: float, n: int) -> np.ndarray:
    """The sampler as it was (and still is above TINY_SCALE), written out."""
    rng = np.random.default_rng(seed)
    out = np.floor(noise.standard_exponential(rng, n) * b) + 1.0
    out *= rng.random(n) >= np.tanh(0.5 / b)
    out *= 1.0 - 2.0 * noise._signs(rng, n)
    return out


@pytest.mark.parametrize("b", [noise.TINY_SCALE, 0.3, 3.0, 1e4])
def test_above_the_tiny_scale_the_draws_are_unchanged(b):
    assert np.array_equal(noise.discrete_laplace(np.random.default_rng(5), b, 2_000), _old_draw(5, b, 2_000))


@pytest.mark.parametrize("b", [1 / 40, 1 / 100, 1 / 650])
def test_below_it_z_is_nonzero_exactly_when_the_uniform_is_under_p(b, monkeypatch):
    t = np.exp(-1.0 / b)
    p = 2 * t / (1 + t)
    assert p > 0
    for u, nonzero in ((p * (1 - 2.0**-20), True), (p * (1 + 2.0**-20), False)):
        monkeypatch.setattr(noise, "uniform_open", lambda rng, n, u=u: np.full(n, u))
        z = noise.discrete_laplace(np.random.default_rng(0), b, 16)
        assert bool(np.all(z != 0)) is nonzero and bool(np.any(z != 0)) is nonzero, (b, u, z)


def test_epsilon_40_laplace_can_release_a_value_other_than_the_truth(monkeypatch):
    """ε = 40 on a count (scale 1/40): the release x itself every time was attack 36b's infinite loss."""
    m, pol, W = mechanisms.Laplace(), policy.dp(Domain.grid(3)), workload.identity(3)
    x = np.array([1.0, 2.0, 3.0])
    monkeypatch.setattr(noise, "uniform_open", lambda rng, n: np.full(n, 1e-300))
    assert not np.array_equal(m.release(x, W, pol, 40.0, rng=0), x)


def test_the_tiny_branch_draws_the_discrete_laplace_law(monkeypatch):
    """The U < p branch, forced at b = 0.5 where p = 0.238 can be counted: P(Z ≠ 0) and P(|Z| ≥ 2 | Z ≠ 0) = t within
    4 standard errors (seed 1, 400,000 draws)."""
    monkeypatch.setattr(noise, "TINY_SCALE", 1.0)
    b, n = 0.5, 400_000
    z = noise.discrete_laplace(np.random.default_rng(1), b, n)
    t = np.exp(-1 / b)
    p = 2 * t / (1 + t)
    assert abs((z != 0).mean() - p) <= 4 * np.sqrt(p * (1 - p) / n)
    nz = np.abs(z[z != 0])
    q = (nz >= 2).mean()
    assert abs(q - t) <= 4 * np.sqrt(t * (1 - t) / nz.size)
    assert abs((z > 0).mean() - p / 2) <= 4 * np.sqrt(p / 2 * (1 - p / 2) / n)


def test_zero_scale_gives_zeros_and_a_huge_epsilon_still_releases():
    assert np.array_equal(noise.discrete_laplace(np.random.default_rng(0), 0.0, 4), np.zeros(4))
    z = noise.discrete_laplace(np.random.default_rng(0), np.array([1e-9, 2.0, 1e-3]), 3)
    assert np.all(z == np.round(z))
