"""Release time of every data-independent mechanism at k = 10^6 (median of repeats, one process).

Run: ``.venv/bin/python -m benchmarks.mechanism_speed`` (writes benchmarks/results/mechanism_speed.md).
Each time covers the whole release: exact sensitivity under the policy, the
noisy measurements, least squares and the workload answers. The baseline is
drawing k Laplace variates, so the last column is a machine-independent ratio.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tqdm import tqdm

from blowfish_nb import Domain, mechanisms, policy, workload
from benchmarks._timing import markdown_table, median_seconds

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
    ]
    base = median_seconds(lambda: rng.laplace(0, 1, size=K), repeats=5)
    rows = []
    for name, mech, pol, W in tqdm(jobs, desc="mechanisms at k=10^6"):
        seconds = median_seconds(lambda: mech.release(x, W, pol, 1.0, rng=rng), repeats=3)
        rows.append([name, pol.summary().split(" on ")[0], W.name, f"{seconds:.3f}", "yes" if seconds < 1 else "NO",
                     f"{seconds / base:.0f}×"])
    text = "\n\n".join([
        "# Mechanism release time at k = 10^6",
        "Command: `.venv/bin/python -m benchmarks.mechanism_speed`. Median of 3 releases; "
        f"baseline: drawing 10^6 Laplace variates = {base * 1e3:.1f} ms.",
        markdown_table(["mechanism", "policy", "workload", "seconds", "< 1 s", "× baseline"], rows),
    ])
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
