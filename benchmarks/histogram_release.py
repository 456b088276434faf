"""A 10⁶-row, 4,096-cell histogram release under dp against ``np.bincount`` (issue 28: ratio ≤ 3).

Run: ``nice -n 10 .venv/bin/python -m benchmarks.histogram_release [--against PATH] [--rounds R]`` (writes
benchmarks/results/histogram_release.md). Each measurement times, interleaved in one process,
``df.blowfish.release("histogram", ...)`` end to end (checks, binning, counting, choice, discrete Laplace noise,
the Release) against ``np.bincount`` of codes computed beforehand (the bar), and against the numpy a user would
write for the same counts without privacy (codes by one division, then ``np.bincount``). The ratios are of the
minima and of the medians, and the spread is that of the ratio paired call by call (release ÷ the bincount timed
just before it): its quartiles over all repeats.

``--against PATH``: the same measurement of another checkout (e.g. ``/work/main``) in the same run, ``R`` rounds
per side in fresh interpreters alternated A, B, A, B, … (so load drifts hit both alike); each interpreter imports
the package from its checkout and runs the code below, and every ratio is taken inside one interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results" / "histogram_release.md"
HERE = Path(__file__).resolve().parent.parent
REPEATS = 41

#: the measurement, run in an interpreter whose PYTHONPATH is the checkout measured (argv[1]: repeats)
CHILD = r"""
import json, sys, time
import numpy as np, pandas as pd
import blowfish_nb
from blowfish_nb.planning import execute, plan_budget, prepare
ROWS, CELLS, REPEATS = 10**6, 4096, int(sys.argv[1])
rng = np.random.default_rng(28)
frames = {
    "float salary, bounds (0, 250,000)": (pd.DataFrame({"v": rng.uniform(0, 250_000, ROWS)}), (0, 250_000)),
    "float, bounds (0, 4,096,000)": (pd.DataFrame({"v": rng.uniform(0, 4_096_000, ROWS)}), (0, 4_096_000)),
    "int, unit bins (0, 4,096)": (pd.DataFrame({"v": rng.integers(0, CELLS, ROWS)}), (0, CELLS)),
}
out = {}
for name, (df, (lo, hi)) in frames.items():
    v = df["v"].to_numpy()
    w = (hi - lo) / CELLS
    codes = np.minimum(((v - lo) / w).astype(np.intp), CELLS - 1)
    plan = prepare(df, "histogram", "v", bins=CELLS, bounds=(lo, hi), policy="dp")
    counts = plan.domain.histogram(df)
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
    out[name] = times
print(json.dumps({"version": blowfish_nb.__file__, "times": out}))
"""


#: the same releases and refusals on both sides of ``--against``: a digest per case of the answers' bits, the
#: expected error, the mechanism and the caller's generator state after the release (or the error raised), so a
#: faster tree is checked to release the same bits for the same generator and to refuse the same inputs alike
CHECK = r"""
import hashlib, json, sys, warnings
import numpy as np, pandas as pd
import blowfish_nb
warnings.simplefilter("ignore")
def digest(*parts):
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]
def outcome(f, g):
    try:
        r = f()
    except Exception as e:  # the refusal itself is what is compared
        return digest(type(e).__name__, str(e), g.bit_generator.state)
    a = r.answers
    return digest(a.to_numpy().tobytes(), list(a.index.astype(str)), a.name, r.mechanism, repr(r.expected_error),
                  r.epsilon, sorted(k for k in r.provenance), repr(r.provenance.get("sensitivity")),
                  repr(r.provenance.get("budget split")), g.bit_generator.state)
out = {}
for rows in (1_000, 100_000, 1_000_000):
    data = np.random.default_rng(rows)
    frames = {"float": (pd.DataFrame({"v": data.uniform(0, 250_000, rows)}), (0, 250_000)),
              "float-div": (pd.DataFrame({"v": data.uniform(0, 4_096_000, rows)}), (0, 4_096_000)),
              "int": (pd.DataFrame({"v": data.integers(0, 4096, rows)}), (0, 4096)),
              "sparse": (pd.DataFrame({"v": data.choice([5.0, 77_000.0, 249_999.0], rows)}), (0, 250_000))}
    for name, (df, bounds) in frames.items():
        for cells in (16, 1024, 4096):
            for policy in ("dp", "line"):
                for seed in range(4 if rows < 10**6 else 2):
                    g = np.random.default_rng(seed)
                    out[f"{rows} {name} {cells} {policy} {seed}"] = outcome(
                        lambda: df.blowfish.release("histogram", "v", bins=cells, bounds=bounds, policy=policy,
                                                    epsilon=[1.0, 0.1, 3.0, 0.01][seed], rng=g), g)
    g = np.random.default_rng(7)
    session = frames["float"][0].blowfish.session(10.0, bins={"v": 4096}, bounds={"v": (0, 250_000)},
                                                  reproducible=True)
    out[f"{rows} session"] = [outcome(lambda: session.release("histogram", "v", epsilon=1.0, rng=g), g)
                              for _ in range(3)]
g = np.random.default_rng(0)
bad = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "above": 250_001.0, "below": -1e-9, "upper edge": 250_000.0,
       "lower edge": 0.0, "int past top": 10**12}
