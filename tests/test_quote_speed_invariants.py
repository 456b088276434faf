"""Remembered quotes change no result: the same mechanism, the same table and the same ε to the last bit.

A quote (mechanism choice, and ε from (α, β)) is remembered per public
inputs (:mod:`blowfish_nb.analysis.selection`, :mod:`blowfish_nb.accuracy`).
Every case of a grid — policies, queries, domains of 62 and 2,048 cells,
closed forms and Monte Carlo — is quoted from an empty memory and again
from a full one, and compared with the computation written out as it was
before the memory existed (:func:`reference_choice`,
:func:`reference_epsilon`).
"""

import random

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import Domain, accuracy, constraints, datasets, mechanisms, policy, workload
from blowfish_nb.accuracy import ROUNDS, epsilon_for_accuracy, max_abs_errors, upper_quantile
from blowfish_nb.analysis import selection
from blowfish_nb.analysis.chain_tail import chain_epsilon
from blowfish_nb.analysis.range_component_quote import component_epsilon, component_route
from blowfish_nb.analysis.scaled_rows import scaled_rows, scaled_rows_epsilon
from blowfish_nb.analysis.selection import choose_mechanism, default_candidates, memo_scope, public_key
from blowfish_nb.planning import Catalog, Run
from blowfish_nb.ranges import Ranges


def forget():
    accuracy.clear_memory()


def same(m1, m2) -> bool:
    """The same mechanism: class and parameters (Laplace and Privelet compare by identity otherwise)."""
    if isinstance(m1, mechanisms.Optimized) and type(m2) is type(m1):  # two fits of one seeded optimisation
        return selection.public_key(workload.identity(1), policy.dp(Domain.grid(1)), m1) == \
            selection.public_key(workload.identity(1), policy.dp(Domain.grid(1)), m2)
    return type(m1) is type(m2) and vars(m1) == vars(m2)


def reference_choice(W, pol, epsilon, candidates):
    """choose_mechanism as written before it remembered anything: every candidate's error, the least chosen.

    (The table's lower-bound column is not compared: the test checks the choice, the errors and ε.)
    """
    errors = []
    for mech in candidates:
        try:
            errors.append(mech.expected_error(W, pol, epsilon))
        except selection.BlowfishError:
            errors.append(np.inf)
    # issue 28: Optimized is not fitted (no error) where the SVD bound leaves it no room to win (fit_can_win)
    fitted = [i for i, m in enumerate(candidates) if isinstance(m, selection.Optimized)]
    if fitted and pol.domain.size <= selection.LOWER_BOUND_LIMIT // 4:
        best_fixed = min((e for i, e in enumerate(errors) if i not in fitted), default=np.inf)
        if selection.fit_can_win(selection.lower_bound(W, pol, epsilon), best_fixed) is not None:
            for i in fitted:
                errors[i] = np.inf
    return candidates[int(np.argmin(errors))], errors


def reference_fitted(mech, W, pol, candidates):
    """Optimized() as auto quotes it: the range-edge / range-component stand-in where it beats every fixed
    candidate (issue 28), else the fit (or a row saying why not)."""
    if not (isinstance(mech, selection.Optimized) and mech.optimized is None):
        return mech
    stand_in = selection.range_edge_stand_in(W, pol)
    if stand_in is not None:
        fixed = []
        for c in candidates:
            if isinstance(c, selection.Optimized):
                continue
            try:
                fixed.append(c.expected_error(W, pol, 1.0))
            except selection.BlowfishError:
                pass
        bound = selection.lower_bound(W, pol, 1.0)
        if selection.fit_can_win(bound, min(fixed)) is None and \
                stand_in.expected_error(W, pol, 1.0) < min(fixed) * (1 - selection.GAIN):
            return stand_in
    return selection._fitted(mech, W, pol)


