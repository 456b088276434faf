"""Attack 37c on the exact lattice measurement (blowfish_nb/mechanisms/exact_measure.py, stop 37).

Finding (timing side channel, medium): which tier decides a row depends on the data, and the Python-integer tier
costs orders of magnitude more than the BLAS float tier. Neighbours can send different numbers of rows there: a row
whose exact A x / γ is a rounding tie can never be certified by the float, split or long double tiers (h = 0), while
one record moved across an edge makes it a whole number that the float tier decides at once.

Setup (a small copy of benchmarks/attack37c/timing_tiers.py): an Optimized strategy F1 ⊗ F2 on an 8×8 grid under
policy.grid, integer entries, F1[0, 5] = γ/2 and F2's entries odd: for the row block r1 = 0, A x / γ is an integer
plus (Σ_k x[5, k]) / 2 times an odd number. x has Σ_k x[5, k] even (no exact-tier rows), its neighbour (one record
(5, 0) → (6, 0)) odd (all 8 rows of the block go to the exact tier). The released *outputs* are ε-DP (the rounding
is exact either way); the running time is not. Measured (benchmarks/attack37c/timing_tiers.py 48, 128×128 grid):
lattice_units 19 ms vs 99 ms median, one timed call tells them apart 90 % of the time.

Reproduce: PYTHONPATH=$PWD /work/main/.venv/bin/python -m pytest tests/test_attack37c.py -q -p no:cacheprovider -n 0
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.mechanisms import exact_measure, noise
from blowfish_nb.operators import Kron
from blowfish_nb.strategies.optimized import DenseFactor, OptimizedStrategy

K = 8
SHAPE = (K, K)
POL = policy.grid(Domain.grid(SHAPE))
REASON = ("exact_measure.lattice_units picks its tier from the data: a rounding tie always reaches the Python-integer "
          "tier (orders of magnitude slower), its neighbour is decided by the float tier; the running time of a "
          "release tells neighbouring databases apart (attack37c timing side channel)")


def _setup():
    rng = np.random.default_rng(0)
    F1 = rng.integers(0, 4, SHAPE).astype(float)
    F2 = 2 * rng.integers(0, 2, SHAPE).astype(float) + 1
    delta = float(POL.sensitivity(Kron([DenseFactor(F1), DenseFactor(F2)])))
    g = math.frexp(noise.lattice_step(delta, K * K))[1] - 1
    F1[0, 5] = 2.0 ** (g - 1)
    fs = (DenseFactor(F1), DenseFactor(F2))
    delta = float(POL.sensitivity(Kron(list(fs))))
    assert math.frexp(noise.lattice_step(delta, K * K))[1] - 1 == g
    mech = mechanisms.Optimized(OptimizedStrategy(fs, delta, 0.0, SHAPE))
    x = np.random.default_rng(1).integers(0, 100, SHAPE).astype(float)
    if x[5].sum() % 2:
        x[5, 1] += 1
    xp = x.copy()
    xp[5, 0] -= 1
    xp[6, 0] += 1
    return mech, x.reshape(-1), xp.reshape(-1), g


def _exact_tier_rows(mech, x, g, monkeypatch) -> int:
    asked = []
    orig = exact_measure.exact_units

    def spy(f, c, xx, rows, gg):
        asked.extend(np.asarray(rows).tolist())
        return orig(f, c, xx, rows, gg)

    with monkeypatch.context() as mp:
        mp.setattr(exact_measure, "exact_units", spy)
        w, _ = exact_measure.lattice_units(exact_measure.Product(mech.optimized.operator, x), g)
    return len(asked)


def test_setup_is_a_neighbour_pair_and_the_outputs_round_exactly(monkeypatch):
    mech, x, xp, g = _setup()
    a, b = np.flatnonzero(x != xp)
    assert [a, b] in POL.edges().tolist() and abs(x - xp).sum() == 2 and x.sum() == xp.sum()
    mech.release(x, workload.marginal(SHAPE, [0]), POL, 1.0, rng=0)  # releases on both: no refusal
    mech.release(xp, workload.marginal(SHAPE, [0]), POL, 1.0, rng=0)


@pytest.mark.xfail(strict=True, reason=REASON)
def test_neighbours_send_the_same_rows_to_the_exact_tier(monkeypatch):
    """The work lattice_units does must not depend on the private data beyond public facts: 0 exact-tier rows on x,
    8 on its neighbour."""
    mech, x, xp, g = _setup()
    assert _exact_tier_rows(mech, x, g, monkeypatch) == _exact_tier_rows(mech, xp, g, monkeypatch)
