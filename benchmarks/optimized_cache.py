"""The first "auto" quote that fits an optimised strategy, against the next quotes that reuse it (issue 24).

Run: ``OPENBLAS_NUM_THREADS=1 nice -n 10 .venv/bin/python -m benchmarks.optimized_cache``
(writes benchmarks/results/optimized_cache.md).

One process. For each case a quote is :func:`~blowfish_nb.analysis.selection.choose_mechanism`
with the default candidates ("auto"): every candidate's analytic error, ``Optimized()`` fitted with
``AUTO`` for the (workload, policy). *Cold*: empty memories (``accuracy.clear_memory()``), so the
fit runs. *Fit reused*: a quote of the same workload and policy at another ε — the choice is
computed again (its memory is keyed by ε) but the fitted strategy is remembered
(:func:`~blowfish_nb.analysis.selection.optimized_for`). Each is the median of ``REPEATS`` rounds
interleaved in the same process; the ratio cold / fit-reused is what the cache buys. The second
last column is the fit alone, as part of the cold quote.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "optimized_cache.md"
REPEATS = 5


def _cases():
    from blowfish_nb import Domain, policy, workload
    from blowfish_nb.ranges import random_ranges, ranges_2d

    return [
        ("2,000 boxes, 8×8", "grid", ranges_2d((8, 8), 2000, rng=0), policy.grid((8, 8), 1)),
        ("2,000 boxes, 16×16", "grid", ranges_2d((16, 16), 2000, rng=0), policy.grid((16, 16), 1)),
        ("2,000 boxes, 25×25", "attribute", ranges_2d((25, 25), 2000, rng=0),
         policy.attribute(Domain.grid((25, 25)))),
        ("2-way marginals, 6³", "attribute",
         workload.marginal((6, 6, 6), [0, 1]), policy.attribute(Domain.grid((6, 6, 6)))),
        ("2,000 ranges, k = 64", "G⁴", random_ranges(64, 2000, rng=0), policy.threshold(Domain.grid(64), 4)),
        ("2,000 ranges, k = 256", "dp", random_ranges(256, 2000, rng=0), policy.dp(Domain.grid(256))),
    ]


def main() -> None:
    from blowfish_nb import accuracy
    from blowfish_nb.analysis import selection
    from blowfish_nb.analysis.selection import choose_mechanism

    rows = []
    for name, pol_name, W, pol in _cases():
        cold, warm, fit = [], [], []
        for r in range(REPEATS):
            accuracy.clear_memory()
            t = time.perf_counter()
            chosen, _ = choose_mechanism(W, pol, 1.0)
            cold.append(time.perf_counter() - t)
            t = time.perf_counter()
            choose_mechanism(W, pol, 0.5 + 0.01 * r)  # another ε: a new choice, the remembered fit
            warm.append(time.perf_counter() - t)
            accuracy.clear_memory()
            t = time.perf_counter()
            selection.optimized_for(W, pol)
            fit.append(time.perf_counter() - t)
        c, w, f = statistics.median(cold), statistics.median(warm), statistics.median(fit)
        rows.append([name, pol_name, chosen.name, f"{1000 * c:.0f}", f"{1000 * w:.0f}", f"{1000 * f:.0f}",
                     f"{c / w:.1f}×"])
    accuracy.clear_memory()
    text = "\n".join([
        "# The optimised strategy's fit, paid once per (workload, policy)",
        "",
        "Command: `OPENBLAS_NUM_THREADS=1 nice -n 10 .venv/bin/python -m benchmarks.optimized_cache` "
        f"(one process, medians of {REPEATS} interleaved rounds; shared machine, so read the ratio).",
        "",
        markdown_table(["workload", "policy", "auto picks", "cold quote ms", "quote, fit reused ms",
                        "fit alone ms", "cold / fit reused"], rows),
    ])
    publish(RESULTS, text)


if __name__ == "__main__":
    main()
