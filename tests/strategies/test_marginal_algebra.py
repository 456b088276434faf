"""The weighted-marginals algebra (strategies/marginal_weights.py) against dense linear algebra, by brute force.

AᵀA = Σ_T λ_T Q_T, its pseudo-inverse, A⁺ and tr(WᵀW (AᵀA)⁺) in closed form,
with weights that are exactly 0 (rank-deficient strategies); the gradient
against finite differences; the fitted weights reach 0 exactly where the
workload does not need a marginal.
"""

import itertools

import numpy as np
import pytest

from blowfish_nb import Domain, policy, workload
from blowfish_nb.operators import Stack
from blowfish_nb.strategies import marginal_weights as mw
from blowfish_nb.strategies.optimized import DenseFactor, _edge_groups, _gram_error, _terms

SHAPES = [(2, 3), (3, 2, 2), (4, 3)]


def _theta(shape, seed):
    rng = np.random.default_rng(seed)
    theta = rng.random(2 ** len(shape))
    theta[rng.random(theta.size) < 0.4] = 0.0  # some weights exactly 0
    theta[0] = 0.0 if seed % 2 else theta[0]
    return theta


def _workload(shape, theta):
    """A workload in the row space: random combinations of the marginals the weights keep."""
    rng = np.random.default_rng(1)
    rows = [rng.random((3, mw.marginal_matrix(shape, S).shape[0])) @ mw.marginal_matrix(shape, S)
            for t, S in zip(theta, mw.subsets(len(shape))) if t > 0]
    return np.vstack(rows)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", range(4))
def test_eigenvalues_pinv_and_trace_are_the_dense_ones(shape, seed):
    theta = _theta(shape, seed)
    if not theta.any():
        theta[-1] = 0.5
    A, Ap, N = mw.marginal_strategy(shape, theta)
    dense = np.vstack([t * mw.marginal_matrix(shape, S) for t, S in zip(theta, mw.subsets(len(shape))) if t])
    np.testing.assert_allclose(A, dense)
    np.testing.assert_allclose(Ap, np.linalg.pinv(A), atol=1e-10)
    np.testing.assert_allclose(N, np.linalg.pinv(A.T @ A), atol=1e-9)
    lam = mw.eigenvalues(theta, shape)
    expected = np.sort(np.linalg.eigvalsh(A.T @ A))
    mult = [int(np.prod([n - 1 if i in T else 1 for i, n in enumerate(shape)])) for T in mw.subsets(len(shape))]
    np.testing.assert_allclose(np.sort(np.repeat(lam, mult)), expected, atol=1e-9)
    W = _workload(shape, theta)
    G = W.T @ W
    c = np.array([np.sum(G * _Q(shape, T)) for T in mw.subsets(len(shape))])
    c[np.abs(c) < 1e-9 * np.abs(c).max()] = 0.0  # the dense traces' rounding where the exact one is 0
    assert mw.trace_error(theta, c, shape) == pytest.approx(np.trace(G @ np.linalg.pinv(A.T @ A)), rel=1e-9)
    assert _gram_error(G, DenseFactor(A, Ap, N)) == pytest.approx(np.trace(G @ N), rel=1e-9)


def _Q(shape, T):
    out = np.ones((1, 1))
    for i, n in enumerate(shape):
        P1 = np.full((n, n), 1.0 / n)
        out = np.kron(out, np.eye(n) - P1 if i in T else P1)
    return out


def test_a_workload_outside_the_row_space_has_no_finite_error():
    shape = (2, 3)
    theta = np.array([0.0, 1.0, 1.0, 0.0])  # the two 1-way marginals: rank 4 of 6
    A, Ap, N = mw.marginal_strategy(shape, theta)
    G = np.eye(6)  # the identity workload needs the full marginal
    c = np.array([np.sum(G * _Q(shape, T)) for T in mw.subsets(2)])
    assert mw.trace_error(theta, c, shape) == np.inf
    assert _gram_error(G, DenseFactor(A, Ap, N)) == np.inf


@pytest.mark.parametrize("seed", range(3))
def test_objective_gradient_is_the_finite_difference(seed):
    shape = (3, 2, 4)
    rng = np.random.default_rng(seed)
    theta = 0.2 + rng.random(8)
    c = rng.random(8)
    f, g = mw.objective(theta, c, shape)
    assert f == pytest.approx(mw.trace_error(theta, c, shape))
    h = 1e-6
    num = np.array([(mw.objective(theta + h * e, c, shape)[0] - mw.objective(theta - h * e, c, shape)[0]) / (2 * h)
                    for e in np.eye(8)])
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-9 * np.abs(num).max())


