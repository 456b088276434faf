"""Weighted marginals: measure every marginal of a small grid with an optimised weight (McKenna et al. 2018, §6).

The strategy stacks θ_S · M_S over the 2^d subsets S of the attributes
(M_S the marginal on S: the identity on the axes in S, a sum over the
others; S = ∅ is the total). Everything is computed in the marginals
algebra, never by a dense inverse:

**The algebra.** On an axis of n cells, I = P⊥ + P₁ and J = 11ᵀ = n·P₁ with
P₁ = J/n and P⊥ = I − P₁ orthogonal projectors. So M_SᵀM_S = ⊗_i (I if i ∈ S
else J) = Π_{i∉S} n_i · Σ_{T ⊆ S} Q_T with Q_T = ⊗_i (P⊥ if i ∈ T else P₁),
and the Q_T are 2^d orthogonal projectors summing to the identity. Hence

    AᵀA = Σ_T λ_T Q_T,   λ_T = Σ_{S ⊇ T} θ_S² Π_{i∉S} n_i,
    (AᵀA)⁺ = Σ_{T: λ_T > 0} Q_T / λ_T,   A⁺ = (AᵀA)⁺ Aᵀ,
    tr(WᵀW (AᵀA)⁺) = Σ_{T: λ_T > 0} c_T / λ_T,   c_T = tr(WᵀW Q_T),

exact when every c_T with λ_T = 0 is 0 (then the workload lies in A's row
space: least squares is unbiased). Weights may therefore reach 0 exactly
(2-way marginals need no identity at all); a T with c_T > 0 and λ_T = 0
has infinite error and is never chosen. O(4^d) per step (tested against
dense pinv by brute force).

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

__all__ = ["fit_marginals", "workload_gram", "marginal_matrix", "subsets", "eigenvalues", "marginal_strategy",
           "trace_error", "objective", "workload_traces", "bound_rows", "MARGINAL_CELLS", "MARGINAL_AXES"]

#: the largest grid the template runs on (the strategy is returned as one dense rows × K matrix)
MARGINAL_CELLS = 1024
#: the most attributes (2^d weights)
MARGINAL_AXES = 6
#: a weight below this fraction of the largest is set to exactly 0 after the fit (when that does not raise the error)
ZERO = 1e-9


def subsets(d: int) -> list[frozenset]:
    """The 2^d subsets of range(d), by size then lexicographically (∅ first, the full set last).

    Examples
    --------
    >>> [sorted(S) for S in subsets(2)]
    [[], [0], [1], [0, 1]]
    """
    return [frozenset(S) for r in range(d + 1) for S in itertools.combinations(range(d), r)]


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


def eigenvalues(theta, shape) -> np.ndarray:
    """λ_T = Σ_{S ⊇ T} θ_S² Π_{i∉S} n_i for every T of :func:`subsets` (the eigenvalue of AᵀA on Q_T).

    Examples
    --------
    >>> eigenvalues([0.0, 0.0, 0.0, 1.0], (2, 3)).tolist()   # the identity alone: AᵀA = I
    [1.0, 1.0, 1.0, 1.0]
    """
    subs = subsets(len(shape))
    theta = np.asarray(theta, dtype=float)
    outside = _outside(shape, subs)
    return _up(subs) @ (theta * theta * outside)


def _outside(shape, subs) -> np.ndarray:
    return np.array([math.prod(n for i, n in enumerate(shape) if i not in S) for S in subs], dtype=float)


def _up(subs) -> np.ndarray:
    """up[T, S] = 1 when S ⊇ T."""
    return np.array([[1.0 if T <= S else 0.0 for S in subs] for T in subs])


def _projector(shape, T) -> np.ndarray:
    """Q_T = ⊗_i (P⊥ if i ∈ T else P₁), dense K × K."""
    out = np.ones((1, 1))
    for i, n in enumerate(shape):
        P1 = np.full((n, n), 1.0 / n)
        out = np.kron(out, np.eye(n) - P1 if i in T else P1)
    return out


def marginal_strategy(shape, theta) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A, A⁺, (AᵀA)⁺) of the weighted marginals θ, the inverses from the closed form (zero weights dropped).

    Examples
    --------
    >>> A, Ap, N = marginal_strategy((2, 2), [0.0, 1.0, 1.0, 0.0])   # the two 1-way marginals
    >>> A.shape, bool(np.allclose(Ap, np.linalg.pinv(A)))
    ((4, 4), True)
    """
    subs = subsets(len(shape))
    theta = np.asarray(theta, dtype=float)
    A = np.vstack([t * marginal_matrix(shape, S) for t, S in zip(theta, subs) if t > 0])
    lam = eigenvalues(theta, shape)
    K = math.prod(shape)
    N = np.zeros((K, K))
    for T, lt in zip(subs, lam):
        if lt > 0:
            N += _projector(shape, T) / lt
    return A, N @ A.T, N


