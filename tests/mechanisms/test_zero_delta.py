"""Releases of sensitivity Δ = 0 (attack 36): no noise, so the values must be bit-identical on every neighbour pair.

``noise.invariant_values`` computes A x from the policy-invariant class sums after an exact column check; these are
brute-force checks on tiny domains (every count vector up to a small bound, every edge, both directions).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.mechanisms import noise
from blowfish_nb.strategies.optimized import DenseFactor, OptimizedStrategy

SHAPE = (2, 3)
POL = policy.sensitive_attributes(Domain.grid(SHAPE), ["x1"])  # records move along x1 only
# signed real weights, equal columns along x1 (the attacker's strategy): Δ = 0 under POL
X = np.vstack([np.kron(np.diag([-0.1, 0.7]), np.ones((1, 3))), 0.3 * np.kron(np.eye(2), np.ones((1, 3)))])


def _neighbours(x, edges):
    """Every neighbour of x along the edges (u, v), v = −1 for ⊥: one record moved (or added/removed at u)."""
    for u, v in edges:
        if v < 0:
            yield x, x + np.eye(x.size)[u]
            continue
        for a, b in ((u, v), (v, u)):
            if x[a] >= 1:
                y = x.copy()
                y[a] -= 1
                y[b] += 1
                yield x, y


def test_invariant_values_are_bit_identical_on_every_neighbour_pair_and_plain_float_products_are_not():
    edges = POL.edges().tolist()
    plain_differs = 0
    for counts in itertools.product(range(3), repeat=6):  # 3^6 count vectors, 6 edges, both directions
        x = np.array(counts, dtype=float)
        for a, b in _neighbours(x, edges):
            va, vb = noise.invariant_values(X, a, POL, "test"), noise.invariant_values(X, b, POL, "test")
            assert va.tobytes() == vb.tobytes()
            plain_differs += (X @ a).tobytes() != (X @ b).tobytes()
    assert plain_differs > 0  # the property is exercised: fl(X x) itself tells some neighbours apart


def test_optimized_releases_at_delta_zero_are_bit_identical_on_every_neighbour_pair():
    shape = (2, 2)
    pol = policy.sensitive_attributes(Domain.grid(shape), ["x1"])
    A = np.vstack([np.kron(np.diag([-0.1, 0.7]), np.ones((1, 2))), 0.3 * np.kron(np.eye(2), np.ones((1, 2)))])
    f = DenseFactor(A)
    m = mechanisms.Optimized(OptimizedStrategy((f,), float(pol.sensitivity(f)), 0.0, shape))
    assert m.sensitivity(pol) == 0.0
    W = workload.marginal(shape, [0])
    for counts in itertools.product(range(4), repeat=4):
        x = np.array(counts, dtype=float)
        for a, b in _neighbours(x, pol.edges().tolist()):
            ra = np.asarray(m.release(a, W, pol, 1.0, rng=0))
            rb = np.asarray(m.release(b, W, pol, 1.0, rng=1))  # no noise is drawn: the seed must not matter
            assert ra.tobytes() == rb.tobytes()
            assert np.allclose(ra, np.asarray(W @ a, dtype=float))
            sa = m.sample(a, W, pol, 1.0, size=2, rng=0)
            assert sa.tobytes() == m.sample(b, W, pol, 1.0, size=2, rng=3).tobytes()


def test_with_bottom_the_cells_joined_to_bottom_must_have_zero_columns_and_are_not_read():
    pol = policy.custom(Domain.grid(4), [(0, 1), (2, "⊥")])  # {0, 1}, {2, ⊥}, {3} alone
    A = np.array([[0.1, 0.1, 0.0, -0.3], [0.7, 0.7, 0.0, 1e-17]])
    assert pol.sensitivity(mechanisms.optimized.Matrix(A)) == 0.0
    edges = [(0, 1), (2, -1)]
    for counts in itertools.product(range(3), repeat=4):
        x = np.array(counts, dtype=float)
        for a, b in _neighbours(x, edges):
            assert noise.invariant_values(A, a, pol, "t").tobytes() == noise.invariant_values(A, b, pol, "t").tobytes()
    with pytest.raises(InvalidParameterError, match="Optimized.*joined to ⊥"):
        noise.invariant_values(A + np.array([[0, 0, 1e-300, 0], [0, 0, 0, 0]]), x, pol, "Optimized")


def test_columns_differing_in_the_last_bit_within_a_component_are_refused_naming_the_mechanism():
    bad = X.copy()
    bad[0, 1] = np.nextafter(bad[0, 1], 1.0)
    with pytest.raises(InvalidParameterError, match="SuLQ.*differ within a component"):
        noise.invariant_values(bad, np.ones(6), POL, "SuLQ")
    with pytest.raises(InvalidParameterError, match="whole counts"):
        noise.invariant_values(X, np.full(6, 0.5), POL, "Optimized")


def test_the_lattice_sampler_refuses_sensitivity_zero():
    with pytest.raises(InvalidParameterError, match="invariant_values"):
        noise.lattice_noisy(np.array([0.3, 1.7]), 0.0, 1.0, 2, np.random.default_rng(0))
