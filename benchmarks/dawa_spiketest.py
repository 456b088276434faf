"""What-if (issue 25, stop 36): a per-cell spike test sharing DAWA's partition budget ε₁ with PrivTree.

Run: ``BLOWFISH_DATA=/work/shared/data python -m benchmarks.dawa_spiketest [--runs N]`` (writes
benchmarks/results/dawa_spiketest.md; a few minutes). Nothing here is shipped: it measures whether the candidate
is worth shipping.

**The candidate.** ε₁ = ε_T + ε_S. PrivTree (:mod:`blowfish_nb.mechanisms.privtree`, the histogram's bias level)
runs at ε_T; every cell is tested, x_i + Lap(1/ε_S) > T, and a cell that passes becomes a singleton bucket (the
PrivTree buckets are cut on both sides of it: post-processing of the two outputs).

*Privacy (one entry of x changed by at most 1; DAWA divides ε by the policy's group size g, so a Blowfish move
that changes two entries by 1 each is covered by group privacy as for the rest of DAWA).* The tests are k
Laplace mechanisms of sensitivity 1 on disjoint cells: one changed entry moves one test, so the flag vector's
log-ratio is at most ε_S exactly (parallel composition); PrivTree's partition is ε_T-DP (its module's bound), and
the two draw independent noise, so the pair is (ε_T + ε_S)-DP (sequential composition) and the final partition, a
function of the pair, is too. Nothing here is new arithmetic: the per-cell ratio is
P[x + 1 + η > T]/P[x + η > T] ≤ e^{ε_S} for Laplace η of scale 1/ε_S.

*The threshold T, a public function of k, ε_S and ε₂ (histogram cost model).* A false positive on an empty cell
adds a singleton bucket, σ₂² = 2/ε₂² of squared error; a missed lone spike of h records left in a bucket of
empty cells costs about h². With t = ε_S·T and u = ε_S·(T − h), the worst spike height costs
max_u P[miss]·h² = max_u m(u)(t − u)²/ε_S² (m(u) = 1 − ½e^{−u} for u ≥ 0, ½e^{u} below), and the k cells' false
positives (k/2)e^{−t}·σ₂². T minimises their sum: the minimax of ``benchmarks/dawa_spike.py`` with the data's
|Z| and h replaced by their public worst cases (|Z| = k, any h).

Variants measured, all at DAWA's ε₁ = 0.25ε (ε₂ = 0.75ε unchanged):

* *half*: ε_T = ε_S = ε₁/2;
* *test only*: ε_S = ε₁, no PrivTree: flagged cells are singletons, each maximal run of unflagged cells one bucket
  (the yardstick: all of ε₁ on spikes);
* *split*: **both at the whole ε₁**, on disjoint parts of each count. With a public clip level c (here θ = 1/ε₂,
  the count below which a cell is not worth a bucket of its own), PrivTree runs on y = min(x, c) and the test on
  z = x − y (threshold T as above, at ε_S = ε₁). *Privacy:* adding or removing one record at cell i moves y_i by a
  and z_i by 1 − a with a ∈ [0, 1] (a = 1 below c, 0 at or above it, in between only when c is not a whole
  number), and nothing else. PrivTree's bound is linear in the size of the move (every term of its module's sum
  is ∫ G over an interval of length a ≤ 1, so at most a times the term for length 1, and the clamp's region
  only shrinks), and the test's log-ratio is (1 − a)ε₁ at most, so the pair's log-ratio is at most
  aε₁ + (1 − a)ε₁ = ε₁: the budget is shared, not split. Checked in exact arithmetic at k = 8 (``--exact``:
  every partition's probability in closed form, the PrivTree part as in ``tests/mechanisms/test_privtree.py``,
  summed over the 2⁸ flag vectors; the worst loss is ε₁, and two known-bad variants exceed it: PrivTree on x
  unclipped, 1.30ε₁, and half the test's noise, 2ε₁). Under a Blowfish policy with cell-to-cell edges DAWA runs
  at ε/2 per count as for the rest of its partition (group privacy over the two counts a move changes);
  **not** checked with the hunter (nothing here is shipped);
* *split, FP ≤ 1*: the same with T = ln(k/2)/ε₁ (at most one false positive expected on k empty cells).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.mechanisms import noise
from blowfish_nb.mechanisms.dawa import RATIO, _GreedyTree, histogram_offset
from blowfish_nb.mechanisms.gram import bucket_gram
from blowfish_nb.mechanisms.privtree import privtree_partition
from blowfish_nb.ranges import random_ranges
from benchmarks._data import adult, dpbench
from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results"
DATASETS = ("PATENT", "INCOME", "HEPTH", "SEARCHLOGS", "NETTRACE", "ADULTFRANK", "MEDCOST")
EPSILONS = (0.01, 0.1, 1.0)
K = 4096
VARIANTS = ("PrivTree (main)", "half", "test only", "split", "split, FP ≤ 1")


def spike_threshold(k: int, eps_s: float, eps2: float) -> float:
    """T minimising (k/2)e^{−ε_S T}·2/ε₂² + max_h P[miss | h]·h² (module notes); public."""
    t = np.linspace(0.0, 4 * math.log(max(k, 2)) + 10, 4001)
    u = np.linspace(-20.0, 60.0, 8001)
    miss = np.where(u >= 0, 1 - 0.5 * np.exp(-np.abs(u)), 0.5 * np.exp(-np.abs(u)))
    worst = np.array([np.max(miss * np.maximum(ti - u, 0.0) ** 2) for ti in t])
    total = 0.5 * k * np.exp(-t) * 2 * (eps_s / eps2) ** 2 + worst
    return float(t[int(np.argmin(total))] / eps_s)


def spike_flags(x: np.ndarray, eps_s: float, T: float, rng) -> np.ndarray:
    """x_i + Lap(1/ε_S) > T per cell (ε_S-DP for one entry changed by ≤ 1: parallel composition)."""
    return x + noise.selection_laplace(rng, 1.0 / eps_s, x.size) > T


def partition(x, eps1: float, eps2: float, variant: str, offset: int, rng) -> np.ndarray:
    """Bucket starts of the variant's partition."""
    k = x.size
    if variant == "PrivTree (main)":
        return privtree_partition(x, eps1, 1.0 / eps2, rng, offset=offset)
    if variant.startswith("split"):
        # each record counts in exactly one of y = min(x, c) and z = x − y (c = θ = 1/ε₂): both at the whole ε₁
        c = 1.0 / eps2
        y = np.minimum(x, c)
        starts = np.zeros(k, dtype=bool)
        starts[privtree_partition(y, eps1, 1.0 / eps2, rng, offset=offset)] = True
        T = spike_threshold(k, eps1, eps2) if variant == "split" else math.log(k / 2) / eps1
        flag = spike_flags(x - y, eps1, T, rng)
        starts |= flag
        starts[1:] |= flag[:-1]
        return np.flatnonzero(starts)
    if variant == "half":
        starts = np.zeros(k, dtype=bool)
        starts[privtree_partition(x, eps1 / 2, 1.0 / eps2, rng, offset=offset)] = True
        eps_s = eps1 / 2
    else:
        starts = np.zeros(k, dtype=bool)
        starts[0] = True
        eps_s = eps1
    flag = spike_flags(x, eps_s, spike_threshold(k, eps_s, eps2), rng)
    starts |= flag
    starts[1:] |= flag[:-1]
    return np.flatnonzero(starts)


