"""Round axis ticks for the widgets' plots: linear ticks in data units and 1-2-5 ticks on log axes.

Examples
--------
>>> nice_ticks(0, 250_000).tolist()
[0.0, 50000.0, 100000.0, 150000.0, 200000.0, 250000.0]
>>> log_ticks(1, 49).tolist(), tick_decimals(np.array([0.5, 1.0]))
([1.0, 2.0, 5.0, 10.0, 20.0], 1)
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["nice_ticks", "tick_decimals", "log_ticks"]


def nice_ticks(lo: float, hi: float, count: int = 6) -> np.ndarray:
    """At most about ``count`` round values (steps of 1, 2 or 5 × 10^n) inside [lo, hi]."""
    raw = (hi - lo) / max(1, count - 1)
    step = 10.0 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 5, 10) if m * step >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks = np.arange(first, hi + step * 1e-9, step)
    return np.round(ticks, max(0, -math.floor(math.log10(step))) + 1)


def tick_decimals(ticks: np.ndarray) -> int:
    """The decimals the round ticks need (0 for whole numbers)."""
    for d in range(7):
        if np.allclose(np.round(ticks, d), ticks, rtol=0, atol=1e-9 * max(1.0, float(np.max(np.abs(ticks))))):
            return d
    return 6


def log_ticks(lo: float, hi: float, most: int = 6) -> np.ndarray:
    """Ticks for a log axis over [lo, hi]: 1-2-5 per decade, thinned to 1-3 and then to decades when crowded."""
    decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    for mantissas in ((1, 2, 5), (1, 3), (1,)):
        ticks = np.array([m * 10.0 ** e for e in decades for m in mantissas])
        ticks = ticks[(ticks >= lo * (1 - 1e-9)) & (ticks <= hi * (1 + 1e-9))]
        if len(ticks) <= most:
            break
    if len(ticks) > most:  # many decades: every other one
        ticks = ticks[:: math.ceil(len(ticks) / most)]
    return ticks if len(ticks) else np.array([lo, hi])
