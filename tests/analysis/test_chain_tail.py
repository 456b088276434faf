"""The exact (α, β) → ε of a chain of two-term errors (issue 28: the histogram under the line policy).

The bound of :func:`chain_coverage` is checked against brute-force enumeration of the noise on tiny chains and
against the exact n-step transfer iteration on the quote's own size; the detection
(:meth:`Transformed.difference_chain`) against the probability computed from the mechanism's actual crossing rows;
the quote against fresh Monte-Carlo releases (coverage ≥ 1 − β within 3 standard errors, and no waste: at 1 % less ε
the exact coverage falls below 1 − β).
"""

import itertools
import math

import numpy as np
import pytest

from blowfish_nb import Domain, accuracy, mechanisms, policy, workload
from blowfish_nb.analysis.chain_tail import _window, chain_coverage, chain_epsilon, lattice_half_width
from blowfish_nb.policy import transform
from blowfish_nb.policy.transform import crossing_rows
from blowfish_nb.ranges import Ranges


def pmf(scale: float, reach: int) -> tuple[np.ndarray, np.ndarray]:
    t = math.exp(-1.0 / scale)
    z = np.arange(-reach, reach + 1)
    return z, (1 - t) / (1 + t) * t ** np.abs(z)


def brute(rows: np.ndarray, m: int, scale: float, reach: int) -> float:
    """P(every |row · η| ≤ m), η iid discrete Laplace, by enumerating every η in [−reach, reach]^n."""
    z, p = pmf(scale, reach)
    n = rows.shape[1]
    grid = np.stack(np.meshgrid(*([np.arange(z.size)] * n), indexing="ij"), axis=-1).reshape(-1, n)
    ok = np.all(np.abs(z[grid] @ rows.T) <= m, axis=1)
    return float(np.sum(np.prod(p[grid[ok]], axis=1)))


def reach_for(n: int, scale: float) -> int:
    """A box whose dropped mass n·2t^{R+1}/(1 + t) is below 1e-10."""
    return math.ceil(scale * math.log(2 * n / 1e-10))


def chain_rows(n: int) -> np.ndarray:
    """The (n + 1) × n first differences of (0, Z₁, …, Z_n, 0)."""
    rows = np.zeros((n + 1, n))
    rows[np.arange(n), np.arange(n)] = 1
    rows[np.arange(1, n + 1), np.arange(n)] -= 1
    return rows


def exact_iteration(n: int, m: int, scale: float) -> float:
    """The chain's coverage by its n transfer steps on a lattice wide enough that the dropped mass is < 1e-12."""
    half = lattice_half_width(n, m, scale)
    z = np.arange(-half, half + 1)
    p = math.tanh(0.5 / scale) * np.exp(-np.abs(z) / scale)
    v = (z == 0).astype(float)
    for _ in range(n):
        v = p * _window(v, m)
    return float(_window(v, m)[half])


@pytest.mark.parametrize("n,m,scale", [(1, 1, 1.0), (2, 1, 0.7), (3, 2, 1.3), (4, 1, 0.4), (3, 3, 1.5)])
def test_bound_equals_brute_force_on_tiny_chains(n, m, scale):
    exact = brute(chain_rows(n), m, scale, reach_for(n, scale))
    bound = chain_coverage(n, m, scale)
    assert bound <= exact + 1e-9  # a lower bound (up to the enumeration's dropped mass)
    assert bound >= exact - 1e-6


@pytest.mark.parametrize("n,m,scale", [(4095, 50, 3.57), (4095, 10, 1.0), (300, 4, 0.6)])
def test_bound_is_below_and_within_1e_4_of_the_exact_iteration(n, m, scale):
    exact = exact_iteration(n, m, scale)
    bound = chain_coverage(n, m, scale)
    assert bound <= exact
    assert bound >= exact * (1 - 1e-4)


def test_zero_alpha_and_empty_chain():
    assert chain_coverage(0, 3, 1.0) == 1.0
    assert chain_coverage(5, 0, 1.0) == pytest.approx(math.tanh(0.5) ** 5, rel=1e-12)
    e = chain_epsilon(5, 1.0, 0.5, 0.1)  # α < 1: every term must be 0
    assert math.tanh(e / 2) ** 5 == pytest.approx(0.9, rel=1e-9)


@pytest.mark.parametrize("n,alpha,beta", [(15, 10, 0.05), (4095, 50, 0.05), (4095, 7.5, 0.01), (200, 3, 0.2)])
def test_epsilon_meets_the_target_and_wastes_under_one_percent(n, alpha, beta):
    e = chain_epsilon(n, 1.0, alpha, beta)
    m = math.floor(alpha)
    assert exact_iteration(n, m, 1.0 / e) >= 1 - beta
    assert exact_iteration(n, m, 1.0 / (0.99 * e)) < 1 - beta


