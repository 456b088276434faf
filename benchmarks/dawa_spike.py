"""The largest spike of each DPBench histogram: what PrivTree does with it, and what any private partition must pay.

Run: ``BLOWFISH_DATA=/work/shared/data .venv/bin/python -m benchmarks.dawa_spike [--reference-runs N]`` (writes
benchmarks/results/dawa_spike.md; seconds: every figure is in closed form, no noise is drawn). It reads the
reference DAWA's measured histogram error from ``dawa_reference.md`` (run that first).

Issue 25 asks whether DAWA's worst cell (MEDCOST at ε = 0.01, identity: cell 0 holds 2,782 of 9,415 records and
the private partition rarely isolates it) can reach 3× the non-private reference at all at DAWA's budget split
(ε₁ = Rε on the partition, ε₂ = (1 − R)ε on the buckets, R = 0.25), or whether a lower bound forbids it.

**The class.** Releases whose partition is ε₁-DP, whose cell estimates are the uniform expansion of bucket
estimates, and whose bucket totals are estimated by a linear unbiased estimator from Laplace(1/(ε₂w_v))
measurements w_v·n_v with weights summing to at most 1 along every root-to-leaf path (DAWA's second stage).

**The family.** x the data set, i* its largest cell, h = x_{i*}; x⁰ = x with cell i* emptied, M = max x⁰,
Z = the empty cells of x⁰ (i* among them), and x⁽ⁱ⁾ = x⁰ + h·e_i for i ∈ Z (x⁽ⁱ*⁾ = x). A partition that does
not know where the spike is must serve every member.

**The bound.** Let q_i = P[{i} is a bucket | x⁰] and m_i = P[{i} is not a bucket | x⁽ⁱ⁾].

1. On x⁽ⁱ⁾, if {i} is not a bucket, i shares a bucket B with some j ≠ i, the estimate is one constant on B
   whatever the noise, and Σ_{l∈B}(est − x_l)² ≥ min_c (h − c)² + (c − x⁰_j)² ≥ (h − M)²/2 =: H. So the total
   squared error on x⁽ⁱ⁾ is at least H·m_i.
2. On x⁰, a singleton bucket {i} is estimated with variance at least 2/ε₂² (Cauchy–Schwarz: a linear unbiased
   estimator Σ a_v y_v with Σ_{v∋i} a_v = 1 has variance Σ a_v²·2/(ε₂w_v)² ≥ 2/(ε₂² Σ_{v∋i} w_v²) ≥ 2/ε₂²). So
   the total squared error on x⁰ is at least c_s·Σ_{i∈Z} q_i, c_s = 2/ε₂².
3. The partition is ε₁-DP and x⁰ + t·e_i, t = 0..h, is a chain of neighbours, so P(t) = P[{i} is a bucket]
   obeys P(t + 1) ≤ e^{ε₁}P(t) and 1 − P(t) ≤ e^{ε₁}(1 − P(t + 1)). Unless q_i ≥ ½ or m_i ≥ ½, let t* be the
   first t with P(t) ≥ ½: q_i ≥ ½e^{−ε₁t*} and m_i ≥ ½e^{−ε₁(h − t* + 1)}, so q_i·m_i ≥ a := ¼e^{−ε₁(h + 1)}
   (the per-cell Laplace test, below, is within a factor of 1 of this product: its q·m = ¼e^{−ε₁h}).

If every member has total error ≤ E < H/2, each m_i ≤ E/H < ½, so q_i ≥ min(½, aH/E) and E ≥ c_s|Z|·min(½, aH/E):
**E ≥ min(H/2, max(√(c_s|Z|aH), …))** — precisely the least E with E ≥ H/2 or E ≥ c_s|Z|·min(½, aH/E), which the
script solves. It is a bound on the worst member of the family, for the partition's spike alone (the rest of the
data's structure costs more on top). Divided by k it is comparable with the mean squared error per cell.

**Columns.** *PrivTree P[isolated]*: the exact probability that DAWA's PrivTree partition (histogram law, bias from
level j₀ = ⌊D/2⌋) makes {i*} a bucket on x (the product of the split probabilities along i*'s path);
*PrivTree spike bias*: the exact expected within-bucket squared deviation of the bucket holding i*, per cell;
*per-cell test*: the minimax max(c_s|Z|·q, H·m) over thresholds T of the test x_i + Lap(1/ε₁) > T, per cell — a
partition step that spends all of ε₁ on finding spikes (ε₁-DP by parallel composition: one record moves one cell's
test), which shows the bound is nearly reached for the spike alone but leaves nothing for the rest of the
partition; *per-cell test at ε₁/2*: the same with half of ε₁ (what a hybrid that kept the other half for
PrivTree could at best do on the spike); *PrivTree's lone-cell level*: θ + (D − 1 − j₀)δ, the count at which a lone
cell's parent is split with probability ½; *lower bound*: the bound above, per cell; *reference*: dpcomp_core's
DAWA as measured in
``dawa_reference.md`` (identity), and 3× that, the issue's target.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from blowfish_nb.mechanisms.dawa import RATIO
from blowfish_nb.mechanisms.privtree import FANOUT, privtree_scale
from benchmarks._data import dpbench
from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results"
DATASETS = ("PATENT", "INCOME", "HEPTH", "SEARCHLOGS", "NETTRACE", "ADULTFRANK", "MEDCOST")
EPSILONS = (0.01, 0.1, 1.0)
K = 4096


def privtree_spike(x: np.ndarray, i: int, eps1: float, theta: float, offset: int) -> tuple[float, float]:
    """(P[{i} is a bucket], E[within-bucket squared deviation of i's bucket]) under DAWA's PrivTree, exactly.

    The bucket holding i is the first node on i's root-to-leaf path that is not split; each node's split is an
    independent Laplace draw (:mod:`blowfish_nb.mechanisms.privtree`: b = max(n − (d − j₀)₊δ, θ − δ),
    split iff b + Lap(λ) > θ).
    """
    lam = privtree_scale(eps1)
    delta = lam * math.log(FANOUT)
    lo, hi, reach, bias = 0, x.size, 1.0, 0.0
    d = 0
    while hi - lo > 1:
        node = x[lo:hi]
        n = float(node.sum())
        score = max(n - max(d - offset, 0) * delta, theta - delta)
        u = score - theta
        split = 1 - 0.5 * math.exp(-u / lam) if u > 0 else 0.5 * math.exp(u / lam)
        bias += reach * (1 - split) * float(np.sum((node - node.mean()) ** 2))
        reach *= split
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if i < mid else (mid, hi)
        d += 1
    return reach, bias


def lower_bound(cs: float, z: int, a: float, H: float) -> float:
    """The least E with E ≥ H/2 or E ≥ c_s·z·min(½, aH/E) (module notes)."""
    root = math.sqrt(cs * z * a * H)
    if root == 0:  # no empty cell to move the spike to, or a spike no higher than the rest: no family, no bound
        return 0.0
    interior = root if a * H / root <= 0.5 else cs * z / 2  # where min(½, aH/E) is aH/E, E = root
    return min(H / 2, interior)


def per_cell_test(cs: float, z: int, h: float, H: float, eps1: float) -> float:
    """min over T of max(c_s·z·q(T), H·m(T)) for the test x + Lap(1/ε₁) > T (a grid of T, fine enough)."""
    T = np.linspace(0.0, 3 * h + 10 / eps1, 20001)
    q = 0.5 * np.exp(-eps1 * T)
    tail = 0.5 * np.exp(-eps1 * np.abs(T - h))
    m = np.where(T <= h, tail, 1 - tail)
    return float(np.min(np.maximum(cs * z * q, H * m)))


def reference_errors() -> dict:
    """(data, ε) → the reference DAWA's measured identity error, from dawa_reference.md."""
    out = {}
    for line in (RESULTS / "dawa_reference.md").read_text().splitlines():
        p = [c.strip() for c in line.split("|")]
        if len(p) > 10 and p[3] == "identity":
            out[(p[1], float(p[2]))] = (float(p[4]), float(p[5]))
    return out


def measure_reference(x: np.ndarray, eps: float, runs: int) -> tuple[float, float]:
    """Mean and standard error of the reference DAWA's identity error over ``runs`` fresh runs (the port)."""
    import scipy.sparse as sp

    from benchmarks.dawa_reference import reference_partition, reference_release

    rng = np.random.default_rng(33)
    W = sp.identity(x.size, format="csr")
    e = np.array([np.mean((reference_release(x, W, eps, rng, reference_partition)[0] - x) ** 2) for _ in range(runs)])
    return float(e.mean()), float(e.std(ddof=1) / np.sqrt(runs))


def main(argv=None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-runs", type=int, default=0,
                        help="re-measure the reference where the bound is within 10× of 3 × its tabled error")
    args = parser.parse_args(argv)
    ref = reference_errors()
    remeasured = []
    offset = (K - 1).bit_length() // 2
    rows = []
    for name in DATASETS:
        x = dpbench(f"{name}.n4096").astype(float)
        i = int(np.argmax(x))
        h = float(x[i])
        x0 = x.copy()
        x0[i] = 0.0
        M = float(x0.max())
        z = int(np.sum(x0 == 0))
        H = max(h - M, 0.0) ** 2 / 2
        for eps in EPSILONS:
            eps1, eps2 = RATIO * eps, (1 - RATIO) * eps
            cs = 2 / eps2**2
            a = 0.25 * math.exp(-eps1 * (h + 1))
            p_iso, bias = privtree_spike(x, i, eps1, 1 / eps2, offset)
            lb = lower_bound(cs, z, a, H) / K
            test = per_cell_test(cs, z, h, H, eps1) / K
            half = per_cell_test(cs, z, h, H, eps1 / 2) / K  # a hybrid: half of ε₁ on the test, half on PrivTree
            lam = privtree_scale(eps1)
            level = 1 / eps2 + (int(math.log2(K)) - 1 - offset) * lam * math.log(FANOUT)
            r, ours = ref.get((name, eps), (float("nan"), float("nan")))
            if args.reference_runs and lb > 0.3 * r:
                mean, se = measure_reference(x, eps, args.reference_runs)
                remeasured.append([name, eps, f"{r:.4g}", f"{mean:.4g} ± {se:.2g}", f"{3 * mean:.4g}", f"{lb:.4g}",
                                   f"{lb / mean:.2f}"])
            rows.append([name, eps, f"{h:.0f} (cell {i})", f"{M:.0f}", z, f"{eps1 * h:.2f}", f"{math.log(K):.2f}",
                         f"{level:.4g}", f"{p_iso:.3f}", f"{bias / K:.4g}", f"{test:.4g}", f"{half:.4g}",
                         f"{lb:.4g}", f"{r:.4g}", f"{3 * r:.4g}",
                         f"{ours:.4g}", "**yes**" if lb > 3 * r else "no"])
    publish(RESULTS / "dawa_spike.md", "\n\n".join([
        "# The largest spike: PrivTree's isolation against a lower bound for any private partition (issue 25, stop 33)",
        f"Command: `BLOWFISH_DATA=/work/shared/data python -m benchmarks.dawa_spike"
        f"{' --reference-runs ' + str(args.reference_runs) if args.reference_runs else ''}` (closed form; reads the "
        "reference's and our DAWA's measured identity errors from `dawa_reference.md`). Definitions and the "
        "bound's derivation: the module docstring. All errors are total squared error / k (per cell, comparable "
        "with the mean squared error per query of the identity workload). ε₁ = 0.25ε, ε₂ = 0.75ε, k = 4,096, DP.",
        markdown_table(["data", "ε", "spike h", "M (max of the rest)", "|Z| (empty cells)", "ε₁h", "ln k",
                        "PrivTree's lone-cell level θ + (D − 1 − j₀)δ", "PrivTree P[isolated]", "PrivTree spike bias",
                        "per-cell test (minimax)", "per-cell test at ε₁/2",
                        "lower bound (any private partition)", "reference DAWA", "3 × reference", "ours: DAWA",
                        "bound > 3 × reference?"], rows),
        *([f"Re-measured with `--reference-runs {args.reference_runs}` (the reference's error is heavy-tailed: "
           "three runs are not enough where the bound comes near 3×; mean ± standard error, port, seed 33):",
           markdown_table(["data", "ε", "reference (table)", "reference (re-measured)", "3 × reference",
                           "lower bound", "bound / reference"], remeasured)] if remeasured else []),
    ]))


if __name__ == "__main__":
    main()
