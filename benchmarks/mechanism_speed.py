"""Release time of every data-independent mechanism at k = 10^6, and of DAWA at k = 4096 (medians, one process).

Run: ``.venv/bin/python -m benchmarks.mechanism_speed`` (writes benchmarks/results/mechanism_speed.md).
Each time covers the whole release: exact sensitivity under the policy, the
noisy measurements, least squares and the workload answers. The baseline is
drawing k Laplace variates, so the last column is a machine-independent ratio.
DAWA (data-dependent) runs on the DPBench data sets at k = 4096 with 10,000
random ranges when ``../shared/data`` (or ``$BLOWFISH_DATA``) is present, and
on a synthetic piecewise histogram otherwise.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tqdm import tqdm

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.ranges import random_ranges
from benchmarks import _data
from benchmarks._timing import markdown_table, median_seconds, publish

RESULTS = Path(__file__).parent / "results" / "mechanism_speed.md"
K = 10**6


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.poisson(3, size=K).astype(float)
    d = Domain.grid(K)
    jobs = [
        ("Laplace", mechanisms.Laplace(), policy.threshold(d, 16), workload.identity(K)),
        ("Ordered", mechanisms.Ordered(), policy.threshold(d, 16), workload.prefix(K)),
        ("Ordered (consistent)", mechanisms.Ordered(consistent=True), policy.threshold(d, 16), workload.prefix(K)),
        ("Hierarchical b=2", mechanisms.Hierarchical(2), policy.threshold(d, 16), workload.prefix(K)),
        ("Hierarchical b=16", mechanisms.Hierarchical(16), policy.threshold(d, 16), workload.prefix(K)),
        ("Privelet", mechanisms.Privelet(), policy.threshold(d, 16), workload.prefix(K)),
        ("OrderedHierarchical θ=16 f=16", mechanisms.OrderedHierarchical(), policy.threshold(d, 16), workload.prefix(K)),
        ("Transformed+Laplace", mechanisms.Transformed(), policy.line(d), workload.identity(K)),
        ("Transformed+ConsistentEst", mechanisms.Transformed("consistent"), policy.line(d), workload.identity(K)),
        ("H^θ+Privelet θ=16 (exact Δ)", mechanisms.HThetaRanges(), policy.threshold(d, 16), workload.prefix(K)),
        ("H^θ+Privelet θ=16 (ε/3)", mechanisms.HThetaRanges("stretch"), policy.threshold(d, 16), workload.prefix(K)),
    ]
    base = median_seconds(lambda: rng.laplace(0, 1, size=K), repeats=5)
    rows = []
    for name, mech, pol, W in tqdm(jobs, desc="mechanisms at k=10^6"):
        seconds = median_seconds(lambda: mech.release(x, W, pol, 1.0, rng=rng), repeats=3)
        rows.append([name, pol.summary().split(" on ")[0], W.name, f"{seconds:.3f}", "yes" if seconds < 1 else "NO",
                     f"{seconds / base:.0f}×"])
    dawa_rows = dawa_times(rng)
    text = "\n\n".join([
        "# Mechanism release time at k = 10^6",
        "Command: `.venv/bin/python -m benchmarks.mechanism_speed`. Median of 3 releases; "
        f"baseline: drawing 10^6 Laplace variates = {base * 1e3:.1f} ms.",
        markdown_table(["mechanism", "policy", "workload", "seconds", "< 1 s", "× baseline"], rows),
        "## DAWA at k = 4096 (median of 3 releases, ε = 1 and 0.01; baseline as above)",
        markdown_table(["data", "workload", "ε", "buckets", "seconds", "< 1 s"], dawa_rows),
    ])
    publish(RESULTS, text)


def dawa_times(rng) -> list[list[object]]:
    k = 4096
    try:
        data = {n: _data.dpbench(f"{n}.n4096").astype(float) for n in ("PATENT", "INCOME", "NETTRACE", "MEDCOST")}
    except SystemExit:
        data = {"synthetic": np.repeat(rng.poisson(50, size=64), 64).astype(float)}
    dp = policy.dp(Domain.grid(k))
    rows = []
    from blowfish_nb.mechanisms.dawa import l1_partition

    for name, x in tqdm(data.items(), desc="DAWA at k=4096"):
        for W in (workload.identity(k), random_ranges(k, 10_000, rng=0)):
            for eps in (1.0, 0.01):
                seconds = median_seconds(lambda: mechanisms.DAWA().release(x, W, dp, eps, rng=rng), repeats=3)
                buckets = len(l1_partition(x, eps * 0.25, 1 / (0.75 * eps), rng))
                rows.append([name, "histogram" if W.shape[0] == k else "10,000 ranges", eps, buckets,
                             f"{seconds:.3f}", "yes" if seconds < 1 else "NO"])
    return rows


if __name__ == "__main__":
    main()
