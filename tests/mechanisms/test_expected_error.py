"""Empirical per-query MSE over seeded runs agrees with the analytic expected error.

Tolerance: 3 standard errors of the Monte-Carlo mean (R = 2,000 runs).
"""

import zlib

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import Domain, mechanisms, policy, workload

RUNS = 2000
K = 24


def dlap_var(b):
    """Variance of the discrete Laplace law P(z) ∝ e^{−|z|/b}, from its series (independent of the package)."""
    t = np.exp(-1.0 / b)
    z = np.arange(1, 20_000)
    return 2 * np.sum(z**2 * t**z) * (1 - t) / (1 + t)


def domain(k):
    return Domain.from_column(pd.Series([0.0], name="v"), bins=k, bounds=(0, k))


POLICIES = {
    "dp": lambda d: policy.dp(d),
    "line": lambda d: policy.line(d),
    "threshold4": lambda d: policy.threshold(d, 4),
}
WORKLOADS = {"histogram": workload.identity, "cumulative": workload.prefix}


def per_run_mse(mech, W, pol, eps, x, seed):
    rng = np.random.default_rng(seed)
    truth = W @ x
    return np.array([np.mean((mech.release(x, W, pol, eps, rng=rng) - truth) ** 2) for _ in range(RUNS)])


@pytest.mark.parametrize("mech", [mechanisms.Laplace(), mechanisms.Ordered()], ids=lambda m: m.name)
@pytest.mark.parametrize("pol_name", list(POLICIES))
@pytest.mark.parametrize("query", list(WORKLOADS))
def test_monte_carlo_mse_within_three_standard_errors(mech, pol_name, query):
    d = domain(K)
    pol, W = POLICIES[pol_name](d), WORKLOADS[query](K)
    x = np.random.default_rng(7).poisson(30, size=K).astype(float)
    eps = 0.7
    mse = per_run_mse(mech, W, pol, eps, x, seed=zlib.crc32(f"{mech.name}/{pol_name}/{query}".encode()))
    expected = mech.expected_error(W, pol, eps)
    se = mse.std(ddof=1) / np.sqrt(RUNS)
    assert abs(mse.mean() - expected) <= 3 * se, (mse.mean(), expected, se)


def test_closed_forms():
    d = domain(10)
    eps = 0.5
    # Laplace histogram: the discrete Laplace variance 2t/(1−t)² (t = e^{−ε/Δ}) per cell, close to the
    # continuous 2 (Δ/ε)²; Δ = 1 under DP, 2 under the line graph.
    assert mechanisms.Laplace().expected_error(workload.identity(10), policy.dp(d), eps) == pytest.approx(dlap_var(2))
    assert mechanisms.Laplace().expected_error(workload.identity(10), policy.line(d), eps) == pytest.approx(dlap_var(4))
    assert abs(dlap_var(4) - 2 * 16) < 1 / 6 + 1e-3  # 2b² − 1/6 + O(1/b²)
    # Ordered cumulative: one noise term of scale θ/ε per prefix sum (He et al. 2014, §7.1).
    assert mechanisms.Ordered().expected_error(workload.prefix(10), policy.threshold(d, 3), eps) == pytest.approx(
        dlap_var(6)
    )


def test_consistency_never_increases_the_error():
    """Projection onto monotone non-negative prefix sums is non-expansive (the truth lies in the set)."""
    d = domain(K)
    pol, W = policy.threshold(d, 4), workload.prefix(K)
    x = np.random.default_rng(3).poisson(2, size=K).astype(float)
    truth = W @ x
    plain, consistent = mechanisms.Ordered(), mechanisms.Ordered(consistent=True)
    errs = []
    for seed in range(300):
        a = plain.release(x, W, pol, 0.5, rng=seed)
        b = consistent.release(x, W, pol, 0.5, rng=seed)  # same noise draw
        assert np.all(np.diff(b) >= -1e-9) and b[0] >= 0
        errs.append((np.sum((b - truth) ** 2), np.sum((a - truth) ** 2)))
    errs = np.array(errs)
    assert np.all(errs[:, 0] <= errs[:, 1] + 1e-9)
    assert errs[:, 0].mean() < 0.9 * errs[:, 1].mean()  # and it helps on sparse data


def test_same_seed_same_release_and_generator_is_advanced():
    d = domain(8)
    x = np.arange(8.0)
    m, W, pol = mechanisms.Laplace(), workload.identity(8), policy.line(d)
    np.testing.assert_array_equal(m.release(x, W, pol, 1.0, rng=5), m.release(x, W, pol, 1.0, rng=5))
    g = np.random.default_rng(5)
    assert not np.array_equal(m.release(x, W, pol, 1.0, rng=g), m.release(x, W, pol, 1.0, rng=g))
