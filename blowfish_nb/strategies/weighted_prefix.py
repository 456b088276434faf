"""Prefix sums with one weight per row, the weights optimised for a workload under a policy (issue 16).

Row i of ``WeightedPrefix(w)`` is w_i · (x_0 + … + x_i). With P the prefix
sums and D = P⁻¹ the difference operator, (AᵀA)⁻¹ = D diag(w)⁻² Dᵀ, so a
workload with Gram M has error ⟨(AᵀA)⁻¹, M⟩ = Σ_i c_i / w_i² with
c = diag(DᵀMD). A move of one record between cells a < b changes rows
a … b−1 by one each, so Δ = max over edges of Σ_{i=a}^{b−1} w_i (rows a … m−1
for an edge to ⊥).

**Where it pays.** Prefix sums over the buckets of a partition under G^θ
pay Δ = the most buckets one edge spans: a few narrow buckets anywhere
raise the noise of every row. Weights spread the budget: rows inside a
cluster of narrow buckets get less, every other row keeps weight 1. On the
partitions DAWA finds on the DPBench sets under G⁴ this cuts the bucket
error 2–5× against plain prefix sums (benchmarks/reproduce_anuarbek.py).

**Privacy never rests on the optimiser.** The weights are capped at
2^33/m and quantised to multiples of 2^-20 after the solve, so every
prefix sum of the weights is a whole number of steps below 2^53 and every
window sum is exact in float64 (uncapped, rows that no edge crosses ran to
weights of 10⁸ and rounded the sums: an attacker found Δ charged 5·10⁻⁶
too low); Δ is recomputed by the policy's edge-difference code.
Measuring the whole-valued prefix sums with discrete Laplace noise of scale
Δ/(ε w_i) on row i is ε-private: a move changes Σ |Δrow_i| w_i/Δ ≤ 1 scale
units in total.
"""

from __future__ import annotations

import math

import numpy as np

from ..exceptions import InvalidParameterError
from ..operators import Workload
from ..policy import BOTTOM, Policy

__all__ = ["WeightedPrefix", "optimize_weights", "edge_rows"]

#: weights are multiples of 2^-QUANTUM_BITS (window sums exact in float64 up to 2^33 rows)
QUANTUM_BITS = 20
#: log-weight bounds of the solve (w between e^-13 ≈ 2.3e-6 and e^8 ≈ 3,000, before normalising)
LOG_BOUNDS = (-13.0, 8.0)
#: p of the p-norm that smooths the max over edges
P_NORM = 64


class WeightedPrefix(Workload):
    """Prefix sums with row weights: row i is w_i · (x_0 + … + x_i).

    Examples
    --------
    >>> A = WeightedPrefix([1.0, 0.5, 0.25])
    >>> (A @ np.array([1.0, 2.0, 3.0])).tolist()
    [1.0, 1.5, 1.5]
    >>> A.column_differences(np.array([0, 0]), np.array([1, 2])).tolist()
    [1.0, 1.5]
    """

    name = "weighted prefix"
    binary = False

    def __init__(self, weights):
        w = np.array(weights, dtype=float).reshape(-1)
        if w.size == 0 or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise InvalidParameterError(f"weights must be finite and positive, got {weights!r}")
        w.setflags(write=False)
        self.weights = w
        self._sums = np.r_[0.0, np.cumsum(w)]
        self._sums.setflags(write=False)
        super().__init__((w.size, w.size))

    def _matvec(self, x):
        return self.weights * np.cumsum(np.asarray(x, dtype=float).reshape(-1))

    def _rmatvec(self, y):
        z = self.weights * np.asarray(y, dtype=float).reshape(-1)
        return np.cumsum(z[::-1])[::-1]

    def column_differences(self, u, v):
        lo, hi = np.minimum(u, v), np.maximum(u, v)
        return self._sums[hi] - self._sums[lo]

    def column_norms(self, u):
        return self._sums[-1] - self._sums[np.asarray(u)]

    def dense(self):
        self._check_dense()
        return self.weights[:, None] * np.tril(np.ones(self.shape))


