"""Policy-specific sensitivity by edge differences equals brute force over neighbouring databases."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from blowfish_nb import Domain, policy, workload
from tests.brute import brute_sensitivity


def domain(k):
    return Domain.from_column(pd.Series([0.0], name="v"), bins=k, bounds=(0, k))


def build(family, d, theta):
    return {"dp": lambda: policy.dp(d), "line": lambda: policy.line(d),
            "threshold": lambda: policy.threshold(d, theta)}[family]()


CASES = [(family, k, theta) for k in range(2, 13) for family, theta in
         [("dp", None), ("line", None), ("threshold", 2), ("threshold", 3), ("threshold", 5), ("threshold", 20)]]


@pytest.mark.parametrize("family,k,theta", CASES)
def test_structured_and_random_strategies_match_brute_force(family, k, theta):
    rng = np.random.default_rng(1000 * k + (theta or 0) + len(family))
    pol = build(family, domain(k), theta)
    strategies = {
        "identity": workload.identity(k),
        "prefix": workload.prefix(k),
        "dense": rng.normal(size=(k + 3, k)),
        "sparse": sp.random(2 * k, k, density=0.3, random_state=rng, format="csr"),
        "integer 0/1": rng.integers(0, 2, size=(k, k)).astype(float),
    }
    for name, A in strategies.items():
        dense = A.dense() if hasattr(A, "dense") else (A.toarray() if sp.issparse(A) else A)
        expected = brute_sensitivity(dense, k, family, theta, rng=k)
        assert pol.sensitivity(A) == pytest.approx(expected, rel=1e-12, abs=1e-12), name


def test_known_values_of_the_papers():
    d = domain(100)
    # He et al. 2014 §7.1: cumulative histogram has sensitivity 1 under the line graph,
    # θ under G^θ, and k under unbounded DP.
    assert policy.line(d).sensitivity(workload.prefix(100)) == 1
    assert policy.threshold(d, 7).sensitivity(workload.prefix(100)) == 7
    assert policy.dp(d).sensitivity(workload.prefix(100)) == 100
    # The histogram: 2 when a record moves between two cells, 1 when it appears or vanishes.
    assert policy.line(d).sensitivity(workload.identity(100)) == 2
    assert policy.dp(d).sensitivity(workload.identity(100)) == 1
    # θ beyond the domain saturates at the longest possible move.
    assert policy.threshold(domain(5), 50).sensitivity(workload.prefix(5)) == 4


def test_edges_follow_the_definition():
    d = domain(6)
    edges = {tuple(e) for e in policy.threshold(d, 2).edges().tolist()}
    assert edges == {(a, b) for a in range(6) for b in range(a + 1, 6) if b - a <= 2}
    assert policy.threshold(d, 2).edge_count() == 9
    dp_edges = policy.dp(d).edges()
    assert (dp_edges[:, 1] == policy.BOTTOM).all() and sorted(dp_edges[:, 0]) == list(range(6))


def test_strategy_with_wrong_number_of_columns_is_refused():
    from blowfish_nb import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="one column per cell"):
        policy.line(domain(5)).sensitivity(np.ones((3, 4)))


def test_networkx_view_has_the_same_edges():
    g = policy.dp(domain(4)).to_networkx()
    assert set(g.nodes) == {0, 1, 2, 3, "⊥"} and g.number_of_edges() == 4


def test_threshold_window_closed_form_equals_the_edge_scan_for_every_extreme_diameter_strategy():
    """G^θ on a line: Δ over the k − w windows [i, i + w] (Threshold.sensitivity) equals the edge-by-edge scan
    (Policy.sensitivity, the base class's) for every structured strategy that declares ``diameter_at_extremes``."""
    from blowfish_nb.operators import ColumnSlice, Identity, Prefix, Stack
    from blowfish_nb.policy.base import Policy
    from blowfish_nb.strategies.haar import Haar
    from blowfish_nb.strategies.trees import BlockTrees, Tree

    checked = 0
    for k in range(2, 19):
        strategies = [Identity(k), Prefix(k), Tree(k, 2), Tree(k, 3), Tree(k, 16),
                      Stack([Identity(k), Prefix(k), Tree(k, 2)], [1.0, 0.5, 2.0]), ColumnSlice(Prefix(k + 3), k)]
        strategies += [BlockTrees(k, b, 2) for b in (1, 2, 3, 5) if b <= k] + ([Haar(k)] if k & (k - 1) == 0 else [])
        for theta in (1, 2, 3, 4, 7, k - 1, k, k + 5):
            if theta < 1:
                continue
            pol = policy.threshold(domain(k), theta)
            for A in strategies:
                assert A.diameter_at_extremes
                assert pol.sensitivity(A) == Policy.sensitivity(pol, A), (k, theta, type(A).__name__)
                checked += 1
    assert checked > 1000


def test_threshold_range_segments_closed_form_equals_the_edge_scan():
    """Range workloads under G^θ (Threshold.sensitivity's segments of equal columns) against the edge scan, over
    random ranges (prefix-only ones take Ranges' own fast path) on small domains."""
    from blowfish_nb.policy.base import Policy
    from blowfish_nb.policy.threshold import _range_segments_sensitivity
    from blowfish_nb.ranges import Ranges

    rng = np.random.default_rng(28)
    taken = 0
    for _ in range(400):
        k = int(rng.integers(2, 25))
        q = int(rng.integers(1, 6))
        lo = rng.integers(0, k, q)
        hi = np.minimum(lo + rng.integers(0, k, q), k - 1)
        if rng.random() < 0.3:
            lo[:] = 0
        R = Ranges(k, lo, hi)
        theta = int(rng.integers(1, k + 3))
        pol = policy.threshold(domain(k), theta)
        assert pol.sensitivity(R) == Policy.sensitivity(pol, R), (k, theta, lo, hi)
        taken += _range_segments_sensitivity(R, theta, pol.edge_count()) is not None
    assert taken > 200  # the closed form, not the fallback, is what was compared
