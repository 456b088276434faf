"""p-Identity's lone-start fit (auto's: ``restarts=1``), issue 28: one descent to the polish's tolerance.

What is checked: the objective without S G S is the same quantity as the dense trace formula (to rounding) also on
the Grams the quote fits; the lone descent ends where its objective says (f(Θ) recomputed, Θ ≥ 0, columns of the
strategy of L1 norm 1 so Δ = 1 under DP) and within 1 % of a 3-start fit of the same Gram (dp range quotes at
k = 4,096 fit 126–129 classes, p = 7–8: these are such Grams); SciPy's routine at the lone path's memory is still
SciPy's iterates (tests/strategies/test_lbfgsb.py has the other memories).
"""

import numpy as np
import pytest

from blowfish_nb import Domain, policy
from blowfish_nb.strategies import lbfgsb, pidentity
from blowfish_nb.strategies.reduction import reduce_workload
from blowfish_nb.ranges import Ranges


def _quote_gram(seed: int, q: int = 64, k: int = 4096) -> np.ndarray:
    """The Gram a cold dp range quote fits: q random ranges of k cells, merged into their classes of cells."""
    rng = np.random.default_rng(seed)
    lo, hi = np.sort(rng.integers(0, k, size=(q, 2)), axis=1).T
    r = reduce_workload(Ranges(k, lo, hi), policy.dp(Domain.grid(k)))
    return pidentity.range_gram(r.workload.lo, r.workload.hi, r.cells)


def _dense_objective(T: np.ndarray, G: np.ndarray) -> float:
    A = pidentity.strategy_matrix(T)
    return float(np.trace(G @ np.linalg.inv(A.T @ A)))


@pytest.mark.parametrize("seed", range(3))
def test_the_objective_is_the_dense_trace_on_a_quote_gram(seed):
    G = _quote_gram(seed)
    G = G / (np.trace(G) / G.shape[0])
    T = np.random.default_rng(seed).random((8, G.shape[0]))
    f, g = pidentity.objective(T, G)
    assert f == pytest.approx(_dense_objective(T, G), rel=1e-10)
    h = 1e-6
    for i, j in [(0, 0), (3, 17), (7, G.shape[0] - 1)]:
        E = np.zeros_like(T)
        E[i, j] = h
        num = (pidentity.objective(T + E, G)[0] - pidentity.objective(T - E, G)[0]) / (2 * h)
        assert g[i, j] == pytest.approx(num, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("seed", range(4))
def test_the_lone_descent_is_within_one_percent_of_three_starts(seed):
    G = _quote_gram(seed)
    p = pidentity.default_p(G.shape[0])[0]
    T, f = pidentity.fit(G, p, restarts=1, max_iter=100, rng=np.random.default_rng(0))
    assert T.min() >= 0.0
    assert f == pytest.approx(_dense_objective(T, G), rel=1e-9)  # the f returned is the strategy's own
    assert np.allclose(np.abs(pidentity.strategy_matrix(T)).sum(axis=0), 1.0)  # Δ = 1 under DP
    _, f3 = pidentity.fit(G, p, restarts=3, max_iter=100, rng=np.random.default_rng(0))
    assert f <= 1.01 * f3, (f, f3)
    assert f < 0.7 * np.trace(G)  # and far below the identity (≈ 0.53 on these)


def test_the_lone_descent_runs_at_its_own_memory_and_tolerance(monkeypatch):
    """The lone path asks L-BFGS-B for one run at POLISH_FTOL with QUICK_MAXCOR (no loose phase, no polish)."""
    calls = []
    real = pidentity.minimize_nonneg

    def spy(fun, x0, **kw):
        calls.append(kw)
        return real(fun, x0, **kw)

    monkeypatch.setattr(pidentity, "minimize_nonneg", spy)
    G = _quote_gram(0)
    pidentity.fit(G, 8, restarts=1, max_iter=100, rng=np.random.default_rng(0))
    assert calls == [{"ftol": pidentity.POLISH_FTOL, "maxiter": (1 + pidentity.POLISH_ITER) * 100,
                      "maxcor": pidentity.QUICK_MAXCOR}]
    calls.clear()
    pidentity.fit(G, 8, restarts=2, max_iter=100, rng=np.random.default_rng(0))
    assert [c["ftol"] for c in calls] == [pidentity.FTOL, pidentity.FTOL, pidentity.POLISH_FTOL]
    assert {c["maxcor"] for c in calls} == {pidentity.MAXCOR}


def test_scipys_iterates_at_the_lone_paths_memory():
    from scipy.optimize import minimize

    G = _quote_gram(1)
    G = G / (np.trace(G) / G.shape[0])
    p, k = 8, G.shape[0]

    def fun(z):
        f, g = pidentity.objective(z.reshape(p, k), G)
        return f, g.reshape(-1)

    x0 = np.random.default_rng(2).random(p * k)
    ours = lbfgsb.minimize_nonneg(fun, x0, ftol=1e-7, maxiter=60, maxcor=pidentity.QUICK_MAXCOR)
    theirs = minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * x0.size,
                      options={"maxiter": 60, "ftol": 1e-7, "maxcor": pidentity.QUICK_MAXCOR}).x
    assert np.array_equal(ours, theirs)
