"""The dense template's smoothed objective (optimized._Problem): gradient against finite differences at every
smoothing its continuation uses, and the continuation judged by the exact objective (never worse than its start)."""

import numpy as np
import pytest

from blowfish_nb import Domain, policy
from blowfish_nb.operators import Kron
from blowfish_nb.ranges import ranges_2d
from blowfish_nb.strategies import optimized as opt
from tests.brute import brute_edges, brute_sensitivity_edges

POLICIES = {
    "grid": policy.grid((3, 4), 1),
    "grid2": policy.grid((3, 4), 2),
    "dp": policy.dp(Domain.grid((3, 4))),
    "attribute": policy.attribute(Domain.grid((3, 4))),
}
SMOOTHING = [(opt.ETA, opt.P_NORM), *opt.SHARPEN]


@pytest.mark.parametrize("name", list(POLICIES))
@pytest.mark.parametrize("smoothing", SMOOTHING)
@pytest.mark.parametrize("signed", [False, True])
def test_surrogate_gradient_is_the_finite_difference(name, smoothing, signed):
    pol = POLICIES[name]
    W = ranges_2d((3, 4), 25, rng=1)
    problem = opt._Problem(opt._terms(W, (3, 4)), opt._edge_groups(pol), (3, 4), (3, 4), signed=signed)
    problem.smoothing = smoothing
    rng = np.random.default_rng(2)
    X = [np.eye(n) + 0.3 * rng.random((n, n)) - (0.1 if signed else 0.0) for n in (3, 4)]
    f, grads = problem.value_and_grad(X)
    h = 1e-7
    for i, x in enumerate(X):
        num = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            up = [y.copy() for y in X]
            down = [y.copy() for y in X]
            up[i][idx] += h
            down[i][idx] -= h
            num[idx] = (problem.value_and_grad(up)[0] - problem.value_and_grad(down)[0]) / (2 * h)
        np.testing.assert_allclose(grads[i], num, rtol=2e-4, atol=2e-5 * np.abs(num).max())


def test_the_surrogate_tends_to_the_exact_sensitivity():
    """For X ≥ 0 on the grid G¹ the surrogate is the per-axis Kronecker formula smoothed: sharper is closer."""
    pol = POLICIES["grid"]
    W = ranges_2d((3, 4), 25, rng=1)
    problem = opt._Problem(opt._terms(W, (3, 4)), opt._edge_groups(pol), (3, 4), (3, 4))
    rng = np.random.default_rng(0)
    X = [np.eye(n) + 0.3 * rng.random((n, n)) for n in (3, 4)]
    exact = brute_sensitivity_edges(np.kron(X[0], X[1]), brute_edges(("threshold", {"theta": 1}), pol.domain, False))
    gaps = []
    for smoothing in SMOOTHING:
        problem.smoothing = smoothing
        gaps.append(np.exp(problem._delta(X)[0]) - exact)
    assert all(g >= -1e-12 for g in gaps)  # an upper bound at every stage
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 1e-2 * exact


def test_sharpening_never_raises_the_exact_objective_and_restores_the_smoothing():
    pol = policy.grid((4, 4), 1)
    W = ranges_2d((4, 4), 60, rng=3)
    problem = opt._Problem(opt._terms(W, (4, 4)), opt._edge_groups(pol), (4, 4), (4, 4))
    X0 = problem.optimise(problem.start(0, np.random.default_rng(0)), 60)

    def exact(X):
        d = pol.sensitivity(Kron([opt.DenseFactor(x) for x in X]))
        return d * d * problem.error(X)

    X = opt._sharpen(problem, pol, X0, 60)
    assert exact(X) <= exact(X0)
    assert problem.smoothing == (opt.ETA, opt.P_NORM)
