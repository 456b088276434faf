"""The cumulative-under-dp quote from the tabulated quantiles (issue 28): cold time against a baseline tree, and ε
against the bisected ε* and the Monte-Carlo route.

Run (from a worktree root): ``OPENBLAS_NUM_THREADS=1 nice -n 10 PYTHONPATH=$PWD /work/main/.venv/bin/python -m
benchmarks.oh_quote_table --against /work/main`` (writes benchmarks/results/oh_quote_table.md).

* *Cold*: ``plan_budget(plan, accuracy=(α, β))`` for the cumulative query on k = 4,096 bins under dp, the first
  quote in a fresh interpreter (package imported, no strategy cache: ``BLOWFISH_NB_CACHE=off``), one BLAS
  thread; the baseline tree and this one alternate, ``REPEATS`` children each.
* *Accuracy*, in this process at k = 4,096 for three targets: the table's ε; the Monte-Carlo route's ε (the
  same code with the table switched off, seed 0: what the quote was before); ε*, the least ε whose coverage
  P(max |error| ≤ α) is 1 − β, by bisection on ``BIG`` draws of one seed (as benchmarks/oh_tail_bound.py); and
  the coverage at the table's ε on ``BIG`` fresh draws.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "oh_quote_table.md"
REPEATS = 5
BIG = 6000
K = 4096
TARGETS = [(50.0, 0.05), (30.0, 0.1), (80.0, 0.01)]

CHILD = r"""
import json, sys, time
import numpy as np, pandas as pd
from blowfish_nb.accessor import prepare
from blowfish_nb.planning import plan_budget
k, alpha, beta = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
plan = prepare(pd.DataFrame({"v": np.linspace(0, k - 1, 100)}), "cumulative", "v", bins=k, bounds=(0, k), policy="dp")
t = time.perf_counter()
b = plan_budget(plan, accuracy=(alpha, beta))
print(json.dumps({"ms": 1000 * (time.perf_counter() - t), "mechanism": b.mechanism.name, "epsilon": b.epsilon}))
"""


def _child(tree: str, k: int, alpha: float, beta: float) -> dict:
    env = dict(os.environ, PYTHONPATH=tree, OPENBLAS_NUM_THREADS="1", BLOWFISH_NB_CACHE="off")
    out = subprocess.run([sys.executable, "-c", CHILD, str(k), str(alpha), str(beta)], cwd=tree, env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def cold_rows(against: str) -> list[list[object]]:
    here = str(Path(__file__).resolve().parents[1])
    rows = []
    for k, (alpha, beta) in [(K, target) for target in TARGETS]:
        runs = {against: [], here: []}
        for _ in range(REPEATS):
            for tree in (against, here):
                runs[tree].append(_child(tree, k, alpha, beta))
        before, after = (statistics.median(r["ms"] for r in runs[t]) for t in (against, here))
        rows.append([f"k = {k:,}, ({alpha:g}, {beta:g})", f"{runs[against][0]['mechanism']} "
                     f"({runs[against][0]['epsilon']:.4f})", f"{before:.0f}",
                     f"{runs[here][0]['mechanism']} ({runs[here][0]['epsilon']:.4f})", f"{after:.0f}",
                     " / ".join(f"{r['ms']:.0f}" for r in runs[here]), f"{before / after:.1f}×"])
    return rows


def accuracy_rows() -> list[list[object]]:
    from blowfish_nb import Domain, accuracy, mechanisms, policy, workload
    from blowfish_nb.analysis import prefix_table

    m, W, pol = mechanisms.OrderedHierarchical(), workload.prefix(K), policy.dp(Domain.grid(K))
    rows = []
    for alpha, beta in TARGETS:
        accuracy.clear_memory()
        t = time.process_time()
        eps = prefix_table.tabulated_epsilon(m, W, pol, alpha, beta)
        lookup = time.process_time() - t
        real = accuracy.tabulated_epsilon
        accuracy.tabulated_epsilon = lambda *a: None
        try:
            accuracy.clear_memory()
            mc = accuracy.epsilon_for_accuracy(m, W, pol, alpha, beta)
        finally:
            accuracy.tabulated_epsilon = real
            accuracy.clear_memory()

        def coverage(e, seed=7):
            return float(np.mean(accuracy.max_abs_errors(m, W, pol, e, BIG, seed=seed) <= alpha))

        lo, hi = 0.85 * eps, 1.1 * eps
        for _ in range(9):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if coverage(mid) < 1 - beta else (lo, mid)
        star = hi
        cover = coverage(eps, seed=11)
        se = math.sqrt(beta * (1 - beta) / BIG)
        rows.append([f"({alpha:g}, {beta:g})", f"{star:.4f}", f"{eps:.4f}", f"{100 * (eps / star - 1):+.1f} %",
                     f"{cover:.4f} (1 − β = {1 - beta:g}, SE {se:.4f})", f"{mc:.4f}",
                     f"{100 * (mc / star - 1):+.1f} %", f"{lookup * 1e3:.1f} ms"])
    return rows


def main() -> None:
    against = sys.argv[sys.argv.index("--against") + 1] if "--against" in sys.argv else "/work/main"
    started = time.strftime("%H:%M", time.gmtime())
    cold = cold_rows(against)
    acc = accuracy_rows()
    text = "\n".join([
        "# The cumulative-under-dp quote from tabulated quantiles (branch `ohquote36`, issue 28)",
        "",
        "Command (from the worktree root): `OPENBLAS_NUM_THREADS=1 nice -n 10 PYTHONPATH=$PWD "
        f"/work/main/.venv/bin/python -m benchmarks.oh_quote_table --against {against}`, {started}–"
        f"{time.strftime('%H:%M', time.gmtime())} UTC, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} "
        "cores.",
        "",
        f"## Cold quotes (fresh interpreters, alternated, {REPEATS} each, `BLOWFISH_NB_CACHE=off`, one BLAS thread)",
        "",
        markdown_table(["quote (cumulative, dp)", "before: mechanism (ε)", "before ms (median)",
                        "after: mechanism (ε)", "after ms (median)", "after, each run", "before ÷ after"], cold),
        "",
        f"## ε against ε* at k = {K:,} (coverage on {BIG:,} fresh draws)",
        "",
        markdown_table(["(α, β)", "ε* (bisection)", "table ε", "table over ε*", "coverage at the table ε",
                        "Monte-Carlo ε (seed 0)", "Monte Carlo over ε*", "look-up CPU (warm process)"], acc),
    ])
    publish(RESULTS, text)


if __name__ == "__main__":
    main()
