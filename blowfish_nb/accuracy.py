"""From an accuracy wish (α, β) to ε, and confidence intervals, for linear releases.

BlowfishDB's analyst view asks for (α, β)-accuracy: with probability at
least 1 − β, **every** answer of the release is within α of the truth at
once (an ℓ∞ guarantee over the release, not one answer at a time).

For a linear mechanism the error of the answers is M·η, η the discrete
Laplace noise of scale Δ/ε (:mod:`blowfish_nb.mechanisms.noise`). Two ways
to find the least ε:

* **closed form** when every answer carries one noise term of its own (the
  Laplace mechanism on single cells, the Ordered mechanism on prefixes,
  Transformed+Laplace where each range crosses one tree edge): the error is
  ±Z, a whole number, so P(all within α) = (1 − 2t^{⌊α⌋+1}/(1 + t))^q with
  t = e^{−ε/Δ}, solved for t by bisection (the mechanism's ``single_terms``);
* **exact chain** when the answers' errors are the first differences of
  (0, Z₁, …, Z_n, 0) (the mechanism's ``difference_chain``: the histogram
  under the line policy, whose neighbouring cells share a tree edge's
  noise): a certified lower bound on P(all within α) from the chain's
  transfer operator (:mod:`blowfish_nb.analysis.chain_tail`), solved for ε
  (issue 28: it replaced two Monte-Carlo rounds, and asks the ε the
  coverage needs, without the rounds' confidence margin);
* **one scaled row per answer** when each answer is one measured row of an
  ``Optimized`` strategy divided by its weight, the rows independent (the
  range–edge strategy that stands in for auto's fit on ranges under a tree
  policy): the errors are independent lattice Laplace terms, so the exact
  product of their laws, with the grid's rounding charged, is a lower bound
  on the coverage for every histogram (:mod:`blowfish_nb.analysis.scaled_rows`;
  issue 28: no Monte-Carlo round, no confidence margin);
* **independent blocks** for the range-component strategy (ranges under a
  1-D policy without ⊥ off a tree, grouped by the edges that change them
  together): an exact-law lower bound, product over independent blocks
  (:mod:`blowfish_nb.analysis.range_component_quote`; issue 28);
* **tabulated quantiles** for OrderedHierarchical's prefix sums when one tree
  spans the domain (the cumulative query under dp, k = 16, 32, …, 4,096): the
  quantiles of max |error| were drawn once per noise scale on a 2.2 % grid,
  8,000 releases each, as 99 % upper confidence bounds
  (:mod:`blowfish_nb.analysis.prefix_table`; issue 28: it replaced two
  Monte-Carlo rounds, ~1.2 s cold at k = 4,096, by a look-up);
* **Monte Carlo** otherwise: draws of max |error| come from the mechanism's
  own vectorised ``sample`` on a zero histogram (public noise only, no data),
  and instead of the empirical quantile an upper confidence bound for it
  (the order statistic Z_(j) of n draws that exceeds the true
  (1 − β)-quantile with probability ≥ 1 − γ). A first guess ε₀, then fresh
  batches at the candidate ε confirm it (or raise it by the ratio q/α, at
  least 1 %) until the bound is ≤ α: the ε returned is one at which the
  bound was checked with the noise actually drawn, whatever the guess.

  The guess aims where the certifying order statistic sits: the ε at which
  the (j/n)-quantile of max |error| is α. A mechanism that knows its
  answers' exact error variances σ_i² (``answer_variances``; answers that
  sum many noise terms: OrderedHierarchical's prefixes, a fitted
  ``Optimized`` strategy's ranges) gets it analytically (issue 28: it saves the guessing round): Gaussian tails with
  those variances, P(max |error| > α) ≈ the union Σ_i 2Φ̄(α/σ_i(ε)), for
  prefix sums tightened by Hunter's chain bound over consecutive prefixes,
  set equal to 1 − j/n and solved for ε, then one 1 % step up
  (:data:`GUESS_STEP`). It is a CLT guess, not a bound: the draws certify
  it. Otherwise a batch at ε = 1 gives ε₀ = Z_(j)/α (discrete noise scales
  about as 1/ε).

The draws touch no data: they are noise pushed through the mechanism's
public linear map, with their own generator. Everything here is a function
of public inputs (mechanism, workload, policy, α, β), so it is remembered
(:class:`~blowfish_nb.analysis.selection.Memo`, per
:func:`~blowfish_nb.analysis.selection.memo_scope`): the ε of each request,
the closed form's terms, the answers' variances at ε = 1, and each round's
sorted draws by round and ε (the guessing round at ε = 1 serves every
(α, β) of a query). A remembered result
is the one the computation returns, to the last bit: the draws of a round
depend on its seed and ε only.
"""

