"""The lattice measurement is rounded from the exact A x (stop 37, attack 36b; blowfish_nb/mechanisms/exact_measure.py).

Exact references use ``fractions.Fraction`` (a float64 entry is a dyadic rational). The privacy property checked by
brute force is the one the docstring proves: on every neighbouring pair, ‖w(x) − w(x')‖₁ ≤ Δ/γ + m for the units
w = round(A x / γ), so the discrete Laplace likelihood ratio ‖w − w'‖₁ / b is at most ε; the old float rounding
(known bad) breaks it on a cancelling row.
"""

from __future__ import annotations

import itertools
import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.mechanisms import exact_measure, noise
from blowfish_nb.operators import Kron
from blowfish_nb.strategies.optimized import DenseFactor, OptimizedStrategy

SHAPE = (2, 2)
POL = policy.sensitive_attributes(Domain.grid(SHAPE), ["x1"])  # components {0, 1}, {2, 3}


def _round_half_even(q: Fraction) -> int:
    f = math.floor(q)
    r = q - f
    return f + 1 if r > Fraction(1, 2) or (r == Fraction(1, 2) and f % 2) else f


def _exact_units(A: np.ndarray, x: np.ndarray, g: int) -> list[int]:
    gamma = Fraction(2) ** g
    return [_round_half_even(sum((Fraction(float(a)) * Fraction(float(v)) for a, v in zip(row, x)), Fraction(0))
                             / gamma) for row in A]


def _float_units(values, g: int):
    """The old path (known bad): round the float product fl(A x)."""
    return np.round(np.ldexp(np.asarray(values, dtype=float), -g)), {}


