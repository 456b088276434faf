"""DAWA's private partition at k = 4,096 … 65,536: the O(k log k)-per-length one against the windowed one it replaced.

Run: ``.venv/bin/python -m benchmarks.dawa_speed`` (writes benchmarks/results/dawa_speed.md; a few minutes, most
of it the old partition at 65,536 cells). ``--accuracy`` instead writes ``dawa_accuracy.md``: what GreedyH's depth
decay and the ε split do to DAWA's error on the DPBench sets (needs ``../shared/data``).

Both partitions run in this process on the same data with the same seed, so they draw the same noise and return
the same partition (checked here, and seed for seed in ``tests/mechanisms/test_dawa.py``). The old one computes
dev(B) by summing every window (O(kL) per length L, O(k²) in all) and finds the least-cost path by a loop over
the cells; the new one uses a wavelet matrix over the ranks (:func:`~blowfish_nb.mechanisms.dawa.interval_deviations`)
and Dijkstra's algorithm. The whole DAWA release (partition, workload Gram matrix over the buckets, greedy
hierarchy, least squares) is timed with the new partition. Exponents are least-squares slopes of log time on log k.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.mechanisms import noise
from blowfish_nb.mechanisms.dawa import PENALTY, l1_partition, least_cost_starts
from benchmarks._timing import markdown_table, publish

RESULTS = Path(__file__).parent / "results"
SIZES = (4096, 8192, 16384, 32768, 65536)
EPSILON = 0.1
RATIO = 0.25


def old_l1_partition(x, epsilon, bucket_cost, rng):
    """The partition before issue 16 (commit 7b994e5): windowed deviations, a Python loop for the path."""
    x = np.asarray(x, dtype=float)
    k = x.size
    lengths = 1 << np.arange(k.bit_length())
    lengths = lengths[lengths <= k]
    top = 2.0 - 2.0 / lengths[-1]
    cost = np.full((1, lengths.size, k), np.inf)
    for j, L in enumerate(lengths):
        if L == 1:
            dev = np.zeros(k)
        else:
            windows = sliding_window_view(x, int(L))
            dev = np.abs(windows - windows.mean(axis=1, keepdims=True)).sum(axis=1)
        scale = (2.0 - 2.0 / L + top) / epsilon
        cost[:, j, : dev.size] = dev + (bucket_cost + PENALTY * scale) + noise.selection_laplace(rng, scale, (1, dev.size))
    return least_cost_starts(cost, lengths, None)


def histogram(k: int) -> np.ndarray:
    """Piecewise-constant Poisson counts: 64 pieces, a third of them empty (fixed seed)."""
    rng = np.random.default_rng(16)
    rates = rng.choice([0.0, 2.0, 20.0, 200.0], size=64, p=[1 / 3, 2 / 9, 2 / 9, 2 / 9])
    return rng.poisson(np.repeat(rates, k // 64)).astype(float)


def seconds(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def slope(ks, ts) -> float:
    return float(np.polyfit(np.log(ks), np.log(ts), 1)[0])


def speed() -> None:
    eps1, cost = RATIO * EPSILON, 1.0 / ((1 - RATIO) * EPSILON)
    rows, old_t, new_t, rel_t = [], [], [], []
    for k in SIZES:
        x = histogram(k)
        t_new, new = seconds(lambda: l1_partition(x, eps1, cost, np.random.default_rng(k)))
        t_old, old = seconds(lambda: old_l1_partition(x, eps1, cost, np.random.default_rng(k)))
        pol = policy.dp(Domain.grid(k))
        t_rel, _ = seconds(lambda: mechanisms.DAWA().release(x, workload.identity(k), pol, EPSILON, rng=k))
        same = "yes" if np.array_equal(new, old) else "NO"
        old_t.append(t_old), new_t.append(t_new), rel_t.append(t_rel)
        rows.append([f"{k:,}", len(new), f"{t_old:.3f}", f"{t_new:.3f}", f"{t_old / t_new:.1f}×", same, f"{t_rel:.3f}"])
    text = "\n\n".join([
        "# DAWA's private partition: time per k, against the partition it replaced",
        "Command: `.venv/bin/python -m benchmarks.dawa_speed`. One run per size, same process, same data (64 "
        f"Poisson pieces, a third empty), ε = {EPSILON}, ε₁ = {RATIO}·ε; both partitions draw the same noise "
        "(same seed). *old*: dev(B) summed over every window, least-cost path by a loop over the cells (commit "
        "7b994e5). *new*: `interval_deviations` (wavelet matrix over the ranks) and `shortest_path_starts` "
        "(Dijkstra). *release*: a whole DAWA release of the histogram with the new partition. On a machine "
        "shared with other jobs the seconds vary; the ratios within a row are the comparison.",
        markdown_table(["k", "buckets", "old partition (s)", "new partition (s)", "old / new", "same partition",
                        "DAWA release (s)"], rows),
        f"Fitted exponents (time ∝ k^a, least squares on log–log over {SIZES[0]:,}–{SIZES[-1]:,}): old partition "
        f"a = {slope(SIZES, old_t):.2f}, new partition a = {slope(SIZES, new_t):.2f}, whole release "
        f"a = {slope(SIZES, rel_t):.2f}.",
    ])
    publish(RESULTS / "dawa_speed.md", text)


SETS = ("PATENT", "INCOME", "HEPTH", "SEARCHLOGS", "NETTRACE", "ADULTFRANK", "MEDCOST")


def accuracy(runs: int = 3) -> None:
    """Depth decay on/off on 2,000 random ranges, DAWA under dp, 7 sets × ε ∈ {0.01, 0.1, 1}: ratio of mean errors."""
    from benchmarks._data import dpbench
    from blowfish_nb.ranges import random_ranges

    W = random_ranges(4096, 2000, rng=7)
    pol = policy.dp(Domain.grid(4096))
    rows, ratios = [], []
    for name in SETS:
        x = dpbench(f"{name}.n4096").astype(float)
        truth = W @ x
        for eps in (0.01, 0.1, 1.0):
            err = {d: np.mean([np.mean((mechanisms.DAWA(decay=d).release(x, W, pol, eps, rng=r) - truth) ** 2)
                               for r in range(runs)]) for d in (True, False)}
            ratios.append(err[True] / err[False])
            rows.append([name, f"{eps:g}", f"{err[False]:.4g}", f"{err[True]:.4g}", f"{ratios[-1]:.2f}"])
    text = "\n\n".join([
        "# DAWA: GreedyH's depth decay, on and off",
        f"Command: `.venv/bin/python -m benchmarks.dawa_speed --accuracy`. Mean squared error per query over 2,000 "
        f"random ranges (seed 7), mean of {runs} runs (seeds 0–{runs - 1}, the same seeds on and off: the same "
        "partition and noise draws, only the hierarchy's weights differ). DAWA under dp at ε.",
        markdown_table(["data", "ε", "no decay", "decay", "decay / no decay"], rows),
        f"Median ratio {np.median(ratios):.2f} (range {min(ratios):.2f}–{max(ratios):.2f}); decay lower in "
        f"{sum(r < 1 for r in ratios)} of {len(ratios)} cells.",
    ])
    publish(RESULTS / "dawa_accuracy.md", text)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accuracy", action="store_true", help="depth decay on/off on the DPBench sets")
    accuracy() if parser.parse_args().accuracy else speed()