def _exact_privtree(x, eps1, theta, offset=0):
    """Every PrivTree partition's log-probability in closed form (as ``tests/mechanisms/test_privtree.py``)."""
    from blowfish_nb.mechanisms.privtree import node_scores, privtree_scale, tree_nodes

    lam = privtree_scale(eps1)
    delta = lam * math.log(2)
    lo, hi, depth, parent = tree_nodes(len(x))
    b = np.maximum(node_scores(np.asarray(x, float), lo, hi, depth, "count") - (depth - offset) * delta, theta - delta)
    d = np.abs(b - theta) / lam
    above = b >= theta
    log_split = np.where(above, np.log1p(-0.5 * np.exp(-d)), math.log(0.5) - d)
    log_stop = np.where(above, math.log(0.5) - d, np.log1p(-0.5 * np.exp(-d)))
    children = {}
    for v, p in enumerate(parent):
        children.setdefault(int(p), []).append(v)

    def dist(v):
        if hi[v] - lo[v] == 1:
            return {(int(lo[v]),): 0.0}
        out = {(int(lo[v]),): log_stop[v]}
        a, c = (dist(w) for w in children[v])
        for pa, qa in a.items():
            for pc, qc in c.items():
                out[pa + pc] = log_split[v] + qa + qc
        return out

    return dist(0)


