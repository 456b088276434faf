"""The range–edge stand-in for auto's fit and its exact (α, β) quote (issue 28: cold range quotes under the line).

* the strategy's Δ is the brute-force Δ of its rows over the policy's edges, at most 1, on small domains;
* it stands in only under tree policies without ⊥ (the fit runs as before elsewhere) and never for the histogram;
* its quote (:mod:`blowfish_nb.analysis.scaled_rows`) is checked against fresh releases through the mechanism's own
  sampler on a non-zero histogram: the coverage is 1 − β within 3 standard errors (no loss, and no waste beyond
  the SE), and the bound equals the exact product law of the rows' discrete Laplace terms;
* a quote of 1-D ranges under the line runs no fit, quotes no more than the best fixed mechanism, and the release
  budget names the mechanism whose ε it quotes;
* the hunter finds no violation of the stand-in's releases.
"""

import math

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import Domain, mechanisms, policy
from blowfish_nb.accessor import prepare
from blowfish_nb.accuracy import clear_memory, epsilon_for_accuracy
from blowfish_nb.analysis import selection
from blowfish_nb.analysis.hunt import hunt
from blowfish_nb.analysis.scaled_rows import ROUNDING_STEPS, scaled_rows, scaled_rows_coverage, scaled_rows_epsilon
from blowfish_nb.planning import plan_budget
from blowfish_nb.ranges import Ranges
from blowfish_nb.strategies.range_edges import range_edge_strategy
from tests.brute import brute_sensitivity_edges


def _random_ranges(k, q, rng):
    ends = np.sort(rng.integers(0, k, size=(q, 2)), axis=1)
    return Ranges(k, ends[:, 0], ends[:, 1])


def _random_tree(k, rng):
    return [(int(v), int(rng.integers(0, v))) for v in range(1, k)]


def test_delta_is_the_brute_force_delta_and_at_most_one():
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(40):
        k = int(rng.integers(4, 11))
        d = Domain.grid(k)
        pols = [policy.line(d), policy.threshold(d, 2), policy.custom(d, _random_tree(k, rng))]
        W = _random_ranges(k, int(rng.integers(1, 6)), rng)
        for pol in pols:
            s = range_edge_strategy(W, pol)
            if s is None:  # dependent ranges
                continue
            X = s.factors[0].X
            edges = {(int(a), int(b)) for a, b in pol.edges()}
            assert s.sensitivity == pytest.approx(brute_sensitivity_edges(X, edges), abs=1e-12)
            assert s.sensitivity <= 1 + 1e-12
            assert mechanisms.Optimized(s).sensitivity(pol) == s.sensitivity
            checked += 1
    assert checked > 60


def test_stand_in_only_for_ranges_under_tree_policies():
    d = Domain.grid(16)
    W = Ranges(16, [1, 5, 9], [3, 12, 14])
    assert selection.is_stand_in(selection.range_edge_stand_in(W, policy.line(d)))
    assert selection.range_edge_stand_in(W, policy.custom(d, _random_tree(16, np.random.default_rng(0)))) is not None
    off_tree = selection.range_edge_stand_in(W, policy.threshold(d, 2))  # not a tree: the range-component strategy
    assert off_tree.optimized.info["template"] == "range-components" and selection.is_stand_in(off_tree)
    assert selection.range_edge_stand_in(W, policy.dp(d)) is None  # ⊥: the total is not public
    assert selection.range_edge_stand_in(Ranges(16, np.arange(16), np.arange(16)), policy.line(d)) is not None
    from blowfish_nb import workload
    assert selection.range_edge_stand_in(workload.identity(16), policy.line(d)) is None  # auto never fits it


def test_bound_is_the_product_of_the_rows_exact_laws():
    d = Domain.grid(32)
    pol = policy.line(d)
    W = Ranges(32, [2, 2, 7, 7, 20], [6, 6, 15, 25, 30])  # a repeated range; boundary 7 shared by three ranges
    m = mechanisms.Optimized(range_edge_strategy(W, pol))
    index, c = scaled_rows(m, W, pol)
    assert index.tolist() == [0, 0, 1, 2, 3] and c.tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3, 1.0], abs=0)
    delta, gamma, rows = m._lattice(pol, 1.0)
    alpha, eps = 6.0, 0.7
    t = math.exp(-eps / (delta / gamma + rows))
    exact = 1.0
    for cj in c:
        steps = math.floor(alpha * cj / gamma) - ROUNDING_STEPS
        exact *= 1 - 2 * t ** (steps + 1) / (1 + t)  # P(|η| ≤ steps) of the discrete Laplace of ratio t
    assert scaled_rows_coverage(c, delta, gamma, rows, alpha, eps) == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("alpha,beta", [(4.0, 0.1), (9.0, 0.02)])
def test_quoted_epsilon_covers_without_waste(alpha, beta):
    """Fresh releases (the mechanism's own sampler, a non-zero histogram) at the quoted ε: coverage 1 − β ± 3 SE."""
    d = Domain.grid(40)
    pol = policy.line(d)
    W = Ranges(40, [0, 3, 3, 11, 18, 30], [10, 10, 17, 25, 29, 39])
    m = mechanisms.Optimized(range_edge_strategy(W, pol))
    eps = epsilon_for_accuracy(m, W, pol, alpha, beta)
    assert eps == scaled_rows_epsilon(m, pol, scaled_rows(m, W, pol)[1], alpha, beta)
    x = np.random.default_rng(1).integers(0, 500, 40).astype(float)
    draws = 40_000
    answers = m.sample(x, W, pol, eps, draws, rng=np.random.default_rng(2))
    covered = float(np.mean(np.all(np.abs(answers - W @ x) <= alpha, axis=1)))
    se = math.sqrt(beta * (1 - beta) / draws)
    assert abs(covered - (1 - beta)) <= 3 * se, (covered, se)


@pytest.fixture
def no_fit(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a quote of ranges under a tree policy ran auto's fit")
    monkeypatch.setattr(selection, "_fit", refuse)
    clear_memory()
    yield
    clear_memory()


@pytest.mark.parametrize("seed", [0, 3])
def test_line_range_quote_runs_no_fit_and_quotes_no_more_than_fixed(no_fit, seed):
    k = 1024
    rng = np.random.default_rng(seed)
    ranges = sorted((float(a), float(b)) for a, b in (np.sort(rng.integers(0, k, size=(24, 2)), axis=1) + [0, 1]))
    plan = prepare(pd.DataFrame({"v": [1.0, 2.0]}), "range", "v", bins=k, bounds=(0, k), policy="line", ranges=ranges)
    b = plan_budget(plan, accuracy=(30, 0.05))
    W, pol = b.run.workload, b.run.policy
    note = b.table.loc["Optimized", "note"]
    assert note == selection.STAND_IN_NOTE
    fixed = [epsilon_for_accuracy(mech, W, pol, 30, 0.05) for mech in (mechanisms.Ordered(), mechanisms.Transformed())]
    assert b.epsilon <= min(fixed)
    assert b.epsilon == epsilon_for_accuracy(b.mechanism, W, pol, 30, 0.05)  # the ε of the mechanism it names


def test_the_hunter_finds_no_violation():
    d = Domain.grid(8)
    pol = policy.line(d)
    W = Ranges(8, [0, 2, 2, 5], [1, 4, 6, 7])
    m = mechanisms.Optimized(range_edge_strategy(W, pol))
    result = hunt(m, pol, 1.0, workload=W, rng=21, bases=8, pairs=7, pilot=4_000, confirm=20_000, candidates=3)
    assert not result.violation, str(result)
