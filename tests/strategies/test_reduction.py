"""Workload reduction (strategies/reduction.py): Δ of A'·S under G equals Δ of A' under the quotient G', by brute force.

Brute force from the definitions (tests/brute.py): G's edges from each family's predicate, the quotient's edges
from those by their definition (s–t when some edge joins a cell of s to a cell of t, s–⊥ when some cell of s has a
⊥ edge), Δ as the largest ‖A(e_u − e_v)‖₁ over them. Domains of ≤ 8 cells.
"""

import numpy as np
import pytest

from blowfish_nb import Domain, policy
from blowfish_nb.analysis import hunt
from blowfish_nb.analysis.selection import optimized_for
from blowfish_nb.mechanisms import Optimized
from blowfish_nb.operators import Matrix
from blowfish_nb.policy import project
from blowfish_nb.ranges import Ranges
from blowfish_nb.strategies.reduction import column_classes, lift, reduce_workload
from blowfish_nb.workload import identity, prefix
from tests.brute import brute_edges, brute_sensitivity_edges

LINE8 = Domain.grid(8)
GRID = Domain.grid((2, 4))
#: a cycle, a chord, a path and one cell free to leave (⊥), as tests/analysis/test_hunt.py's custom graph
CUSTOM_EDGES = [(0, 1), (1, 2), (2, 3), (3, 0), (1, 5), (4, 5), (5, 6), (6, 7), (7, -1)]
CASES = {
    "line": (policy.line(LINE8), ("threshold", {"theta": 1}), LINE8, False),
    "threshold2": (policy.threshold(LINE8, 2), ("threshold", {"theta": 2}), LINE8, False),
    "custom-bottom": (policy.custom(LINE8, [(a, "⊥" if b < 0 else b) for a, b in CUSTOM_EDGES]), None, LINE8, True),
    "dp": (policy.dp(LINE8), ("dp", {}), LINE8, True),
    "bounded": (policy.bounded(LINE8), ("bounded", {}), LINE8, False),
    "grid": (policy.grid(GRID), ("threshold", {"theta": 1}), GRID, False),
}


def _graph_edges(name):
    pol, spec, domain, bottom = CASES[name]
    if spec is None:
        return {(min(a, b), max(a, b)) if b >= 0 else (a, b) for a, b in CUSTOM_EDGES}
    return brute_edges(spec, domain, bottom)


def _normal(pairs):
    """Edges as (lo, hi) of cells, or (cell, −1) for ⊥, whatever the package's spelling of ⊥."""
    out = set()
    for a, b in pairs:
        a, b = (-1 if isinstance(x, str) else int(x) for x in (a, b))
        out.add((max(a, b), -1) if min(a, b) < 0 else (min(a, b), max(a, b)))
    return out


def _quotient_edges(edges, s):
    """The quotient graph's edges by definition (−1 is ⊥); edges inside one class vanish."""
    out = set()
    for a, b in edges:
        if b < 0:
            out.add((int(s[a]), -1))
        elif s[a] != s[b]:
            out.add((int(min(s[a], s[b])), int(max(s[a], s[b]))))
    return out


def _partitions(k, rng):
    """Runs of consecutive cells and classes of scattered cells (any partition is a valid S)."""
    runs = np.cumsum(np.r_[0, rng.random(k - 1) < 0.5])
    scattered = rng.integers(0, 3, size=k)
    _, scattered = np.unique(scattered, return_inverse=True)
    return [runs, scattered, np.zeros(k, dtype=np.intp)]


@pytest.mark.parametrize("name", list(CASES))
def test_quotient_sensitivity_equals_the_lifted_strategys_exact_sensitivity(name):
    pol, _, domain, _ = CASES[name]
    k = domain.size
    edges = _graph_edges(name)
    assert _normal(pol.edges()) == edges  # the brute-force reference is G
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(4):
        for s in _partitions(k, rng):
            m = int(s.max()) + 1
            A1 = rng.normal(size=(m + 2, m))  # signed, real: any strategy on the classes
            A = A1[:, s]  # A'·S
            quotient = project(pol, s).policy
            assert _normal(quotient.edges()) == _quotient_edges(edges, s)
            exact = brute_sensitivity_edges(A, edges)
            reduced = brute_sensitivity_edges(A1, _quotient_edges(edges, s))
            assert reduced == pytest.approx(exact, rel=1e-12)
            if quotient.edge_count():
                assert float(quotient.sensitivity(Matrix(A1))) == pytest.approx(exact, rel=1e-12)
            assert float(pol.sensitivity(Matrix(A))) == pytest.approx(exact, rel=1e-12)
            checked += 1
    assert checked == 12


def test_column_classes_are_the_equal_columns():
    rng = np.random.default_rng(3)
    for _ in range(20):
        k = int(rng.integers(2, 9))
        lo = rng.integers(0, k, size=3)
        hi = np.maximum(lo, rng.integers(0, k, size=3))
        D = Ranges(k, lo, hi).dense()
        ids = column_classes(Ranges(k, lo, hi))
        # ranges: consecutive cells share a class iff their columns are equal (runs between the ends)
        same_next = np.all(D[:, 1:] == D[:, :-1], axis=0)
        full = np.arange(k) if ids is None else ids
        assert np.array_equal(full[1:] == full[:-1], same_next)
        M = rng.integers(0, 2, size=(3, k)).astype(float)
        ids = column_classes(Matrix(M))
        full = np.arange(k) if ids is None else ids
        assert np.array_equal(full[:, None] == full[None, :], np.all(M[:, :, None] == M[:, None, :], axis=0))
    assert column_classes(identity(8)) is None and column_classes(prefix(8)) is None


