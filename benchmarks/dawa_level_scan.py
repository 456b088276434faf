"""DAWA's histogram error at each public bias level j₀ of its PrivTree partition (issue 25, stop 40).

Run: ``BLOWFISH_DATA=/work/shared/data python -m benchmarks.dawa_level_scan [--runs N] [--cells SET:EPS ...]``
(writes benchmarks/results/dawa_level_scan.md).

``dawa_estimate`` on the histogram (identity workload, unbounded DP, the end cells tested apart as DAWA does on a
1-D domain) with PrivTree's depth bias starting at j₀ = 6 (⌊D/2⌋, :func:`~blowfish_nb.mechanisms.dawa.histogram_offset`
at k = 4,096) up to 10; mean squared error per cell ± its standard error over ``--runs`` runs, each level from its
own seeded stream, and Laplace's exact error. A what-if: which public level serves which (set, ε). The privacy of
the partition does not depend on j₀ (:mod:`blowfish_nb.mechanisms.privtree`); the question is whether one public
level, or a public function of ε, could serve every set — the table's answer is no when the best level moves
with the data's counts in units of the noise (sparse sets at ε = 0.01 want 6, the same sets at ε = 1 want 9–10).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.mechanisms.dawa import dawa_estimate
from benchmarks._data import dpbench
from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "dawa_level_scan.md"
K = 4096
LEVELS = (6, 7, 8, 9, 10)
CELLS = ("ADULTFRANK:1", "ADULTFRANK:0.1", "ADULTFRANK:0.01", "MEDCOST:1", "MEDCOST:0.01", "NETTRACE:1",
         "NETTRACE:0.01", "SEARCHLOGS:0.1", "INCOME:1", "HEPTH:1")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--cells", nargs="*", default=list(CELLS))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    W = sp.identity(K, format="csr")
    rows = []
    for cell in args.cells:
        name, eps = cell.split(":")
        eps = float(eps)
        x = dpbench(f"{name}.n4096").astype(float)
        lap = float(mechanisms.Laplace().expected_error(workload.identity(K), policy.dp(Domain.grid(K)), eps))
        out = []
        for j in LEVELS:
            rng = np.random.default_rng([40, j, len(name), int(round(eps * 1000))])
            errs = [np.mean((dawa_estimate(x, W, eps, rng, offset=j, ends=True) - x) ** 2) for _ in range(args.runs)]
            out.append((float(np.mean(errs)), float(np.std(errs, ddof=1) / math.sqrt(args.runs))))
        best = min(range(len(LEVELS)), key=lambda i: out[i][0])
        rows.append([name, eps, f"{lap:.4g}", *(f"{m:.4g} ± {s:.2g}" for m, s in out), LEVELS[best],
                     f"{out[best][0] / out[0][0]:.2f}"])
        print(" | ".join(str(c) for c in rows[-1]), flush=True)
    publish(RESULTS, "\n\n".join([
        "# DAWA's histogram error by PrivTree's bias level j₀ (issue 25, stop 40)",
        f"Command: `BLOWFISH_DATA=/work/shared/data python -m benchmarks.dawa_level_scan --runs {args.runs}"
        + ("" if list(args.cells) == list(CELLS) else " --cells " + " ".join(args.cells))
        + f"` ({time.perf_counter() - started:.0f} s). Mean squared error per cell ± SE; the module notes.",
        markdown_table(["data", "ε", "Laplace (exact)", *(f"j₀ = {j}" for j in LEVELS), "best j₀",
                        "best ÷ j₀ = 6"], rows),
    ]))


if __name__ == "__main__":
    main()
