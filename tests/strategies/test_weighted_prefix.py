"""Prefix sums with optimised row weights (issue 16): Δ, error and noise against brute force and dense algebra."""

import numpy as np
import pytest

from blowfish_nb import Domain, policy
from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.mechanisms import noise
from blowfish_nb.mechanisms.gram import bucket_gram
from blowfish_nb.mechanisms.partition_first import bucket_strategies, measure_buckets, prefix_costs
from blowfish_nb.policy import project
from blowfish_nb.ranges import random_ranges
from blowfish_nb.strategies.weighted_prefix import WeightedPrefix, edge_rows, optimize_weights
from tests.brute import brute_edges, brute_sensitivity_edges

K = 12
POLICIES = {
    "line": (lambda d: policy.line(d), ("threshold", {"theta": 1}), False),
    "threshold3": (lambda d: policy.threshold(d, 3), ("threshold", {"theta": 3}), False),
    "dp": (lambda d: policy.dp(d), ("dp", {}), True),
}


@pytest.mark.parametrize("name", list(POLICIES))
def test_sensitivity_and_error_of_optimised_weights_against_brute_force(name):
    make, spec, bottom = POLICIES[name]
    d = Domain.grid(K)
    pol = make(d)
    W = random_ranges(K, 30, rng=4).dense()
    M = W.T @ W
    A = optimize_weights(prefix_costs(M), pol)
    dense = A.dense()
    brute = brute_sensitivity_edges(dense, brute_edges(spec, d, bottom=bottom))
    assert pol.sensitivity(A) == brute  # exact: weights are multiples of 2^-20, sums exact in float64
    assert brute <= 1.0
    assert np.all(A.weights * 2**20 == np.round(A.weights * 2**20))
    err = float(np.sum(prefix_costs(M) / A.weights**2))
    assert err == pytest.approx(float(np.trace(W @ np.linalg.inv(dense.T @ dense) @ W.T)), rel=1e-6)  # the dense inverse: condition ≈ 1e6
    # never worse than unweighted prefix sums (Δ² · error, scale free)
    plain = pol.sensitivity(WeightedPrefix(np.ones(K)))
    assert brute**2 * err <= plain**2 * float(np.sum(prefix_costs(M))) * (1 + 1e-9)


def test_operator_matches_its_dense_form_and_refuses_bad_weights():
    A = WeightedPrefix([0.5, 2.0, 1.0, 0.25])
    x, y = np.arange(4.0), np.array([1.0, -2.0, 0.5, 3.0])
    assert np.allclose(A @ x, A.dense() @ x) and np.allclose(A.T @ y, A.dense().T @ y)
    u, v = np.array([0, 3, 1]), np.array([2, 0, 1])
    assert np.allclose(A.column_differences(u, v), np.abs(A.dense()[:, u] - A.dense()[:, v]).sum(axis=0))
    assert np.allclose(A.column_norms(u), np.abs(A.dense()[:, u]).sum(axis=0))
    for bad in ([], [1.0, 0.0], [1.0, np.nan], [-1.0]):
        with pytest.raises(InvalidParameterError, match="weights"):
            WeightedPrefix(bad)
    lo, hi = edge_rows(policy.dp(Domain.grid(3)))
    assert sorted(zip(lo.tolist(), hi.tolist())) == [(0, 3), (1, 3), (2, 3)]  # to ⊥: every later row


def test_weights_beat_plain_prefix_sums_on_narrow_buckets_and_the_measured_error_is_the_analytic_one():
    """Buckets narrower than θ in one place only: plain prefix sums pay Δ = 4 on every row, the weights
    only where the narrow buckets are. Over 1,500 draws, the mean total squared error of W·E·t̂ is
    Σ_i c_i · Var(DLap(Δ/(ε w_i))) within 3 standard errors."""
    k, eps = 40, 0.5
    sizes = np.array([8, 1, 1, 1, 1, 4, 8, 8, 8])
    blocks = np.repeat(np.arange(sizes.size), sizes)
    x = np.random.default_rng(0).poisson(4, k).astype(float)
    W = random_ranges(k, 200, rng=3)
    g = policy.threshold(Domain.grid(k), 4)
    opts = bucket_strategies(bucket_gram(W, np.r_[0, np.cumsum(sizes)[:-1]]), project(g, blocks).policy,
                             optimize_buckets=0)
    score = {name: delta**2 * err for name, (_, delta, err, _) in opts.items()}
    assert min(score, key=score.get) == "weighted prefix"
    assert score["weighted prefix"] < 0.5 * score["ordered"]
    _, delta, _, A = opts["weighted prefix"]
    c = prefix_costs(bucket_gram(W, np.r_[0, np.cumsum(sizes)[:-1]]))
    want = float(np.sum(c * noise.variance(delta / (eps * A.weights))))
    centre = W @ (np.bincount(blocks, weights=x) / sizes)[blocks]
    rng = np.random.default_rng(11)
    errs = np.array([np.sum((measure_buckets(x, blocks, W, g, eps, rng, options=opts) - centre) ** 2)
                     for _ in range(1500)])
    assert abs(errs.mean() - want) < 3 * errs.std(ddof=1) / np.sqrt(errs.size)
