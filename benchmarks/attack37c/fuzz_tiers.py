"""Attack 37c: each tier of exact_measure checked on its own against an exact Fraction reference.

attack37b's fuzzer checks the cascade's final answer, so a tier that is never reached (an earlier tier decided the
row) is never tested. Here every tier is run alone on every row: the float tier (later tiers disabled), the split
tier (``_split_tier`` on all rows), the long double tier (``_extended_units`` on all rows). A row a tier *decides*
must equal round_half_even(exact A x / 2^g). Inputs: 1–14 Kronecker factors (DenseFactor, dense, csr, csc), counts
up to 2^60 and beyond 2^53, negative and fractional counts, subnormal/huge entries, cancelling rows, forced ties
and near-ties (one ulp of the count off a tie), many columns.
Run: PYTHONPATH=$PWD nice -n 10 /work/main/.venv/bin/python benchmarks/attack37c/fuzz_tiers.py SEED TRIALS [split]
"""
from __future__ import annotations

import math
import sys
import time
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from blowfish_nb.mechanisms import exact_measure as em
from blowfish_nb.operators import Kron, Matrix
from blowfish_nb.strategies.optimized import DenseFactor


def rhe(fr: Fraction) -> int:
    q, r = divmod(fr.numerator, fr.denominator)
    if 2 * r > fr.denominator or (2 * r == fr.denominator and q & 1):
        q += 1
    return q


def exact_values(factors, cells, x):
    mats = [(F.toarray() if sp.issparse(F) else np.asarray(F)) for F in factors]
    t = np.array([Fraction(float(v)) for v in x.reshape(-1)], dtype=object).reshape(cells)
    for axis, F in enumerate(mats):
        Fo = np.array([[Fraction(float(v)) for v in row] for row in F], dtype=object)
        t = np.moveaxis(np.tensordot(Fo, np.moveaxis(t, axis, 0), axes=([1], [0])), 0, axis)
    return t.reshape(-1).tolist()


def entries(rng, shape, kind):
    m = rng.uniform(-1, 1, shape)
    if kind == "wide":
        m = np.ldexp(m, rng.integers(-1074, 200, shape))
    elif kind == "subnormal":
        m = np.ldexp(rng.integers(-2**20, 2**20, shape).astype(float), -1074)
    elif kind == "cancel":
        m = rng.choice([0.1, -0.2, 0.3, 1 / 3, -2 / 3, 0.7, -0.1], shape)
    elif kind == "mixed":
        m = np.where(rng.random(shape) < 0.5, m, np.ldexp(m, rng.integers(-200, -40, shape)))
    elif kind == "dyadic":  # short mantissas: exact ties are reachable
        m = np.ldexp(rng.integers(-8, 9, shape).astype(float), rng.integers(-30, 3, shape))
    m[rng.random(shape) < 0.2] = 0.0
    return m


def counts(rng, n, kind):
    if kind == "small":
        return rng.integers(0, 10, n).astype(float)
    if kind == "huge":
        return rng.integers(0, 2**52, n, dtype=np.int64).astype(float)
    if kind == "beyond53":
        return np.ldexp(rng.integers(2**52, 2**53, n, dtype=np.int64).astype(float), rng.integers(1, 12, n))
    if kind == "mid":
        return rng.integers(0, 2**int(rng.integers(1, 40)), n, dtype=np.int64).astype(float)
    if kind == "near40":
        return (2.0**40 - rng.integers(0, 4, n)).astype(float)
    if kind == "neg":
        return rng.integers(-2**30, 2**30, n).astype(float)
    if kind == "tiny":
        return np.ldexp(rng.uniform(-1, 1, n), rng.integers(-1074, -900, n))
    return np.round(rng.normal(0, 100, n), 3)


SPLIT = False  # "split" mode: one factor, whole counts below 2^40 (the split tier's domain), many columns


