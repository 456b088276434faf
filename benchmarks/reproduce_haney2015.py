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
import json
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
RAW = RESULTS.with_suffix(".json")
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


def exact_figures(algorithms, W, policies, epsilons) -> dict:
    """exact[eps][label] = analytic expected per-query MSE of each data-independent mechanism."""
    out = {}
    for eps in epsilons:
        out[eps] = {}
        for label, mech, key in algorithms:
            if getattr(mech, "linear", False) or isinstance(mech, M.HThetaRanges):
                out[eps][label] = mech.expected_error(W, policies[key], eps / 2 if key == "dp" else eps)
    return out


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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="one ε, 2 runs: a smoke test")
    ap.add_argument("--render", action="store_true", help="re-write the markdown from the saved raw results")
    args = ap.parse_args()
    global RUNS
    if args.render:
        render(json.loads(RAW.read_text()))
        return
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
    raw = {"runs": RUNS, "blocks": {}}
    total = len(epsilons) * len(data1) * (len(HIST) + len(RANGE_G1) + len(RANGE_G4)) + len(epsilons) * len(GRIDS) * 4
    with tqdm(total=total, desc="haney2015") as bar:
        for key, algs, W in (("hist", HIST, hist), ("g1", RANGE_G1, ranges), ("g4", RANGE_G4, ranges)):
            raw["blocks"][key] = {"results": run_block(algs, W, pols, data1, epsilons, rng, bar),
                                  "exact": exact_figures(algs, W, pols, epsilons),
                                  "algorithms": [[a[0], a[2]] for a in algs]}
        r2d, ex2d, notes2d = {}, {}, []
        for n in GRIDS:
            W = ranges_2d((n, n), 10_000, rng=n)
            grid, dp2 = policy.grid((n, n), 1), policy.dp(Domain.grid((n, n)))
            best, table = choose_mechanism(W, grid, 1.0)
            notes2d.append(f"{n}×{n}: {best.name}, Δ = {best.sensitivity(grid):g}")
            mechs = {"Laplace (DP)": (M.Laplace(), dp2, 0.5), "Privelet (DP)": (M.Privelet(), dp2, 0.5),
                     "DAWA (DP)": (M.DAWA(), dp2, 0.5), "best exact-Δ strategy (Blowfish)": (best, grid, 1.0)}
            for eps in epsilons:
                x = data2[n]
                row = {label: mse(m, x, W, pol, eps * f, rng) for label, (m, pol, f) in mechs.items()}
                row["§5.2.2 as published†"] = published_grid_error(W, n, eps)
                bar.update(4)
                r2d.setdefault(eps, {})[f"T{n}"] = row
                ex2d.setdefault(eps, {})[f"T{n}"] = {
                    label: m.expected_error(W, pol, eps * f) for label, (m, pol, f) in mechs.items() if label != "DAWA (DP)"}
        raw["blocks"]["2d"] = {"results": r2d, "exact_by_data": ex2d, "notes": notes2d,
                               "algorithms": [["Laplace (DP)", "dp"], ["Privelet (DP)", "dp"], ["DAWA (DP)", "dp"],
                                              ["best exact-Δ strategy (Blowfish)", "grid"], ["§5.2.2 as published†", "paper"]]}
    n = GRIDS[0]
    W = ranges_2d((n, n), 10_000, rng=n)
    grid = policy.grid((n, n), 1)
    raw["bounds"] = {"grid": lower_bound(W, grid, 1.0), "dp": lower_bound(W, policy.dp(Domain.grid((n, n))), 0.5),
                     "published": published_grid_error(W, n, 1.0),
                     "best": choose_mechanism(W, grid, 1.0)[0].expected_error(W, grid, 1.0)}
    raw["exact_hist_ratio"] = (M.Laplace().expected_error(hist, pols["dp"], 0.5)
                               / M.Transformed().expected_error(hist, pols["g1"], 1.0))
    RAW.parent.mkdir(exist_ok=True)
    RAW.write_text(json.dumps(raw, indent=1))
    render(json.loads(RAW.read_text()))


