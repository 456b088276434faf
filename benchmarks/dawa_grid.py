"""PrivTree on a 2-D grid (issue 25): PartitionFirst under the grid policy on the tweet locations, 64 × 64 cells.

Run: ``.venv/bin/python -m benchmarks.dawa_grid`` (writes benchmarks/results/dawa_grid.md; a minute or two).

The tweets of ``twitter_256_256`` aggregated to 64 × 64 (as ``reproduce_anuarbek``), the histogram under the grid
G¹, mean squared error per cell over 3 seeded runs: PartitionFirst with the PrivTree partition along the Hilbert
curve (a quadtree of squares and 2:1 rectangles) at its default split (DAWA's ratio, θ = g/ε₂ since issue 25's
Blowfish work) and at ε₁ = 0.5ε, with the noisy least-cost partition it replaced (``dawa-l1``),
Adaptive (a share ρ = choice_share(k, ε) ≤ 3% of ε chooses between PartitionFirst and Laplace) and Laplace (Δ = 2 under the grid).

A second table splits the PartitionFirst columns' error: over 3 partition draws of their own (seed 1, the release's
law: ``PartitionFirst.partition`` with DP DAWA's histogram bias start), the number of buckets and the partition's
own error per cell (the true bucket totals spread uniformly, no noise): the part of the error no second stage can
remove (issue 25, stop 34).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.mechanisms.dawa import histogram_offset
from benchmarks._data import dpbench
from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "dawa_grid.md"
RUNS = 3


def main() -> None:
    T = dpbench("twitter_256_256").astype(float)
    idx = (np.arange(256) * 64) // 256
    tw = np.zeros((64, 64))
    np.add.at(tw, (idx[:, None], idx[None, :]), T)
    x = tw.reshape(-1)
    pol, W = policy.grid(Domain.grid((64, 64)), 1), workload.identity(4096)
    mechs = {"PartitionFirst (PrivTree, Hilbert; ε₁ = 0.25ε, θ = 2/ε₂: DP DAWA's at ε/2)": mechanisms.PartitionFirst(),
             "PartitionFirst (PrivTree, ε₁ = 0.5ε)": mechanisms.PartitionFirst(split=0.5),
             "PartitionFirst (dawa-l1, before)": mechanisms.PartitionFirst("dawa-l1"),
             "Adaptive(PartitionFirst or Laplace)": mechanisms.Adaptive(dependent=mechanisms.PartitionFirst()),
             "Laplace": mechanisms.Laplace()}
    rows = []
    for eps in (0.01, 0.1, 1.0):
        row = [eps]
        for m in mechs.values():
            rng = np.random.default_rng(0)
            row.append(f"{np.mean([np.mean((m.release(x, W, pol, eps, rng=rng) - x) ** 2) for _ in range(RUNS)]):.4g}")
        rows.append(row)
        print(row, flush=True)
    split_rows = []
    for eps in (0.01, 0.1, 1.0):
        row = [eps]
        for label, m in mechs.items():
            if not label.startswith("PartitionFirst"):
                continue
            rng = np.random.default_rng(1)
            draws = [m.partition(x, pol, eps, rng, offset=histogram_offset(W, x.size)) for _ in range(RUNS)]
            own = [np.mean((np.bincount(b, x)[b] / np.bincount(b)[b] - x) ** 2) for b in draws]
            row.append(f"{np.mean([b.max() + 1 for b in draws]):.0f} / {np.mean(own):.4g}")
        split_rows.append(row)
    publish(RESULTS, "\n\n".join([
        "# PrivTree on the 64 × 64 tweet grid under G¹ (issue 25)",
        f"Command: `OPENBLAS_NUM_THREADS=1 BLOWFISH_DATA=/work/shared/data python -m benchmarks.dawa_grid`. Mean "
        f"squared error per cell, mean of {RUNS} runs.",
        markdown_table(["ε", *mechs], rows),
        f"Buckets / the partition's own squared error per cell (true bucket totals spread uniformly), mean of {RUNS} "
        "partition draws (seed 1):",
        markdown_table(["ε", *(lab for lab in mechs if lab.startswith("PartitionFirst"))], split_rows),
    ]))


if __name__ == "__main__":
    main()
