"""Issue 25's worst cells against the reference, with enough runs that neither side's noise decides the ratio.

Run: ``DPCOMP_SRC=/tmp/dawa33_dpcomp BLOWFISH_DATA=/work/shared/data python -m benchmarks.dawa_sparse [--runs N]
[--cells SET:EPS:WORKLOAD ...]`` (writes benchmarks/results/dawa_sparse.md). The reference partition is
dpcomp_core's own ``L1partition_approx`` when ``$DPCOMP_SRC`` has it built, else ``dawa_reference``'s port (the page
says which), followed by the same GreedyH second stage as in ``dawa_reference``.

``dawa_reference --runs 3`` draws each cell 3 times; at ε = 0.01 on a sparse set one draw of the reference's
partition either isolates a lone heavy cell or does not, so 3 runs can be off by several times (MEDCOST at ε = 0.01,
identity: 16.7 in that table). Here each listed cell runs ``--runs`` times for every column, each column from its
own seeded stream, and reports the mean ± its standard error (sample standard deviation / √N); the ratio's
standard error is the delta method for a ratio of independent means, (a/b)·√((s_a/a)² + (s_b/b)²).

Columns: the reference; ``mechanisms.DAWA()`` (PrivTree partition, ε-DP); ``mechanisms.Adaptive()`` (the private
choice between that DAWA and Laplace, issue 25's default for ``mechanism="auto"``); and *clip split*, the what-if of
``dawa_spiketest`` (PrivTree at the histogram's bias level on y = min(x, 1/ε₂) and a per-cell threshold test on
x − y, both at the whole ε₁ = 0.25ε; not shipped, its privacy argument and exact k = 8 check are in that module).
``DAWA r = 0.5`` is ``mechanisms.DAWA(ratio=0.5)`` (ε₁ = 0.5ε; ``dawa_ratio``'s what-if). Policy: unbounded DP, as
``dawa_reference``.

**Would a private three-way choice help?** (``--choice``; stop 36's suggestion: Adaptive choosing among Laplace, DAWA
and a second data-dependent release.) The candidate measured is the one Adaptive's model can score: DAWA at
r = 0.25 or r = 0.5, each scored by Adaptive's statistic E (``Adaptive(dependent=DAWA(ratio=r)).statistic``, which
models PrivTree at that ε₁), against Laplace's τ. Privacy would be by composition: both E's released with
Laplace noise at ρε/2 each (Δ_E/(ρε/2)), the least of E₀.₂₅ + n₁, E₀.₅ + n₂ and τ chosen (post-processing), the
chosen release at (1 − ρ)ε, ρ = ``choice_share(k)`` as today. For every histogram cell (7 sets × 3 ε) the page gives
E/τ for both, the comparison's noise scale b/τ, the probability of each outcome (Monte Carlo over the two Laplace
draws only, 200,000 draws: the E's are exact) and the resulting expected error, Σ P(outcome)·(its release's error at
(1 − ρ)ε, measured over ``--choice-runs`` runs; Laplace's exact), against today's two-way Adaptive computed the same
way (one E at ρε, its exact outcome probability).

**A floor for any private partition on a lone spike** (``--floor``). One cell i holds h records above otherwise
flat data. For any ε₁-DP partition, let p_j be the probability that cell i is a bucket of its own when it holds j
records more than on the spike-free data; DP asks p_{j+1} ≤ e^{ε₁}p_j and 1 − p_{j+1} ≥ e^{−ε₁}(1 − p_j). From
p₀ = μ the largest p_h these allow is reached by taking at each step the smaller of the two bounds: that is the
Laplace threshold test's curve (p = ½e^{ε₁(h − T)} below its threshold T, 1 − ½e^{−ε₁(h − T)} above, with
μ = ½e^{−ε₁T}), so no ε₁-DP partition isolates the spike more often than the test with the same singleton rate.
A partition that treats cells alike has μ = m/k, m its expected number of singleton buckets on the spike-free
data, and each singleton costs at least its bucket's noise σ₂² = 2/ε₂² (the identity second stage on buckets);
a spike left in a bucket of two or more costs at least h²/2. So the error per cell is at least
min over m of [(1 − p_h(m))·h²/2 + m·σ₂²]/k, printed for the cell's largest count h at DAWA's ε₁ = 0.25ε and at 0.5ε.
A cost model, not a theorem about GreedyH (the spike-free data's own error is left out: the floor only grows with it).
Since stop 40 DAWA tests the two end cells of a 1-D histogram on their own (:mod:`blowfish_nb.mechanisms.privtree`):
a spike there is one of two candidates, not k, and this floor (cells treated alike) does not bind it.

**The per-cell test on every cell** (:func:`threshold_model`, the floor table's last model column): the same cost
model applied to all the set's non-empty cells at once, at the best public m. Not a floor: what a partition made of
that test alone would cost. Where it is far below our DAWA (ADULTFRANK at ε = 1: many lone cells of 10–116 records
below PrivTree's lone-cell level), the best threshold is a property of the data's counts in units of the noise, so a
public one serves some sets and fails others (``dawa_spiketest``); see the page's reading.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

import numpy as np

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.mechanisms.dawa import histogram_offset
from blowfish_nb.ranges import random_ranges
from benchmarks._data import dpbench
from benchmarks._timing import markdown_table, publish
from benchmarks.dawa_reference import DATASETS, EPSILONS, K, built_reference, reference_partition, reference_release
from benchmarks.dawa_spiketest import release as spike_release

RESULTS = Path(__file__).parent / "results" / "dawa_sparse.md"
#: the cells above 2× the reference in dawa_reference.md (stop 36), and the sparse sets' histograms at ε = 0.01
CELLS = ("MEDCOST:0.01:identity", "ADULTFRANK:0.01:identity", "NETTRACE:0.01:identity", "ADULTFRANK:1:identity",
         "ADULTFRANK:0.01:ranges", "INCOME:1:ranges", "HEPTH:0.01:ranges", "SEARCHLOGS:0.1:ranges")
COLUMNS = ("reference", "DAWA", "Adaptive", "clip split", "DAWA r = 0.5")


def mean_se(values) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size))


def ratio_se(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    r = a[0] / b[0]
    return r, r * math.hypot(a[1] / a[0], b[1] / b[0])


def isolation_floor(h: float, k: int, eps1: float, eps2: float) -> tuple[float, float]:
    """(least error per cell, the m attaining it) of the lone-spike floor (module notes)."""
    m = np.geomspace(1e-3, k / 2, 4000)
    t = np.log(k / (2 * m))  # ε₁T of the test with m expected singletons on k spike-free cells
    u = eps1 * h - t
    p = np.where(u >= 0, 1 - 0.5 * np.exp(-np.abs(u)), 0.5 * np.exp(-np.abs(u)))
    cost = ((1 - p) * h * h / 2 + m * 2 / eps2**2) / k
    i = int(np.argmin(cost))
    return float(cost[i]), float(m[i])


def threshold_model(x: np.ndarray, eps1: float, eps2: float) -> tuple[float, float]:
    """(error per cell, the m attaining it) of the best per-cell threshold test over *every* cell (module notes).

    Each cell is a bucket of its own iff x_i + Lap(1/ε₁) > T, T = ln(k/(2m))/ε₁ (m expected singletons on k empty
    cells); a singleton costs σ₂² = 2/ε₂², a cell of c records left in a bucket c²/2. Not a floor (a partition
    may do better on clustered cells): what such a test alone would cost, for every cell at once.
    """
    k = x.size
    c = x[x > 0]
    best = (math.inf, 0.0)
    for m in np.geomspace(1e-3, k / 2, 2000):
        u = eps1 * c - math.log(k / (2 * m))
        p = np.where(u >= 0, 1 - 0.5 * np.exp(-np.abs(u)), 0.5 * np.exp(-np.abs(u)))
        cost = float((np.sum((1 - p) * c * c / 2) + (m + np.sum(p)) * 2 / eps2**2) / k)
        best = min(best, (cost, float(m)))
    return best


def choice_rows(runs: int, draws: int = 200_000) -> list:
    """The three-way choice's what-if on the 21 histogram cells (module notes)."""
    from blowfish_nb.mechanisms.adaptive import choice_share

    pol = policy.dp(Domain.grid(K))
    W = workload.identity(K)
    rho = choice_share(K)
    noise_rng = np.random.default_rng(2037)
    rows = []
    for name in DATASETS:
        x = dpbench(f"{name}.n4096").astype(float)
        for eps in EPSILONS:
            rest = (1 - rho) * eps
            lap = float(mechanisms.Laplace().expected_error(W, pol, rest))
            E, b, err = {}, {}, {"Laplace": lap}
            for r in (0.25, 0.5):
                m = mechanisms.Adaptive(dependent=mechanisms.DAWA(ratio=r))
                tau = m.threshold(pol, rest)
                stat, delta = m.statistic(x, pol, rest)
                E[r], b[r] = stat / tau, delta / (rho * eps / 2) / tau
                rng = np.random.default_rng([37, int(r * 100), int(round(eps * 1000)), len(name)])
                err[r] = float(np.mean([np.mean((mechanisms.DAWA(ratio=r).release(x, W, pol, rest, rng=rng) - x) ** 2)
                                        for _ in range(runs)]))
            n1 = E[0.25] + noise_rng.laplace(0, b[0.25], draws)
            n2 = E[0.5] + noise_rng.laplace(0, b[0.5], draws)
            pick = np.argmin(np.stack([n1, n2, np.ones(draws)]), axis=0)
            p3 = np.bincount(pick, minlength=3) / draws
            three = p3[0] * err[0.25] + p3[1] * err[0.5] + p3[2] * lap
            # today's two-way choice: E₀.₂₅ at the whole ρε (noise b/2), DAWA when E + n < τ
            u = (1 - E[0.25]) / (b[0.25] / 2)
            p_dawa = 1 - 0.5 * math.exp(-u) if u >= 0 else 0.5 * math.exp(u)
            two = p_dawa * err[0.25] + (1 - p_dawa) * lap
            rows.append([name, eps, f"{E[0.25]:.3g}", f"{E[0.5]:.3g}", f"{b[0.25]:.3g} / {b[0.5]:.3g}",
                         f"{err[0.25] / lap:.3f}", f"{err[0.5] / lap:.3f}",
                         f"{p3[0]:.2f} / {p3[1]:.2f} / {p3[2]:.2f}", f"{two / lap:.3f}", f"{three / lap:.3f}",
                         f"{three / two:.2f}"])
            print(" | ".join(str(c) for c in rows[-1]), flush=True)
    return rows