def _random_matrix(rng, p, n):
    """Entries over many magnitudes, with exact zeros, cancelling pairs and tiny (subnormal) entries."""
    A = rng.normal(size=(p, n)) * 10.0 ** rng.integers(-30, 5, size=(p, n))
    A[rng.random((p, n)) < 0.2] = 0.0
    A[0, : n // 2] = 0.1
    A[0, n // 2:] = -0.2 if n % 2 == 0 else 0.0
    if p > 1:
        A[1, 0] = 5e-320
    return A


@pytest.mark.parametrize("split, extended", [(True, True), (False, True), (False, False)],
                         ids=["every tier", "no split", "float then integers"])
def test_units_equal_the_exact_rounding_for_dense_sparse_and_kron_strategies(monkeypatch, split, extended):
    import scipy.sparse as sp

    monkeypatch.setattr(exact_measure, "_EXTENDED", extended and exact_measure._EXTENDED)
    if not split:
        monkeypatch.setattr(exact_measure, "_split_tier", lambda *a: None)

    rng = np.random.default_rng(0)
    for trial in range(30):
        p, n = int(rng.integers(1, 5)), int(rng.integers(2, 7))
        A = _random_matrix(rng, p, n)
        x = rng.integers(0, 6, size=n).astype(float)
        for g in (int(rng.integers(-120, 5)), -1074, -1011, -60, 0, 40):
            want = _exact_units(A, x, g)
            for form in (A, sp.csc_array(A), DenseFactor(A)):
                w, big = exact_measure.lattice_units(noise.product(form, x), g)
                got = [big.get(i, int(v) if np.isfinite(v) else None) for i, v in enumerate(w)]
                assert got == want, (trial, g, type(form).__name__)
        B = _random_matrix(rng, 2, 3)
        xk = rng.integers(0, 4, size=n * 3).astype(float)
        exact = [[Fraction(float(a)) * Fraction(float(b)) for a in ra for b in rb] for ra in A for rb in B]
        g = int(rng.integers(-90, 0))
        want = [_round_half_even(sum(e * Fraction(float(v)) for e, v in zip(row, xk)) / Fraction(2) ** g)
                for row in exact]  # the products of the entries are not rounded (np.kron would round them)
        w, big = exact_measure.lattice_units(noise.product(Kron([DenseFactor(A), DenseFactor(B)]), xk), g)
        assert [big.get(i, int(v) if np.isfinite(v) else None) for i, v in enumerate(w)] == want, trial


def test_each_tier_decides_what_it_can_and_all_agree_with_the_exact_rounding(monkeypatch):
    """Large counts against a fine grid: the split tier decides every row; without it the plain float bound
    decides none, the long double tier most, the integer tier the rest; the units equal the Fraction reference."""
    rng = np.random.default_rng(4)
    A = rng.normal(size=(30, 50))
    x = rng.integers(0, 10**6, size=50).astype(float)
    g = -25  # γ = 2^-25 against Σ|a|x ≈ 2e7: the float error bound (≈ 1e-7, 3 grid steps) decides no row
    want = _exact_units(A, x, g)
    seen = {}
    real = exact_measure.exact_units
    monkeypatch.setattr(exact_measure, "exact_units", lambda f, c, xx, rows, gg: seen.setdefault("exact", len(rows))
                        and real(f, c, xx, rows, gg))
    w, _ = exact_measure.lattice_units(noise.product(A, x), g)
    assert w.astype(int).tolist() == want and "exact" not in seen
    monkeypatch.setattr(exact_measure, "_split_tier", lambda *a: None)
    w, _ = exact_measure.lattice_units(noise.product(A, x), g)
    assert w.astype(int).tolist() == want
    if exact_measure._EXTENDED:
        assert seen.get("exact", 0) < 30  # some rows decided in long double (the bound: 2^-64·50·|A||x| ≪ γ/2)
    monkeypatch.setattr(exact_measure, "_EXTENDED", False)
    seen.clear()
    w, _ = exact_measure.lattice_units(noise.product(A, x), g)
    assert w.astype(int).tolist() == want and seen["exact"] == 30


def test_ties_round_half_to_even_exactly():
    A = np.array([[0.5], [1.5], [2.5], [-0.5], [0.5 + 2.0**-53]])
    w, _ = exact_measure.lattice_units(noise.product(A, np.array([1.0])), 0)
    assert w.tolist() == [0.0, 2.0, 2.0, -0.0, 1.0]


def _neighbours(pol, values=range(4)):
    edges = [tuple(e) for e in pol.edges().tolist()]
    for x in itertools.product(values, repeat=pol.domain.size):
        x = np.array(x, dtype=float)
        for u, v in edges:
            if x[u] > 0:
                y = x.copy()
                y[u] -= 1
                y[v] += 1
                yield x, y


CANCELLING = {  # row 0 cancels within the components of POL; the last row makes Δ tiny but nonzero
    "attack 36b": np.array([[0.1, 0.1, -0.2, -0.2], [0.0, 1e-25, 0.0, 0.0]]),
    "1/3 and 1e-200": np.array([[1 / 3, 1 / 3, -2 / 3, -2 / 3], [0.0, 0.0, 1e-200, 0.0]]),
    "subnormal Δ": np.array([[0.1, 0.1, -0.2, -0.2], [3e-318, 0.0, 0.0, 0.0]]),
}


def _ints(w, big) -> np.ndarray:
    return np.array([big[i] if i in big else int(v) for i, v in enumerate(w)], dtype=object)


@pytest.mark.parametrize("name", list(CANCELLING))
def test_brute_force_every_neighbour_pair_moves_the_units_by_at_most_delta_over_gamma_plus_m(name):
    """The exact units (Python integers, however large) satisfy ‖w − w'‖₁ ≤ Δ/γ + m on every pair (x ∈ {0..3}^4,
    every edge): loss ≤ ε exactly. The float rounding (known bad) exceeds it by orders of magnitude."""
    A = CANCELLING[name]
    delta = float(POL.sensitivity(DenseFactor(A)))
    m = A.shape[0]
    gamma = noise.lattice_step(delta, m)
    g = math.frexp(gamma)[1] - 1
    budget = delta / gamma + m
    worst_exact = worst_float = 0
    for x, y in _neighbours(POL):
        we = _ints(*exact_measure.lattice_units(noise.product(A, x), g))
        ye = _ints(*exact_measure.lattice_units(noise.product(A, y), g))
        worst_exact = max(worst_exact, sum(abs(a - b) for a, b in zip(we, ye)))
        wf = [_round_half_even(Fraction(float(v)) / Fraction(2) ** g) for v in A @ x]
        yf = [_round_half_even(Fraction(float(v)) / Fraction(2) ** g) for v in A @ y]
        worst_float = max(worst_float, sum(abs(a - b) for a, b in zip(wf, yf)))
    assert worst_exact <= budget
    assert worst_float > 100 * budget  # the hole the exact measurement closes


def test_the_same_draw_gives_bit_identical_outputs_where_the_exact_answers_agree():
    A = CANCELLING["attack 36b"]
    a = noise.lattice_noisy(noise.product(A, [3.0, 3, 3, 0]), 1e-25, 1.0, 2, np.random.default_rng(5))
    b = noise.lattice_noisy(noise.product(A, [3.0, 3, 2, 1]), 1e-25, 1.0, 2, np.random.default_rng(5))
    assert a.tobytes() == b.tobytes()


def _optimized(A):
    f = DenseFactor(A)
    return mechanisms.Optimized(OptimizedStrategy((f,), float(POL.sensitivity(f)), 0.0, SHAPE))


@pytest.mark.parametrize("name", ["1/3 and 1e-200", "subnormal Δ"])
def test_hunter_finds_no_violation_on_cancelling_rows(name):
    from blowfish_nb.analysis.hunt import hunt

    r = hunt(_optimized(CANCELLING[name]), POL, 1.0, workload=workload.marginal(SHAPE, [0]),
             bases=[np.array([3.0, 3, 2, 1]), np.array([1.0, 3, 1, 1])], pilot=300, confirm=1000, candidates=3,
             rng=0)  # bases where row 0 is exactly 0 (s₀₁ = 2 s₂₃): released, not refused for a value ≥ 2^53 γ
    assert not r.violation, str(r)


def test_hunter_flags_the_old_float_rounding(monkeypatch):
    """Known bad: the float path (round fl(A x)) on the attacker's strategy is flagged (loss far above ε)."""
    from blowfish_nb.analysis.hunt import hunt

    monkeypatch.setattr(noise, "lattice_units", _float_units)
    r = hunt(_optimized(CANCELLING["attack 36b"]), POL, 1.0, workload=workload.marginal(SHAPE, [0]),
             bases=[np.array([3.0, 3, 2, 1])], pilot=300, confirm=1000, candidates=3, rng=0)
    assert r.violation, str(r)


def test_ordinary_strategies_keep_their_bits_and_take_the_float_path(monkeypatch):
    """A dense random strategy on counts: the same output as the old float rounding, draw for draw, and no row
    needs the exact tier (its certified error bound decides every row)."""
    rng = np.random.default_rng(1)
    A = rng.normal(size=(40, 60))
    x = rng.poisson(50, size=60).astype(float)
    delta, m, eps = float(np.abs(A).sum(axis=0).max() * 2), 40, 0.5
    gamma = noise.lattice_step(delta, m)
    old = np.round((A @ x) / gamma) + noise.discrete_laplace(np.random.default_rng(7), (delta / gamma + m) / eps, 40)
    calls = []
    real = exact_measure.exact_units
    monkeypatch.setattr(exact_measure, "exact_units", lambda *a: calls.append(a) or real(*a))
    new = noise.lattice_noisy(noise.product(A, x), delta, eps, m, np.random.default_rng(7))
    assert np.array_equal(new, old * gamma) and calls == []
    many = noise.lattice_draws(noise.product(A, x), delta, eps, m, np.random.default_rng(7), 3)
    old_many = np.round((A @ x) / gamma)[None, :] + noise.discrete_laplace(
        np.random.default_rng(7), (delta / gamma + m) / eps, (3, 40))
    assert np.array_equal(many, old_many * gamma) and calls == []


def test_units_beyond_2_to_53_are_exact_and_the_refusal_reads_the_noisy_units_only(monkeypatch):
    """γ = 1 (Δ = 4096, m = 1); w = 2^53 + 6 exactly. w + z is formed in integers: z = −10 gives 2^53 − 4
    (released, exact), z = −5 gives 2^53 + 1 (refused)."""
    assert noise.lattice_step(4096.0, 1) == 1.0
    v = noise.product(np.array([[2.0**53 + 6]]), np.array([1.0]))
    for z, ok in ((-10.0, True), (-5.0, False), (0.0, False)):
        monkeypatch.setattr(noise, "discrete_laplace", lambda rng, scale, shape, z=z: np.full(shape, z))
        if ok:
            assert noise.lattice_noisy(v, 4096.0, 1.0, 1, np.random.default_rng(0)).tolist() == [2.0**53 - 4]
        else:
            with pytest.raises(InvalidParameterError, match="beyond the lattice"):
                noise.lattice_noisy(v, 4096.0, 1.0, 1, np.random.default_rng(0))


def test_a_grid_step_below_the_smallest_float_is_refused_from_delta_and_m_alone():
    gamma = noise.lattice_step(1e-300, 2)
    assert math.frexp(gamma)[0] == 0.5 and gamma <= 2.0**-12 * 1e-300 / 2 < 2 * gamma
    assert noise.lattice_step(2.0**-1060, 4) == 2.0**-1074  # the smallest subnormal still works
    for delta in (2.0**-1060 / 3, 1e-321, 5e-324):
        with pytest.raises(InvalidParameterError, match="below 2\\^-1074"):
            noise.lattice_step(delta, 4)
    A = np.array([[2.0**-1060, 0.0], [0.0, 2.0**-1060]])
    out = noise.lattice_noisy(noise.product(A, [3.0, 1.0]), 2.0**-1060, 1.0, 4, np.random.default_rng(0))
    assert np.all(out / 2.0**-1074 == np.round(out / 2.0**-1074))


def test_every_mechanism_passes_the_strategy_and_counts_not_a_float_product():
    """A guard: no lattice_noisy/lattice_draws call in the package hands it ``A @ x`` (the hole of attack 36b)."""
    root = Path(__file__).resolve().parents[2] / "blowfish_nb"
    bad = []
    for path in root.rglob("*.py"):
        for m in re.finditer(r"lattice_(?:noisy|draws)\(([^,]*)", path.read_text()):
            if "@" in m.group(1):
                bad.append(f"{path.name}: {m.group(0)}")
    assert bad == []
