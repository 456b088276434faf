"""Attack 37c: the violation hunter on cancelling strategies with large counts through Optimized.release.

attack36b/37b's strategy (row 0 = (0.1, 0.1, −0.2, −0.2) cancels within the components of sensitive_attributes on
a 2×2 grid, row 1 makes Δ tiny) and variants with Δ = 1e-25, 1e-300, 1e-3, counts 12,345, 2^40 − 1, 2^52 + 2 and
3·2^60 (beyond 2^53: the float tier cannot hold them exactly, the split tier refuses them, the long double tier's
bound grows), bases where row 0's exact value is a tie. ε = 1.
Run: PYTHONPATH=$PWD nice -n 10 /work/main/.venv/bin/python benchmarks/attack37c/hunt_cancel.py
"""
from __future__ import annotations

import time

import numpy as np

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.analysis.hunt import hunt
from blowfish_nb.strategies.optimized import DenseFactor, OptimizedStrategy

SHAPE = (2, 2)
POL = policy.sensitive_attributes(Domain.grid(SHAPE), ["x1"])


def main():
    W = workload.marginal(SHAPE, [0])
    for tiny in (1e-25, 1e-300, 1e-3):
        rows = np.array([[0.1, 0.1, -0.2, -0.2], [0.0, tiny, 0.0, 0.0]])
        f = DenseFactor(rows)
        m = mechanisms.Optimized(OptimizedStrategy((f,), float(POL.sensitivity(f)), 0.0, SHAPE))
        for c in (12345.0, 2.0**40 - 1, 2.0**52 + 2, 3 * 2.0**60):
            base = np.array([c, c, c - 1, 1.0]) if c < 2**53 else np.array([c, c, c, 0.0])
            t0 = time.time()
            try:
                r = hunt(m, POL, 1.0, workload=W, bases=[base], pilot=400, confirm=1500, candidates=3, rng=7)
                print(f"Δ row {tiny:g} count {c:.6g}: violation={r.violation} {str(r)[:160]} ({time.time()-t0:.0f}s)")
            except Exception as e:  # noqa: BLE001
                print(f"Δ row {tiny:g} count {c:.6g}: raised {type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
