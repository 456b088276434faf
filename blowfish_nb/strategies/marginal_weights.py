"""Weighted marginals: measure every marginal of a small grid with an optimised weight (McKenna et al. 2018, §6).

The strategy stacks θ_S · M_S over the 2^d subsets S of the attributes
(M_S the marginal on S: the identity on the axes in S, a sum over the
others; S = ∅ is the total), so AᵀA = Σ_S θ_S² ⊗_i (I if i ∈ S else J) and
the error tr(WᵀW (AᵀA)⁻¹) has a closed form in θ (:func:`fit_marginals`).

**Δ is linear in θ.** An edge that moves one record along axis i moves it
between two cells of every marginal S ∋ i and leaves the others unchanged,
so it costs 2 Σ_{S ∋ i} θ_S; an edge to ⊥ costs Σ_S θ_S; an edge that moves
several axes costs at most 2 Σ_{S ≠ ∅} θ_S. Under the attribute policy
(every edge moves one attribute) and unbounded DP this bound is exact, and
SLSQP minimises the error subject to every bound ≤ 1 (exact constraints,
no smoothed max). A policy without ⊥ charges the total nothing: its weight
is capped at :data:`~blowfish_nb.strategies.optimized.TOTAL_WEIGHT`. The
mechanism is charged the Δ that the policy's edge-difference code computes
for the returned matrix, never this bound.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .pidentity import range_gram

__all__ = ["fit_marginals", "workload_gram", "marginal_matrix", "MARGINAL_CELLS", "MARGINAL_AXES"]

#: the largest grid the template runs on (the strategy is returned as one dense rows × K matrix)
MARGINAL_CELLS = 1024
#: the most attributes (2^d weights)
MARGINAL_AXES = 6
#: the smallest weight of the full marginal (the identity), which keeps AᵀA invertible for the mechanism's
#: least squares. 2-way marginals of 8³ are best with none at all (15.846 per query at ε = 1, against 15.875
#: with this floor); a floor of 1e-5 got within 0.01 % of that but left AᵀA so ill-conditioned (cond 2.6e7)
#: that the measured error drifted 10 SE above the analytic one under the attribute policy
FULL_FLOOR = 1e-3


def marginal_matrix(shape, subset) -> np.ndarray:
    """M_S: the marginal on the axes in ``subset`` as a dense (Π_{i∈S} n_i) × K matrix.

    Examples
    --------
    >>> marginal_matrix((2, 2), (0,)).tolist()
    [[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]]
    """
    out = np.ones((1, 1))
    for i, n in enumerate(shape):
        out = np.kron(out, np.eye(n) if i in subset else np.ones((1, n)))
    return out


def workload_gram(terms, shape) -> np.ndarray:
    """WᵀW (K × K, dense) of a workload given as per-axis ranges (optimized._terms)."""
    K = math.prod(shape)
    G = np.zeros((K, K))
    for t in terms:
        if t.zip:  # a list of boxes: Σ_b ⊗ 1_r 1_rᵀ, by blocks of rows
            q = t.axes[0][0].size
            for start in range(0, q, 512):
                rows = np.ones((min(512, q - start), 1))
                for i, n in enumerate(shape):
                    lo, hi = t.axes[i][0][start:start + 512], t.axes[i][1][start:start + 512]
                    j = np.arange(n)
                    ind = ((j >= lo[:, None]) & (j <= hi[:, None])).astype(float)
                    rows = (rows[:, :, None] * ind[:, None, :]).reshape(rows.shape[0], -1)
                G += t.weight * rows.T @ rows
        else:
            M = np.ones((1, 1))
            for i, n in enumerate(shape):
                M = np.kron(M, range_gram(*t.axes[i], n))
            G += t.weight * M
    return G


def fit_marginals(terms, shape, edges, max_iter: int) -> np.ndarray:
    """The weighted-marginals strategy (dense rows × K) with the lowest error under the linear Δ bound ≤ 1.

    Closed form, no K×K matrix: I and J = 11ᵀ share the eigenspaces of the
    constant vector (P₁) and its complement (P⊥) on every axis, so AᵀA has
    eigenvalue λ_T = Σ_{S ⊇ T} θ_S² Π_{i ∉ S} n_i on ⊗_i (P⊥ if i ∈ T else P₁),
    and tr(WᵀW (AᵀA)⁻¹) = Σ_T c_T / λ_T with c_T = tr(WᵀW ⊗ P) (per-axis
    sums over the ranges: tr(1_r1_rᵀ P₁) = |r|²/n). O(4^d) per step.
    Raises ValueError when the template does not apply (a grid above
    :data:`MARGINAL_CELLS` cells, more than :data:`MARGINAL_AXES` axes, or a dense 1-D Gram).
    """
    from scipy.optimize import minimize  # lazy: import blowfish_nb stays light (issue 28)

    from .optimized import TOTAL_WEIGHT  # noqa: PLC0415  (one constant, defined with the edge-domain template)

    d, K = len(shape), math.prod(shape)
    if K > MARGINAL_CELLS or d > MARGINAL_AXES or any(t.gram is not None for t in terms):
        raise ValueError("the weighted-marginals template does not apply here")
    subsets = [frozenset(S) for r in range(d + 1) for S in itertools.combinations(range(d), r)]
    c = np.array([_trace(terms, shape, T) for T in subsets])
    scale = c.sum() or 1.0
    c = c / scale
    outside = np.array([math.prod(n for i, n in enumerate(shape) if i not in S) for S in subsets], dtype=float)
    # up[T, S] = 1 when S ⊇ T
    up = np.array([[1.0 if T <= S else 0.0 for S in subsets] for T in subsets])
    rows = []
    for i, pr in enumerate(edges.pairs):
        if pr is not None:
            rows.append([2.0 if i in S else 0.0 for S in subsets])
    if edges.bottom:
        rows.append([1.0] * len(subsets))
    if edges.multi:
        rows.append([2.0 if S else 0.0 for S in subsets])
    if not rows:
        raise ValueError("no edge: nothing to weigh")
    C = np.array(rows)
    full = len(subsets) - 1
    bounds = [(0.0, None)] * len(subsets)
    if not C[:, 0].any():
        bounds[0] = (0.0, TOTAL_WEIGHT)  # the total: free without ⊥
    bounds[full] = (FULL_FLOOR, None)  # keeps AᵀA invertible (least squares per cell) at a negligible cost

    def fun(theta):
        lam = up @ (theta * theta * outside)
        used = c > 0
        if np.any(lam[used] <= 0):
            return 1e300, np.zeros_like(theta)
        f = float(np.sum(c[used] / lam[used]))
        dlam = np.where(used, c / np.where(lam > 0, lam, 1.0) ** 2, 0.0)  # −∂f/∂λ_T
        return f, -(up.T @ dlam) * 2.0 * theta * outside

    best = None
    starts = [np.full(len(subsets), 1.0 / C.sum(axis=1).max())]
    starts.append(np.where([len(S) == d for S in subsets], 1.0 / C[:, full].max(), 0.0))
    for theta0 in starts:
        theta0 = np.maximum(theta0, [b[0] for b in bounds])
        if not C[:, 0].any():
            theta0[0] = 1.0
        res = minimize(fun, theta0, jac=True, method="SLSQP", bounds=bounds,
                       constraints=[{"type": "ineq", "fun": lambda t: 1.0 - C @ t, "jac": lambda t: -C}],
                       options={"maxiter": max_iter, "ftol": 1e-12})
        theta = np.clip(res.x, [b[0] for b in bounds], [np.inf if b[1] is None else b[1] for b in bounds])
        theta = theta / max(1.0, float((C @ theta).max()))
        f = fun(theta)[0]
        if best is None or f < best[0]:
            best = (f, theta)
    theta = best[1]
    return np.vstack([t * marginal_matrix(shape, S) for t, S in zip(theta, subsets) if t > 1e-12])


def _trace(terms, shape, T) -> float:
    """tr(WᵀW ⊗_i (P⊥ if i ∈ T else P₁))."""
    total = 0.0
    for t in terms:
        parts = []
        for i, n in enumerate(shape):
            size = (t.axes[i][1] - t.axes[i][0] + 1).astype(float)
            one = size * size / n
            parts.append(size - one if i in T else one)
        if t.zip:
            total += t.weight * float(np.sum(np.prod(parts, axis=0)))
        else:
            total += t.weight * math.prod(float(p.sum()) for p in parts)
    return total
