"""DAWA with the end cells tested on their own against the tree alone, many runs a cell (issue 25, stop 40).

Run: ``BLOWFISH_DATA=/work/shared/data python -m benchmarks.dawa_ends [--runs N] [--range-runs M]
[--cells SET:EPS:WORKLOAD ...] [--out PATH]`` (writes benchmarks/results/dawa_ends.md, or ``--out``).

``mechanisms.DAWA()`` (PrivTree tests the two end cells of a 1-D histogram on their own, :mod:`blowfish_nb.mechanisms.
privtree`) against ``mechanisms.DAWA(ends=False)`` (the tree alone, main before stop 40), and ``mechanisms.Adaptive()``
(whose DAWA now has the end tests) against ``Adaptive(dependent=DAWA(ends=False))``, on the 7 DPBench sets at
k = 4,096 × ε ∈ {0.01, 0.1, 1} × {the histogram, 2,000 random ranges (seed 7)}, unbounded DP. Each column runs
``--runs`` times (``--range-runs`` on ranges) from its own seeded stream; mean squared error per query ± its standard
error, and the ratio with the delta method's standard error. The end tests spend no budget (parallel
composition), so what this measures is their price on data without an end spike (at most two buckets more, each
with probability ½e^{−θε₁}) against what they buy where an end cell holds a lone spike.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.ranges import random_ranges
from benchmarks._data import dpbench
from benchmarks._timing import markdown_table, publish
from benchmarks.dawa_reference import DATASETS, EPSILONS, K

RESULTS = Path(__file__).parent / "results" / "dawa_ends.md"


def _mean_se(values) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size))


def _ratio(a: tuple[float, float], b: tuple[float, float]) -> str:
    r = a[0] / b[0]
    return f"{r:.2f} ± {r * math.hypot(a[1] / a[0], b[1] / b[0]):.2f}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--range-runs", type=int, default=12)
    parser.add_argument("--cells", nargs="*", default=None, help="only these (set:ε:identity|ranges)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    wanted = None if args.cells is None else {(n, float(e), w) for n, e, w in (c.split(":") for c in args.cells)}
    started = time.perf_counter()
    pol = policy.dp(Domain.grid(K))
    loads = {"identity": workload.identity(K), "ranges": random_ranges(K, 2000, rng=7)}
    columns = {
        "DAWA, ends": mechanisms.DAWA(),
        "DAWA, tree alone": mechanisms.DAWA(ends=False),
        "Adaptive, ends": mechanisms.Adaptive(),
        "Adaptive, tree alone": mechanisms.Adaptive(dependent=mechanisms.DAWA(ends=False)),
    }
    rows, ratios = [], {"identity": [], "ranges": []}
    for name in DATASETS:
        x = dpbench(f"{name}.n4096").astype(float)
        for eps in EPSILONS:
            for wname, W in loads.items():
                if wanted is not None and (name, eps, wname) not in wanted:
                    continue
                truth = W @ x
                runs = args.runs if wname == "identity" else args.range_runs
                stats = {}
                for j, (col, m) in enumerate(columns.items()):
                    rng = np.random.default_rng([40, j, DATASETS.index(name), EPSILONS.index(eps), len(wname)])
                    stats[col] = _mean_se([np.mean((m.release(x, W, pol, eps, rng=rng) - truth) ** 2)
                                           for _ in range(runs)])
                d = stats["DAWA, ends"][0] / stats["DAWA, tree alone"][0]
                ratios[wname].append(d)
                rows.append([name, eps, wname, runs, f"{x[0]:.0f} / {x[-1]:.0f}",
                             *(f"{stats[c][0]:.4g} ± {stats[c][1]:.2g}" for c in columns),
                             _ratio(stats["DAWA, ends"], stats["DAWA, tree alone"]),
                             _ratio(stats["Adaptive, ends"], stats["Adaptive, tree alone"])])
                print(" | ".join(str(c) for c in rows[-1]), flush=True)
    summary = [[w, f"{np.median(r):.3f}", f"{min(r):.3f}", f"{max(r):.3f}", sum(v > 1.1 for v in r)]
               for w, r in ratios.items() if r]
    publish(args.out, "\n\n".join([
        "# DAWA's end cells tested on their own, against the tree alone (issue 25, stop 40)",
        f"Command: `BLOWFISH_DATA=/work/shared/data python -m benchmarks.dawa_ends --runs {args.runs} "
        f"--range-runs {args.range_runs}" + ("" if args.cells is None else " --cells " + " ".join(args.cells))
        + ("" if args.out == RESULTS else f" --out {args.out}")
        + f"` ({time.perf_counter() - started:.0f} s). Columns: the module notes; "
        "*end counts* are cells 0 and k − 1.",
        markdown_table(["data", "ε", "workload", "runs", "end counts", *(f"{c} (mean ± SE)" for c in columns),
                        "DAWA: ends / tree alone", "Adaptive: ends / tree alone"], rows),
        "## Summary: DAWA with ends ÷ the tree alone (ratio of the means)",
        markdown_table(["workload", "median", "least", "largest", "cells above 1.1"], summary),
    ]))


if __name__ == "__main__":
    main()