from __future__ import annotations

import functools
import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .analysis.chain_tail import chain_epsilon
from .analysis.prefix_table import tabulated_epsilon
from .analysis.range_component_quote import component_epsilon, component_route
from .analysis.scaled_rows import scaled_rows, scaled_rows_epsilon
from .analysis.selection import Memo, public_key
from .exceptions import InvalidParameterError
from .policy import Policy
from .ranges import Ranges, as_ranges
from .workload import Workload

__all__ = ["epsilon_for_accuracy", "epsilon_below", "error_draws", "max_abs_errors", "check_accuracy", "upper_quantile",
           "clear_memory", "chunk_draws", "binomial_quantile", "DRAWS", "CONFIDENCE"]

#: Monte-Carlo draws of the release error used for (α, β) → ε and intervals. With 99% confidence the bound on
#: the 0.95-quantile is then the 775th of 800 sorted draws (0.969) rather than the 966th of 1,000 (0.966)
DRAWS = 800
#: confidence that the Monte-Carlo quantile does not understate the true one
CONFIDENCE = 0.99
#: confirmation rounds of the Monte-Carlo ε before giving up
ROUNDS = 8
#: the analytic guess starts this factor above the ε where its Gaussian model puts Z_(j) at α: the confirmation
#: rounds' own least step (a round that fails raises ε by at least 1 %), so the first round passes more often at
#: no more expected ε than the guessing round's route, which pays that step whenever its first confirmation fails
GUESS_STEP = 1.01
#: results remembered (over every scope): ε per request, and (closed-form terms or sorted draws of one round) per query
REMEMBERED = 4096
#: below this many noise values a round (draws × cells) the chunks run on this thread: a pool costs more
THREADED_VALUES = 1 << 20
#: a chunk of a round draws about this many noise values (draws × cells), at least :data:`MIN_CHUNK` draws: one
#: ``sample`` call per chunk, so small domains take a round in one call (each call costs its checks and set-up:
#: 16 calls of 50 draws made 1 ms of noise on 50 cells cost 10–15 ms) and large ones still split for two threads.
#: 0 gives chunks of :data:`MIN_CHUNK` draws whatever the domain (the draws before issue 16; benchmarks compare)
CHUNK_VALUES = 1 << 18
#: the fewest draws in a chunk
MIN_CHUNK = 50

