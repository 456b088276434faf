"""Kronecker strategies answered with the public total (strategies/known_total.py).

Δ against brute force over the policy's edges, the factorised downdated error and
its gradient against dense computations, the constrained estimate against a dense
KKT solve, and a Monte-Carlo check of the error within 3 standard errors.
"""

import numpy as np
import pytest

from blowfish_nb import Domain, policy
from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.ranges import random_ranges, ranges_2d
from blowfish_nb.strategies import known_total as kt
from blowfish_nb.strategies import optimized as opt
from blowfish_nb.workload import Stack, marginal
from tests.brute import brute_edges, brute_sensitivity_edges

QUICK = {"restarts": 1, "max_iter": 40}


def _dense(W):
    return np.vstack([W @ e for e in np.eye(W.shape[1])]).T


def _downdated(A, Wd):
    """Σ_q w (N − N11ᵀN/1ᵀN1) wᵀ, dense."""
    N = np.linalg.inv(A.T @ A)
    n1 = N.sum(axis=1)
    C = N - np.outer(n1, n1) / n1.sum()
    return float(np.einsum("qi,ij,qj->", Wd, C, Wd))


CASES = {
    "boxes 4×3, G¹": (ranges_2d((4, 3), 60, rng=1), policy.grid((4, 3), 1), ("threshold", {"theta": 1})),
    "boxes 3×3, G²": (ranges_2d((3, 3), 40, rng=2), policy.grid((3, 3), 2), ("threshold", {"theta": 2})),
    "ranges 7, line": (random_ranges(7, 30, rng=3), policy.line(Domain.grid(7)), ("threshold", {"theta": 1})),
    "marginals 3×4, G¹": (Stack([marginal((3, 4), [0]), marginal((3, 4), [1])], [1.0, 2.0]), policy.grid((3, 4), 1),
                          ("threshold", {"theta": 1})),
}


@pytest.mark.parametrize("name", list(CASES))
def test_sensitivity_is_the_brute_force_one(name):
    W, pol, spec = CASES[name]
    s = kt.optimize(W, pol, rng=0, **QUICK)
    K = s.kron.dense()
    brute = brute_sensitivity_edges(K, brute_edges(spec, pol.domain, False))
    assert s.sensitivity == pytest.approx(brute, rel=1e-12)
    assert pol.sensitivity(s.operator) == pytest.approx(brute, rel=1e-12)  # the total's row adds nothing
    assert s.objective == pytest.approx(brute**2 * _downdated(K, _dense(W)), rel=1e-9)


@pytest.mark.parametrize("name", list(CASES))
def test_factorised_error_and_gradient_match_dense(name):
    W, pol, _ = CASES[name]
    shape = tuple(pol.domain.shape)
    problem = kt._TotalProblem(opt._terms(W, shape), opt._edge_groups(pol), shape, shape)
    rng = np.random.default_rng(7)
    X = [np.eye(n) + 0.4 * rng.random((n, n)) for n in shape]

    def kron(X):
        out = np.ones((1, 1))
        for x in X:
            out = np.kron(out, x)
        return out

    value, grads = problem._error(X, grad=True)
    assert value == pytest.approx(_downdated(kron(X), _dense(W)), rel=1e-9)
    h = 1e-6
    for i, x in enumerate(X):
        for a, b in [(0, 0), (x.shape[0] - 1, 0), (1, x.shape[1] - 1)]:
            Xp = [y.copy() for y in X]
            Xp[i][a, b] += h
            Xm = [y.copy() for y in X]
            Xm[i][a, b] -= h
            numeric = (problem._error(Xp, False)[0] - problem._error(Xm, False)[0]) / (2 * h)
            assert grads[i][a, b] == pytest.approx(numeric, rel=1e-5, abs=1e-7 * abs(value))


def test_estimate_is_the_least_squares_that_keeps_the_total():
    rng = np.random.default_rng(3)
    s = kt.optimize(ranges_2d((3, 4), 30, rng=4), policy.grid((3, 4), 1), rng=0, **QUICK)
    K = s.kron.dense()
    y, total = rng.normal(size=K.shape[0]), 17.0
    k = K.shape[1]  # KKT: [KᵀK 1; 1ᵀ 0] [x; λ] = [Kᵀy; total]
    kkt = np.block([[K.T @ K, np.ones((k, 1))], [np.ones((1, k)), np.zeros((1, 1))]])
    expected = np.linalg.solve(kkt, np.r_[K.T @ y, total])[:k]
    got = s.estimate(y, total)
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert got.sum() == pytest.approx(total, rel=1e-12)


def test_monte_carlo_error_is_the_analytic_one():
    """Laplace noise of scale Δ/ε on the Kronecker rows, exact total: mean squared error per query within 3 SE."""
    W, pol = ranges_2d((4, 4), 40, rng=5), policy.grid((4, 4), 1)
    s = kt.optimize(W, pol, rng=0, **QUICK)
    K, Wd = s.kron.dense(), _dense(W)
    rng = np.random.default_rng(11)
    x = rng.integers(0, 20, size=16).astype(float)
    eps, draws = 0.5, 4000
    noise = rng.laplace(scale=s.sensitivity / eps, size=(draws, K.shape[0]))
    est = np.array([s.estimate(K @ x + z, x.sum()) for z in noise])
    sq = (((est - x) @ Wd.T) ** 2).mean(axis=1)  # per draw: mean over queries
    analytic = 2 * s.objective / eps**2 / Wd.shape[0]
    se = sq.std(ddof=1) / np.sqrt(draws)
    assert abs(sq.mean() - analytic) < 3 * se


def test_the_total_must_be_public():
    with pytest.raises(InvalidParameterError, match="⊥"):
        kt.optimize(ranges_2d((3, 3), 10, rng=0), policy.dp(Domain.grid((3, 3))))
    with pytest.raises(InvalidParameterError, match="restarts"):
        kt.optimize(ranges_2d((3, 3), 10, rng=0), policy.grid((3, 3), 1), restarts=0)


def test_a_fixed_strategy_that_wins_is_flagged_as_a_fallback_in_the_provenance():
    """Issue 24: an optimisation that does not beat the fixed strategies says so. The prefix sums are optimal for
    the prefix workload under the line (Δ = 1, every prefix read once, the total public), so no start beats them:
    the result is the prefix sums themselves, flagged, and the mechanism's repr (a release's provenance) names it.
    Where an optimised start wins (6×6 boxes under G¹) nothing is flagged."""
    from blowfish_nb.mechanisms import Optimized
    from blowfish_nb.operators import Prefix

    s = kt.optimize(Prefix(4), policy.line(Domain.grid(4)), rng=0, **QUICK)
    assert "prefix" in s.info["fallback"]
    np.testing.assert_array_equal(s.kron.dense(), np.tril(np.ones((4, 4))))
    assert "fallback=" in repr(Optimized(s))
    won = kt.optimize(ranges_2d((6, 6), 200, rng=0), policy.grid((6, 6), 1), rng=0, **QUICK)
    assert "fallback" not in won.info
