"""The flat templates (optimized.flat_refine): one dense factor over the whole grid on the policy's own edges.

Gradient of its surrogate against finite differences (the dense workload Gram and the
axis-by-axis Kronecker one); its Δ against the brute force under every policy family;
its exact objective never above its Kronecker start; the measured error within 3 SE of
the analytic one; the privacy hunter; which of "flat" (default, budgeted) and
"flat-long" (opt-in) runs where.
"""

import numpy as np
import pytest

from blowfish_nb import Domain, mechanisms, policy
from blowfish_nb.analysis import hunt
from blowfish_nb.operators import Kron
from blowfish_nb.ranges import all_ranges, random_ranges, ranges_2d
from blowfish_nb.strategies import optimized as opt
from blowfish_nb.strategies.marginal_weights import workload_gram
from tests.brute import brute_edges, brute_sensitivity_edges

LINE8 = Domain.grid(8)
GRID3 = Domain.grid((3, 3))
FAMILIES = {
    "dp 1-D": (("dp", {}), policy.dp(LINE8), True),
    "line": (("threshold", {"theta": 1}), policy.line(LINE8), False),
    "threshold2": (("threshold", {"theta": 2}), policy.threshold(LINE8, 2), False),
    "dp 2-D": (("dp", {}), policy.dp(GRID3), True),
    "grid": (("threshold", {"theta": 1}), policy.grid((3, 3), 1), False),
    "grid2": (("threshold", {"theta": 2}), policy.grid((3, 3), 2), False),
    "attribute": (("attribute", {}), policy.attribute(GRID3), False),
}


def _case(pol):
    shape = tuple(pol.domain.shape)
    W = random_ranges(8, 30, rng=4) if len(shape) == 1 else ranges_2d(shape, 30, rng=4)
    problem = opt._Problem(opt._terms(W, shape), opt._edge_groups(pol), shape, shape)
    start = [np.eye(n) + 0.1 * np.random.default_rng(0).random((n, n)) for n in shape]
    return W, problem, start


@pytest.mark.parametrize("name", list(FAMILIES))
def test_flat_strategy_is_charged_the_brute_force_sensitivity_and_never_worse_than_its_start(name):
    spec, pol, bottom = FAMILIES[name]
    W, problem, start = _case(pol)
    Y = opt.flat_refine(problem, pol, start, 30)
    brute = brute_sensitivity_edges(Y, brute_edges(spec, pol.domain, bottom))
    assert float(pol.sensitivity(Y)) == pytest.approx(brute, rel=1e-12)
    A0 = start[0] if len(start) == 1 else np.kron(start[0], start[1])
    G = workload_gram(problem.terms, problem.shape)

    def exact(A):
        f = opt.DenseFactor(A)
        return float(pol.sensitivity(f)) ** 2 * opt._gram_error(G, f)

    assert exact(Y) <= exact(A0) * (1 + 1e-12)


STAGES = sorted({s for s, _ in opt.FLAT_STAGES + opt.FLAT_BUDGET_STAGES})


def _flat_problem(pol, bottom, terms, signed):
    G = workload_gram(terms, (3, 3))
    pairs = [(u, v) for u, v in zip(*[np.concatenate(x) for x in zip(*pol.edge_chunks())]) if v >= 0]
    a = np.array([min(p) for p in pairs], dtype=np.int64)
    b = np.array([max(p) for p in pairs], dtype=np.int64)
    return opt._Problem([opt._Term(1.0, [None], True, G)], opt._Edges([(a, b) if a.size else None], bottom, False),
                        (9,), (9,), signed=signed)


@pytest.mark.parametrize("name", ["dp 2-D", "grid", "attribute"])
@pytest.mark.parametrize("smoothing", STAGES)
@pytest.mark.parametrize("signed", [False, True])
def test_flat_surrogate_gradient_is_the_finite_difference(name, smoothing, signed):
    spec, pol, bottom = FAMILIES[name]
    W, problem, _ = _case(pol)
    flat = _flat_problem(pol, bottom, problem.terms, signed)
    flat.smoothing = smoothing
    X = np.eye(9) + 0.2 * np.random.default_rng(1).random((9, 9)) - (0.1 if signed else 0.0)
    _, (g,) = flat.value_and_grad([X])
    _assert_matches_finite_differences(flat, X, g)


