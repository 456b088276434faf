"""Partition-first histograms: the matching step against brute force, privacy checked, every policy family."""

import itertools
import math

import numpy as np
import pytest
from scipy.stats import beta

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.analysis import audit
from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.mechanisms.partition_first import candidate_pairs, matching_partition


def _partitions(k, pairs):
    """Every partition of 0..k-1 into singletons and candidate pairs."""
    pairs = [tuple(p) for p in pairs]
    for r in range(0, k // 2 + 1):
        for chosen in itertools.combinations(pairs, r):
            cells = [c for p in chosen for c in p]
            if len(set(cells)) == len(cells):
                yield chosen


def _cost(x, chosen, eps2):
    singles = len(x) - 2 * len(chosen)
    return sum(abs(x[i] - x[j]) + 1 / eps2 for i, j in chosen) + singles / eps2


def test_noiseless_matching_is_the_least_cost_partition():
    rng = np.random.default_rng(0)
    for _ in range(30):
        k = int(rng.integers(2, 8))
        x = rng.integers(0, 6, size=k).astype(float)
        pairs = np.array([(i, j) for i in range(k) for j in range(i + 1, k) if rng.random() < 0.6] or [(0, 1)])
        eps2 = float(rng.choice([0.3, 1.0, 3.0]))
        best = min(_cost(x, c, eps2) for c in _partitions(k, pairs))
        blocks = matching_partition(x, pairs, 1e12, eps2, np.random.default_rng(1))
        chosen = [tuple(np.flatnonzero(blocks == b)) for b in range(blocks.max() + 1) if (blocks == b).sum() == 2]
        assert all(tuple(sorted(c)) in {tuple(sorted(p)) for p in pairs.tolist()} for c in chosen)
        assert math.isclose(_cost(x, chosen, eps2), best, rel_tol=1e-9, abs_tol=1e-9)


def test_matching_step_is_epsilon_dp_empirically():
    """Partition frequencies on x and x' (one count +1) stay within e^ε (Clopper–Pearson, 99%)."""
    eps, n = 1.0, 6000
    pairs = np.array([[0, 1], [1, 2], [2, 3], [0, 2]])
    x = np.array([2.0, 3.0, 1.0, 2.0])
    x1 = x.copy()
    x1[1] += 1
    freq = []
    for data, seed in ((x, 0), (x1, 1)):
        rng = np.random.default_rng(seed)
        counts = {}
        for _ in range(n):
            key = tuple(matching_partition(data, pairs, eps, 1.0, rng))
            counts[key] = counts.get(key, 0) + 1
        freq.append(counts)
    keys = set(freq[0]) | set(freq[1])
    a = 0.01 / (2 * len(keys))
    worst = 0.0
    for key in keys:
        for num, den in ((freq[0].get(key, 0), freq[1].get(key, 0)), (freq[1].get(key, 0), freq[0].get(key, 0))):
            if num:
                lo = beta.ppf(a, num, n - num + 1)
                hi = beta.ppf(1 - a, den + 1, n - den) if den < n else 1.0
                worst = max(worst, math.log(lo / hi))
    assert len(keys) >= 3 and worst <= eps


POLICIES = {
    "line": lambda d: policy.line(d),
    "threshold": lambda d: policy.threshold(d, 3),
    "dp": lambda d: policy.dp(d),
    "partition": lambda d: policy.partition(d, [list(range(0, 16)), list(range(16, 32))]),
    "custom": lambda d: policy.custom(d, [(i, i + 2) for i in range(30)]),
}


@pytest.mark.parametrize("partitioner", ["dawa", "matching"])
@pytest.mark.parametrize("pol", list(POLICIES))
def test_recovers_the_histogram_at_huge_epsilon_under_every_family(partitioner, pol):
    d = Domain.grid(32)
    x = np.r_[np.zeros(10), np.full(12, 7.0), np.arange(10.0)]
    est = mechanisms.PartitionFirst(partitioner).release(x, workload.identity(32), POLICIES[pol](d), 1e9, rng=0)
    np.testing.assert_allclose(est, x, atol=1e-3)


def test_grid_policy_and_beats_laplace_on_flat_data():
    d = Domain.grid((8, 8))
    x = np.r_[np.zeros(32), np.full(32, 30.0)]
    g = policy.grid((8, 8), 1)
    errs = {"pf": [], "lap": []}
    for seed in range(20):
        errs["pf"].append(np.mean((mechanisms.PartitionFirst().release(x, workload.identity(64), g, 0.2, rng=seed) - x) ** 2))
        errs["lap"].append(np.mean((mechanisms.Laplace().release(x, workload.identity(64), g, 0.2, rng=seed) - x) ** 2))
    pf, lap = np.array(errs["pf"]), np.array(errs["lap"])
    assert pf.mean() + 3 * pf.std(ddof=1) / np.sqrt(pf.size) < lap.mean()


def test_only_the_histogram_and_good_parameters():
    d = Domain.grid(8)
    with pytest.raises(InvalidParameterError, match="histogram"):
        mechanisms.PartitionFirst().release(np.ones(8), workload.prefix(8), policy.line(d), 1.0)
    with pytest.raises(InvalidParameterError, match="partitioner"):
        mechanisms.PartitionFirst("kmeans")
    with pytest.raises(InvalidParameterError, match="split"):
        mechanisms.PartitionFirst(split=1.0)


def test_candidate_pairs_are_data_independent():
    d = Domain.grid(6)
    assert candidate_pairs(policy.line(d)).tolist() == [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5]]
    assert candidate_pairs(policy.dp(d), window=2).tolist() == [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5],
                                                                [0, 2], [1, 3], [2, 4], [3, 5]]


@pytest.mark.parametrize("partitioner", ["dawa", "matching"])
def test_audit_finds_no_violation(partitioner):
    g = policy.line(Domain.grid(4))
    result = audit(mechanisms.PartitionFirst(partitioner), g, 1.0, samples=1000, edges=2, rng=7)
    assert not result.violation, str(result)
