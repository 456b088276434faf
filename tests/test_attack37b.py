"""Attack 37b on the exact lattice measurement (blowfish_nb/mechanisms/exact_measure.py, stop 37).

Finding 1 (output level, critical): the long-double tier's error bound is computed in float64, where
1 + n·2^-64 rounds to 1, so θ = 0 and the certified bound is 0 (for n < 2048 columns; above that θ is a multiple of
2^-52, up to a third too small). Every row the float and split tiers leave undecided is then "decided" from the long
double product, whose rounding error (≈ 2^-64·Σ|a_ij x_j|) is not bounded by Δ: attack 36b again, one tier lower.

Setup (36b's): components {0, 1}, {2, 3} (``sensitive_attributes`` on a 2×2 grid); row 0 = (0.1, 0.1, −0.2, −0.2)
has equal columns within each component (its exact answer 0.1(x0 + x1) − 0.2(x2 + x3) is the same on
neighbours: 0 on both below), row 1 = (0, 1e-25, 0, 0) gives Δ = 1e-25, γ = 2^-97. With counts of 12,345 the long double
products differ: w_0 = 0 on A_X and −8.8e12 grid steps on its neighbour B_X (one record moved 2 → 3), while the
noise scale is ≈ 1.6e4 steps: the released answers never overlap (ε = 1 claimed, hunter loss ≥ 6.03, bounded only
by its run count).

Fixed in stop 37 (the lead): θ = expm1(Σ log1p(γ_n)), never a product of 1 + γ_n in float64
(``exact_measure._theta``), and sparse strategies have their duplicate entries summed (finding 2); the tests below
were strict xfails and pass since.

Reproduce: PYTHONPATH=$PWD /work/main/.venv/bin/python -m pytest tests/test_attack37b.py -q -p no:cacheprovider -n 0
and benchmarks/attack37b/fuzz_exact.py 3 4000 (random mismatch against a Fraction reference, trial 975).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.mechanisms import exact_measure, noise
from blowfish_nb.strategies.optimized import DenseFactor, OptimizedStrategy

SHAPE = (2, 2)
POL = policy.sensitive_attributes(Domain.grid(SHAPE), ["x1"])
C = 12345.0
A_X = np.array([C, C, C, 0.0])
B_X = np.array([C, C, C - 1, 1.0])  # neighbour: one record moved from cell 2 to cell 3 (edge (2, 3))
ROWS = np.array([[0.1, 0.1, -0.2, -0.2], [0.0, 1e-25, 0.0, 0.0]])
EPS = 1.0
N = 200
REASON = ("exact_measure._extended_units computes θ = Π(1 + γ_n) − 1 in float64 with u = 2^-64: 1 + n·2^-64 rounds "
          "to 1, the long double tier's bound is 0 and it accepts long double rounding errors (not bounded by Δ)")


def _mechanism() -> mechanisms.Optimized:
    f = DenseFactor(ROWS)
    return mechanisms.Optimized(OptimizedStrategy((f,), float(POL.sensitivity(f)), 0.0, SHAPE))


def _exact_w(x, g):
    v = sum((Fraction(float(a)) * Fraction(float(b)) for a, b in zip(ROWS[0], x)), Fraction(0)) / Fraction(2) ** g
    return round(v)  # Fraction rounds half to even


def test_setup_is_a_neighbour_pair_with_equal_exact_row0():
    assert [2, 3] in POL.edges().tolist()
    assert _mechanism().sensitivity(POL) == 1e-25
    g = math.frexp(noise.lattice_step(1e-25, 2))[1] - 1
    assert g == -97 and _exact_w(A_X, g) == _exact_w(B_X, g) == 0


def test_lattice_units_round_the_exact_product_when_long_double_is_inexact():
    """w_0 must be the exact rounding (0) on both neighbours; the long double tier gives −8.8e12 on B_X."""
    g = -97
    for x in (A_X, B_X):
        w, _ = exact_measure.lattice_units(noise.product(ROWS, x), g)
        assert w[0] == _exact_w(x, g), (x.tolist(), w.tolist())


def test_extended_tier_bound_is_positive():
    """The long double tier's certified bound must be > 0 for a row whose long double product is inexact: with it,
    row 0 of B_X is left to the exact tier."""
    factors, cells = exact_measure._factors(ROWS)
    decided, _ = exact_measure._extended_units(factors, cells, B_X, np.array([0]), -97)
    assert not decided[0]


def _dp_bound_holds(p_hi: float, p_lo: float, n: int) -> bool:
    se = math.sqrt(0.25 / n)
    return p_hi - 4 * se <= math.exp(EPS) * (p_lo + 4 * se)


def test_optimized_release_distributions_on_neighbours_overlap():
    """E = {first answer < −1e-17}: probability 1 on B_X (the answers sit at −1.11e-16), 0 on A_X (within 1e-24)."""
    m = _mechanism()
    W = workload.marginal(SHAPE, [0])
    ra = m.sample(A_X, W, POL, EPS, size=N, rng=0)
    rb = m.sample(B_X, W, POL, EPS, size=N, rng=1)
    p_a, p_b = float(np.mean(ra[:, 0] < -1e-17)), float(np.mean(rb[:, 0] < -1e-17))
    ra1 = np.array([m.release(A_X, W, POL, EPS, rng=s)[0] for s in range(20)])
    rb1 = np.array([m.release(B_X, W, POL, EPS, rng=s)[0] for s in range(20)])
    assert _dp_bound_holds(p_b, p_a, N), (p_a, p_b)
    assert _dp_bound_holds(float(np.mean(rb1 < -1e-17)), float(np.mean(ra1 < -1e-17)), 20)


def test_violation_hunter_finds_no_violation_at_larger_counts():
    """The hunter (fixed seed) on the Δ = 1e-25 strategy from base B_X: on ff9b0a3 it reports loss ≥ 6.034 > ε = 1
    at x = (12345, 12345, 12344, 1), 2→3."""
    from blowfish_nb.analysis.hunt import hunt

    r = hunt(_mechanism(), POL, EPS, workload=workload.marginal(SHAPE, [0]), bases=[B_X],
             pilot=500, confirm=2000, candidates=3, rng=0)
    assert not r.violation, str(r)


# -- finding 2 (low: reachable only through noise.product on a user's sparse matrix; no mechanism passes one) --------

def test_sparse_strategy_with_duplicate_entries_is_rounded_exactly():
    """Row (1 + 5000 duplicates of 2^-53 in column 0), x = (1, 0): exact value 1 + 5000·2^-53, w at γ = 2^-40 is
    2^40 + 1; the float tier accepts fl = 1 (each 2^-53 addition rounds away) and gives 2^40."""
    import scipy.sparse as sp

    from blowfish_nb.operators import Matrix

    k = 5000
    F = sp.csr_array((np.r_[1.0, np.full(k, 2.0**-53)], np.zeros(k + 1, dtype=int), np.array([0, k + 1])),
                     shape=(1, 2))
    exact = round((1 + Fraction(k, 2**53)) * 2**40)
    w, _ = exact_measure.lattice_units(noise.product(Matrix(F), np.array([1.0, 0.0])), -40)
    assert int(w[0]) == exact
