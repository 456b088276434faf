"""Spanning trees and exact stretch against networkx shortest paths."""

import math

import networkx as nx
import numpy as np
import pytest

from blowfish_nb import Domain, PolicyError, policy


def brute_stretch(g, tree):
    t = tree.to_networkx()
    best = 0
    for u, v in g.edges():
        a, b = int(u), ("⊥" if v < 0 else int(v))
        try:
            best = max(best, nx.shortest_path_length(t, a, b))
        except nx.NetworkXNoPath:
            return math.inf
    return best


@pytest.mark.parametrize("k", range(2, 25))
def test_htheta_is_a_spanning_tree_with_stretch_at_most_three(k):
    for theta in range(1, k + 2):
        g = policy.threshold(Domain.grid(k), theta)
        t = policy.spanning_tree(g, "htheta")
        assert t.is_tree() and t.edge_count() == k - 1
        s = policy.stretch(g, t)
        assert s == brute_stretch(g, t) and s <= 3


@pytest.mark.parametrize("shape,theta", [((4, 4), 1), ((4, 4), 2), ((6, 5), 4), ((5, 5), 3), ((3, 3, 3), 3)])
def test_red_vertex_tree_and_graph(shape, theta):
    g = policy.grid(shape, theta)
    t = policy.spanning_tree(g, "red")
    assert t.is_tree()
    assert policy.stretch(g, t) == brute_stretch(g, t)
    h = policy.red_vertex_graph(g)
    assert len(h.components()) == 1
    # the paper's red graph: each non-red cell has one edge to its corner, red cells form a grid
    assert h.edge_count() >= t.edge_count()


@pytest.mark.parametrize("seed", range(15))
def test_bfs_tree_of_random_graphs(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 12))
    edges = [tuple(e) for e in rng.integers(0, k, size=(2 * k, 2)).tolist() if e[0] != e[1]]
    if rng.random() < 0.5:
        edges += [(int(rng.integers(k)), "⊥")]
    g = policy.custom(Domain.grid(k), edges, bottom=rng.random() < 0.5 or None)
    t = policy.spanning_tree(g, "bfs")
    assert len(t.components()) == len(g.components())
    assert policy.stretch(g, t) == brute_stretch(g, t)


def test_stretch_refuses_non_forests():
    g = policy.threshold(Domain.grid(5), 2)
    with pytest.raises(PolicyError, match="not a forest"):
        policy.stretch(g, g)


def test_htheta_stretch_closed_form_is_taken_and_equals_the_edge_by_edge_stretch():
    """The closed form (issue 28) recognises H^θ and equals the LCA stretch over every edge; other trees fall through."""
    from blowfish_nb.policy.spanning import _edge_stretch, _htheta_stretch

    for k in range(2, 34):  # every (k, θ) to k = 33: each block layout (m = 1, 2, ≥ 3 blocks, short last block)
        for theta in range(1, k + 3):
            g = policy.threshold(Domain.grid(k), theta)
            t = policy.spanning_tree(g, "htheta")
            closed = _htheta_stretch(g, t)
            assert closed is not None and closed == _edge_stretch(g, t), (k, theta)
            if theta > 1 and k > 3:
                bfs = policy.spanning_tree(g, "bfs")
                assert _htheta_stretch(g, bfs) is None or bfs.edges().tolist() == t.edges().tolist()
    line = policy.line(Domain.grid(6))
    assert _htheta_stretch(policy.threshold(Domain.grid(6), 2), line) is None  # the line is not H^2
    for k, theta in ((7, 3), (12, 4)):  # H^θ given edge by edge (checked path) is recognised as well
        g = policy.threshold(Domain.grid(k), theta)
        by_hand = policy.custom(Domain.grid(k), [tuple(e) for e in policy.spanning_tree(g, "htheta").edges().tolist()])
        assert _htheta_stretch(g, by_hand) == _edge_stretch(g, by_hand)
