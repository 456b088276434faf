"""Optimised strategies under a policy (issue 16): error against the SVD lower bound and the best ε/2-DP mechanism.

Run: ``.venv/bin/python -m benchmarks.optimised_strategies`` (writes
benchmarks/results/optimised_strategies.md; ``--quick`` runs the smallest
case of each block only).

For every case, in one run and at ε = 1 (every figure is an exact expected
squared error per query, discrete-Laplace variances; ratios hardly depend on ε):

* **Optimized**: ``strategies.optimized.optimize`` under the case's policy
  (seeded restarts), charged its exact Δ;
* **best fixed (G)**: the best data-independent strategy ``choose_mechanism``
  finds among the fixed ones (Laplace, Ordered, trees, Privelet, Transformed,
  Ordered Hierarchical, H^θ) under the same policy at ε;
* **SVD bound (G)**: ``analysis.lower_bound`` (pure ε, at most 2,048 cells);
* **best ε/2-DP**: the best fixed data-independent mechanism under unbounded
  DP at ε/2 (the papers' comparison), and **HDMM-style ε/2-DP**: the same
  optimiser under DP at ε/2 (a stronger DP baseline than the papers had).
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np

from blowfish_nb import Domain, mechanisms, policy
from blowfish_nb.analysis import lower_bound
from blowfish_nb.analysis.lower_bound import LOWER_BOUND_LIMIT
from blowfish_nb.analysis.selection import choose_mechanism, default_candidates
from blowfish_nb.ranges import random_ranges, ranges_2d
from blowfish_nb.workload import Stack, marginal
from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "optimised_strategies.md"
EPS = 1.0
#: grid sizes of the 2-D block (``--grids 25 50 100`` for the issue's three; 100×100 has no SVD bound: 10⁴ cells)
GRIDS = (25,)
#: the optimiser's budget here (the interactive "auto" one is smaller: mechanisms.optimized.AUTO)
OPTIONS = {"restarts": 4, "max_iter": 600, "rng": 0}


def cases(quick: bool, grids=GRIDS):
    """(block, label, workload, policy) for every row."""
    k = 64
    R = random_ranges(k, 2_000, rng=16)
    line = Domain.grid(k)
    for theta in (1, 4, 16):
        yield "1-D ranges", f"2,000 ranges, k = {k}, G^{theta}", R, policy.threshold(line, theta)
        if quick:
            break
    for n in grids:
        yield "2-D boxes", f"10,000 boxes, {n}×{n}, grid G¹", ranges_2d((n, n), 10_000, rng=n), policy.grid((n, n), 1)
        if quick:
            break
    for shape in ((8, 8, 8),):
        d = len(shape)
        two_way = Stack([marginal(shape, [i, j]) for i in range(d) for j in range(i + 1, d)], [1.0] * 3)
        yield "marginals", f"2-way marginals, {'×'.join(map(str, shape))}, attribute", two_way, \
            policy.attribute(Domain.grid(shape))
        if quick:
            break


def best_fixed(W, pol, eps) -> tuple[str, float]:
    best, table = choose_mechanism(W, pol, eps, candidates=default_candidates(pol, optimized=False))
    return table["expected_error"].idxmin(), float(table["expected_error"].min())


def row(W, pol):
    k = pol.domain.size
    dp = policy.dp(pol.domain)
    t = time.perf_counter()
    opt = mechanisms.Optimized.fit(W, pol, **OPTIONS)
    seconds = time.perf_counter() - t
    err = opt.expected_error(W, pol, EPS)
    fixed_name, fixed = best_fixed(W, pol, EPS)
    bound = lower_bound(W, pol, EPS) if k <= LOWER_BOUND_LIMIT else np.nan
    dp_name, dp_fixed = best_fixed(W, dp, EPS / 2)
    dp_opt = mechanisms.Optimized.fit(W, dp, **OPTIONS).expected_error(W, dp, EPS / 2)
    dp_bound = lower_bound(W, dp, EPS / 2) if k <= LOWER_BOUND_LIMIT else np.nan
    return {"dp_bound": dp_bound, "err": err, "delta": opt.sensitivity(pol), "seconds": seconds, "fixed": fixed,
            "fixed_name": fixed_name, "template": opt.optimized.info["template"],
            "bound": bound, "dp": dp_fixed, "dp_name": dp_name, "dp_opt": dp_opt}


def targets(raw) -> list[str]:
    """The issue's targets, met or missed, from this run's rows."""
    boxes = [(label, r) for block, label, r in raw if block == "2-D boxes"]
    out = ["## The issue's targets"]
    if boxes:
        near = [f"{label.split(', ')[1]}: {sig4(r['err'] / r['bound'])}×" if np.isfinite(r["bound"])
                else f"{label.split(', ')[1]}: no bound (above {LOWER_BOUND_LIMIT:,} cells)" for label, r in boxes]
        below = [f"{label.split(', ')[1]}: {sig4(min(r['dp'], r['dp_opt']) / r['err'])}× "
                 f"({'met' if min(r['dp'], r['dp_opt']) >= 3 * r['err'] else 'missed'})" for label, r in boxes]
        met_near = all(np.isfinite(r["bound"]) and r["err"] <= 2 * r["bound"] for _, r in boxes)
        met_below = all(min(r["dp"], r["dp_opt"]) >= 3 * r["err"] for _, r in boxes)
        out.append(f"* **Within 2× of the SVD bound on every 2-D grid — {'met' if met_near else 'missed'}.** "
                   "Optimized / bound: " + "; ".join(near) + ".")
        out.append(f"* **≥ 3× below the best data-independent ε/2-DP strategy on 2-D boxes — "
                   f"{'met' if met_below else 'missed' if not any(min(r['dp'], r['dp_opt']) >= 3 * r['err'] for _, r in boxes) else 'partly met'}.** "
                   "Best ε/2-DP (fixed or HDMM-style) / Optimized: " + "; ".join(below) + " (4 significant "
                   "digits; met iff the unrounded ratio is ≥ 3). These are 10,000 random boxes with "
                   f"`Optimized.fit(**{OPTIONS})`; issue 24's anchor (all boxes, HDMM's own strategy at ε/2, the "
                   "default templates, auto's fit and the opt-in flat template) is `hdmm_side_by_side.md`.")
    return out


def sig4(v) -> str:
    """v to 4 significant digits (3.000, 2.996)."""
    return np.format_float_positional(v, precision=4, unique=False, fractional=False, trim="k")


#: why the targets are missed (written from the table and the experiments described in it)
WHY = (
    "**Templates (issue 24).** `optimize` now fits a Kronecker product of p-Identity factors (unit columns: Δ = 1 "
    "under DP), on 1-D policies without ⊥ a p-Identity on the line's edge values (the prefix sums: Δ = the longest "
    "edge's span exactly, the public total free), weighted marginals on grids of ≤ 1,024 cells (Δ linear in the "
    "weights, exact under the attribute policy), the dense factors on a smoothed max (axes ≤ 128 cells, started "
    "from the p-Identity result too), and then the winner with the public total as one more row (policies "
    "without ⊥, ≤ 1,024 cells); every candidate is charged its exact Δ and the column names the winner. The "
    "HDMM-style ε/2-DP column is the same optimiser under DP, so it improved too. "
    "**Why the SVD bound is not reached.** One Kronecker product A₁ ⊗ A₂ pays Δ = max(a₁c₂, c₁a₂) under the grid "
    "(a_i the largest L1 norm of a difference of adjacent columns of A_i, c_i the largest column norm; "
    "tests/mechanisms/test_optimized.py checks the formula by brute force), against c₁c₂ under unbounded DP, and "
    "strategies that answer ranges well aggregate blocks of cells, whose worst adjacent pair has a_i close to 2c_i. "
    "The bound is an L2 (Gaussian-style) bound and Laplace pays the L1 column norm: the last column shows how far "
    "even the best ε/2-DP strategy sits from DP's own bound on the same workload, and that slack grows with the "
    "grid (issue 16's closing note gives the research runs beyond Kronecker products). "
    "**1-D under G¹:** the edge-domain p-Identity ties the Transformed mechanism (identity on the edge values "
    "with the public total); 'best fixed / Optimized' below 1 there is the discrete Laplace's smaller variance "
    "(1.84 against 2 at ε = 1) on the fixed mechanism's integer measurements."
)


def fmt(v, digits=3) -> str:
    return "—" if not np.isfinite(v) else f"{v:.{digits}g}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="the smallest case of each block only")
    ap.add_argument("--grids", nargs="+", type=int, default=list(GRIDS), help="grid sizes of the 2-D block")
    args = ap.parse_args()
    rows, raw = [], []
    for block, label, W, pol in cases(args.quick, tuple(args.grids)):
        r = row(W, pol)
        raw.append((block, label, r))
        best_dp = min(r["dp"], r["dp_opt"])
        rows.append([block, label, f"{fmt(r['err'])} ({r['template']})", fmt(r["delta"]), fmt(r["bound"]), fmt(r["err"] / r["bound"], 2),
                     f"{fmt(r['fixed'])} ({r['fixed_name']})", fmt(r["fixed"] / r["err"], 2),
                     f"{fmt(r['dp'])} ({r['dp_name']})", fmt(r["dp_opt"]), fmt(best_dp / r["err"], 2),
                     fmt(best_dp / r["dp_bound"], 2), f"{r['seconds']:.0f}"])
        print(rows[-1], flush=True)
    header = ["block", "case", "Optimized (G) (template)", "its Δ", "SVD bound (G)", "Optimized / bound",
              "best fixed (G)", "best fixed / Optimized", "best fixed ε/2-DP", "HDMM-style ε/2-DP",
              "best ε/2-DP / Optimized", "DP's own gap: best ε/2-DP / DP SVD bound", "optimise s"]
    text = "\n\n".join([
        "# Optimised strategies under a policy (issue 16)",
        f"Command: `.venv/bin/python -m benchmarks.optimised_strategies{' --quick' if args.quick else ''} "
        f"--grids {' '.join(map(str, args.grids))}`. "
        f"Expected squared error per query at ε = {EPS:g} (Blowfish) and ε/2 (DP), exact (discrete Laplace "
        f"variances). Optimiser: {OPTIONS}. SVD bound: `analysis.lower_bound` (pure ε; dense, at most "
        f"{LOWER_BOUND_LIMIT:,} cells — '—' above). Machine: {platform.machine()}, 2 shared cores (load varies: "
        "the seconds are indicative only).",
        markdown_table(header, rows),
        *targets(raw),
        WHY,
    ])
    publish(RESULTS, text)


if __name__ == "__main__":
    main()
