"""(α, β) → ε: cold, new-α and repeated translation times, against the draws before issue 16 in the same process.

Run: ``.venv/bin/python -m benchmarks.quote_speed`` (writes benchmarks/results/quote_speed.md; ``--quick`` leaves
out 4,096 cells; ``--interleaved`` only prints cold translations of a few cases with baseline and new runs
alternated, 9 pairs each, for a ratio less exposed to a changing machine load; ``--ordered-hierarchical`` only
prints the OrderedHierarchical table below).

For histogram / cumulative / 16 ranges under dp, line and threshold θ = 4 on k = 50, 1,000 and 4,096 cells
(a Catalog column of k bins on [0, 1); the mechanism is ``mechanism="auto"``'s choice for an accuracy request,
fixed before timing), :func:`blowfish_nb.accuracy.epsilon_for_accuracy` at α = 3√k, β = 0.05:

* **cold** — from an empty memory (``clear_memory``): closed form, or the ε = 1 round and the confirmation rounds;
* **new α** — α × 1.1 after a cold quote: the ε = 1 round is remembered per plan, the confirmations are not;
* **repeat** — the same (α, β) again: remembered, no draw;
* **Catalog.quote repeat** — the whole repeated quote as the service runs it (plan, labels, choice, ε).

The baseline is the same code with :data:`blowfish_nb.accuracy.CHUNK_VALUES` = 0: every round in chunks of 50
draws, one ``sample`` call each, as before issue 16 (same seeds, so its ε is the one HEAD returned). Times are
medians of ``REPEATS`` runs (cold: fresh memory each run); the machine's load is printed with the table, and only
ratios within this run mean anything.

A second table times OrderedHierarchical (``mechanism="auto"``'s choice for the cumulative histogram under dp at
4,096 cells) with its vectorised ``sample`` against the same mechanism drawing one release per draw (the default
loop of ``Mechanism``, what it did before issue 16), in the same process: a cold translation and one Monte-Carlo
round of 800 draws at ε = 1.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from blowfish_nb import accuracy, mechanisms
from blowfish_nb.mechanisms import Mechanism
from blowfish_nb.planning import Catalog, Run, pick_mechanism
from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "quote_speed.md"
REPEATS = 3
BETA = 0.05
POLICIES = {"dp": "dp", "line": "line", "threshold θ=4": ("threshold", 4)}
RANGES = [(i / 20, i / 20 + 0.2) for i in range(16)]
QUERIES = {"histogram": {}, "cumulative": {}, "16 ranges": {"ranges": RANGES}}


def ms(fn, repeats: int = REPEATS, before=None) -> tuple[float, object]:
    """Median milliseconds of ``fn()`` (``before()`` untimed before each run) and its last result."""
    times, out = [], None
    for _ in range(repeats):
        if before is not None:
            before()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times), out


def with_chunks(values: int, fn):
    """Run ``fn`` with ``CHUNK_VALUES = values`` (0: the baseline's chunks of 50 draws)."""
    saved = accuracy.CHUNK_VALUES
    accuracy.CHUNK_VALUES = values
    try:
        return fn()
    finally:
        accuracy.CHUNK_VALUES = saved


def measure(k: int, pol_name: str, query: str, new_values: int) -> list:
    df = pd.DataFrame({"v": np.linspace(0, 0.999, 200)})
    catalog = Catalog.from_data(df, {"v": k}, POLICIES[pol_name], {"v": (0, 1)})
    name = "range" if query == "16 ranges" else query
    plan = catalog.plan(name, "v", **QUERIES[query])
    run = Run(plan, True)
    mech, _ = pick_mechanism("auto", run, accuracy=True)
    alpha = 3 * np.sqrt(k)
    closed = mech.single_terms(run.workload, run.policy) is not None if hasattr(mech, "single_terms") else False

    def quote(a):
        return accuracy.epsilon_for_accuracy(mech, run.workload, run.policy, a, BETA)

    def timings(values):
        def cold_run():
            return with_chunks(values, lambda: quote(alpha))

        cold, eps = ms(cold_run, before=accuracy.clear_memory)
        new_alpha, _ = ms(lambda: with_chunks(values, lambda: quote(alpha * 1.1)),
                          before=lambda: (accuracy.clear_memory(), cold_run()))
        repeat, _ = ms(lambda: quote(alpha), repeats=20)
        return cold, new_alpha, repeat, eps

    base = timings(0)
    new = timings(new_values)
    accuracy.clear_memory()
    catalog.quote(name, "v", accuracy=(alpha, BETA), **QUERIES[query])
    whole, _ = ms(lambda: catalog.quote(name, "v", accuracy=(alpha, BETA), **QUERIES[query]))
    return [f"{k:,}", query, pol_name, mech.name, "closed form" if closed else "Monte Carlo",
            f"{base[0]:.1f}", f"{new[0]:.1f}", f"{new[0] / base[0]:.2f}",
            f"{base[1]:.1f}", f"{new[1]:.1f}", f"{new[1] / base[1]:.2f}",
            f"{new[2]:.2f}", f"{whole:.1f}", f"{new[3] / base[3]:.4f}"]


HEADER = ["cells", "query", "policy", "mechanism", "(α, β) → ε", "cold ms (baseline)", "cold ms", "cold ratio",
          "new α ms (baseline)", "new α ms", "new α ratio", "repeat ms", "Catalog.quote repeat ms",
          "ε / baseline ε"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="only k = 50 and 1,000")
    ap.add_argument("--interleaved", action="store_true", help="only the interleaved cold table (printed)")
    ap.add_argument("--ordered-hierarchical", action="store_true",
                    help="only the OrderedHierarchical table, vectorised against looped draws (printed)")
    args = ap.parse_args()
    if args.interleaved:
        print(interleaved())
        return
    if args.ordered_hierarchical:
        print(ordered_hierarchical())
        return
    sizes = (50, 1000) if args.quick else (50, 1000, 4096)
    load0 = os.getloadavg()
    started = time.perf_counter()
    rows = []
    cases = [(k, p, q) for k in sizes for p in POLICIES for q in QUERIES]
    for k, p, q in tqdm(cases, desc="quote speed"):
        rows.append(measure(k, p, q, accuracy.CHUNK_VALUES))
    load1 = os.getloadavg()
    text = "\n\n".join([
        "# (α, β) → ε: cold, new-α and repeated translation",
        f"Command: `.venv/bin/python -m benchmarks.quote_speed{' --quick' if args.quick else ''}`. "
        f"Machine: {os.cpu_count()} cores; load average (1, 5, 15 min) "
        f"{', '.join(f'{x:.2f}' for x in load0)} at the start and {', '.join(f'{x:.2f}' for x in load1)} at the "
        f"end; {time.perf_counter() - started:.0f} s in all. α = 3√k, β = {BETA}; medians of {REPEATS} runs "
        "(repeat: of 20). Baseline: the same process with `CHUNK_VALUES = 0` (rounds in chunks of 50 draws, the "
        "draws before issue 16); ratios are new / baseline. `Catalog.quote repeat` is the whole repeated quote "
        "(plan and labels, remembered choice, remembered ε).",
        markdown_table(HEADER, rows),
        "## OrderedHierarchical: vectorised draws against one release per draw",
        ordered_hierarchical(),
        NOTES,
    ])
    publish(RESULTS, text)


def interleaved(pairs: int = 9) -> str:
    """Cold translations with baseline and new runs alternated (a table, printed)."""
    from blowfish_nb import Domain, mechanisms, policy, workload

    cases = {"cumulative, dp, 50 cells (Laplace)": (mechanisms.Laplace(), workload.prefix(50), 50, "dp"),
             "cumulative, dp, 62 cells (Laplace)": (mechanisms.Laplace(), workload.prefix(62), 62, "dp"),
             "cumulative, dp, 1,000 cells (Hierarchical(2))": (mechanisms.Hierarchical(2), workload.prefix(1000), 1000,
                                                               "dp"),
             "histogram, line, 1,000 cells (Transformed)": (mechanisms.Transformed(), workload.identity(1000), 1000,
                                                            "line")}
    load0 = os.getloadavg()
    rows = []
    for name, (mech, W, k, pol_name) in cases.items():
        pol = policy.dp(Domain.grid(k)) if pol_name == "dp" else policy.line(Domain.grid(k))
        times = {0: [], accuracy.CHUNK_VALUES: []}
        for _ in range(pairs):
            for values in times:
                accuracy.clear_memory()
                t0 = time.perf_counter()
                with_chunks(values, lambda: accuracy.epsilon_for_accuracy(mech, W, pol, 3 * np.sqrt(k), BETA))
                times[values].append(time.perf_counter() - t0)
        base, new = (1e3 * statistics.median(t) for t in times.values())
        rows.append([name, f"{base:.1f}", f"{new:.1f}", f"{new / base:.2f}"])
    load1 = os.getloadavg()
    return (f"Cold (α, β) → ε, α = 3√k, β = {BETA}, baseline and new alternated, median of {pairs} each; load average "
            f"{load0[0]:.2f} → {load1[0]:.2f} on {os.cpu_count()} cores.\n\n"
            + markdown_table(["case", "baseline ms", "new ms", "ratio"], rows))


class _Looped(mechanisms.OrderedHierarchical):
    """OrderedHierarchical drawing its samples one ``_release`` at a time (``Mechanism``'s loop: before issue 16)."""

    def _sample(self, x, workload, policy, epsilon, size, rng):
        return Mechanism._sample(self, x, workload, policy, epsilon, size, rng)


def ordered_hierarchical(sizes=(1000, 4096), repeats: int = REPEATS) -> str:
    """Cold (α, β) → ε and one round of draws for the cumulative histogram under dp, vectorised and looped."""
    from blowfish_nb import Domain, policy, workload

    load0 = os.getloadavg()
    rows = []
    for k in sizes:
        W, pol, alpha = workload.prefix(k), policy.dp(Domain.grid(k)), 3 * np.sqrt(k)
        out = {}
        for label, mech in (("looped", _Looped()), ("vectorised", mechanisms.OrderedHierarchical())):
            cold, eps = ms(lambda: accuracy.epsilon_for_accuracy(mech, W, pol, alpha, BETA), repeats,
                           before=accuracy.clear_memory)
            one_round, _ = ms(lambda: accuracy.max_abs_errors(mech, W, pol, 1.0, accuracy.DRAWS, seed=1), repeats)
            out[label] = cold, one_round, eps
        (c0, r0, e0), (c1, r1, e1) = out["looped"], out["vectorised"]
        rows.append([f"{k:,}", f"{c0:.0f}", f"{c1:.0f}", f"{c0 / c1:.1f}", f"{r0:.0f}", f"{r1:.0f}", f"{r0 / r1:.1f}",
                     f"{e1 / e0:.4f}"])
    load1 = os.getloadavg()
    return (f"Cumulative histogram under dp, OrderedHierarchical(), α = 3√k, β = {BETA}; medians of {repeats} runs "
            f"(cold: fresh memory each run); round: `max_abs_errors` of {accuracy.DRAWS} draws at ε = 1. Load average "
            f"{load0[0]:.2f} → {load1[0]:.2f} on {os.cpu_count()} cores. The two draw different noise from the same "
            "seeds (a loop draws release by release), so their ε differ by Monte-Carlo error only.\n\n"
            + markdown_table(["cells", "cold ms (looped)", "cold ms (vectorised)", "speed-up", "round ms (looped)",
                              "round ms (vectorised)", "speed-up", "ε / looped ε"], rows))


NOTES = """## Reading it

* **Repeat**: the ε of a request is remembered per plan and (α, β) (`accuracy._EPSILONS`, per `memo_scope`), and
  each round's sorted draws per plan, round and ε (`accuracy._LAWS`): a repeated translation draws nothing.
* **Cold and new α**: a Monte-Carlo round is 800 releases of the noise on zero counts; one `sample` call per chunk.
  In chunks of 50 draws a round on 50 cells was 16 calls whose checks and set-up cost more than the noise; chunks
  of about 2¹⁸ noise values make it one call, and on 4,096 cells still 13 chunks for two threads.
* OrderedHierarchical's `sample` was not vectorised (one `_release` per draw, ~5–14 ms each at 4,096 cells), so a
  round cost 800 releases whatever the chunking. It now draws every release's S and H noise in two calls of the
  noise door and runs one tree least squares over every block of every draw; what remains is the noise itself
  (800 × 4,369 tree nodes at 4,096 cells) and one pass of least squares."""


if __name__ == "__main__":
    main()
