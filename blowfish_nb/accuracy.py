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
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.stats import binom

from .exceptions import InvalidParameterError
from .mechanisms import HThetaRanges, Laplace, MatrixMechanism, Ordered, Transformed
from .mechanisms.factors import IdentityFactor, PrefixFactor, TreeFactor
from .policy import Policy, spanning_tree, transform
from .policy.transform import WINDOW_SPAN, crossing_rows
from .ranges import as_ranges
from .workload import Identity, Workload
from ._arrays import unique_sorted

__all__ = ["epsilon_for_accuracy", "error_draws", "sampler", "max_abs_errors", "check_accuracy", "upper_quantile", "DRAWS",
           "CONFIDENCE"]

#: Monte-Carlo draws of the release error used for (α, β) → ε and intervals. With 99% confidence the bound on
#: the 0.95-quantile is then the 775th of 800 sorted draws (0.969) rather than the 966th of 1,000 (0.966): a
#: slightly larger ε for a translation that fits in 50 ms at 4,096 cells (benchmarks/accessor_scale.py)
DRAWS = 800
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
    terms = _error_terms(mechanism, workload, policy)
    if terms is not None:
        ones, twos, shared, scale = terms
        if ones + twos == 0:
            return 1e-12  # nothing random to bound: any ε meets the target (kept positive)
        if not shared and twos == 0:
            # independent single terms: P(all within) = (1 − e^{−t})^q exactly, t = αε/scale
            return scale * math.log(1.0 / (1.0 - (1.0 - beta) ** (1.0 / ones))) / alpha
        return scale * _union_bound_t(ones, twos, beta) / alpha
    Z = max_abs_errors(mechanism, workload, policy, draws, seed)
    return float(upper_quantile(Z, 1 - beta)) / alpha


def max_abs_errors(mechanism, workload: Workload, policy: Policy, draws: int = DRAWS, seed: int = 0,
                   chunk: int = 50) -> np.ndarray:
    """max over the answers of |error| at ε = 1, for ``draws`` draws.

    The draws come in chunks (small arrays stay in cache), chunk i from its own
    generator spawned from ``seed``, so the result does not depend on how the
    chunks are scheduled; the chunks run on up to two threads (NumPy releases
    the GIL in the noise generation and the array passes).
    """
    draw, scale = _unit_sampler(mechanism, workload, policy)
    starts = list(range(0, draws, chunk))
    seeds = np.random.SeedSequence(seed).spawn(len(starts))

    def one(i):
        z = draw(min(chunk, draws - starts[i]), np.random.default_rng(seeds[i]))
        return np.maximum(z.max(axis=1), -z.min(axis=1))  # max |z| without an |z| temporary

    workers = min(2, os.cpu_count() or 1, len(starts))
    if workers < 2:
        return np.concatenate([one(i) for i in range(len(starts))]) * scale
    with ThreadPoolExecutor(workers) as pool:
        return np.concatenate(list(pool.map(one, range(len(starts))))) * scale


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


def error_draws(mechanism, workload: Workload, policy: Policy, draws: int = DRAWS, seed=0) -> np.ndarray:
    """``draws`` samples of the answers' error at ε = 1, one per row (linear mechanisms only)."""
    return sampler(mechanism, workload, policy)(draws, np.random.default_rng(seed))


def sampler(mechanism, workload: Workload, policy: Policy):
    """A function (n, rng) → n draws of the answers' error at ε = 1; the public set-up is done once, here."""
    draw, scale = _unit_sampler(mechanism, workload, policy)
    if scale == 1.0:
        return draw
    return lambda n, rng: draw(n, rng) * scale


def _unit_sampler(mechanism, workload: Workload, policy: Policy):
    """(draw, scale): draw(n, rng) · scale are n draws of the error at ε = 1.

    The Laplace noise is drawn at scale 1 and the scale applied to what is
    left at the end (a maximum, for the accuracy translation): one pass fewer
    over the largest array.
    """
    if not getattr(mechanism, "linear", False) and not isinstance(mechanism, HThetaRanges):
        raise InvalidParameterError(
            f"accuracy targets need a linear mechanism (noise pushed through a fixed map); {mechanism.name} is not"
        )
    k = policy.domain.size
    if isinstance(mechanism, Transformed):
        tree = policy if policy.is_forest() else spanning_tree(policy, mechanism.tree)
        ell = mechanism.sensitivity(policy)
        P = transform(tree).incidence.tocsr()

        PT = P.T.tocsr()

        buffers = threading.local()

        def draw(n, rng):
            eta = laplace(rng, 1.0, (n, P.shape[1]), out=_buffer(buffers, (n, P.shape[1])))
            return _apply_rows(workload, np.asarray((PT.T @ eta.T).T))  # x̂ − x = P_T (x̂_T − x_T); c is noise-free

        return draw, float(ell)
    if isinstance(mechanism, MatrixMechanism) and len(policy.domain.shape) == 1 and isinstance(
            mechanism.factor, (IdentityFactor, PrefixFactor, TreeFactor)):
        op = mechanism.measured(policy)[0]
        b = mechanism.noise_scale(policy, 1.0)

        buffers = threading.local()

        def draw(n, rng):
            eta = laplace(rng, 1.0, (n, op.shape[0]), out=_buffer(buffers, (n, op.shape[0])))
            if isinstance(mechanism.factor, IdentityFactor):
                est = eta
            elif isinstance(mechanism.factor, PrefixFactor):
                est = np.diff(eta, axis=1, prepend=0.0)
            else:
                est = mechanism.factor.lstsq_rows(op, eta, overwrite=True)  # eta is this thread's scratch
            return _apply_rows(workload, est[:, :k], scratch=isinstance(mechanism.factor, TreeFactor))

        return draw, float(b)
    zeros = np.zeros(k)

    def draw(n, rng):
        if hasattr(mechanism, "sample"):
            try:
                return mechanism.sample(zeros, workload, policy, 1.0, n, rng=rng)
            except InvalidParameterError:
                pass
        return np.stack([mechanism.release(zeros, workload, policy, 1.0, rng=rng) for _ in range(n)])

    return draw, 1.0


