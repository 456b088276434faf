"""Haney's H^θ range strategy (Alg. 1, Thm 5.5): each part against dense brute force."""

import numpy as np
import pytest

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.analysis import audit
from blowfish_nb.exceptions import InvalidParameterError, PolicyError
from blowfish_nb.mechanisms.htheta import _Plan
from blowfish_nb.policy.transform import crossing_rows as _crossing_edges
from blowfish_nb.ranges import all_ranges, random_ranges

CASES = [(12, 1), (12, 3), (13, 4), (16, 4), (21, 5)]


def _dense_strategy(plan, k):
    """S·T as a dense matrix over the cells: column c is the wavelet of x_H for one record at c."""
    cols = []
    for c in range(k):
        e = np.zeros(k)
        e[c] = 1.0
        X = plan.to_groups(plan.t.data(e))
        cols.append((X @ plan.A.T).reshape(-1))
    return np.array(cols).T


@pytest.mark.parametrize("k,theta", CASES)
def test_crossing_edges_equal_the_dense_transformed_ranges(k, theta):
    plan = _Plan(policy.threshold(Domain.grid(k), theta))
    R = all_ranges(k)
    got = _crossing_edges(R.lo, R.hi, plan.t.edges, k).toarray()
    assert np.array_equal(got, R.dense() @ plan.t.incidence.toarray())


@pytest.mark.parametrize("k,theta", CASES)
def test_exact_sensitivity_equals_brute_force_and_never_exceeds_the_papers(k, theta):
    g = policy.threshold(Domain.grid(k), theta)
    plan = _Plan(g)
    A = _dense_strategy(plan, k)
    e = g.edges()
    brute = max(np.abs(A[:, u] - A[:, v]).sum() for u, v in e)
    assert np.isclose(mechanisms.HThetaRanges().sensitivity(g), brute)
    assert brute <= mechanisms.HThetaRanges(budget="stretch").sensitivity(g) + 1e-9
    assert plan.stretch == (1 if theta == 1 else 3)


@pytest.mark.parametrize("k,theta", CASES)
def test_query_variances_equal_dense_least_squares(k, theta):
    g = policy.threshold(Domain.grid(k), theta)
    plan = _Plan(g)
    R = random_ranges(k, 50, rng=k)
    WH = R.dense() @ plan.t.incidence.toarray()
    # x_H in group layout: W_H = Wg · layout, least squares on the block-diagonal wavelet
    layout = np.zeros((len(plan.t.edges), plan.n_groups * plan.K))
    layout[np.arange(len(plan.t.edges)), plan.column] = plan.sign
    Wg = WH @ layout
    assert np.array_equal(plan.group_rows(R).toarray(), Wg)  # the relabelled columns equal the product exactly
    assert np.array_equal(plan.group_rows(workload.matrix(R.dense())).toarray(), Wg)
    S = np.kron(np.eye(plan.n_groups), plan.A)
    want = np.einsum("ij,jk,ik->i", Wg, np.linalg.pinv(S.T @ S), Wg)
    assert np.allclose(mechanisms.HThetaRanges().query_variances(R, g), want)


@pytest.mark.parametrize("k,theta", [(256, 1), (256, 4)])
def test_monte_carlo_error_matches_the_analytic_figure(k, theta):
    g = policy.threshold(Domain.grid(k), theta)
    m = mechanisms.HThetaRanges()
    R = random_ranges(k, 40, rng=1)
    x = np.arange(k, dtype=float) % 5
    draws = m.sample(x, R, g, 0.7, 20_000, rng=2)
    sq = np.mean((draws - R @ x) ** 2, axis=1)
    se = sq.std(ddof=1) / np.sqrt(sq.size)
    assert abs(sq.mean() - m.expected_error(R, g, 0.7)) < 3 * se
    # and release() draws from the same distribution as sample()
    one = np.stack([m.release(x, R, g, 0.7, rng=s) for s in range(400)])
    sq1 = np.mean((one - R @ x) ** 2, axis=1)
    assert abs(sq1.mean() - sq.mean()) < 3 * np.sqrt(sq1.var(ddof=1) / sq1.size + se**2)


@pytest.mark.parametrize("theta", [1, 4])
def test_audit_finds_no_violation_on_any_edge(theta):
    g = policy.threshold(Domain.grid(8), theta)
    R = random_ranges(8, 12, rng=0)
    result = audit(mechanisms.HThetaRanges(), g, 1.0, workload=R, samples=8_000, edges=len(g.edges()), rng=3)
    assert not result.violation, str(result)


def test_htheta_beats_dp_privelet_on_ranges():
    k = 1024
    R = random_ranges(k, 2000, rng=0)
    blow = mechanisms.HThetaRanges().expected_error(R, policy.threshold(Domain.grid(k), 4), 1.0)
    dp = mechanisms.Privelet().expected_error(R, policy.dp(Domain.grid(k)), 0.5)
    assert blow * 5 < dp


def test_rejects_other_policies_and_budgets():
    with pytest.raises(PolicyError, match="G\\^θ"):
        mechanisms.HThetaRanges().sensitivity(policy.dp(Domain.grid(8)))
    with pytest.raises(InvalidParameterError, match="budget"):
        mechanisms.HThetaRanges(budget="loose")


