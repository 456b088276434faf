"""Does a data-dependent release's time tell two data sets apart beyond what the release reveals? (issue 27)

A release may take a time that depends on the data only through what it
releases: a data-dependent partition's buckets are visible in the answers
(uniform expansion), so time may grow with the number of buckets, but two
data sets that give partitions of the same size must not be told apart by
the clock. For each mechanism and each of two data sets of the same size
(sparse spikes and a dense, smooth histogram), many histogram releases are
timed and their buckets counted from the answers (equal neighbours inside a
bucket). The times of both data sets are regressed together on the bucket
count; the table gives the mean residual per data set and Welch's t of their
difference: |t| < 3 says the clock, once the released bucket count is known,
does not separate the data sets at this many runs.

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
POLICY = {"DAWA": "dp", "PartitionFirst(dawa)": "line", "PartitionFirst(matching)": "line"}


def data_sets(k: int = K, n: int = 20_000) -> dict[str, np.ndarray]:
    """Two public-shape histograms of n records on k cells: a few spikes, and a smooth dense one."""
    rng = np.random.default_rng(27)
    sparse = np.zeros(k)
    sparse[rng.choice(k, 12, replace=False)] = rng.multinomial(n, np.full(12, 1 / 12))
    smooth = rng.multinomial(n, np.exp(-0.5 * ((np.arange(k) - k / 2) / (k / 6)) ** 2) / np.exp(
        -0.5 * ((np.arange(k) - k / 2) / (k / 6)) ** 2).sum())
    return {"spikes": sparse.astype(float), "smooth": smooth.astype(float)}


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


def compare(samples: dict[str, list[tuple[float, int]]]) -> dict:
    """Pooled regression of time on buckets; mean residual per data set and Welch's t of the difference."""
    t = np.concatenate([[s[0] for s in v] for v in samples.values()])
    b = np.concatenate([[s[1] for s in v] for v in samples.values()]).astype(float)
    X = np.column_stack([np.ones_like(b), b])
    coef = np.linalg.lstsq(X, t, rcond=None)[0]
    res = t - X @ coef
    groups, start = {}, 0
    for name, v in samples.items():
        groups[name] = res[start:start + len(v)]
        start += len(v)
    (a, ra), (c, rc) = groups.items()
    se = np.sqrt(ra.var(ddof=1) / len(ra) + rc.var(ddof=1) / len(rc))
    return {"slope ms/bucket": 1e3 * coef[1], f"residual {a} ms": 1e3 * ra.mean(), f"residual {c} ms": 1e3 * rc.mean(),
            "t": (ra.mean() - rc.mean()) / se if se > 0 else 0.0,
            "buckets": {n: (int(np.min([s[1] for s in v])), int(np.max([s[1] for s in v]))) for n, v in samples.items()},
            "time ms": {n: 1e3 * float(np.median([s[0] for s in v])) for n, v in samples.items()}}


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--where", choices=("local", "http"), default="local")
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--epsilon", type=float, default=1.0)
    args = ap.parse_args(argv)
    data = data_sets()
    run = time_local if args.where == "local" else time_http
    lines = [f"# Release time against released buckets ({args.where}, k = {K}, ε = {args.epsilon}, "
             f"{args.runs} runs per data set)", "",
             f"Command: `python -m benchmarks.release_timing --where {args.where} --runs {args.runs}`", "",
             "| mechanism | buckets spikes | buckets smooth | median ms spikes | median ms smooth | slope ms/bucket "
             "| residual spikes − smooth (ms) | Welch t | told apart (|t| ≥ 3) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in MECHANISMS:
        for label in data:  # warm-up: imports, caches of public plans
            run(name, data[label], args.epsilon, 2)
        samples = {label: run(name, x, args.epsilon, args.runs) for label, x in data.items()}
        r = compare(samples)
        diff = r["residual spikes ms"] - r["residual smooth ms"]
        lines.append(f"| {name} | {r['buckets']['spikes'][0]}–{r['buckets']['spikes'][1]} | "
                     f"{r['buckets']['smooth'][0]}–{r['buckets']['smooth'][1]} | {r['time ms']['spikes']:.1f} | "
                     f"{r['time ms']['smooth']:.1f} | {r['slope ms/bucket']:.4f} | {diff:+.2f} | {r['t']:+.2f} | "
                     f"{'yes' if abs(r['t']) >= 3 else 'no'} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    out = Path(__file__).parent / "results" / f"release_timing_{args.where}.md"
    out.write_text(text)
    return text


if __name__ == "__main__":
    print(main())