def reference_alternative(best, epsilon, errors, candidates, run, acc):
    """plan_budget's second look (issue 28): a stand-in against the best fixed candidate's ε, a fit against the
    range-component strategy's exact ε; the lower ε is kept with its mechanism."""
    W, pol = run.workload, run.policy
    if selection.is_stand_in(best):
        fixed = [(e, i) for i, (e, c) in enumerate(zip(errors, candidates))
                 if not isinstance(c, selection.Optimized) and np.isfinite(e)]
        if fixed:
            alt = candidates[min(fixed)[1]]
            alt_eps = accuracy.epsilon_below(alt, W, pol, *acc, epsilon)
            if alt_eps is not None:
                return alt, alt_eps
    elif isinstance(best, selection.Optimized):
        alt = selection.component_alternative(W, pol)
        if alt is not None:
            alt_eps = reference_epsilon(alt, W, pol, *acc)
            if alt_eps < epsilon:
                return alt, alt_eps
    return best, epsilon


def reference_epsilon(mechanism, W, pol, alpha, beta, draws=accuracy.DRAWS, seed=0):
    """epsilon_for_accuracy as written before it remembered anything (closed form, else a first guess and
    certifying Monte-Carlo rounds)."""
    terms = mechanism.single_terms(W, pol) if hasattr(mechanism, "single_terms") else None
    if terms is not None:
        count, delta = terms
        if count == 0 or delta == 0:
            return 1e-12
        return accuracy._single_term_epsilon(count, delta, alpha, beta)
    blocks = component_route(mechanism, W, pol)  # the range-component strategy's exact law (issue 28)
    exact = None if blocks is None else component_epsilon(mechanism, pol, blocks, alpha, beta)
    if exact is not None:
        return exact
    rows = scaled_rows(mechanism, W, pol)  # the range-edge strategy's exact law (issue 28)
    exact = None if rows is None else scaled_rows_epsilon(mechanism, pol, rows[1], alpha, beta)
    if exact is not None:
        return exact
    chain = mechanism.difference_chain(W, pol)  # the exact chain bound (issue 28: the histogram under the line)
    exact = None if chain is None else 1e-12 if chain[1] == 0 else chain_epsilon(chain[0], chain[1], alpha, beta)
    if exact is not None:
        return exact
    seeds = np.random.SeedSequence(seed).spawn(ROUNDS + 1)
    # the first guess: analytic where the mechanism knows its answers' variances (stop 34), else a round at ε = 1
    epsilon = accuracy._analytic_guess(mechanism, W, pol, alpha, beta, draws, None)
    if epsilon is None:
        epsilon = upper_quantile(max_abs_errors(mechanism, W, pol, 1.0, draws, seeds[0]), 1 - beta) / alpha
    if epsilon == 0:
        return 1e-12
    for r in range(1, ROUNDS + 1):
        q = upper_quantile(max_abs_errors(mechanism, W, pol, epsilon, draws, seeds[r]), 1 - beta)
        if q <= alpha:
            return float(epsilon)
        epsilon *= max(q / alpha, 1.01)
    raise AssertionError("the reference found no ε")


@pytest.fixture(scope="module")
def catalogs():
    df = datasets.salaries(n=400, seed=3)
    bins = {"age": 62, "salary": 2048}
    bounds = {"age": (18, 80), "salary": (0, 262144)}
    specs = {"dp": "dp", "line": "line", "threshold 3": ("threshold", {"theta": 3}), "bounded": "bounded"}
    return {name: Catalog.from_data(df, bins, spec, bounds) for name, spec in specs.items()}


def ranges(lo, hi, n, adjacent):
    """n ranges on bin edges of [lo, hi): adjacent blocks, or nested ones from lo."""
    edges = np.linspace(lo, hi, n + 1)
    if adjacent:
        return [(float(a), float(b)) for a, b in zip(edges[:-1], edges[1:])]
    return [(float(lo), float(b)) for b in edges[1:]]


def grid():
    """(policy, query, column, ranges, epsilon, accuracy) cases: ε given and (α, β) given, shared and fresh rounds.

    62 cells under three policies and four queries (closed forms and Monte Carlo, shared rounds: β = 0.05 and
    0.06 at one α often start from the same ε); on 2,048 cells the cases the service meets most (a round
    there has 1.6 million noise values and runs on two threads).
    """
    cases = []
    for pol in ("dp", "line", "threshold 3"):
        for query, rg in (("histogram", None), ("cumulative", None), ("range", ranges(18, 80, 31, True)),
                          ("range", ranges(18, 80, 8, False))):
            cases.append((pol, query, "age", rg, 0.37, None))
            cases += [(pol, query, "age", rg, None, acc) for acc in ((6.0, 0.05), (6.0, 0.06), (25.5, 0.05))]
    cases.append(("bounded", "histogram", "age", None, 0.37, None))
    salary = ranges(0, 262144, 16, True)
    cases += [("line", "histogram", "salary", None, 0.37, None),
              ("line", "histogram", "salary", None, None, (25.0, 0.05)),
              ("threshold 3", "range", "salary", salary, None, (40.0, 0.05)),
              ("dp", "histogram", "salary", None, None, (25.0, 0.05)), ("dp", "range", "salary", salary, 0.37, None)]
    return cases