def render(raw) -> None:
    """Markdown from the raw results (keys come back from JSON as strings)."""
    B = raw["blocks"]

    def val(block, eps, d, label):
        exact = B[block].get("exact", {}).get(eps, {})
        if label in exact:
            return exact[label]
        by_data = B[block].get("exact_by_data", {}).get(eps, {}).get(d, {})
        return by_data.get(label, B[block]["results"][eps][d][label])

    def ratio(block, num, den):
        """{(ε, data): min over ``num`` labels / min over ``den`` labels}, exact figures where they exist."""
        res = B[block]["results"]
        return {(e, d): min(val(block, e, d, l) for l in num) / min(val(block, e, d, l) for l in den)
                for e, rows in res.items() for d in rows}

    def labels(block, kinds):
        return [a for a, k in B[block]["algorithms"] if k in kinds]

    def span(r):
        v = list(r.values())
        return f"{min(v):.3g}× – {max(v):.3g}×"

    def where_below(r, limit):
        low = sorted((v, e, d) for (e, d), v in r.items() if v < limit)
        return ", ".join(f"{d.split(' ')[0]} at ε={e} ({v:.2g}×)" for v, e, d in low) or "none"

    def tables(block):
        out = []
        algs = [a for a, _ in B[block]["algorithms"]]
        for eps, rows in B[block]["results"].items():
            out.append(f"**ε = {eps}** — mean over {raw['runs']} runs")
            out.append(markdown_table(["data"] + algs, [[d] + [fmt(r[a]) for a in algs] for d, r in rows.items()]))
            exact = B[block].get("exact", {}).get(eps)
            if exact:
                out.append("Exact expected error of the data-independent ones (the same for every data set): "
                           + "; ".join(f"{a} {fmt(v)}" for a, v in exact.items()) + ".")
        return out

    hist = ratio("hist", ["Laplace (DP)"], ["Transformed+Laplace"])
    g1 = ratio("g1", labels("g1", ["dp"]), labels("g1", ["g1"]))
    g4 = ratio("g4", labels("g4", ["dp"]), labels("g4", ["g4"]))
    g1_indep = ratio("g1", ["Privelet (DP)"], ["Transformed+Laplace"])
    best2d = "best exact-Δ strategy (Blowfish)"
    d2_priv = ratio("2d", ["Privelet (DP)"], [best2d])
    d2_dawa = ratio("2d", ["DAWA (DP)"], [best2d])
    d2_lap = ratio("2d", ["Laplace (DP)"], [best2d])
    d2_pub = ratio("2d", ["Privelet (DP)"], ["§5.2.2 as published†"])
    d2_pub_dawa = ratio("2d", ["DAWA (DP)"], ["§5.2.2 as published†"])
    bnd = raw["bounds"]
    text = [
        "# Haney et al. 2015, §6 / Fig. 8: (ε, G)-Blowfish against ε/2-DP",
        f"Command: `.venv/bin/python -m benchmarks.reproduce_haney2015` (raw numbers in `haney2015.json`; "
        "`--render` rewrites this page from them). Per-query squared error: mean over "
        f"{raw['runs']} runs on the data for every algorithm; the ratios below use the exact expected error for the "
        "data-independent algorithms (their run means carry sampling noise) and the run mean for the "
        "data-dependent ones (DAWA and the Transformed+DAWA variants). 10,000 random ranges (seed 2015), 10,000 "
        "random boxes per grid; DP baselines at ε/2, Blowfish at ε.",
        "## Against the paper's findings",
        f"* **Hist under G¹ — match.** Paper: Transformed+Laplace exactly 2× below DP Laplace. Exact ratio here: "
        f"{raw['exact_hist_ratio']:.4f}× (the end cells need one transformed count, not two).",
        f"* **1D-Range under G¹ — match or beat.** Paper: 2–3 orders of magnitude below Privelet/DAWA. Best DP / "
        f"best Blowfish: {span(g1)} (below 100× at: {where_below(g1, 100)}); Privelet / Transformed+Laplace "
        f"(data-independent against data-independent): {span(g1_indep)}.",
        f"* **1D-Range under G⁴ — partly missed.** Paper: at least one order of magnitude. Best DP / best Blowfish: "
        f"{span(g4)}; below 10× at: {where_below(g4, 10)}, ≥ 10× elsewhere. Where we miss, DAWA (DP) "
        "is strong and our Transformed+DAWA, run with the partition noise our privacy argument needs (about 2× the "
        "reference implementation's, see `mechanisms/dawa.py`) and at ε/3, does not keep a 10× margin.",
        f"* **2D-Range under the grid — missed, because the published strategy is not private (†).** Paper: Blowfish "
        f"below Privelet and below DAWA on the larger grids. With Δ computed exactly under the grid, the best "
        f"data-independent strategy is the Laplace mechanism with Δ = 2 — exactly the DP Laplace at ε/2 (DP Laplace / it: "
        f"{span(d2_lap)}). It is below Privelet ({span(d2_priv)}) only because Laplace beats Privelet on these "
        f"small grids, and DAWA (DP) / it = {span(d2_dawa)}. The published accounting would give Privelet / it = "
        f"{span(d2_pub)} and DAWA / it = {span(d2_pub_dawa)} — the paper's shape.",
        f"* **What any valid strategy can do on the grid.** SVD lower bounds (App. A, pure-ε form) for the "
        f"boxes on {GRIDS[0]}×{GRIDS[0]}, per query: ≥ {bnd['grid']:.4g}/ε² for every (ε, G)-Blowfish matrix "
        f"mechanism and ≥ {bnd['dp']:.4g}/ε² for every ε/2-DP one. Our best exact-Δ strategy is "
        f"{bnd['best'] / bnd['grid']:.1f}× above its bound, so a better grid strategy may exist (open); the "
        f"published figure is {bnd['published'] / bnd['grid']:.1f}× above the bound, so the bound alone neither "
        "confirms nor refutes it — the argument in † does.",
        "† **§5.2.2 is not (ε, G)-Blowfish private as published.** It measures ranges of edge counts x_G and "
        "charges each neighbouring pair one unit of one edge. On a graph with cycles no map from databases to edge "
        "counts does that: moving one record around a 4-cycle of the grid returns to the same database, yet would "
        "have changed four different edge counts by one each. Theorem 4.1 covers strategies of the form A·P_G "
        "only. The column is the paper's own accounting, shown for comparison, not a mechanism we ship; our "
        "Blowfish figure is the best data-independent strategy with Δ computed exactly under the grid (chosen "
        "by `choose_mechanism`: " + "; ".join(B["2d"]["notes"]) + "). The same objection applies to §5.3.2 "
        "(d-D under G^θ), whose red vertices are joined in a grid.",
        "## Hist under G¹ (line)", *tables("hist"),
        "## 1D-Range under G¹ (line)", *tables("g1"),
        "## 1D-Range under G⁴", *tables("g4"),
        "## 2D-Range under the grid G¹ (tweets)", *tables("2d"),
    ]
    RESULTS.write_text("\n\n".join(text) + "\n")
    print("\n\n".join(text))


if __name__ == "__main__":
    main()
