"""Shared timing helper: median wall time of repeated calls in this process."""

from __future__ import annotations

import statistics
import time


def median_seconds(fn, repeats: int = 5, warmup: int = 1) -> float:
    """Median wall-clock seconds of ``fn()`` over ``repeats`` runs after ``warmup`` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def markdown_table(header: list[str], rows: list[list[object]]) -> str:
    """A GitHub-flavoured markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def publish(path, text: str) -> None:
    """Write a results table to ``path`` (benchmarks/results/…) and print it."""
    path.parent.mkdir(exist_ok=True)
    path.write_text(text + "\n")
    print(text)
