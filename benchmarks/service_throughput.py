"""The analyst service under load: releases per second and the latency a panel user sees, at k = 4,096.

Run: ``.venv/bin/python benchmarks/service_throughput.py`` (writes benchmarks/results/service_throughput.md;
``--quick`` for a smoke run with fewer requests).

The server runs in its own process (``python -m blowfish_nb.service.cli serve``, port 0), as in a real
deployment: client threads and server do not share a GIL. For each workload — the histogram and 16 ranges
of 256 bins over a 4,096-bin column, under unbounded DP (closed forms) and under the line policy (the
histogram's (α, β) → ε by Monte Carlo) — one client, then 20 concurrent clients (threads, each its own
RemoteSession and analyst token), run:

* **panel cycles**: quote a fresh accuracy (α, β) (a new α each time, as a user typing in the panel), then
  release that request — the quote and release latencies a panel user sees;
* **a release stream**: releases at a fresh ε each, back to back — releases per second.

The baseline is measured in the same process: an in-process :class:`blowfish_nb.Session` on the same data,
bins and policies, running the same cycles and stream one at a time. The ratios service / in-process are
what survives this shared, noisy machine; the absolute figures depend on its load (shown in the header).

A second table says where an in-process quote's time goes (``Catalog.quote``, under cProfile): building the
plan, projecting it, choosing the mechanism, and (α, β) → ε, for 62 and 4,096 cells. ``--breakdown`` prints
only that table; run from another checkout (``PYTHONPATH=<checkout>``) it measures that checkout's code.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._timing import markdown_table, publish  # noqa: E402
from blowfish_nb import connect, datasets  # noqa: E402
from blowfish_nb import accuracy, planning  # noqa: E402
from blowfish_nb.accounting import Session  # noqa: E402
from blowfish_nb.planning import Catalog  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "service_throughput.md"
K = 4096
BOUNDS = (0.0, 262144.0)  # 4,096 bins of width 64 over the salaries' public range
CLIENTS = 20
BETA = 0.05


def workloads() -> list[dict]:
    """The four workloads: query arguments (without the budget) and the α of the first panel cycle."""
    edges = np.linspace(*BOUNDS, 17)
    ranges = [(float(a), float(b)) for a, b in zip(edges[:-1], edges[1:])]
    rows = []
    for column, policy in (("salary_dp", "dp"), ("salary_line", "line")):
        rows.append({"name": f"histogram, {policy}", "alpha": 30.0,
                     "args": {"query": "histogram", "columns": column}})
        rows.append({"name": f"16 ranges, {policy}", "alpha": 300.0,
                     "args": {"query": "range", "columns": column, "ranges": ranges}})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: few requests, nothing written")
    parser.add_argument("--breakdown", action="store_true", help="only the in-process quote breakdown, printed")
    opts = parser.parse_args()
    if opts.breakdown:
        print(markdown_table(BREAKDOWN_HEADER, breakdown(repeats=5)))
        return
    # (panel cycles, stream releases) per client: one client, then each of the 20; the line histogram's quotes
    # are Monte Carlo (hundreds of ms each), so it runs fewer cycles
    plan = {"1": (16, 60), "20": (3, 10), "mc1": (6, 60), "mc20": (1, 10)}
    if opts.quick:
        plan = {"1": (2, 4), "20": (1, 1), "mc1": (1, 4), "mc20": (1, 1)}
    load_before = os.getloadavg()
    started = time.perf_counter()
    phases = breakdown(repeats=2 if opts.quick else 5)
    print(f"  quote breakdown: done ({time.perf_counter() - started:.0f} s)", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        data = _data(Path(tmp))
        accounts = ["solo", *(f"c{i:02d}" for i in range(CLIENTS))]
        server, url, tokens = _start_server(Path(tmp), accounts)
        try:
            local = Session(data, 1e9, bins={"salary_dp": K, "salary_line": K},
                            policy={"salary_dp": "dp", "salary_line": "line"},
                            bounds={"salary_dp": BOUNDS, "salary_line": BOUNDS})
            rows = []
            alphas = _Alphas()
            for w in workloads():
                mc = w["name"] == "histogram, line"
                cycles1, stream1 = plan["mc1" if mc else "1"]
                cycles20, stream20 = plan["mc20" if mc else "20"]
                base = _run_clients([local], w, cycles1, stream1, alphas)
                one = _run_clients([connect(url, tokens["solo"])], w, cycles1, stream1, alphas)
                many = _run_clients([connect(url, tokens[f"c{i:02d}"]) for i in range(CLIENTS)], w, cycles20,
                                    stream20, alphas)
                rows.append(_row(w["name"], "in-process Session", base, base))
                rows.append(_row(w["name"], "service, 1 client", one, base))
                rows.append(_row(w["name"], f"service, {CLIENTS} clients", many, base))
                print(f"  {w['name']}: done ({time.perf_counter() - started:.0f} s)", flush=True)
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
    load_after = os.getloadavg()
    text = _report(rows, phases, load_before, load_after, time.perf_counter() - started)
    if opts.quick:
        print(text)
    else:
        publish(RESULTS, text)


class _Alphas:
    """A fresh α for every panel cycle of the run (no quote is ever a repeat, in any process)."""

    def __init__(self):
        self._n = 0
        self._lock = threading.Lock()

    def next(self, base: float) -> float:
        with self._lock:
            self._n += 1
            return base * (1 + 0.0137 * self._n)


def _data(tmp: Path):
    """The embedded salaries with the salary column twice: one copy served under DP, one under the line."""
    df = datasets.salaries()
    df = df.assign(salary_dp=df["salary"], salary_line=df["salary"])[["salary_dp", "salary_line"]]
    df.to_csv(tmp / "salaries.csv", index=False)
    return df


def _start_server(tmp: Path, accounts: list[str]):
    """``blowfish-nb serve`` in its own process on a free port; returns (process, url, tokens)."""
    columns = "".join(f'[columns.{c}]\nbins = {K}\nbounds = [{BOUNDS[0]}, {BOUNDS[1]}]\npolicy = "{p}"\n\n'
                      for c, p in (("salary_dp", "dp"), ("salary_line", "line")))
    config = (f'[data]\npath = "salaries.csv"\n\n{columns}[ledger]\npath = "ledger.db"\n\n[accounts]\n'
              + "".join(f"{a} = 1e9\n" for a in accounts) + "\n[analysts]\n"
              + "".join(f'{a} = "{a}"\n' for a in accounts)
              # the per-analyst rate limit is lifted: this measures the server, not the limiter
              + '\n[server]\nhost = "127.0.0.1"\nport = 0\nrate = 100000\nburst = 100000\n')
    (tmp / "service.toml").write_text(config)
    key = Path(tempfile.mkdtemp()) / "ledger.key"  # the ledger's key, outside the ledger's folder
    subprocess.run([sys.executable, "-m", "blowfish_nb.service.cli", "init", "--config", str(tmp / "service.toml"),
                    "--key", str(key)], check=True, capture_output=True)
    proc = subprocess.Popen([sys.executable, "-m", "blowfish_nb.service.cli", "serve", str(tmp / "service.toml"),
                             "--key", str(key)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tokens, url = {}, None
    for line in proc.stdout:
        if line.startswith("token for new analyst "):
            name, token = line[len("token for new analyst "):].strip().split(": ", 1)
            tokens[name] = token
        elif " at http://" in line:
            url = line.strip().rsplit(" at ", 1)[1]
            break
    if url is None:
        proc.kill()
        raise SystemExit("the service did not start")
    threading.Thread(target=proc.stdout.read, daemon=True).start()  # keep draining its output
    return proc, url, tokens


def _run_clients(sessions, w: dict, cycles: int, stream: int, alphas: _Alphas) -> dict:
    """Every session runs its panel cycles then its stream, all sessions at once; latencies and releases/s."""
    quotes, releases, streamed = [], [], []
    go = threading.Barrier(len(sessions))

    def client(s):
        args = w["args"]
        go.wait()
        for _ in range(cycles):
            request = {**args, "accuracy": (alphas.next(w["alpha"]), BETA)}
            t0 = time.perf_counter()
            s.quote(**request)
            t1 = time.perf_counter()
            s.release(**request)
            t2 = time.perf_counter()
            quotes.append(t1 - t0)
            releases.append(t2 - t1)
        go.wait()
        start = time.perf_counter()
        for i in range(stream):
            s.release(**args, epsilon=0.01 * (1 + 1e-6 * i))
        streamed.append((stream, start, time.perf_counter()))

    with ThreadPoolExecutor(len(sessions)) as pool:
        list(pool.map(client, sessions))
    for s in sessions:
        if hasattr(s, "close"):
            s.close()
    count = sum(n for n, _, _ in streamed)
    wall = max(end for _, _, end in streamed) - min(start for _, start, _ in streamed)
    return {"quotes": quotes, "releases": releases, "per_second": count / wall}


def _row(name: str, who: str, r: dict, base: dict) -> list:
    def ms(values, p):
        return 1e3 * float(np.percentile(values, p))

    q50, r50 = ms(r["quotes"], 50), ms(r["releases"], 50)
    ratio = "" if r is base else (f"{q50 / ms(base['quotes'], 50):.2f} / {r50 / ms(base['releases'], 50):.2f} / "
                                  f"{r['per_second'] / base['per_second']:.2f}")
    return [name, who, f"{r['per_second']:.1f}", f"{q50:.1f}", f"{ms(r['quotes'], 95):.1f}", f"{r50:.1f}",
            f"{ms(r['releases'], 95):.1f}", len(r["quotes"]), ratio]


#: where a quote's time goes: the functions Catalog.quote calls, by phase
PHASES = {"plan": planning.Catalog.plan, "projection": planning.Run.__init__, "choice": planning.pick_mechanism,
          "(α, β) → ε": accuracy.epsilon_for_accuracy}
BREAKDOWN_HEADER = ["cells", "query", "policy", "budget", "quote p50 ms", *(f"{p} ms (cProfile)" for p in PHASES),
                    "mechanism"]


def breakdown(repeats: int = 5) -> list[list]:
    """In-process ``Catalog.quote`` per case: median wall time of ``repeats`` fresh requests (after one of the same
    shape), and the mean time in each phase under cProfile (which inflates Python-heavy phases a little)."""
    df = datasets.salaries()
    rows = []
    for k, column, bounds in ((62, "age", (18.0, 80.0)), (K, "salary", BOUNDS)):
        n = 31 if k == 62 else 16
        edges = np.linspace(*bounds, n + 1)
        for policy in ("dp", "line"):
            catalog = Catalog.from_data(df, {column: k}, policy, {column: bounds})
            for query, ranges in (("histogram", None), (f"{n} ranges", [(float(a), float(b))
                                                                       for a, b in zip(edges[:-1], edges[1:])])):
                for budget in ("ε", "(α, β)"):
                    alpha = 30.0 if ranges is None else 300.0

                    def quote(i, query=query, ranges=ranges, budget=budget, alpha=alpha, catalog=catalog):
                        fresh = {"epsilon": 0.1 * (1 + 0.01 * i)} if budget == "ε" else \
                            {"accuracy": (alpha * (1 + 0.0137 * i), BETA)}
                        return catalog.quote("histogram" if ranges is None else "range", column, ranges=ranges,
                                             **fresh)

                    b = quote(0)
                    wall = []
                    for i in range(1, repeats + 1):
                        t0 = time.perf_counter()
                        quote(i)
                        wall.append(time.perf_counter() - t0)
                    profiler = cProfile.Profile()
                    profiler.enable()
                    for i in range(repeats + 1, 2 * repeats + 1):
                        quote(i)
                    profiler.disable()
                    spent = _phase_times(pstats.Stats(profiler), repeats)
                    rows.append([f"{k:,}", query, policy, budget, f"{1e3 * statistics.median(wall):.1f}",
                                 *(f"{1e3 * spent[p]:.1f}" for p in PHASES), b.mechanism.name])
    return rows


def _phase_times(stats: pstats.Stats, calls: int) -> dict:
    """Mean cumulative seconds per call in each phase's function."""
    where = {(f.__code__.co_filename, f.__code__.co_firstlineno, f.__code__.co_name): p for p, f in PHASES.items()}
    out = dict.fromkeys(PHASES, 0.0)
    for key, (_cc, _nc, _tt, cumulative, _callers) in stats.stats.items():
        if key in where:
            out[where[key]] += cumulative / calls
    return out


