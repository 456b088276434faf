"""Cold k = 10⁶ releases (issue 28: ≤ 1 s each) timed in fresh interpreters, two checkouts alternately.

Run: ``nice -n 10 /work/main/.venv/bin/python -m benchmarks.checkout_ab A_ROOT B_ROOT [REPEATS]`` from a
checkout's root. Each repeat starts one new interpreter per case and per checkout, in the order A, B, A, B, …
(so load drifts hit both alike); each child imports the package from its checkout (``PYTHONPATH``), builds
the inputs, then times its *first* release (nothing cached: plans, trees, Δ are built inside the timed call), in
wall-clock seconds and in the process's CPU seconds (``time.process_time``: on a machine shared by many, the wall
clock mostly measures the others' load; CPU time is what the release itself costs). Prints medians and minima per
case and checkout, and the B ÷ A ratio of the medians (paired per repeat too).

Cases (G^θ with θ = 16, or the line, on 10⁶ cells):

* ``threshold-3-ranges`` — ``release_counts`` of 3 ranges, full domain (no projection): the mechanism
  choice by expected error, then the release (accessor_scale's projection table, threshold row);
* ``line-3-ranges`` — the same under the line graph;
* ``ordered-hierarchical`` / ``htheta-privelet`` — the mechanism's ``release`` of all 10⁶ prefix sums.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time
import numpy as np, pandas as pd
case = sys.argv[1]
k, theta = 10**6, 16
if case.endswith("ranges"):
    from blowfish_nb.accessor import prepare, release_counts
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"v": rng.uniform(0, k, size=10**5)})
    ranges = [(0, 100_000), (250_000, 500_000), (100_000, 900_000)]
    pol = case.split("-")[0]
    kw = {"theta": theta} if pol == "threshold" else {}
    plan = prepare(df, "range", "v", bins=k, bounds=(0, k), ranges=ranges, policy=pol, **kw)
    counts = plan.domain.histogram(df)
    run = lambda: release_counts(counts, plan, epsilon=1.0, projection=False, rng=rng).mechanism
else:
    from blowfish_nb import Domain, mechanisms, policy, workload
    x = np.random.default_rng(28).poisson(3, k).astype(float)
    W, pol = workload.prefix(k), policy.threshold(Domain.grid(k), theta)
    mech = mechanisms.OrderedHierarchical() if case == "ordered-hierarchical" else mechanisms.HThetaRanges()
    run = lambda: (mech.release(x, W, pol, 1.0, rng=1), mech.name)[1]
t, c = time.perf_counter(), time.process_time()
name = run()
print(json.dumps({"s": time.perf_counter() - t, "cpu": time.process_time() - c, "mechanism": name}))
"""

CASES = ("threshold-3-ranges", "line-3-ranges", "ordered-hierarchical", "htheta-privelet")


def main() -> None:
    a_root, b_root = sys.argv[1], sys.argv[2]
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    times = {(c, r): [] for c in CASES for r in (a_root, b_root)}
    cpu = {(c, r): [] for c in CASES for r in (a_root, b_root)}
    names = {}
    for _ in range(repeats):
        for case in CASES:
            for root in (a_root, b_root):
                env = dict(os.environ, PYTHONPATH=root)
                out = subprocess.run([sys.executable, "-c", CHILD, case], capture_output=True, text=True,
                                     check=True, env=env, cwd=root)
                got = json.loads(out.stdout.strip().splitlines()[-1])
                times[case, root].append(got["s"])
                cpu[case, root].append(got["cpu"])
                names[case, root] = got["mechanism"]
    print(f"A = {a_root}, B = {b_root}; {repeats} alternating fresh interpreters per case; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| case | mechanism (A / B) | clock | A median s | A min s | B median s | B min s | B ÷ A (medians) "
          "| B ÷ A (median of pairs) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in CASES:
        for clock, table in (("wall", times), ("CPU", cpu)):
            a, b = table[case, a_root], table[case, b_root]
            pairs = statistics.median(y / x for x, y in zip(a, b))
            print(f"| {case} | {names[case, a_root]} / {names[case, b_root]} | {clock} | {statistics.median(a):.3f} | "
                  f"{min(a):.3f} | {statistics.median(b):.3f} | {min(b):.3f} | "
                  f"{statistics.median(b) / statistics.median(a):.2f} | {pairs:.2f} |")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")

if __name__ == "__main__":
    main()
