"""Exact-law (α, β) coverage of the range-component strategy (:mod:`blowfish_nb.strategies.range_components`).

The strategy is block-diagonal in range space (A = B R, R the distinct
ranges' indicator rows, of full row rank), so least squares returns the
ranges as B⁺ y and the blocks' errors are independent. Every measurement is
γ·(round(A x/γ) + Z_j) with Z_j discrete Laplace of scale b = (Δ/γ + m)/ε in
grid units, independent over rows (:func:`blowfish_nb.mechanisms.noise.lattice_noisy`),
and a rounding |ρ_j| ≤ 1/2. For every histogram:

* a range of an edge-weight block, weight w: error (γ/w)(Z_j + ρ_j), so
  P(|error| > α) ≤ 2t^{M+1}/(1 + t), t = e^{−1/b}, M = ⌊α w/γ⌋ − 2 (as
  :mod:`.scaled_rows`: half a step of rounding and 1.5 of float rounding);
  the block's rows are independent: its coverage is the product;
* a range of a Hadamard block (order h, coefficient d): error
  d·γ·Σ_j ±(Z_j + ρ_j) with h terms. Z_j has the law of ⌊E₁⌋ − ⌊E₂⌋ for
  independent exponentials of mean b (P(⌊E⌋ ≥ k) = e^{−k/b} = t^k: the
  geometric law whose difference is the discrete Laplace), so
  |Σ ±Z_j − Σ ±L_j| < h with L_j = E₁ − E₂ continuous Laplace of scale b,
  and the signs do not change the law of the symmetric sum. Hence
  P(|error| > α) ≤ 2·T_h((α − 2γ)/(dγ) − 1.5h)/b) with T_h the closed-form
  tail of a sum of h unit Laplaces (:func:`~blowfish_nb.strategies.range_components.sum_laplace_tail`);
  within a block the union bound (its c answers share noise), except for a
  pair (h = 2), whose joint event max(|η₁ + η₂|, |η₁ − η₂|) = |η₁| + |η₂| ≤ x
  is exact: |L| is exponential, P(|L₁| + |L₂| > x) = e^{−x}(1 + x), and
  ||Z₁| + |Z₂| − |L₁| − |L₂|| < 2 = h as above.

The product over blocks of these is a lower bound on P(every answer within
α) — no Monte-Carlo round, no confidence margin — and
:func:`component_epsilon` solves it for the least ε by bisection, returning
only an ε at which the bound was evaluated and met.
"""

from __future__ import annotations

import math

import numpy as np

from ..strategies.range_components import component_blocks, sum_laplace_tail
from .scaled_rows import ROUNDING_STEPS, least_epsilon

__all__ = ["component_route", "component_coverage", "component_epsilon", "FLOAT_STEPS"]

#: grid steps of absolute room taken for the least squares' float rounding on a Hadamard answer (as the 1.5 of
#: :mod:`.scaled_rows`' :data:`ROUNDING_STEPS`, rounded up)
FLOAT_STEPS = 2


def component_route(mechanism, workload, policy):
    """The blocks of ``mechanism``'s strategy when it is the range-component strategy of (workload, policy), else
    None (:func:`~blowfish_nb.strategies.range_components.component_blocks`: rebuilt and compared bit for bit).

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy
    >>> from blowfish_nb.ranges import Ranges
    >>> from blowfish_nb.strategies.range_components import range_component_strategy
    >>> g, W = policy.threshold(Domain.grid(12), 2), Ranges(12, [0, 5], [3, 9])
    >>> [b[0] for b in component_route(mechanisms.Optimized(range_component_strategy(W, g)), W, g)]
    ['hadamard']
    >>> component_route(mechanisms.Ordered(), W, g) is None
    True
    """
    strategy = getattr(mechanism, "optimized", None)
    if strategy is None:
        return None
    found = component_blocks(strategy, workload, policy)
    return None if found is None else found[0]


def _grouped(blocks):
    """(all edge-weight rows' weights, {(d, h): [answers of each Hadamard block with that d and h]})."""
    weights = [np.asarray(b[2], dtype=float) for b in blocks if b[0] == "weights"]
    hadamard: dict = {}
    for b in blocks:
        if b[0] == "hadamard":
            hadamard.setdefault((float(b[2]), int(b[3])), []).append(len(b[1]))
    return (np.concatenate(weights) if weights else np.zeros(0)), hadamard


def component_coverage(blocks, delta: float, gamma: float, m: int, alpha: float, epsilon: float) -> float:
    """The lower bound on P(every answer within α) of the module notes, at ``epsilon``.

    Examples
    --------
    >>> blocks = [("weights", np.array([0]), np.array([1.0])), ("hadamard", np.array([1, 2]), 1.0, 2)]
    >>> 0.9 < component_coverage(blocks, 1.0, 2.0**-12, 4, 10.0, 1.0) < 1.0
    True
    """
    return _coverage(*_grouped(blocks), delta, gamma, m, alpha, epsilon)


def _coverage(weights, hadamard, delta, gamma, m, alpha, epsilon) -> float:
    b = (delta / gamma + m) / epsilon
    log_t = -1.0 / b
    log_cover = 0.0
    if weights.size:  # independent rows: the product of their exact laws
        steps = np.floor(alpha * weights / gamma) - ROUNDING_STEPS
        if (steps < 0).any():
            return 0.0
        log_fail = math.log(2.0) + (steps + 1) * log_t - math.log1p(math.exp(log_t))
        log_cover += float(np.sum(np.log1p(-np.exp(log_fail))))
    for (d, h), count in hadamard.items():  # per block, the union over its answers (count: answers of such blocks)
        room = (alpha - FLOAT_STEPS * gamma) / (d * gamma) - 1.5 * h
        if room <= 0:
            return 0.0
        fail = 2.0 * sum_laplace_tail(h, room / b)
        for c in count:
            # a pair (h = 2): max(|η₁ + η₂|, |η₁ − η₂|) = |η₁| + |η₂|, so its joint event is exact: P(|L₁| + |L₂| >
            # x) = e^{−x}(1 + x) (the |L| exponential); larger blocks: the union over their answers
            block_fail = math.exp(-room / b) * (1.0 + room / b) if (c, h) == (2, 2) else c * fail
            if block_fail >= 1.0:
                return 0.0
            log_cover += math.log1p(-block_fail)
    return math.exp(log_cover)


def component_epsilon(mechanism, policy, blocks, alpha: float, beta: float) -> float | None:
    """The least ε (to a relative 1e-12) at which :func:`component_coverage` is at least 1 − β, or None (no room).

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy
    >>> from blowfish_nb.ranges import Ranges
    >>> from blowfish_nb.strategies.range_components import range_component_strategy
    >>> g, W = policy.threshold(Domain.grid(12), 2), Ranges(12, [0, 5], [3, 9])
    >>> m = mechanisms.Optimized(range_component_strategy(W, g))
    >>> e = component_epsilon(m, g, component_route(m, W, g), 10.0, 0.05)
    >>> 0.3 < e < 0.5  # two answers, each a sum of two Laplace terms of scale 1/ε
    True
    """
    delta, gamma, m = mechanism._lattice(policy, 1.0)  # (Δ, γ, m) as the release draws them (no ε in them)
    if delta == 0:
        return 1e-12
    target = 1.0 - beta
    grouped = _grouped(blocks)

    return least_epsilon(lambda e: _coverage(*grouped, delta, gamma, m, alpha, e) >= target)
