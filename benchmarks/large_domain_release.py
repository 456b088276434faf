"""OrderedHierarchical and H^θ+Privelet releases of prefix sums at k = 10⁶ (issue 28: ≤ 1 s each).

Run: ``nice -n 10 .venv/bin/python -m benchmarks.large_domain_release [--against PATH] [--rounds R]`` (writes
benchmarks/results/large_domain_release.md). Each mechanism's ``release`` (plan, exact Δ, noise, inference) on 10⁶
cells under G^θ, θ = 16, timed in fresh interpreters beside a baseline measured alongside: the Laplace mechanism's
histogram release at the same k (the same noise door on 10⁶ cells). Each interpreter first times its *first*
H^θ+Privelet release (which builds H^θ's plan for (k, θ)), then :data:`REPEATS` interleaved rounds of the three
releases. The figures are medians over every interpreter's repeats (the machine is shared: a minimum only says
what an unloaded machine might do), with the ratios to the Laplace release taken inside each interpreter.

``--against PATH``: the same measurement of another checkout (e.g. ``/work/main``) in the same run, ``R``
interpreters per side alternated A, B, A, B, … (so load drifts hit both alike); each imports the package from its
own checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "large_domain_release.md"
HERE = Path(__file__).resolve().parent.parent
K, THETA, REPEATS = 10**6, 16, 5

#: the measurement, run in an interpreter whose PYTHONPATH is the checkout measured (argv[1]: repeats)
CHILD = r"""
import json, sys, time
import numpy as np
from blowfish_nb import Domain, mechanisms, policy, workload
K, THETA, REPEATS = 10**6, 16, int(sys.argv[1])
rng = np.random.default_rng(28)
x = rng.poisson(3, K).astype(float)
W, pol, I = workload.prefix(K), policy.threshold(Domain.grid(K), THETA), workload.identity(K)
runs = {"laplace": lambda: mechanisms.Laplace().release(x, I, pol, 1.0, rng=rng),
        "oh": lambda: mechanisms.OrderedHierarchical().release(x, W, pol, 1.0, rng=rng),
        "ht": lambda: mechanisms.HThetaRanges().release(x, W, pol, 1.0, rng=rng)}
out = {"cold": []}
t = time.perf_counter()
runs["ht"]()
out["cold"].append(time.perf_counter() - t)
for name in runs:
    out[name] = []
for _ in range(REPEATS):
    for name, f in runs.items():
        t = time.perf_counter()
        f()
        out[name].append(time.perf_counter() - t)
print(json.dumps(out))
"""

NAMES = {"laplace": "Laplace, histogram (baseline)", "oh": "OrderedHierarchical, prefix sums",
         "ht": "H^θ+Privelet, prefix sums", "cold": "H^θ+Privelet, first release in a fresh process"}


def measure(root: Path, repeats: int) -> dict:
    """One interpreter's times (seconds per release) for the checkout at ``root``."""
    env = dict(os.environ, PYTHONPATH=str(root))
    done = subprocess.run([sys.executable, "-c", CHILD, str(repeats)], capture_output=True, text=True, check=True,
                          env=env, cwd=root)
    return json.loads(done.stdout.strip().splitlines()[-1])


def rows_of(runs: list[dict], side: str) -> list[list[str]]:
    rows = []
    for key in ("laplace", "oh", "ht", "cold"):
        t = [v for r in runs for v in r[key]]
        ratio = [v / statistics.median(r["laplace"]) for r in runs for v in r[key]]
        q1, q2, q3 = statistics.quantiles(t, n=4) if len(t) > 1 else (t[0],) * 3
        rows.append([side, NAMES[key], f"{statistics.median(t):.3f}", f"{q1:.3f} / {q3:.3f}", f"{min(t):.3f}",
                     f"{statistics.median(ratio):.1f}", str(len(t)), "yes" if statistics.median(t) <= 1 else "NO"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="PATH", help="another checkout, measured in the same run")
    parser.add_argument("--rounds", type=int, default=3, help="fresh interpreters per side (alternated)")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="interleaved releases per interpreter")
    args = parser.parse_args()
    sides = [("this checkout", HERE)] + ([(f"against {args.against}", Path(args.against).resolve())]
                                        if args.against else [])
    runs: dict[str, list] = {label: [] for label, _ in sides}
    load = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for label, root in sides:
            runs[label].append(measure(root, args.repeats))
    load.append(os.getloadavg()[0])
    command = ("nice -n 10 .venv/bin/python -m benchmarks.large_domain_release"
               + (f" --against {args.against}" if args.against else "") + f" --rounds {args.rounds}"
               + (f" --repeats {args.repeats}" if args.repeats != REPEATS else ""))
    text = "\n".join([
        f"# Releases at k = {K:,} under G^θ, θ = {THETA}",
        "",
        f"Command: `{command}`. {args.rounds} fresh interpreter(s) per side"
        + (", alternated" if args.against else "") + f"; each times its first H^θ+Privelet release (the plan for "
        f"(k, θ) built in it), then {args.repeats} interleaved rounds of the three releases. Seconds: median, "
        "quartiles and minimum over every interpreter's runs; *÷ Laplace*: the median of each run over the "
        "Laplace release's median in its own interpreter. Issue 28's bar: ≤ 1 s (by the median).",
        "",
        f"Load average: {load[0]:.1f} at the start, {load[1]:.1f} at the end, on {os.cpu_count()} cores.",
        "",
        markdown_table(["checkout", "release", "median s", "q1 / q3 s", "min s", "÷ Laplace (median)", "runs",
                        "≤ 1 s"], [r for label, _ in sides for r in rows_of(runs[label], label)]),
    ])
    publish(RESULTS, text)


if __name__ == "__main__":
    main()