def edge_rows(policy: Policy) -> tuple[np.ndarray, np.ndarray]:
    """The distinct row ranges [lo, hi) of prefix sums that one edge of ``policy`` changes.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> lo, hi = edge_rows(policy.threshold(Domain.grid(4), 2))
    >>> sorted(zip(lo.tolist(), hi.tolist()))
    [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]
    """
    m = policy.domain.size
    los, his = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for u, v in policy.edge_chunks():
        u, v = np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64)
        down = v == BOTTOM
        los.append(np.where(down, u, np.minimum(u, v)))
        his.append(np.where(down, m, np.maximum(u, v)))
    ab = np.unique(np.stack([np.concatenate(los), np.concatenate(his)], axis=1), axis=0)
    return ab[:, 0], ab[:, 1]


def optimize_weights(c, policy: Policy, *, max_iter: int = 500) -> WeightedPrefix:
    """Row weights minimising Δ² · Σ c_i / w_i² under ``policy`` (Δ exact; the result is normalised to Δ ≤ 1).

    Parameters
    ----------
    c : array of m non-negative floats
        The workload's weight per row, diag(DᵀMD) for a workload with Gram M.
    policy : Policy
        A policy over m cells (in the order the prefix sums run).
    max_iter : int
        L-BFGS-B iterations.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> A = optimize_weights(np.ones(6), policy.threshold(Domain.grid(6), 2))
    >>> float(policy.threshold(Domain.grid(6), 2).sensitivity(A)) <= 1.0
    True
    """
    c = np.asarray(c, dtype=float).reshape(-1)
    m = policy.domain.size
    if c.size != m or not np.all(np.isfinite(c)) or np.any(c < 0):
        raise InvalidParameterError(f"c must hold {m} finite non-negative numbers, got shape {c.shape}")
    lo, hi = edge_rows(policy)
    c = np.maximum(c, 1e-12 * max(float(c.max()), 1e-300))
    u = np.zeros(m)
    if lo.size:
        from scipy.optimize import minimize  # lazy (import time)

        u = minimize(_objective, u, args=(c, lo, hi), jac=True, method="L-BFGS-B", bounds=[LOG_BOUNDS] * m,
                     options={"maxiter": max_iter}).x
    w = np.exp(u - u.max())
    sums = np.r_[0.0, np.cumsum(w)]
    top = float((sums[hi] - sums[lo]).max()) if lo.size else float(w.max())
    step = 2.0**-QUANTUM_BITS
    # rows no edge crosses (the total under a policy without ⊥) would run to huge weights: cap every weight at
    # 2^33/m so that every prefix sum of the weights is below 2^33, i.e. below 2^53 steps of 2^-20 — exact
    w = np.minimum(w / top, 2.0 ** (53 - QUANTUM_BITS) / m)
    w = np.maximum(np.floor(w / step), 1.0) * step  # multiples of 2^-20: window sums exact, Δ ≤ 1
    return WeightedPrefix(w)


def _objective(u, c, lo, hi):
    """log Σ c_i e^{−2u_i} + 2 log ‖window sums of e^u‖_p, and its gradient."""
    w = np.exp(u)
    sums = np.r_[0.0, np.cumsum(w)]
    s = sums[hi] - sums[lo]
    top = s.max()
    norm = top * float(np.sum((s / top) ** P_NORM)) ** (1.0 / P_NORM)
    ds = (s / norm) ** (P_NORM - 1)  # ∂‖s‖_p / ∂s_e
    marks = np.zeros(w.size + 1)
    np.add.at(marks, lo, ds)
    np.add.at(marks, hi, -ds)
    dnorm_dw = np.cumsum(marks)[:-1]
    E = float(np.sum(c / w**2))
    value = math.log(E) + 2.0 * math.log(norm)
    grad = (-2.0 * c / w**2) / E + 2.0 * dnorm_dw * w / norm
    return value, grad