def detected_brute(ranges: Ranges, k: int, m: int, scale: float) -> tuple[object, float, float]:
    """(difference_chain, P from the crossing rows by enumeration, the chain bound for the detected n)."""
    pol = policy.line(Domain.grid(k))
    found = mechanisms.Transformed().difference_chain(ranges, pol)
    rows = crossing_rows(ranges.lo, ranges.hi, transform(pol).edges, k).toarray()
    used = np.flatnonzero(np.any(rows != 0, axis=0))
    exact = brute(rows[:, used], m, scale, reach_for(used.size, scale)) if used.size else 1.0
    return found, exact, None if found is None else chain_coverage(found[0], m, scale)


def test_detection_agrees_with_the_crossing_rows_on_small_lines():
    """Every range set of 1–5 ranges on 5 cells: when a chain is detected its bound equals the probability computed
    from the mechanism's own crossing rows; the histogram (in any order, with repeats) is detected."""
    k, m, scale = 5, 1, 0.5
    spans = [(a, b) for a in range(k) for b in range(a, k)]
    rng = np.random.default_rng(0)
    detected = 0
    cases = [list(zip(range(k), range(k))), list(zip(range(k), range(k)))[::-1] + [(2, 2)]]
    cases += [[spans[i] for i in rng.choice(len(spans), size=rng.integers(1, 6), replace=False)] for _ in range(40)]
    for chosen in cases:
        r = Ranges(k, np.array([a for a, _ in chosen]), np.array([b for _, b in chosen]))
        found, exact, bound = detected_brute(r, k, m, scale)
        if found is not None:
            detected += 1
            assert found[1] == 1.0 and bound == pytest.approx(exact, abs=1e-7)
    assert detected >= 2
    assert mechanisms.Transformed().difference_chain(workload.identity(k), policy.dp(Domain.grid(k))) is None
    assert mechanisms.Transformed().difference_chain(workload.prefix(k), policy.line(Domain.grid(k))) is None


def test_the_line_histogram_quote_covers_on_fresh_draws_and_is_not_wasteful():
    """k = 256, (α, β) = (6, 0.1): 6,000 fresh releases' errors at the quoted ε cover with 0.9 ± 3 SE (exact: the
    coverage is not far above it either), and the quote is below the Monte-Carlo route's."""
    accuracy.clear_memory()
    k, alpha, beta = 256, 6.0, 0.1
    m, W, pol = mechanisms.Transformed(), workload.identity(k), policy.line(Domain.grid(k))
    e = accuracy.epsilon_for_accuracy(m, W, pol, alpha, beta)
    assert e == chain_epsilon(k - 1, 1.0, alpha, beta)
    draws = 6000
    z = accuracy.max_abs_errors(m, W, pol, e, draws, seed=11)
    covered = float(np.mean(z <= alpha))
    se = math.sqrt(beta * (1 - beta) / draws)
    assert covered >= 1 - beta - 3 * se
    assert covered <= 1 - beta + 3 * se + 1e-3  # exact up to the bracket: no more coverage than asked
    seeds = np.random.SeedSequence(0).spawn(accuracy.ROUNDS + 1)  # the route it replaced: ε = 1, then confirmations
    mc = accuracy.upper_quantile(accuracy.max_abs_errors(m, W, pol, 1.0, accuracy.DRAWS, seeds[0]), 1 - beta) / alpha
    for r in range(1, accuracy.ROUNDS + 1):
        q = accuracy.upper_quantile(accuracy.max_abs_errors(m, W, pol, mc, accuracy.DRAWS, seeds[r]), 1 - beta)
        if q <= alpha:
            break
        mc *= max(q / alpha, 1.01)
    assert e < mc


def test_out_of_reach_targets_fall_back_to_monte_carlo():
    """A β below the bound's rounding allowance, or an α whose lattice would be too long, gives None, and the quote
    is then Monte Carlo's (which refuses a 1 − 1e-300 quantile, as before the chain bound)."""
    from blowfish_nb.exceptions import InvalidParameterError

    assert chain_epsilon(4095, 1.0, 50, 1e-300) is None
    assert chain_epsilon(4095, 1.0, 1e6, 0.05) is None
    accuracy.clear_memory()
    m, W, pol = mechanisms.Transformed(), workload.identity(64), policy.line(Domain.grid(64))
    with pytest.raises(InvalidParameterError, match="beta"):
        accuracy.epsilon_for_accuracy(m, W, pol, 10.0, 1e-300)
