"""The privacy hunter over every shipped mechanism × policy, and the known-bad variants (issue 13 B).

Run: ``.venv/bin/python -m benchmarks.privacy_hunt [--workers 2]`` (writes benchmarks/results/privacy_hunt.md;
about 10 minutes on two cores).

For every mechanism and every policy where it is valid — dp, line, threshold(2) on k = 8 cells, the 3×3 grid
and a custom graph (a cycle, a chord, a path and one edge to ⊥) — :func:`blowfish_nb.analysis.hunt` searches
neighbouring pairs along every edge (both directions; add/remove at ⊥ edges) from the structured base family
and seeded random bases, chooses output events on a pilot run, and confirms the best candidates on fresh runs
with Clopper–Pearson bounds, Bonferroni over the confirmed candidates (95 % for all of them together).

* Answers of linear mechanisms (vectorised ``sample``): 60 pairs, 8,000 pilot and 50,000 fresh runs.
* Released partitions drawn in batches (DAWA's step 1 and the known-bad partitions called directly,
  ``DAWA.partitions``, ``Transformed.partitions``): 100 pairs, 10,000 pilot and 100,000 fresh runs, at the ε
  at which the partition step claims ε₁ = 1.
* Probes that run the mechanism once per draw (``PartitionFirst.partitions``, the answers of the data-dependent
  and consistent mechanisms): few pairs and runs (see ``SIZES``) — these rows catch gross leaks only.

Statistical design: fixed seeds (one per row), pilot and confirmation on separate draws, Clopper–Pearson lower
bounds on ln(P[E | x] / P[E | x′]) at level α/K per candidate (α = 0.05, K confirmed candidates). A
**VIOLATION** is a bound above the claimed ε: the mechanism provably (95 %) is not private for that pair. A
**pass** means no violation large enough for these run counts was found among the pairs and events searched;
it is evidence, not a proof — see the module notes of :mod:`blowfish_nb.analysis.hunt`.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.analysis.hunt import hunt, l1_partition_probe, partition_probe
from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "privacy_hunt.md"
LINE8 = Domain.grid(8)
POLICIES = {
    "dp": lambda: policy.dp(LINE8),
    "line": lambda: policy.line(LINE8),
    "threshold(2)": lambda: policy.threshold(LINE8, 2),
    "grid 3×3": lambda: policy.grid((3, 3), 1),
    "custom": lambda: policy.custom(LINE8, [(0, 1), (1, 2), (2, 3), (3, 0), (1, 5), (4, 5), (5, 6), (6, 7),
                                            (7, "⊥")]),
}
ALL = list(POLICIES)
THRESHOLD = ["line", "threshold(2)"]
SIZES = {
    "batched partition": dict(pairs=100, pilot=10_000, confirm=100_000, candidates=5),
    "vectorised answers": dict(pairs=60, pilot=8_000, confirm=50_000, candidates=5),
    # HThetaRanges.sample applies the transformed workload column by column (0.25 s per 4,000 draws)
    "slow sample": dict(pairs=16, pilot=3_000, confirm=15_000, candidates=3),
    "looped partition": dict(pairs=6, pilot=250, confirm=1_500, candidates=2),
    "looped answers": dict(pairs=3, pilot=80, confirm=500, candidates=1),
}
#: DAWA's step 1 at ε₁ = 1 with DAWA's default ratio 0.25: bucket cost 1/ε₂ = 1/3
BUCKET_COST = 1 / 3

# (label, kind, target, policies, range workload, size)
#   kind "l1": target names a partition function, hunted under dp; "answers"/"partition": target is a mechanism
JOBS = [
    ("floored l1_partition (fixture a)", "l1", "floored", ["dp"], False, "batched partition"),
    ("DPComp recipe (fixture b)", "l1", "dpcomp", ["dp"], False, "batched partition"),
    ("half-noise Laplace (fixture c)", "answers", "half", ALL, False, "vectorised answers"),
    ("no noise (fixture d)", "answers", "none", ALL, False, "vectorised answers"),
    ("l1_partition (DAWA step 1)", "l1", "shipped", ["dp"], False, "batched partition"),
    ("Laplace", "answers", mechanisms.Laplace(), ALL, False, "vectorised answers"),
    ("Ordered", "answers", mechanisms.Ordered(), ALL, True, "vectorised answers"),
    ("Ordered(consistent)", "answers", mechanisms.Ordered(consistent=True), ALL, True, "looped answers"),
    ("Hierarchical(2)", "answers", mechanisms.Hierarchical(2), ALL, True, "vectorised answers"),
    ("Privelet", "answers", mechanisms.Privelet(), ALL, True, "vectorised answers"),
    ("OrderedHierarchical", "answers", mechanisms.OrderedHierarchical(), THRESHOLD, True, "looped answers"),
    ("HThetaRanges", "answers", mechanisms.HThetaRanges(), THRESHOLD, True, "slow sample"),
    ("Transformed+Laplace", "answers", mechanisms.Transformed(), ALL, False, "vectorised answers"),
    ("Transformed+ConsistentEst", "answers", mechanisms.Transformed(inner="consistent"), ["line"], False,
     "looped answers"),
    ("DAWA", "partition", mechanisms.DAWA(), ALL, False, "batched partition"),
    ("Transformed+DAWA", "partition", mechanisms.Transformed(inner="dawa"), ALL, False, "batched partition"),
    ("PartitionFirst(dawa)", "partition", mechanisms.PartitionFirst("dawa"), ALL, False, "looped partition"),
    ("PartitionFirst(matching)", "partition", mechanisms.PartitionFirst("matching"), ALL, False,
     "looped partition"),
    ("DAWA", "answers", mechanisms.DAWA(), ALL, True, "looped answers"),
    ("Transformed+DAWA", "answers", mechanisms.Transformed(inner="dawa"), ALL, True, "looped answers"),
    ("Transformed+DAWA+Cons", "answers", mechanisms.Transformed(inner="dawa-consistent"), ["line"], True,
     "looped answers"),
    ("PartitionFirst(dawa)", "answers", mechanisms.PartitionFirst("dawa"), ALL, False, "looped answers"),
    ("PartitionFirst(matching)", "answers", mechanisms.PartitionFirst("matching"), ALL, False, "looped answers"),
    # issue 16: the optimised strategy (fitted in the task to the hunted workload and policy) and data-dependent
    # ranges over the buckets
    ("Optimized", "answers", "optimized", THRESHOLD + ["grid 3×3"], True, "vectorised answers"),
    ("PartitionFirst(dawa, ranges)", "answers", mechanisms.PartitionFirst("dawa", ranges=True), THRESHOLD, True,
     "looped answers"),
]


def run(task: tuple) -> dict:
    """One hunt (a process-pool task): the row of the table and its seconds."""
    label, kind, target, pol_name, ranges, size_name, seed = task
    pol = POLICIES[pol_name]()
    size = SIZES[size_name]
    t0 = time.perf_counter()
    if kind == "l1":
        from tests.fixtures import dpcomp_l1_partition, floored_l1_partition

        fn = {"floored": floored_l1_partition, "dpcomp": dpcomp_l1_partition, "shipped": None}[target]
        result = hunt(l1_partition_probe(fn, 1.0, BUCKET_COST), pol, rng=seed, **size)
        output = "partition"
    elif kind == "partition":
        epsilon = 1.0 / target.partition_epsilon(1.0)  # the partition step claims ε₁ = 1
        result = hunt(partition_probe(target, pol, epsilon), pol, rng=seed, **size)
        output = "partition"
    else:
        if target == "half":
            from tests.fixtures import HalfNoiseLaplace as target
            target = target()
        elif target == "none":
            from tests.fixtures import NoNoise
            target = NoNoise()
        k = pol.domain.size
        W = workload.prefix(k) if ranges and len(pol.domain.shape) == 1 else workload.identity(k)
        if target == "optimized":  # public inputs only: the workload and the policy
            target = mechanisms.Optimized.fit(W, pol, restarts=2, max_iter=100, rng=0)
        result = hunt(target, pol, 1.0, workload=W, rng=seed, **size)
        output = "answers"
    w = result.worst
    event = w["event"] if len(w["event"]) <= 90 else w["event"][:87] + "…"
    return {
        "row": [f"{label} ({output})", pol_name, f"{result.epsilon:g}", f"{result.lower_bound:.3f}", w["x"],
                w["edge"], event.replace("|", "\\|"),
                f"{result.pairs} pairs; {result.pilot:,} + {result.confirm:,} per database",
                "**VIOLATION**" if result.violation else "pass"],
        "violation": result.violation,
        "seconds": time.perf_counter() - t0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    args = parser.parse_args()
    tasks = []
    for label, kind, target, pols, ranges, size in JOBS:
        for pol_name in pols:
            tasks.append((label, kind, target, pol_name, ranges, size, 1000 + len(tasks)))
    rows: list = [None] * len(tasks)
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        # the slowest kinds first, so that the two processes finish together
        first = sorted(range(len(tasks)), key=lambda i: list(SIZES).index(tasks[i][5]) != 3)
        futures = {pool.submit(run, tasks[i]): i for i in first}
        for done, future in enumerate(as_completed(futures), 1):
            i = futures[future]
            rows[i] = future.result()
            print(f"[{done}/{len(tasks)}] {tasks[i][0]} ({tasks[i][1]}) under {tasks[i][3]}: "
                  f"{rows[i]['row'][3]} vs ε = {rows[i]['row'][2]} — {rows[i]['row'][-1]} "
                  f"({rows[i]['seconds']:.1f} s)", flush=True)
    elapsed = time.perf_counter() - start

    fixtures = [r for t, r in zip(tasks, rows) if "fixture" in t[0]]
    shipped = [r for t, r in zip(tasks, rows) if "fixture" not in t[0]]
    text = "\n\n".join([
        "# Privacy hunt: every mechanism × policy, and the known-bad variants",
        f"Command: `.venv/bin/python -m benchmarks.privacy_hunt` ({elapsed / 60:.1f} min with {args.workers} "
        "processes). Domain: k = 8 cells (dp, line, threshold(2), custom: the cycle 0–1–2–3, the chord 1–5, "
        "the path 4–5–6–7 and 7–⊥) and the 3×3 grid (grid policy G¹). Answers at ε = 1 (prefix workload for "
        "the range mechanisms on one axis, else the histogram); partitions at the ε at which the partition "
        "step claims ε₁ = 1; DAWA's step 1 and the fixtures' partitions called directly with ε₁ = 1 and "
        "bucket cost 1/3 (1/ε₂ for DAWA's default ratio 0.25), under dp (one record changes one count).",
        "**How to read it.** *worst lower bound*: the largest Clopper–Pearson lower confidence bound on "
        "ln(P[E | x]/P[E | x′]) over the confirmed candidates, all of them valid together with 95 % "
        "confidence (Bonferroni); *x* is the numerator's database, *edge* the step to x′ (u→v moves a "
        "record, ⊥→u adds one, u→⊥ removes one), *event* the output event; *runs*: pairs searched, pilot and "
        "fresh runs per database. A VIOLATION is a bound above the claimed ε. A pass is evidence, not "
        "proof: no violation was found that these run counts resolve, among the pairs and events searched. "
        "Rows with few runs (looped probes) catch gross leaks only. Sizes per probe kind: "
        + "; ".join(f"{name}: {s['pairs']} pairs, {s['pilot']:,} pilot + {s['confirm']:,} fresh runs, "
                    f"{s['candidates']} confirmed" for name, s in SIZES.items()) + ".",
        "## Known-bad variants (must be flagged)",
        markdown_table(HEADER, [r["row"] for r in fixtures]),
        f"Flagged: {sum(r['violation'] for r in fixtures)} of {len(fixtures)}.",
        "## Shipped mechanisms (must pass)",
        markdown_table(HEADER, [r["row"] for r in shipped]),
        f"Violations among shipped mechanisms: {sum(r['violation'] for r in shipped)} of {len(shipped)} hunts.",
    ])
    publish(RESULTS, text)


HEADER = ["mechanism", "policy", "claimed ε", "worst lower bound", "base histogram", "edge", "event", "runs",
          "verdict"]

if __name__ == "__main__":
    main()
