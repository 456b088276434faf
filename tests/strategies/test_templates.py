"""The optimiser's templates (issue 24): p-Identity, its edge-domain form, Kronecker p-Identity, weighted marginals.

Every closed form is checked against a dense computation; every template's
Δ under every policy family against a brute force over moved records
(``tests/brute.py``); the gradient against finite differences; the error of
the measured strategy by Monte Carlo within 3 SE; and the privacy hunter.
"""

import numpy as np
import pytest

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.analysis import hunt
from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.operators import Kron, Stack
from blowfish_nb.ranges import all_ranges, random_ranges, ranges_2d
from blowfish_nb.strategies import pidentity
from blowfish_nb.strategies.marginal_weights import fit_marginals, marginal_matrix, marginal_strategy, workload_gram
from blowfish_nb.strategies.optimized import (
    DenseFactor, OptimizedStrategy, _edge_groups, _Problem, _templates, _terms, edge_pidentity, optimize,
)
from tests.brute import brute_edges, brute_sensitivity_edges

LINE8 = Domain.grid(8)
GRID3 = Domain.grid((3, 3))
#: (brute-force spec, policy, ⊥ present) for every policy family
POLICIES_1D = {
    "dp": (("dp", {}), policy.dp(LINE8), True),
    "line": (("threshold", {"theta": 1}), policy.line(LINE8), False),
    "threshold2": (("threshold", {"theta": 2}), policy.threshold(LINE8, 2), False),
}
POLICIES_2D = {
    "dp": (("dp", {}), policy.dp(GRID3), True),
    "grid": (("threshold", {"theta": 1}), policy.grid((3, 3), 1), False),
    "grid2": (("threshold", {"theta": 2}), policy.grid((3, 3), 2), False),
    "attribute": (("attribute", {}), policy.attribute(GRID3), False),
}
QUICK = dict(restarts=1, max_iter=40, rng=3)


def _marginals_3x3():
    return Stack([workload.marginal((3, 3), [0]), workload.marginal((3, 3), [1]), workload.identity(9)],
                 [1.0, 1.0, 0.5])


# -- p-Identity: closed form, gradient, normalisation --------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_pidentity_objective_is_the_dense_trace_and_its_gradient_the_finite_difference(seed):
    rng = np.random.default_rng(seed)
    k, p = 7, int(rng.integers(1, 4))
    M = rng.random((k + 2, k))
    G = M.T @ M
    T = rng.random((p, k))
    f, g = pidentity.objective(T, G)
    A = pidentity.strategy_matrix(T)
    assert f == pytest.approx(np.trace(G @ np.linalg.inv(A.T @ A)), rel=1e-10)
    h, num = 1e-6, np.zeros_like(T)
    for i in range(p):
        for j in range(k):
            up, down = T.copy(), T.copy()
            up[i, j] += h
            down[i, j] -= h
            num[i, j] = (pidentity.objective(up, G)[0] - pidentity.objective(down, G)[0]) / (2 * h)
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6 * np.abs(num).max())


def test_pidentity_columns_have_l1_norm_one_so_dp_charges_one():
    T = np.random.default_rng(1).random((2, 8))
    A = pidentity.strategy_matrix(T)
    np.testing.assert_allclose(np.abs(A).sum(axis=0), 1.0)
    assert brute_sensitivity_edges(A, brute_edges(("dp", {}), LINE8, True)) == pytest.approx(1.0)


def test_range_and_prefix_grams_are_the_dense_ones():
    R = random_ranges(9, 30, rng=2)
    W = R.dense()
    w = np.random.default_rng(0).random(30)
    np.testing.assert_allclose(pidentity.range_gram(R.lo, R.hi, 9, w), W.T @ (w[:, None] * W), atol=1e-12)
    C = np.tril(np.ones((9, 9)))  # P = C x
    WC = W @ np.linalg.inv(C)
    np.testing.assert_allclose(pidentity.prefix_gram(W.T @ W), WC.T @ WC, atol=1e-9)


def test_fit_beats_the_identity_on_all_ranges():
    R = all_ranges(32)
    G = pidentity.range_gram(R.lo, R.hi, 32)
    _, f = pidentity.fit(G, 2, restarts=2, max_iter=200, rng=np.random.default_rng(0))
    assert f < 0.9 * np.trace(G)  # 0.893 (p = 2); p = 8 reaches only 0.907


# -- weighted marginals: the closed form against dense algebra ------------------------------------
def test_marginal_template_error_is_the_dense_error_and_respects_the_linear_bound():
    shape = (3, 4)
    W = Stack([workload.marginal(shape, [0]), workload.identity(12)], [1.0, 1.0])
    terms = _terms(W, shape)
    Wd = W.dense()
    np.testing.assert_allclose(workload_gram(terms, shape), Wd.T @ Wd, atol=1e-9)
    for name in ("dp", "attribute"):
        pol = policy.dp(Domain.grid(shape)) if name == "dp" else policy.attribute(Domain.grid(shape))
        X = marginal_strategy(shape, fit_marginals(terms, shape, _edge_groups(pol), 200))[0]
        assert pol.sensitivity(X) <= 1.0 + 1e-9
    assert marginal_matrix((2, 3), ()).tolist() == [[1.0] * 6]