CASES = grid()


def test_remembered_quotes_equal_the_reference(catalogs):
    """Every case through Catalog.quote (the service's path) twice — in a shuffled order from an empty memory (the
    first quote of a query computes, later ones share its rounds), then in reverse (every quote remembered) — gives
    the reference computation's mechanism, errors and ε, bit for bit."""
    reference, choices = [], {}
    for pol, query, col, rg, eps, acc in CASES:
        run = Run(catalogs[pol].plan(query, col, ranges=rg), True)
        # the reference choice is a pure function of (policy, query, column, ranges, linear only): computed once for
        # the cases that share it (each is still quoted, and compared, on its own below)
        shape = (pol, query, col, None if rg is None else tuple(rg), acc is not None)
        if shape not in choices:
            candidates = tuple(c for c in default_candidates(run.policy) if acc is None or c.linear)
            # Optimized() is quoted on its strategy fitted to the query (or a row saying why not), as choose_mechanism
            # does
            candidates = tuple(reference_fitted(c, run.workload, run.policy, candidates) for c in candidates)
            choices[shape] = reference_choice(run.workload, run.policy, 1.0, candidates)[:2] + (candidates,)
        best, errors, candidates = choices[shape]
        epsilon = eps if acc is None else reference_epsilon(best, run.workload, run.policy, *acc)
        if acc is not None:
            best, epsilon = reference_alternative(best, epsilon, errors, candidates, run, acc)
        reference.append((best, errors, epsilon))
    order = list(range(len(CASES)))
    random.Random(7).shuffle(order)
    forget()
    tables = {}
    for i in order + order[::-1]:
        pol, query, col, rg, eps, acc = CASES[i]
        b = catalogs[pol].quote(query, col, ranges=rg, epsilon=eps, accuracy=acc)
        best, errors, epsilon = reference[i]
        assert same(b.mechanism, best) and b.epsilon == epsilon, CASES[i]
        np.testing.assert_array_equal(b.table["expected_error"].to_numpy(), np.asarray(errors))
        if i in tables:
            pd.testing.assert_frame_equal(b.table, tables[i], check_exact=True)
        tables[i] = b.table


def test_the_memory_does_the_work_once(monkeypatch):
    """A repeated request draws nothing; a new (α, β) on the same query redraws only the rounds at a new ε (the
    ε = 1 round serves every (α, β)); a choice is computed once per (workload, policy); clear_memory forgets it."""
    forget()
    d = Domain.grid(64)
    # Laplace on 8 ranges of 8 cells: each answer sums 8 noise terms (Monte Carlo, from a round at ε = 1)
    m, W, pol = mechanisms.Laplace(), Ranges(64, np.arange(0, 64, 8), np.arange(7, 64, 8)), policy.dp(d)
    rounds, choices = [], []
    real_draws, real_choose = accuracy.max_abs_errors, selection._choose
    monkeypatch.setattr(accuracy, "max_abs_errors", lambda *a, **k: rounds.append(a[3]) or real_draws(*a, **k))
    monkeypatch.setattr(selection, "_choose", lambda *a, **k: choices.append(1) or real_choose(*a, **k))
    first = epsilon_for_accuracy(m, W, pol, 8.0, 0.1)
    assert rounds[0] == 1.0 and len(rounds) >= 2  # Monte Carlo: the ε = 1 round, then confirmations
    rounds.clear()
    assert epsilon_for_accuracy(m, W, pol, 8.0, 0.1) == first and rounds == []
    epsilon_for_accuracy(m, W, pol, 9.0, 0.1)
    assert rounds and 1.0 not in rounds
    for _ in range(3):
        choose_mechanism(workload.identity(64), policy.line(Domain.grid(64)), 1.0)  # new, equal objects each time
    assert len(choices) == 1
    choose_mechanism(workload.identity(64), policy.threshold(Domain.grid(64), 2), 1.0)
    assert len(choices) == 2
    accuracy.clear_memory()
    choose_mechanism(workload.identity(64), policy.line(Domain.grid(64)), 1.0)
    assert len(choices) == 3


