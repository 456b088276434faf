"""strategies/lbfgsb.py: SciPy's L-BFGS-B routine driven without ``scipy.optimize``'s import, the same iterates."""

import numpy as np
import pytest
from scipy.optimize import minimize

from blowfish_nb.strategies import lbfgsb
from blowfish_nb.strategies.pidentity import objective, range_gram


def _problem(seed: int, k: int, q: int, p: int):
    rng = np.random.default_rng(seed)
    lo, hi = np.sort(rng.integers(0, k, size=(2, q)), axis=0)
    G = range_gram(lo, hi, k)
    G = G / (np.trace(G) / k)

    def fun(z):
        f, g = objective(z.reshape(p, k), G)
        return f, g.reshape(-1)

    return fun, rng.random(p * k) * 2.0


@pytest.mark.parametrize("seed, k, q, p, ftol, maxiter", [
    (0, 32, 16, 2, 1e-5, 100), (1, 64, 40, 4, 1e-5, 100), (2, 64, 40, 4, 1e-7, 300), (3, 129, 64, 8, 1e-5, 100),
    (4, 129, 64, 8, 1e-7, 7), (5, 17, 8, 1, 1e-10, 500),
])
def test_the_end_point_is_scipys_bit_for_bit(seed, k, q, p, ftol, maxiter):
    """Same routine, same loop: ``minimize(method="L-BFGS-B")``'s x exactly (also when maxiter stops it)."""
    fun, x0 = _problem(seed, k, q, p)
    ours = lbfgsb.minimize_nonneg(fun, x0, ftol=ftol, maxiter=maxiter, maxcor=20)
    theirs = minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * x0.size,
                      options={"maxiter": maxiter, "ftol": ftol, "maxcor": 20}).x
    assert np.array_equal(ours, theirs)
    assert ours.min() >= 0.0


def test_the_extension_is_found_and_its_signature_checked():
    """On the SciPy we ship with the routine is loaded (otherwise the fast path would be silently gone)."""
    assert lbfgsb._setulb() is not None


def test_without_the_extension_the_public_call_gives_the_same_point(monkeypatch):
    fun, x0 = _problem(6, 48, 24, 3)
    fast = lbfgsb.minimize_nonneg(fun, x0, ftol=1e-5, maxiter=100, maxcor=20)
    monkeypatch.setattr(lbfgsb, "_SETULB", [None])
    assert np.array_equal(lbfgsb.minimize_nonneg(fun, x0, ftol=1e-5, maxiter=100, maxcor=20), fast)


def test_a_start_below_zero_is_clipped():
    def fun(x):
        return float(np.sum((x - 1.0) ** 2)), 2.0 * (x - 1.0)

    x = lbfgsb.minimize_nonneg(fun, np.array([-5.0, 3.0]), ftol=1e-12, maxiter=50, maxcor=5)
    assert np.allclose(x, 1.0)