def test_workload_traces_are_the_dense_traces():
    shape = (3, 4)
    W = Stack([workload.marginal(shape, [0]), workload.identity(12), workload.marginal(shape, [1])], [1.0, 0.5, 2.0])
    terms = _terms(W, shape)
    G = mw.workload_gram(terms, shape)
    c = mw.workload_traces(terms, shape)
    np.testing.assert_allclose(c, [np.sum(G * _Q(shape, T)) for T in mw.subsets(2)], atol=1e-9)


def test_two_way_marginals_need_no_identity_and_get_none():
    """8³ under DP: the identity's weight is exactly 0 (the old floor of 1e-3 cost 0.2 %), the error finite and exact.

    (On small axes the identity alone wins: a 2-way cell of 4×3×3 sums only 3 or 4 cells.)
    """
    shape = (8, 8, 8)
    W = Stack([workload.marginal(shape, list(p)) for p in itertools.combinations(range(3), 2)], [1.0] * 3)
    terms = _terms(W, shape)
    pol = policy.dp(Domain.grid(shape))
    theta = mw.fit_marginals(terms, shape, _edge_groups(pol), 300)
    assert theta[-1] == 0.0
    np.testing.assert_allclose(theta, [0, 0, 0, 0, 1 / 3, 1 / 3, 1 / 3, 0], atol=1e-6)  # equal 2-way weights
    A, Ap, N = mw.marginal_strategy(shape, theta)
    assert pol.sensitivity(A) == pytest.approx(1.0)
    Wd = W.dense()
    assert mw.trace_error(theta, mw.workload_traces(terms, shape), shape) == pytest.approx(
        np.sum((Wd @ np.linalg.pinv(A)) ** 2), rel=1e-9)
    np.testing.assert_allclose(Wd @ Ap @ A, Wd, atol=1e-9)  # least squares answers the workload without bias


# -- a rank-deficient weighted-marginals strategy, end to end ------------------------------------
def _one_way_3x3():
    return Stack([workload.marginal((3, 3), [0]), workload.marginal((3, 3), [1])], [1.0, 1.0])


POLICY_SPECS = {
    "dp": (("dp", {}), policy.dp(Domain.grid((3, 3))), True),
    "grid": (("threshold", {"theta": 1}), policy.grid((3, 3), 1), False),
    "grid2": (("threshold", {"theta": 2}), policy.grid((3, 3), 2), False),
    "attribute": (("attribute", {}), policy.attribute(Domain.grid((3, 3))), False),
}


@pytest.mark.parametrize("name", list(POLICY_SPECS))
def test_fitted_weights_are_charged_the_brute_force_sensitivity_within_the_linear_bound(name):
    from tests.brute import brute_edges, brute_sensitivity_edges

    spec, pol, bottom = POLICY_SPECS[name]
    W = _one_way_3x3()
    terms = _terms(W, (3, 3))
    edges = _edge_groups(pol)
    theta = mw.fit_marginals(terms, (3, 3), edges, 200)  # (on 3×3 the identity often wins: a marginal sums 3 cells)
    A, Ap, N = mw.marginal_strategy((3, 3), theta)
    np.testing.assert_allclose(Ap, np.linalg.pinv(A), atol=1e-10)
    brute = brute_sensitivity_edges(A, brute_edges(spec, pol.domain, bottom))
    assert pol.sensitivity(A) == pytest.approx(brute, rel=1e-12)
    assert brute <= float((mw.bound_rows(edges, mw.subsets(2)) @ theta).max()) + 1e-12 <= 1.0 + 1e-9


def test_measured_error_of_a_rank_deficient_strategy_is_within_3_standard_errors():
    from blowfish_nb import mechanisms
    from blowfish_nb.strategies.optimized import OptimizedStrategy

    pol = policy.dp(Domain.grid((3, 3)))
    W = _one_way_3x3()
    A, Ap, N = mw.marginal_strategy((3, 3), [0.0, 0.5, 0.5, 0.0])  # the two 1-way marginals: rank 5 of 9
    assert np.linalg.matrix_rank(A) == 5
    s = OptimizedStrategy((DenseFactor(A, Ap, N),), float(pol.sensitivity(A)), 0.0, (3, 3), {"template": "marginals"})
    m = mechanisms.Optimized(s)
    x = np.random.default_rng(5).integers(0, 9, size=9).astype(float)
    draws = m.sample(x, W, pol, 1.0, 20_000, rng=7)
    per_draw = ((draws - W @ x) ** 2).mean(axis=1)
    se = per_draw.std(ddof=1) / np.sqrt(per_draw.size)
    assert abs(per_draw.mean() - m.expected_error(W, pol, 1.0)) < 3 * se
    # a query outside the row space (a single cell) is not claimed a finite error
    from blowfish_nb.workload import identity

    assert m.expected_error(identity(9), pol, 1.0) == np.inf
