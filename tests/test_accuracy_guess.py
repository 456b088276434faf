"""The analytic first guess of the Monte-Carlo (α, β) → ε (issue 28): fast, never uncertified, not wasteful.

OrderedHierarchical knows its answers' exact error variances, so the quote starts from a Gaussian union guess
instead of a round of draws at ε = 1; the certifying rounds are unchanged. Coverage is checked on fresh draws
(other seeds than the quote's) with tolerances in standard errors.
"""

import math

import numpy as np
import pytest

from blowfish_nb import Domain, accuracy, mechanisms, policy, workload
from blowfish_nb.accuracy import epsilon_for_accuracy, error_draws, upper_quantile
from blowfish_nb.exceptions import InvalidParameterError

OH = mechanisms.OrderedHierarchical()
BETA = 0.05


@pytest.fixture(autouse=True)
def _monte_carlo_route(monkeypatch):
    """These tests are about the Monte-Carlo route: the quantile table (analysis/prefix_table.py) would answer
    the dp quotes at its tabulated k before any round is drawn, so it is switched off here."""
    monkeypatch.setattr(accuracy, "tabulated_epsilon", lambda *a: None)


def _policy(name, k):
    d = Domain.grid(k)
    return {"dp": policy.dp(d), "line": policy.line(d), "theta2": policy.threshold(d, 2)}[name]


def _spy_rounds(monkeypatch):
    """Record (round, ε, upper quantile) of every certifying round drawn."""
    seen = []
    real = accuracy._round

    def spy(mechanism, workload_, policy_, epsilon, draws, seeds, r, query):
        z = real(mechanism, workload_, policy_, epsilon, draws, seeds, r, query)
        seen.append((r, float(epsilon), upper_quantile(z, 1 - spy.beta)))
        return z

    monkeypatch.setattr(accuracy, "_round", spy)
    return seen, spy


@pytest.mark.parametrize("k", [64, 256])
@pytest.mark.parametrize("pol_name", ["dp", "line", "theta2"])
def test_guessed_quote_meets_alpha_beta_on_fresh_draws(monkeypatch, pol_name, k):
    """Cumulative counts with OrderedHierarchical: the quote is certified by its own rounds (none at ε = 1) and
    fresh draws at it cover at least 1 − β (3 standard errors)."""
    accuracy.clear_memory()
    seen, spy = _spy_rounds(monkeypatch)
    spy.beta = BETA
    W, pol = workload.prefix(k), _policy(pol_name, k)
    alpha = 3.0 * math.sqrt(OH.expected_error(W, pol, 1.0))  # ε of order 1 on every domain and policy
    eps = epsilon_for_accuracy(OH, W, pol, alpha, BETA, seed=3)
    assert seen and seen[0][0] == 1  # the analytic guess replaced round 0 (ε = 1)
    assert seen[-1][1] == eps and seen[-1][2] <= alpha  # the ε returned is the one its last round certified
    assert all(q > alpha for _, _, q in seen[:-1])  # earlier rounds failed, so the loop went on
    n = 4000
    z = np.max(np.abs(error_draws(OH, W, pol, eps, n, seed=101)), axis=1)
    p = float(np.mean(z <= alpha))
    assert p >= 1 - BETA - 3 * math.sqrt(BETA * (1 - BETA) / n)


@pytest.mark.parametrize("factor", [1e-3, 0.5, 0.97, 1.0, 4.0])
def test_no_guess_lets_an_uncertified_epsilon_out(monkeypatch, factor):
    """Whatever the first guess (far too small, a little small, exact, far too large), the ε returned is one at
    which a round's upper quantile was ≤ α with the noise drawn there, or the quote is refused."""
    accuracy.clear_memory()
    seen, spy = _spy_rounds(monkeypatch)
    spy.beta = 0.1
    k = 128
    W, pol = workload.prefix(k), policy.dp(Domain.grid(k))
    real = accuracy._analytic_guess
    monkeypatch.setattr(accuracy, "_analytic_guess", lambda *a: factor * real(*a))
    try:
        eps = epsilon_for_accuracy(OH, W, pol, 30.0, 0.1, seed=5)
    except InvalidParameterError as err:  # eight rounds were not enough to climb from the guess
        assert "rounds" in str(err) and all(q > 30.0 for _, _, q in seen)
        return
    assert seen[-1][1] == eps and seen[-1][2] <= 30.0
    seq = np.random.SeedSequence(5).spawn(accuracy.ROUNDS + 1)[seen[-1][0]]  # redrawn independently of the memo
    assert upper_quantile(accuracy.max_abs_errors(OH, W, pol, eps, accuracy.DRAWS, seq), 0.9) <= 30.0


def test_the_guess_is_no_costlier_and_no_more_wasteful_than_the_round_it_replaces(monkeypatch):
    """Over several seeds and targets: the guessed quotes draw fewer rounds in all than the ε = 1 route, and ask
    no more ε on average than it does plus its 1 % step."""
    seen, spy = _spy_rounds(monkeypatch)
    k = 256
    W, pol = workload.prefix(k), policy.dp(Domain.grid(k))
    real = accuracy._analytic_guess
    got = {"guess": [], "round": []}
    rounds = {"guess": 0, "round": 0}
    for alpha, beta in [(25.0, 0.05), (15.0, 0.1), (40.0, 0.01)]:
        spy.beta = beta
        for seed in range(4):
            for route in ("guess", "round"):
                accuracy.clear_memory()
                monkeypatch.setattr(accuracy, "_analytic_guess", real if route == "guess" else lambda *a: None)
                del seen[:]
                got[route].append(epsilon_for_accuracy(OH, W, pol, alpha, beta, seed=seed))
                rounds[route] += len(seen)
    assert rounds["guess"] < rounds["round"]
    ratio = np.array(got["guess"]) / np.array(got["round"])
    assert ratio.mean() <= 1.01, ratio