@pytest.mark.parametrize("k,theta", [(200, 5), (203, 7), (130, 16), (97, 2)])
def test_window_edges_give_the_sensitivity_and_stretch_of_all_edges(k, theta):
    from blowfish_nb.policy import stretch

    g = policy.threshold(Domain.grid(k), theta)
    plan = _Plan(g)
    assert plan.exact_sensitivity() == plan.exact_sensitivity(every_edge=True)
    assert plan.stretch == stretch(g, plan.tree)


def test_window_edges_are_the_policy_edges_near_either_end():
    """The directly built window (issue 28: no scan of all kθ edges) is the filter of every edge it replaced."""
    import numpy as np

    from blowfish_nb import Domain, policy
    from blowfish_nb.mechanisms.htheta import HThetaRanges

    for k, theta in ((5, 1), (9, 2), (40, 3), (100, 7), (64, 16)):
        plan = HThetaRanges().plan(policy.threshold(Domain.grid(k), theta))
        got = {(int(a), int(b)) for u, v in plan.window_edges() for a, b in zip(u, v)}
        want = {(int(a), int(b)) for u, v in plan.policy.edge_chunks() for a, b in zip(u, v)
                if min(a, b) < 3 * theta or min(a, b) >= k - 4 * theta}
        assert got == want, (k, theta)


def test_a_plan_is_built_once_per_k_and_theta_and_equals_a_fresh_one():
    """Issue 28: one quote asked for the plan three times (each a spanning tree, a transform, the paths)."""
    import numpy as np

    from blowfish_nb import Domain, policy, workload
    from blowfish_nb.mechanisms import htheta
    from blowfish_nb.mechanisms.htheta import HThetaRanges, _Plan

    m = HThetaRanges()
    a = policy.threshold(Domain.grid(60), 3)
    b = policy.threshold(Domain.from_column(__import__("pandas").Series([0.0], name="v"), bins=60, bounds=(0, 60)), 3)
    assert m.plan(a) is m.plan(b)  # same k and θ: one plan, whatever the column
    assert m.plan(policy.threshold(Domain.grid(60), 4)) is not m.plan(a)
    fresh = _Plan(a)
    cached = m.plan(a)
    for name in ("A", "V", "column", "group", "pos", "sign"):
        assert np.array_equal(getattr(cached, name), getattr(fresh, name)), name
    assert cached.stretch == fresh.stretch and cached.exact_sensitivity() == fresh.exact_sensitivity()
    assert cached.sensitivity() == cached.exact_sensitivity() == m.sensitivity(a)  # computed once, then recalled
    W = workload.prefix(60)
    assert m.expected_error(W, b, 1.0) == m.expected_error(W, a, 1.0)
    assert len(htheta._PLANS) <= htheta.PLANS_REMEMBERED


def test_written_out_tree_equals_the_generic_constructions():
    """Issue 28 (cold k = 10⁶ plan): the plan's H^θ, transform, parents, depths and up-edges written out in closed
    form equal the generic spanning tree, transform and tree searches, array for array (the transform itself is
    compared bit for bit in tests/policy/test_htheta_tree.py)."""
    from blowfish_nb.mechanisms.htheta import _HThetaPaths, _Plan, _TreePaths
    from blowfish_nb.policy import Transform, spanning_tree
    from blowfish_nb.policy.htheta_tree import htheta_edges
    from tests.policy.htheta_reference import paper_htheta_edges
    from blowfish_nb.policy.transform import HThetaTransform

    for k in range(3, 27):
        for theta in sorted({1, 2, 3, 4, 5, 7, k - 1, k, k + 3}):
            g = policy.threshold(Domain.grid(k), theta)
            generic = Transform(policy.custom(Domain.grid(k), paper_htheta_edges(k, theta)))
            plan = _Plan(g)
            assert isinstance(plan.t, HThetaTransform)
            assert plan.tree == spanning_tree(g, "htheta") and np.array_equal(plan.t.edges, generic.edges)
            x = np.arange(k, dtype=float)
            assert np.array_equal(plan.t.data(x), generic.data(x))
            slow, paths = _TreePaths(generic.edges, k), _HThetaPaths(theta, htheta_edges(k, theta))
            for name in ("pred", "depth", "up_edge"):
                assert np.array_equal(getattr(paths, name), getattr(slow, name)), (k, theta, name)
            u, v = np.triu_indices(k, 1)
            for a, b in zip(slow.between(u, v), paths.between(u, v)):
                assert np.array_equal(a, b)


def test_written_out_groups_equal_their_definition():
    """The groups and places of H^θ's edges written out (issue 28) equal the rank-and-sort definition."""
    from blowfish_nb.mechanisms.htheta import _generic_groups, _htheta_groups
    from blowfish_nb.policy.htheta_tree import htheta_edges as _htheta_lower_upper

    for k in range(3, 40):
        for theta in sorted({1, 2, 3, 4, 5, 7, k - 2, k - 1, k, k + 3} - {0}):
            edges, _ = _htheta_lower_upper(k, theta)
            group, pos, _ = _generic_groups(edges)
            got_group, got_pos = _htheta_groups(k, theta)
            assert np.array_equal(got_group, group) and np.array_equal(got_pos, pos), (k, theta)
