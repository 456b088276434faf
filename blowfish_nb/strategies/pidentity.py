"""p-Identity strategies: the identity plus p optimised non-negative rows, columns normalised (McKenna et al. 2018, §5).

A = [I; Θ]·D with Θ ≥ 0 (p × k) and D = diag(1/(1 + 1ᵀΘ)), so every column
of A has L1 norm exactly 1: under unbounded DP (and in the edge domain of a
tree policy, Haney et al. 2015 Thm 4.3) Δ = 1 with no smoothing. With
S = D⁻¹, AᵀA = D(I + ΘᵀΘ)D, and Woodbury gives
(AᵀA)⁻¹ = S(I − Θᵀ R Θ)S with R = (I_p + ΘΘᵀ)⁻¹, so for a workload Gram
G = WᵀW the error term is

    f(Θ) = tr(G (AᵀA)⁻¹) = tr(C) − ⟨R, Θ C Θᵀ⟩,   C = S G S,

and, with N = I − ΘᵀRΘ (so that Θ N = R Θ),

    ∂f/∂Θ = −2 R (ΘC)(I − Θᵀ R Θ) + 1 ⊗ 2·diag(G S N),

every product O(k²p) (never a k×k inverse). The gradient is checked against
finite differences in the tests. This module is written from the paper's
formulas; it shares no code with HDMM.
"""

from __future__ import annotations

import math

import numpy as np

from .lbfgsb import minimize_nonneg

__all__ = ["objective", "fit", "strategy_matrix", "range_gram", "prefix_gram", "default_p", "fit_best_p"]

#: L-BFGS-B's relative tolerance on f (1e-4 stops about 0.5 % above the optimum on all ranges, k = 256)
FTOL = 1e-5
#: the tolerance the best start is then polished to
POLISH_FTOL = 1e-7
#: the polish's iterations, in units of ``max_iter``: on 2,000 random ranges of k = 1,024 (65,536 parameters) every
#: start stops at its ``max_iter`` = 300 iterations still moving, so the iterations go to the start that won (with
#: 1× the side-by-side's ours/HDMM was 1.0000, a tie; with 3× it is below 1: benchmarks/results/hdmm_side_by_side.md)
POLISH_ITER = 3
#: L-BFGS-B's memory (corrections kept) when there are several starts to choose among
MAXCOR = 20
#: a lone start (auto's fit: ``restarts=1``, nothing to choose among) is one descent to :data:`POLISH_FTOL`, no
#: loose phase then a polish that dropped the memory, with (1 + POLISH_ITER)·max_iter iterations, this memory (SciPy's
#: default: the routine rebuilds a 2m × 2m matrix from m corrections of all p·k parameters every step, half the
#: descent's time at m = 20, p·k = 1,024), and its block start at :data:`QUICK_START_WEIGHT` (issue 28: the cold
#: 64-range dp quote's descent with its start, ≈ 22 → 10 ms; benchmarks/results/quote_cold.md)
QUICK_MAXCOR = 10
#: the block start's weight for a lone start: the fitted Θ's column sums were 0.74–0.94 (median) on the dp range
#: quotes of the sweep (k = 126–129 classes, p = 7–8), so a start at 1 (half of each column's L1 on its Θ row) is near
#: them; the multi-start fit keeps √(k/p) (a one-level hierarchy's weight; its results are the side-by-side's)
QUICK_START_WEIGHT = 1.0


