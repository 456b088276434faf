"""From an accuracy wish (α, β) to ε, and confidence intervals, for linear releases.

BlowfishDB's analyst view asks for (α, β)-accuracy: with probability at
least 1 − β, **every** answer of the release is within α of the truth at
once (an ℓ∞ guarantee over the release, not one answer at a time).

For a linear mechanism the error of the answers is M·η with η Laplace of
scale Δ/ε, so err(ε) = Z/ε where Z = M·η₁ does not depend on ε. Hence

    P(max |err| ≤ α) ≥ 1 − β   ⇔   ε ≥ q_{1−β}(max |Z|) / α,

no bisection needed. Two ways to get the quantile:

* **closed form** when every answer is one Laplace term of its own (the
  Laplace mechanism on a histogram): P = (1 − e^{−αε/Δ})^q, so
  ε = Δ·ln(1 / (1 − (1 − β)^{1/q})) / α;
* **Monte Carlo** otherwise: n draws of max|Z|, and instead of the empirical
  quantile an upper confidence bound for it (the order statistic that
  exceeds the true (1−β)-quantile with probability ≥ 1 − γ, from the
  binomial distribution), so Monte-Carlo error can only make ε larger.

The draws touch no data: they are noise pushed through the mechanism's
public linear map, with their own generator.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import binom

from .exceptions import InvalidParameterError
from .mechanisms import HThetaRanges, Laplace, MatrixMechanism, Transformed
from .mechanisms.factors import IdentityFactor, PrefixFactor, TreeFactor
from .policy import Policy, spanning_tree, transform
from .ranges import as_ranges
from .workload import Workload

__all__ = ["epsilon_for_accuracy", "error_draws", "check_accuracy", "DRAWS", "CONFIDENCE"]

#: Monte-Carlo draws of the release error used for (α, β) → ε and intervals
DRAWS = 2000
#: confidence that the Monte-Carlo quantile does not understate the true one
CONFIDENCE = 0.99


def check_accuracy(accuracy) -> tuple[float, float]:
    """(α, β) validated: α > 0 finite, 0 < β < 1."""
    try:
        alpha, beta = accuracy
    except (TypeError, ValueError):
        raise InvalidParameterError(f"accuracy must be a pair (alpha, beta), got {accuracy!r}") from None
    for name, v in (("alpha", alpha), ("beta", beta)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)) or not math.isfinite(v):
            raise InvalidParameterError(f"accuracy {name} must be a finite number, got {v!r}")
    if alpha <= 0:
        raise InvalidParameterError(f"accuracy alpha must be > 0, got {alpha!r}")
    if not 0 < beta < 1:
        raise InvalidParameterError(f"accuracy beta must lie strictly between 0 and 1, got {beta!r}")
    return float(alpha), float(beta)


def epsilon_for_accuracy(mechanism, workload: Workload, policy: Policy, alpha: float, beta: float,
                         draws: int = DRAWS, seed: int = 0) -> float:
    """Smallest ε with P(every answer within α) ≥ 1 − β (see the module notes).

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload, mechanisms
    >>> e = epsilon_for_accuracy(mechanisms.Laplace(), workload.identity(100), policy.dp(Domain.grid(100)), 10, 0.05)
    >>> round(e, 4)  # closed form: ln(1 / (1 - 0.95^(1/100))) / 10
    0.7576
    """
    alpha, beta = check_accuracy((alpha, beta))
    closed = _single_laplace_terms(mechanism, workload)
    if closed is not None:
        q = workload.shape[0]
        delta = mechanism.sensitivity(policy)
        return delta * math.log(1.0 / (1.0 - (1.0 - beta) ** (1.0 / q))) / alpha
    Z = np.max(np.abs(error_draws(mechanism, workload, policy, draws, seed)), axis=1)
    return float(upper_quantile(Z, 1 - beta)) / alpha


def upper_quantile(samples: np.ndarray, p: float, confidence: float = CONFIDENCE) -> float:
    """An upper confidence bound for the p-quantile: the smallest order statistic Z_(j) with P(Z_(j) ≥ q_p) ≥ confidence.

    Examples
    --------
    >>> z = np.arange(1, 1001, dtype=float)
    >>> bool(upper_quantile(z, 0.95) > np.quantile(z, 0.95))
    True
    """
    z = np.sort(np.asarray(samples, dtype=float))
    n = z.size
    # P(Z_(j) ≥ q_p) = P(Binomial(n, p) ≤ j − 1)
    j = int(binom.ppf(confidence, n, p)) + 1
    if j > n:
        raise InvalidParameterError(f"{n} Monte-Carlo draws cannot bound the {p:g}-quantile; use more draws")
    return float(z[j - 1])


def error_draws(mechanism, workload: Workload, policy: Policy, draws: int = DRAWS, seed: int = 0) -> np.ndarray:
    """``draws`` samples of the answers' error at ε = 1, one per row (linear mechanisms only)."""
    if not getattr(mechanism, "linear", False) and not isinstance(mechanism, HThetaRanges):
        raise InvalidParameterError(
            f"accuracy targets need a linear mechanism (noise pushed through a fixed map); {mechanism.name} is not"
        )
    rng = np.random.default_rng(seed)
    k = policy.domain.size
    if isinstance(mechanism, Transformed):
        tree = policy if policy.is_forest() else spanning_tree(policy, mechanism.tree)
        ell = mechanism.sensitivity(policy)
        t = transform(tree)
        from .mechanisms.transformed import _sparse_transformed

        W_T = _sparse_transformed(workload, t)
        eta = rng.laplace(0.0, ell, size=(len(t.edges), draws))
        return np.asarray(W_T @ eta).T
    if isinstance(mechanism, MatrixMechanism) and len(policy.domain.shape) == 1 and isinstance(
            mechanism.factor, (IdentityFactor, PrefixFactor, TreeFactor)):
        op = mechanism.measured(policy)[0]
        b = mechanism.noise_scale(policy, 1.0)
        eta = rng.laplace(0.0, b, size=(draws, op.shape[0]))
        if isinstance(mechanism.factor, IdentityFactor):
            est = eta
        elif isinstance(mechanism.factor, PrefixFactor):
            est = np.diff(eta, axis=1, prepend=0.0)
        else:
            est = mechanism.factor.lstsq_rows(op, eta)
        return _apply_rows(workload, est[:, :k])
    zeros = np.zeros(k)
    if hasattr(mechanism, "sample"):
        try:
            return mechanism.sample(zeros, workload, policy, 1.0, draws, rng=rng)
        except InvalidParameterError:
            pass
    return np.stack([mechanism.release(zeros, workload, policy, 1.0, rng=rng) for _ in range(draws)])


def _apply_rows(workload: Workload, X: np.ndarray) -> np.ndarray:
    """W applied to every row of X (ranges by prefix sums, others row by row)."""
    r = as_ranges(workload)
    if r is not None:
        C = np.concatenate([np.zeros((X.shape[0], 1)), np.cumsum(X, axis=1)], axis=1)
        return C[:, r.hi + 1] - C[:, r.lo]
    return np.stack([workload @ row for row in X])


def _single_laplace_terms(mechanism, workload) -> bool | None:
    """True when every answer is one independent Laplace term (the Laplace mechanism on single cells)."""
    if not isinstance(mechanism, Laplace):
        return None
    r = as_ranges(workload)
    if r is None or not np.array_equal(r.lo, r.hi) or np.unique(r.lo).size != r.lo.size:
        return None
    return True
