"""The first hour: the README's session snippet and mechanism choice on 2-D domains of 3,100 and 40,000 cells.

Run: ``.venv/bin/python -m benchmarks.first_hour`` (writes benchmarks/results/first_hour.md).

Issue 17 item 3: ``s.release("histogram", ["salary", "age"], epsilon=0.3)`` on the
README's session (salary × age, 50 × 62 = 3,100 cells) ran 218 s of dense
least squares. Target: ≤ 1 s for each row. Every time is the median of
repeated runs in this process, printed in seconds and as a ratio to a baseline
measured alongside: **one** ``Domain.histogram`` **of the same data over the
same domain** (the one pass over the rows every release makes). Choice times
use a fresh plan per run (prepare, then ``plan_budget``), so no cached
spanning tree is reused.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._timing import markdown_table, median_seconds, publish
from blowfish_nb import Domain, datasets, policy, workload
from blowfish_nb.accessor import plan_budget, prepare
from blowfish_nb.analysis import choose_mechanism
from blowfish_nb.mechanisms import MatrixMechanism

RESULTS = Path(__file__).parent / "results" / "first_hour.md"
TARGET = 1.0
EPSILON = 0.3


def salaries_case():
    df = datasets.salaries()
    bins = {"salary": 50, "age": 62}
    ranges = [((0, 40_000), (18, 30)), ((40_000, 250_000), (30, 80)), ((20_000, 90_000), (25, 60))]
    policies = {"dp (default)": {"policy": "dp"}, "grid θ=1": {"policy": "grid", "theta": 1},
                "README: threshold 2 × line": {"policy": {"salary": ("threshold", 2), "age": "line"}}}
    return "salary × age 50×62 = 3,100 cells", df, ["salary", "age"], bins, ranges, policies


def square_case(rng):
    df = pd.DataFrame({"a": rng.uniform(0, 200, 20_000), "b": rng.uniform(0, 200, 20_000)})
    df.attrs["public_bounds"] = {"a": (0, 200), "b": (0, 200)}
    bins = {"a": 200, "b": 200}
    ranges = [((0, 40), (10, 30)), ((40, 199), (30, 150)), ((20, 90), (25, 60))]
    policies = {"dp (default)": {"policy": "dp"}, "grid θ=1": {"policy": "grid", "theta": 1},
                "threshold 2 × line": {"policy": {"a": ("threshold", 2), "b": "line"}}}
    return "a × b 200×200 = 40,000 cells", df, ["a", "b"], bins, ranges, policies


def readme_snippet(df) -> None:
    s = df.blowfish.session(1.0, bins={"salary": 50, "age": 62},
                            policy={"salary": ("threshold", 2), "age": "line"})
    s.quote("histogram", ["salary", "age"], epsilon=EPSILON)
    s.release("histogram", ["salary", "age"], epsilon=EPSILON)


def choice_seconds(df, cols, bins, query, kw, pol, projection=True, repeats=3) -> tuple[float, object]:
    """Median seconds of plan_budget on a fresh plan, and the last Budgeted."""
    times, b = [], None
    for _ in range(repeats):
        plan = prepare(df, query, cols, bins=bins, **kw, **pol)
        start = time.perf_counter()
        b = plan_budget(plan, epsilon=EPSILON, projection=projection)
        times.append(time.perf_counter() - start)
    return float(np.median(times)), b


def domain_rows(case) -> tuple[list[list[object]], float]:
    label, df, cols, bins, ranges, policies = case
    dom = prepare(df, "histogram", cols, bins=bins).domain
    base = median_seconds(lambda: dom.histogram(df), repeats=7)
    queries = [("histogram", {}, True), ("cumulative", {}, True), ("range (3 boxes)", {"ranges": ranges}, True),
               ("range (3 boxes), projection=False", {"ranges": ranges}, False)]
    rows = []
    for pname, pol in policies.items():
        for qname, kw, proj in queries:
            query = qname.split()[0]
            t_choice, b = choice_seconds(df, cols, bins, query, kw, pol, projection=proj)
            t_release = median_seconds(lambda: df.blowfish.release(query, cols, bins=bins, epsilon=EPSILON,
                                                                   projection=proj, **kw, **pol), repeats=3)
            skipped = int(b.table["note"].str.startswith("skipped").sum()) if b.table is not None else 0
            rows.append([label, pname, qname, b.mechanism.name, skipped, f"{t_choice:.3f}", f"{t_choice / base:,.0f}×",
                         f"{t_release:.3f}", f"{t_release / base:,.0f}×",
                         "yes" if max(t_choice, t_release) <= TARGET else "NO"])
    return rows, base


@contextlib.contextmanager
def dense_variances():
    """Matrix mechanisms answer every workload by dense least squares (the path before this issue)."""
    saved = MatrixMechanism.query_variances
    MatrixMechanism.query_variances = lambda self, W, pol: self._dense_variances(W, pol, self.measured(pol))
    try:
        yield
    finally:
        MatrixMechanism.query_variances = saved


def before_after_rows(rng) -> list[list[object]]:
    rows = []
    for shape in [(20, 20), (30, 30)]:
        d = Domain.grid(shape)
        pol = policy.dp(d)
        x = rng.poisson(5, size=d.size)
        base = median_seconds(lambda: np.bincount(np.repeat(np.arange(d.size), x), minlength=d.size), repeats=7)
        for name, W in [("histogram", workload.identity(d.size)),
                        ("cumulative", workload.kron(*[workload.prefix(s) for s in shape]))]:
            after = median_seconds(lambda: choose_mechanism(W, pol, EPSILON), repeats=3)
            with dense_variances():
                before = median_seconds(lambda: choose_mechanism(W, pol, EPSILON), repeats=1, warmup=0)
            rows.append([f"{shape[0]}×{shape[1]} = {d.size} cells", name, f"{before:.3f}", f"{after:.3f}",
                         f"{before / after:,.0f}×", f"{before / base:,.0f}× / {after / base:,.0f}×"])
    return rows


def main() -> None:
    rng = np.random.default_rng(0)
    df = datasets.salaries()
    readme_dom = prepare(df, "histogram", ["salary", "age"], bins={"salary": 50, "age": 62}).domain
    readme_base = median_seconds(lambda: readme_dom.histogram(df), repeats=7)
    t_readme = median_seconds(lambda: readme_snippet(df), repeats=3)
    table1 = markdown_table(
        ["snippet", "seconds", "× one histogram", "≤ 1 s"],
        [["session(1.0, bins={salary: 50, age: 62}, policy={salary: (threshold, 2), age: line}) + "
          "quote + release('histogram', ['salary', 'age'], ε=0.3)", f"{t_readme:.3f}", f"{t_readme / readme_base:,.0f}×",
          "yes" if t_readme <= TARGET else "NO"]])
    rows, bases = [], []
    for case in (salaries_case(), square_case(rng)):
        r, base = domain_rows(case)
        rows += r
        bases.append(f"{case[0]}: {base * 1e3:.2f} ms")
    table2 = markdown_table(["domain", "policy", "query", "chosen", "skipped", "choice s", "choice ×",
                             "release s", "release ×", "≤ 1 s"], rows)
    table3 = markdown_table(["domain (DP)", "query", "dense s (before)", "structured s (after)", "speed-up",
                             "× baseline before / after"], before_after_rows(rng))
    text = "\n".join([
        "# The first hour: README session and multi-attribute mechanism choice",
        "",
        "Command: `.venv/bin/python -m benchmarks.first_hour`. Medians of repeated runs in one process. "
        "Baseline for the ratios: one `Domain.histogram` of the same data over the same domain "
        f"(README data, 5,000 rows: {readme_base * 1e3:.2f} ms; {'; '.join(bases)}).",
        "",
        "## (1) The README's session snippet, end to end (issue 17: 218 s before the per-axis forms)",
        "",
        table1,
        "",
        "## (2), (3) Mechanism choice and release on 2-D domains",
        "",
        "*choice*: `plan_budget` on a fresh plan (every candidate's exact expected error; nothing read). "
        "*release*: `df.blowfish.release` end to end (binning, choice, counting, noise, Release). "
        "*skipped*: candidates whose exact error was not computed (the table in `provenance['candidates']` "
        "says why). Range queries are answered on the projected domain unless `projection=False`.",
        "",
        table2,
        "",
        "## Before / after on smaller domains (dense least squares is still affordable there)",
        "",
        "*before*: every matrix mechanism's variances by dense least squares (`_dense_variances`, the path "
        "issue 17 reported); *after*: the Kronecker forms. Baseline: one `np.bincount` of the same counts.",
        "",
        table3,
    ])
    publish(RESULTS, text)


if __name__ == "__main__":
    main()
