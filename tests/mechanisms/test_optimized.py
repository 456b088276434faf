"""Optimised strategies under a policy (Blowfish-HDMM, issue 16): exact Δ, error, privacy, gain, determinism.

The optimiser's smooth surrogate never decides privacy: every test of Δ
compares what the mechanism charges with a brute force over databases that
differ by one record moved along one edge (``tests/brute.py``).
"""

import numpy as np
import pytest

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.analysis import hunt
from blowfish_nb.analysis.selection import choose_mechanism, default_candidates, optimized_for
from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.ranges import random_ranges, ranges_2d
from blowfish_nb.strategies.optimized import DenseFactor, optimize
from blowfish_nb.workload import Kron
from tests.brute import brute_edges, brute_sensitivity_edges

#: small, quick optimisations (seconds on two shared cores)
QUICK = dict(restarts=1, max_iter=30)

LINE8 = Domain.grid(8)
CASES = {
    "line": (("threshold", {"theta": 1}), policy.line(LINE8), False),
    "threshold2": (("threshold", {"theta": 2}), policy.threshold(LINE8, 2), False),
    "dp": (("dp", {}), policy.dp(LINE8), True),
    "grid3x3": (("threshold", {"theta": 1}), policy.grid((3, 3), 1), False),
    "attribute3x3": (("attribute", {}), policy.attribute(Domain.grid((3, 3))), False),
}


def _workload(pol):
    shape = pol.domain.shape
    return random_ranges(shape[0], 40, rng=3) if len(shape) == 1 else ranges_2d(shape, 40, rng=3)


def _dense(m, pol) -> np.ndarray:
    return m.strategy(pol).dense()


