"""He, Machanavajjhala, Ding (SIGMOD 2014) §6.1, Fig. 1: private k-means objective / non-private, by policy.

Run: ``.venv/bin/python -m benchmarks.reproduce_he2014_kmeans`` (writes benchmarks/results/he2014_kmeans.md;
``--full`` runs ε = 0.1 … 1.0 and 20 repeats instead of ε ∈ {0.1, 1.0} and 5 repeats; the default takes 8–19
minutes on two shared cores, depending on their load; most of it is the histogram method on the 4-D set).

k = 4, 10 iterations. Data: the tweet locations (32×32 grid cells as weighted
points), Adult (age × hours per week) and a generated 4-D set (1,000 points
around 4 centres, σ = 0.2, on [0, 1]⁴ with 6 bins per axis). Policies: the
complete graph (G^full, the paper's Laplace baseline), distance thresholds
(θ in bins), attribute, and a partition into quadrants/halves. Both methods:
SuLQ with the exact sensitivity, and k-means on a noisy histogram. Reported:
mean and quartiles of objective(private) / objective(non-private).

A first section (issue 16) counts the seeds on which three well-separated
clusters are found: 300 points each around 10, 30 and 90 (σ = 3) on 100 bins
of [0, 100), θ = 1, ε = 1, 20 seeds; "right" means the true and found centres
matched one-to-one (least total distance) with every pair within 3 bins.
``--scenario`` runs only that section.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from blowfish_nb import Domain, kmeans, policy
from benchmarks._data import adult, dpbench
from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "he2014_kmeans.md"
K = 4


def datasets(rng) -> dict:
    T = dpbench("twitter_256_256")
    idx = (np.arange(256) * 32) // 256
    grid = np.zeros((32, 32))
    np.add.at(grid, (idx[:, None], idx[None, :]), T)
    r, c = np.nonzero(grid)
    counts = grid[r, c].astype(int)
    tweets = pd.DataFrame({"lat": np.repeat(r + 0.5, counts), "lon": np.repeat(c + 0.5, counts)})
    a = adult()[["age", "hourweek"]].astype(float)
    centres = rng.uniform(0.2, 0.8, size=(K, 4))
    pts = np.clip(np.vstack([c + rng.normal(0, 0.2, size=(250, 4)) for c in centres]), 0, 0.9999)
    synth = pd.DataFrame(pts, columns=["x1", "x2", "x3", "x4"])
    return {
        "tweets 32×32": (tweets, {"lat": 32, "lon": 32}, {"lat": (0, 32), "lon": (0, 32)}, [1, 2, 4]),
        "Adult age×hours": (a, {"age": 37, "hourweek": 25}, {"age": (16, 90), "hourweek": (0, 100)}, [1, 2, 4]),
        "4-D synthetic": (synth, {c: 6 for c in synth.columns}, {c: (0, 1) for c in synth.columns}, [1, 2]),
    }


def policies_for(domain: Domain, thetas) -> dict:
    shape = domain.shape
    coords = np.unravel_index(np.arange(domain.size), shape)
    half = sum((c >= s // 2).astype(int) << i for i, (c, s) in enumerate(zip(coords, shape)))
    blocks = [np.flatnonzero(half == b).tolist() for b in np.unique(half)]
    out = {"full": policy.bounded(domain)}
    out.update({f"threshold θ={t}": policy.threshold(domain, t) for t in thetas})
    out["attribute"] = policy.attribute(domain)
    out["partition (halves)"] = policy.partition(domain, blocks)
    return out


def nonprivate(df, cols, bins, bounds, seed) -> float:
    r = kmeans(df, cols, K, policy="dp", epsilon=1e9, method="histogram", bins=bins, bounds=bounds, rng=seed)
    return r.objective(df)


#: issue 16's scenario: three clusters, θ = 1, ε = 1 on 100 bins; "right" within this many bins of each centre
SCENARIO_CENTRES = np.array([10.0, 30.0, 90.0])
SCENARIO_RIGHT = 3.0


def scenario_data(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(1000 + seed)
    pts = np.concatenate([c + rng.normal(0, 3.0, 300) for c in SCENARIO_CENTRES])
    return pd.DataFrame({"v": np.clip(pts, 0, 99.999)})


def scenario_right(found) -> tuple[bool, float]:
    """(right, the largest matched distance) for found centres against the scenario's."""
    from scipy.optimize import linear_sum_assignment

    D = np.abs(SCENARIO_CENTRES[:, None] - np.asarray(found, dtype=float)[None, :])
    rows, cols = linear_sum_assignment(D)
    worst = float(D[rows, cols].max())
    return worst <= SCENARIO_RIGHT, worst