def _report(rows, phases, before, after, seconds: float) -> str:
    import inspect

    from blowfish_nb.service import core

    scoped = "memo_scope" in inspect.getsource(core)
    header = ["workload (k = 4,096)", "who", "releases/s", "quote p50 ms", "quote p95 ms", "release p50 ms",
              "release p95 ms", "panel cycles", "service / in-process (quote p50 / release p50 / rel/s)"]
    return "\n".join([
        "# The analyst service at k = 4,096: releases per second and a panel user's latency",
        "",
        "`.venv/bin/python benchmarks/service_throughput.py`",
        "",
        f"Machine: {os.cpu_count()} cores; load average (1, 5, 15 min) {before[0]:.2f}, {before[1]:.2f}, "
        f"{before[2]:.2f} at the start and {after[0]:.2f}, {after[1]:.2f}, {after[2]:.2f} at the end; "
        f"{seconds:.0f} s in all. The server is its own process (`blowfish-nb serve`, SQLite ledger, rate limit "
        "lifted); the clients are threads of this process, each with its own RemoteSession and token.",
        "",
        "A **panel cycle** quotes a fresh (α, β = 0.05) — a new α every time, so no quote is ever remembered "
        "whole — then releases that request: its latencies are what a panel user waits for (client-side, over "
        "HTTP, answers decoded into a Release). **Releases/s** is a stream of releases at a fresh ε each, back to "
        f"back, per client; with {CLIENTS} clients, all of theirs over the wall time. The in-process row is a "
        "`Session` in this process running the same cycles and stream; the last column divides the service's "
        "figures by its.",
        "",
        ("The service keeps each analyst's quote memory apart (`memo_scope`): no analyst's quote is faster for "
         "another's." if scoped else "The service here shares one quote memory among its analysts (it does not "
         "enter a `memo_scope` per analyst yet): a query's choice and its ε = 1 Monte-Carlo round, computed for "
         "one client, serve all 20."),
        "",
        markdown_table(header, rows),
        "",
        "## Where an in-process quote's time goes (`Catalog.quote`, fresh requests after one of the same shape)",
        "",
        markdown_table(BREAKDOWN_HEADER, phases),
        "",
        "Targets (issue 14): quote ≤ 50 ms and release ≤ 100 ms median on this machine. Under DP every quote is a "
        "closed form. Under the line policy the histogram's answers share noise terms, so (α, β) → ε is Monte "
        "Carlo: every fresh α draws 800 releases of noise on 4,096 cells per confirmation round "
        "(blowfish_nb/accuracy.py), a few rounds a quote; the round at ε = 1 is remembered per query.",
    ])


if __name__ == "__main__":
    main()
