"""Are the losses of ``dawa_blowfish`` noise? Its losing cells again, with many paired runs (issue 25).

Run: ``.venv/bin/python -m benchmarks.dawa_blowfish_noise [--runs N] [--cells CASE:SET:EPS ...]`` (writes
benchmarks/results/dawa_blowfish_noise.md; about 10 minutes at 20 runs on a loaded shared machine).

``dawa_blowfish`` runs 2 seeded runs per cell (its default), and on 2,000 ranges over a few buckets a run's mean
squared error is a sum of a few squared noise terms: heavy-tailed, so two runs cannot tell a ratio of 0.7 from one
of 1.3. Here each cell (``ranges`` = 2,000 random ranges under G⁴, ``hist`` = the histogram under G¹) runs N times
with the same seeds as ``dawa_blowfish`` (run r from [data, ε, case, r]: runs 0 and 1 are that page's), every
column from the same seed (common random numbers), and reports per Blowfish column: the ratio of means to DP DAWA
at ε/2 with its standard error (delta method over the paired runs), the paired mean difference ± its standard error,
how many runs are at or below DP, and the conditional expected error given the runs' shared partitions
(``dawa_blowfish.conditional``: exact given P, so its only randomness is the partition's).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.ranges import random_ranges
from benchmarks._data import dpbench
from benchmarks._timing import markdown_table, publish
from benchmarks.dawa_blowfish import BLOWFISH, K, conditional
from benchmarks.dawa_reference import DATASETS, EPSILONS

RESULTS = Path(__file__).parent / "results" / "dawa_blowfish_noise.md"
#: the (column, cell) pairs above DP DAWA in dawa_blowfish.md (--runs 2 and --runs 1, stop 34)
LOSSES = ("ranges:NETTRACE:1.0", "ranges:MEDCOST:0.01", "ranges:MEDCOST:0.1", "ranges:INCOME:0.01")


def paired(v: np.ndarray, base: np.ndarray) -> tuple[float, float]:
    """Ratio of means v̄/b̄ and its standard error (delta method, paired runs)."""
    n, r = v.size, v.mean() / base.mean()
    c = np.cov(v, base, ddof=1)
    var = c[0, 0] / v.mean() ** 2 + c[1, 1] / base.mean() ** 2 - 2 * c[0, 1] / (v.mean() * base.mean())
    return float(r), float(r * np.sqrt(max(var, 0.0) / n))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cells", nargs="*", default=list(LOSSES))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    cases = {"hist": ("histogram, G¹", workload.identity(K), policy.line(Domain.grid(K))),
             "ranges": ("2,000 ranges, G⁴", random_ranges(K, 2000, rng=16), policy.threshold(Domain.grid(K), 4))}
    dp = policy.dp(Domain.grid(K))
    rows = []
    for cell in args.cells:
        key, name, eps = cell.split(":")
        eps = float(eps)
        case, W, pol = cases[key]
        x = dpbench(f"{name}.n4096").astype(float)
        truth = W @ x
        seed = [DATASETS.index(name), EPSILONS.index(eps), len(case)]

        def per_run(mech, p, e):
            return np.array([np.mean((mech.release(x, W, p, e, rng=np.random.default_rng([*seed, r])) - truth) ** 2)
                             for r in range(args.runs)])

        base = per_run(mechanisms.DAWA(), dp, eps / 2)
        c_dp, c_bf = conditional(x, W, truth, pol, eps, seed, args.runs, key == "ranges")
        for label, mech in BLOWFISH[case].items():
            if label.startswith("Adaptive"):
                continue
            v = per_run(mech, pol, eps)
            ratio, se = paired(v, base)
            d = v - base
            cond = next((c for lab, c in c_bf.items() if label.startswith(lab.split(" ")[0])), None)
            rows.append([case, name, eps, label, f"{base.mean():.4g}", f"{v.mean():.4g}", f"{ratio:.3f} ± {se:.3f}",
                         f"{d.mean():.4g} ± {d.std(ddof=1) / np.sqrt(args.runs):.3g}",
                         f"{int(np.sum(v <= base))}/{args.runs}",
                         "" if cond is None else f"{cond / c_dp:.3f}"])
            print(" | ".join(str(c) for c in rows[-1]), flush=True)
    publish(RESULTS, "\n\n".join([
        "# dawa_blowfish's losing cells, many paired runs (issue 25)",
        f"Command: `python -m benchmarks.dawa_blowfish_noise --runs {args.runs}` ({time.perf_counter() - started:.0f} s). "
        "Mean squared error per query; run r of every column from dawa_blowfish's seed [data, ε, case, r] (its "
        "runs 0 and 1 are the first two here). Ratio: Blowfish mean / DP DAWA (ε/2) mean, ± one standard error "
        "(delta method over the paired runs); difference: paired mean ± standard error; conditional: "
        "E[Blowfish | P] / E[DP DAWA | P] averaged over the same runs' partitions (exact given P).",
        markdown_table(["workload, policy", "data", "ε", "Blowfish column", "DP DAWA (ε/2)", "Blowfish",
                        "ratio ± SE", "difference ± SE", "runs at or below DP", "conditional ratio"], rows),
    ]))


if __name__ == "__main__":
    main()
