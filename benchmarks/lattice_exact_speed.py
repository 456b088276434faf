"""Release time with the exact lattice measurement vs the old float rounding, in one process (stop 37).

Run: ``nice -n 10 .venv/bin/python -m benchmarks.lattice_exact_speed`` (prints a table; about 2 min).
"Before" swaps ``noise.lattice_units`` for the old rounding of the float product fl(A x) (the same draws);
"after" is the package as it is. The last column counts the rows the exact (integer) tier had to compute.
"""

from __future__ import annotations

import numpy as np

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.mechanisms import exact_measure, noise
from blowfish_nb.operators import Kron
from blowfish_nb.strategies.optimized import DenseFactor
from benchmarks._timing import markdown_table, median_seconds


def _old_units(values, g):
    return np.round(np.ldexp(np.asarray(values, dtype=float), -g)), {}


def _jobs(rng):
    jobs = []
    # optimised strategies (fitted once, outside the timing) on ordinary data
    d1 = Domain.grid(1024)
    W1 = workload.prefix(1024)
    p1 = policy.threshold(d1, 4)
    m1 = mechanisms.Optimized().for_workload(W1, p1)
    x1 = rng.poisson(1000, 1024).astype(float)
    jobs.append(("Optimized, prefix, k=1024, n≈1e6", lambda r: m1.release(x1, W1, p1, 1.0, rng=r)))
    d2 = Domain.grid((64, 64))
    W2 = workload.marginal((64, 64), [0])
    p2 = policy.grid(d2, 1)
    m2 = mechanisms.Optimized().for_workload(W2, p2)
    x2 = rng.poisson(50, 4096).astype(float)
    jobs.append(("Optimized, marginal, 64×64, n≈2e5", lambda r: m2.release(x2, W2, p2, 1.0, rng=r)))
    jobs.append(("Optimized sample ×200, 64×64", lambda r: m2.sample(x2, W2, p2, 1.0, size=200, rng=r)))
    W5 = workload.kron(workload.prefix(64), workload.prefix(64))  # a Kronecker strategy (two 68×64 factors)
    m5 = mechanisms.Optimized().for_workload(W5, p2)
    jobs.append(("Optimized, 2-D prefix (Kron 68×64 ⊗ 68×64), n≈2e5", lambda r: m5.release(x2, W5, p2, 1.0, rng=r)))
    # a large Kronecker strategy: the measurement alone (k = 10^6 cells, 10^6 rows)
    F = [DenseFactor(rng.normal(size=(1000, 1000))) for _ in range(2)]
    K = Kron(F)
    x3 = rng.poisson(3, 10**6).astype(float)
    # Δ of a move: at most 2·(largest column norm of the product) (an upper bound standing in for the policy's Δ)
    delta = 2 * float(np.prod([np.abs(f.dense()).sum(axis=0).max() for f in F]))
    jobs.append(("lattice_noisy, Kron 1000×1000 ⊗ 1000×1000, k=1e6",
                 lambda r: noise.lattice_noisy(noise.product(K, x3), delta, 1.0, 10**6, r)))
    d4 = Domain.grid((20, 20))
    p4 = policy.grid(d4, 1)
    x4 = rng.poisson(200, 400).astype(float)
    s4 = mechanisms.SuLQ(k=3, iterations=5)
    jobs.append(("SuLQ k=3, 5 steps, 20×20", lambda r: s4.release(x4, workload.identity(400), p4, 1.0, rng=r)))
    return jobs


def main() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for name, job in _jobs(rng):
        counts = []
        real_exact = exact_measure.exact_units
        exact_measure.exact_units = lambda *a: counts.append(len(a[3])) or real_exact(*a)
        try:
            after = median_seconds(lambda: job(np.random.default_rng(1)), repeats=5)
        finally:
            exact_measure.exact_units = real_exact
        real = noise.lattice_units
        noise.lattice_units = _old_units
        try:
            before = median_seconds(lambda: job(np.random.default_rng(1)), repeats=5)
        finally:
            noise.lattice_units = real
        rows.append([name, f"{before:.4f}", f"{after:.4f}", f"{after / before:.2f}", max(counts, default=0)])
    print(markdown_table(["release", "before s (float rounding)", "after s (exact)", "after/before",
                          "rows in the exact tier (max per call)"], rows))


if __name__ == "__main__":
    main()
