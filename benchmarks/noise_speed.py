"""The float-safe sampler against NumPy's plain Laplace draw, as ratios in one process.

Run: ``.venv/bin/python -m benchmarks.noise_speed [--against PATH]`` (writes benchmarks/results/noise_speed.md).

For k draws at several scales: the median time of ``rng.laplace(0, b, k)``
(the textbook draw a release used before), of :func:`discrete_laplace` and
of :func:`noisy` (whole counts plus noise, with its whole-number check), and
the ratios to the baseline. The machines are shared and noisy, so only the
ratios (measured back to back in this process) are meant to be compared.
The target of issue 13: k = 10⁶ in at most 2× the plain draw.

``--against PATH``: also time the sampler of another checkout (``PATH/blowfish_nb/mechanisms/noise.py``, e.g.
``/work/main``), loaded beside this one in the same process and timed alternately with it call by call; the
draws of both are checked to be the same bits first.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks._timing import markdown_table, median_seconds, publish
from blowfish_nb.mechanisms import noise
from blowfish_nb.mechanisms.noise import discrete_laplace, noisy

RESULTS = Path(__file__).parent / "results" / "noise_speed.md"


def other_noise(root: str):
    """``root``'s noise module, loaded as a sibling of this checkout's (its relative imports resolve here)."""
    path = Path(root) / "blowfish_nb" / "mechanisms" / "noise.py"
    module = type(sys)("blowfish_nb.mechanisms._noise_against")
    module.__package__, module.__file__ = "blowfish_nb.mechanisms", str(path)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module


def against_rows(root: str, rng, repeats: int = 41) -> list[list[str]]:
    """Medians of discrete_laplace here and in ``root``'s module, alternated call by call (same scale and k)."""
    other = other_noise(root)
    rows = []
    for k in (4096, 10**5, 10**6):
        for b in (1.0, 100.0, "per value"):
            scale = np.linspace(0.5, 100.0, k) if b == "per value" else b
            a, c = np.random.default_rng(k), np.random.default_rng(k)
            if noise.discrete_laplace(a, scale, k).tobytes() != other.discrete_laplace(c, scale, k).tobytes():
                raise SystemExit(f"the two samplers draw different bits at k={k}, scale={b}")
            times: dict[str, list[float]] = {"here": [], "there": [], "numpy": []}
            calls = {"here": lambda: noise.discrete_laplace(rng, scale, k),
                     "there": lambda: other.discrete_laplace(rng, scale, k),
                     "numpy": lambda: rng.laplace(0.0, scale, k)}
            for _ in range(repeats):
                for name, f in calls.items():
                    t = time.perf_counter()
                    f()
                    times[name].append(time.perf_counter() - t)
            m = {n: statistics.median(t) for n, t in times.items()}
            rows.append([f"{k:,}", str(b) if isinstance(b, str) else f"{b:g}", f"{m['numpy'] * 1e3:.3f}",
                         f"{m['there'] * 1e3:.3f}", f"{m['here'] * 1e3:.3f}", f"{m['here'] / m['there']:.2f}",
                         f"{m['there'] / m['numpy']:.2f}", f"{m['here'] / m['numpy']:.2f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="PATH", help="another checkout whose sampler is timed alongside")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for k in (10**4, 10**5, 10**6):
        counts = rng.poisson(20, size=k).astype(float)
        for b in (0.5, 1.0, 4.0, 100.0):
            base = median_seconds(lambda: rng.laplace(0.0, b, k), repeats=9)
            dlap = median_seconds(lambda: discrete_laplace(rng, b, k), repeats=9)
            full = median_seconds(lambda: noisy(counts, b, rng), repeats=9)
            rows.append([f"{k:,}", f"{b:g}", f"{base * 1e3:.2f}", f"{dlap * 1e3:.2f}", f"{full * 1e3:.2f}",
                         f"{dlap / base:.2f}", f"{full / base:.2f}"])
    table = markdown_table(["k", "scale b", "numpy laplace ms", "discrete_laplace ms", "noisy(counts) ms",
                            "ratio draw", "ratio noisy"], rows)
    text = ("# Float-safe noise against numpy's Laplace draw (medians of 9, same process)\n\n"
            "`.venv/bin/python -m benchmarks.noise_speed" + (f" --against {args.against}" if args.against else "")
            + f"` (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)\n\n" + table)
    if args.against:
        text += ("\n\n## This checkout's sampler against " + args.against + "'s, alternated call by call\n\n"
                 "Medians of 41 alternated calls (ms); the draws were first checked to be the same bits.\n\n"
                 + markdown_table(["k", "scale b", "numpy laplace", args.against, "this checkout",
                                   "this ÷ that", "that ÷ numpy", "this ÷ numpy"], against_rows(args.against, rng))
                 + f"\n\nLoad average at the end: {os.getloadavg()[0]:.1f}.")
    publish(RESULTS, text)


if __name__ == "__main__":
    main()
