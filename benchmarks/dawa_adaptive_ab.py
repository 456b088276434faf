"""Adaptive's private choice before and after a change, side by side in one run (issue 25, stop 35).

Run: ``python -m benchmarks.dawa_adaptive_ab --against DIR [--runs N]`` (writes benchmarks/results/dawa_adaptive_ab.md;
a few minutes). DIR is the root of the baseline's source tree (e.g. ``git archive main | tar -x -C DIR``): its
``blowfish_nb`` computes the "before" choice in a subprocess, this tree's the "after".

The histogram cells of issue 25, each a pair (dependent, fallback) chosen by ``Adaptive`` with a share ρ of ε:

* **DP**: the seven DPBench sets (4,096 cells) × ε ∈ {0.01, 0.1, 1}, ``Adaptive()`` (DAWA or Laplace);
* **G¹**: the same under the line G¹, ``Adaptive(fallback=Transformed(), dependent=PartitionFirst())`` (as
  ``dawa_blowfish``), with DP DAWA at ε/2 beside it (the "Blowfish never loses to DP" reference);
* **tweets**: the 64 × 64 tweet grid under the grid G¹ (as ``dawa_grid``), ``Adaptive(dependent=PartitionFirst())``.

**How Adaptive's error is measured (Rao–Blackwellised, paired).** Adaptive draws its choice, then releases the
chosen mechanism at ε′ = (1 − ρ)ε with independent noise. So its expected error is p·E[dependent at ε′] +
(1 − p)·e_F(ε′), with p = P[statistic + Lap(b) < τ] in closed form from the version's own noise-free statistic, b
and τ, and e_F the fallback's analytic expected error (Laplace and Transformed are linear: exact). The dependent
release's error is the mean of ``--runs`` seeded releases at ε′ (seed [cell, r]), shared by both versions (ρ and
the releases are the same code in both): before and after differ only in p, and their difference
(p_after − p_before)·(D̄ − e_F) has standard error |p_after − p_before|·SE(D̄). An end-to-end check runs
``Adaptive.release`` of this tree ``--runs`` times per cell (its own seeds) beside the estimate.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from blowfish_nb import Domain, mechanisms, policy, workload
from benchmarks._data import dpbench
from benchmarks._timing import markdown_table, publish
from benchmarks.dawa_reference import DATASETS, EPSILONS

RESULTS = Path(__file__).parent / "results" / "dawa_adaptive_ab.md"
K = 4096

#: computes, for every cell, the baseline's (or this tree's) P[dependent] in closed form; run with either tree first
#: on the path. Knows stop 33's API (choice_statistic(x, cap)) and stop 35's (Adaptive.statistic).
PROBABILITIES = r'''
import json, math, sys
import numpy as np
from blowfish_nb.mechanisms import adaptive as A
sys.path.insert(0, sys.argv[1])
from benchmarks.dawa_adaptive_ab import cells
out = []
for label, x, pol, m, eps in cells():
    k = pol.domain.size
    rho = m.rho(k, eps)
    rest = (1 - rho) * eps
    if hasattr(m, "statistic"):
        stat, delta = m.statistic(x, pol, rest)
    else:
        stat, delta = A.choice_statistic(x, A.choice_cap(m.dependent, pol, rest))
    tau, b = m.threshold(pol, rest), delta / (rho * eps)
    z = (tau - stat) / b
    out.append({"cell": label, "p": 1 - 0.5 * math.exp(-z) if z > 0 else 0.5 * math.exp(z), "stat": stat / tau,
                "noise": b / tau})
print(json.dumps(out))
'''


def tweets() -> np.ndarray:
    """The tweets of ``twitter_256_256`` aggregated to 64 × 64, row-major (as ``dawa_grid``)."""
    T = dpbench("twitter_256_256").astype(float)
    idx = (np.arange(256) * 64) // 256
    tw = np.zeros((64, 64))
    np.add.at(tw, (idx[:, None], idx[None, :]), T)
    return tw.reshape(-1)


def cells():
    """(label, x, policy, Adaptive instance, ε) for every cell, in table order (both trees import this one)."""
    dp, line = policy.dp(Domain.grid(K)), policy.line(Domain.grid(K))
    grid = policy.grid(Domain.grid((64, 64)), 1)
    out = []
    for case, pol, m in (("DP", dp, mechanisms.Adaptive()),
                         ("G¹", line, mechanisms.Adaptive(fallback=mechanisms.Transformed(),
                                                          dependent=mechanisms.PartitionFirst()))):
        for name in DATASETS:
            x = dpbench(f"{name}.n4096").astype(float)
            out += [(f"{case} {name} {eps:g}", x, pol, m, eps) for eps in EPSILONS]
    x = tweets()
    out += [(f"tweets {eps:g}", x, grid, mechanisms.Adaptive(dependent=mechanisms.PartitionFirst()), eps)
            for eps in EPSILONS]
    return out


def probabilities(root: str) -> list[dict]:
    """P[dependent] per cell computed by the tree at ``root`` (its blowfish_nb first on the path)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    here = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-c", PROBABILITIES, here], env=env, cwd=str(root), capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="root of the baseline's source tree")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    before = probabilities(args.against)
    after = probabilities(str(Path(__file__).resolve().parents[1]))
    W = workload.identity(K)
    rows, over_laplace, worse, over_dp, total = [], [], [], [], 0
    for i, (label, x, pol, m, eps) in enumerate(cells()):
        assert before[i]["cell"] == after[i]["cell"] == label
        rest = (1 - m.rho(K, eps)) * eps
        dep = np.array([np.mean((m.dependent.release(x, W, pol, rest, rng=np.random.default_rng([i, r])) - x) ** 2)
                        for r in range(args.runs)])
        d_mean, d_se = float(dep.mean()), float(dep.std(ddof=1) / math.sqrt(args.runs))
        fb = float(m.fallback.expected_error(W, pol, rest))
        laplace = float(mechanisms.Laplace().expected_error(W, pol, eps))
        pb, pa = before[i]["p"], after[i]["p"]
        a_b, a_a = pb * d_mean + (1 - pb) * fb, pa * d_mean + (1 - pa) * fb
        diff_se = abs(pa - pb) * d_se
        e2e = np.mean([np.mean((m.release(x, W, pol, eps, rng=np.random.default_rng([i, r, 1])) - x) ** 2)
                       for r in range(args.runs)])
        extra = ""
        if label.startswith("G¹"):  # DP DAWA at ε/2, the "never loses to DP" reference
            dp = policy.dp(Domain.grid(K))
            base = np.mean([np.mean((mechanisms.DAWA().release(x, W, dp, eps / 2, rng=np.random.default_rng([i, r, 2]))
                                     - x) ** 2) for r in range(args.runs)])
            extra = f"{base:.4g}"
            if a_a > base:
                over_dp.append(label)
        total += 1
        if a_a > 1.1 * laplace:
            over_laplace.append(label)
        if a_a - a_b > 2 * diff_se and a_a > a_b * 1.01:
            worse.append(label)
        rows.append([label, f"{d_mean:.4g} ± {d_se:.2g}", f"{fb:.4g}", f"{laplace:.4g}", extra,
                     f"{before[i]['stat']:.3g} / {after[i]['stat']:.3g}", f"{after[i]['noise']:.2g}",
                     f"{pb:.3f} → {pa:.3f}", f"{a_b:.4g} ({a_b / laplace:.3f})", f"{a_a:.4g} ({a_a / laplace:.3f})",
                     f"{a_a - a_b:+.3g} ± {diff_se:.2g} ({a_a / a_b - 1:+.1%})", f"{e2e:.4g}"])
        print(" | ".join(rows[-1]), flush=True)
    header = ["cell (policy, data, ε)", "dependent at ε′ (mean ± SE)", "fallback at ε′ (exact)",
              "Laplace at ε (exact)", "DP DAWA at ε/2", "statistic/τ before / after", "noise b/τ after",
              "P[dependent] before → after", "Adaptive before (÷ Laplace)", "Adaptive after (÷ Laplace)",
              "after − before ± SE", "after, end to end (mean of runs)"]
    text = "\n\n".join([
        "# Adaptive's choice before and after (issue 25, stop 35)",
        f"Command: `python -m benchmarks.dawa_adaptive_ab --against DIR --runs {args.runs}` "
        f"({time.perf_counter() - started:.0f} s; DIR = the baseline's source tree). Mean squared error per cell; "
        "method in the module docstring (Adaptive's error = p·dependent + (1 − p)·fallback, p exact per version).",
        markdown_table(header, rows),
        f"**Adaptive (after) above 1.1 × Laplace** in {len(over_laplace)} of {total} cells"
        + (": " + ", ".join(over_laplace) + "." if over_laplace else "."),
        f"**After worse than before by more than 2 SE and 1%** in {len(worse)} of {total} cells"
        + (": " + ", ".join(worse) + "." if worse else "."),
        f"**Adaptive (after) under G¹ above DP DAWA at ε/2** in {len(over_dp)} of 21 cells"
        + (": " + ", ".join(over_dp) + "." if over_dp else "."),
    ])
    publish(RESULTS, text)


if __name__ == "__main__":
    main()