def trial(rng):
    nf = 1 if SPLIT else int(rng.choice([1, 1, 1, 2, 3, 4, 6, 14]))
    kind = str(rng.choice(["wide", "subnormal", "cancel", "mixed", "plain", "dyadic", "dyadic"]))
    if nf == 1:
        shapes = [(int(rng.integers(1, 6)), int(rng.choice([1, 3, 8, 64, 700])))]
    elif nf <= 4:
        shapes = [(int(rng.integers(1, 4)), int(rng.integers(1, 5))) for _ in range(nf)]
    else:
        shapes = [(int(rng.integers(1, 3)), int(rng.integers(1, 3))) for _ in range(nf)]
    mats = [entries(rng, s, kind) for s in shapes]
    cells = tuple(s[1] for s in shapes)
    kinds = ["small", "near40", "neg", "mid"] if SPLIT else ["small", "huge", "beyond53", "near40", "neg", "tiny", "frac"]
    x = counts(rng, math.prod(cells), str(rng.choice(kinds)))
    form = str(rng.choice(["dense", "csc", "csr", "factor", "matrix"]))
    wrap = {"dense": lambda M: M, "csc": sp.csc_array, "csr": sp.csr_array, "factor": DenseFactor,
            "matrix": lambda M: Matrix(sp.csc_array(M))}[form]
    A = wrap(mats[0]) if nf == 1 else Kron([DenseFactor(M) if form != "matrix" else Matrix(sp.csr_array(M))
                                             for M in mats])
    factors, cells2 = em._factors(A)
    ex = exact_values(factors, cells2, x)
    nz = [v for v in ex if v != 0]
    if nz and rng.random() < 0.9:
        v = nz[int(rng.integers(len(nz)))]
        low = (abs(v.numerator) & -abs(v.numerator)).bit_length() - 1 - (v.denominator.bit_length() - 1)
        mag = abs(v).numerator.bit_length() - abs(v).denominator.bit_length()
        r = rng.random()
        if r < 0.4:
            g = low + 1  # v / 2^g is a tie
        elif r < 0.6:
            g = low + int(rng.integers(2, 6))  # near a tie
        else:
            g = mag - int(rng.integers(-3, 70))
        g = int(np.clip(g, -1074, 1023))
    else:
        g = int(rng.integers(-1074, 100))
    return A, factors, cells2, x, ex, g


def main(seed, trials):
    rng = np.random.default_rng(seed)
    bad = {"float": 0, "split": 0, "extended": 0, "cascade": 0}
    decided = {"float": 0, "split": 0, "extended": 0}
    t0 = time.time()
    for k in range(trials):
        A, factors, cells, x, ex, g = trial(rng)
        ref = [rhe(v / Fraction(2) ** g) if g >= 0 else rhe(v * Fraction(2) ** (-g)) for v in ex]
        rows = np.arange(len(ref))
        # float tier: rows it decides are those exact_units is not asked for
        asked = []
        saved = em._split_tier, em._EXTENDED, em.exact_units
        em._split_tier, em._EXTENDED = (lambda *a: None), False
        em.exact_units = lambda f, c, xx, rr, gg: (asked.extend(rr.tolist()), [0] * len(rr))[1]
        try:
            w, _ = em.lattice_units(em.Product(A, x), g)
        finally:
            em._split_tier, em._EXTENDED, em.exact_units = saved
        for i in rows:
            if i not in asked:
                decided["float"] += 1
                if int(w[i]) != ref[i]:
                    bad["float"] += 1
                    if bad["float"] <= 3:
                        print("FLOAT MISMATCH", k, i, g, w[i], ref[i], x.tolist()[:4])
        if len(factors) == 1:
            F = factors[0]
            split = em._split_tier(F.toarray() if sp.issparse(F) else F, x, g)
            if split is not None:
                u, ok = split
                for i in np.flatnonzero(ok):
                    decided["split"] += 1
                    if int(u[i]) != ref[i]:
                        bad["split"] += 1
                        if bad["split"] <= 3:
                            print("SPLIT MISMATCH", k, i, g, u[i], ref[i], x.tolist()[:4])
        if em._EXTENDED:
            ok, u = em._extended_units(factors, cells, x, rows, g)
            for i in np.flatnonzero(ok):
                decided["extended"] += 1
                if int(u[i]) != ref[i]:
                    bad["extended"] += 1
                    if bad["extended"] <= 3:
                        print("EXTENDED MISMATCH", k, i, g, u[i], ref[i], x.tolist()[:4])
        w, big = em.lattice_units(em.Product(A, x), g)
        got = [big[i] if i in big else int(w[i]) for i in rows]
        if got != ref:
            bad["cascade"] += 1
            print("CASCADE MISMATCH", k, g)
    print(f"seed {seed}: {trials} trials, rows decided {decided}, mismatches {bad}, {time.time() - t0:.1f}s")


if __name__ == "__main__":
    SPLIT = len(sys.argv) > 3 and sys.argv[3] == "split"
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0, int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