_EPSILONS = Memo(REMEMBERED)
_LAWS = Memo(REMEMBERED)


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
    >>> round(e, 4)  # closed form with discrete noise: (1 − 2t¹¹/(1 + t))^100 = 0.95
    0.7155
    """
    alpha, beta = check_accuracy((alpha, beta))
    _check_linear(mechanism)
    query = _query_key(mechanism, workload, policy, draws, seed)
    request = None if query is None else (query, alpha, beta)
    remembered = _EPSILONS.get(request)
    if remembered is not None:
        return remembered
    epsilon = _epsilon(mechanism, workload, policy, alpha, beta, draws, seed, query)
    _EPSILONS.put(request, epsilon)
    return epsilon


def epsilon_below(mechanism, workload: Workload, policy: Policy, alpha: float, beta: float,
                  bound: float) -> float | None:
    """:func:`epsilon_for_accuracy` of ``mechanism`` when it is below ``bound``, else None; screened by one round.

    For comparing an alternative with an ε already quoted (``bound``, certified on its own): a mechanism whose
    quote is Monte Carlo is first screened by one round of :data:`DRAWS` draws at ``bound`` (seeded, public
    noise only) — when their empirical (1 − β)-quantile of max |error| is above α the mechanism would need more
    than ``bound`` and None is returned without its certifying rounds. A screen, not a bound: a wrong call keeps
    the other quote, which is certified anyway; whatever is returned is this mechanism's own certified ε.

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy, workload
    >>> m, W, g = mechanisms.Laplace(), workload.identity(100), policy.dp(Domain.grid(100))
    >>> epsilon_below(m, W, g, 10, 0.05, 1.0) == epsilon_for_accuracy(m, W, g, 10, 0.05)
    True
    >>> epsilon_below(m, W, g, 10, 0.05, 0.5) is None  # it needs 0.7155
    True
    """
    alpha, beta = check_accuracy((alpha, beta))
    quick = (mechanism.single_terms(workload, policy) is not None or mechanism.difference_chain(workload, policy)
             is not None or tabulated_epsilon(mechanism, workload, policy, alpha, beta) is not None)
    if not quick:
        z = max_abs_errors(mechanism, workload, policy, bound, DRAWS, seed=SCREEN_SEED)
        if np.quantile(z, 1 - beta) > alpha:
            return None
    epsilon = epsilon_for_accuracy(mechanism, workload, policy, alpha, beta)
    return epsilon if epsilon < bound else None


#: the seed of :func:`epsilon_below`'s screening round (its draws are never those of a certifying round)
SCREEN_SEED = 1 << 20


def clear_memory() -> None:
    """Forget every remembered quote: ε, closed forms, draws, mechanism choices, optimised strategies, H^θ plans.

    No result changes by it (each is recomputed, to the last bit, when asked
    again); for tests that count or replace the work behind a quote.
    """
    from .analysis import selection
    from .mechanisms import htheta

    htheta._PLANS.clear()  # H^θ's plans per (k, θ)
    _EPSILONS.clear()
    _LAWS.clear()
    selection._CHOICES.clear()
    selection._OPTIMIZED.clear()  # the fitted strategies behind ``mechanism="auto"`` (selection.optimized_for)


def _epsilon(mechanism, workload, policy, alpha, beta, draws, seed, query) -> float:
    """The computation of :func:`epsilon_for_accuracy` (``query``: the memo key of its inputs, or None)."""
    terms = _single_terms(mechanism, workload, policy, query)
    if terms is not None:
        count, delta = terms
        if count == 0 or delta == 0:
            return 1e-12  # nothing random to bound: any ε meets the target (kept positive)
        return _single_term_epsilon(count, delta, alpha, beta)
    blocks = _remembered(query, "components", lambda: component_route(mechanism, workload, policy))
    if blocks is not None:
        epsilon = component_epsilon(mechanism, policy, blocks, alpha, beta)
        if epsilon is not None:  # (None: α below the grid's allowance; Monte Carlo says so)
            return epsilon
    scaled = _remembered(query, "scaled rows", lambda: scaled_rows(mechanism, workload, policy))
    if scaled is not None:
        epsilon = scaled_rows_epsilon(mechanism, policy, scaled[1], alpha, beta)
        if epsilon is not None:  # (None: α below the grid's allowance; Monte Carlo says so)
            return epsilon
    chain = _remembered(query, "chain", lambda: mechanism.difference_chain(workload, policy))
    if chain is not None:
        n, delta = chain
        epsilon = 1e-12 if delta == 0 else chain_epsilon(n, delta, alpha, beta)
        if epsilon is not None:  # (None: a β too small for the bound's rounding allowance; Monte Carlo says so)
            return epsilon
    tabulated = tabulated_epsilon(mechanism, workload, policy, alpha, beta)
    if tabulated is not None:
        return tabulated
    seeds = np.random.SeedSequence(seed).spawn(ROUNDS + 1)
    epsilon = _analytic_guess(mechanism, workload, policy, alpha, beta, draws, query)
    if epsilon is None:  # no variances: the guessing round at ε = 1 (round 0)
        z = upper_quantile(_round(mechanism, workload, policy, 1.0, draws, seeds, 0, query), 1 - beta)
        epsilon = z / alpha
    if epsilon == 0:
        return 1e-12  # no noise reaches the answers: any ε meets the target (kept positive)
    for r in range(1, ROUNDS + 1):  # the certifying rounds: only an ε checked here is returned
        q = upper_quantile(_round(mechanism, workload, policy, epsilon, draws, seeds, r, query), 1 - beta)
        if q <= alpha:
            return float(epsilon)
        epsilon *= max(q / alpha, 1.01)  # at least 1% a round: few rounds, at most 1% more ε than needed
    raise InvalidParameterError(
        f"no ε found for accuracy=({alpha:g}, {beta:g}) with {mechanism.name} in {ROUNDS} rounds; "
        "ask for a larger alpha (errors smaller than the noise's whole-number steps cannot be promised)")


def _query_key(mechanism, workload, policy, draws, seed):
    """The memo key of everything but (α, β), or None (inputs without an exact key, a seed that is not an int)."""
    if type(seed) is not int or type(draws) is not int:
        return None
    return public_key(workload, policy, mechanism, draws, seed)


def _single_terms(mechanism, workload, policy, query) -> tuple[int, float] | None:
    """The mechanism's ``single_terms`` (remembered per query)."""
    key = None if query is None else (query, "terms")
    remembered = _LAWS.get(key)
    if remembered is not None:
        return remembered[0]
    terms = mechanism.single_terms(workload, policy)
    _LAWS.put(key, (terms,))
    return terms


