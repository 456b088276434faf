"""The range-component strategy (1-D ranges under a policy without ⊥ off a tree) and its exact-law (α, β) quote.

* Δ equals the brute-force Δ of its rows over the policy's edges and is at most 1, on small domains (G^θ, random
  graphs with cycles);
* the tail of a sum of h unit Laplaces is the numerical convolution's;
* its quote (:mod:`blowfish_nb.analysis.range_component_quote`) is checked against fresh releases through the
  mechanism's own sampler on a non-zero histogram: coverage 1 − β within 3 standard errors (fixed seeds);
* a quote whose components all have ≤ 5 ranges runs no fit and quotes no more than the best fixed mechanism;
* the bound is used only for the exact strategy it was built for.
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
from blowfish_nb.analysis.range_component_quote import component_epsilon, component_route
from blowfish_nb.planning import plan_budget
from blowfish_nb.ranges import Ranges
from blowfish_nb.strategies.optimized import DenseFactor, OptimizedStrategy
from blowfish_nb.strategies.range_components import exhaustive, range_component_strategy, sum_laplace_tail
from tests.brute import brute_sensitivity_edges


def _random_ranges(k, q, rng):
    ends = np.sort(rng.integers(0, k, size=(q, 2)), axis=1)
    return Ranges(k, ends[:, 0], ends[:, 1])


def test_delta_is_the_brute_force_delta_and_at_most_one():
    rng = np.random.default_rng(7)
    checked = hadamard = 0
    for _ in range(60):
        k = int(rng.integers(4, 12))
        d = Domain.grid(k)
        extra = [(int(a), int(b)) for a, b in rng.integers(0, k, size=(3, 2)) if a != b]
        pols = [policy.threshold(d, 2), policy.threshold(d, 3),
                policy.custom(d, [(i, i + 1) for i in range(k - 1)] + extra)]
        W = _random_ranges(k, int(rng.integers(1, 7)), rng)
        for pol in pols:
            s = range_component_strategy(W, pol)
            if s is None:  # dependent ranges, or a tree
                continue
            X = s.factors[0].X
            edges = {(int(a), int(b)) for a, b in pol.edges()}
            assert s.sensitivity == pytest.approx(brute_sensitivity_edges(X, edges), abs=1e-12)
            assert s.sensitivity <= 1 + 1e-12
            assert mechanisms.Optimized(s).sensitivity(pol) == s.sensitivity
            hadamard += any(b[0] == "hadamard" for b in s.info["blocks"])
            checked += 1
    assert checked > 80 and hadamard > 10


@pytest.mark.parametrize("h", [1, 2, 3, 4, 8])
def test_sum_of_laplace_tail_is_the_convolution(h):
    step = 1e-3
    u = np.arange(-60, 60, step)
    f = 0.5 * np.exp(-np.abs(u))
    density = f.copy()
    for _ in range(h - 1):
        density = np.convolve(density, f, mode="same") * step
    for x in (0.5, 3.0, 9.0):
        numeric = float(density[u > x].sum() * step)
        assert sum_laplace_tail(h, x) == pytest.approx(numeric, rel=5e-3, abs=1e-9)


def _case():
    d = Domain.grid(40)
    pol = policy.threshold(d, 2)
    # [0,10] and [12,20]: the edge 10 → 12 jumps over cell 11 and changes both (a Hadamard pair); [25,33] and
    # [30,38] share no edge with them; [3,6] is changed with [0,10]... only through cells 2–7 (its own edges)
    W = Ranges(40, [0, 12, 25, 30, 3], [10, 20, 33, 38, 6])
    return pol, W


def test_blocks_of_the_example():
    pol, W = _case()
    s = range_component_strategy(W, pol)
    kinds = sorted((b[0], len(b[1])) for b in s.info["blocks"])
    assert ("hadamard", 2) in kinds and exhaustive(s)


@pytest.mark.parametrize("alpha,beta", [(6.0, 0.1), (12.0, 0.02)])
def test_quoted_epsilon_covers_without_waste(alpha, beta):
    """Fresh releases (the mechanism's own sampler, a non-zero histogram) at the quoted ε: coverage 1 − β ± 3 SE."""
    pol, W = _case()
    m = mechanisms.Optimized(range_component_strategy(W, pol))
    eps = epsilon_for_accuracy(m, W, pol, alpha, beta)
    assert eps == component_epsilon(m, pol, component_route(m, W, pol), alpha, beta)
    x = np.random.default_rng(1).integers(0, 500, 40).astype(float)
    draws = 40_000
    answers = m.sample(x, W, pol, eps, draws, rng=np.random.default_rng(2))
    covered = float(np.mean(np.all(np.abs(answers - W @ x) <= alpha, axis=1)))
    se = math.sqrt(beta * (1 - beta) / draws)
    assert abs(covered - (1 - beta)) <= 3 * se, (covered, se)


def test_bound_only_for_the_exact_strategy():
    pol, W = _case()
    s = range_component_strategy(W, pol)
    X = s.factors[0].X.copy()
    X[0, 0] *= 1.5  # another matrix under the same name: not this route
    other = OptimizedStrategy((DenseFactor(X),), float(pol.sensitivity(DenseFactor(X))), 0.0, (40,), dict(s.info))
    assert component_route(mechanisms.Optimized(other), W, pol) is None
    assert component_route(mechanisms.Optimized(s), W, pol) is not None


@pytest.fixture
def no_fit(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a quote ran auto's fit")
    monkeypatch.setattr(selection, "_fit", refuse)
    clear_memory()
    yield
    clear_memory()


def test_threshold_range_quote_with_small_components_runs_no_fit(no_fit):
    k = 1024
    rng = np.random.default_rng(1)
    ranges = sorted((float(a), float(b)) for a, b in (np.sort(rng.integers(0, k, size=(16, 2)), axis=1) + [0, 1]))
    plan = prepare(pd.DataFrame({"v": [1.0, 2.0]}), "range", "v", bins=k, bounds=(0, k), policy="threshold",
                   theta=4, ranges=ranges)
    b = plan_budget(plan, accuracy=(30, 0.05))
    W, pol = b.run.workload, b.run.policy
    assert not pol.is_tree()
    assert b.table.loc["Optimized", "note"] == selection.STAND_IN_NOTE
    fixed = [epsilon_for_accuracy(mech, W, pol, 30, 0.05) for mech in (mechanisms.Ordered(), mechanisms.Transformed())]
    assert b.epsilon <= min(fixed)
    assert b.epsilon == epsilon_for_accuracy(b.mechanism, W, pol, 30, 0.05)


@pytest.mark.parametrize("alpha,beta", [(8.0, 0.1)])
def test_union_over_a_larger_block_still_covers(alpha, beta):
    """A Hadamard block of order 4 (three ranges, one block: its answers' union bound) covers at least 1 − β − 3 SE
    on fresh releases (the union only errs on the safe side)."""
    pol = policy.threshold(Domain.grid(30), 4)
    W = Ranges(30, [5, 5, 17], [7, 24, 26])
    s = range_component_strategy(W, pol)
    assert [(b[0], b[3]) for b in s.info["blocks"]] == [("hadamard", 4)]
    m = mechanisms.Optimized(s)
    eps = epsilon_for_accuracy(m, W, pol, alpha, beta)
    x = np.random.default_rng(3).integers(0, 300, 30).astype(float)
    draws = 40_000
    answers = m.sample(x, W, pol, eps, draws, rng=np.random.default_rng(4))
    covered = float(np.mean(np.all(np.abs(answers - W @ x) <= alpha, axis=1)))
    se = math.sqrt(beta * (1 - beta) / draws)
    assert covered >= 1 - beta - 3 * se, (covered, se)
    assert covered <= 1 - beta / 2  # and the union wastes less than half of β


def test_the_hunter_finds_no_violation():
    pol = policy.threshold(Domain.grid(9), 2)
    W = Ranges(9, [0, 4, 2], [2, 8, 5])
    s = range_component_strategy(W, pol)
    assert any(b[0] == "hadamard" for b in s.info["blocks"])
    m = mechanisms.Optimized(s)
    result = hunt(m, pol, 1.0, workload=W, rng=21, bases=8, pairs=7, pilot=4_000, confirm=20_000, candidates=3)
    assert not result.violation, str(result)
