"""H^θ written out (policy/htheta_tree.py, issue 28) against the generic constructions, on every small (k, θ)."""

import numpy as np
import pytest

from blowfish_nb import Domain, InvalidParameterError, policy, workload
from blowfish_nb.exceptions import PrivacyLeakWarning
from blowfish_nb.policy import Transform, transform
from blowfish_nb.policy.htheta_tree import htheta_edges, htheta_theta, htheta_tree, is_htheta
from tests.policy.htheta_reference import paper_htheta_edges
from blowfish_nb.policy.transform import HThetaTransform


def reference(k, theta):
    """H^θ through the checked path: the paper's edge list, normalised by Custom."""
    return policy.custom(Domain.grid(k), paper_htheta_edges(k, theta))


def test_edges_and_tree_equal_the_checked_construction():
    for k in range(2, 34):
        for theta in range(1, k + 3):
            ref = reference(k, theta)
            edges, red_of = htheta_edges(k, theta)
            assert edges.dtype == ref.edges().dtype and np.array_equal(edges, ref.edges()), (k, theta)
            cells = np.arange(k)
            assert np.array_equal(red_of, np.minimum(cells // theta * theta + theta - 1, k - 1))
            tree = htheta_tree(Domain.grid(k), theta)
            assert tree == ref and hash(tree) == hash(ref) and tree.has_bottom is False
            assert policy.spanning_tree(policy.threshold(Domain.grid(k), theta), "htheta") == ref
    with pytest.warns(PrivacyLeakWarning, match="no edge"):  # one cell: no edge, as the checked path says
        assert htheta_tree(Domain.grid(1), 3).edge_count() == 0


def test_recognition_is_exact():
    """htheta_theta finds a θ exactly when the graph is some H^θ (every θ tried by brute force); is_htheta agrees."""
    rng = np.random.default_rng(28)
    for k in range(3, 17):
        every = {theta: reference(k, theta) for theta in range(1, k + 2)}
        candidates = list(every.values()) + [policy.line(Domain.grid(k)),
                                             policy.spanning_tree(policy.threshold(Domain.grid(k), 3), "bfs"),
                                             policy.threshold(Domain.grid(k), 2),
                                             policy.custom(Domain.grid(k), [(i, i + 1) for i in range(k - 1)]
                                                           + [(k - 1, "⊥")])]
        perm = rng.permutation(k)  # a random relabelled path: a tree, but (almost never) H^θ
        candidates.append(policy.custom(Domain.grid(k), np.column_stack([perm[:-1], perm[1:]])))
        for g in candidates:
            matches = [theta for theta, h in every.items() if not g.has_bottom and g.same_graph(h)]
            found = htheta_theta(g)
            assert (found is None) == (not matches), (k, g.summary())
            if found is not None:
                assert found in matches
            assert [theta for theta in every if is_htheta(g, theta)] == matches
    assert htheta_theta(policy.line(Domain.grid(2))) is None  # k < 3: the generic transform


def test_transform_written_out_equals_the_generic_transform_bit_for_bit():
    """transform() of a tree that is H^θ (however built) is the written-out one; every array and x_H of whole counts
    equal the generic forest transform's bit for bit; non-whole or huge counts go to the generic transform."""
    rng = np.random.default_rng(28)
    for k in range(3, 20):
        for theta in sorted({1, 2, 3, 4, 5, 7, k - 1, k, k + 3}):
            tree = reference(k, theta)
            fast, generic = transform(tree), Transform(tree)
            assert isinstance(fast, HThetaTransform) and not isinstance(generic, HThetaTransform)
            assert fast.edges.dtype == generic.edges.dtype and np.array_equal(fast.edges, generic.edges)
            assert (fast.incidence != generic.incidence).nnz == 0 and fast.incidence.format == "csc"
            for name in ("roots", "component_of_cell", "_keep"):
                assert np.array_equal(getattr(fast, name), getattr(generic, name)), name
            assert fast.is_forest and fast.policy is tree
            for x in (rng.poisson(3, k).astype(float), rng.integers(-5, 6, k).astype(float), np.zeros(k),
                      rng.uniform(0, 3, k), np.full(k, 2.0**52)):
                want, got = generic.data(x), fast.data(x)
                assert np.array_equal(np.signbit(got), np.signbit(want)) and np.array_equal(got, want), (k, theta)
                P = workload.prefix(k)
                assert np.array_equal(fast.offset(P, x), generic.offset(P, x))
                assert np.allclose(fast.workload(P) @ got + fast.offset(P, x), P @ x)
    line = policy.line(Domain.grid(9))
    assert isinstance(transform(line), HThetaTransform)  # the line is H¹
    with pytest.raises(InvalidParameterError, match="x must be"):
        transform(reference(8, 2)).data(np.zeros(7))
