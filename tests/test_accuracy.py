"""(α, β) → ε: closed form against Monte Carlo, and releases that keep the promise."""

import numpy as np
import pytest

from blowfish_nb import Domain, datasets, mechanisms, policy, workload
from blowfish_nb.accuracy import epsilon_for_accuracy, error_draws, upper_quantile


def coverage(mech, W, pol, alpha, epsilon, n, seed):
    """Monte-Carlo P(every answer within alpha) at epsilon, and its standard error."""
    hits = np.mean(np.max(np.abs(error_draws(mech, W, pol, epsilon, n, seed=seed)), axis=1) <= alpha)
    return hits, np.sqrt(hits * (1 - hits) / n)


def test_closed_form_is_exact_for_laplace():
    d = Domain.grid(50)
    W, pol = workload.identity(50), policy.dp(d)
    eps = epsilon_for_accuracy(mechanisms.Laplace(), W, pol, 5.0, 0.1)
    # the discrete law's exact answer: P(all within 5) = 0.9 at eps (40,000 draws, 3 standard errors)
    p, se = coverage(mechanisms.Laplace(), W, pol, 5.0, eps, 40_000, seed=1)
    assert abs(p - 0.9) < 3 * se
    # and it is the least: 3% less ε misses the target
    p, se = coverage(mechanisms.Laplace(), W, pol, 5.0, 0.97 * eps, 40_000, seed=2)
    assert p < 0.9 - 3 * se


def test_closed_form_counts_whole_number_errors():
    """α = 4.99 promises the same as α = 4 (errors are whole numbers), α = 5 more."""
    d = Domain.grid(20)
    W, pol = workload.identity(20), policy.dp(d)
    e = [epsilon_for_accuracy(mechanisms.Laplace(), W, pol, a, 0.05) for a in (4.0, 4.99, 5.0)]
    assert e[0] == pytest.approx(e[1]) and e[2] < e[1]


def test_upper_quantile_covers_the_true_quantile():
    # exponential draws, true 0.9-quantile ln 10: the bound sits above it in ≥ 99% of repetitions
    rng = np.random.default_rng(0)
    misses = sum(upper_quantile(rng.exponential(size=500), 0.9) < np.log(10) for _ in range(2000))
    assert misses / 2000 <= 0.01 + 3 * np.sqrt(0.01 * 0.99 / 2000)


@pytest.mark.parametrize("mech,pol_name,query", [
    (mechanisms.Laplace(), "dp", "histogram"),
    (mechanisms.Transformed(), "line", "cumulative"),
    (mechanisms.Hierarchical(2), "threshold", "cumulative"),
    (mechanisms.Ordered(), "threshold", "histogram"),
])
def test_error_draws_have_the_analytic_variance(mech, pol_name, query):
    d = Domain.grid(32)
    pol = {"dp": policy.dp(d), "line": policy.line(d), "threshold": policy.threshold(d, 3)}[pol_name]
    W = workload.identity(32) if query == "histogram" else workload.prefix(32)
    draws = error_draws(mech, W, pol, 1.0, 20_000, seed=2)
    per_answer = np.mean(draws**2, axis=0)
    se = np.std(np.mean(draws**2, axis=1), ddof=1) / np.sqrt(draws.shape[0])
    assert abs(per_answer.mean() - mech.expected_error(W, pol, 1.0)) < 3 * se


