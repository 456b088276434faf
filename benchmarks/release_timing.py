"""Does a data-dependent release's time tell two data sets apart beyond what the release reveals? (issue 27)

A release may take a time that depends on the data only through what it
releases: a data-dependent partition's buckets are visible in the answers
(uniform expansion), so time may grow with the buckets, but two data sets
whose releases have the same distribution of partitions must not be told
apart by the clock. Each comparison here is such a pair: a histogram and the
same histogram turned half a domain around (cell i → i + k/2 mod k). The
dyadic trees of PrivTree map onto themselves under that shift, and the line
graph's matching too, so both data sets have the same distribution of
bucket counts (checked in the table) while every non-zero cell moves. Many
histogram releases of each are timed; the table gives the median times, the
bucket counts seen, and Welch's t of the mean times: |t| < 3 says the clock
does not tell the pair apart at this many runs.

In process (``--where local``) the clock is read around ``mechanism.release``:
the tightest measurement (no network noise), so a pass there bounds what an
analyst sees over HTTP. ``--where http`` times ``RemoteSession.release`` against
a service on 127.0.0.1 serving each data set (``bf.serve``), as an analyst would.

Run: ``.venv/bin/python -m benchmarks.release_timing [--where local|http] [--runs N]``
(writes ``results/release_timing_<where>.md``).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from blowfish_nb import Domain, mechanisms, policy, workload

K = 1024
MECHANISMS = {
    "DAWA": lambda: mechanisms.DAWA(),
    "PartitionFirst(dawa)": lambda: mechanisms.PartitionFirst("dawa"),
    "PartitionFirst(matching)": lambda: mechanisms.PartitionFirst("matching"),
}
POLICY = {"DAWA": "dp", "PartitionFirst(dawa)": "line", "PartitionFirst(matching)": "line",
          "control: DAWA + 1 ms when the first half holds more": "dp"}


class _LeakyDAWA(mechanisms.DAWA):
    """A known-bad control (in process only): DAWA that spins 1 ms more when the first half of the cells holds more
    records. The table must flag it, or the comparison is too weak to mean anything."""

    def _release(self, x, workload, policy, epsilon, rng):
        out = super()._release(x, workload, policy, epsilon, rng)
        if x[: x.size // 2].sum() > x[x.size // 2:].sum():
            end = time.perf_counter() + 1e-3
            while time.perf_counter() < end:
                pass
        return out


MECHANISMS["control: DAWA + 1 ms when the first half holds more"] = lambda: _LeakyDAWA()


def data_sets(k: int = K, n: int = 20_000) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Pairs (x, x turned by k/2) of public-shape histograms of n records on k cells: spikes, and a skewed dense one."""
    rng = np.random.default_rng(27)
    spikes = np.zeros(k)
    spikes[rng.choice(k // 2, 12, replace=False)] = rng.multinomial(n, np.full(12, 1 / 12))
    decay = np.exp(-np.arange(k) / (k / 8))
    dense = rng.multinomial(n, decay / decay.sum()).astype(float)
    return {name: (x, np.roll(x, k // 2)) for name, x in (("spikes", spikes), ("dense", dense))}


def buckets(answers: np.ndarray) -> int:
    """Buckets of a uniformly expanded histogram: runs of equal neighbouring answers."""
    a = np.asarray(answers, dtype=float)
    return int(1 + np.count_nonzero(~np.isclose(a[1:], a[:-1], rtol=0, atol=1e-9)))


def time_local(name: str, x: np.ndarray, eps: float, runs: int) -> list[tuple[float, int]]:
    mech = MECHANISMS[name]()
    pol = policy.dp(Domain.grid(K)) if POLICY[name] == "dp" else policy.line(Domain.grid(K))
    W = workload.identity(K)
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        ans = mech.release(x, W, pol, eps)
        out.append((time.perf_counter() - t0, buckets(ans)))
    return out


def time_http(name: str, x: np.ndarray, eps: float, runs: int) -> list[tuple[float, int]]:
    import blowfish_nb as bf

    frame = pd.DataFrame({"v": np.repeat(np.arange(K) + 0.5, x.astype(int))})
    folder = Path(tempfile.mkdtemp())
    key = Path(tempfile.mkdtemp()) / "ledger.key"
    srv = bf.serve(frame, bins={"v": K}, bounds={"v": (0, K)}, policy=POLICY[name], ledger=folder / "l.db",
                   key_file=key, create=True, accounts={"a": 1e9}, analysts={"ana": "a"}, rate=1e6, burst=10**6)
    try:
        remote = bf.connect(srv.url, srv.tokens["ana"])
        mech = {"DAWA": "dawa", "PartitionFirst(dawa)": "partition-first",
                "PartitionFirst(matching)": "partition-first-matching"}[name]
        out = []
        for _ in range(runs):
            t0 = time.perf_counter()
            rel = remote.release("histogram", "v", epsilon=eps, mechanism=mech)
            out.append((time.perf_counter() - t0, buckets(rel.answers.to_numpy())))
        remote.close()
        return out
    finally:
        srv.stop()


def compare(a: list[tuple[float, int]], b: list[tuple[float, int]]) -> dict:
    """Median times, bucket ranges and Welch's t of the mean times of the two data sets of a pair."""
    ta, tb = np.array([s[0] for s in a]), np.array([s[0] for s in b])
    ba, bb = [s[1] for s in a], [s[1] for s in b]
    se = np.sqrt(ta.var(ddof=1) / len(ta) + tb.var(ddof=1) / len(tb))
    return {"ms": (1e3 * float(np.median(ta)), 1e3 * float(np.median(tb))),
            "buckets": (f"{np.mean(ba):.0f} ({min(ba)}–{max(ba)})", f"{np.mean(bb):.0f} ({min(bb)}–{max(bb)})"),
            "diff ms": 1e3 * float(ta.mean() - tb.mean()), "t": float((ta.mean() - tb.mean()) / se) if se > 0 else 0.0}


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--where", choices=("local", "http"), default="local")
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--epsilon", type=float, default=1.0)
    args = ap.parse_args(argv)
    data = data_sets()
    run = time_local if args.where == "local" else time_http
    lines = [f"# Release time of a data set against the same data turned by k/2 ({args.where}, k = {K}, "
             f"ε = {args.epsilon}, {args.runs} runs each)", "",
             f"Command: `python -m benchmarks.release_timing --where {args.where} --runs {args.runs}`", "",
             "| mechanism | data | buckets x (mean, range) | buckets turned | median ms x | median ms turned "
             "| mean difference (ms) | Welch t | told apart (|t| ≥ 3) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in MECHANISMS:
        if name.startswith("control") and args.where != "local":
            continue
        for label, (x, turned) in data.items():
            run(name, x, args.epsilon, 2)  # warm-up: imports, caches of public plans
            run(name, turned, args.epsilon, 2)
            a, b = [], []
            for _ in range(args.runs):  # interleaved, so drifts of the shared machine hit both alike
                a += run(name, x, args.epsilon, 1)
                b += run(name, turned, args.epsilon, 1)
            r = compare(a, b)
            lines.append(f"| {name} | {label} | {r['buckets'][0]} | {r['buckets'][1]} | {r['ms'][0]:.1f} | "
                         f"{r['ms'][1]:.1f} | {r['diff ms']:+.2f} | {r['t']:+.2f} | {'yes' if abs(r['t']) >= 3 else 'no'} |")
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    out = Path(__file__).parent / "results" / f"release_timing_{args.where}.md"
    out.write_text(text)
    return text


if __name__ == "__main__":
    print(main())
