"""A 10⁶-row, 4,096-cell histogram release under dp against ``np.bincount`` (issue 28: ratio ≤ 3).

Run: ``nice -n 10 .venv/bin/python -m benchmarks.histogram_release`` (writes
benchmarks/results/histogram_release.md). Each line times, interleaved in one
process, ``df.blowfish.release("histogram", ...)`` end to end (checks, binning,
counting, choice, discrete Laplace noise, the Release) against
``np.bincount`` of codes computed beforehand (the bar), and against the numpy
a user would write for the same counts without privacy (codes by one
division, then ``np.bincount``). The ratio is of medians.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd

from blowfish_nb.planning import execute, plan_budget, prepare
from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "histogram_release.md"
ROWS, CELLS, REPEATS = 10**6, 4096, 41


def main() -> None:
    rng = np.random.default_rng(28)
    frames = {
        "float salary, bounds (0, 250,000)": (pd.DataFrame({"v": rng.uniform(0, 250_000, ROWS)}), (0, 250_000)),
        "float, bounds (0, 4,096,000)": (pd.DataFrame({"v": rng.uniform(0, 4_096_000, ROWS)}), (0, 4_096_000)),
        "int, unit bins (0, 4,096)": (pd.DataFrame({"v": rng.integers(0, CELLS, ROWS)}), (0, CELLS)),
    }
    rows = []
    for name, (df, (lo, hi)) in frames.items():
        v = df["v"].to_numpy()
        w = (hi - lo) / CELLS
        codes = np.minimum(((v - lo) / w).astype(np.intp), CELLS - 1)
        plan = prepare(df, "histogram", "v", bins=CELLS, bounds=(lo, hi), policy="dp")
        counts = plan.domain.histogram(df)
        budgeted = plan_budget(plan, epsilon=1.0)
        steps = {
            "bincount": lambda: np.bincount(codes, minlength=CELLS),
            "numpy": lambda: np.bincount(np.minimum(((v - lo) / w).astype(np.intp), CELLS - 1), minlength=CELLS),
            "release": lambda: df.blowfish.release("histogram", "v", bins=CELLS, bounds=(lo, hi), policy="dp",
                                                   epsilon=1.0),
            "count": lambda: plan.domain.histogram(df),
            "rest": lambda: (prepare(df, "histogram", "v", bins=CELLS, bounds=(lo, hi), policy="dp"),
                             execute(counts, plan_budget(plan, epsilon=1.0))),
        }
        times = {s: [] for s in steps}
        for f in steps.values():
            f()
        for group in (["bincount", "release", "count", "rest"], ["numpy"]):  # numpy's 8 MB temporaries apart:
            for _ in range(REPEATS):                                         # freeing them slows the next call
                for s in group:
                    t = time.perf_counter()
                    steps[s]()
                    times[s].append(1000 * (time.perf_counter() - t))
        for stat, fn in (("median", statistics.median), ("min", min)):
            med = {s: fn(t) for s, t in times.items()}
            ratio = med["release"] / med["bincount"]
            rows.append([name, stat, f"{med['bincount']:.2f}", f"{med['numpy']:.2f}", f"{med['count']:.2f}",
                         f"{med['rest']:.2f}", f"{med['release']:.2f}", f"{ratio:.2f}",
                         f"{med['release'] / med['numpy']:.2f}", "yes" if ratio <= 3 else "NO"])
    text = "\n".join([
        "# A 10⁶-row, 4,096-cell histogram release under dp",
        "",
        f"Command: `nice -n 10 .venv/bin/python -m benchmarks.histogram_release`. Medians of {REPEATS} interleaved "
        "runs in one process, ms, and their minima (on a shared, loaded machine a longer call is preempted more often, so the minima are the closer measure of the work itself). *bincount*: `np.bincount` of precomputed codes (the bar: release ≤ 3×). "
        "*numpy*: codes by one division, then `np.bincount` (what a user writes without privacy; timed in its own loop, "
        "since freeing its 8 MB temporaries slows whatever runs next). "
        "*count*: `Domain.histogram` alone. *rest*: everything but the count (checks, domain, choice, "
        "discrete Laplace noise on 4,096 cells, the Release).",
        "",
        f"Load average when run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.",
        "",
        markdown_table(["column", "statistic", "bincount", "numpy", "count", "rest", "release", "÷ bincount", "÷ numpy",
                        "≤ 3× bincount"], rows),
    ])
    publish(RESULTS, text)


if __name__ == "__main__":
    main()