def scenario_section() -> str:
    rows = []
    for method, eps in (("histogram", 1.0), ("sulq", 1.0), ("sulq", 10.0)):
        for restarts in (1, 10):
            results = [scenario_right(kmeans(scenario_data(s), "v", 3, policy="threshold", theta=1, epsilon=eps,
                                             method=method, bins=100, bounds=(0, 100), rng=s,
                                             restarts=restarts).centroids["v"]) for s in range(20)]
            worst = sorted(w for _, w in results)
            rows.append([method, eps, restarts, sum(ok for ok, _ in results),
                         f"{np.median(worst):.2f}", f"{worst[-1]:.2f}"])
    return "\n\n".join([
        "## Three separated clusters (issue 16)",
        "300 points each around 10, 30 and 90 (σ = 3 bins) on 100 bins of [0, 100), threshold θ = 1, 20 seeds. "
        f"Right: true and found centres matched one-to-one, every pair within {SCENARIO_RIGHT:g} bins. Before "
        "issue 16 the histogram method started once from cells drawn uniformly and was right on 9 of these 20 "
        "seeds (two clusters merged while a centre sat on the noise of empty cells). SuLQ's start reads no data "
        "(k-means++ on the cell centres with equal weights: spread over the domain, not over the data), so its "
        "restarts only pick the most spread-out public start. SuLQ finds these clusters on no seed at ε = 1 or "
        "10 with either start: each of its 10 iterations releases sizes and sums with noise of scale Δ/(ε/10), "
        "and Δ of (sizes, sums) under θ = 1 was 36–86 in these runs (a record crossing a cluster boundary moves "
        "|x| + |y| of the centred sums), so the sizes of 300-point clusters carry ±10–30% noise per iteration.",
        markdown_table(["method", "ε", "restarts", "right (of 20)", "median worst distance", "max worst distance"],
                       rows),
    ])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--scenario", action="store_true", help="only the three-cluster scenario (printed)")
    args = ap.parse_args()
    if args.scenario:
        print(scenario_section())
        return
    epsilons = [round(0.1 * i, 1) for i in range(1, 11)] if args.full else [0.1, 1.0]
    repeats = 20 if args.full else 5
    rng = np.random.default_rng(2014)
    data = datasets(rng)
    sections = [scenario_section()]
    for name, (df, bins, bounds, thetas) in data.items():
        cols = list(bins)
        from blowfish_nb.accessor import domain_for

        domain = domain_for(df, cols, bins, None, bounds)
        pols = policies_for(domain, thetas)
        base = min(nonprivate(df, cols, bins, bounds, s) for s in range(5))
        rows = []
        from blowfish_nb.analysis import choose_mechanism
        from blowfish_nb.workload import identity

        for method in ("sulq", "histogram"):
            for pol_name, pol in tqdm(pols.items(), desc=f"{name} {method}"):
                # the mechanism choice does not depend on ε (every error scales as 1/ε²): make it once
                mech = choose_mechanism(identity(domain.size), pol, 1.0)[0] if method == "histogram" else "auto"
                row = [method + (f" ({mech.name})" if method == "histogram" else ""), pol_name]
                for eps in epsilons:
                    ratios = [kmeans(df, cols, K, policy=pol, epsilon=eps, method=method, bins=bins,
                                     bounds=bounds, rng=s, mechanism=mech).objective(df) / base
                              for s in range(repeats)]
                    q1, q3 = np.quantile(ratios, [0.25, 0.75])
                    row.append(f"{np.mean(ratios):.2f} ({q1:.2f}–{q3:.2f})")
                rows.append(row)
        sections.append(f"## {name}\n\n" + markdown_table(["method", "policy"] + [f"ε={e}" for e in epsilons], rows))
    text = "\n\n".join([
        "# He et al. 2014, Fig. 1: k-means objective, private / non-private",
        f"Command: `.venv/bin/python -m benchmarks.reproduce_he2014_kmeans{' --full' if args.full else ''}`. "
        f"k = {K}, 10 iterations, {repeats} repeats per cell: mean (lower–upper quartile) of the ratio. "
        "The histogram method keeps the best of 10 k-means++ restarts on the noisy counts; SuLQ starts from "
        "k-means++ on the public cell centres (issue 16). "
        "The non-private reference is the best of 5 runs of Lloyd's algorithm on the exact histogram (same binning). "
        "SuLQ uses the exact sensitivity of (sizes, sums) for the current centroids, not He et al.'s Lemma 6.1.",
        *sections,
        NOISE_NOTE,
    ])
    publish(RESULTS, text)


#: what issue 13's samplers changed here (the 30-seed check is a one-off, run beside this script)
NOISE_NOTE = (
    "## Discrete noise (issue 13)\n\n"
    "SuLQ's noisy sizes and sums are real-valued (centred coordinates) and are now released through the lattice "
    "sampler of `mechanisms/noise.py` (rounded to a public power-of-two grid, discrete Laplace in grid units, "
    "noise at most (1 + 2⁻²⁰) times the continuous scale); the histogram method's counts get discrete Laplace "
    "noise. Neither changes the noise's law measurably, but the draws differ, and with 5 repeats per cell the "
    "means moved by run-to-run noise — most at ε = 0.1 under SuLQ, e.g. the complete graph on Adult "
    "2.10 → 2.58, on the 4-D set 3.01 → 3.38, on the tweets 1.88 → 1.71 (page of commit 7652e2b → this one). "
    "A check with 30 seeds per cell found no effect of the sampler (mean ± standard error of the ratio, "
    "complete graph, continuous Laplace against the lattice sampler): Adult at ε = 0.1, 2.04 ± 0.09 against "
    "2.13 ± 0.10; 4-D at ε = 1, 1.77 ± 0.04 against 1.79 ± 0.04. Read differences between policies within a "
    "column of 5 repeats with that spread in mind. No DAWA runs on this page."
)


if __name__ == "__main__":
    main()