# -- Δ of every template under every policy family, by brute force -------------------------------
def _forced(W, pol, template) -> OptimizedStrategy:
    """The template's own result (not the winner among it, the identity and the prefix sums), charged exactly."""
    shape = tuple(pol.domain.shape)
    problem = _Problem(_terms(W, shape), _edge_groups(pol), shape, shape)
    out = dict(_templates(problem, pol, 1, 40, np.random.default_rng(3), (template,)))
    if template not in out:
        pytest.skip(f"{template} does not apply under {pol!r}")
    factors = tuple(x if isinstance(x, DenseFactor) else DenseFactor(x) for x in out[template])
    op = factors[0] if len(factors) == 1 else Kron(factors)
    return OptimizedStrategy(factors, float(pol.sensitivity(op)), 0.0, shape, {"template": template})


@pytest.mark.parametrize("name", list(POLICIES_1D))
@pytest.mark.parametrize("template", ["p-identity", "dense"])
def test_1d_templates_are_charged_the_brute_force_sensitivity(name, template):
    spec, pol, bottom = POLICIES_1D[name]
    W = random_ranges(8, 30, rng=4)
    s = _forced(W, pol, template)
    A = s.operator.dense()
    brute = brute_sensitivity_edges(A, brute_edges(spec, pol.domain, bottom))
    assert s.sensitivity == pytest.approx(brute, rel=1e-12)
    if template == "p-identity" and name == "dp":
        assert s.sensitivity == pytest.approx(1.0)


@pytest.mark.parametrize("theta", [1, 2, 3])
def test_edge_domain_pidentity_pays_the_longest_edge_exactly(theta):
    pol = policy.threshold(LINE8, theta)
    W = all_ranges(8)
    A = edge_pidentity(_terms(W, (8,)), 8, 1, 40, np.random.default_rng(0))[0]
    brute = brute_sensitivity_edges(A, brute_edges(("threshold", {"theta": theta}), LINE8, False))
    assert brute == pytest.approx(theta) and pol.sensitivity(A) == pytest.approx(theta)


@pytest.mark.parametrize("name", list(POLICIES_2D))
@pytest.mark.parametrize("template", ["p-identity", "marginals", "dense"])
def test_2d_templates_are_charged_the_brute_force_sensitivity(name, template):
    spec, pol, bottom = POLICIES_2D[name]
    W = _marginals_3x3() if template == "marginals" else ranges_2d((3, 3), 30, rng=4)
    s = _forced(W, pol, template)
    A = s.operator.dense()
    brute = brute_sensitivity_edges(A, brute_edges(spec, pol.domain, bottom))
    assert s.sensitivity == pytest.approx(brute, rel=1e-12)


def test_the_templates_win_where_they_should():
    """DP: p-identity or marginals at Δ = 1; the line: the edge domain; marginals under attribute."""
    s = optimize(all_ranges(16), policy.line(Domain.grid(16)), **QUICK)
    assert s.info["template"] == "edge-domain p-identity" and s.sensitivity == pytest.approx(1.0)
    s = optimize(_marginals_3x3(), policy.attribute(GRID3), **QUICK)
    assert s.info["template"].split(" + ")[0] in ("marginals", "dense")


def test_unknown_template_is_refused_by_name():
    with pytest.raises(InvalidParameterError, match="templates"):
        optimize(all_ranges(4), policy.line(Domain.grid(4)), templates=["hdmm"])


# -- measured error, and privacy, per template ---------------------------------------------------
TEMPLATE_CASES = {
    "p-identity": (random_ranges(8, 30, rng=4), policy.dp(LINE8)),
    "edge-domain p-identity": (random_ranges(8, 30, rng=4), policy.threshold(LINE8, 2)),
    "marginals": (_marginals_3x3(), policy.attribute(GRID3)),
    "dense": (ranges_2d((3, 3), 30, rng=4), policy.grid((3, 3), 1)),
}


@pytest.mark.parametrize("template", list(TEMPLATE_CASES))
def test_measured_error_is_within_3_standard_errors_of_the_analytic_one(template):
    W, pol = TEMPLATE_CASES[template]
    m = mechanisms.Optimized(_forced(W, pol, template))
    x = np.random.default_rng(5).integers(0, 9, size=pol.domain.size).astype(float)
    draws = m.sample(x, W, pol, 1.0, 20_000, rng=7)
    per_draw = ((draws - W @ x) ** 2).mean(axis=1)
    se = per_draw.std(ddof=1) / np.sqrt(per_draw.size)
    assert abs(per_draw.mean() - m.expected_error(W, pol, 1.0)) < 3 * se


