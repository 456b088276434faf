"""The float-safe sampler against NumPy's plain Laplace draw, as ratios in one process.

Run: ``.venv/bin/python -m benchmarks.noise_speed`` (writes benchmarks/results/noise_speed.md).

For k draws at several scales: the median time of ``rng.laplace(0, b, k)``
(the textbook draw a release used before), of :func:`discrete_laplace` and
of :func:`noisy` (whole counts plus noise, with its whole-number check), and
the ratios to the baseline. The machines are shared and noisy, so only the
ratios (measured back to back in this process) are meant to be compared.
The target of issue 13: k = 10⁶ in at most 2× the plain draw.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks._timing import markdown_table, median_seconds, publish
from blowfish_nb.mechanisms.noise import discrete_laplace, noisy

RESULTS = Path(__file__).parent / "results" / "noise_speed.md"


def main() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for k in (10**4, 10**5, 10**6):
        counts = rng.poisson(20, size=k).astype(float)
        for b in (0.5, 1.0, 4.0, 100.0):
            base = median_seconds(lambda: rng.laplace(0.0, b, k), repeats=9)
            dlap = median_seconds(lambda: discrete_laplace(rng, b, k), repeats=9)
            full = median_seconds(lambda: noisy(counts, b, rng), repeats=9)
            rows.append([f"{k:,}", f"{b:g}", f"{base * 1e3:.2f}", f"{dlap * 1e3:.2f}", f"{full * 1e3:.2f}",
                         f"{dlap / base:.2f}", f"{full / base:.2f}"])
    table = markdown_table(["k", "scale b", "numpy laplace ms", "discrete_laplace ms", "noisy(counts) ms",
                            "ratio draw", "ratio noisy"], rows)
    publish(RESULTS, "# Float-safe noise against numpy's Laplace draw (medians of 9, same process)\n\n"
            "`.venv/bin/python -m benchmarks.noise_speed`\n\n" + table)


if __name__ == "__main__":
    main()
