"""x_G and W_G (Haney et al. §4.4, App. D, E) against dense linear algebra on small domains."""

import numpy as np
import pytest

from blowfish_nb import Domain, policy, workload
from tests.policy.test_families import CASES, IDS


@pytest.mark.parametrize("pol,spec,domain", CASES, ids=IDS)
def test_workload_on_transformed_data_equals_workload_on_data(pol, spec, domain):
    t = policy.transform(pol)
    rng = np.random.default_rng(domain.size)
    for _ in range(3):
        x = rng.poisson(5, size=domain.size).astype(float)
        W = rng.normal(size=(7, domain.size))
        np.testing.assert_allclose(t.workload(W) @ t.data(x) + t.offset(W, x), W @ x, atol=1e-8)
    # x_G is the minimum-norm solution of P' y = x' (dense pseudo-inverse, tests only)
    keep = np.ones(domain.size, dtype=bool)
    keep[t.roots] = False
    P = t.incidence.toarray()
    np.testing.assert_allclose(t.data(x), np.linalg.pinv(P[keep]) @ x[keep], atol=1e-8)


@pytest.mark.parametrize("pol,spec,domain", [c for c in CASES if c[0].has_bottom], ids=lambda c: str(c))
def test_case_one_incidence_has_rank_k(pol, spec, domain):
    t = policy.transform(pol)
    assert len(t.roots) == 0
    assert np.linalg.matrix_rank(t.incidence.toarray()) == domain.size


def tree_policies():
    out = [policy.line(Domain.grid(k)) for k in (2, 5, 9)]
    out += [policy.dp(Domain.grid(6))]
    out += [policy.spanning_tree(policy.threshold(Domain.grid(k), th), "htheta") for k, th in [(10, 3), (12, 4), (7, 2)]]
    out += [policy.spanning_tree(policy.grid((4, 4), 2), "red")]
    out += [policy.spanning_tree(policy.custom(Domain.grid(6), [(0, 1), (1, 2), (2, 0), (3, "⊥"), (4, 3)]), "bfs")]
    return out


@pytest.mark.parametrize("tree", tree_policies(), ids=lambda p: p.summary())
def test_lemma_4_7_trees_map_blowfish_neighbours_to_dp_neighbours(tree):
    """On a tree, moving a record along an edge changes x_G in exactly one entry, by exactly 1."""
    t = policy.transform(tree)
    assert t.is_forest
    rng = np.random.default_rng(3)
    x = rng.poisson(4, size=tree.domain.size).astype(float)
    base = t.data(x)
    for u, v in tree.edges():
        moved = x.copy()
        moved[u] -= 1
        if v >= 0:
            moved[v] += 1
        diff = t.data(moved) - base
        assert np.count_nonzero(np.abs(diff) > 1e-9) == 1 and np.abs(diff).sum() == pytest.approx(1.0)
    # and conversely every DP neighbour of x_G (one entry ±1) is the image of a Blowfish neighbour
    P = t.incidence.toarray()
    for j in range(len(base)):
        step = P[:, j]
        assert sorted(np.abs(step[step != 0]).tolist()) in ([1.0], [1.0, 1.0])


def test_non_tree_is_not_an_isometry():
    """A cycle (G^2 on 4 cells) has no exact Lemma 4.7 map: the solve path spreads a move over edges."""
    t = policy.transform(policy.threshold(Domain.grid(4), 2))
    assert not t.is_forest
    x = np.array([3.0, 1.0, 2.0, 5.0])
    moved = x + np.array([-1.0, 1.0, 0, 0])
    assert np.count_nonzero(np.abs(t.data(moved) - t.data(x)) > 1e-9) > 1


def test_cases_two_and_three_recover_answers_with_public_totals():
    x = np.array([4.0, 0.0, 3.0, 1.0, 2.0, 7.0])
    p = policy.partition(Domain.grid(6), [[0, 1, 2], [3, 4]])  # cell 5 privacy-agnostic
    t = policy.transform(p)
    assert t.roots.tolist() == [0, 3, 5]
    assert t.component_totals(x).tolist() == [7.0, 3.0, 7.0]
    W = workload.prefix(6)
    np.testing.assert_allclose(t.workload(W) @ t.data(x) + t.offset(W, x), W @ x)


