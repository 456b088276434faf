"""DAWA's partition step since issue 25 (PrivTree) at k = 4,096 … 262,144 cells, against the noisy least-cost one.

Run: ``.venv/bin/python -m benchmarks.privtree_speed`` (writes benchmarks/results/privtree_speed.md; about a
minute). Median of 5 timed calls after one warm-up, same process, same piecewise-constant Poisson histogram as
``benchmarks/dawa_speed.py``. The issue's target: time at 65,536 cells at most 5× the time at 16,384 (4× the
cells; near-linear). Both scores are timed (``"count"`` for DAWA and PartitionFirst, ``"deviation"`` for
Transformed+DAWA: one sort per tree level), and the whole DAWA release on the histogram workload.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.mechanisms.dawa import l1_partition
from blowfish_nb.mechanisms.privtree import privtree_partition
from benchmarks._timing import markdown_table, median_seconds, publish
from benchmarks.dawa_speed import EPSILON, RATIO, histogram

RESULTS = Path(__file__).parent / "results" / "privtree_speed.md"
SIZES = (4096, 16384, 65536, 262144)


def main() -> None:
    eps1, cost = RATIO * EPSILON, 1.0 / ((1 - RATIO) * EPSILON)
    rows, times = [], {}
    for k in SIZES:
        x = histogram(k)
        rng = np.random.default_rng(k)
        t_count = median_seconds(lambda: privtree_partition(x, eps1, cost, rng))
        t_dev = median_seconds(lambda: privtree_partition(x, eps1, cost, rng, score="deviation"))
        t_l1 = median_seconds(lambda: l1_partition(x, eps1, cost, rng), repeats=3) if k <= 65536 else float("nan")
        pol = policy.dp(Domain.grid(k))
        t_release = median_seconds(
            lambda: mechanisms.DAWA().release(x, workload.identity(k), pol, EPSILON, rng=rng), repeats=3)
        buckets = privtree_partition(x, eps1, cost, rng).size
        times[k] = (t_count, t_dev, t_release)
        rows.append([f"{k:,}", f"{t_count * 1e3:.1f}", f"{t_dev * 1e3:.1f}", f"{t_l1 * 1e3:.0f}",
                     f"{t_release:.3f}", buckets])
    ratio = [times[65536][i] / times[16384][i] for i in range(3)]
    text = "\n\n".join([
        "# DAWA's partition step: PrivTree (issue 25)",
        "Command: `python -m benchmarks.privtree_speed` (median of 5 calls after a warm-up; shared 2-core machine).",
        markdown_table(["k", "PrivTree count (ms)", "PrivTree deviation (ms)", "noisy least-cost L1 (ms)",
                        "whole DAWA release, histogram (s)", "buckets (count)"], rows),
        f"**Time at 65,536 / time at 16,384** (target ≤ 5): PrivTree count {ratio[0]:.2f}, deviation "
        f"{ratio[1]:.2f}, whole DAWA release {ratio[2]:.2f}.",
    ])
    publish(RESULTS, text)


if __name__ == "__main__":
    main()
