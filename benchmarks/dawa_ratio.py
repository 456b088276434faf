"""What-if (issue 25, stop 36): DAWA's budget split ε₁/ε with the PrivTree partition, on the DPBench sets and UCI Adult.

Run: ``BLOWFISH_DATA=/work/shared/data python -m benchmarks.dawa_ratio [--runs N]`` (writes
benchmarks/results/dawa_ratio.md; a few minutes). Nothing here is shipped: the split was last measured with the
noisy least-cost partition (issue 16, :mod:`blowfish_nb.mechanisms.dawa`), never with PrivTree. ``mechanisms.DAWA``
with ``ratio`` = 0.25 (the default, the DAWA paper's and the reference's), 0.4 and 0.5, under DP, the histogram and
2,000 random ranges (seed 7), mean squared error per query over ``--runs`` seeded releases, against the reference
as tabled in ``dawa_reference.md`` (3 runs); UCI Adult's columns as ``benchmarks/dawa_adaptive_heldout.py`` bins
them, histogram only, against Laplace's exact error.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.ranges import random_ranges
from benchmarks._data import dpbench
from benchmarks._timing import markdown_table, publish
from benchmarks.dawa_spiketest import DATASETS, EPSILONS, K, heldout, reference_errors

RESULTS = Path(__file__).parent / "results" / "dawa_ratio.md"
RATIOS = (0.25, 0.4, 0.5)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    ref = reference_errors()
    pol = policy.dp(Domain.grid(K))
    loads = {"identity": workload.identity(K), "2,000 ranges": random_ranges(K, 2000, rng=7)}
    rows, ratios = [], {(w, r): [] for w in loads for r in RATIOS}
    for name in DATASETS:
        x = dpbench(f"{name}.n4096").astype(float)
        for eps in EPSILONS:
            for wname, W in loads.items():
                truth = W @ x
                err = {}
                for j, r in enumerate(RATIOS):
                    rng = np.random.default_rng([EPSILONS.index(eps), DATASETS.index(name), len(wname), j])
                    m = mechanisms.DAWA(ratio=r)
                    err[r] = float(np.mean([np.mean((m.release(x, W, pol, eps, rng=rng) - truth) ** 2)
                                            for _ in range(args.runs)]))
                base = ref[(name, eps, wname)]
                for r in RATIOS:
                    ratios[(wname, r)].append(err[r] / base)
                rows.append([name, eps, wname, f"{base:.4g}", *(f"{err[r]:.4g}" for r in RATIOS),
                             *(f"{err[r] / base:.2f}" for r in RATIOS)])
                print(" | ".join(str(c) for c in rows[-1]), flush=True)
    summary = [[w, r, f"{np.median(ratios[(w, r)]):.2f}", f"{np.max(ratios[(w, r)]):.2f}",
                f"{np.sort(ratios[(w, r)])[-2]:.2f}"] for w in loads for r in RATIOS]
    W = loads["identity"]
    held = []
    for name, x in heldout().items():
        for eps in EPSILONS:
            lap = float(mechanisms.Laplace().expected_error(W, pol, eps))
            cells = []
            for j, r in enumerate(RATIOS):
                rng = np.random.default_rng([EPSILONS.index(eps), 99, j])
                m = mechanisms.DAWA(ratio=r)
                cells.append(np.mean([np.mean((m.release(x, W, pol, eps, rng=rng) - x) ** 2)
                                      for _ in range(args.runs)]) / lap)
            held.append([name, eps, int((x > 0).sum()), *(f"{c:.3f}" for c in cells)])
            print(" | ".join(str(c) for c in held[-1]), flush=True)
    publish(RESULTS, "\n\n".join([
        "# What-if: DAWA's budget split with the PrivTree partition (issue 25, stop 36)",
        f"Command: `BLOWFISH_DATA=/work/shared/data OPENBLAS_NUM_THREADS=1 python -m benchmarks.dawa_ratio --runs "
        f"{args.runs}` ({time.perf_counter() - started:.0f} s). `mechanisms.DAWA(ratio=r)`, ε₁ = rε; mean squared "
        "error per query over the runs; *ref* is dpcomp_core's DAWA as tabled in `dawa_reference.md` (3 runs, ε₁ = "
        "0.25ε).",
        markdown_table(["data", "ε", "workload", "ref", *(f"r = {r}" for r in RATIOS),
                        *(f"r = {r} / ref" for r in RATIOS)], rows),
        "## Summary (ratio to the reference)",
        markdown_table(["workload", "r", "median", "worst", "second worst"], summary),
        "## Held-out: UCI Adult's numeric columns, histogram, DAWA / Laplace (exact) at ε",
        markdown_table(["column", "ε", "non-empty cells", *(f"r = {r}" for r in RATIOS)], held),
    ]))


if __name__ == "__main__":
    main()
