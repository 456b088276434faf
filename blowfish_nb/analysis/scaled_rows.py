"""Exact (α, β) coverage when every answer is one measured row of the strategy, rescaled.

When each answer w_r of the workload is a positive multiple of one row of an
``Optimized`` strategy, w_r = X_j / c_j, and the rows are linearly independent
(X X⁺ = I), least squares returns the answer as the measurement divided by
c_j: the error is (γ/c_j)·(η_j + ρ_j) with η_j the lattice noise of row j
(discrete Laplace in grid units, scale b = (Δ/γ + m)/ε, independent over
rows: :func:`blowfish_nb.mechanisms.noise.lattice_noisy`) and |ρ_j| ≤ 1/2
the rounding of the measured value to the grid. So, for *every* histogram,

    P(every answer within α) ≥ Π_j (1 − 2 t^{M_j + 1}/(1 + t)),
    t = e^{−1/b},  M_j = ⌊α c_j/γ⌋ − :data:`ROUNDING_STEPS`,

the product over the *distinct* rows the answers use (a repeated answer is
the same event), an exact law with ρ and the least squares' float rounding
charged as whole grid steps. :func:`scaled_rows_epsilon` solves it for the
least ε by bisection. The range–edge strategy
(:mod:`blowfish_nb.strategies.range_edges`) is built this way (issue 28:
its quote needs no Monte-Carlo round and carries no confidence margin).
Everything here reads public inputs only (the strategy, the workload, the
policy's Δ).
"""

from __future__ import annotations

import math

import numpy as np

from ..mechanisms import Optimized
from ..strategies.optimized import OptimizedStrategy

__all__ = ["scaled_rows", "scaled_rows_epsilon", "scaled_rows_coverage", "least_epsilon", "ROUNDING_STEPS",
           "DENSE_VALUES"]

#: grid steps taken off each answer's room: half a step for rounding the measured value to the grid, the rest for
#: the least squares' float rounding (relative 1e-16 of the counts; one step γ is 2^-12·Δ/m or more)
ROUNDING_STEPS = 2
#: the largest workload × strategy (answers × rows × cells) matched here; larger ones go to the other routes
DENSE_VALUES = 1 << 24
#: the strategy times its pseudo-inverse must be the identity to this (max abs entry)
INDEPENDENT = 1e-9


def scaled_rows(mechanism, workload, policy) -> tuple[np.ndarray, np.ndarray] | None:
    """(row of each answer, c of each row) when every answer is X_j / c_j for independent rows, else None.

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy
    >>> from blowfish_nb.ranges import Ranges
    >>> from blowfish_nb.strategies.range_edges import range_edge_strategy
    >>> g, W = policy.line(Domain.grid(8)), Ranges(8, [1, 4, 1], [3, 6, 3])
    >>> rows, c = scaled_rows(mechanisms.Optimized(range_edge_strategy(W, g)), W, g)
    >>> rows.tolist(), c.tolist()  # the repeated range is the same row
    ([0, 1, 0], [0.5, 0.5])
    >>> scaled_rows(mechanisms.Ordered(), W, g) is None
    True
    """
    if not isinstance(mechanism, Optimized) or type(mechanism.optimized) is not OptimizedStrategy:
        return None
    factors = mechanism.optimized.factors
    if len(factors) != 1:
        return None
    factor = factors[0]
    X = factor.X
    q, n = workload.shape
    if X.shape[1] != n or q * X.size > DENSE_VALUES:
        return None
    W = np.asarray(workload.dense(), dtype=float)
    norms_x, norms_w = np.linalg.norm(X, axis=1), np.linalg.norm(W, axis=1)
    if not (norms_x > 0).all() or not (norms_w > 0).all():
        return None
    rows = np.argmax((W / norms_w[:, None]) @ (X / norms_x[:, None]).T, axis=1)
    lead = np.argmax(W != 0, axis=1)  # each answer's first nonzero cell
    c = X[rows, lead] / W[np.arange(q), lead]
    if not (c > 0).all() or not np.array_equal(X[rows], c[:, None] * W):
        return None  # some answer is not exactly a multiple of one row
    if np.abs(X @ factor.pinv - np.eye(X.shape[0])).max() > INDEPENDENT:
        return None  # dependent rows: least squares mixes their noise
    used = np.unique(rows)
    scale = np.zeros(X.shape[0])
    scale[rows] = c
    index = np.searchsorted(used, rows)
    return index, scale[used]


def scaled_rows_coverage(c: np.ndarray, delta: float, gamma: float, m: int, alpha: float, epsilon: float) -> float:
    """The lower bound on P(every answer within α) of the module notes, at ``epsilon``."""
    b = (delta / gamma + m) / epsilon
    steps = np.floor(alpha * c / gamma) - ROUNDING_STEPS
    if (steps < 0).any():
        return 0.0
    log_t = -1.0 / b
    log_fail = math.log(2.0) + (steps + 1) * log_t - math.log1p(math.exp(log_t))
    return float(np.exp(np.sum(np.log1p(-np.exp(log_fail)))))


def scaled_rows_epsilon(mechanism, policy, c: np.ndarray, alpha: float, beta: float) -> float | None:
    """The least ε (to a relative 1e-12) at which :func:`scaled_rows_coverage` is at least 1 − β.

    Only an ε at which the bound was evaluated and met is returned. None when the grid step leaves no room
    (α below :data:`ROUNDING_STEPS` grid steps of some answer).

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy
    >>> from blowfish_nb.ranges import Ranges
    >>> from blowfish_nb.strategies.range_edges import range_edge_strategy
    >>> g, W = policy.line(Domain.grid(64)), Ranges(64, [3, 20], [9, 40])
    >>> m = mechanisms.Optimized(range_edge_strategy(W, g))
    >>> e = scaled_rows_epsilon(m, g, scaled_rows(m, W, g)[1], 10.0, 0.05)
    >>> round(e, 3)  # two independent Laplace(1/ε) terms: (1 − e^{−10ε})² ≈ 0.95
    0.368
    """
    delta, gamma, m = mechanism._lattice(policy, 1.0)  # (Δ, γ, m) as the release draws them (no ε in them)
    if delta == 0:
        return 1e-12  # nothing random: any ε meets the target (kept positive)
    if np.floor(alpha * c.min() / gamma) - ROUNDING_STEPS < 0:
        return None
    target = 1.0 - beta
    return least_epsilon(lambda e: scaled_rows_coverage(c, delta, gamma, m, alpha, e) >= target)


def least_epsilon(meets) -> float | None:
    """The least ε (to a relative 1e-12) with ``meets(ε)`` true, for a ``meets`` that stays true above it (an exact
    coverage at least 1 − β); None when no ε up to 10¹² meets it. Every ε returned is one ``meets`` was evaluated at.

    Examples
    --------
    >>> round(least_epsilon(lambda e: e >= 0.25), 9)
    0.25
    """
    lo, hi = 1e-6, 1.0
    while not meets(hi):
        lo, hi = hi, hi * 2
        if hi > 1e12:
            return None
    while meets(lo) and lo > 1e-300:
        lo /= 2
    while hi / lo > 1 + 1e-12:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if meets(mid) else (mid, hi)
    return float(hi)
