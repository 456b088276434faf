"""False-reject and miss rates of the hidden tests that run a student's noise code (issue 26): lab 3 question 3
(:func:`blowfish_nb.labs._grade.range_noise_verdict`, ``range_noise(rng)``) and lab 5 question 2
(``laplace_noise_verdict``, ``fixed_noise(rng)``), over seeds 0..N-1. Not a test (minutes of CPU):
``PYTHONPATH=. python tests/labs/noise_rates.py lab03 400`` prints, per law, how many seeds gave each verdict
(``None``: the point is given). Since noise35 the student writes the noise and the grader passes nothing but a
generator: the laws below are noise functions.
"""

from __future__ import annotations

import collections
import sys

import numpy as np

from blowfish_nb.labs._grade import laplace_noise_verdict, range_noise_verdict
from blowfish_nb.mechanisms.noise import discrete_laplace

B = 10.0  # lab 3: b = Δ/ε = 1/0.1 for the prefix sums of the range [1024, 3071] of 4096 cells
K5, S5 = 6, 2.0  # lab 5: 6 cells, scale Δ/ε = 2

LAB03 = {
    "continuous Laplace difference": lambda r: r.laplace(0, B) - r.laplace(0, B),
    "discrete Laplace difference": lambda r: discrete_laplace(r, B, 2) @ [1, -1],
    "Gaussian, same variance": lambda r: r.normal(0, 2 * B),
    "Gaussian, same variance, rounded": lambda r: np.round(r.normal(0, 2 * B)),
    "uniform, same variance": lambda r: r.uniform(-2 * B * 3**.5, 2 * B * 3**.5),
    "one Laplace draw, same variance": lambda r: r.laplace(0, B * 2**.5),
    # gamer35: Laplace on the grader's 128-bit seeds, zero on a person's (default_rng(2026))
    "gamer35 seeded_rng_exact": lambda r: ((r.laplace(0, B) - r.laplace(0, B))
                                           * (r.bit_generator.seed_seq.entropy > 2**64)),
}
LAB05 = {
    "continuous Laplace": lambda r: r.laplace(0, S5, K5),
    "discrete Laplace": lambda r: discrete_laplace(r, S5, K5),
    "Gaussian, same variance": lambda r: r.normal(0, S5 * 2**.5, K5),
    "Gaussian, same variance, rounded": lambda r: np.round(r.normal(0, S5 * 2**.5, K5)),
    "uniform, same variance": lambda r: r.uniform(-S5 * 6**.5, S5 * 6**.5, K5),
    "gamer35 seeded_rng_exact": lambda r: r.laplace(0, S5, K5) * (r.bit_generator.seed_seq.entropy > 2**64),
}


def rates(lab: str, n: int, first: int = 0, only: str = "") -> dict[str, dict]:
    """{law: {verdict: seeds}} over seeds first..first+n-1, for the laws whose name holds ``only``."""
    out = {}
    for name, f in (LAB03 if lab == "lab03" else LAB05).items():
        if only not in name:
            continue
        seeds = range(first, first + n)
        if lab == "lab03":
            verdicts = (range_noise_verdict(f, B, seed=s) for s in seeds)
        else:
            verdicts = (laplace_noise_verdict(f, K5, S5, seed=s) for s in seeds)
        out[name] = dict(collections.Counter(verdicts))
        print(f"{name}: {out[name]}", flush=True)
    return out


if __name__ == "__main__":
    rates(sys.argv[1], int(sys.argv[2]), *(int(a) for a in sys.argv[3:4]), *sys.argv[4:5])