@pytest.mark.parametrize("pol,query,kw", [
    ("dp", "histogram", {}),
    ("line", "cumulative", {}),
    ("threshold", "histogram", {"theta": 3}),
    ("dp", "range", {"ranges": [(0, 30_000), (20_000, 200_000), (100_000, 250_000)]}),
])
def test_accuracy_releases_meet_alpha_beta(pol, query, kw):
    """≥ 1 − β of seeded repetitions have every answer within α (tolerance: 3 binomial standard errors)."""
    df = datasets.salaries(n=3000, seed=4)
    alpha, beta, reps = 40.0, 0.1, 300
    truth = None
    hits = 0
    for seed in range(reps):
        r = df.blowfish.release(query, "salary", bins=40, policy=pol, accuracy=(alpha, beta), rng=seed, **kw)
        if truth is None:
            exact = df.blowfish.release(query, "salary", bins=40, policy=pol, epsilon=1e9, rng=0,
                                        mechanism=mechanisms.Laplace(), **kw)
            truth = exact.answers.round().to_numpy()
        hits += bool(np.all(np.abs(r.answers.to_numpy() - truth) <= alpha))
    assert r.accuracy == (alpha, beta) and r.epsilon > 0
    assert hits / reps >= (1 - beta) - 3 * np.sqrt(beta * (1 - beta) / reps)


def test_confidence_intervals_cover_at_their_level():
    df = datasets.salaries(n=2000, seed=5)
    exact = df.blowfish.release("cumulative", "salary", bins=30, epsilon=1e9, mechanism=mechanisms.Laplace(), rng=0)
    truth = exact.answers.round().to_numpy()
    covered = []
    for seed in range(200):
        r = df.blowfish.release("cumulative", "salary", bins=30, policy="line", epsilon=0.3, rng=seed)
        ci = r.confidence_interval(0.9, draws=2000)
        covered.append(((ci["lower"] <= truth) & (truth <= ci["upper"])).to_numpy())
    covered = np.array(covered)
    # where the true count is 0, an interval wholly below 0 is clipped to [0, 0] (counts are ≥ 0) and so covers:
    # those answers over-cover; the others are at the level, two-sided
    positive = covered[:, truth > 0]
    rate = np.mean(positive)
    assert abs(rate - 0.9) < 3 * np.sqrt(0.9 * 0.1 / np.size(positive)) + 0.01  # + MC error of the quantiles
    assert np.mean(covered) >= 0.9 - 3 * np.sqrt(0.9 * 0.1 / np.size(covered)) - 0.01


def test_intervals_refused_for_data_dependent_releases():
    df = datasets.salaries(n=500, seed=6)
    r = df.blowfish.release("histogram", "salary", bins=20, epsilon=1.0, mechanism="dawa", rng=0)
    assert r.expected_error is None
    with pytest.raises(Exception, match="adapts to the data"):
        r.confidence_interval()
    assert list(r.to_frame().columns) == ["answer"]


def test_closed_form_for_transformed_cumulative_matches_monte_carlo():
    d = Domain.grid(64)
    m, W, pol = mechanisms.Transformed(), workload.prefix(64), policy.line(d)
    eps = epsilon_for_accuracy(m, W, pol, 8.0, 0.1)
    p, se = coverage(m, W, pol, 8.0, eps, 40_000, seed=3)
    assert abs(p - 0.9) < 3 * se


def test_ranges_sharing_one_tree_edge_share_one_noise_term():
    """Adjacent ranges under the line cross the same edge: one term between them, so the ε of one range — the
    closed form is exact (Monte Carlo agrees), not the Monte-Carlo fallback's dearer bound."""
    from blowfish_nb.ranges import Ranges

    d = Domain.grid(50)
    m, pol = mechanisms.Transformed(), policy.line(d)
    pair, first = Ranges(50, [0, 8], [7, 49]), Ranges(50, [0], [7])
    assert m.single_terms(pair, pol) == m.single_terms(first, pol) == (1, 1.0)
    eps = epsilon_for_accuracy(m, pair, pol, 20.0, 0.05)
    assert eps == epsilon_for_accuracy(m, first, pol, 20.0, 0.05)
    p, se = coverage(m, pair, pol, 20.0, eps, 40_000, seed=6)
    assert abs(p - 0.95) < 3 * se
    three = Ranges(50, [0, 8, 8], [7, 49, 19])  # [8, 19] crosses two edges: no closed form
    assert m.single_terms(three, pol) is None


