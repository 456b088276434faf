"""Threshold.projected_pairs, the closed form project() dispatches to, against the generic edge walk."""

import numpy as np
import pytest

from blowfish_nb import Domain, policy


def edge_set(pol):
    return {tuple(e) for e in pol.edges().tolist()}


def runs_partition(rng, k):
    """Block ids of a random partition of 0..k−1 into runs of consecutive cells, ids shuffled."""
    cuts = np.flatnonzero(rng.random(k - 1) < rng.uniform(0.1, 0.8)) + 1
    run_of = np.zeros(k, dtype=int)
    run_of[cuts] = 1
    run_of = np.cumsum(run_of)
    return rng.permutation(run_of.max() + 1)[run_of]  # blocks need not be numbered left to right


@pytest.mark.parametrize("seed", range(60))
def test_closed_form_equals_the_generic_projection_on_runs(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 25))
    theta = int(rng.integers(1, k + 2))
    pol = policy.threshold(Domain.grid(k), theta)
    block_of = runs_partition(rng, k)
    assert pol.projected_pairs(np.unique(block_of, return_inverse=True)[1], block_of.max() + 1) is not None
    fast = policy.project(pol, block_of)
    slow = policy.project(policy.custom(pol.domain, pol.edges()), block_of)  # Custom has no hook: every edge walked
    assert edge_set(fast.policy) == edge_set(slow.policy)
    assert fast.preserves_neighbours == slow.preserves_neighbours
    np.testing.assert_array_equal(fast.block_of, slow.block_of)


def test_hook_declines_split_blocks_and_grids_and_project_still_agrees():
    pol = policy.threshold(Domain.grid(6), 2)
    split = np.array([0, 1, 0, 1, 2, 2])  # blocks 0 and 1 are not runs
    assert pol.projected_pairs(split, 3) is None
    assert edge_set(policy.project(pol, split).policy) == edge_set(
        policy.project(policy.custom(pol.domain, pol.edges()), split).policy)
    assert policy.grid((3, 3), 1).projected_pairs(np.arange(9) // 3, 3) is None


def test_preserves_neighbours_exactly_when_joined_runs_are_within_theta():
    pol = policy.threshold(Domain.grid(8), 3)
    pairs = policy.project(pol, [0, 0, 1, 1, 2, 2, 3, 3])  # blocks of two cells
    assert pairs.preserves_neighbours is False  # blocks 0 and 2 are joined (4 − 1 ≤ 3) but cells 0 and 5 are not
    assert policy.project(pol, [0, 0, 1, 1, 1, 1, 1, 1]).preserves_neighbours is False
    assert policy.project(policy.threshold(Domain.grid(4), 3), [0, 0, 1, 1]).preserves_neighbours is True


def test_large_line_projects_without_walking_every_edge():
    pol = policy.threshold(Domain.grid(200_000), 5_000)  # 975 million edges: the walk would not finish here
    block_of = np.arange(200_000) * 64 // 200_000
    pr = policy.project(pol, block_of)
    # blocks of 3125 cells: θ = 5000 reaches the next two blocks (gap from block i's end to i+2's start: 3126)
    assert edge_set(pr.policy) == {(i, j) for i in range(64) for j in range(i + 1, min(64, i + 3))}
    assert pr.preserves_neighbours is False
