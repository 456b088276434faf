"""The SVD lower bound for matrix mechanisms under a policy (Haney et al. 2015, App. A, Cor. A.2).

Any matrix-mechanism strategy answering W under (ε, δ, G)-Blowfish privacy
has total squared error at least P(ε, δ)·(λ₁ + … + λ_s)²/n_G, with
P(ε, δ) = 2 log(2/δ)/ε², λ the singular values of W_G = W P_G and n_G the
number of edges. The λ are the square roots of the eigenvalues of
L^{1/2} WᵀW L^{1/2} with L = P_G P_Gᵀ, a k×k problem whatever |E| is, and
the nonzero eigenvalues of W L Wᵀ, a q×q one (used when q < k).

P(ε, δ) belongs to (ε, δ) mechanisms with Gaussian noise, which Laplace
mechanisms can beat. For pure ε (Laplace noise scaled to the L1 sensitivity)
the same argument gives the factor 2/ε²: Δ₁(A) ≥ Δ₂(A), and
min_A Δ₂(A)²‖W_G A⁺‖²_F = (Σλ)²/n_G; that is the default (``delta=None``).

Our releases draw discrete Laplace noise (:mod:`blowfish_nb.mechanisms.noise`),
whose variance v(b) = 1/(2 sinh²(1/(2b))) is a little below 2b². Every
measured row of a strategy that moves under the policy has a scale b ≥ 1/ε
(whole-valued rows change by at least 1), and v(b)/(2b²) grows with b, so
each noise term has at least the fraction c(ε) = v(1/ε)·ε²/2 of the continuous
variance: the pure-ε factor is v(1/ε) = c(ε)·2/ε² (0.92·2/ε² at ε = 1,
→ 2/ε² as ε → 0).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .._validation import check_epsilon
from ..exceptions import InvalidParameterError
from ..mechanisms import noise
from ..mechanisms.gram import as_sparse
from ..policy import BOTTOM, Policy

__all__ = ["lower_bound", "LOWER_BOUND_LIMIT"]

LOWER_BOUND_LIMIT = 2048


def lower_bound(workload, policy: Policy, epsilon: float, delta: float | None = None) -> float:
    """Per-query lower bound on the expected squared error of any matrix mechanism (dense; k ≤ 2048).

    ``delta=None`` bounds ε-private Laplace matrix mechanisms; a δ in (0, 1)
    gives Cor. A.2's bound for (ε, δ) Gaussian ones.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> round(lower_bound(workload.identity(16), policy.dp(Domain.grid(16)), 1.0), 4)  # Laplace is optimal here
    1.8413
    >>> round(lower_bound(workload.identity(16), policy.dp(Domain.grid(16)), 1.0, delta=1e-3), 3)
    15.202
    """
    epsilon = check_epsilon(epsilon)
    if delta is not None and not 0 < delta < 1:
        raise InvalidParameterError(f"delta must be None or lie in (0, 1), got {delta!r}")
    k = policy.domain.size
    if k > LOWER_BOUND_LIMIT:
        raise InvalidParameterError(f"lower_bound is dense; k={k} is above {LOWER_BOUND_LIMIT}")
    e = policy.edges()
    m = len(e)
    if m == 0:
        return 0.0
    cols = np.arange(m)
    pair = e[:, 1] != BOTTOM
    P = sp.csr_array((np.r_[np.ones(m), -np.ones(int(pair.sum()))],
                      (np.r_[e[:, 0], e[pair, 1]], np.r_[cols, cols[pair]])), shape=(k, m))
    L = P @ P.T
    q = workload.shape[0]
    if q < k:
        # the λ² are the nonzero eigenvalues of (W P)(W P)ᵀ = W L Wᵀ as well: one q × q eigvalsh, no eigh of L
        # (issue 28: with OpenBLAS's threads on a loaded machine, the k × k eigh of a 64-range quote took ~0.6 s)
        S = _rows(workload)
        M = S @ L @ S.T
        M = np.asarray(M.toarray() if sp.issparse(M) else M, dtype=float)
        sing = np.sqrt(_nonzero(np.linalg.eigvalsh((M + M.T) / 2)))
    else:
        G = _gram(workload)
        vals, vecs = np.linalg.eigh(L.toarray())
        root = (vecs * np.sqrt(_nonzero(vals))) @ vecs.T
        sing = np.sqrt(_nonzero(np.linalg.eigvalsh(root @ G @ root)))
    factor = noise.variance(1.0 / epsilon) if delta is None else 2 * math.log(2 / delta) / epsilon**2
    total = factor * sing.sum() ** 2 / m
    return float(total / workload.shape[0])


def _nonzero(vals: np.ndarray) -> np.ndarray:
    """Eigenvalues of a PSD matrix with round-off set to zero.

    A null eigenvalue comes back as ±1e-16 or so; clipped at 0 and square-rooted it would add ~1e-8 per null
    direction to the singular-value sum, i.e. the bound would round *up*. Anything below the eigensolver's backward
    error (size × machine epsilon × the largest eigenvalue) is zero here, so the bound can only round down.
    """
    vals = np.asarray(vals, dtype=float)
    if vals.size == 0:
        return vals
    tol = vals.size * np.finfo(float).eps * max(float(np.abs(vals).max()), 0.0)
    return np.where(vals > tol, vals, 0.0)


def _rows(workload):
    """W itself: sparse through its structure, or the dense array a user gave."""
    if not hasattr(workload, "dense"):
        return np.asarray(workload, dtype=float)
    return as_sparse(workload)


def _gram(workload) -> np.ndarray:
    """WᵀW (k×k): through a sparse form, so many queries over a small domain stay cheap."""
    if not hasattr(workload, "dense"):
        W = np.asarray(workload, dtype=float)
        return W.T @ W
    S = as_sparse(workload)
    return np.asarray((S.T @ S).todense())