ANSWERS = dict(bases=8, pairs=16, pilot=4_000, confirm=20_000, candidates=3)


@pytest.mark.parametrize("template", list(TEMPLATE_CASES))
def test_privacy_hunter_passes_each_template(template):
    W, pol = TEMPLATE_CASES[template]
    m = mechanisms.Optimized(_forced(W, pol, template))
    result = hunt(m, pol, 1.0, workload=W, rng=16, **ANSWERS)
    assert not result.violation, str(result)


def test_a_constrained_policy_is_refused_before_any_optimisation():
    from blowfish_nb import constraints

    d = Domain.grid((2, 3), names=["A1", "A2"])
    pol = policy.constrained(policy.bounded(d), constraints.marginal(d, ["A1"]))
    with pytest.raises(InvalidParameterError, match="constrained"):
        optimize(workload.identity(6), pol)


def test_the_public_total_row_costs_nothing_under_a_policy_without_bottom():
    """The winner plus TOTAL_WEIGHT·Δ·1ᵀ: Δ (brute force) unchanged under the grid, error measured = analytic."""
    spec, pol, bottom = POLICIES_2D["grid"]
    W = ranges_2d((3, 3), 30, rng=4)
    s = optimize(W, pol, templates=["p-identity", "total"], **QUICK)
    plain = [n for n in s.info["objectives"] if not n.endswith("+ total")]
    won = min(plain, key=s.info["objectives"].get)
    assert s.info["objectives"][f"{won} + total"] <= s.info["objectives"][won]
    total = s if s.info["template"].endswith("+ total") else None
    assert total is not None and len(total.factors) == 1
    A = total.operator.dense()
    assert brute_sensitivity_edges(A, brute_edges(spec, pol.domain, bottom)) == pytest.approx(total.sensitivity)
    assert brute_sensitivity_edges(A[:-1], brute_edges(spec, pol.domain, bottom)) == pytest.approx(total.sensitivity)
    m = mechanisms.Optimized(total)
    x = np.random.default_rng(5).integers(0, 9, size=9).astype(float)
    draws = m.sample(x, W, pol, 1.0, 20_000, rng=7)
    per_draw = ((draws - W @ x) ** 2).mean(axis=1)
    se = per_draw.std(ddof=1) / np.sqrt(per_draw.size)
    assert abs(per_draw.mean() - m.expected_error(W, pol, 1.0)) < 3 * se
    # under DP the same matrix pays for its total row: the mechanism charges the policy it is called with
    dp = policy.dp(GRID3)
    assert m.sensitivity(dp) == pytest.approx(brute_sensitivity_edges(A, brute_edges(("dp", {}), GRID3, True)))


def test_privacy_hunter_passes_the_strategy_with_the_public_total():
    pol = policy.grid((3, 3), 1)
    W = ranges_2d((3, 3), 30, rng=4)
    s = optimize(W, pol, templates=["p-identity", "total"], **QUICK)
    assert s.info["template"].endswith("+ total")
    result = hunt(mechanisms.Optimized(s), pol, 1.0, workload=W, rng=16, **ANSWERS)
    assert not result.violation, str(result)


def test_a_fallback_to_a_fixed_strategy_is_said_in_the_mechanism_repr():
    """The release's provenance carries repr(mechanism): the template, and a fallback when one happened."""
    pol = policy.grid((3, 3), 1)
    s = optimize(workload.identity(9), pol, templates=["p-identity"], **QUICK)  # the identity is optimal here
    assert s.info["template"] in ("identity", "prefix") and "fallback" in s.info
    assert "fallback=" in repr(mechanisms.Optimized(s)) and "template=" in repr(mechanisms.Optimized(s))


def test_weighted_marginals_on_8_cubed_measure_what_they_claim():
    """The identity's weight is exactly 0 here (a rank-deficient strategy): the measured error stays within 3 SE."""
    shape = (8, 8, 8)
    W = Stack([workload.marginal(shape, [i, j]) for i in range(3) for j in range(i + 1, 3)], [1.0] * 3)
    pol = policy.attribute(Domain.grid(shape))
    m = mechanisms.Optimized(optimize(W, pol, restarts=1, rng=0, templates=["marginals", "total"]))
    x = np.random.default_rng(0).integers(0, 5, 512).astype(float)
    per_draw = ((m.sample(x, W, pol, 1.0, 2_000, rng=1) - W @ x) ** 2).mean(axis=1)
    se = per_draw.std(ddof=1) / np.sqrt(per_draw.size)
    assert abs(per_draw.mean() - m.expected_error(W, pol, 1.0)) < 3 * se
    assert m.expected_error(W, pol, 1.0) < 63.4 / 2  # HDMM's DP strategy at ε/2 pays 63.4 here