def objective(theta, c, shape, *, outside=None, up=None) -> tuple[float, np.ndarray]:
    """(Σ_T c_T / λ_T, its gradient in θ): ∂f/∂θ_S = −2 θ_S Π_{i∉S} n_i Σ_{T ⊆ S} c_T / λ_T² (inf when unanswerable).

    Examples
    --------
    >>> f, g = objective([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 2.0], (2, 2))  # the identity, c on Q_{0,1}
    >>> f, (g + 0.0).tolist()   # + 0.0: no negative zeros
    (2.0, [0.0, 0.0, 0.0, -4.0])
    """
    theta = np.asarray(theta, dtype=float)
    c = np.asarray(c, dtype=float)
    if outside is None or up is None:
        subs = subsets(len(shape))
        outside, up = _outside(shape, subs), _up(subs)
    lam = up @ (theta * theta * outside)
    used = c > 0
    if np.any(lam[used] <= 0):
        return math.inf, np.zeros_like(theta)
    f = float(np.sum(c[used] / lam[used]))
    dlam = np.where(used, c / np.where(lam > 0, lam, 1.0) ** 2, 0.0)  # −∂f/∂λ_T
    return f, -(up.T @ dlam) * 2.0 * theta * outside


def trace_error(theta, c, shape) -> float:
    """Σ_T c_T / λ_T: tr(WᵀW (AᵀA)⁺) for c_T = tr(WᵀW Q_T); inf when some c_T > 0 has λ_T = 0."""
    lam = eigenvalues(theta, shape)
    used = np.asarray(c) > 0
    if np.any(lam[used] <= 0):
        return math.inf
    return float(np.sum(np.asarray(c)[used] / lam[used]))


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


def workload_traces(terms, shape) -> np.ndarray:
    """c_T = tr(WᵀW Q_T) for every T of :func:`subsets` (per-axis sums over the ranges, no K × K matrix)."""
    return np.array([_trace(terms, shape, T) for T in subsets(len(shape))])


def fit_marginals(terms, shape, edges, max_iter: int) -> np.ndarray:
    """The weights θ (one per subset of :func:`subsets`) with the lowest error under the linear Δ bound ≤ 1.

    SLSQP on Σ_T c_T/λ_T (exact gradient) with the edges' linear Δ bounds as
    constraints, from one start per level (all weight on the marginals of r
    attributes, r = 0 … d, where that answers the workload) and from equal
    weights; the lowest error wins. Weights below :data:`ZERO` of the largest
    are then set to exactly 0 when that does not raise the error.
    Raises ValueError when the template does not apply (a grid above
    :data:`MARGINAL_CELLS` cells, more than :data:`MARGINAL_AXES` axes, or a dense 1-D Gram).
    """
    from scipy.optimize import minimize  # lazy: import blowfish_nb stays light (issue 28)

    from .optimized import TOTAL_WEIGHT  # noqa: PLC0415  (one constant, defined with the edge-domain template)

    d, K = len(shape), math.prod(shape)
    if K > MARGINAL_CELLS or d > MARGINAL_AXES or any(t.gram is not None for t in terms):
        raise ValueError("the weighted-marginals template does not apply here")
    subs = subsets(d)
    c = workload_traces(terms, shape)
    scale = c.sum() or 1.0
    c = c / scale
    outside, up = _outside(shape, subs), _up(subs)
    C = bound_rows(edges, subs)
    if C is None:
        raise ValueError("no edge: nothing to weigh")
    lower = np.zeros(len(subs))
    upper = np.full(len(subs), np.inf)
    if not C[:, 0].any():
        upper[0] = TOTAL_WEIGHT  # the total: free without ⊥

    def fun(theta):
        f, g = objective(theta, c, shape, outside=outside, up=up)
        return (1e300, np.zeros_like(theta)) if not math.isfinite(f) else (f, g)

    def feasible(theta):
        theta = np.clip(theta, lower, upper)
        return theta / max(1.0, float((C @ theta).max()))

    starts = [np.ones(len(subs))]
    for r in range(d + 1):
        starts.append(np.array([1.0 if len(S) == r else 0.0 for S in subs]))
    best = None
    for theta0 in starts:
        theta0 = feasible(theta0 / max(float((C @ theta0).max()), 1e-300))
        if not C[:, 0].any():
            theta0[0] = TOTAL_WEIGHT
        if not math.isfinite(fun(theta0)[0]) or fun(theta0)[0] >= 1e300:
            continue  # this level does not answer the workload
        res = minimize(fun, theta0, jac=True, method="SLSQP", bounds=list(zip(lower, np.where(
            np.isinf(upper), None, upper))), constraints=[{"type": "ineq", "fun": lambda t: 1.0 - C @ t,
                                                           "jac": lambda t: -C}],
            options={"maxiter": max_iter, "ftol": 1e-14})
        theta = feasible(res.x)
        f = fun(theta)[0]
        if best is None or f < best[0]:
            best = (f, theta)
    if best is None:
        raise ValueError("no weighted-marginals start answers the workload")
    f, theta = best
    tiny = theta < ZERO * theta.max()
    if tiny.any():
        cut = np.where(tiny, 0.0, theta)
        if fun(cut)[0] <= f:
            theta = cut
    return theta


def bound_rows(edges, subs) -> np.ndarray | None:
    """The linear Δ bounds as rows of C (Δ ≤ max(C θ)); None when the policy has no edge."""
    rows = []
    for i, pr in enumerate(edges.pairs):
        if pr is not None:
            rows.append([2.0 if i in S else 0.0 for S in subs])
    if edges.bottom:
        rows.append([1.0] * len(subs))
    if edges.multi:
        rows.append([2.0 if S else 0.0 for S in subs])
    return np.array(rows) if rows else None


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