def test_tree_fast_path_scales():
    k = 200_000
    t = policy.transform(policy.line(Domain.grid(k)))
    x = np.random.default_rng(0).poisson(3, size=k).astype(float)
    xg = t.data(x)
    # root 0: edge (i, i+1) carries minus the suffix sum beyond i
    np.testing.assert_allclose(xg, -np.cumsum(x[::-1])[::-1][1:])


@pytest.mark.parametrize("edges", [
    np.array([[i, i + 1] for i in range(11)]),                   # short edges: the windowed scan
    np.array([[0, 2], [1, 2], [2, 5], [3, 5], [4, 5], [5, 8], [6, 8], [7, 8], [8, 11], [9, 11], [10, 11]]),  # H^3
    np.array([[5, 2], [1, 2], [8, 11], [3, 5], [4, 5], [2, 5], [6, 8], [7, 9], [8, 11], [11, 9], [0, 1]]),  # unsorted
    np.array([[0, j] for j in range(1, 12)]),                   # a star: long edges, the direct count
    np.array([[i, -1] for i in range(12)] + [[2, 9], [0, 11]]),  # ⊥ edges and long ones
    np.array([[i, -1] for i in range(12)]),                     # the dp star: counted by sorted ends
    np.array([[i, -1] for i in (7, 0, 3, 3)]),                  # a partial star, unsorted, a repeat
])
def test_crossing_rows_and_counts_equal_dense_w_times_p(edges):
    """W·P_G by the definition (column e = e_u − e_v, ⊥ contributes nothing), for every range of 12 cells."""
    from blowfish_nb.policy.transform import crossing_counts, crossing_rows

    k = 12
    lo, hi = np.triu_indices(k)
    W = np.zeros((lo.size, k))
    for r, (a, b) in enumerate(zip(lo, hi)):
        W[r, a : b + 1] = 1
    P = np.zeros((k, len(edges)))
    for j, (u, v) in enumerate(edges):
        P[u, j] += 1
        if v >= 0:
            P[v, j] -= 1
    dense = W @ P
    assert np.array_equal(crossing_rows(lo, hi, edges, k).toarray(), dense)
    assert np.array_equal(crossing_counts(lo, hi, edges, k), (dense**2).sum(axis=1))


@pytest.mark.parametrize("tree", tree_policies(), ids=lambda p: p.summary())
def test_subtree_sums_by_running_sum_equal_the_triangular_solve(tree):
    """Issue 28: whole counts take x_G from one running sum in depth-first order; it equals, bit for bit, the
    triangular solve it replaced (still used for other x), on every tree family and on a grounded forest."""
    from scipy.sparse.linalg import spsolve_triangular

    t = policy.Transform(tree)  # the generic forest path (transform() writes H^θ out: tests/policy/test_htheta_tree.py)
    rng = np.random.default_rng(tree.domain.size)
    for x in (rng.poisson(4, size=tree.domain.size).astype(float), np.zeros(tree.domain.size),
              rng.integers(-3, 9, size=tree.domain.size).astype(float)):
        subtree = np.empty(t.k)
        subtree[t._order] = spsolve_triangular(t._tri, x[t._order], lower=False, unit_diagonal=True)
        np.testing.assert_array_equal(t.data(x), t._edge_sign * subtree[t._edge_child])
    real = rng.normal(size=tree.domain.size)  # not whole: the solve itself
    subtree = np.empty(t.k)
    subtree[t._order] = spsolve_triangular(t._tri, real[t._order], lower=False, unit_diagonal=True)
    np.testing.assert_array_equal(t.data(real), t._edge_sign * subtree[t._edge_child])


def test_subtree_runs_of_a_deep_tree():
    """H^θ at k = 2,000, θ = 4 is a chain of hubs ~k/θ deep: the running-sum x_G equals the solve's."""
    from scipy.sparse.linalg import spsolve_triangular

    t = policy.Transform(policy.spanning_tree(policy.threshold(Domain.grid(2000), 4), "htheta"))
    x = np.random.default_rng(5).poisson(3, size=2000).astype(float)
    subtree = np.empty(t.k)
    subtree[t._order] = spsolve_triangular(t._tri, x[t._order], lower=False, unit_diagonal=True)
    np.testing.assert_array_equal(t.data(x), t._edge_sign * subtree[t._edge_child])