def default_p(k: int) -> tuple[int, ...]:
    """Extra rows to try: k/16 as in the paper (at least 1); on axes of ≤ 64 cells also 1, 2, k/8 and k/4.

    Larger p is not always better in practice (L-BFGS-B stops in worse local optima): on all
    ranges of 25 cells p = 1 reaches f = 2777 and p = 7 only 2828.
    """
    if k > 64:
        return (max(1, k // 16),)
    return tuple(sorted({1, 2, max(1, k // 16), max(1, k // 8), max(1, k // 4)} - {0}))


def objective(theta: np.ndarray, gram: np.ndarray) -> tuple[float, np.ndarray]:
    """(tr(G (AᵀA)⁻¹), its gradient in Θ) for A = [I; Θ]·D (G symmetric: a workload's Gram WᵀW).

    Examples
    --------
    >>> G = np.eye(3)
    >>> f, g = objective(np.zeros((1, 3)), G)   # Θ = 0: the identity, tr(G) = 3
    >>> round(f, 9), g.shape
    (3.0, (1, 3))
    """
    T = np.asarray(theta, dtype=float)
    p, k = T.shape
    s = 1.0 + T.sum(axis=0)
    R = np.linalg.inv(np.eye(p) + T @ T.T)
    # C = S G S is never formed: Θ C = ((Θ S) G) S and, G symmetric, G S Θᵀ = (Θ S G)ᵀ, so one p × k × k product
    # gives both (the same quantities as through C, rounded differently in the last bits; two k × k temporaries and
    # a second product fewer: issue 28)
    TG = (T * s) @ gram  # Θ S G
    TC = TG * s  # Θ C
    TCT = TC @ T.T
    gd = np.diag(gram)
    f = float(np.dot(gd, s * s) - np.sum(R * TCT))  # tr(C) = Σ_j G_jj s_j²
    RT = R @ T
    grad = -2.0 * (R @ TC - (R @ TCT) @ RT)
    # diag(G S N) = diag(G) s − diag((G S Θᵀ)(R Θ)), the second column by column from (Θ S G) and R Θ
    dg = gd * s - np.einsum("ri,ri->i", TG, RT)
    grad += 2.0 * dg[None, :]
    return f, grad


def strategy_matrix(theta: np.ndarray) -> np.ndarray:
    """A = [I; Θ]·D, every column of L1 norm 1 ((k + p) × k).

    Examples
    --------
    >>> strategy_matrix(np.array([[1.0, 0.0]])).tolist()
    [[0.5, 0.0], [0.0, 1.0], [0.5, 0.0]]
    """
    T = np.asarray(theta, dtype=float)
    k = T.shape[1]
    A = np.vstack([np.eye(k), T])
    return A / A.sum(axis=0)[None, :]


def fit(gram: np.ndarray, p: int, *, restarts: int, max_iter: int, rng: np.random.Generator,
        start: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """The best Θ ≥ 0 (p × k) found for ``gram`` by L-BFGS-B (SciPy's, :mod:`.lbfgsb`), and f(Θ).

    Starts: ``start`` when given (a warm start), a block start (row r sums the
    r-th of p equal blocks of cells: a one-level hierarchy) and seeded random
    matrices, ``restarts`` in all; each descends to :data:`FTOL`, the lowest f
    wins and is polished to :data:`POLISH_FTOL`. A lone start (``restarts=1``)
    is one descent to :data:`POLISH_FTOL` instead (:data:`QUICK_MAXCOR`,
    :data:`QUICK_START_WEIGHT`).

    Examples
    --------
    >>> lo, hi = np.triu_indices(32)  # all ranges of 32 cells
    >>> G = range_gram(lo, hi, 32)
    >>> T, f = fit(G, 2, restarts=1, max_iter=100, rng=np.random.default_rng(0))
    >>> T.shape, round(float(f / np.trace(G)), 3)  # 11 % below the identity's tr(G)
    ((2, 32), 0.893)
    """
    k = gram.shape[0]
    scale = float(np.trace(gram)) / k or 1.0
    G = gram / scale  # f is linear in G: optimise a well-scaled copy
    starts = []
    if start is not None:
        starts.append(np.asarray(start, dtype=float))
    blocks = np.zeros((p, k))
    for r, cells in enumerate(np.array_split(np.arange(k), p)):
        blocks[r, cells] = 1.0
    lone = max(restarts, 1) == 1
    weight = QUICK_START_WEIGHT if lone else max(1.0, math.sqrt(k / p))
    starts.append(blocks * weight + 0.01 * rng.random((p, k)))
    while len(starts) < max(restarts, 1):
        starts.append(rng.random((p, k)))

    def fun(z):
        try:
            f, g = objective(z.reshape(p, k), G)
        except np.linalg.LinAlgError:
            return math.inf, np.zeros_like(z)
        if not (math.isfinite(f) and f > 0):
            return math.inf, np.zeros_like(z)
        return f, g.reshape(-1)

    def run(T0: np.ndarray, ftol: float, iters: int = max_iter, memory: int = MAXCOR) -> tuple[np.ndarray, float]:
        """L-BFGS-B from T0 (Θ ≥ 0), and the objective at its clamped end point."""
        # SciPy's L-BFGS-B routine without the scipy.optimize import (lbfgsb.py: the same iterates; issue 28)
        x = minimize_nonneg(fun, T0.reshape(-1), ftol=ftol, maxiter=iters, maxcor=memory)
        T = np.maximum(x, 0.0).reshape(p, k)
        return T, fun(T.reshape(-1))[0]

    if lone:  # nothing to choose among: one descent, with its memory, to the polish's tolerance
        T, f = run(starts[0], POLISH_FTOL, (1 + POLISH_ITER) * max_iter, QUICK_MAXCOR)
        if not math.isfinite(f):  # the start failed numerically: the identity
            return np.zeros((p, k)), float(np.trace(G)) * scale
        return T, f * scale
    best, best_f = None, math.inf
    for T0 in starts[:max(restarts, 1)]:
        T, f = run(T0, FTOL)
        if f < best_f:
            best, best_f = T, f
    if best is None:  # every start failed numerically: the identity
        return np.zeros((p, k)), float(np.trace(G)) * scale
    # polish the best start only, to a tighter tolerance (all ranges, k = 256: 65.09 → 64.93 per query at ε = 1)
    T, f = run(best, POLISH_FTOL, POLISH_ITER * max_iter)
    if f < best_f:
        best, best_f = T, f
    return best, best_f * scale


def fit_best_p(gram: np.ndarray, *, restarts: int, max_iter: int, rng: np.random.Generator,
               start: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """:func:`fit` for every p of :func:`default_p`, ⌈restarts / #p⌉ starts each (a warm ``start`` fixes p); the lowest f wins."""
    if start is not None:
        return fit(gram, start.shape[0], restarts=1, max_iter=max_iter, rng=rng, start=start)
    best = None
    ps = default_p(gram.shape[0])
    for p in ps:  # the restarts shared among the p values (at least one start each)
        T, f = fit(gram, p, restarts=-(-restarts // len(ps)), max_iter=max_iter, rng=rng)
        if best is None or f < best[1]:
            best = (T, f)
    return best


def range_gram(lo, hi, k: int, weights=None) -> np.ndarray:
    """Σ_r w_r 1_r 1_rᵀ for ranges [lo_r, hi_r] of a k-cell axis (O(q + k²)).

    Examples
    --------
    >>> range_gram(np.array([0, 1]), np.array([1, 1]), 2).tolist()
    [[1.0, 1.0], [1.0, 2.0]]
    """
    lo = np.asarray(lo, dtype=np.int64)
    h = np.asarray(hi, dtype=np.int64) + 1
    w = np.ones(lo.size) if weights is None else np.asarray(weights, dtype=float)
    n = k + 1
    flat = np.r_[lo * n + lo, h * n + h, lo * n + h, h * n + lo]
    Z = np.bincount(flat, np.r_[w, w, -w, -w], minlength=n * n).reshape(n, n)
    return np.cumsum(np.cumsum(Z, axis=0), axis=1)[:k, :k]


def prefix_gram(gram: np.ndarray) -> np.ndarray:
    """The Gram of W C⁻¹ in the prefix-sum (edge) domain of the line, C the lower-triangular ones.

    x = C⁻¹ P with P_j = x_0 + … + x_j (the line tree's edge values, P_{k-1} the total), so
    W x = (W C⁻¹) P and (W C⁻¹)ᵀ(W C⁻¹) = C⁻ᵀ G C⁻¹: differences of adjacent rows and columns.

    Examples
    --------
    >>> prefix_gram(np.ones((2, 2))).tolist()   # the total alone: only P_1 counts
    [[0.0, 0.0], [0.0, 1.0]]
    """
    # (C⁻¹)_{ij}: +1 at i = j, −1 at j = i + 1... applied as W C⁻¹: column j minus column j + 1
    M = np.array(gram, dtype=float)
    M[:-1, :] -= M[1:, :].copy()
    M[:, :-1] -= M[:, 1:].copy()
    return M
