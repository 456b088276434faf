"""Brute-force references, written from the definitions and nothing else.

Neighbouring databases (He et al. 2014, Def. 4.1): D' is D with one record's
value changed from a to b where (a, b) is an edge of the policy graph; with the
null vertex ⊥, also D with one record added or removed.
"""

from __future__ import annotations

import numpy as np


def secret_pair(family: str, theta: int | None):
    """The definition's predicate: may one record's value move from bin a to bin b?"""
    if family == "dp":
        return lambda a, b: False  # unbounded DP only adds/removes records
    if family == "line":
        return lambda a, b: abs(a - b) == 1
    if family == "threshold":
        return lambda a, b: 1 <= abs(a - b) <= theta
    raise ValueError(family)


def neighbouring_databases(records: list[int], k: int, family: str, theta: int | None = None):
    """Every database one step from ``records`` (a list of bin values) under the policy."""
    move = secret_pair(family, theta)
    for i, a in enumerate(records):
        for b in range(k):
            if move(a, b):
                yield records[:i] + [b] + records[i + 1 :]
        if family == "dp":
            yield records[:i] + records[i + 1 :]
    if family == "dp":
        for b in range(k):
            yield records + [b]


def brute_sensitivity(A: np.ndarray, k: int, family: str, theta: int | None = None, rng=None) -> float:
    """max ‖A h(D) − A h(D')‖₁ over neighbouring databases D, D'.

    The databases hold every value once (so every secret pair is reachable)
    plus a few random extra records.
    """
    rng = np.random.default_rng(rng)
    records = list(range(k)) + list(rng.integers(0, k, size=3))
    h = np.bincount(records, minlength=k)
    best = 0.0
    for other in neighbouring_databases(records, k, family, theta):
        diff = h - np.bincount(other, minlength=k)
        best = max(best, float(np.abs(A @ diff).sum()))
    return best