def _remembered(query, name: str, compute):
    """``compute()``, remembered per query under ``name`` (None is remembered too)."""
    key = None if query is None else (query, name)
    remembered = _LAWS.get(key)
    if remembered is not None:
        return remembered[0]
    value = compute()
    _LAWS.put(key, (value,))
    return value


def _round(mechanism, workload, policy, epsilon, draws, seeds, r, query) -> np.ndarray:
    """Round ``r``'s max |error| draws at ``epsilon``, sorted (remembered per query, round and ε)."""
    key = None if query is None else (query, "round", r, float(epsilon))
    remembered = _LAWS.get(key)
    if remembered is not None:
        return remembered
    z = np.sort(max_abs_errors(mechanism, workload, policy, epsilon, draws, seeds[r]))
    z.setflags(write=False)
    _LAWS.put(key, z)
    return z


def _analytic_guess(mechanism, workload, policy, alpha, beta, draws, query) -> float | None:
    """ε where Gaussian tails put the certifying order statistic Z_(j) at α (None: no variances known).

    The target coverage is j/n, the place of the order statistic :func:`upper_quantile` checks, so the
    guess is what the round at ε = 1 estimates (Z_(j)/α), from the answers' exact variances instead of
    draws. P(some |error_i| > α) is bounded by the union Σ_i 2Φ̄(α/σ_i), and for a chain of answers whose
    consecutive differences are ranges too (prefix sums: E_i − E_{i−1} is the error of cells hi_{i−1}+1..hi_i
    when, as OrderedHierarchical's, the mechanism reads every range from one estimate)
    by Hunter's chain bound, which subtracts 2 P(E_i > α, E_{i−1} > α) for each link: a run of
    neighbouring prefixes beyond α, one event, counts about once rather than once per prefix (the union
    alone asked 3.4 % more ε than the round at ε = 1, on average over 8 seeds, at α = 30, β = 0.1,
    k = 4,096). Variances at ε = 1 (remembered per query) scaled as 1/ε² give a first root; the variances
    at it (the discrete law's is not exactly ∝ 1/ε²) give the root, and the guess is one step of the
    rounds (:data:`GUESS_STEP`) above it. 0 when no answer carries noise.
    """
    key = None if query is None else (query, "variances")
    remembered = _LAWS.get(key)
    if remembered is None:
        remembered = (mechanism.answer_variances(workload, policy, 1.0),)
        _LAWS.put(key, remembered)
    unit = remembered[0]
    j = binomial_quantile(CONFIDENCE, draws, 1 - beta) + 1
    if unit is None or j > draws:  # (j > n: the round raises upper_quantile's error, as without a guess)
        return None
    if not np.any(unit > 0):
        return 0.0
    room = 1 - j / draws
    epsilon = _gaussian_union_epsilon(unit, alpha, room)
    unit = mechanism.answer_variances(workload, policy, epsilon) * epsilon**2
    epsilon = _gaussian_union_epsilon(unit, alpha, room)
    chain = _chain(workload)
    links = None if chain is None else mechanism.answer_variances(chain, policy, epsilon)
    if links is not None:
        epsilon = _gaussian_chain_epsilon(unit, links * epsilon**2, alpha, room, epsilon)
    return GUESS_STEP * epsilon