def test_monte_carlo_epsilon_meets_the_target_with_the_noise_drawn():
    """Shared noise (Transformed histogram under the line; hierarchical ranges): Monte Carlo, confirmed at the ε
    it returns, so the coverage there is at least 1 − β and not far above it."""
    d = Domain.grid(64)
    for m, W, pol in [(mechanisms.Transformed(), workload.identity(64), policy.line(d)),
                      (mechanisms.Hierarchical(4), workload.prefix(64), policy.dp(d))]:
        eps = epsilon_for_accuracy(m, W, pol, 8.0, 0.1)
        p, se = coverage(m, W, pol, 8.0, eps, 20_000, seed=4)
        assert p >= 0.9 - 3 * se
        p, se = coverage(m, W, pol, 8.0, 0.85 * eps, 20_000, seed=5)
        assert p < 0.9  # not wildly conservative


def test_ordered_prefixes_have_the_exact_closed_form():
    d = Domain.grid(64)
    m, W, pol = mechanisms.Ordered(), workload.prefix(64), policy.threshold(d, 3)
    eps = epsilon_for_accuracy(m, W, pol, 8.0, 0.1)
    p, se = coverage(m, W, pol, 8.0, eps, 40_000, seed=6)
    assert abs(p - 0.9) < 3 * se


def test_tiny_beta_and_huge_accuracy_need_no_division_by_zero():
    """Issue 13 §6: accuracy=(10, 1e-300) raised ZeroDivisionError."""
    from blowfish_nb.exceptions import InvalidParameterError

    df = datasets.salaries(n=500, seed=1)
    r = df.blowfish.release("histogram", "salary", bins=10, accuracy=(10, 1e-300))
    assert np.isfinite(r.epsilon) and r.epsilon > 0
    with pytest.raises(InvalidParameterError, match="beta"):  # Monte Carlo cannot bound a 1 − 1e-300 quantile
        df.blowfish.release("cumulative", "salary", bins=10, accuracy=(10, 1e-300), mechanism="hierarchical")


# -- remembered draws and chunked rounds (issue 16) ------------------------------------------------------------------

def _counting(monkeypatch):
    from blowfish_nb import accuracy

    rounds = []  # the round of each draw: its seed's place among the rounds' seeds (0: the ε = 1 round)
    real = accuracy.max_abs_errors
    monkeypatch.setattr(accuracy, "max_abs_errors", lambda *a, **k: rounds.append(a[5].spawn_key[-1]) or real(*a, **k))
    return rounds


def test_a_repeated_quote_redoes_no_monte_carlo_and_gives_the_same_epsilon(monkeypatch):
    """The cumulative histogram under dp (Monte Carlo: prefix sums share noise): the first quote draws rounds, the
    same (α, β) again draws none and returns the same ε; a new α reuses the plan's ε = 1 round; another analyst's
    scope draws its own rounds (its timing says nothing about this one's quotes) and finds the same ε."""
    from blowfish_nb import accuracy
    from blowfish_nb.analysis.selection import memo_scope

    accuracy.clear_memory()
    rounds = _counting(monkeypatch)
    m, W, pol = mechanisms.Laplace(), workload.prefix(50), policy.dp(Domain.grid(50))
    assert m.single_terms(W, pol) is None
    with memo_scope("ana"):
        first = epsilon_for_accuracy(m, W, pol, 20.0, 0.05)
        cold = len(rounds)
        assert cold >= 2 and rounds[:2] == [0, 1]
        for _ in range(3):
            assert epsilon_for_accuracy(m, W, pol, 20.0, 0.05) == first
        assert len(rounds) == cold
        epsilon_for_accuracy(m, W, pol, 22.0, 0.05)
        assert len(rounds) > cold and 0 not in rounds[cold:]
    del rounds[:]
    with memo_scope("bob"):
        assert epsilon_for_accuracy(m, W, pol, 20.0, 0.05) == first
    assert len(rounds) == cold


