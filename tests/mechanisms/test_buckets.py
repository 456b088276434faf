"""DAWA's two stages for Blowfish policies (issue 25): mechanisms/buckets.py."""

import numpy as np
import pytest

from blowfish_nb import Domain, mechanisms, policy
from blowfish_nb.analysis.hunt import hunt, partition_probe
from blowfish_nb.mechanisms.buckets import dawa_options, dawa_measure, private_blocks
from blowfish_nb.mechanisms.dawa import RATIO, partition_starts
from blowfish_nb.policy import project
from blowfish_nb.ranges import random_ranges


def _custom_with_bottom():
    line8 = Domain.grid(8)
    return policy.custom(line8, [(0, 1), (1, 2), (2, 3), (3, 0), (1, 5), (4, 5), (5, 6), (6, 7), (7, "⊥")])


@pytest.mark.parametrize("eps", [0.05, 1.0])
def test_partition_is_dp_dawas_at_half_epsilon(eps):
    # same draws: the Blowfish partition under G¹ is DP DAWA's at ε/2 (ε₁/2 = ratio·ε/2, θ = 2/ε₂)
    x = np.random.default_rng(1).poisson(3, 256).astype(float)
    x[100:180] = 0
    blocks = private_blocks(x, policy.line(Domain.grid(256)), RATIO * eps, (1 - RATIO) * eps, np.random.default_rng(5))
    starts = partition_starts(x, RATIO * eps / 2, 1.0 / ((1 - RATIO) * eps / 2), np.random.default_rng(5),
                              ends=True)  # DP DAWA on a 1-D domain tests the end cells apart, so does the Blowfish one
    assert np.array_equal(np.r_[0, np.flatnonzero(np.diff(blocks)) + 1], starts)


def test_greedy_option_has_delta_at_most_two_and_transformed_uses_the_line_over_buckets():
    pol = policy.threshold(Domain.grid(64), 4)
    blocks = np.repeat(np.arange(32), 2)  # buckets of 2 cells: G′ joins buckets up to 2 apart
    proj = project(pol, blocks)
    W = random_ranges(64, 40, rng=2)
    from blowfish_nb.mechanisms.buckets import bucket_gram_of

    opts = dawa_options(bucket_gram_of(W, proj, np.bincount(proj.block_of)), proj.policy)
    assert opts["greedy"][1] <= 2.0
    assert opts["transformed"][1] == 2  # the line over the buckets: an edge spans at most 2 buckets


def test_measure_is_exact_without_noise_on_bucket_constant_data():
    pol = policy.threshold(Domain.grid(32), 4)
    x = np.repeat([3.0, 0.0, 7.0, 1.0], 8)
    W = random_ranges(32, 30, rng=4)
    est = dawa_measure(x, np.repeat(np.arange(4), 8), W, pol, 1e7, np.random.default_rng(0))
    assert np.allclose(W @ est, W @ x, atol=0.05)


def test_one_bucket_without_bottom_releases_the_public_total():
    pol = policy.line(Domain.grid(16))
    x = np.arange(16.0)
    est = dawa_measure(x, np.zeros(16, dtype=int), random_ranges(16, 5, rng=0), pol, 1.0, np.random.default_rng(0))
    assert np.allclose(est, x.sum() / 16)


@pytest.mark.parametrize("mech", [mechanisms.Transformed(inner="dawa"), mechanisms.PartitionFirst()], ids=repr)
def test_partitions_pass_the_hunter_under_a_custom_graph_with_bottom(mech):
    pol = _custom_with_bottom()
    probe = partition_probe(mech, pol, 1.0 / mech.partition_epsilon(1.0))
    result = hunt(probe, pol, rng=21, bases=4, pairs=8, pilot=2_000, confirm=8_000, candidates=2)
    assert not result.violation, str(result)


@pytest.mark.parametrize("mech", [mechanisms.PartitionFirst(), mechanisms.Transformed(inner="dawa")], ids=repr)
def test_histogram_releases_start_the_bias_where_dp_dawa_does(mech, monkeypatch):
    # the histogram release partitions with DP DAWA's histogram offset ⌊D/2⌋ (public), ranges with 0
    from blowfish_nb import workload
    from blowfish_nb.mechanisms import dawa as dawa_mod

    seen = []
    real = dawa_mod.privtree_partition

    def spy(*args, offset=0, **kwargs):
        seen.append(offset)
        return real(*args, offset=offset, **kwargs)

    monkeypatch.setattr(dawa_mod, "privtree_partition", spy)
    x = np.r_[np.zeros(40), np.full(24, 9.0)]
    pol = policy.line(Domain.grid(64))
    mech.release(x, workload.identity(64), pol, 1.0, rng=0)
    assert seen == [dawa_mod.histogram_offset(workload.identity(64), 64)] == [3]
    if isinstance(mech, mechanisms.Transformed):
        seen.clear()
        mech.release(x, workload.prefix(64), pol, 1.0, rng=0)
        assert seen == [0]