for name, value in bad.items():
    v = np.random.default_rng(1).uniform(0, 250_000, 200_000)
    v[123_457] = value
    df = pd.DataFrame({"v": v if name != "int past top" else np.r_[np.arange(10), [value]]})
    out[f"refusal {name}"] = outcome(lambda: df.blowfish.release("histogram", "v", bins=4096, bounds=(0, 250_000),
                                                                policy="dp", epsilon=1.0, rng=g), g)
print(json.dumps(out))
"""


def fingerprints(root: Path) -> dict:
    """Case → digest of the release (or refusal) for the checkout at ``root`` (see :data:`CHECK`)."""
    env = dict(os.environ, PYTHONPATH=str(root))
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True, env=env,
                          cwd=root)
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(root: Path, repeats: int) -> dict:
    """One interpreter's times (ms per step and column) for the checkout at ``root``."""
    env = dict(os.environ, PYTHONPATH=str(root))
    done = subprocess.run([sys.executable, "-c", CHILD, str(repeats)], capture_output=True, text=True, check=True,
                          env=env, cwd=root)
    return json.loads(done.stdout.strip().splitlines()[-1])["times"]


def merged(runs: list[dict]) -> dict:
    """The rounds of one side joined: column → step → every time (rounds keep their call-by-call pairing)."""
    out: dict = {}
    for run in runs:
        for column, steps in run.items():
            for step, ts in steps.items():
                out.setdefault(column, {}).setdefault(step, []).extend(ts)
    return out


def rows_of(times: dict, side: str) -> list[list[str]]:
    rows = []
    for column, t in times.items():
        paired = np.asarray(t["release"]) / np.asarray(t["bincount"])
        q1, q2, q3 = np.percentile(paired, [25, 50, 75])
        for stat, fn in (("median", statistics.median), ("min", min)):
            m = {s: fn(ts) for s, ts in t.items()}
            ratio = m["release"] / m["bincount"]
            rows.append([side, column, stat, f"{m['bincount']:.2f}", f"{m['numpy']:.2f}", f"{m['count']:.2f}",
                         f"{m['rest']:.2f}", f"{m['release']:.2f}", f"{ratio:.2f}",
                         f"{q1:.2f} / {q2:.2f} / {q3:.2f}" if stat == "median" else "",
                         f"{m['release'] / m['numpy']:.2f}", "yes" if ratio <= 3 else "NO"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="PATH", help="another checkout, measured in the same run")
    parser.add_argument("--rounds", type=int, default=3, help="fresh interpreters per side (alternated)")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="interleaved calls per step and interpreter")
    args = parser.parse_args()
    sides = [("this checkout", HERE)] + ([(f"against {args.against}", Path(args.against).resolve())]
                                        if args.against else [])
    rounds = args.rounds if args.against else 1
    runs: dict[str, list] = {label: [] for label, _ in sides}
    load = [os.getloadavg()[0]]
    for _ in range(rounds):
        for label, root in sides:
            runs[label].append(measure(root, args.repeats))
    load.append(os.getloadavg()[0])
    check = ""
    if args.against:
        mine, theirs = fingerprints(HERE), fingerprints(sides[1][1])
        differ = sorted(c for c in mine if mine[c] != theirs.get(c)) + sorted(set(theirs) - set(mine))
        check = (f"Same bits: {len(mine) - len(differ)} of {len(mine)} cases (releases over 10³–10⁶ rows of floats, "
                 "integers and three-valued data, 16/1,024/4,096 bins, dp and line, seeded generators; a reproducible "
                 "session; NaN, ±inf, out-of-range, edge and past-the-top values) give the same answers, expected "
                 "error, mechanism, provenance figures and caller's generator state after the release (or the same "
                 "refusal) on both sides" + ("." if not differ else f"; **different: {', '.join(differ)}**."))
        print(check, file=sys.stderr)
    rows = [r for label, _ in sides for r in rows_of(merged(runs[label]), label)]
    command = ("nice -n 10 .venv/bin/python -m benchmarks.histogram_release"
               + (f" --against {args.against} --rounds {rounds}" if args.against else "")
               + (f" --repeats {args.repeats}" if args.repeats != REPEATS else ""))
    text = "\n".join([
        "# A 10⁶-row, 4,096-cell histogram release under dp",
        "",
        f"Command: `{command}`. {rounds} interpreter(s) per side"
        + (", alternated" if args.against else "") + f", each {args.repeats} interleaved runs, ms: medians and "
        "minima (on a shared, loaded machine a longer call is preempted more often, so the minima are the closer "
        "measure of the work itself). *bincount*: `np.bincount` of precomputed codes (the bar: release ≤ 3×). "
        "*numpy*: codes by one division, then `np.bincount` (what a user writes without privacy; timed in its own "
        "loop, since freeing its 8 MB temporaries slows whatever runs next). *count*: `Domain.histogram` alone. "
        "*rest*: everything but the count (checks, domain, choice, discrete Laplace noise on 4,096 cells, the "
        "Release). *paired ÷ bincount*: the quartiles of release ÷ the bincount timed just before it, call by call.",
        "",
        f"Load average: {load[0]:.1f} at the start, {load[1]:.1f} at the end, on {os.cpu_count()} cores.",
        "",
        *([check, ""] if check else []),
        markdown_table(["checkout", "column", "statistic", "bincount", "numpy", "count", "rest", "release",
                        "÷ bincount", "paired ÷ bincount (q1 / median / q3)", "÷ numpy", "≤ 3× bincount"], rows),
    ])
    publish(RESULTS, text)


if __name__ == "__main__":
    main()