@pytest.mark.parametrize("pol_name", ["dp", "theta2"])
def test_answer_variances_are_the_errors_variances(pol_name):
    """OrderedHierarchical's answer_variances against the variance of its own error draws (4 standard errors:
    the variance of a sample variance is about 2σ⁴/n for these near-symmetric laws, a little more for heavy
    tails), and None for a workload that is not ranges."""
    k = 48
    W, pol = workload.prefix(k), _policy(pol_name, k)
    v = OH.answer_variances(W, pol, 0.7)
    n = 20_000
    emp = np.var(error_draws(OH, W, pol, 0.7, n, seed=8), axis=0)
    assert np.all(np.abs(emp - v) <= 4 * v * math.sqrt(3.0 / n))
    assert OH.answer_variances(_not_ranges(k), pol, 1.0) is None


def _not_ranges(k):
    from blowfish_nb.operators import Matrix

    return Matrix(np.ones((1, k)) * np.linspace(0, 1, k))


def test_gaussian_union_solves_its_equation():
    """The bisection's ε satisfies Σ 2Φ̄(α ε/√u) = room against math.erfc, and _erfc is math.erfc to 2e-7."""
    x = np.linspace(0, 25, 501)
    exact = np.array([math.erfc(v) for v in x])
    assert np.all(np.abs(accuracy._erfc(x) / exact - 1) < 2e-7)
    rng = np.random.default_rng(0)
    u = rng.uniform(1, 50, 300)
    for alpha, room in [(10.0, 0.03), (40.0, 1e-6), (5.0, 0.5)]:
        e = accuracy._gaussian_union_epsilon(u, alpha, room)
        total = sum(math.erfc(alpha * e / math.sqrt(2 * ui)) for ui in u)
        assert total == pytest.approx(room, rel=1e-6)


def test_chain_bound_solves_its_equation_by_an_independent_integration():
    """At the chain guess's ε, Hunter's bound Σ 2Φ̄(a_i) − Σ 2 P(X_i > a_i, X_{i−1} > a_{i−1}) equals the room, with
    each bivariate tail integrated independently (trapezoid on a fine grid of x, math.erfc), and the root lies
    below the union bound's (the chain bound is the smaller)."""
    rng = np.random.default_rng(1)
    q = 40
    unit = rng.uniform(5, 30, q)
    s = np.sqrt(unit)
    links = (s[1:] - s[:-1]) ** 2 + rng.uniform(0.5, 4, q - 1)  # Var(E_i − E_{i−1}), a valid covariance
    alpha, room = 20.0, 0.03
    union = accuracy._gaussian_union_epsilon(unit, alpha, room)
    e = accuracy._gaussian_chain_epsilon(unit, links, alpha, room, union)
    assert e < union
    sig = np.sqrt(unit)
    a = alpha * e / sig
    tail = lambda y: 0.5 * math.erfc(y / math.sqrt(2))  # noqa: E731
    total = sum(2 * tail(v) for v in a)
    for i in range(1, q):
        rho = (unit[i] + unit[i - 1] - links[i - 1]) / (2 * sig[i] * sig[i - 1])
        x = np.linspace(a[i], a[i] + 12, 20001)
        f = np.exp(-x**2 / 2) / math.sqrt(2 * math.pi) * np.array(
            [tail((a[i - 1] - rho * v) / math.sqrt(1 - rho**2)) for v in x])
        total -= 2 * float(np.sum((f[1:] + f[:-1]) / 2 * np.diff(x)))
    assert total == pytest.approx(room, rel=1e-3)


def _fitted_ranges(seed=4, k=96, q=20):
    from blowfish_nb.analysis.selection import optimized_for
    from blowfish_nb.ranges import Ranges

    rng = np.random.default_rng(seed)
    lo, hi = np.sort(rng.integers(0, k, size=(2, q)), axis=0)
    W, pol = Ranges(k, lo, hi), policy.dp(Domain.grid(k))
    return optimized_for(W, pol), W, pol


def test_optimized_answer_variances_are_the_errors_variances():
    """Auto's fitted p-identity (issue 28): each range's error w A⁺η has the variance answer_variances says
    (4 standard errors, as above), and None for a workload that is not ranges."""
    m, W, pol = _fitted_ranges()
    v = m.answer_variances(W, pol, 0.6)
    n = 20_000
    emp = np.var(error_draws(m, W, pol, 0.6, n, seed=9), axis=0)
    assert np.all(np.abs(emp - v) <= 4 * v * math.sqrt(3.0 / n))
    assert m.answer_variances(_not_ranges(W.shape[1]), pol, 1.0) is None


def test_a_fitted_range_quote_starts_from_the_guess_and_is_certified(monkeypatch):
    """The dp range quote of a fitted strategy draws no round at ε = 1 and returns an ε its last round certified;
    fresh releases at it cover 1 − β (3 standard errors)."""
    accuracy.clear_memory()
    seen, spy = _spy_rounds(monkeypatch)
    spy.beta = BETA
    m, W, pol = _fitted_ranges()
    alpha = 3.0 * math.sqrt(m.expected_error(W, pol, 1.0))
    eps = epsilon_for_accuracy(m, W, pol, alpha, BETA, seed=5)
    assert seen and seen[0][0] == 1 and seen[-1][1] == eps and seen[-1][2] <= alpha
    n = 8_000
    z = np.abs(error_draws(m, W, pol, eps, n, seed=11)).max(axis=1)
    assert float(np.mean(z <= alpha)) >= 1 - BETA - 3 * math.sqrt(BETA * (1 - BETA) / n)