def exact_split(x, eps1, theta, c, T, clip=True, test_noise=1.0) -> dict:
    """The *split* partition's law in closed form: bucket starts → log-probability (``clip=False``, ``test_noise``:
    the known-bad variants)."""
    x = np.asarray(x, float)
    k = x.size
    y = np.minimum(x, c) if clip else x
    z = x - np.minimum(x, c)
    tree = _exact_privtree(y, eps1, theta)
    u = (T - z) * eps1 / test_noise
    p = np.where(u >= 0, 0.5 * np.exp(-np.abs(u)), 1 - 0.5 * np.exp(-np.abs(u)))
    out = {}
    for F in range(1 << k):
        flags = [(F >> i) & 1 for i in range(k)]
        lp = sum(math.log(p[i]) if f else math.log1p(-p[i]) for i, f in enumerate(flags))
        cut = {j for i, f in enumerate(flags) if f for j in (i, i + 1) if j < k}
        for starts, q in tree.items():
            key = tuple(sorted(set(starts) | cut))
            out[key] = float(np.logaddexp(out.get(key, -np.inf), q + lp))
    return out


def exact_check() -> list:
    """Worst |ln P[S | x] − ln P[S | x′]| over partitions S and neighbours x′ = x ± e_i at k = 8, ε₁ = 1."""
    rows = []
    # at c = 1.5 a move between 1 and 2 records straddles the clip (a = ½)
    for theta, c, T in ((1 / 3, 1.0, 2.0), (1 / 3, 3.0, 1.0), (4.0, 4.0, 3.0), (1 / 3, 1.5, 1.0)):
        rng = np.random.default_rng(0)
        whole = float(np.floor(c))
        base = [np.zeros(8), np.r_[np.zeros(7), whole + T], np.r_[whole, whole, np.zeros(6)],
                np.r_[whole + np.ceil(T), np.zeros(7)], np.r_[np.full(4, whole + np.ceil(T / 2)), np.zeros(4)]]
        base += [rng.integers(0, int(c + 2 * T) + 2, 8).astype(float) for _ in range(4)]
        worst = []
        for kw in ({}, {"clip": False}, {"test_noise": 0.5}):
            w = 0.0
            for x in base:
                P = exact_split(x, 1.0, theta, c, T, **kw)
                for i in range(8):
                    for step in (1.0, -1.0):
                        y = x.copy()
                        y[i] += step
                        if y[i] >= 0:
                            Q = exact_split(y, 1.0, theta, c, T, **kw)
                            w = max(w, max(abs(P[s] - Q[s]) for s in P))
            worst.append(w)
        rows.append([f"{theta:.3g}", c, T, *(f"{w:.6f}" for w in worst)])
        print(rows[-1], flush=True)
    return rows


def release(x, W, eps: float, variant: str, offset: int, rng) -> tuple[np.ndarray, int]:
    eps1, eps2 = RATIO * eps, (1 - RATIO) * eps
    starts = partition(x, eps1, eps2, variant, offset, rng)
    tree = _GreedyTree(bucket_gram(W, starts), 100, True)
    est = tree.least_squares(np.add.reduceat(x, starts), 1.0 / eps2, rng)
    sizes = np.diff(np.r_[starts, x.size])
    return np.repeat(est / sizes, sizes), starts.size


def reference_errors() -> dict:
    """(data, ε, workload) → the reference DAWA's measured error, from dawa_reference.md (same seeds, 3 runs)."""
    out = {}
    for line in (RESULTS / "dawa_reference.md").read_text().splitlines():
        p = [c.strip() for c in line.split("|")]
        if len(p) > 10 and p[3] in ("identity", "2,000 ranges"):
            out[(p[1], float(p[2]), p[3])] = float(p[4])
    return out