def _buffer(store: threading.local, shape: tuple[int, int]) -> np.ndarray:
    """A reusable noise buffer of ``shape``, one per thread (chunks on two threads must not share one)."""
    cache = store.__dict__.setdefault("arrays", {})
    if shape not in cache:
        cache[shape] = np.empty(shape)
    return cache[shape]


def laplace(rng: np.random.Generator, scale: float, shape, out: np.ndarray | None = None) -> np.ndarray:
    """Laplace(0, scale) draws: exponentials with random sign bits (about 4× faster than ``rng.laplace``).

    ``out`` (float64, C-contiguous, of ``shape``) is filled in place when given.
    """
    n = int(np.prod(shape))
    out = np.empty(shape) if out is None else out
    flat = out.reshape(-1)
    rng.standard_exponential(out=flat)
    bits = np.unpackbits(rng.bit_generator.random_raw((n + 63) // 64).view(np.uint8))[:n]
    bits <<= 7
    top = 7 if sys.byteorder == "little" else 0
    flat.view(np.uint8)[top::8] ^= bits  # the IEEE sign bit lives in the most significant byte
    if scale != 1.0:
        flat *= scale
    return out


def _apply_rows(workload: Workload, X: np.ndarray, scratch: bool = False) -> np.ndarray:
    """W applied to every row of X (ranges by prefix sums, others row by row).

    ``scratch=True`` lets prefix workloads overwrite X (no fresh array: on
    these machines a new large temporary costs more than the sum itself).
    """
    if isinstance(workload, Identity):
        return X
    r = as_ranges(workload)
    if r is not None:
        if not r.lo.any():  # prefixes: one running sum, no leading zero column to copy in
            C = np.cumsum(X, axis=1, out=X) if scratch else np.cumsum(X, axis=1)
            return C if np.array_equal(r.hi, np.arange(X.shape[1])) else C[:, r.hi]
        C = np.concatenate([np.zeros((X.shape[0], 1)), np.cumsum(X, axis=1)], axis=1)
        return C[:, r.hi + 1] - C[:, r.lo]
    return np.stack([workload @ row for row in X])


def _union_bound_t(ones: int, twos: int, beta: float) -> float:
    """Smallest t with ones·e^{−t} + twos·(2 + t)e^{−t}/2 ≤ β (a union bound over the answers, scale 1).

    One Laplace term exceeds t with probability e^{−t}; the difference of two
    independent ones, whose density is (1 + |x|)e^{−|x|}/4, with probability
    (2 + t)e^{−t}/2. The union bound never understates the failure
    probability, so the ε it gives is always enough; for small β it is within
    a few per cent of the exact one.
    """
    def excess(t):
        return ones * math.exp(-t) + twos * (2 + t) * math.exp(-t) / 2 - beta

    lo, hi = 0.0, 1.0
    while excess(hi) > 0:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if excess(mid) > 0 else (lo, mid)
    return hi


def _error_terms(mechanism, workload, policy) -> tuple[int, int, bool, float] | None:
    """How the answers' errors are built when each is ±(one Laplace term) or the difference of two.

    Returns (answers with one term, answers with two, whether terms are shared
    between answers, Laplace scale at ε = 1), or None for anything else.
    The Laplace mechanism on single cells and the Ordered mechanism on
    prefixes give one term per answer; Transformed+Laplace on a forest gives
    one term per tree edge the range crosses.
    """
    r = as_ranges(workload)
    if r is None:
        return None
    if isinstance(mechanism, Laplace):
        if np.array_equal(r.lo, r.hi) and unique_sorted(r.lo).size == r.lo.size:
            return r.lo.size, 0, False, mechanism.sensitivity(policy)
        return None
    if isinstance(mechanism, Ordered) and not mechanism.consistent and len(policy.domain.shape) == 1:
        # the prefix strategy answers a prefix with one measured sum: one term, distinct per distinct end
        if (r.lo == 0).all() and unique_sorted(r.hi).size == r.hi.size:
            return r.hi.size, 0, False, mechanism.sensitivity(policy)
        return None
    if isinstance(mechanism, Transformed) and mechanism.inner == "laplace" and policy.is_forest():
        edges = transform(policy).edges
        if len(edges) == 0 or edges.min() < 0 or np.abs(edges[:, 0] - edges[:, 1]).max() > WINDOW_SPAN:
            return None  # long or ⊥ edges: leave it to Monte Carlo rather than tabulate every range × edge
        M = crossing_rows(r.lo, r.hi, edges, policy.domain.size).tocsr()
        per_row = np.diff(M.indptr)
        if per_row.max(initial=0) > 2 or not np.all(np.abs(M.data) == 1):
            return None
        shared = unique_sorted(M.indices).size != M.indices.size
        return int((per_row == 1).sum()), int((per_row == 2).sum()), shared, mechanism.sensitivity(policy)
    return None
