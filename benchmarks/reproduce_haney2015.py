"""Haney, Machanavajjhala, Ding (VLDB 2015) §6, Fig. 8: (ε, G)-Blowfish against ε/2-DP on the DPBench data.

Run: ``.venv/bin/python -m benchmarks.reproduce_haney2015`` (writes benchmarks/results/haney2015.md;
``--quick`` runs one ε and 2 runs, for a smoke test).

Data sets A–G (k = 4096) and the tweet grid aggregated to 25², 50², 100².
Workloads: Hist under G¹ (line), 1D-Range under G¹ and G⁴ (10,000 random
ranges), 2D-Range under the grid G¹ (10,000 random boxes). ε ∈ {0.001, 0.01,
0.1, 1}; mean per-query squared error over 5 runs of every algorithm of the
paper's Fig. 8 plus our exact-Δ strategies. DP baselines run at ε/2, Blowfish
at ε, as the paper compares them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from tqdm import tqdm

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.analysis import choose_mechanism, lower_bound
from blowfish_nb.mechanisms.factors import HaarFactor
from blowfish_nb.ranges import random_ranges, ranges_2d
from benchmarks._data import dpbench
from benchmarks._timing import markdown_table

RESULTS = Path(__file__).parent / "results" / "haney2015.md"
DATASETS = {"A": "PATENT", "B": "INCOME", "C": "HEPTH", "D": "SEARCHLOGS", "E": "NETTRACE", "F": "ADULTFRANK",
            "G": "MEDCOST"}
GRIDS = (25, 50, 100)
EPSILONS = (0.001, 0.01, 0.1, 1.0)
RUNS = 5
K = 4096

M = mechanisms
# (label, mechanism, policy key, budget factor): policy key "dp" runs at ε/2
HIST = [("Laplace (DP)", M.Laplace(), "dp"), ("DAWA (DP)", M.DAWA(), "dp"),
        ("Transformed+Laplace", M.Transformed(), "g1"),
        ("Transformed+ConsistentEst", M.Transformed(inner="consistent"), "g1"),
        ("Transformed+DAWA+Cons", M.Transformed(inner="dawa-consistent"), "g1")]
RANGE_G1 = [("Privelet (DP)", M.Privelet(), "dp"), ("DAWA (DP)", M.DAWA(), "dp"),
            ("Transformed+Laplace", M.Transformed(), "g1"),
            ("Transformed+ConsistentEst", M.Transformed(inner="consistent"), "g1"),
            ("Transformed+DAWA", M.Transformed(inner="dawa"), "g1"),
            ("Transformed+DAWA+Cons", M.Transformed(inner="dawa-consistent"), "g1")]
RANGE_G4 = [("Privelet (DP)", M.Privelet(), "dp"), ("DAWA (DP)", M.DAWA(), "dp"),
            ("Transformed+Laplace (H⁴, ε/3)", M.Transformed(), "g4"),
            ("Transformed+DAWA (H⁴, ε/3)", M.Transformed(inner="dawa"), "g4"),
            ("H^θ+Privelet (Thm 5.5, ε/3)", M.HThetaRanges(budget="stretch"), "g4"),
            ("H^θ+Privelet, exact Δ", M.HThetaRanges(), "g4"),
            ("Ordered Hierarchical, exact Δ", M.OrderedHierarchical(branching=16), "g4")]


def aggregate(T: np.ndarray, n: int) -> np.ndarray:
    """Counts of a 256×256 grid on an n×n grid of equal-width cells."""
    idx = (np.arange(T.shape[0]) * n) // T.shape[0]
    out = np.zeros((n, n))
    np.add.at(out, (idx[:, None], idx[None, :]), T)
    return out


def mse(mech, x, W, pol, eps, rng) -> float:
    truth = W @ x
    return float(np.mean([np.mean((mech.release(x, W, pol, eps, rng=rng) - truth) ** 2) for _ in range(RUNS)]))


def run_block(algorithms, W, policies, data, epsilons, rng, bar):
    """results[eps][dataset][label] = mean per-query MSE."""
    out = {}
    for eps in epsilons:
        out[eps] = {}
        for name, x in data.items():
            row = {}
            for label, mech, key in algorithms:
                e = eps / 2 if key == "dp" else eps
                row[label] = mse(mech, x, W, policies[key], e, rng)
                bar.update(1)
            out[eps][name] = row
    return out


def published_grid_error(W, n: int, eps: float) -> float:
    """§5.2.2 as published: 4 edge ranges per box, Privelet per edge row, Δ = 1 + log₂K under its own accounting."""
    K = HaarFactor().padded(n)
    A = HaarFactor().operator(K)
    delta = 1 + int(np.log2(K))
    (r1, c1), (r2, c2) = W.lo.T, W.hi.T
    var = np.zeros(W.shape[0])
    for present, lo, hi in ((r1 > 0, c1, c2), (r2 < n - 1, c1, c2), (c1 > 0, r1, r2), (c2 < n - 1, r1, r2)):
        var += np.where(present, HaarFactor().range_variances(A, lo, hi), 0.0)
    return float(2 * (delta / eps) ** 2 * var.mean())


def fmt(v: float) -> str:
    return f"{v:.3g}"


def block_tables(results, algorithms) -> list[str]:
    parts = []
    labels = [a[0] for a in algorithms]
    for eps, rows in results.items():
        parts.append(f"**ε = {eps}**")
        parts.append(markdown_table(["data"] + labels, [[d] + [fmt(r[l]) for l in labels] for d, r in rows.items()]))
    return parts


def ratios(results, algorithms):
    """Per (ε, data set): best DP error / best Blowfish error."""
    dp = [a[0] for a in algorithms if a[2] == "dp"]
    bf = [a[0] for a in algorithms if a[2] != "dp"]
    return {(eps, d): min(r[l] for l in dp) / min(r[l] for l in bf) for eps, rows in results.items() for d, r in rows.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="one ε, 2 runs: a smoke test")
    args = ap.parse_args()
    global RUNS
    epsilons = (0.1,) if args.quick else EPSILONS
    if args.quick:
        RUNS = 2
    rng = np.random.default_rng(2015)
    data1 = {f"{k} ({v})": dpbench(f"{v}.n4096").astype(float) for k, v in DATASETS.items()}
    T = dpbench("twitter_256_256")
    data2 = {n: aggregate(T, n).reshape(-1) for n in GRIDS}
    dom = Domain.grid(K)
    pols = {"dp": policy.dp(dom), "g1": policy.line(dom), "g4": policy.threshold(dom, 4)}
    hist = workload.identity(K)
    ranges = random_ranges(K, 10_000, rng=2015)
    total = len(epsilons) * len(data1) * (len(HIST) + len(RANGE_G1) + len(RANGE_G4)) + len(epsilons) * len(GRIDS) * 4
    with tqdm(total=total, desc="haney2015") as bar:
        r_hist = run_block(HIST, hist, pols, data1, epsilons, rng, bar)
        r_g1 = run_block(RANGE_G1, ranges, pols, data1, epsilons, rng, bar)
        r_g4 = run_block(RANGE_G4, ranges, pols, data1, epsilons, rng, bar)
        r2d, notes2d = {}, []
        for n in GRIDS:
            W = ranges_2d((n, n), 10_000, rng=n)
            grid, dp2 = policy.grid((n, n), 1), policy.dp(Domain.grid((n, n)))
            best, table = choose_mechanism(W, grid, 1.0)
            notes2d.append(f"{n}×{n}: exact-Δ pick {best.name}, Δ = {table.loc[best.name if best.name in table.index else repr(best), 'sensitivity']:g}")
            for eps in epsilons:
                x = data2[n]
                row = {
                    "Laplace (DP)": mse(M.Laplace(), x, W, dp2, eps / 2, rng),
                    "Privelet (DP)": mse(M.Privelet(), x, W, dp2, eps / 2, rng),
                    "DAWA (DP)": mse(M.DAWA(), x, W, dp2, eps / 2, rng),
                    "best exact-Δ strategy (Blowfish)": mse(best, x, W, grid, eps, rng),
                    "§5.2.2 as published†": published_grid_error(W, n, eps),
                }
                bar.update(4)
                r2d.setdefault(eps, {})[f"T{n}"] = row
    # SVD lower bounds on the smallest grid: how much any strategy can gain under the grid policy
    n = GRIDS[0]
    W = ranges_2d((n, n), 10_000, rng=n)
    lb_grid = lower_bound(W, policy.grid((n, n), 1), 1.0)
    lb_dp = lower_bound(W, policy.dp(Domain.grid((n, n))), 0.5)
    published = published_grid_error(W, n, 1.0)
    exact_hist = M.Laplace().expected_error(hist, pols["dp"], 0.5) / M.Transformed().expected_error(hist, pols["g1"], 1.0)
    write(epsilons, r_hist, r_g1, r_g4, r2d, notes2d, lb_grid, lb_dp, published, exact_hist)


def write(epsilons, r_hist, r_g1, r_g4, r2d, notes2d, lb_grid, lb_dp, published, exact_hist) -> None:
    algs2d = [("Laplace (DP)", None, "dp"), ("Privelet (DP)", None, "dp"), ("DAWA (DP)", None, "dp"),
              ("best exact-Δ strategy (Blowfish)", None, "grid"), ("§5.2.2 as published†", None, "grid")]
    hist_ratio = {(e, d): r["Laplace (DP)"] / r["Transformed+Laplace"] for e, rows in r_hist.items() for d, r in rows.items()}
    g1 = ratios(r_g1, RANGE_G1)
    g4 = ratios(r_g4, RANGE_G4)
    g1_dawa = {(e, d): min(r["Privelet (DP)"], r["DAWA (DP)"]) / r["Transformed+Laplace"] for e, rows in r_g1.items()
               for d, r in rows.items()}
    bf_vs_priv = {(e, d): r["Privelet (DP)"] / r["best exact-Δ strategy (Blowfish)"] for e, rows in r2d.items() for d, r in rows.items()}
    bf_vs_dawa = {(e, d): r["DAWA (DP)"] / r["best exact-Δ strategy (Blowfish)"] for e, rows in r2d.items() for d, r in rows.items()}
    pub_vs_priv = {(e, d): r["Privelet (DP)"] / r["§5.2.2 as published†"] for e, rows in r2d.items() for d, r in rows.items()}

    def span(d):
        v = list(d.values())
        return f"{min(v):.3g}× – {max(v):.3g}×"

    text = [
        "# Haney et al. 2015, §6 / Fig. 8: (ε, G)-Blowfish against ε/2-DP",
        f"Command: `.venv/bin/python -m benchmarks.reproduce_haney2015`. Mean per-query squared error over "
        f"{RUNS} runs; 10,000 random ranges (seed 2015) and 10,000 random boxes per grid; DP at ε/2, Blowfish at ε.",
        "## Summary against the paper's findings",
        f"* **Hist (G¹): Transformed+Laplace vs DP Laplace** — paper: exactly 2× lower. Here: {span(hist_ratio)} "
        "(sampling noise of the runs); the exact expected errors give {exact_hist:.4f}× (the first and last cells "
        "need one transformed count instead of two).",
        f"* **1D-Range (G¹)** — paper: 2–3 orders of magnitude below Privelet/DAWA. Best DP / best Blowfish here: "
        f"{span(g1)}; best DP / Transformed+Laplace alone: {span(g1_dawa)}.",
        f"* **1D-Range (G⁴)** — paper: at least one order of magnitude. Best DP / best Blowfish here: {span(g4)}.",
        f"* **2D-Range (grid G¹)** — paper: Blowfish below Privelet everywhere and below DAWA on larger grids. "
        f"Privelet(DP) / best exact-Δ Blowfish: {span(bf_vs_priv)}; DAWA(DP) / best exact-Δ Blowfish: {span(bf_vs_dawa)}. "
        f"The published §5.2.2 figure would give Privelet / it = {span(pub_vs_priv)}.",
        f"* SVD lower bounds (App. A, pure-ε form) for the 2-D boxes on {GRIDS[0]}×{GRIDS[0]}: under the grid at ε = 1: "
        f"{lb_grid:.4g}; under DP at ε/2: {lb_dp:.4g} — no strategy can gain more than {lb_dp / lb_grid:.2f}× "
        "from the grid policy on this workload. The published §5.2.2 figure there is "
        f"{published:.4g} at ε = 1, {lb_grid / published:.1f}× *below* the bound for every (ε, G)-private "
        "matrix mechanism: its accounting cannot be right (†).",
        "",
        "† **§5.2.2 is not (ε, G)-Blowfish private as published.** It measures ranges of edge counts x_G and "
        "charges each neighbouring pair one unit of one edge. On a graph with cycles no map from databases to edge "
        "counts does that: walking one record around a 4-cycle of the grid returns to the same database, yet would "
        "have changed four different edge counts by one each. Theorem 4.1 covers strategies of the form A·P_G "
        "only. The column is the paper's own accounting, shown for comparison, not a mechanism we ship; our "
        "Blowfish figure for the grid is the best data-independent strategy with Δ computed exactly under the "
        "grid policy (chosen by `choose_mechanism`: " + "; ".join(notes2d) + "). The same objection applies to "
        "§5.3.2 (d-D under G^θ), whose red vertices are joined in a grid.",
        "## Hist under G¹ (line)",
        *block_tables(r_hist, HIST),
        "## 1D-Range under G¹ (line)",
        *block_tables(r_g1, RANGE_G1),
        "## 1D-Range under G⁴",
        *block_tables(r_g4, RANGE_G4),
        "## 2D-Range under the grid G¹ (tweets)",
        *block_tables(r2d, algs2d),
    ]
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n\n".join(text) + "\n")
    print("\n\n".join(text))


if __name__ == "__main__":
    main()
