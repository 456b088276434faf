"""Attack 36 (signed Optimized strategies, branch optfit36): what held and what did not.

Held (brute force, fitted signed strategies at k = 8): the charged Δ equals the max over an independently
listed edge set of ‖A(e_u − e_v)‖₁ (‖A e_u‖₁ to ⊥) for fits under threshold θ = 2 and a disconnected custom graph
without ⊥, with and without the public total, also when the fitted strategy is reused under other policies; and the
lattice rounding's sensitivity bound |w − w'|₁ ≤ Δ/γ + m holds at counts chosen (by an LP) to maximise
cancellation in the signed rows (float error of A x).

Fails (VIOLATION, 3 tests): a real-valued strategy whose exact Δ under the policy is 0 (its columns equal along every edge,
signs either way) is released with no noise and no rounding (``noise.lattice_noisy`` returns the float values when
Δ ≤ 0), so the float summation order of A x tells neighbours apart: the outputs are deterministic and differ in
the last bit (privacy loss ∞ for an exact-output event). It is reached by a plain fit, no tampering: ``Optimized()`` on the x0 marginal of a 4 × 4 grid under
sensitive_attributes(x1) fits weighted marginals with exactly 0 weight on every marginal holding x1 (Δ = 0,
objective 0, so they win). It is also reachable through the public classes
(``Optimized(OptimizedStrategy(...))``) and through the on-disk strategy cache, whose re-verification accepts a
planted Δ = 0 strategy (the recomputed Δ equals the stored 0), so the fit path
(:func:`~blowfish_nb.analysis.selection.optimized_for`, which ``selection.fitted`` uses for ``Optimized()`` in the
release paths) serves it, quoting an expected error of 0. (On this example auto's ``choose_mechanism`` does not reach
the fit: Transformed+Laplace already quotes 0, so ``fit_can_win`` skips it; Transformed's releases were bit-identical
on every neighbour pair of counts 0–3.) The hunter flags the Δ = 0 mechanism: lower bound 5.114 > ε = 1
(``hunt(m, POL, 1.0, workload=W, bases=[X_DB], pilot=200, confirm=1000, rng=0)``, 95 % confidence).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from blowfish_nb import Domain, accuracy, mechanisms, policy, workload
from blowfish_nb.analysis import strategy_cache
from blowfish_nb.analysis.selection import AUTO, optimized_for, public_key
from blowfish_nb.ranges import random_ranges
from blowfish_nb.strategies.optimized import DenseFactor, OptimizedStrategy

SHAPE = (2, 3)
# records may move along x1 only (x0 is not sensitive): the marginal on x0 has Δ = 0 under it
POL = policy.sensitive_attributes(Domain.grid(SHAPE), ["x1"])
W = workload.marginal(SHAPE, [0])
# a signed, real-valued strategy: the x0 marginal with weights −0.1 and 0.7 (and 0.3): equal columns along x1
X = np.vstack([np.kron(np.diag([-0.1, 0.7]), np.ones((1, 3))), 0.3 * np.kron(np.eye(2), np.ones((1, 3)))])
# neighbours under POL: one record moved from cell (1, 1) = 4 to cell (1, 2) = 5 (an x1 edge)
X_DB = np.array([0.0, 0.0, 0.0, 0.0, 2.0, 3.0])
X_NEIGHBOUR = np.array([0.0, 0.0, 0.0, 0.0, 1.0, 4.0])


def _zero_delta_mechanism():
    f = DenseFactor(X)
    return mechanisms.Optimized(OptimizedStrategy((f,), float(POL.sensitivity(f)), 0.0, SHAPE))


def test_the_pair_is_a_policy_edge_and_the_strategy_has_delta_zero():
    edges = {tuple(sorted(e)) for e in POL.edges().tolist()}
    assert (4, 5) in edges
    assert X_DB[4] - 1 == X_NEIGHBOUR[4] and X_DB[5] + 1 == X_NEIGHBOUR[5]
    assert _zero_delta_mechanism().sensitivity(POL) == 0.0
    assert (X < 0).any()


def test_a_zero_delta_real_strategy_release_does_not_tell_neighbours_apart():
    """VIOLATION: with Δ = 0 the float A x is released as is; its summation order differs between neighbours.

    Deterministic (no noise is drawn at Δ = 0): the two outputs must be bit-identical for the release to be
    (ε, G)-Blowfish private for any ε; they are not (5.0 against 5.000000000000001 on the second answer).
    """
    m = _zero_delta_mechanism()
    a = np.asarray(m.release(X_DB, W, POL, 1.0, rng=0))
    b = np.asarray(m.release(X_NEIGHBOUR, W, POL, 1.0, rng=0))
    np.testing.assert_array_equal(a, b)


@pytest.fixture()
def disk(tmp_path, monkeypatch):
    monkeypatch.setenv(strategy_cache.ENV, str(tmp_path))
    accuracy.clear_memory()
    yield tmp_path
    accuracy.clear_memory()


def test_a_planted_zero_delta_cache_file_is_not_served_to_the_fit_path(disk):
    """VIOLATION: a strategy written to the cache under (W, POL)'s key passes the re-verification (its recomputed
    Δ = 0 is the stored one) and ``optimized_for`` (the ``Optimized()`` fit path) returns it; its releases then
    tell the neighbours above apart bit by bit."""
    key = public_key(W, POL, "optimized", AUTO)
    assert key is not None
    strategy_cache.store(key, _zero_delta_mechanism())
    accuracy.clear_memory()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = optimized_for(W, POL)
    served = m.optimized.factors[0].dense()
    a = np.asarray(m.release(X_DB, W, POL, 1.0, rng=0))
    b = np.asarray(m.release(X_NEIGHBOUR, W, POL, 1.0, rng=0))
    assert not (np.array_equal(served, X) and not np.array_equal(a, b)), (
        f"the planted Δ = 0 strategy was served (expected error {m.expected_error(W, POL, 1.0)}) and its releases "
        f"differ on neighbours: {a.tolist()} vs {b.tolist()}")


# -- what held --------------------------------------------------------------------------------------------------
def _brute(A, edges):
    return max([np.abs(A[:, u]).sum() if v < 0 else np.abs(A[:, u] - A[:, v]).sum() for u, v in edges] + [0.0])


K = 8
THETA2 = [(i, j) for i in range(K) for j in range(i + 1, K) if j - i <= 2]
CUSTOM = [(0, 3), (3, 5), (1, 2), (5, 7), (2, 6)]  # no ⊥, cell 4 alone: still one axis without ⊥ (signed fit)
OTHERS = [("dp", policy.dp(Domain.grid(K)), [(i, -1) for i in range(K)]),
          ("bounded", policy.bounded(Domain.grid(K)), [(i, j) for i in range(K) for j in range(i + 1, K)]),
          ("custom+⊥", policy.custom(Domain.grid(K), [(0, 3), (1, "⊥"), (5, 7)]), [(0, 3), (1, -1), (5, 7)])]


@pytest.mark.parametrize("pol, edges", [(policy.threshold(Domain.grid(K), 2), THETA2),
                                        (policy.custom(Domain.grid(K), CUSTOM), CUSTOM)], ids=["theta2", "custom"])
@pytest.mark.parametrize("known_total", [False, True], ids=["plain", "total"])
def test_fitted_signed_strategies_are_charged_their_brute_force_delta_here_and_under_other_policies(
        pol, edges, known_total):
    m = mechanisms.Optimized.fit(random_ranges(K, 12, rng=K), pol, known_total=known_total, rng=1, restarts=1,
                                 max_iter=40)
    A = (m.optimized.kron if m.uses_total else m.optimized.operator).dense()  # the noisy rows (the total is exact)
    assert (A < -1e-9).any()  # the fit used the sign freedom (the case under attack)
    assert m.sensitivity(pol) >= _brute(A, edges) * (1 - 1e-12)
    for _, other, other_edges in OTHERS:
        if m.uses_total and other.has_bottom:
            with pytest.raises(Exception):
                m.release(np.ones(K), random_ranges(K, 12, rng=K), other, 1.0, rng=0)
            continue
        assert m.sensitivity(other) >= _brute(A, other_edges) * (1 - 1e-12)


def test_the_lattice_bound_holds_at_counts_that_maximise_cancellation_in_signed_rows():
    """|round(fl(A x)/γ) − round(fl(A x')/γ)|₁ ≤ Δ/γ + m (the discrete Laplace's sensitivity) on every edge, with x
    scaled to a quarter of the 2^53-step grid along the LP direction maximising Σ|A| z over |A z|∞ ≤ 1."""
    from scipy.optimize import linprog

    pol = policy.threshold(Domain.grid(K), 2)
    m = mechanisms.Optimized.fit(random_ranges(K, 12, rng=K), pol, known_total=True, rng=1, restarts=1, max_iter=40)
    A_op = m.optimized.kron
    A = A_op.dense()
    assert (A < -1e-9).any()
    delta, gamma, rows = m._lattice(pol, 1.0)
    res = linprog(-np.abs(A).sum(axis=0), A_ub=np.vstack([A, -A]), b_ub=np.ones(2 * A.shape[0]),
                  bounds=[(0, None)] * K, method="highs")
    z = res.x
    x = np.round(0.25 * 2.0**53 * gamma / np.abs(A @ z).max() * z)
    w = np.round((A_op @ x) / gamma)
    for u, v in pol.edges():
        for a, b in ((u, v), (v, u)):
            if x[a] < 1:
                continue
            y = x.copy()
            y[a] -= 1
            y[b] += 1
            assert np.abs(w - np.round((A_op @ y) / gamma)).sum() <= delta / gamma + rows


# -- the same without any planted file: a fitted strategy with Δ = 0 ------------------------------------------------
SHAPE4 = (4, 4)
POL4 = policy.sensitive_attributes(Domain.grid(SHAPE4), ["x1"])
W4 = workload.marginal(SHAPE4, [0])
X4 = np.array([1, 27, 4, 14, 24, 21, 20, 1, 0, 6, 0, 33, 26, 32, 12, 30], dtype=float)
X4_NEIGHBOUR = X4.copy()
X4_NEIGHBOUR[12] -= 1  # one record moved along x1, from cell (3, 0) to cell (3, 2)
X4_NEIGHBOUR[14] += 1


def test_optimized_fitted_for_a_workload_the_policy_does_not_move_does_not_tell_neighbours_apart(monkeypatch):
    """VIOLATION, no tampering: ``Optimized()`` on the x0 marginal of a 4 × 4 grid under sensitive_attributes(x1)
    fits weighted marginals whose weights on every marginal that holds x1 are exactly 0 (fit_marginals' ZERO cut):
    Δ = 0 exactly, objective 0, so it wins; released with no noise and no rounding, its real weights
    (θ ≈ 7.6 on the total, 3.9·10⁶ on the x0 marginal) make the float sums differ between neighbours
    (113.00000000000004 against 113.00000000000003 on another pair found the same way). The hunter agrees:
    ``hunt(Optimized().for_workload(W4, POL4), POL4, 1.0, workload=W4, bases=[X4], pilot=200, confirm=1000, rng=0)``
    reports a privacy loss ≥ 5.114 > ε = 1 at 95 % confidence (tests/attack36_scripts/hunt0.py)."""
    monkeypatch.setenv(strategy_cache.ENV, "off")
    assert (12, 14) in {tuple(sorted(e)) for e in POL4.edges().tolist()}
    fitted = mechanisms.Optimized().for_workload(W4, POL4)  # what Optimized().release fits (auto's templates, AUTO)
    assert fitted.sensitivity(POL4) == 0.0 and fitted.optimized.info["template"] == "marginals"
    a = np.asarray(fitted.release(X4, W4, POL4, 1.0, rng=0))
    b = np.asarray(fitted.release(X4_NEIGHBOUR, W4, POL4, 1.0, rng=0))
    assert np.array_equal(a, b), f"neighbours told apart: {a.tolist()} vs {b.tolist()}"