FIT = dict(restarts=1, max_iter=30, rng=0)


def _dense_error(W, A, total: bool):
    """noise variance · mean of the exact least-squares variances, from dense pseudo-inverses of the lifted A."""
    Wd = W.dense()
    N = np.linalg.pinv(A) @ np.linalg.pinv(A).T
    v = np.einsum("ij,jk,ik->i", Wd, N, Wd)
    if total:
        n1 = N @ np.ones(A.shape[1])
        v = v - (Wd @ n1) ** 2 / n1.sum()
    return v.mean()


@pytest.mark.parametrize("name", ["line", "threshold2", "custom-bottom", "dp"])
def test_reduced_fit_error_is_the_lifted_strategys_exact_error(name):
    pol = CASES[name][0]
    W = Ranges(8, [0, 2, 5, 0], [4, 5, 7, 1])  # 6 runs: [0,1] [2,4] [5] [6,7] ... merged to k' < 8
    r = reduce_workload(W, pol)
    assert r is not None and r.cells < 8
    assert np.array_equal(r.workload.dense() @ r.segment_sum().toarray(), W.dense())  # W = W'·S
    small = Optimized.fit(r.workload, r.policy, known_total=None, **FIT)
    big = Optimized(lift(small.optimized, r, pol))
    A = big.optimized.factors[0].dense()
    assert np.allclose(A, small.optimized.factors[0].dense() @ r.segment_sum().toarray())
    # the charged Δ is the policy's exact one on the lifted strategy; the reduced Δ agrees with it
    exact = float(pol.sensitivity(big.optimized.factors[0]))
    assert big.sensitivity(pol) == exact
    assert exact == pytest.approx(brute_sensitivity_edges(A, _graph_edges(name)), rel=1e-12)
    assert small.sensitivity(r.policy) == pytest.approx(exact, rel=1e-12)
    for eps in (0.5, 2.0):
        e_small = small.expected_error(r.workload, r.policy, eps)
        e_big = big.expected_error(W, pol, eps)
        assert e_big == pytest.approx(e_small, rel=1e-9)
        dense = big.noise_variance(pol, eps) * _dense_error(W, A, big.uses_total)
        assert e_big == pytest.approx(dense, rel=1e-8)


def test_auto_fits_on_the_classes_when_columns_merge_and_as_before_otherwise():
    pol = policy.line(Domain.grid(16))
    W = Ranges(16, [0, 3, 9], [7, 12, 15])
    m = optimized_for(W, pol)
    assert m.optimized.info["reduced"] == {"cells": 5, "from": 16}
    assert m.sensitivity(pol) == float(pol.sensitivity(m.optimized.factors[0]))
    # no equal columns (the histogram, the prefix sums, a grid): nothing reduces, so auto fits on the cells as before
    assert reduce_workload(prefix(16), pol) is None and reduce_workload(identity(16), pol) is None
    assert reduce_workload(identity(8), CASES["grid"][0]) is None
    # a matrix workload whose columns repeat (scattered classes) reduces too
    M = Matrix(np.array([[1.0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0, 0],
                         [0.0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0]]))
    m = optimized_for(M, pol)
    assert m.optimized.info["reduced"]["cells"] == 4
    assert m.sensitivity(pol) == float(pol.sensitivity(m.optimized.factors[0]))


class _HalfDelta(Optimized):
    """A known-bad variant: the lifted strategy charged half its Δ (the hunter must flag it at this size)."""

    def sensitivity(self, policy):
        return super().sensitivity(policy) / 2


def test_hunter_finds_no_violation_in_a_reduced_fit_under_a_graph_with_bottom():
    pol = CASES["custom-bottom"][0]
    W = Ranges(8, [0, 2, 5, 0], [4, 5, 7, 1])
    r = reduce_workload(W, pol)
    lifted = lift(Optimized.fit(r.workload, r.policy, **FIT).optimized, r, pol)
    size = dict(bases=8, pairs=16, pilot=4_000, confirm=20_000, candidates=3)
    result = hunt(Optimized(lifted), pol, 1.0, workload=W, rng=21, **size)
    assert not result.violation, str(result)
    bad = hunt(_HalfDelta(lifted), pol, 1.0, workload=W, rng=21, **size)
    assert bad.violation, str(bad)


def test_a_lifted_fit_survives_the_disk_cache_checks(tmp_path, monkeypatch):
    """The lifted factor's closed-form pseudo-inverse passes the cache's Penrose checks; Δ is re-verified on reading."""
    from blowfish_nb.analysis import strategy_cache
    from blowfish_nb.analysis.selection import public_key

    monkeypatch.setenv(strategy_cache.ENV, str(tmp_path))
    pol = CASES["custom-bottom"][0]
    W = Ranges(8, [0, 2, 5, 0], [4, 5, 7, 1])
    r = reduce_workload(W, pol)
    m = Optimized(lift(Optimized.fit(r.workload, r.policy, **FIT).optimized, r, pol))
    key = public_key(W, pol, "reduction-test")
    strategy_cache.store(key, m)
    back = strategy_cache.load(key, pol)
    assert back is not None and back.sensitivity(pol) == m.sensitivity(pol)
    assert back.expected_error(W, pol, 1.0) == pytest.approx(m.expected_error(W, pol, 1.0), rel=1e-12)