# -- Δ: the Kronecker formula and what the mechanism charges, against brute force ------------------
@pytest.mark.parametrize("seed", range(6))
def test_grid_kron_sensitivity_is_the_per_axis_formula(seed):
    """Δ(A₁⊗A₂) under G¹ = max(‖A₁D‖₁‖A₂‖₁, ‖A₁‖₁‖A₂D‖₁), signed and unsigned factors, by brute force."""
    rng = np.random.default_rng(seed)
    n1, n2 = rng.integers(2, 5, size=2)
    A1, A2 = rng.normal(size=(n1 + 1, n1)), rng.random((n2, n2))
    dom = Domain.grid((int(n1), int(n2)))
    brute = brute_sensitivity_edges(np.kron(A1, A2), brute_edges(("threshold", {"theta": 1}), dom, False))

    def diff(A):  # ‖A D‖₁: the largest L1 norm of a difference of adjacent columns
        return np.abs(np.diff(A, axis=1)).sum(axis=0).max()

    def col(A):
        return np.abs(A).sum(axis=0).max()

    formula = max(diff(A1) * col(A2), col(A1) * diff(A2))
    charged = policy.grid(dom, 1).sensitivity(Kron([DenseFactor(A1), DenseFactor(A2)]))
    assert brute == pytest.approx(formula, rel=1e-12)
    assert charged == pytest.approx(brute, rel=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_charged_sensitivity_is_the_brute_force_one(name):
    spec, pol, bottom = CASES[name]
    m = mechanisms.Optimized.fit(_workload(pol), pol, rng=1, **QUICK)
    brute = brute_sensitivity_edges(_dense(m, pol), brute_edges(spec, pol.domain, bottom))
    assert m.sensitivity(pol) == pytest.approx(brute, rel=1e-12)
    assert m.optimized.sensitivity == pytest.approx(brute, rel=1e-12)
    delta, gamma, rows = m._lattice(pol, 1.0)  # what the noise is drawn with
    assert delta == pytest.approx(brute, rel=1e-12) and gamma * rows <= delta * 2.0**-12


def test_the_same_strategy_is_charged_again_under_another_policy():
    """Δ follows the policy the mechanism is called with, not the one it was optimised for."""
    line, dp = CASES["line"][1], CASES["dp"][1]
    m = mechanisms.Optimized.fit(_workload(line), line, rng=1, known_total=False, **QUICK)
    brute = brute_sensitivity_edges(_dense(m, dp), brute_edges(("dp", {}), LINE8, True))
    assert m.sensitivity(dp) == pytest.approx(brute, rel=1e-12)


# -- error: Monte Carlo against the analytic figure ----------------------------------------------
@pytest.mark.parametrize("name", ["threshold2", "grid3x3"])
def test_measured_error_is_within_3_standard_errors_of_the_analytic_one(name):
    _, pol, _ = CASES[name]
    W = _workload(pol)
    m = mechanisms.Optimized.fit(W, pol, rng=2, **QUICK)
    x = np.random.default_rng(5).integers(0, 9, size=pol.domain.size).astype(float)
    for eps in (0.5, 2.0):
        draws = m.sample(x, W, pol, eps, 20_000, rng=7)
        per_draw = ((draws - W @ x) ** 2).mean(axis=1)  # independent draws: their mean has a clean SE
        se = per_draw.std(ddof=1) / np.sqrt(per_draw.size)
        assert abs(per_draw.mean() - m.expected_error(W, pol, eps)) < 3 * se


def test_release_is_least_squares_on_the_noisy_measurements():
    _, pol, _ = CASES["grid3x3"]
    W = _workload(pol)
    m = mechanisms.Optimized.fit(W, pol, rng=2, **QUICK)
    x = np.arange(9.0)
    one = m.release(x, W, pol, 1e9, rng=3)  # noise of scale ~1e-9: the truth up to the lattice's rounding
    np.testing.assert_allclose(one, W @ x, atol=1e-4)


# -- privacy: the hunter passes it, on the small domains it can search ----------------------------
ANSWERS = dict(bases=8, pairs=16, pilot=4_000, confirm=20_000, candidates=3)


@pytest.mark.parametrize("name", ["line", "grid3x3"])
def test_privacy_hunter_passes_it(name):
    _, pol, _ = CASES[name]
    W = workload.prefix(8) if name == "line" else workload.identity(9)
    m = mechanisms.Optimized.fit(W, pol, rng=4, **QUICK)
    result = hunt(m, pol, 1.0, workload=W, rng=16, **ANSWERS)
    assert not result.violation, str(result)


# -- the gain: 2-D boxes under the grid -----------------------------------------------------------
def test_beats_every_fixed_strategy_on_boxes_under_the_grid():
    g = policy.grid((8, 8), 1)
    W = ranges_2d((8, 8), 500, rng=8)
    _, table = choose_mechanism(W, g, 1.0, candidates=default_candidates(g, optimized=False))
    best_fixed = float(table["expected_error"].min())
    m = mechanisms.Optimized.fit(W, g, restarts=1, max_iter=150, rng=0)
    assert m.expected_error(W, g, 1.0) < best_fixed / 1.3, table


# -- determinism, and input checks ----------------------------------------------------------------
def test_same_seed_same_strategy():
    _, pol, _ = CASES["grid3x3"]
    W = _workload(pol)
    a, b = (optimize(W, pol, rng=9, **QUICK) for _ in range(2))
    assert all(np.array_equal(f.X, h.X) for f, h in zip(a.factors, b.factors))
    assert a.sensitivity == b.sensitivity and a.objective == b.objective


def test_cached_per_workload_and_policy():
    pol = policy.grid((2, 3), 1)
    W = ranges_2d((2, 3), 10, rng=1)
    first = optimized_for(W, pol)
    assert optimized_for(ranges_2d((2, 3), 10, rng=1), policy.grid((2, 3), 1)) is first  # equal inputs: remembered
    assert optimized_for(W, policy.attribute(Domain.grid((2, 3)))) is not first


def test_auto_offers_it_on_small_grids_and_returns_the_fitted_one():
    pol = policy.grid((2, 3), 1)
    W = ranges_2d((2, 3), 10, rng=1)
    best, table = choose_mechanism(W, pol, 1.0)
    assert "Optimized" in table.index
    assert table.loc["Optimized", "expected_error"] == pytest.approx(optimized_for(W, pol).expected_error(W, pol, 1.0))
    assert getattr(best, "optimized", True) is not None  # never the unfitted placeholder
    assert any(isinstance(m, mechanisms.Optimized) for m in default_candidates(policy.line(LINE8)))  # 1-D: offered
    assert not any(isinstance(m, mechanisms.Optimized)  # beyond the fit's cost bound (fit_cost > AUTO_COST)
                   for m in default_candidates(policy.line(Domain.grid(1024))))
    _, hist = choose_mechanism(workload.identity(6), pol, 1.0)  # the histogram: not worth a wait
    assert "histogram" in hist.loc["Optimized", "note"]


@pytest.mark.parametrize("kwargs, word", [({"restarts": 0}, "restarts"), ({"max_iter": 1.5}, "max_iter"),
                                          ({"rows": 0.5}, "rows")])
def test_bad_options_are_refused_by_name(kwargs, word):
    _, pol, _ = CASES["line"]
    with pytest.raises(InvalidParameterError, match=word):
        optimize(_workload(pol), pol, **kwargs)


def test_a_strategy_for_another_grid_is_refused():
    _, pol, _ = CASES["grid3x3"]
    m = mechanisms.Optimized.fit(_workload(pol), pol, rng=1, **QUICK)
    other = policy.grid((2, 4), 1)
    with pytest.raises(InvalidParameterError, match="shape"):
        m.expected_error(workload.identity(8), other, 1.0)