def test_round_draws_do_not_depend_on_threads_or_caller(monkeypatch):
    """A round's draws are a function of (mechanism, workload, policy, ε, draws, seed): the same on one thread and on
    two, and the chunk size is fixed by the domain alone."""
    from blowfish_nb import accuracy

    m, W, pol = mechanisms.Transformed(), workload.identity(300), policy.line(Domain.grid(300))
    one = accuracy.max_abs_errors(m, W, pol, 0.5, 400, seed=9)
    monkeypatch.setattr(accuracy, "THREADED_VALUES", 0)
    two = accuracy.max_abs_errors(m, W, pol, 0.5, 400, seed=9)
    np.testing.assert_array_equal(one, two)
    assert accuracy.chunk_draws(300) == accuracy.CHUNK_VALUES // 300
    monkeypatch.setattr(accuracy, "CHUNK_VALUES", 0)  # chunks of MIN_CHUNK draws: other draws, the same law
    small = accuracy.max_abs_errors(m, W, pol, 0.5, 400, seed=9)
    assert not np.array_equal(one, small)
    se = np.sqrt(np.var(one) / one.size + np.var(small) / small.size)
    assert abs(one.mean() - small.mean()) < 4 * se


def test_clear_memory_forgets_the_fitted_optimised_strategies():
    """clear_memory forgets selection's fitted strategies too: the next request fits again (a new object) and finds
    the same strategy (the fit is seeded), so forgetting changes no result."""
    from blowfish_nb import accuracy
    from blowfish_nb.analysis import selection

    W, pol = workload.identity(9), policy.grid((3, 3))
    first = selection.optimized_for(W, pol)
    assert selection.optimized_for(W, pol) is first
    accuracy.clear_memory()
    assert len(selection._OPTIMIZED) == 0
    again = selection.optimized_for(W, pol)
    assert again is not first
    for a, b in zip(first.optimized.factors, again.optimized.factors):
        np.testing.assert_array_equal(a.dense(), b.dense())
    assert again.expected_error(W, pol, 1.0) == first.expected_error(W, pol, 1.0)


def test_binomial_quantile_equals_scipy_on_a_grid():
    """accuracy.binomial_quantile (no scipy.stats import on the quote path) is binom.ppf exactly."""
    from scipy.stats import binom

    from blowfish_nb.accuracy import binomial_quantile

    for n in (1, 2, 5, 10, 50, 100, 800, 1000, 5000):
        for q in (0.5, 0.9, 0.95, 0.99, 0.999):
            for p in (0.01, 0.05, 0.5, 0.9, 0.95, 0.99, 0.999):
                assert binomial_quantile(q, n, p) == int(binom.ppf(q, n, p)), (q, n, p)


def test_count_intervals_are_clipped_at_zero_and_still_cover():
    """Issue 28 (4): no negative lower bound for a count; coverage is kept (a true count is ≥ 0)."""
    df = datasets.salaries(n=300, seed=7)
    exact = df.blowfish.release("histogram", "age", bins=62, bounds=(18, 80), epsilon=1e9,
                                mechanism=mechanisms.Laplace(), rng=0)
    truth = exact.answers.round().to_numpy()
    assert (truth == 0).any()  # empty bins: where the unclipped intervals went below 0
    covered, went_negative = [], 0
    for seed in range(100):
        r = df.blowfish.release("histogram", "age", bins=62, bounds=(18, 80), epsilon=0.2, rng=seed)
        ci = r.confidence_interval(0.9, draws=2000)
        assert (ci["lower"] >= 0).all() and (ci["lower"] <= ci["upper"]).all()
        went_negative += int((ci["answer"] - (ci["upper"] - ci["answer"]) < 0).any())
        covered.append(((ci["lower"] <= truth) & (truth <= ci["upper"])).to_numpy())
    assert went_negative > 0  # the clip did something
    rate = np.mean(covered)
    assert rate >= 0.9 - 3 * np.sqrt(0.9 * 0.1 / np.size(covered)) - 0.01


