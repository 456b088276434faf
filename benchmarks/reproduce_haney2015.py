"""Haney, Machanavajjhala, Ding (VLDB 2015) §6, Fig. 8: (ε, G)-Blowfish against ε/2-DP on the DPBench data.

Run: ``.venv/bin/python -m benchmarks.reproduce_haney2015`` (writes benchmarks/results/haney2015.md;
``--quick`` runs one ε and 2 runs, for a smoke test; the full run takes about 16 minutes on two shared cores;
``--blocks 2d`` re-runs only the named blocks and keeps the others' figures from haney2015.json).

Data sets A–G (k = 4096) and the tweet grid aggregated to 25², 50², 100².
Workloads: Hist under G¹ (line), 1D-Range under G¹ and G⁴ (10,000 random
ranges), 2D-Range under the grid G¹ (10,000 random boxes). ε ∈ {0.001, 0.01,
0.1, 1}; mean per-query squared error over 5 runs of every algorithm of the
paper's Fig. 8 plus our exact-Δ strategies; on 1-D ranges (G¹ and G⁴)
data-dependent ranges under the policy (``PartitionFirst("dawa", split=0.25,
ranges=True)``, issue 16), and on the grid the strategy optimised for the
boxes under the grid policy (``mechanisms.Optimized``, issue 16); under G⁴
also the prefix sums charged their exact Δ = 4, with and without the isotonic
projection (``Ordered``, issue 24). The 1-D blocks have no ``Optimized``
column: a 4,096-cell fit costs O(k³) (dense) or O(k²·k/16) (p-Identity) per
optimiser step.
DP baselines run at ε/2, Blowfish at ε, as the paper compares them.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.analysis import choose_mechanism, lower_bound
from blowfish_nb.analysis.selection import default_candidates
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
#: the grid strategy's optimisation (seeded: the same strategy every run)
OPTIMISE = {"restarts": 1, "max_iter": 200, "rng": 0}
OPT2D = "Optimized (Blowfish, issue 16)"
#: data-dependent ranges under the policy (issue 16): DAWA's private partition at ε₁ = 0.25 ε, then the best
#: strategy over the buckets with Δ exact under the projected policy (as reproduce_anuarbek configures it)
PF = "PartitionFirst ranges (ε₁=0.25ε, issue 16)"
ORD, ORD_CONS = "Ordered, exact Δ (issue 24)", "Ordered+Cons, exact Δ (issue 24)"
BLOCKS = ("hist", "g1", "g4", "2d")
#: raw-JSON key of the results from before issue 13 (floored DAWA partition, continuous Laplace noise), kept
#: so that the page can say what the issue-13 changes moved
BEFORE = "before_issue13"
#: raw-JSON key of DAWA (DP)'s 1-D range figures from the run before GreedyH's depth decay (commit 9e46f04),
#: {"commit": …, "g1"/"g4": {ε: {data set: mean error}}}, kept so that the page can say what the decay moved
DECAY = "before_depth_decay"
#: raw-JSON key of the ε/2-DP baseline's G⁴ range figures when issue 24's "7 of 7 sets at every ε" last held
#: (commit 382e037, copied once from its haney2015.json), {"commit": …, "g4": {ε: {data set: {label: error}}}}
CLAIM = "claim_baseline"

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
            ("Transformed+DAWA+Cons", M.Transformed(inner="dawa-consistent"), "g1"),
            (PF, M.PartitionFirst("dawa", split=0.25, ranges=True), "g1")]
RANGE_G4 = [("Privelet (DP)", M.Privelet(), "dp"), ("DAWA (DP)", M.DAWA(), "dp"),
            ("Transformed+Laplace (H⁴, ε/3)", M.Transformed(), "g4"),
            ("Transformed+DAWA (H⁴, ε/3)", M.Transformed(inner="dawa"), "g4"),
            ("H^θ+Privelet (Thm 5.5, ε/3)", M.HThetaRanges(budget="stretch"), "g4"),
            ("H^θ+Privelet, exact Δ", M.HThetaRanges(), "g4"),
            ("Ordered Hierarchical, exact Δ", M.OrderedHierarchical(branching=16), "g4"),
            (PF, M.PartitionFirst("dawa", split=0.25, ranges=True), "g4"),
            # issue 24: the prefix sums charged their exact Δ = 4 under G⁴ (64 per range at ε = 1, below
            # Transformed+Laplace's 88.8 at ε/3), and the same with the isotonic projection (post-processing:
            # the true prefix sums are non-decreasing and non-negative), both shipped mechanisms
            (ORD, M.Ordered(), "g4"), (ORD_CONS, M.Ordered(consistent=True), "g4")]


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


def bucket_counts(data, dp, epsilons, draws: int = 5) -> dict:
    """{ε: {data set: mean number of buckets of DAWA (DP)'s partition at ε/2}} over ``draws`` draws (own seed)."""
    rng = np.random.default_rng(4096)
    out = {}
    for eps in epsilons:
        out[eps] = {}
        for name, x in data.items():
            labels = np.sort(M.DAWA().partitions(x, dp, eps / 2, draws, rng=rng), axis=1)
            out[eps][name] = float(np.mean((np.diff(labels, axis=1) != 0).sum(axis=1) + 1))
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
    ap.add_argument("--blocks", nargs="+", choices=BLOCKS, default=list(BLOCKS),
                    help="re-run only these blocks; the others keep their figures from haney2015.json")
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
    raw = {"runs": RUNS, "blocks": {}, "run": _run_start()}
    kept = json.loads(RAW.read_text()) if set(args.blocks) != set(BLOCKS) else None
    if kept is not None:  # figures of the blocks not re-run, as they were
        raw["blocks"] = {b: kept["blocks"][b] for b in BLOCKS if b not in args.blocks}
        raw["rerun"] = {"blocks": list(args.blocks), "kept_from": _kept_from(kept, args.blocks)}
        for key in ("exact_hist_ratio", "dawa_buckets", "bounds"):
            if key in kept:
                raw[key] = kept[key]
    one_d = [b for b in ("hist", "g1", "g4") if b in args.blocks]
    blocks1 = {"hist": (HIST, hist), "g1": (RANGE_G1, ranges), "g4": (RANGE_G4, ranges)}
    total = (len(epsilons) * len(data1) * sum(len(blocks1[b][0]) for b in one_d)
             + (len(epsilons) * len(GRIDS) * 5 if "2d" in args.blocks else 0))
    with tqdm(total=total, desc="haney2015") as bar:
        for key in one_d:
            algs, W = blocks1[key]
            raw["blocks"][key] = {"results": run_block(algs, W, pols, data1, epsilons, rng, bar),
                                  "exact": exact_figures(algs, W, pols, epsilons),
                                  "algorithms": [[a[0], a[2]] for a in algs]}
        r2d, ex2d, notes2d, fitted = {}, {}, [], {}
        for n in (GRIDS if "2d" in args.blocks else ()):
            W = ranges_2d((n, n), 10_000, rng=n)
            grid, dp2 = policy.grid((n, n), 1), policy.dp(Domain.grid((n, n)))
            best, table = choose_mechanism(W, grid, 1.0, candidates=default_candidates(grid, optimized=False))
            notes2d.append(f"{n}×{n}: {best.name}, Δ = {best.sensitivity(grid):g}")
            opt = fitted[n] = M.Optimized.fit(W, grid, **OPTIMISE)
            mechs = {"Laplace (DP)": (M.Laplace(), dp2, 0.5), "Privelet (DP)": (M.Privelet(), dp2, 0.5),
                     "DAWA (DP)": (M.DAWA(), dp2, 0.5), "best exact-Δ strategy (Blowfish)": (best, grid, 1.0),
                     OPT2D: (opt, grid, 1.0)}
            for eps in epsilons:
                x = data2[n]
                row = {label: mse(m, x, W, pol, eps * f, rng) for label, (m, pol, f) in mechs.items()}
                row["§5.2.2 as published†"] = published_grid_error(W, n, eps)
                bar.update(5)
                r2d.setdefault(eps, {})[f"T{n}"] = row
                ex2d.setdefault(eps, {})[f"T{n}"] = {
                    label: m.expected_error(W, pol, eps * f) for label, (m, pol, f) in mechs.items() if label != "DAWA (DP)"}
        if "2d" in args.blocks:
            raw["blocks"]["2d"] = {"results": r2d, "exact_by_data": ex2d, "notes": notes2d,
                                   "algorithms": [["Laplace (DP)", "dp"], ["Privelet (DP)", "dp"], ["DAWA (DP)", "dp"],
                                                  ["best exact-Δ strategy (Blowfish)", "grid"], [OPT2D, "grid"],
                                                  ["§5.2.2 as published†", "paper"]]}
    if "2d" in args.blocks:
        n = GRIDS[0]
        W = ranges_2d((n, n), 10_000, rng=n)
        grid = policy.grid((n, n), 1)
        fixed = choose_mechanism(W, grid, 1.0, candidates=default_candidates(grid, optimized=False))[0]
        raw["bounds"] = {"grid": lower_bound(W, grid, 1.0), "dp": lower_bound(W, policy.dp(Domain.grid((n, n))), 0.5),
                         "published": published_grid_error(W, n, 1.0),
                         "best": fixed.expected_error(W, grid, 1.0),
                         "optimized": fitted[n].expected_error(W, grid, 1.0)}
    if "hist" in args.blocks:
        raw["exact_hist_ratio"] = (M.Laplace().expected_error(hist, pols["dp"], 0.5)
                                   / M.Transformed().expected_error(hist, pols["g1"], 1.0))
        raw["dawa_buckets"] = bucket_counts(data1, pols["dp"], epsilons)
    if RAW.exists():  # keep the pre-issue-13 figures the page compares against
        old = json.loads(RAW.read_text())
        for key in (BEFORE, DECAY, CLAIM):
            if old.get(key):
                raw[key] = old[key]
    raw["run"].update(end=_utc(), load_end=_load())
    RAW.parent.mkdir(exist_ok=True)
    RAW.write_text(json.dumps(raw, indent=1))
    render(json.loads(RAW.read_text()))


def _utc() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())


def _load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def _run_start() -> dict:
    """What the page says about the run that produced it: the command, when, and how loaded the machine was."""
    env = " ".join(f"{v}={os.environ[v]}" for v in ("OPENBLAS_NUM_THREADS", "BLOWFISH_DATA") if v in os.environ)
    command = " ".join(filter(None, [env, "python -m benchmarks.reproduce_haney2015", shlex.join(sys.argv[1:])]))
    return {"command": command, "start": _utc(), "load_start": _load()}


def run_paragraph(run: dict | None) -> str:
    """The page's sentence on the run behind its figures (kept in the raw results, so ``--render`` keeps it)."""
    if not run:
        return "The raw results do not record when or how they were run (a run before this was recorded)."
    loads = "/".join(f"{v:g}" for v in run["load_start"])
    end = f"–{run['end']}" if run.get("end") else ""
    tail = f", {'/'.join(f'{v:g}' for v in run['load_end'])} at the end" if run.get("load_end") else ""
    note = f" {run['note']}" if run.get("note") else ""
    return (f"This run: `{run['command']}`, {run['start']}{end}; load average (1/5/15 min) {loads} at the start"
            f"{tail}.{note}")


def _kept_from(kept, rerun) -> str:
    """Which run the blocks not re-run now come from."""
    prev = kept.get("rerun")
    if not prev:
        return "the previous full run"
    if {b for b in BLOCKS if b not in rerun} <= set(prev["blocks"]):
        return f"the earlier re-run of the blocks {', '.join(prev['blocks'])}"
    return prev["kept_from"]


def _val(B, block, eps, d, label):
    """Exact expected error where the mechanism has one, else the run mean."""
    exact = B[block].get("exact", {}).get(eps, {})
    if label in exact:
        return exact[label]
    by_data = B[block].get("exact_by_data", {}).get(eps, {}).get(d, {})
    return by_data.get(label, B[block]["results"][eps][d][label])


def _ratio(B, block, num, den):
    """{(ε, data): min over ``num`` labels / min over ``den`` labels}, exact figures where they exist."""
    res = B[block]["results"]
    return {(e, d): min(_val(B, block, e, d, l) for l in num) / min(_val(B, block, e, d, l) for l in den)
            for e, rows in res.items() for d in rows}


def _labels(B, block, kinds):
    return [a for a, k in B[block]["algorithms"] if k in kinds]


def _data_dependent(B, block):
    """Labels measured only by their run means (no exact figure)."""
    exact = {l for per_eps in B[block].get("exact", {}).values() for l in per_eps}
    exact |= {l for per_eps in B[block].get("exact_by_data", {}).values() for row in per_eps.values() for l in row}
    return [a for a, k in B[block]["algorithms"] if a not in exact and k != "paper"]


def headlines(blocks) -> dict:
    """The ratios the summary quotes, from one run's blocks."""
    B = blocks
    best2d = "best exact-Δ strategy (Blowfish)"
    return {
        "hist": _ratio(B, "hist", ["Laplace (DP)"], ["Transformed+Laplace"]),
        "hist_dawa": _ratio(B, "hist", ["DAWA (DP)"], ["Transformed+DAWA+Cons"]),
        "g1": _ratio(B, "g1", _labels(B, "g1", ["dp"]), _labels(B, "g1", ["g1"])),
        "g4": _ratio(B, "g4", _labels(B, "g4", ["dp"]), _labels(B, "g4", ["g4"])),
        "g1_indep": _ratio(B, "g1", ["Privelet (DP)"], ["Transformed+Laplace"]),
        "d2_priv": _ratio(B, "2d", ["Privelet (DP)"], [best2d]),
        "d2_dawa": _ratio(B, "2d", ["DAWA (DP)"], [best2d]),
        "d2_lap": _ratio(B, "2d", ["Laplace (DP)"], [best2d]),
        "d2_pub": _ratio(B, "2d", ["Privelet (DP)"], ["§5.2.2 as published†"]),
        "d2_pub_dawa": _ratio(B, "2d", ["DAWA (DP)"], ["§5.2.2 as published†"]),
        **({"d2_opt_lap": _ratio(B, "2d", ["Laplace (DP)"], [OPT2D]),
            "d2_opt_dp": _ratio(B, "2d", _labels(B, "2d", ["dp"]), [OPT2D]),
            "d2_opt_fixed": _ratio(B, "2d", [best2d], [OPT2D])} if OPT2D in dict(B["2d"]["algorithms"]) else {}),
    }


def _span(r):
    v = list(r.values())
    return f"{min(v):.3g}× – {max(v):.3g}×"


def _where_below(r, limit):
    low = sorted((v, e, d) for (e, d), v in r.items() if v < limit)
    return ", ".join(f"{d.split(' ')[0]} at ε={e} ({v:.2g}×)" for v, e, d in low) or "none"


def _moves(B, P):
    """Rows (block, algorithm, per ε: geometric mean and range over the data sets of now / before)."""
    names = {"hist": "Hist, G¹", "g1": "1D-Range, G¹", "g4": "1D-Range, G⁴", "2d": "2D-Range, grid"}
    rows = []
    for block in ("hist", "g1", "g4", "2d"):
        for label in _data_dependent(B, block):
            row = [names[block], label]
            for eps, res in B[block]["results"].items():
                q = np.array([res[d][label] / P[block]["results"][eps][d][label] for d in res])
                row.append(f"{np.exp(np.log(q).mean()):.2f} ({q.min():.2f}–{q.max():.2f})")
            rows.append(row)
    return rows


def _exact_moves(B, P):
    """{ε: largest |now / before − 1| over the exact figures of the data-independent mechanisms}."""
    out = {}
    for block in B:
        for key in ("exact", "exact_by_data"):
            for eps, figs in B[block].get(key, {}).items():
                before = P[block].get(key, {}).get(eps, {})
                pairs = ([(figs[l], before[l]) for l in figs if l in before] if key == "exact" else
                         [(row[l], before[d][l]) for d, row in figs.items() for l in row if l in before.get(d, {})])
                for a, b in pairs:
                    out[eps] = max(out.get(eps, 0.0), abs(a / b - 1))
    return out


def render(raw) -> None:
    """Markdown from the raw results (keys come back from JSON as strings)."""
    B = raw["blocks"]
    h = headlines(B)
    hist, g1, g4 = h["hist"], h["g1"], h["g4"]

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

    exact_ratio = {e: f["Laplace (DP)"] / f["Transformed+Laplace"] for e, f in B["hist"]["exact"].items()}
    cells = len(hist)
    dawa_wins = sum(v > 1 for v in h["hist_dawa"].values())
    cons = "Transformed+ConsistentEst"
    dawas = [l for l in _data_dependent(B, "hist") if "DAWA" in l]
    cons_best = sum(B["hist"]["results"][e][d][cons] < min(B["hist"]["results"][e][d][l] for l in dawas)
                    for e, d in hist)
    below10 = {k: v for k, v in g4.items() if v < 10}
    dp_g4 = _labels(B, "g4", ["dp"])
    dawa_best_dp = sum(min(dp_g4, key=lambda l: _val(B, "g4", e, d, l)) == "DAWA (DP)" for e, d in below10)
    g4_verdict = "match" if not below10 else ("missed" if len(below10) == len(g4) else "partly missed")
    g1_verdict = "match or beat" if min(g1.values()) >= 100 else "partly missed"
    bnd = raw["bounds"]
    text = [
        "# Haney et al. 2015, §6 / Fig. 8: (ε, G)-Blowfish against ε/2-DP",
        f"Command: `.venv/bin/python -m benchmarks.reproduce_haney2015` (raw numbers in `haney2015.json`; "
        "`--render` rewrites this page from them). Per-query squared error: mean over "
        f"{raw['runs']} runs on the data for every algorithm; the ratios below use the exact expected error for the "
        "data-independent algorithms (their run means carry sampling noise) and the run mean for the "
        "data-dependent ones (DAWA and the Transformed+DAWA variants). 10,000 random ranges (seed 2015), 10,000 "
        "random boxes per grid; DP baselines at ε/2, Blowfish at ε. Every released noise draw is discrete Laplace "
        "(whole-number noise of variance 1/(2 sinh²(1/(2b))) for scale b, slightly below the continuous 2b²); the "
        "exact figures use that variance.",
        run_paragraph(raw.get("run")),
        "**Which DAWA this is.** Since issue 25 every DAWA here (DAWA (DP) and the Transformed+DAWA variants) "
        "partitions with PrivTree (`mechanisms/privtree.py`: one noisy split decision per node of a binary tree, a "
        "depth bias of λ ln 2 per level, privacy independent of the depth, derived in its docstring, checked exactly "
        "at k = 8 and by the violation hunter); the Transformed+DAWA variants partition the cells (not x_T) at ε₁/2 "
        "with θ = 2/ε₂, the law of DP DAWA's partition at ε/2 (`mechanisms/buckets.py`). The noisy least-cost L1 "
        "partition it replaced (noise of scale (δ_B + max δ)/ε₁ on every interval's cost, single cells included, "
        "**no floor** on the noisy costs, a public penalty of 2 noise scales per bucket) is still "
        "`DAWA(partition=\"l1\")`. The section on what issue 13 changed compares this run's figures with the page "
        "before issue 13, and its explanation (the L1 partition's several hundred buckets) describes the partition "
        "of that time, not this run's. The reference implementation (DPComp, `cutil.cpp`) floors its noisy costs "
        "and leaves single cells unnoised; built and run by the reviewer of issue 13 it violated ε₁-DP by a factor "
        "of about 53 on a k = 8 case. Figures from the reference implementation (and the DAWA figures of the "
        "papers) are therefore not a like-for-like target.",
        "## Against the paper's findings",
        f"* **Hist under G¹ — match.** Paper: Transformed+Laplace exactly 2× below DP Laplace. Exact ratio here: "
        + ", ".join(f"{v:.4f}× at ε={e}" for e, v in exact_ratio.items())
        + " (the end cells need one transformed count, not two; at large ε the ratio rises above 2 because the "
        "discrete variance, about 2b² − 1/6, falls further below 2b² for Transformed's two draws of half the scale "
        "than for Laplace's one).",
        f"* **Hist under G¹, data-dependent.** DAWA (DP) / Transformed+DAWA+Cons: {_span(h['hist_dawa'])}; the "
        f"Blowfish one is lower in {dawa_wins} of {cells} (data set, ε) cells. The data-independent "
        f"Transformed+ConsistentEst is below both DAWA variants in {cons_best} of {cells}.",
        f"* **1D-Range under G¹ — {g1_verdict}.** Paper: 2–3 orders of magnitude below Privelet/DAWA. Best DP / "
        f"best Blowfish: {_span(g1)} (below 100× at: {_where_below(g1, 100)}); Privelet / Transformed+Laplace "
        f"(data-independent against data-independent): {_span(h['g1_indep'])}.",
        f"* **1D-Range under G⁴ — {g4_verdict}.** Paper: at least one order of magnitude. Best DP / best Blowfish: "
        f"{_span(g4)}; below 10× at: {_where_below(g4, 10)}" + (", ≥ 10× elsewhere" if below10 else "") + "."
        + (f" Where we miss, DAWA (DP) is the best DP algorithm in {dawa_best_dp} of {len(below10)} cells, and our "
           "Transformed+DAWA, run at ε/3 (the stretch of H⁴) with the partition noise our privacy argument needs "
           "(about 2× the reference implementation's scale, noise on single cells too, no floor, the public "
           "penalty; see above), does not keep a 10× margin." if below10 else "")
        + (f" Before issue 13, {sum(v < 10 for v in headlines(raw[BEFORE]['blocks'])['g4'].values())} of "
           f"{len(g4)} cells were below 10×: the margin grew because our DAWA (DP) baseline lost more to the "
           "private partition than the Blowfish algorithms did (see What issue 13 changed)." if BEFORE in raw else ""),
        *_target_note(raw, h),
        f"* **2D-Range under the grid — missed, because the published strategy is not private (†).** Paper: Blowfish "
        f"below Privelet and below DAWA on the larger grids. With Δ computed exactly under the grid, the best "
        f"data-independent strategy is the Laplace mechanism with Δ = 2 — exactly the DP Laplace at ε/2 (DP Laplace / it: "
        f"{_span(h['d2_lap'])}). It is below Privelet ({_span(h['d2_priv'])}) only because Laplace beats Privelet on "
        f"these small grids, and DAWA (DP) / it = {_span(h['d2_dawa'])}. The published accounting would give "
        f"Privelet / it = {_span(h['d2_pub'])} and DAWA / it = {_span(h['d2_pub_dawa'])} — the paper's shape.",
        f"* **What any valid strategy can do on the grid.** SVD lower bounds (App. A, pure-ε form) for the "
        f"boxes on {GRIDS[0]}×{GRIDS[0]}, per query: ≥ {bnd['grid']:.4g}/ε² for every (ε, G)-Blowfish matrix "
        f"mechanism and ≥ {bnd['dp']:.4g}/ε² for every ε/2-DP one. Our best exact-Δ strategy is "
        f"{bnd['best'] / bnd['grid']:.1f}× above its bound, so a better grid strategy may exist (open); the "
        f"published figure is {bnd['published'] / bnd['grid']:.1f}× above the bound, so the bound alone neither "
        "confirms nor refutes it — the argument in † does.",
        *_optimised_note(raw, h),
        "† **§5.2.2 is not (ε, G)-Blowfish private as published.** It measures ranges of edge counts x_G and "
        "charges each neighbouring pair one unit of one edge. On a graph with cycles no map from databases to edge "
        "counts does that: moving one record around a 4-cycle of the grid returns to the same database, yet would "
        "have changed four different edge counts by one each. Theorem 4.1 covers strategies of the form A·P_G "
        "only. The column is the paper's own accounting (continuous Laplace, 2(Δ/ε)² per unit of variance), shown "
        "for comparison, not a mechanism we ship; our "
        "Blowfish figure is the best data-independent strategy with Δ computed exactly under the grid (chosen "
        "by `choose_mechanism`: " + "; ".join(B["2d"]["notes"]) + "). The same objection applies to §5.3.2 "
        "(d-D under G^θ), whose red vertices are joined in a grid.",
    ]
    if BEFORE in raw:
        text += _changes(raw)
    text += [
        "## Hist under G¹ (line)", *tables("hist"),
        "## 1D-Range under G¹ (line)", *tables("g1"),
        "## 1D-Range under G⁴", *tables("g4"),
        "## 2D-Range under the grid G¹ (tweets)", *tables("2d"),
    ]
    RESULTS.write_text("\n\n".join(text) + "\n")
    print("\n\n".join(text))


def _optimised_note(raw, h) -> list[str]:
    """The bullet on the strategy optimised for the boxes under the grid (issue 16), when this run has it."""
    if "d2_opt_lap" not in h:
        return []
    bnd = raw["bounds"]
    rerun = raw.get("rerun")
    return [
        f"* **2D-Range under the grid — a valid optimised strategy (issue 16).** `mechanisms.Optimized`: one dense "
        f"factor per axis optimised for the 10,000 boxes under the grid (Kronecker product, L-BFGS-B, {OPTIMISE}), "
        "charged its exact Δ under the grid (edge differences), so Thm 4.1 covers it. Best fixed exact-Δ strategy / "
        f"it: {_span(h['d2_opt_fixed'])}; DP Laplace (ε/2) / it: {_span(h['d2_opt_lap'])}; best DP algorithm "
        f"(Laplace, Privelet, DAWA at ε/2) / it: {_span(h['d2_opt_dp'])}. On {GRIDS[0]}×{GRIDS[0]} it is "
        f"{bnd['optimized'] / bnd['grid']:.1f}× above the (ε, G) SVD bound (the fixed strategies: "
        f"{bnd['best'] / bnd['grid']:.1f}×); the issue's target, 2× of the bound, is not reached by one Kronecker "
        "product (benchmarks/results/optimised_strategies.md says why)."
        + (f" (This run re-ran the blocks {', '.join(rerun['blocks'])} only; the others' figures are those of "
           f"{rerun['kept_from']}.)" if rerun else ""),
    ]


def _changes(raw) -> list[str]:
    """The section comparing this run with the results from before issue 13."""
    P = raw[BEFORE]["blocks"]
    B = _restrict(raw["blocks"], P)
    h = headlines(B)
    was = headlines(P)
    ex = _exact_moves(B, P)
    eps = list(B["hist"]["results"])
    moves = _moves(B, P)
    n_below = (sum(v < 10 for v in was["g4"].values()), sum(v < 10 for v in h["g4"].values()))
    worse = [B[b]["results"][e][d][l] > P[b]["results"][e][d][l] for b in B for l, _ in B[b]["algorithms"]
             if "Transformed+DAWA" in l for e in B[b]["results"] for d in B[b]["results"][e]]
    up, tot = sum(worse), len(worse)
    g4_now = ("no (data set, ε) cell below 10× now" if not n_below[1]
              else f"{n_below[1]} of {len(h['g4'])} (data set, ε) cells below 10× now, {n_below[0]} before")
    return [
        f"## What issue 13 changed (against the page at commit {raw[BEFORE]['commit']})",
        "(The columns added since, PartitionFirst ranges, Optimized and the two Ordered columns under G⁴, are left out of this comparison. The 1-D "
        "blocks' figures now also include DAWA's second stage with GreedyH's depth decay (commit 9e46f04, issue 16), "
        "which reaches DAWA (DP) and the Transformed+DAWA variants on ranges.) "
        "Two changes reach these figures. (1) DAWA's private partition no longer floors its noisy interval costs "
        "at the bucket cost — the floor broke the report-noisy-min argument and with it ε₁-DP — and every "
        "candidate bucket carries a public penalty of 2 noise scales instead; this reaches DAWA (DP) and every "
        "Transformed+DAWA variant. (2) Every released noise draw is discrete Laplace (whole-number noise, "
        "variance 1/(2 sinh²(1/(2b))) instead of 2b²); DAWA's bucket measurements included.",
        "The exact figures of the data-independent mechanisms moved only by the discrete variance: by at most "
        + ", ".join(f"{100 * v:.2g} % at ε={e}" for e, v in ex.items()) + ". The headline ratios, before → now:",
        markdown_table(["figure", "before", "now"], [
            ["Hist under G¹: exact Laplace (DP) / Transformed+Laplace at ε=1", f"{raw[BEFORE]['exact_hist_ratio']:.4f}×",
             f"{raw['exact_hist_ratio']:.4f}×"],
            ["Hist under G¹: DAWA (DP) / Transformed+DAWA+Cons", _span(was["hist_dawa"]), _span(h["hist_dawa"])],
            ["1D-Range under G¹: best DP / best Blowfish", _span(was["g1"]), _span(h["g1"])],
            ["1D-Range under G⁴: best DP / best Blowfish", _span(was["g4"]), _span(h["g4"])],
            ["1D-Range under G⁴: (data set, ε) cells below 10×", f"{n_below[0]} of {len(was['g4'])}",
             f"{n_below[1]} of {len(h['g4'])}"],
            ["2D-Range: DAWA (DP) / best exact-Δ strategy", _span(was["d2_dawa"]), _span(h["d2_dawa"])],
        ]),
        "The algorithms without an exact figure (the DAWA variants; Transformed+ConsistentEst, whose isotonic "
        "step is not linear), now / before: geometric mean over the data sets (range) of the run-mean error, per "
        f"ε (each a mean of {raw['runs']} runs with other draws, so ratios near 1 are within run-to-run noise):",
        markdown_table(["workload", "algorithm"] + [f"ε={e}" for e in eps], moves),
        "Buckets of DAWA (DP)'s partition (at ε/2, as DAWA (DP) runs): mean over 5 draws now, and before (the "
        "floored partition, 5 draws, measured once for this note):",
        markdown_table(["data"] + [f"ε={e}" for e in eps], [
            [d] + [f"{raw['dawa_buckets'][e][d]:.0f} ({FLOORED_BUCKETS[e][d.split(' ')[0]]})" for e in eps]
            for d in raw["dawa_buckets"][eps[0]]]) if "dawa_buckets" in raw else "",
        CHANGES_WHY.format(up=up, tot=tot, g4_now=g4_now, **_dawa_hist(raw)),
    ]


def _restrict(B, P) -> dict:
    """``B`` with only the algorithms ``P`` has (columns added since are left out of a before/after comparison)."""
    out = {}
    for b, blk in B.items():
        keep = {a for a, _ in P[b]["algorithms"]} if b in P else set()
        out[b] = {**blk, "algorithms": [a for a in blk["algorithms"] if a[0] in keep]}
    return out


def _dawa_hist(raw) -> dict:
    """DAWA (DP)'s histogram error at the smallest ε on the sparse sets C–G, now and before, and DP Laplace / it."""
    eps = min(raw["blocks"]["hist"]["results"], key=float)
    now = [r["DAWA (DP)"] for d, r in raw["blocks"]["hist"]["results"][eps].items() if d[0] in "CDEFG"]
    was = [r["DAWA (DP)"] for d, r in raw[BEFORE]["blocks"]["hist"]["results"][eps].items() if d[0] in "CDEFG"]
    lap = raw["blocks"]["hist"]["exact"][eps]["Laplace (DP)"]
    return {"eps": eps, "lo": min(now), "hi": max(now), "rlo": lap / max(now), "rhi": lap / min(now), "blo": min(was),
            "bhi": max(was)}


def _target_note(raw, h) -> list[str]:
    """Issue 16's 1-D target: ≥ 10× below the best ε/2-DP mechanism, G⁴ ranges, ≥ 5 of 7 sets at every ε."""
    B = raw["blocks"]
    if PF not in dict(B["g4"]["algorithms"]):
        return []
    dp = _labels(B, "g4", ["dp"])
    pf = _ratio(B, "g4", dp, [PF])
    others = _ratio(B, "g4", dp, [a for a in _labels(B, "g4", ["g4"]) if a != PF])
    eps = list(B["g4"]["results"])
    n = len(B["g4"]["results"][eps[0]])

    def count(r, e):
        return sum(v >= 10 for (e2, _), v in r.items() if e2 == e)

    met = [e for e in eps if count(h["g4"], e) >= 5]
    wins = sum(pf[c] > others[c] for c in pf)
    g1 = ""
    if PF in dict(B["g1"]["algorithms"]):
        r1 = _ratio(B, "g1", [a for a in _labels(B, "g1", ["g1"]) if a != PF], [PF])
        g1 = (" Under G¹ the PartitionFirst ranges column is the best Blowfish one in "
              f"{sum(v > 1 for v in r1.values())} of {len(r1)} cells (best other Blowfish / it: {_span(r1)}).")
    return [
        "* **1D-Range under G⁴ — issue 16's target** (≥ 10× below the best ε/2-DP mechanism on at least 5 "
        f"of the {n} DPBench sets at every ε): sets at ≥ 10× with the best Blowfish column, "
        + ", ".join(f"ε={e}: {count(h['g4'], e)} of {n}" for e in eps)
        + (" — met at every ε." if len(met) == len(eps) else
           f" — met at {', '.join(f'ε={e}' for e in met) or 'no ε'}, missed at "
           f"{', '.join(f'ε={e}' for e in eps if e not in met)}.")
        + " Without the PartitionFirst ranges column: "
        + ", ".join(f"ε={e}: {count(others, e)} of {n}" for e in eps)
        + f" (each figure a mean of {raw['runs']} runs, so ratios near 10× are within run-to-run noise)."
        + f" `PartitionFirst(\"dawa\", split=0.25, ranges=True)` (DAWA's private partition at ε₁ = 0.25 ε, then "
        "the best of identity, prefix sums, DAWA's greedy hierarchy, prefix sums with row weights fitted to the "
        "workload (`strategies/weighted_prefix.py`) and, for ≤ 256 buckets, a dense optimised strategy over the "
        "buckets, Δ exact under the projected G⁴) alone: best DP / it "
        + ", ".join(f"ε={e}: {count(pf, e)} of {n} at ≥ 10×" for e in eps)
        + f"; range {_span(pf)}; it is the best Blowfish column in {wins} of {len(pf)} (data set, ε) cells "
        f"(best other Blowfish / it: {_span({c: pf[c] / others[c] for c in pf})}).{g1} "
        "`mechanisms.Optimized` is not a column here: at k = 4,096 its 1-D templates cost O(k³) (dense) or O(k²·k/16) "
        "(p-Identity, p = k/16) per optimiser step, hundreds of steps per start; it is measured on 64 and 256 cells "
        "in `optimised_strategies.md` and `hdmm_side_by_side.md`.",
        *_decay_note(raw, h),
        *_issue24_note(raw, h),
    ]


def _short(label: str) -> str:
    return label.split(" (")[0].replace(", exact Δ", "")


def _issue24_note(raw, h) -> list[str]:
    """Issue 24's 1-D target (≥ 10× below the best ε/2-DP mechanism, G⁴ ranges, 7 of 7 sets at every ε), cell by
    cell: which mechanism decides each side, with and without the Ordered columns, and against the DP baseline of
    the run where the target last held (labelled as such: the baseline has grown stronger since)."""
    B = raw["blocks"]
    if ORD_CONS not in dict(B["g4"]["algorithms"]):
        return []
    dp, bf = _labels(B, "g4", ["dp"]), _labels(B, "g4", ["g4"])
    res = B["g4"]["results"]
    eps = list(res)
    sets = list(res[eps[0]])

    def best(e, d, labels, vals=None):
        get = (lambda l: vals[l]) if vals is not None else (lambda l: _val(B, "g4", e, d, l))
        lab = min(labels, key=get)
        return lab, get(lab)

    def counts(r):
        return ", ".join(f"ε={e}: {sum(r[(e, d)] >= 10 for d in sets)} of {len(sets)}" for e in eps)

    without = _ratio(B, "g4", dp, [l for l in bf if l not in (ORD, ORD_CONS)])
    rows = []
    for d in sets:
        row = [d]
        for e in eps:
            (dl, dv), (bl, bv) = best(e, d, dp), best(e, d, bf)
            row.append(f"{dv / bv:.3g}× ({_short(dl)} / {_short(bl)})")
        rows.append(row)
    out = [
        "* **1D-Range under G⁴ — issue 24's target** (≥ 10× below the best ε/2-DP mechanism on 7 of 7 sets at "
        f"every ε). With every Blowfish column: {counts(h['g4'])}. Without the two Ordered columns (the Blowfish "
        f"side of the previous run): {counts(without)}. Ordered+Cons (noisy prefix sums, Δ = 4 exact under G⁴, "
        "then the isotonic projection onto non-decreasing non-negative sequences: post-processing) was not a "
        "column before; it is the best Blowfish column in "
        f"{sum(best(e, d, bf)[0] == ORD_CONS for e in eps for d in sets)} of {len(eps) * len(sets)} cells. "
        f"Best ε/2-DP / best Blowfish per cell (mean of {raw['runs']} runs for the data-dependent columns, exact "
        "figures for the others; the best of several noisy run means is biased low, so cells near 10× are "
        "within noise):",
        markdown_table(["data"] + [f"ε={e}" for e in eps], rows),
    ]
    if CLAIM in raw:
        was = raw[CLAIM]["g4"]
        then = {(e, d): min(was[e][d].values()) / best(e, d, bf)[1] for e in eps for d in sets}
        out.append(
            f"  *For comparison only, against the ε/2-DP baseline as it was when the target last held (commit "
            f"{raw[CLAIM]['commit']}, before DAWA's PrivTree partition made DAWA (DP) stronger; the baseline is "
            f"not weakened for the count above):* best DP then / best Blowfish now: {counts(then)}; the current "
            "DAWA (DP) / then, geometric mean over the sets: "
            + ", ".join(f"ε={e}: {np.exp(np.mean([np.log(_val(B, 'g4', e, d, 'DAWA (DP)') / was[e][d]['DAWA (DP)']) for d in sets])):.2f}"
                        for e in eps) + ".")
    return out


def _decay_note(raw, h) -> list[str]:
    """What GreedyH's depth decay did to the DP baseline on G⁴ ranges, against the run before it."""
    if DECAY not in raw:
        return []
    B, was = raw["blocks"]["g4"]["results"], raw[DECAY]["g4"]
    geo = {e: np.exp(np.mean([np.log(B[e][d]["DAWA (DP)"] / was[e][d]) for d in B[e]])) for e in B}
    low = [(e, d) for (e, d), v in h["g4"].items() if v < 10]
    return [
        f"  Since the run before GreedyH's depth decay (commit {raw[DECAY]['commit']}) the ε/2-DP baseline got "
        "stronger: DAWA (DP)'s G⁴ range error, now / then, geometric mean over the sets: "
        + ", ".join(f"ε={e}: {v:.2f}" for e, v in geo.items()) + "."
        + "".join(f" At {d.split(' ')[0]}, ε={e} (below 10× now) DAWA (DP) went {fmt(was[e][d])} → "
                  f"{fmt(B[e][d]['DAWA (DP)'])}." for e, d in low),
    ]


#: Mean number of buckets of DAWA (DP)'s partition before issue 13 (the floored ``l1_partition`` of commit
#: 6f1e9f3, same scale, no penalty), 5 draws per cell, measured once for this comparison; keys as in ``bucket_counts``
FLOORED_BUCKETS = {
    "0.001": {"A": 91, "B": 190, "C": 11, "D": 10, "E": 3, "F": 3, "G": 3},
    "0.01": {"A": 650, "B": 442, "C": 61, "D": 42, "E": 13, "F": 13, "G": 11},
    "0.1": {"A": 1973, "B": 1026, "C": 659, "D": 213, "E": 20, "F": 13, "G": 14},
    "1.0": {"A": 2402, "B": 1658, "C": 2344, "D": 796, "E": 44, "F": 49, "G": 77},
}

#: why the figures moved (written from the tables of this section and the module notes of mechanisms/dawa.py)
CHANGES_WHY = (
    "**Why.** *The partition.* The floor was also the partition's defence against its own noise: a noisy cost "
    "could not fall below the bucket cost, so cutting the domain into many buckets gained nothing from negative "
    "draws. Without it the least-cost partition, a shortest path through about k·log₂k noisy interval costs, "
    "collects their negative draws, and the public penalty of 2 noise scales per bucket offsets that only in "
    "part at k = 4,096: DAWA (DP)'s partition now has about 440–550 buckets on every data set at ε = 0.001, "
    "where the floored one had 3–11 on the sparse sets C–G (table above). Where the data are sparse the noise, "
    "not the data, sets the partition, so on E, F and G the count hardly depends on ε. Every bucket total is "
    "measured with noise, so more buckets mean more error: DAWA (DP) lost most at small ε on the sparse sets "
    "(in this run its histogram error at ε = {eps} is {lo:.2g}–{hi:.2g} on C–G whatever the data, about "
    "{rlo:.2g}–{rhi:.2g}× below DP Laplace's, where it was {blo:.2g}–{bhi:.2g}). The Transformed+DAWA variants (DAWA on x_T, at ε rather than ε/2) "
    "moved less, except at ε = 0.001 on the sparse sets; the +Cons variants (isotonic regression after DAWA) "
    "moved least. *The noise.* Discrete Laplace changes the data-independent "
    "figures by the variance ratio only (under 0.1 % at ε ≤ 0.1, up to 7.9 % at ε = 1, e.g. Transformed+Laplace "
    "4 → 3.68 per cell). *The comparison.* The Blowfish / DP margins grew (1D-Range under G⁴: {g4_now}) "
    "because the DP baseline DAWA (DP) lost more than the Blowfish algorithms, not because "
    "Blowfish improved: the DAWA-based Blowfish figures are themselves higher than before in {up} of {tot} "
    "(workload, data set, ε) cells. "
    "The paper measured the reference DAWA, whose partition is not ε₁-DP (above); our DAWA (DP) is a weaker but "
    "private baseline, and its partition's utility at k = 4,096 (the penalty's calibration) is an open question."
)


if __name__ == "__main__":
    main()
