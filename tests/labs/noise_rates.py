"""False-reject and miss rates of the hidden tests that run a student's noise code (issue 26): lab 3 question 3
(:func:`blowfish_nb.labs._grade.range_noise_verdict`) and lab 5 question 2 (``laplace_noise_verdict``), over seeds
0..N-1. Not a test (minutes of CPU): ``PYTHONPATH=. python tests/labs/noise_rates.py lab03 400`` prints, per law,
how many seeds gave each verdict (``None``: the point is given).
"""

from __future__ import annotations

import collections
import sys

import numpy as np

from blowfish_nb.labs._grade import laplace_noise_verdict, range_noise_verdict
from blowfish_nb.mechanisms.noise import discrete_laplace

K, LO, HI, B = 4096, 1024, 3071, 10.0  # lab 3: the range [1024, 3071] of 4096 cells, b = Δ/ε = 1/0.1
X5, S5 = (3.0, 0.0, 7.0, 1.0, 1.0, 12.0), 2.0  # lab 5: Q2_DATA, scale Δ/ε = 2

LAB03 = {
    "continuous Laplace difference": lambda x, r: x[LO:HI + 1].sum() + r.laplace(0, B) - r.laplace(0, B),
    "discrete Laplace difference": lambda x, r: x[LO:HI + 1].sum() + discrete_laplace(r, B, 2) @ [1, -1],
    "Gaussian, same variance": lambda x, r: x[LO:HI + 1].sum() + r.normal(0, 2 * B),
    "Gaussian, same variance, rounded": lambda x, r: x[LO:HI + 1].sum() + np.round(r.normal(0, 2 * B)),
    "uniform, same variance": lambda x, r: x[LO:HI + 1].sum() + r.uniform(-2 * B * 3**.5, 2 * B * 3**.5),
    "one Laplace draw, same variance": lambda x, r: x[LO:HI + 1].sum() + r.laplace(0, B * 2**.5),
}
LAB05 = {
    "continuous Laplace": lambda x, s, r: x + r.laplace(0, S5, (s, len(x))),
    "discrete Laplace": lambda x, s, r: x + discrete_laplace(r, S5, (s, len(x))),
    "Gaussian, same variance": lambda x, s, r: x + r.normal(0, S5 * 2**.5, (s, len(x))),
    "uniform, same variance": lambda x, s, r: x + r.uniform(-S5 * 6**.5, S5 * 6**.5, (s, len(x))),
}


def rates(lab: str, n: int) -> dict[str, dict]:
    """{law: {verdict: seeds}} over seeds 0..n-1."""
    out = {}
    for name, f in (LAB03 if lab == "lab03" else LAB05).items():
        if lab == "lab03":
            verdicts = (range_noise_verdict(f, K, (LO, HI), B, seed=s) for s in range(n))
        else:
            verdicts = (laplace_noise_verdict(f, X5, S5, seed=s) for s in range(n))
        out[name] = dict(collections.Counter(verdicts))
        print(f"{name}: {out[name]}", flush=True)
    return out


if __name__ == "__main__":
    rates(sys.argv[1], int(sys.argv[2]))