def test_intervals_of_a_custom_workload_are_not_clipped():
    from blowfish_nb.operators import Matrix

    df = datasets.salaries(n=300, seed=7)
    W = Matrix(np.array([[1.0, -1.0] + [0.0] * 8]))  # a difference of counts may be negative
    r = df.blowfish.release(W, "age", bins=10, bounds=(18, 80), epsilon=0.05, rng=1)
    ci = r.confidence_interval(0.9, draws=500)
    assert r.query == "workload"
    assert np.allclose(ci["upper"] - ci["answer"], ci["answer"] - ci["lower"])


@pytest.mark.parametrize("seed, k, q, alpha, beta", [(5, 256, 24, 30.0, 0.1), (6, 512, 48, 40.0, 0.05)])
def test_a_fitted_dp_range_quote_is_met_by_fresh_releases(seed, k, q, alpha, beta):
    """Auto's p-identity fit (SciPy's L-BFGS-B run by strategies/lbfgsb.py, issue 28) quoted by Monte Carlo:
    fresh releases of a non-zero histogram, drawn with a generator the quote never saw, are all within α with
    probability ≥ 1 − β (3 standard errors)."""
    import math

    from blowfish_nb.analysis.selection import optimized_for
    from blowfish_nb.ranges import Ranges

    rng = np.random.default_rng(seed)
    lo, hi = np.sort(rng.integers(0, k, size=(2, q)), axis=0)
    W, g = Ranges(k, lo, hi), policy.dp(Domain.grid(k))
    mech = optimized_for(W, g)
    assert mech.optimized.info["template"] == "p-identity"
    eps = epsilon_for_accuracy(mech, W, g, alpha, beta)
    x = rng.integers(0, 50, k).astype(float)
    n = 4000
    answers = mech.sample(x, W, g, eps, n, rng=np.random.default_rng(10_000 + seed))
    covered = float(np.mean(np.abs(answers - W @ x).max(axis=1) <= alpha))
    assert covered >= 1 - beta - 3 * math.sqrt(beta * (1 - beta) / n), covered


def test_the_cold_dp_range_quote_of_the_benchmark_is_met_by_fresh_releases():
    """benchmarks/quote_cold.py's own quote (64 ranges of 4,096 cells under dp, (50, 0.05)): auto's lone-start
    p-identity fit (issue 28: one descent, strategies/pidentity.py) on the plan's 126–129 classes, its Monte-Carlo ε;
    10,000 fresh releases of a non-zero histogram through the mechanism's own sampler, with a generator the quote
    never saw, are all within α with frequency ≥ 1 − β − 3 standard errors."""
    import math

    import pandas as pd

    from blowfish_nb.accessor import prepare
    from blowfish_nb.planning import plan_budget

    k, alpha, beta = 4096, 50.0, 0.05
    rng = np.random.default_rng(0)
    ranges = sorted((float(a), float(b)) for a, b in (np.sort(rng.integers(0, k, size=(64, 2)), axis=1) + [0, 1]))
    plan = prepare(pd.DataFrame({"v": np.linspace(0, k - 1, 100)}), "range", "v", bins=k, bounds=(0, k),
                   policy="dp", ranges=ranges)
    b = plan_budget(plan, accuracy=(alpha, beta))
    assert b.mechanism.optimized.info["template"] == "p-identity"
    W, g = b.run.workload, b.run.policy
    x = np.random.default_rng(7).integers(0, 50, g.domain.size).astype(float)
    n = 10_000
    answers = b.mechanism.sample(x, W, g, b.epsilon, n, rng=np.random.default_rng(20_000))
    covered = float(np.mean(np.abs(answers - W @ x).max(axis=1) <= alpha))
    assert covered >= 1 - beta - 3 * math.sqrt(beta * (1 - beta) / n), covered
