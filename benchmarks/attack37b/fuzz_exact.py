"""Attack 37b: fuzz exact_measure.lattice_units(Product(A, x), g) against an exact Fraction reference.

Adversarial inputs: mixed magnitudes and signs, subnormals, counts near 2^40/2^52, negative and fractional x,
ties (x chosen so that one row's exact A x / 2^g is k + 1/2, or one ulp off), Kronecker products of DenseFactors,
csc (Matrix) and csr strategies.
Run: PYTHONPATH=$PWD nice -n 10 /work/main/.venv/bin/python benchmarks/attack37b/fuzz_exact.py [seed] [trials]
"""
from __future__ import annotations

import sys
import time
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from blowfish_nb.mechanisms.exact_measure import Product, lattice_units, _factors
from blowfish_nb.operators import Kron
from blowfish_nb.strategies.optimized import DenseFactor


def rhe(fr: Fraction) -> int:
    q, r = divmod(fr.numerator, fr.denominator)
    r2 = 2 * r
    if r2 > fr.denominator or (r2 == fr.denominator and q & 1):
        q += 1
    return q


def exact_rows(A, x):
    factors, cells = _factors(A)
    dense = np.ones((1, 1))
    M = None
    # dense Kronecker (small only)
    for F in factors:
        Fd = F.toarray() if sp.issparse(F) else np.asarray(F)
        M = Fd if M is None else None if False else np.kron(M, Fd) if False else None
    # exact Kronecker by Fractions
    rows = [[Fraction(1)]]
    mats = [(F.toarray() if sp.issparse(F) else np.asarray(F)) for F in factors]
    big = [[Fraction(1)]]
    for Fd in mats:
        new = []
        for r0 in big:
            pass
        big = [[a * Fraction(float(b)) for a in r0 for b in row] for r0 in big for row in Fd]
    xf = [Fraction(float(v)) for v in np.asarray(x, dtype=float).reshape(-1)]
    return [sum((a * b for a, b in zip(r, xf)), Fraction(0)) for r in big]


def rand_entries(rng, shape, kind):
    m = rng.uniform(-1, 1, shape)
    if kind == "wide":
        e = rng.integers(-1074, 60, shape)
        m = np.ldexp(m, e)
    elif kind == "subnormal":
        m = np.ldexp(rng.integers(-2**20, 2**20, shape).astype(float), -1074)
    elif kind == "cancel":
        m = rng.choice([0.1, -0.2, 0.3, 1 / 3, -2 / 3, 0.7], shape)
    elif kind == "mixed":
        m = np.where(rng.random(shape) < 0.5, m, np.ldexp(m, rng.integers(-200, -40, shape)))
    m[rng.random(shape) < 0.3] = 0.0
    return m


def rand_x(rng, n, kind):
    if kind == "small":
        return rng.integers(0, 10, n).astype(float)
    if kind == "huge":
        return rng.integers(0, 2**52, n, dtype=np.int64).astype(float)
    if kind == "near40":
        return (2.0**40 - rng.integers(0, 4, n)).astype(float)
    if kind == "neg":
        return rng.integers(-50, 50, n).astype(float)
    return np.round(rng.normal(0, 100, n), 3)  # fractional


def trial(rng):
    nf = int(rng.choice([1, 1, 2, 3]))
    kind = str(rng.choice(["wide", "subnormal", "cancel", "mixed", "plain"]))
    mats = []
    for _ in range(nf):
        r, c = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        mats.append(rand_entries(rng, (r, c), kind))
    n = int(np.prod([M.shape[1] for M in mats]))
    x = rand_x(rng, n, str(rng.choice(["small", "huge", "near40", "neg", "frac"])))
    form = str(rng.choice(["dense", "csc", "csr", "factor"]))
    if nf == 1:
        A = {"dense": mats[0], "csc": sp.csc_array(mats[0]), "csr": sp.csr_array(mats[0]),
             "factor": DenseFactor(mats[0])}[form]
    else:
        A = Kron([DenseFactor(M) for M in mats])
    ex = exact_rows(A, x)
    # choose g: around the magnitude of a random row, sometimes forcing a tie on that row
    nz = [v for v in ex if v != 0]
    if nz and rng.random() < 0.8:
        v = nz[int(rng.integers(len(nz)))]
        mag = abs(v).numerator.bit_length() - abs(v).denominator.bit_length()
        g = int(np.clip(mag - int(rng.integers(-3, 60)), -1074, 1023))
        if rng.random() < 0.5:  # an exact tie on this row: g one above the value's lowest set bit
            low = (abs(v.numerator) & -abs(v.numerator)).bit_length() - 1 - (v.denominator.bit_length() - 1)
            g = int(np.clip(low + 1, -1074, 1023))
    else:
        g = int(rng.integers(-1074, 100))
    return A, x, ex, g


def main(seed=0, trials=3000):
    rng = np.random.default_rng(seed)
    bad = 0
    t0 = time.time()
    for k in range(trials):
        A, x, ex, g = trial(rng)
        try:
            w, big = lattice_units(Product(A, x), g)
        except Exception as e:  # noqa: BLE001
            print("raise", k, type(e).__name__, e)
            continue
        ref = [rhe(v / Fraction(2) ** g) if g >= 0 else rhe(v * Fraction(2) ** (-g)) for v in ex]
        got = [big[i] if i in big else int(w[i]) for i in range(len(ref))]
        if got != ref:
            bad += 1
            if bad <= 5:
                print("MISMATCH trial", k, "g", g, type(A).__name__, "x", x.tolist()[:6])
                print("  got", got[:6], "ref", ref[:6])
    print(f"seed {seed}: {trials} trials, {bad} mismatches, {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0, int(sys.argv[2]) if len(sys.argv) > 2 else 3000)