def _chain(workload):
    """The ranges E_i − E_{i−1} answers for prefix sums with increasing ends (None for other workloads)."""
    r = as_ranges(workload)
    if r is None or r.lo.size < 2 or r.lo.any() or np.any(np.diff(r.hi) <= 0):
        return None
    return Ranges(workload.shape[1], r.hi[:-1] + 1, r.hi[1:])


def _gaussian_union_epsilon(unit: np.ndarray, alpha: float, room: float) -> float:
    """The ε solving Σ_i 2Φ̄(α ε/√u_i) = ``room`` (bisection on log ε; u_i: the variances times ε²)."""
    sd = np.sqrt(2.0 * unit[unit > 0]) / alpha  # erfc(ε/sd) = 2Φ̄(α ε/√u)

    def excess(log_e):  # Σ 2Φ̄(α ε/σ) = Σ erfc(α ε/(σ√2)), minus the room: decreasing in ε
        return float(np.sum(_erfc(math.exp(log_e) / sd))) - room

    lo = hi = 0.0
    while excess(lo) <= 0 and lo > -700:
        lo -= 1.0
    while excess(hi) > 0 and hi < 700:
        hi += 1.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if excess(mid) > 0 else (lo, mid)
    return math.exp(hi)


#: Gauss–Laguerre nodes and weights for the bivariate Gaussian tails of :func:`_gaussian_chain_epsilon`
_LAGUERRE = np.polynomial.laguerre.laggauss(12)
#: links of the chain bound evaluated together (bounds the temporaries: links × nodes values each)
CHAIN_CHUNK = 1 << 16
#: a standard Gaussian level whose two-sided tail (2Φ̄(7.4) ≈ 1.4e-13) no sum of the guess needs
NEGLIGIBLE_Z = 7.4