def test_kronecker_gram_path_gives_the_dense_value_and_gradient():
    """All boxes on 3 × 3 (a Kronecker WᵀW): the axis-by-axis error path against the dense one and finite differences."""
    pol = policy.grid((3, 3), 1)
    R = all_ranges(3)
    terms = opt._terms(Kron([R, R]), (3, 3))
    assert opt._kron_gram(terms, (3, 3)) is not None
    assert opt._kron_gram(opt._terms(ranges_2d((3, 3), 30, rng=4), (3, 3)), (3, 3)) is None  # a list of boxes: dense
    dense = _flat_problem(pol, False, terms, True)
    fast = _flat_problem(pol, False, terms, True)
    fast.kron_gram, fast.grid = opt._kron_gram(terms, (3, 3)), (3, 3)
    X = np.eye(9) + 0.2 * np.random.default_rng(2).random((11, 9))[:9] - 0.05
    X = np.vstack([X, 0.3 * np.random.default_rng(3).random((2, 9))])  # more rows than cells, as the flat starts
    (f, (g,)), (h, (k,)) = dense.value_and_grad([X]), fast.value_and_grad([X])
    assert h == pytest.approx(f, rel=1e-12)
    np.testing.assert_allclose(k, g, rtol=1e-9, atol=1e-12 * np.abs(g).max())
    _assert_matches_finite_differences(fast, X, k)


def _assert_matches_finite_differences(problem, X, grad, h=1e-7):
    """``grad`` (the analytic gradient at X) against central differences of the problem's value, entry by entry."""
    num = np.zeros_like(X)
    for idx in np.ndindex(X.shape):
        up, down = X.copy(), X.copy()
        up[idx] += h
        down[idx] -= h
        num[idx] = (problem.value_and_grad([up])[0] - problem.value_and_grad([down])[0]) / (2 * h)
    np.testing.assert_allclose(grad, num, rtol=2e-4, atol=2e-5 * np.abs(num).max())


def _flat_strategy(pol):
    W, problem, start = _case(pol)
    Y = opt.flat_refine(problem, pol, start, 30)
    s = opt.OptimizedStrategy((opt.DenseFactor(Y),), float(pol.sensitivity(Y)), 0.0, tuple(pol.domain.shape),
                              {"template": "flat"})
    return W, mechanisms.Optimized(s)


def test_measured_error_of_the_flat_strategy_is_within_3_standard_errors():
    pol = policy.grid((3, 3), 1)
    W, m = _flat_strategy(pol)
    x = np.random.default_rng(5).integers(0, 9, size=9).astype(float)
    per_draw = ((m.sample(x, W, pol, 1.0, 20_000, rng=7) - W @ x) ** 2).mean(axis=1)
    se = per_draw.std(ddof=1) / np.sqrt(per_draw.size)
    assert abs(per_draw.mean() - m.expected_error(W, pol, 1.0)) < 3 * se


def test_privacy_hunter_passes_the_flat_strategy():
    pol = policy.grid((3, 3), 1)
    W, m = _flat_strategy(pol)
    result = hunt(m, pol, 1.0, workload=W, rng=16, bases=8, pairs=16, pilot=4_000, confirm=20_000, candidates=3)
    assert not result.violation, str(result)


def test_flat_runs_by_default_where_cells_are_neighbours_and_flat_long_when_named():
    pol = policy.grid((3, 3), 1)
    W = ranges_2d((3, 3), 30, rng=4)
    assert "flat" not in opt.TEMPLATES and "flat" in opt.DEFAULT_TEMPLATES  # auto's fit names TEMPLATES: seconds
    without = opt.optimize(W, pol, restarts=1, max_iter=40, rng=3, templates=opt.TEMPLATES)
    s = opt.optimize(W, pol, restarts=1, max_iter=40, rng=3)
    assert "flat" in s.info["objectives"] and "flat-long" not in s.info["objectives"]
    # started at the best Kronecker candidate and kept only when the exact objective drops
    assert s.info["objectives"]["flat"] <= min(v for k, v in s.info["objectives"].items() if "flat" not in k
                                               and "total" not in k)
    assert s.objective <= without.objective and s.sensitivity == pytest.approx(float(pol.sensitivity(s.operator)))
    long = opt.optimize(W, pol, restarts=1, max_iter=40, rng=3, templates=opt.TEMPLATES + opt.OPT_IN)
    assert "flat-long" in long.info["objectives"] and "flat" not in long.info["objectives"]
    # under DP every edge goes to ⊥: nothing for a flat factor to share between cells, so not by default
    dp = opt.optimize(W, policy.dp(GRID3), restarts=1, max_iter=40, rng=3)
    assert "flat" not in dp.info["objectives"]


def test_flat_is_not_run_by_default_above_its_cost():
    n = 26  # 676 cells: one dense step above FLAT_DEFAULT_COST
    assert n**6 > opt.FLAT_DEFAULT_COST >= 25**6
    R = all_ranges(n)
    s = opt.optimize(Kron([R, R]), policy.grid((n, n), 1), restarts=1, max_iter=5, rng=0,
                     templates=("p-identity", "flat"))
    assert "flat" not in s.info["objectives"]