def test_a_returned_table_is_the_callers_own():
    forget()
    W, pol = workload.prefix(32), policy.line(Domain.grid(32))
    _, table = choose_mechanism(W, pol, 1.0)
    table.loc[:, "expected_error"] = -1.0
    _, again = choose_mechanism(W, pol, 1.0)
    assert (again["expected_error"] > 0).all()


def test_keys_tell_different_inputs_apart():
    """Equal inputs (new objects) share a key; a change in any defining part gives another key; inputs without an
    exact description (constrained policies, other operators) give None and are never remembered."""
    d = Domain.grid(16)
    base = (Ranges(16, [0, 4], [3, 15]), policy.line(d), mechanisms.Hierarchical(2), 800, 0)
    assert public_key(*base) == public_key(Ranges(16, [0, 4], [3, 15]), policy.line(Domain.grid(16)),
                                           mechanisms.Hierarchical(2), 800, 0)
    variants = [
        (Ranges(16, [0, 5], [3, 15]),) + base[1:],
        (workload.identity(16),) + base[1:],
        (base[0], policy.threshold(d, 2)) + base[2:],
        (base[0], policy.dp(d)) + base[2:],
        (base[0], policy.line(Domain.from_column(pd.Series([0.0], name="x0"), bins=16, bounds=(0, 32)))) + base[2:],
        base[:2] + (mechanisms.Hierarchical(4),) + base[3:],
        base[:2] + (mechanisms.Transformed(),) + base[3:],
        base[:2] + (mechanisms.Transformed(tree="bfs"),) + base[3:],
        base[:3] + (1000, 0),
        base[:3] + (800, 1),
        base[:3] + (800, 0.0),
    ]
    keys = [public_key(*v) for v in variants]
    assert None not in keys and len(set(keys + [public_key(*base)])) == len(variants) + 1
    edges = [(0, 1), (1, 2)]
    assert public_key(base[0], policy.custom(d, edges)) != public_key(base[0], policy.custom(d, edges + [(2, 3)]))
    known = constraints.count(d, [0, 1], "first two")
    assert public_key(base[0], policy.constrained(policy.dp(d), known)) is None  # its description omits the counts
    assert public_key(workload.hierarchical(16), policy.line(d)) is None  # no value key for this operator


def test_scopes_do_not_share_memory(monkeypatch):
    """What one scope (an analyst of the service) remembered is computed afresh in another — no analyst can time
    another's quotes — and recalled in its own."""
    forget()
    # three overlapping ranges under DP: Laplace, Monte Carlo (the histogram under the line, used before, is exact
    # since issue 28's chain bound and draws nothing)
    catalog = Catalog.from_data(datasets.salaries(n=300, seed=2), {"age": 62}, "dp", {"age": (18, 80)})
    spans = [(18.0, 40.0), (30.0, 60.0), (50.0, 80.0)]
    rounds, choices = [], []
    real_draws, real_choose = accuracy.max_abs_errors, selection._choose
    monkeypatch.setattr(accuracy, "max_abs_errors", lambda *a, **k: rounds.append(a[3]) or real_draws(*a, **k))
    monkeypatch.setattr(selection, "_choose", lambda *a, **k: choices.append(1) or real_choose(*a, **k))
    seen = {}
    for name in ("ana", "bob", "ana", None):
        rounds.clear()
        choices.clear()
        with memo_scope(name):
            b = catalog.quote("range", "age", ranges=spans, accuracy=(7.0, 0.05))
        seen.setdefault(name, []).append((len(choices), len(rounds), b.epsilon))
    (ana_first, ana_again), (bob,), (shared,) = seen["ana"], seen["bob"], seen[None]
    assert ana_first[:2] == bob[:2] == shared[:2] and ana_first[0] == 1 and ana_first[1] >= 2  # each computed
    assert ana_again[:2] == (0, 0)  # recalled
    assert ana_first[2] == ana_again[2] == bob[2] == shared[2]