def _gaussian_chain_epsilon(unit: np.ndarray, links: np.ndarray, alpha: float, room: float, union: float) -> float:
    """The ε solving Hunter's bound Σ_i 2Φ̄(a_i) − Σ_{i≥1} 2 P(X_i > a_i, X_{i−1} > a_{i−1}) = ``room``.

    X_i standard Gaussians with the correlation of E_i and E_{i−1}, ρ_i = (u_i + u_{i−1} − links_i)/(2σ_iσ_{i−1}),
    a_i = α ε/σ_i. Each joint tail is ∫_a^∞ φ(x) Φ̄((b − ρx)/√(1 − ρ²)) dx, by Gauss–Laguerre in u = a(x − a).
    The root lies below ``union`` (the union bound's root: the chain bound is smaller); regula falsi on log ε.
    """
    lo, hi = math.log(union) - 0.25, math.log(union)  # excess(hi) ≤ 0 (the union's root)
    sigma = np.sqrt(unit)
    # answers whose tail is below 1e-12 of the room even at the bracket's low end change nothing: left out
    # (a left-out link only raises the bound, so the guess can only grow by it)
    alive = sigma * (NEGLIGIBLE_Z / (alpha * math.exp(lo))) > 1
    keep = alive[1:] & alive[:-1]
    rho = np.clip((unit[1:] + unit[:-1] - links) / (2 * np.where(keep, sigma[1:] * sigma[:-1], 1.0)), -1.0, 1.0)
    s_hi, s_lo, rho = sigma[1:][keep], sigma[:-1][keep], rho[keep]
    spread = np.sqrt(np.maximum(1.0 - rho**2, 1e-24))
    nodes, weights = _LAGUERRE
    sd = np.sqrt(2.0 * unit[alive]) / alpha

    def joint_tails(e, part):  # Σ over the links in ``part`` of P(X_i > a_i, X_{i−1} > a_{i−1})
        a, b = np.maximum(alpha * e / s_hi[part], 0.5), np.maximum(alpha * e / s_lo[part], 0.5)
        x = a[:, None] + nodes / a[:, None]
        with np.errstate(under="ignore"):
            dens = np.exp(-0.5 * x * x) * (np.exp(nodes) * weights) / (math.sqrt(2 * math.pi) * a[:, None])
        joint = np.sum(dens * _upper_tail((b[:, None] - rho[part, None] * x) / spread[part, None]), axis=1)
        return float(np.sum(np.minimum(joint, np.minimum(_upper_tail(a), _upper_tail(b)))))

    def excess(log_e):
        e = math.exp(log_e)
        joint = sum(joint_tails(e, slice(i, i + CHAIN_CHUNK)) for i in range(0, rho.size, CHAIN_CHUNK))
        return float(np.sum(_erfc(e / sd))) - 2 * joint - room

    f_lo, f_hi = excess(lo), excess(hi)
    if f_lo <= 0:
        return math.exp(lo)
    side = 0
    for _ in range(40):  # regula falsi, Illinois variant
        mid = hi - f_hi * (hi - lo) / (f_hi - f_lo)
        f_mid = excess(mid)
        if abs(f_mid) <= 1e-5 * room or hi - lo < 1e-7:
            return math.exp(mid)
        if f_mid > 0:
            lo, f_lo = mid, f_mid
            if side == 1:
                f_hi /= 2
            side = 1
        else:
            hi, f_hi = mid, f_mid
            if side == -1:
                f_lo /= 2
            side = -1
    return math.exp(hi)


def _upper_tail(y: np.ndarray) -> np.ndarray:
    """Φ̄(y) for y of either sign."""
    half = 0.5 * _erfc(np.abs(y) / math.sqrt(2.0))
    return np.where(y >= 0, half, 1.0 - half)


