"""OrderedHierarchical and H^θ+Privelet releases of prefix sums at k = 10⁶ (issue 28: ≤ 1 s each).

Run: ``nice -n 10 .venv/bin/python -m benchmarks.large_domain_release`` (writes
benchmarks/results/large_domain_release.md). Each mechanism's ``release``
(plan, exact Δ, noise, inference) on 10⁶ cells under G^θ, θ = 16, timed in one
process beside a baseline measured alongside: the Laplace mechanism's
histogram release at the same k (the same noise door on 10⁶ cells). Medians
and minima of interleaved repeats; the minima are the closer measure on a
shared machine (preemption only ever adds time).
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import numpy as np

from blowfish_nb import Domain, mechanisms, policy, workload
from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "large_domain_release.md"
K, THETA, REPEATS = 10**6, 16, 5


def main() -> None:
    rng = np.random.default_rng(28)
    x = rng.poisson(3, K).astype(float)
    W, pol = workload.prefix(K), policy.threshold(Domain.grid(K), THETA)
    runs = {
        "Laplace, histogram (baseline)": lambda: mechanisms.Laplace().release(x, workload.identity(K), pol, 1.0,
                                                                             rng=rng),
        "OrderedHierarchical, prefix sums": lambda: mechanisms.OrderedHierarchical().release(x, W, pol, 1.0, rng=rng),
        "H^θ+Privelet, prefix sums": lambda: mechanisms.HThetaRanges().release(x, W, pol, 1.0, rng=rng),
    }
    times = {n: [] for n in runs}
    for _ in range(REPEATS):
        for n, f in runs.items():
            t = time.perf_counter()
            f()
            times[n].append(time.perf_counter() - t)
    base_med = statistics.median(times["Laplace, histogram (baseline)"])
    base_min = min(times["Laplace, histogram (baseline)"])
    rows = [[n, f"{statistics.median(t):.3f}", f"{min(t):.3f}", f"{statistics.median(t) / base_med:.1f}",
             f"{min(t) / base_min:.1f}"] for n, t in times.items()]
    text = "\n".join([
        f"# Releases at k = {K:,} under G^θ, θ = {THETA}",
        "",
        "Command: `nice -n 10 .venv/bin/python -m benchmarks.large_domain_release`. "
        f"{REPEATS} interleaved repeats in one process; load average when run: {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores.",
        "",
        markdown_table(["release", "median s", "min s", "÷ Laplace (median)", "÷ Laplace (min)"], rows),
    ])
    publish(RESULTS, text)


if __name__ == "__main__":
    main()
