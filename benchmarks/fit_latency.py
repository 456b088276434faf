"""Auto's ``Optimized`` fit where a user waits for it (issue 28), before and after, each in a fresh interpreter.

Run: ``OPENBLAS_NUM_THREADS=1 nice -n 10 .venv/bin/python -m benchmarks.fit_latency --against /path/to/baseline``
(writes benchmarks/results/fit_latency.md; ``--repeats N``, default 3). Cases:

* *canvas*: the explorer's canvas row in a plain interpreter — ``choose_mechanism`` on the quickstart's threshold
  θ = 3 graph over 50 cells plus one custom edge (cell 5 → 30), the cumulative query, ε = 1 (the full choice,
  which fits ``Optimized``; benchmarks/results/browser_latency.md).
* *range, line* / *range, threshold θ=4*: the cold quote ``plan_budget(plan, accuracy=(50, 0.05))`` of 64 ranges at
  k = 4,096 (benchmarks/quote_cold.py's case), which fits ``Optimized`` on the ranges' 128 blocks.

Every child runs with ``BLOWFISH_NB_CACHE=off`` (no strategy read back from disk), alternately baseline then this
tree; the table gives medians of wall and CPU time (``time.process_time``: one BLAS thread, so the CPU the choice
used, which a loaded machine's waiting does not inflate; under ``nice`` on a busy machine the wall time is mostly
waiting), their ratios and the fitted ``Optimized``'s exact expected squared error per query
from the choice's table (ε = 1 for the canvas, the quote's table otherwise), so a faster fit that fits worse shows.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "fit_latency.md"

CHILD = r"""
import json, sys, time
import numpy as np
case = sys.argv[1]
if case == "canvas":
    from blowfish_nb import Domain, policy, workload
    from blowfish_nb.analysis.selection import choose_mechanism
    d = Domain.grid(50)
    th = policy.threshold(d, 3)
    pol = policy.custom(d, [tuple(map(int, e)) for e in th.edges()] + [(5, 30)], bottom=th.has_bottom)
    W = workload.prefix(50)
    t, c = time.perf_counter(), time.process_time()
    best, table = choose_mechanism(W, pol, 1.0)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    eps = None
else:
    import pandas as pd
    from blowfish_nb.accessor import prepare
    from blowfish_nb.planning import plan_budget
    pol = case.split()[1]
    k = 4096
    df = pd.DataFrame({"v": np.linspace(0, k - 1, 100)})
    rng = np.random.default_rng(0)
    ranges = sorted((float(a), float(b)) for a, b in (np.sort(rng.integers(0, k, size=(64, 2)), axis=1) + [0, 1]))
    plan = prepare(df, "range", "v", bins=k, bounds=(0, k), policy=pol, theta=4 if pol == "threshold" else None,
                   ranges=ranges)
    t, c = time.perf_counter(), time.process_time()
    b = plan_budget(plan, accuracy=(50, 0.05))
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    best, table, eps = b.mechanism, b.table, b.epsilon
import blowfish_nb
print(json.dumps({"wall": wall, "cpu": cpu, "chosen": repr(best), "epsilon": eps,
                  "optimized": float(table.loc["Optimized", "expected_error"]),
                  "best_fixed": float(table.drop(index="Optimized")["expected_error"].min()),
                  "package": blowfish_nb.__file__}))
"""
CASES = ["canvas", "range line", "range threshold"]


def _child(case: str, tree: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=tree, BLOWFISH_NB_CACHE="off", OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", CHILD, case], capture_output=True, text=True, check=True, env=env,
                         cwd=tree)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    if not got["package"].startswith(tree):
        raise RuntimeError(f"the child imported {got['package']}, not the tree {tree}")
    return got


def main() -> None:
    args = sys.argv[1:]
    against = str(Path(args[args.index("--against") + 1]).resolve())
    repeats = int(args[args.index("--repeats") + 1]) if "--repeats" in args else 3
    here = str(Path(__file__).resolve().parent.parent)
    rows = []
    for case in CASES:
        got = {"before": [], "after": []}
        for _ in range(repeats):
            got["before"].append(_child(case, against))
            got["after"].append(_child(case, here))
        med = {k: statistics.median(1000 * r["wall"] for r in v) for k, v in got.items()}
        cpu = {k: statistics.median(1000 * r["cpu"] for r in v) for k, v in got.items()}
        b, a = got["before"][0], got["after"][0]
        rows.append([case, f"{med['before']:.0f}", f"{med['after']:.0f}", f"{med['before'] / med['after']:.2f}×",
                     f"{cpu['before']:.0f}", f"{cpu['after']:.0f}", f"{cpu['before'] / cpu['after']:.2f}×",
                     f"{b['optimized']:.4f}", f"{a['optimized']:.4f}", f"{b['best_fixed']:.4f}",
                     f"{b['chosen'][:40]} / {a['chosen'][:40]}",
                     "" if b["epsilon"] is None else f"{b['epsilon']:.4g} / {a['epsilon']:.4g}"])
    publish(RESULTS, "\n".join([
        "# Auto's Optimized fit where a user waits for it: before and after (issue 28)",
        "",
        f"Command: `OPENBLAS_NUM_THREADS=1 nice -n 10 .venv/bin/python -m benchmarks.fit_latency --against {against}` "
        f"({repeats} fresh interpreters per column, alternately, `BLOWFISH_NB_CACHE=off`; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores when it ended). CPU: `time.process_time` of the choice "
        "(one BLAS thread). *Optimized's error*: the fitted strategy's exact expected squared error per query in the "
        "choice's table.",
        "",
        markdown_table(["case", "before ms", "after ms", "before ÷ after", "before CPU ms", "after CPU ms",
                        "before ÷ after (CPU)", "Optimized's error, before", "Optimized's error, after",
                        "best fixed error", "chosen (before / after)", "ε (before / after)"], rows),
    ]))


if __name__ == "__main__":
    main()
