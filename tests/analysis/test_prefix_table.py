"""The tabulated quantiles behind the cumulative-under-dp quote (analysis/prefix_table.py, issue 28).

What is checked: the shipped rows are the ones the build draws (a changed sampler or estimator fails here, not
silently); each entry bounds its quantile, against the exact law on a 2-cell domain; the quoted ε covers
(1 − β) on fresh draws within 3 SE; it asks no more than the Monte-Carlo route's slack over the bisected ε*;
and the quote draws no Monte-Carlo round when the table covers it, and falls back when it does not.
"""

import math

import numpy as np
import pytest

from blowfish_nb import Domain, accuracy, mechanisms, policy, workload
from blowfish_nb.analysis import prefix_table as pt
from blowfish_nb.ranges import Ranges

OH = mechanisms.OrderedHierarchical()


def _quote(k, alpha, beta):
    return pt.tabulated_epsilon(OH, workload.prefix(k), policy.dp(Domain.grid(k)), alpha, beta)


@pytest.mark.parametrize("k, points", [(64, [0, 96, 256]), (256, [40, 130])])
def test_the_shipped_rows_are_the_builds(k, points):
    """Rows recomputed from their seeds equal the shipped ones (rounded up to float16 as stored)."""
    exact = pt.build_rows(k, points)
    rebuilt = pt._round_up16(exact)
    assert np.array_equal(pt._rows(k)[points], rebuilt)
    assert np.all(rebuilt.astype(float) >= exact)  # stored values never round down


def test_the_ranks_are_the_monte_carlo_rounds_order_statistics():
    """Each entry's rank is the order statistic accuracy.upper_quantile would check (99 % bound on the quantile)."""
    for beta in pt.BETAS:
        assert pt._rank(pt.DRAWS, 1 - beta) == accuracy.binomial_quantile(pt.CONFIDENCE, pt.DRAWS, 1 - beta) + 1


def _exact_max_law(b):
    """The exact law of max(|E₁|, |E₂|) on 2 cells, as (values, probabilities), by enumerating the noise lattice.

    The tree pads the 2 cells to 16 leaves under one root; its least squares reads cell i as
    y_i + (y_root − Σ leaves)/17, so 17·(E₁, E₂) = y₀(16, 15) + y₁(−1, 15) + T(−1, −2), T the sum of the 14
    padding leaves minus the root (15 independent symmetric discrete Laplace terms): three independent integer
    variables.
    """
    t = math.exp(-1 / b)
    m = int(math.ceil(28 * b)) + 5  # P(|Z| > m) < t^m < e^-28 per term
    z = np.arange(-m, m + 1)
    pmf = (1 - t) / (1 + t) * t ** np.abs(z)
    law = np.array([1.0])
    for _ in range(15):
        law = np.convolve(law, pmf)
    tz = np.arange(-15 * m, 15 * m + 1)
    keep = law > 1e-18
    law, tz = law[keep], tz[keep]
    y0, y1 = np.meshgrid(z, z, indexing="ij")
    p01 = (pmf[:, None] * pmf[None, :]).ravel()
    e1 = (16 * y0 - y1).ravel()
    e2 = (15 * y0 + 15 * y1).ravel()
    values, probs = [], []
    for tv, tp in zip(tz, law):
        values.append(np.maximum(np.abs(e1 - tv), np.abs(e2 - 2 * tv)))
        probs.append(p01 * tp)
    values, probs = np.concatenate(values), np.concatenate(probs)
    order = np.argsort(values, kind="stable")
    return values[order] / 17, np.cumsum(probs[order])


@pytest.mark.parametrize("g", [0, 32, 64])  # b = 0.5, 1, 2
def test_entries_bound_the_exact_quantiles_on_two_cells(g):
    """Brute force: every entry is ≥ the exact (1 − β)-quantile, and not beyond the (1 − β + 5 SE)-quantile."""
    b = pt._grid()[g]
    values, cdf = _exact_max_law(b)
    assert cdf[-1] > 1 - 1e-10  # the lattice holds the law
    entries = pt.build_rows(2, [g])[0] * b
    for beta, entry in zip(pt.BETAS, entries):
        exact = values[np.searchsorted(cdf, 1 - beta)]
        assert entry >= exact - 1e-12, (beta, entry, exact)
        level = min(1 - beta + 5 * math.sqrt(beta * (1 - beta) / pt.DRAWS), cdf[-1])
        assert entry <= values[np.searchsorted(cdf, level)] + 1e-12, (beta, entry)
        assert cdf[np.searchsorted(values, entry, side="right") - 1] >= 1 - beta  # coverage at the entry, exactly