def heldout() -> dict:
    """UCI Adult's numeric columns in K equal-width bins (as ``benchmarks/dawa_adaptive_heldout.py``)."""
    from benchmarks.dawa_adaptive_heldout import histograms

    return histograms()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--exact", action="store_true", help="only the exact privacy check of *split* (k = 8)")
    args = parser.parse_args(argv)
    if args.exact:
        rows = exact_check()
        path = RESULTS / "dawa_spiketest.md"
        text = path.read_text().split("\n## Exact privacy")[0].rstrip()
        publish(path, text + "\n\n" + "\n\n".join([
            "## Exact privacy of *split* at k = 8 (ε₁ = 1)",
            "Command: `python -m benchmarks.dawa_spiketest --exact`. Worst |ln P[S | x] − ln P[S | x′]| over every "
            "partition S and the neighbours x ± e_i of nine structured and random whole-count x (module notes; "
            "at c = 1.5 a move from 1 to 2 records straddles the clip):",
            markdown_table(["θ", "clip c", "T", "split", "known-bad: PrivTree on x unclipped",
                            "known-bad: half the test's noise"], rows)]))
        return
    started = time.perf_counter()
    ref = reference_errors()
    pol = policy.dp(Domain.grid(K))
    loads = {"identity": workload.identity(K), "2,000 ranges": random_ranges(K, 2000, rng=7)}
    rows, ratios = [], {(w, v): [] for w in loads for v in VARIANTS}
    sets = [(name, dpbench(f"{name}.n4096").astype(float)) for name in DATASETS]
    for name, x in sets:
        for eps in EPSILONS:
            for wname, W in loads.items():
                truth = W @ x
                offset = histogram_offset(W, K)
                err, size = {}, {}
                for j, v in enumerate(VARIANTS):
                    rng = np.random.default_rng([EPSILONS.index(eps), DATASETS.index(name), len(wname), j])
                    runs = [release(x, W, eps, v, offset, rng) for _ in range(args.runs)]
                    err[v] = float(np.mean([np.mean((W @ e - truth) ** 2) for e, _ in runs]))
                    size[v] = float(np.mean([s for _, s in runs]))
                r = ref[(name, eps, wname)]
                for v in VARIANTS:
                    ratios[(wname, v)].append(err[v] / r)
                rows.append([name, eps, wname, f"{r:.4g}", *(f"{err[v]:.4g}" for v in VARIANTS),
                             *(f"{err[v] / r:.2f}" for v in VARIANTS), " / ".join(f"{size[v]:.0f}" for v in VARIANTS)])
                print(" | ".join(str(c) for c in rows[-1]), flush=True)
    summary = [[w, v, f"{np.median(ratios[(w, v)]):.2f}", f"{np.max(ratios[(w, v)]):.2f}",
                f"{np.sort(ratios[(w, v)])[-2]:.2f}"] for w in loads for v in VARIANTS]
    # held-out: UCI Adult, histogram, DAWA variant / Laplace
    W = loads["identity"]
    lap_rows = []
    for name, x in heldout().items():
        for eps in EPSILONS:
            lap = float(mechanisms.Laplace().expected_error(W, pol, eps))
            cells = []
            for j, v in enumerate(VARIANTS):
                rng = np.random.default_rng([EPSILONS.index(eps), 99, j])
                cells.append(np.mean([np.mean((release(x, W, eps, v, histogram_offset(W, K), rng)[0] - x) ** 2)
                                      for _ in range(args.runs)]) / lap)
            lap_rows.append([name, eps, int((x > 0).sum()), *(f"{c:.3f}" for c in cells)])
            print(" | ".join(str(c) for c in lap_rows[-1]), flush=True)
    T = [[eps, f"{spike_threshold(K, RATIO * eps / 2, (1 - RATIO) * eps):.4g}",
          f"{spike_threshold(K, RATIO * eps, (1 - RATIO) * eps):.4g}"] for eps in EPSILONS]
    publish(RESULTS / "dawa_spiketest.md", "\n\n".join([
        "# What-if: a per-cell spike test sharing ε₁ with PrivTree (issue 25, stop 36)",
        f"Command: `BLOWFISH_DATA=/work/shared/data OPENBLAS_NUM_THREADS=1 python -m benchmarks.dawa_spiketest "
        f"--runs {args.runs}` ({time.perf_counter() - started:.0f} s). DAWA's second stage with each partition, "
        "ε₁ = 0.25ε; mean squared error per query over the runs; *ref* is dpcomp_core's DAWA as tabled in "
        "`dawa_reference.md` (3 runs). Variants and the public threshold T: the module docstring.",
        "Public thresholds T (k = 4,096):",
        markdown_table(["ε", "T at ε_S = ε₁/2 (half)", "T at ε_S = ε₁ (test only)"], T),
        markdown_table(["data", "ε", "workload", "ref", *VARIANTS, *(f"{v} / ref" for v in VARIANTS),
                        "buckets " + " / ".join(VARIANTS)], rows),
        "## Summary (ratio to the reference)",
        markdown_table(["workload", "variant", "median", "worst", "second worst"], summary),
        "## Held-out: UCI Adult's numeric columns, histogram, DAWA with each partition / Laplace (exact) at ε",
        markdown_table(["column", "ε", "non-empty cells", *VARIANTS], lap_rows),
    ]))


if __name__ == "__main__":
    main()
