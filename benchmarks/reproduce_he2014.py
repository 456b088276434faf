"""He, Machanavajjhala, Ding (SIGMOD 2014) Fig. 2(b): Ordered Hierarchical on Adult capital loss.

Run: ``.venv/bin/python -m benchmarks.reproduce_he2014`` (writes benchmarks/results/he2014.md; about 25 s).
Domain 0…4356 (4357 values, the paper's), fan-out 16, 10,000 random ranges,
θ ∈ {full, 1000, 500, 100, 50, 10, 1}, ε ∈ {0.1, …, 1.0}. The table gives the
exact expected per-query squared error of the mechanism (validated against
Monte Carlo in the tests) and, at three ε, the empirical mean over 5 releases
on the real data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tqdm import tqdm

from blowfish_nb import Domain, mechanisms, policy
from blowfish_nb.ranges import random_ranges
from benchmarks._data import adult
from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "he2014.md"
K = 4357
THETAS = ["full", 1000, 500, 100, 50, 10, 1]
EPSILONS = [round(0.1 * i, 1) for i in range(1, 11)]
RUNS = 5


def main() -> None:
    df = adult()
    domain = Domain.from_column(df["caploss"], bins=np.arange(K + 1) - 0.5, name="caploss")
    x = domain.histogram(df).astype(float)
    W = random_ranges(K, 10_000, rng=2014)
    truth = W @ x
    mech = mechanisms.OrderedHierarchical(branching=16)
    rng = np.random.default_rng(7)
    analytic, empirical = [], []
    for theta in tqdm(THETAS, desc="θ"):
        pol = policy.threshold(domain, K if theta == "full" else theta)
        row = [theta] + [f"{mech.expected_error(W, pol, e):.4g}" for e in EPSILONS]
        analytic.append(row)
        emp = [theta]
        for e in (0.1, 0.5, 1.0):
            mse = [np.mean((mech.release(x, W, pol, e, rng=rng) - truth) ** 2) for _ in range(RUNS)]
            emp.append(f"{np.mean(mse):.4g} (exact {mech.expected_error(W, pol, e):.4g})")
        empirical.append(emp)
    full = [float(v) for v in analytic[0][1:]]
    one = [float(v) for v in analytic[-1][1:]]
    falling = all(float(a) > float(b) for r1, r2 in zip(analytic[1:], analytic[2:]) for a, b in zip(r1[1:], r2[1:]))
    text = "\n\n".join([
        "# He et al. 2014, Fig. 2(b): Ordered Hierarchical on Adult capital loss",
        f"Command: `.venv/bin/python -m benchmarks.reproduce_he2014`. {int(x.sum()):,} records, k = {K}, "
        "f = 16, ε split of Eq. 15, 10,000 random ranges (seed 2014).",
        "## Expected squared error per range query (exact)",
        markdown_table(["θ"] + [f"ε={e}" for e in EPSILONS], analytic),
        "## Empirical mean over 5 releases on the data (exact figure in brackets)",
        markdown_table(["θ", "ε=0.1", "ε=0.5", "ε=1.0"], empirical),
        "## Against the paper",
        f"* Error falls as θ falls from 1000 to 1 at every ε: {'yes' if falling else 'NO'}.",
        f"* θ = 1 (the Ordered mechanism) vs θ = full (one tree, bounded DP): {full[0] / one[0]:.0f}× less error "
        f"at ε = 0.1, {full[-1] / one[-1]:.0f}× at ε = 1 — the paper's orders of magnitude.",
        "* Where we differ: θ = 1000 costs more than θ = full here"
        + ("" if all(float(a) > float(b) for a, b in zip(analytic[1][1:], analytic[0][1:])) else " at some ε")
        + ". With several blocks a move across a block "
        "boundary changes two trees and an S node, so the hybrid pays more than a single tree; the paper's "
        "claim that OH is never worse than the hierarchical mechanism does not hold for the Eq. 15 split "
        "with an exact sensitivity (see tests/mechanisms/test_ordered_hierarchical.py).",
        "## Discrete noise (issue 13)",
        "Every released noise draw is now discrete Laplace (whole-number noise); its variance "
        "1/(2 sinh²(1/(2b))) is about 2b² − 1/6, so the exact figures fall below the continuous 2b² ones by a "
        "nearly constant amount per noisy count. That is invisible where the scales are large and shows at the "
        f"smallest ones: θ = 1 at ε = 1 was 3.999 with continuous Laplace (commit 67d59b4) and is {one[-1]:.4g} "
        f"now, which is why the θ = 1 vs θ = full ratio at ε = 1 rose from 392× to {full[-1] / one[-1]:.0f}×; the "
        "other cells moved by under 0.4 %. The empirical means are new draws (the sampler changed) and agree with "
        "the exact figures as before, within the spread of 5 releases. Ordered Hierarchical has no "
        "data-dependent step, so the DAWA change of issue 13 does not reach this page.",
    ])
    publish(RESULTS, text)


if __name__ == "__main__":
    main()