@pytest.mark.parametrize("k, alpha, beta, draws", [(128, 10.0, 0.1, 8000), (4096, 50.0, 0.05, 2000),
                                                   (256, 12.0, 0.01, 8000), (1024, 40.0, 0.05, 3000)])
def test_coverage_at_the_quoted_epsilon(k, alpha, beta, draws):
    """Fresh releases of the noise at the quoted ε: P(max |error| ≤ α) ≥ 1 − β within 3 SE."""
    eps = _quote(k, alpha, beta)
    assert eps is not None
    z = accuracy.max_abs_errors(OH, workload.prefix(k), policy.dp(Domain.grid(k)), eps, draws, seed=20261127)
    coverage = float(np.mean(z <= alpha))
    assert coverage >= 1 - beta - 3 * math.sqrt(beta * (1 - beta) / draws), coverage


def test_no_more_epsilon_than_the_monte_carlo_slack_over_epsilon_star(monkeypatch):
    """k = 256, (α, β) = (12, 0.05): ε* (coverage 0.95) by bisection on 20,000 draws of one seed; the table's ε
    lies within its grid step + certification margin of ε*, and below the Monte-Carlo route's ε (seed 0)."""
    k, alpha, beta = 256, 12.0, 0.05
    W, pol = workload.prefix(k), policy.dp(Domain.grid(k))
    eps = _quote(k, alpha, beta)

    def coverage(e):
        return float(np.mean(accuracy.max_abs_errors(OH, W, pol, e, 20000, seed=7) <= alpha))

    lo, hi = 0.8 * eps, 1.1 * eps
    assert coverage(lo) < 1 - beta <= coverage(hi)
    for _ in range(12):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if coverage(mid) < 1 - beta else (lo, mid)
    star = hi
    monkeypatch.setattr(accuracy, "tabulated_epsilon", lambda *a: None)
    accuracy.clear_memory()
    try:
        mc = accuracy.epsilon_for_accuracy(OH, W, pol, alpha, beta)
    finally:
        accuracy.clear_memory()
    assert 0.99 < eps / star < 1.05, eps / star
    assert eps <= mc * 1.005, (eps, mc, star)


def test_the_quote_draws_no_round(monkeypatch):
    """epsilon_for_accuracy answers the cumulative dp quote at k = 4,096 from the table: no Monte-Carlo draw."""
    def refuse(*args, **kwargs):
        raise AssertionError("a Monte-Carlo round was drawn")

    monkeypatch.setattr(accuracy, "max_abs_errors", refuse)
    accuracy.clear_memory()
    try:
        eps = accuracy.epsilon_for_accuracy(OH, workload.prefix(4096), policy.dp(Domain.grid(4096)), 50, 0.05)
    finally:
        accuracy.clear_memory()
    assert eps == _quote(4096, 50, 0.05)


def test_the_table_declines_what_it_does_not_cover():
    k = 256
    pol = policy.dp(Domain.grid(k))
    assert pt.tabulated_epsilon(OH, workload.prefix(k), pol, 12, 1e-4) is None  # β below the levels
    assert pt.tabulated_epsilon(OH, workload.prefix(k), pol, 0.01, 0.05) is None  # α below the grid's reach
    assert pt.tabulated_epsilon(OH, workload.prefix(k), pol, 1e6, 0.05) is None  # α beyond it
    assert _quote(200, 12, 0.05) is None  # k not tabulated
    assert pt.tabulated_epsilon(OH, workload.prefix(k), policy.threshold(Domain.grid(k), 4), 12, 0.05) is None
    some = Ranges(k, np.zeros(10, dtype=np.int64), np.arange(10))  # ten prefixes only
    assert pt.tabulated_epsilon(OH, some, pol, 12, 0.05) is None
    assert pt.tabulated_epsilon(mechanisms.OrderedHierarchical(branching=4), workload.prefix(k), pol, 12, 0.05) is None


def test_a_looser_beta_never_asks_more_epsilon():
    eps = [_quote(256, 12.0, beta) for beta in (0.01, 0.05, 0.1, 0.2)]
    assert all(a >= b for a, b in zip(eps, eps[1:])), eps
