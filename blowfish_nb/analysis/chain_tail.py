"""Exact (α, β) coverage of a chain of two-term errors: the histogram under the line policy.

Transformed+Laplace on the line graph measures every edge of the path once
(Haney et al. 2015, §5.4.2); a cell's count is the difference of its two
edges' measurements, so the errors of the k cells are the k first
differences of (0, Z₁, …, Z_n, 0), n = k − 1 independent discrete Laplace
terms of one scale b = ℓ/ε (:mod:`blowfish_nb.mechanisms.noise`). Neighbouring
cells share a term, so no answer's error is independent of the others' and
the single-term closed form of :mod:`blowfish_nb.accuracy` does not apply;
before issue 28 this quote was two Monte-Carlo rounds of 800 draws.

The event "every |error| ≤ m" (m = ⌊α⌋: the errors are whole numbers) is a
Markov chain in Z: with p the discrete Laplace pmf and B the 0/1 band
matrix B(z, z′) = [|z − z′| ≤ m],

    P(all within m) = (B v_n)(0),   v₀ = δ₀,   v_{j+1} = p ⊙ (B v_j),

the transfer operator K = diag(p)·B applied n times. :func:`chain_coverage`
returns a **certified lower bound** on that probability, in O(N) per power
step on a lattice of N values instead of n = 4,095 steps:

* the values are restricted to |z| ≤ R (every sequence leaving the lattice
  is dropped: a lower bound; R is chosen so that the dropped mass is below
  10⁻¹² and only the bound's tightness depends on it);
* s exact steps until v_s > 0 on the whole lattice and its shape is u's, with a positive vector
  u (power iteration) with K u ≥ λ u componentwise, λ = min_z (K u)_z/u_z
  (Collatz–Wielandt; K ≥ 0 gives K^j u ≥ λ^j u), and v_s ≥ γ u with
  γ = min_z v_s(z)/u(z), so v_n ≥ γ λ^{n−s} u and
  P ≥ γ λ^{n−s} (B u)(0);
* λ, γ and (B u)(0) are each lowered by 4N units of the last place for the
  rounding of the window sums (each is a difference of a prefix or suffix
  sum taken on the side where the terms decrease, so tails keep their
  relative precision).

Against the exact n-step iteration the bound loses about 10⁻⁹ relative at the
quote's k = 4,096, α = 50 (tests/analysis/test_chain_tail.py), and every ε
:func:`chain_epsilon` returns is one at which the bound was evaluated.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["chain_coverage", "chain_epsilon"]

#: mass of discrete Laplace noise beyond the lattice's ends, over all n terms, at most this (a lower bound either way)
DROPPED = 1e-12
#: power steps at most per evaluation (the bound holds after any number; it is tight once λ's min and max ratios meet)
POWER_STEPS = 100
#: power steps stop once the ratios (K u)_z/u_z agree to this (relative): the bound then loses at most n times it
CONVERGED = 1e-12
#: exact steps continue until v's shape matches u's to this (relative): γ then loses at most this
MATCHED = 1e-7
#: the relative rounding allowance per lattice value: a window sum of N positive terms, taken as a difference of
#: prefix (or suffix) sums on the side where they are small, is within about 2N units of the last place; every ratio
#: (K u)_z/u_z, γ and the final (B u)(0) are lowered by ROUNDING·N relative
ROUNDING = 4 * 2.0**-52
#: the bound is not tried for β below this many units of n·(2m + 1) (its rounding allowance alone, with the lattice
#: at least 2m + 1 wide, costs about 4·n·N units of the last place)
REACHABLE_BETA = 64 * 2.0**-52
#: quarter-steps of log ε tried above the bracket's start before giving up (None)
WIDENINGS = 40
#: the longest lattice tried (2R + 1 values); beyond it (α of a few thousand noise units) Monte Carlo answers
MAX_LATTICE = 1 << 14
#: relative width of the final ε bracket
TOLERANCE = 1e-6


def chain_coverage(n: int, m: int, scale: float) -> float:
    """A certified lower bound on P(every first difference of (0, Z₁, …, Z_n, 0) lies in [−m, m]).

    Z_j independent discrete Laplace of ``scale`` (P(Z = z) ∝ e^{−|z|/scale}); m ≥ 0 a whole number.
    See the module notes for the argument.

    Examples
    --------
    >>> round(chain_coverage(1, 2, 1.0), 6)  # |Z₁| ≤ 2: 1 − 2t³/(1 + t), t = e^{-1}
    0.927205
    >>> chain_coverage(4095, 50, 3.57) > 0.979
    True
    """
    n, m = int(n), int(m)
    if n <= 0 or scale <= 0:
        return 1.0
    if m == 0:
        return math.tanh(0.5 / scale) ** n  # every Z_j must be 0
    return _coverage(n, m, scale, lattice_half_width(n, m, scale), None)[0]


def lattice_half_width(n: int, m: int, scale: float) -> int:
    """R with n·P(|Z| > R) ≤ :data:`DROPPED` for discrete Laplace of ``scale`` (at least m)."""
    t = math.exp(-1.0 / scale)
    if t == 0.0:
        return m  # no mass beyond 0
    # P(|Z| > R) = 2t^{R+1}/(1 + t) ≤ 2t^{R+1}
    return m + max(0, math.ceil((math.log(DROPPED) - math.log(2.0 * n)) / math.log(t)))


def chain_epsilon(n: int, delta: float, alpha: float, beta: float) -> float | None:
    """Least ε (within a factor 1 + 10⁻⁶, rounded up) with :func:`chain_coverage` ≥ 1 − β at scale Δ/ε.

    The bracket's upper end starts where every |Z_j| ≤ ⌊m/2⌋ has probability 1 − β (then every difference
    is within m); only an ε at which the bound was evaluated and met the target is returned. None when the
    bound cannot certify 1 − β (a β so small that the rounding allowance, about n·N units of the last place,
    exceeds it): the caller falls back to Monte Carlo.

    Examples
    --------
    >>> e = chain_epsilon(15, 1.0, 10, 0.05)  # the histogram of 16 cells under the line policy
    >>> chain_coverage(15, 10, 1.0 / e) >= 0.95
    True
    """
    n, m, target = int(n), math.floor(alpha), 1.0 - beta
    if n <= 0:
        return 1e-12
    if m == 0:  # every Z_j must be 0: tanh(ε/(2Δ))^n ≥ 1 − β
        return 2.0 * delta * math.atanh(math.exp(math.log(target) / n))
    state = {"lattice": None, "u": None}

    def excess(log_e):
        scale = delta / math.exp(log_e)
        lattice = state["lattice"] or lattice_half_width(n, m, scale)
        if 2 * lattice + 1 > MAX_LATTICE:
            raise _TooWide
        bound, state["u"] = _coverage(n, m, scale, lattice, state["u"])
        return bound - target

    if beta < REACHABLE_BETA * n * (2 * m + 1):
        return None  # the rounding allowance alone keeps the bound below 1 − β
    try:
        return _search(excess, math.log(_all_within_epsilon(n, delta, m // 2, beta)), state, n, m, delta)
    except _TooWide:
        return None  # α so large against the noise's unit step that the lattice would be too long: Monte Carlo


class _TooWide(Exception):
    """The lattice an evaluation needs is longer than :data:`MAX_LATTICE`."""


def _search(excess, b, state, n, m, delta) -> float | None:
    """Regula falsi on log ε from ``b`` (see :func:`chain_epsilon`); None when no ε near ``b`` meets the target."""
    f_b, widened = excess(b), 0
    while f_b < 0:  # the bound lies slightly below the probability it bounds: widen upwards
        if widened == WIDENINGS:
            return None
        b, widened = b + 0.25, widened + 1
        f_b = excess(b)
    a = b - math.log(2.0)
    f_a = excess(a)
    while f_a >= 0:
        b, f_b, a = a, f_a, a - math.log(2.0)
        f_a = excess(a)
    state["lattice"] = lattice_half_width(n, m, delta / math.exp(a))  # one lattice (the widest) from here on
    state["u"] = None
    side = 0
    while b - a > TOLERANCE:  # regula falsi (Illinois) on log ε; b always meets the target
        c = b - f_b * (b - a) / (f_b - f_a)
        c = min(max(c, a + 1e-3 * (b - a)), b - 1e-3 * (b - a))
        f_c = excess(c)
        if f_c >= 0:
            b, f_b = c, f_c
            if side == 1:
                f_a /= 2
            side = 1
        else:
            a, f_a = c, f_c
            if side == -1:
                f_b /= 2
            side = -1
    return float(math.exp(b))


def _coverage(n: int, m: int, scale: float, half: int, start) -> tuple[float, np.ndarray | None]:
    """(the bound of :func:`chain_coverage` on the lattice |z| ≤ ``half``, its vector u for a warm start).

    v is kept normalised, its scale carried in ``log_mass``; exact steps continue past positivity until v's shape
    matches u's (then γ loses nothing), or to the n-th step (then the result is exact).
    """
    z = np.arange(-half, half + 1)
    p = math.tanh(0.5 / scale) * np.exp(-np.abs(z) / scale)  # P(Z = z) = (1 − t)/(1 + t)·t^|z|
    slack = 1.0 - ROUNDING * z.size
    v, log_mass, steps = (z == 0).astype(float), 0.0, 0

    def step(v, log_mass):
        v = p * _window(v, m)
        total = float(v.sum())
        return v / total, log_mass + math.log(total)

    while steps < n and not np.all(v > 0):
        v, log_mass = step(v, log_mass)
        steps += 1
    u = None
    if steps < n:
        u = v.copy() if start is None or start.size != z.size else start
        for _ in range(POWER_STEPS):
            ku = p * _window(u, m)
            ratio = ku / u
            u = ku / ku.sum()
            if ratio.max() - ratio.min() <= CONVERGED * ratio.max():
                break
        while steps < n:
            shape = v / u
            if shape.max() - shape.min() <= MATCHED * shape.max():
                break
            v, log_mass = step(v, log_mass)
            steps += 1
    if steps == n:  # exact: n + 1 window sums, each within ROUNDING·N relative
        return math.exp(log_mass) * float(_window(v, m)[half]) * slack ** (n + 1), u
    ku = p * _window(u, m)
    lam = float((ku / u).min()) * slack
    gamma = float((v / u).min()) * slack ** (steps + 1)
    if not lam > 0:
        return 0.0, None
    with np.errstate(under="ignore"):
        return math.exp(log_mass + (n - steps) * math.log(lam)) * gamma * float(_window(u, m)[half]) * slack, u


def _all_within_epsilon(n: int, delta: float, m: int, beta: float) -> float:
    """ε with P(every one of n discrete Laplace terms of scale Δ/ε within m) = 1 − β (closed form, bisection)."""
    room = -math.expm1(math.log1p(-beta) / n)  # 1 − (1 − β)^{1/n}
    lo, hi = -1.0, -1e-300  # log t
    while 2.0 * math.exp((m + 1) * lo) / (1.0 + math.exp(lo)) > room:
        lo *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if 2.0 * math.exp((m + 1) * mid) / (1.0 + math.exp(mid)) > room:
            hi = mid
        else:
            lo = mid
    return float(-delta * lo)


def _window(v: np.ndarray, m: int) -> np.ndarray:
    """(B v)(z) = Σ_{|z′ − z| ≤ m} v(z′), from prefix sums left of the middle and suffix sums right of it."""
    size = v.size
    prefix = np.concatenate([[0.0], np.cumsum(v)])
    suffix = np.concatenate([np.cumsum(v[::-1])[::-1], [0.0]])
    idx = np.arange(size)
    top, bottom = np.minimum(idx + m + 1, size), np.maximum(idx - m, 0)
    return np.where(idx <= size // 2, prefix[top] - prefix[bottom], suffix[bottom] - suffix[top])
