"""Attack 36b on the Δ = 0 fix (branch zero36): a *tiny but nonzero* Δ still releases fl(A x)'s last bits.

The fix routes Δ = 0 through ``noise.invariant_values``; any Δ > 0 goes to ``noise.lattice_noisy(A @ x, Δ, ...)``,
whose argument ("w = round(values/γ) has L1 sensitivity ≤ Δ/γ + m") holds for the *exact* A x, not for the float
``A @ x``. The float's rounding error (≈ 2^-53 · Σ|a_ij x_j|, the attack-36 effect) is not bounded by Δ: with
Δ = 1e-25 (one column entry of 1e-25) the noise has scale ≈ 1e-25 while fl(A x) moves by 5.6e-17 between
neighbours, so the outputs of neighbouring inputs never overlap; with Δ = 1e-300 one neighbour is released and the
other refused ("beyond the lattice sampler's float64 grid"), every time.

Strategy: components {0, 1}, {2, 3} (``sensitive_attributes`` on a 2×2 grid, records move along x1). Row 0 has
equal columns within each component (Δ contribution 0 in exact arithmetic); row 1 = (0, δ, 0, 0) gives Δ = δ.
x = (3, 3, 3, 0) → fl(row 0 · x) = 0 exactly; its neighbour (3, 3, 2, 1) (one record moved 2 → 3) → 5.55e-17.

These tests FAIL on zero36 (they state the privacy property that is violated).
Run: PYTHONPATH=$PWD /work/main/.venv/bin/python -m pytest tests/test_attack36b.py -q -p no:cacheprovider -n 0
"""

from __future__ import annotations

import math

import numpy as np

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.strategies.optimized import DenseFactor, OptimizedStrategy

SHAPE = (2, 2)
POL = policy.sensitive_attributes(Domain.grid(SHAPE), ["x1"])
A_X = np.array([3.0, 3.0, 3.0, 0.0])
B_X = np.array([3.0, 3.0, 2.0, 1.0])  # neighbour: one record moved from cell 2 to cell 3 (edge (2, 3))
EPS = 1.0
N = 200


def _mechanism(delta_entry: float) -> mechanisms.Optimized:
    A = np.array([[0.1, 0.1, -0.2, -0.2], [0.0, delta_entry, 0.0, 0.0]])
    f = DenseFactor(A)
    return mechanisms.Optimized(OptimizedStrategy((f,), float(POL.sensitivity(f)), 0.0, SHAPE))


def test_setup_is_a_neighbour_pair_with_equal_exact_answers_and_tiny_delta():
    assert [2, 3] in POL.edges().tolist()
    m = _mechanism(1e-25)
    assert 0 < m.sensitivity(POL) <= 1e-25
    op = m.optimized.operator
    # exact row-0 answers are equal (0.1·6 − 0.2·3 in both), fl differs in the last bits
    assert (op @ A_X)[0] == 0.0 and (op @ B_X)[0] != 0.0


def _dp_bound_holds(p_hi: float, p_lo: float, n: int) -> bool:
    """P_hi ≤ e^ε P_lo, with 4 standard errors of slack on both estimates."""
    se = math.sqrt(0.25 / n)
    return p_hi - 4 * se <= math.exp(EPS) * (p_lo + 4 * se)


def test_tiny_delta_release_distributions_on_neighbours_do_not_overlap():
    """Δ = 1e-25: the event E = {first answer > 5e-17} has probability 1 on B_X and 0 on A_X (ε = 1 claimed)."""
    m = _mechanism(1e-25)
    W = workload.marginal(SHAPE, [0])
    ra = m.sample(A_X, W, POL, EPS, size=N, rng=0)
    rb = m.sample(B_X, W, POL, EPS, size=N, rng=1)
    p_a, p_b = float(np.mean(ra[:, 0] > 5e-17)), float(np.mean(rb[:, 0] > 5e-17))
    # the same through release() (seed by seed)
    ra1 = np.array([m.release(A_X, W, POL, EPS, rng=s)[0] for s in range(20)])
    rb1 = np.array([m.release(B_X, W, POL, EPS, rng=s)[0] for s in range(20)])
    assert _dp_bound_holds(p_b, p_a, N), (p_a, p_b)
    assert _dp_bound_holds(float(np.mean(rb1 > 5e-17)), float(np.mean(ra1 > 5e-17)), 20)


def test_delta_1e_300_one_neighbour_released_the_other_refused():
    """Δ = 1e-300: A_X is released every time, B_X refused every time (the refusal is not a function of the
    noisy output of a private measurement: fl(A x) itself is 2^-54, ~1e288 grid steps)."""
    m = _mechanism(1e-300)
    W = workload.marginal(SHAPE, [0])

    def released(x):
        ok = 0
        for s in range(N):
            try:
                m.release(x, W, POL, EPS, rng=s)
                ok += 1
            except InvalidParameterError:
                pass
        return ok / N

    p_a, p_b = released(A_X), released(B_X)
    assert _dp_bound_holds(p_a, p_b, N), (p_a, p_b)