def _erfc(x: np.ndarray) -> np.ndarray:
    """erfc for x ≥ 0, vectorised, relative error < 1.2e-7 (Numerical Recipes' Chebyshev fit; no scipy.special).

    Examples
    --------
    >>> [round(float(_erfc(np.array([v]))[0] / math.erfc(v)), 6) for v in (0.0, 1.0, 5.0, 20.0)]
    [1.0, 1.0, 1.0, 1.0]
    """
    t = 1.0 / (1.0 + 0.5 * x)
    poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (
        0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    with np.errstate(under="ignore"):
        return t * np.exp(-x * x + poly)


def _single_term_epsilon(count: int, delta: float, alpha: float, beta: float) -> float:
    """Least ε with (1 − 2t^{m+1}/(1+t))^count ≥ 1 − β, t = e^{−ε/Δ}, m = ⌊α⌋ (discrete Laplace terms)."""
    m = math.floor(alpha)
    room = -math.expm1(math.log1p(-beta) / count)  # 1 − (1 − β)^{1/q}, no cancellation for tiny β

    def fails(log_t):  # P(|Z| > α) for one term exceeds its share
        t = math.exp(log_t)
        return math.log(2.0) + (m + 1) * log_t - math.log1p(t) > math.log(room)

    lo, hi = -1.0, -1e-300  # log t: small t (large ε) meets the target
    while fails(lo):
        lo *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if not fails(mid) else (lo, mid)
    return float(-delta * lo)


def max_abs_errors(mechanism, workload: Workload, policy: Policy, epsilon: float, draws: int = DRAWS, seed=0,
                   chunk: int | None = None) -> np.ndarray:
    """max over the answers of |error| at ``epsilon``, for ``draws`` releases of the noise alone.

    The draws come in chunks, chunk i from its own generator spawned from
    ``seed``, so the result does not depend on how the chunks are scheduled;
    the chunks run on up to two threads (NumPy releases the GIL in the noise
    generation and the array passes) when a round draws at least
    :data:`THREADED_VALUES` values, on the caller's thread otherwise.
    ``chunk`` (draws per chunk) defaults to :func:`chunk_draws` of the domain:
    the chunks, hence the draws, are a function of (draws, cells, seed) only.

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy, workload
    >>> m, W, pol = mechanisms.Laplace(), workload.prefix(50), policy.dp(Domain.grid(50))
    >>> z = max_abs_errors(m, W, pol, 1.0, 800, seed=3)
    >>> z.shape, bool(np.array_equal(z, max_abs_errors(m, W, pol, 1.0, 800, seed=3, chunk=chunk_draws(50))))
    ((800,), True)
    """
    zeros = np.zeros(policy.domain.size)
    chunk = chunk_draws(zeros.size) if chunk is None else int(chunk)
    starts = list(range(0, draws, chunk))
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    seeds = seq.spawn(len(starts))

    def one(i):
        z = mechanism.sample(zeros, workload, policy, epsilon, min(chunk, draws - starts[i]),
                             rng=np.random.default_rng(seeds[i]))
        return np.maximum(z.max(axis=1), -z.min(axis=1))  # max |z| without an |z| temporary

    workers = min(2, os.cpu_count() or 1, len(starts))
    if workers < 2 or draws * zeros.size < THREADED_VALUES:
        return np.concatenate([one(i) for i in range(len(starts))])
    with ThreadPoolExecutor(workers) as pool:
        return np.concatenate(list(pool.map(one, range(len(starts)))))


def chunk_draws(cells: int) -> int:
    """Draws per chunk of a Monte-Carlo round on ``cells`` cells (see :data:`CHUNK_VALUES`).

    Examples
    --------
    >>> chunk_draws(50), chunk_draws(4096), chunk_draws(1 << 20)
    (5242, 64, 50)
    """
    return max(MIN_CHUNK, CHUNK_VALUES // max(int(cells), 1))


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
    j = binomial_quantile(confidence, n, p) + 1
    if j > n:
        raise InvalidParameterError(f"{n} Monte-Carlo draws cannot bound the {p:g}-quantile; use more draws "
                                    "or a larger beta")
    return float(z[j - 1])


@functools.lru_cache(maxsize=256)  # a quote asks the same (q, n, p) in every round (issue 28: ~1 ms a call)
def binomial_quantile(q: float, n: int, p: float) -> int:
    """The least m with P(Binomial(n, p) ≤ m) ≥ q (``scipy.stats.binom.ppf``, without importing scipy.stats).

    The pmf is summed in log space from lgamma; a relative tolerance of
    1e-12 on q absorbs the rounding of the sum, as SciPy's own search does.

    Examples
    --------
    >>> binomial_quantile(0.99, 800, 0.95), binomial_quantile(0.5, 10, 0.5)
    (774, 5)
    """
    m = np.arange(n + 1)
    if p >= 1.0:
        return n
    if p <= 0.0:
        return 0
    log_pmf = (math.lgamma(n + 1) - np.array([math.lgamma(i + 1) + math.lgamma(n - i + 1) for i in range(n + 1)])
               + m * math.log(p) + (n - m) * math.log1p(-p))
    cdf = np.cumsum(np.exp(log_pmf - log_pmf.max())) * math.exp(log_pmf.max())
    return int(min(np.searchsorted(cdf, q * (1 - 1e-12)), n))


def error_draws(mechanism, workload: Workload, policy: Policy, epsilon: float, draws: int = DRAWS,
                seed=0) -> np.ndarray:
    """``draws`` samples of the answers' error at ``epsilon``, one per row (linear mechanisms only)."""
    _check_linear(mechanism)
    zeros = np.zeros(policy.domain.size)
    return mechanism.sample(zeros, workload, policy, epsilon, draws, rng=np.random.default_rng(seed))


def _check_linear(mechanism) -> None:
    if not mechanism.linear:
        raise InvalidParameterError(
            f"accuracy targets need a linear mechanism (noise pushed through a fixed map); {mechanism.name} is not"
        )
