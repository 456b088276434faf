"""Anuarbek, "Data-Dependent Blowfish Private Algorithm for Histogram Queries", §6 (Figs. 4 and 5), reproduced.

Run: ``.venv/bin/python -m benchmarks.reproduce_anuarbek`` (writes benchmarks/results/anuarbek.md).

Histogram workload, mean squared error per cell averaged over 5 runs, ε ∈ {0.001, 0.01, 0.1}:

* Fig. 4: line policy G¹ on the seven 4,096-cell data sets A–G: Laplace and DAWA as ε/2-DP algorithms (DAWA
  with ε₁ = 0.25 ε), Transformed + Laplace, and DAWA + Transformed (``PartitionFirst("dawa")``, ε₁ = 0.5 ε);
* Fig. 5: the same plus matching + Transformed (``PartitionFirst("matching")``, one round, and three rounds —
  beyond the paper) on the first half of INCOME (2,048 cells);
* a non-tree policy the paper's method allows but did not test: the grid G¹ on the tweet locations
  aggregated to 64 × 64.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from blowfish_nb import Domain, mechanisms, policy, workload
from benchmarks._data import dpbench
from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "anuarbek.md"
DATASETS = {"A": "PATENT", "B": "INCOME", "C": "HEPTH", "D": "SEARCHLOGS", "E": "NETTRACE", "F": "ADULTFRANK",
            "G": "MEDCOST"}
EPSILONS = (0.001, 0.01, 0.1)
RUNS = 5
BASE = {
    "Laplace (ε/2-DP)": mechanisms.Laplace(),
    "DAWA (ε/2-DP, ε₁=0.25ε)": mechanisms.DAWA(ratio=0.25),
    "Transformed+Laplace": mechanisms.Transformed(),
    "DAWA+Transformed (ε₁=0.5ε)": mechanisms.PartitionFirst("dawa", split=0.5),
}
MATCHING = {
    "Matching+Transformed": mechanisms.PartitionFirst("matching", split=0.5),
    "Matching ×3 rounds+Transformed": mechanisms.PartitionFirst("matching", split=0.5, rounds=3),
}


def mse(mech, x, pol, eps, seeds) -> tuple[float, float]:
    """(mean squared error per cell over the runs, seconds per run)."""
    W = workload.identity(x.size)
    errs, t0 = [], time.perf_counter()
    for s in seeds:
        est = mech.release(x, W, pol, eps, rng=s)
        errs.append(float(np.mean((est - x) ** 2)))
    return float(np.mean(errs)), (time.perf_counter() - t0) / len(seeds)


def table(data: dict, mechs: dict, make_policy, bar) -> tuple[list, dict]:
    rows, results = [], {}
    for name, x in data.items():
        pol = make_policy(x)
        for eps in EPSILONS:
            row = [name, f"{eps:g}"]
            for label, m in mechs.items():
                err, _ = mse(m, x, pol, eps, range(RUNS))
                results[(name, eps, label)] = err
                row.append(f"{err:.4g}")
                bar.update()
            rows.append(row)
    return rows, results


def main() -> None:
    one_d = {f"{k} ({v})": dpbench(f"{v}.n4096").astype(float) for k, v in DATASETS.items()}
    income_half = {"B/2 (INCOME, first 2,048 cells)": dpbench("INCOME.n4096").astype(float)[:2048]}
    T = dpbench("twitter_256_256").astype(float)
    idx = (np.arange(256) * 64) // 256
    tw = np.zeros((64, 64))
    np.add.at(tw, (idx[:, None], idx[None, :]), T)
    grid_data = {"tweets 64×64": tw.reshape(-1)}
    all_m = {**BASE, **MATCHING}
    total = len(EPSILONS) * (len(one_d) * len(BASE) + len(all_m) + len(all_m))
    with tqdm(total=total, desc="anuarbek") as bar:
        rows4, res4 = table(one_d, BASE, lambda x: policy.line(Domain.grid(x.size)), bar)
        rows5, res5 = table(income_half, all_m, lambda x: policy.line(Domain.grid(x.size)), bar)
        rowsg, resg = table(grid_data, all_m, lambda x: policy.grid(Domain.grid((64, 64)), 1), bar)

    dawa, ours = "DAWA (ε/2-DP, ε₁=0.25ε)", "DAWA+Transformed (ε₁=0.5ε)"
    wins = [(n, e) for (n, e, lab) in res4 if lab == ours and res4[(n, e, ours)] < res4[(n, e, dawa)]]
    cells = len(one_d) * len(EPSILONS)
    losses = sorted({(n, e) for (n, e, _) in res4} - set(wins))
    m1, m3, tl = "Matching+Transformed", "Matching ×3 rounds+Transformed", "Transformed+Laplace"
    rounds_help = [e for e in EPSILONS if res5[(next(iter(income_half)), e, m3)] < res5[(next(iter(income_half)), e, m1)]]

    text = "\n\n".join([
        "# Anuarbek §6 reproduced: data-dependent Blowfish histograms",
        "Command: `.venv/bin/python -m benchmarks.reproduce_anuarbek`. Mean squared error per cell of the "
        f"histogram, mean of {RUNS} runs (seeds 0–{RUNS - 1}). Policy G¹ (line) unless stated. Laplace and DAWA "
        "are run as ε/2-differentially private algorithms, which is (ε, G)-Blowfish private for every G without ⊥.",
        "## Fig. 4: seven data sets, 4,096 cells",
        markdown_table(["data", "ε", *BASE], rows4),
        f"**The paper's finding** (DAWA + Transformed below DAWA on every set): holds in {len(wins)} of {cells} "
        "(data set, ε) cells" + (": everywhere." if not losses else
                                 "; not in " + ", ".join(f"{n} at ε={e:g}" for n, e in losses) + "."),
        "## Fig. 5: half of INCOME (2,048 cells), with the matching partitioner",
        markdown_table(["data", "ε", *all_m], rows5),
        "The paper: matching + Transformed beats only Laplace on this set, because its buckets hold at most two "
        "cells. Here: matching + Transformed vs Transformed + Laplace — "
        + ", ".join(f"ε={e:g}: {res5[(next(iter(income_half)), e, m1)]:.4g} vs "
                    f"{res5[(next(iter(income_half)), e, tl)]:.4g}" for e in EPSILONS)
        + ". **Repeated matching rounds** (buckets up to 8 cells, ε₁ split over 3 rounds) "
        + (f"lower the error at ε ∈ {{{', '.join(f'{e:g}' for e in rounds_help)}}}" if rounds_help
           else "do not lower the error at any ε tested") + ".",
        "## A non-tree policy: grid G¹ on the tweets, 64 × 64 cells",
        markdown_table(["data", "ε", *all_m], rowsg),
        "Transformed + Laplace under the grid uses a spanning tree and pays its stretch (the automatic choice, "
        "`mechanism='auto'`, takes Laplace here); the partition-first methods answer the bucket counts under the "
        "projected (merged) grid with Transformed + Laplace, or with Laplace when the merged grid's stretch makes "
        "that better (decided from the released partition only).",
    ])
    publish(RESULTS, text)


if __name__ == "__main__":
    main()
