"""Ranges measured once each, weighted by the policy edges their boundaries share.

Under a 1-D policy without ⊥ (the line, G^θ, a projected custom graph)
moving one record along an edge (u, v) changes a range's count only when
the edge *crosses one of its two boundaries* (Haney et al. 2017, Thm 4.1:
Δ_A(G) = max over edges of ‖A(e_u − e_v)‖₁). In the edge domain a range is
the difference of the suffix counts s_b = Σ_{c ≥ b} x_c at its two
boundaries, so the Ordered/Transformed strategy (every s_b, Δ = 1 on the
line) answers each range with two noise terms, while measuring the range
itself costs one term and only the budget of the edges at its two
boundaries. With ranges whose boundaries are rarely shared (the projected
domain of a few dozen ranges: its blocks *are* the ranges' boundaries) that
halves the error; the SVD lower bound (:mod:`..analysis.lower_bound`) says
no strategy does much better than about one term per range.

**The strategy**: each distinct range r once, its indicator with weight
w_r = 1 / max over the edges e that change r of L(e), L(e) the number of
ranges e changes; so every edge's rows sum to at most 1 (Δ ≤ 1) and a range
whose boundaries no other range shares is measured at full weight. No
optimiser, O(q·(n + |E|)). The rows must be linearly independent (then least
squares returns each measurement divided by its weight: every answer is one
noise term of its own, whose law :mod:`blowfish_nb.accuracy` knows exactly);
otherwise there is no strategy (None).

**Privacy never rests on these weights.** The strategy carries the exact Δ
of its rows under the policy, computed by the policy's own edge-difference
code (:meth:`Policy.sensitivity`), and :class:`~blowfish_nb.mechanisms.Optimized`
recomputes it from what it measures; the weights only shape the error.
"""

from __future__ import annotations

import numpy as np

from ..policy import Policy
from ..ranges import as_ranges
from ..operators import Workload
from .optimized import DenseFactor, OptimizedStrategy

__all__ = ["range_edge_strategy", "RANGE_EDGE_CELLS", "INDEPENDENT"]

#: the largest domain the strategy is built on (a dense q × n pseudo-inverse; the quotes' projected domains hold
#: at most twice the ranges' count of blocks)
RANGE_EDGE_CELLS = 512
#: rows count as independent when the strategy times its pseudo-inverse is the identity to this (max abs entry)
INDEPENDENT = 1e-9


def range_edge_strategy(workload: Workload, policy: Policy) -> OptimizedStrategy | None:
    """The range–edge strategy for 1-D ranges under a policy without ⊥, or None where it does not apply.

    None for a domain of more than one attribute, of fewer than 2 or more than
    :data:`RANGE_EDGE_CELLS` cells, a policy with ⊥ (its edges to ⊥ change
    every range through its cells, not its boundaries) or without edges,
    workloads that are not ranges, and ranges that are linearly dependent.

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy
    >>> from blowfish_nb.ranges import Ranges
    >>> g = policy.line(Domain.grid(8))
    >>> range_edge_strategy(Ranges(8, [1, 4], [3, 6]), g).info["weights"].tolist()  # boundary 4 is shared
    [0.5, 0.5]
    >>> W = Ranges(8, [1, 5], [3, 6])
    >>> s = range_edge_strategy(W, g)
    >>> s.sensitivity, s.info["template"], s.info["weights"].tolist()
    (1.0, 'range-edge', [1.0, 1.0])
    >>> m = mechanisms.Optimized(s)
    >>> m.sensitivity(g) == s.sensitivity  # charged what the policy's edge scan says
    True
    >>> m.expected_error(W, g, 1.0) < mechanisms.Ordered().expected_error(W, g, 1.0)  # one noise term, not two
    True
    """
    if len(policy.domain.shape) != 1 or policy.has_bottom:
        return None
    n = int(policy.domain.size)
    r = as_ranges(workload)
    if r is None or not 2 <= n <= RANGE_EDGE_CELLS or workload.shape[1] != n:
        return None
    edges = np.asarray(policy.edges(), dtype=np.int64).reshape(-1, 2)
    if edges.shape[0] == 0:
        return None
    pairs = np.unique(np.stack([r.lo, r.hi]), axis=1)  # distinct ranges (a repeated range is measured once)
    lo, hi = pairs[0], pairs[1]
    # an edge changes range [lo, hi] when exactly one of its ends lies inside it
    ends = [(lo[None, :] <= edges[:, i, None]) & (edges[:, i, None] <= hi[None, :]) for i in (0, 1)]
    touches = ends[0] != ends[1]  # |E| × q
    load = touches.sum(axis=1)
    worst = np.where(touches, load[:, None], 0).max(axis=0)
    w = 1.0 / np.maximum(worst, 1)  # a range no edge changes (the whole domain) costs nothing: weight 1
    cells = np.arange(n)
    X = w[:, None] * ((lo[:, None] <= cells) & (cells <= hi[:, None]))
    factor = DenseFactor(X)
    if np.abs(X @ factor.pinv - np.eye(X.shape[0])).max() > INDEPENDENT:
        return None  # dependent ranges: least squares would mix their noise
    delta = float(policy.sensitivity(factor))
    return OptimizedStrategy((factor,), delta, 0.0, (n,), {"template": "range-edge", "weights": w})