def spike_free(cell: str, runs: int) -> None:
    """Print DAWA at r = 0.25 and 0.5 on a set and on the set with its largest cell lowered to its neighbours' mean."""
    name, eps = cell.split(":")[:2]
    eps = float(eps)
    pol, W = policy.dp(Domain.grid(K)), workload.identity(K)
    x = dpbench(f"{name}.n4096").astype(float)
    i = int(np.argmax(x))
    x0 = x.copy()
    x0[i] = float(np.round(np.mean([x[j] for j in (i - 1, i + 1) if 0 <= j < K])))
    for label, v in ((name, x), (f"{name} with cell {i} = {x0[i]:.0f} (was {x[i]:.0f})", x0)):
        out = []
        for r in (0.25, 0.5):
            rng = np.random.default_rng([37, int(r * 100)])
            e = mean_se([np.mean((mechanisms.DAWA(ratio=r).release(v, W, pol, eps, rng=rng) - v) ** 2)
                         for _ in range(runs)])
            out.append(f"DAWA r = {r}: {e[0]:.4g} ± {e[1]:.2g}")
        print(f"{label}, ε = {eps:g}, identity, {runs} runs: " + " | ".join(out), flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--range-runs", type=int, default=None, help="runs for range cells (default: --runs)")
    parser.add_argument("--cells", nargs="*", default=list(CELLS))
    parser.add_argument("--choice", action="store_true", help="also the three-way choice's what-if (module notes)")
    parser.add_argument("--choice-runs", type=int, default=10)
    parser.add_argument("--spike-free", metavar="SET:EPS", help="only print DAWA r = 0.25 / 0.5 on the set with and "
                        "without its largest cell (no page written)")
    args = parser.parse_args(argv)
    if args.spike_free:
        spike_free(args.spike_free, args.runs)
        return
    started = time.perf_counter()
    built, how = built_reference()
    ref_partition = built or reference_partition
    pol = policy.dp(Domain.grid(K))
    loads = {"identity": workload.identity(K), "ranges": random_ranges(K, 2000, rng=7)}
    rows, floors = [], []
    for cell in args.cells:
        name, eps, wname = cell.split(":")
        eps = float(eps)
        x = dpbench(f"{name}.n4096").astype(float)
        W = loads[wname]
        truth = W @ x
        runs = args.runs if wname == "identity" or args.range_runs is None else args.range_runs
        offset = histogram_offset(W, K)
        draw = {
            "reference": lambda rng: W @ reference_release(x, W, eps, rng, ref_partition)[0],
            "DAWA": lambda rng: mechanisms.DAWA().release(x, W, pol, eps, rng=rng),  # answers to W
            "Adaptive": lambda rng: mechanisms.Adaptive().release(x, W, pol, eps, rng=rng),
            "clip split": lambda rng: W @ spike_release(x, W, eps, "split", offset, rng)[0],
            "DAWA r = 0.5": lambda rng: mechanisms.DAWA(ratio=0.5).release(x, W, pol, eps, rng=rng),
        }
        stats = {}
        for j, col in enumerate(COLUMNS):
            rng = np.random.default_rng([37, j, int(round(eps * 1000)), len(name), len(wname)])
            stats[col] = mean_se([np.mean((draw[col](rng) - truth) ** 2) for _ in range(runs)])
        lap = float(mechanisms.Laplace().expected_error(W, pol, eps))
        ref = stats["reference"]
        row = [name, eps, wname, runs, f"{lap:.4g}", *(f"{stats[c][0]:.4g} ± {stats[c][1]:.2g}" for c in COLUMNS)]
        row += ["{:.2f} ± {:.2f}".format(*ratio_se(stats[c], ref)) for c in COLUMNS[1:]]
        rows.append(row)
        print(" | ".join(str(c) for c in row), flush=True)
        if wname == "identity":
            i = int(np.argmax(x))
            f25, m25 = isolation_floor(x[i], K, 0.25 * eps, 0.75 * eps)
            f50, m50 = isolation_floor(x[i], K, 0.5 * eps, 0.5 * eps)
            t25, n25 = threshold_model(x, 0.25 * eps, 0.75 * eps)
            floors.append([name, eps, f"{x[i]:.0f} (cell {i})", ", ".join(f"{v:.0f}" for v in x[max(i - 2, 0):i + 3]),
                           f"{0.25 * eps * x[i]:.2f}", f"{f25:.4g} (m = {m25:.2g})", f"{f50:.4g} (m = {m50:.2g})",
                           f"{t25:.4g} (m = {n25:.3g})", f"{3 * ref[0]:.4g} ± {3 * ref[1]:.2g}"])
    choice = choice_rows(args.choice_runs) if args.choice else []
    header = ["data", "ε", "workload", "runs", "Laplace (exact)", *(f"{c} (mean ± SE)" for c in COLUMNS),
              *(f"{c} / reference" for c in COLUMNS[1:])]
    publish(RESULTS, "\n\n".join([
        "# Issue 25's worst cells, many runs (mean squared error per query ± standard error)",
        f"Command: `DPCOMP_SRC={os.environ.get('DPCOMP_SRC', '<unset>')} BLOWFISH_DATA=/work/shared/data "
        "python -m benchmarks.dawa_sparse "
        f"--runs {args.runs}" + (f" --range-runs {args.range_runs}" if args.range_runs else "")
        + (f" --cells {' '.join(args.cells)}" if list(args.cells) != list(CELLS) else "")
        + (f" --choice --choice-runs {args.choice_runs}" if args.choice else "")
        + f"` ({time.perf_counter() - started:.0f} s). Reference partition: {how}. Columns: the module notes.",
        markdown_table(header, rows),
        "## Lone-spike floor (module notes): least error per cell of any partition that treats cells alike",
        "Only where the largest cell is a lone spike among near-empty cells (its neighbourhood is shown) is the floor "
        "the binding one; elsewhere a large cell is isolated almost surely and the floor is tiny.",
        markdown_table(["data", "ε", "largest count h", "cells around it", "ε₁h at ε₁ = 0.25ε", "floor at ε₁ = 0.25ε",
                        "floor at ε₁ = 0.5ε", "per-cell test on every cell at ε₁ = 0.25ε (model)", "3 × reference"],
                       floors),
        *(["## Three-way choice what-if (module notes): Laplace, DAWA r = 0.25, DAWA r = 0.5 by E",
           f"Runs per DAWA figure: {args.choice_runs} (`--choice-runs`); errors ÷ Laplace's exact error at (1 − ρ)ε.",
           markdown_table(["data", "ε", "E₀.₂₅/τ", "E₀.₅/τ", "noise b/τ (each, at ρε/2)", "DAWA r=0.25 ÷ Laplace",
                           "DAWA r=0.5 ÷ Laplace", "P(r=0.25 / r=0.5 / Laplace)", "two-way (today) ÷ Laplace",
                           "three-way ÷ Laplace", "three-way ÷ two-way"], choice)] if choice else []),
    ]))


if __name__ == "__main__":
    main()
