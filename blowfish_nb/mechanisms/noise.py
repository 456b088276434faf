"""The one door for noise: float-safe Laplace-type samplers, vectorised in NumPy.

Textbook Laplace noise added in double precision leaks: the set of floats
``v + Lap(b)`` can reach depends on v, so the bit pattern of a release can
tell neighbouring inputs apart (Mironov, CCS 2012). Every release of this
package therefore draws its noise here:

* **Whole-valued measurements** (0/1 and ±1 strategies on counts: identity,
  prefix sums, trees, Haar, subtree sums of a transform, bucket totals) get
  **discrete Laplace** noise (the geometric mechanism, Ghosh et al. 2009):
  P(Z = z) ∝ t^|z| with t = e^{−1/b}. Value plus noise is a whole number, the
  same set of outputs for every input, and for L1 sensitivity Δ and
  b = Δ/ε the ratio of output probabilities on neighbours is at most
  t^{−Δ} = e^ε exactly. Measurements with different row weights (a weighted
  strategy w_r·a_r) measure the whole-valued rows a_r x with per-row scales
  b/w_r: the loss Σ_r |Δa_r| w_r/b is the weighted strategy's Δ/b.
* **Real-valued measurements** go through :func:`lattice_noisy`: round to a
  public power-of-two grid γ (2^-12·Δ/m), add discrete Laplace in grid units with the
  sensitivity raised by the rounding (≤ one grid step per changed
  coordinate), scale back by γ (exact in floating point). This is the
  discretisation OpenDP uses for its float Laplace (round to 2^k, then
  integer noise; Canonne, Kamath and Steinke 2020 for the discrete laws).
* **Selection noise** that is compared but never released (DAWA's noisy
  interval costs, the matching weights) is continuous Laplace drawn by
  :func:`selection_laplace` from uniforms refined below 2^-32, so its tails
  reach about 740 scales rather than the 37 of a 53-bit uniform.

Sampling: a geometric draw is ⌊E·b⌋ for E a standard exponential, which is
exactly Geometric(t) on {0, 1, …}; E = −ln U for a uniform U on (0, 1)
refined below 2^-32 (no outputs cut off in practice). Discrete Laplace is 0
with probability (1 − t)/(1 + t), else ±(1 + G) for G geometric and a fair
sign: one exponential, one uniform and one sign bit per value.

Expected squared error uses the discrete law's variance 2t/(1 − t)² =
1 / (2 sinh²(1/(2b))), slightly below the continuous 2b² (by about 1/6).
"""

from __future__ import annotations

import math

import numpy as np

from ..exceptions import InvalidParameterError

__all__ = ["MAX_SCALE", "check_scale", "discrete_laplace", "noisy", "lattice_noisy", "lattice_step", "selection_laplace",
           "variance", "uniform_open", "standard_exponential"]

#: the largest noise scale drawn (≈ 1.1e12): beyond it whole-number noise loses exactness in float64 and the
#: answers carry no information; ε so small that Δ/ε exceeds it is refused
MAX_SCALE = 2.0**40

_REFINE = 2.0**-32


def check_scale(scale, name: str = "epsilon", value=None) -> None:
    """Refuse a noise scale that is not finite and ≤ :data:`MAX_SCALE` (raised naming ``name``).

    Examples
    --------
    >>> check_scale(2.0)
    >>> check_scale(1e300, value=1e-300)
    Traceback (most recent call last):
    ...
    blowfish_nb.exceptions.InvalidParameterError: epsilon=1e-300 gives a noise scale of 1e+300, above the largest drawn (1.1e+12): the answers would carry no information; use a larger epsilon
    """
    s = np.asarray(scale, dtype=float)
    if s.size and not (np.all(np.isfinite(s)) and float(s.max()) <= MAX_SCALE and float(s.min()) >= 0):
        shown = f"{name}={value!r}" if value is not None else name
        raise InvalidParameterError(
            f"{shown} gives a noise scale of {float(np.max(s)):.3g}, above the largest drawn ({MAX_SCALE:.2g}): "
            f"the answers would carry no information; use a larger {name}")


def uniform_open(rng: np.random.Generator, shape) -> np.ndarray:
    """Uniform draws on (0, 1), refined below 2^-32 so that −ln U reaches about 740.

    A 53-bit uniform (m + ½)·2^-53 is exact above 2^-32; a draw below it is
    replaced by 2^-32 times a fresh uniform (the conditional law of U given
    U < 2^-32), repeatedly.

    Examples
    --------
    >>> u = uniform_open(np.random.default_rng(0), 5)
    >>> bool(((u > 0) & (u < 1)).all())
    True
    """
    n = int(np.prod(shape))
    u = ((rng.bit_generator.random_raw(n) >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
    factor = 1.0
    small = np.flatnonzero(u < _REFINE)
    while small.size:
        factor *= _REFINE
        fresh = ((rng.bit_generator.random_raw(small.size) >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
        keep = fresh >= _REFINE
        u[small[keep]] = fresh[keep] * factor
        small = small[~keep]
    return u.reshape(shape)


def _signs(rng: np.random.Generator, n: int) -> np.ndarray:
    bits = np.unpackbits(rng.bit_generator.random_raw((n + 63) // 64).view(np.uint8))[:n]
    return bits.astype(bool)


def standard_exponential(rng: np.random.Generator, n: int) -> np.ndarray:
    """n standard exponential draws whose tail reaches about 770 (not 44).

    NumPy's ziggurat is exact in law up to its last tail step, which stops
    near 44; draws above 30 (probability e^-30) are redrawn as 30 plus a
    fresh exponential −ln U from :func:`uniform_open` (memorylessness).
    """
    e = rng.standard_exponential(n)
    tail = np.flatnonzero(e > 30.0)
    if tail.size:
        e[tail] = 30.0 - np.log(uniform_open(rng, tail.size))
    return e


def discrete_laplace(rng: np.random.Generator, scale, shape) -> np.ndarray:
    """Whole-number draws with P(Z = z) ∝ e^{−|z|/scale} (float64 array; ``scale`` may be an array).

    ``scale`` = 0 gives zeros (nothing to protect).

    Examples
    --------
    >>> z = discrete_laplace(np.random.default_rng(0), 3.0, 100_000)
    >>> bool(np.all(z == np.round(z))), round(float(z.var()) / 18, 1)  # variance ≈ 2b² − 1/6
    (True, 1.0)
    """
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    n = int(np.prod(shape))
    scale = np.asarray(scale, dtype=float)
    if scale.ndim:
        scale = np.broadcast_to(scale, shape).reshape(-1)
    # Z = 0 with probability (1 − t)/(1 + t); otherwise ±(1 + G), G ~ Geometric(t) on {0, 1, …} as ⌊E·b⌋
    out = standard_exponential(rng, n)
    out *= scale
    np.floor(out, out=out)
    out += 1.0
    with np.errstate(divide="ignore"):
        zero = np.tanh(0.5 / scale)  # (1 − t)/(1 + t); 1 at scale 0
    # the zeros, then the signs, as multiplications (the same bits as setting out[u < zero] = 0 and negating where
    # the sign bit is set, -0.0 included; a boolean-mask store and a masked negation cost 5× more)
    out *= rng.random(n) >= zero
    out *= 1.0 - 2.0 * _signs(rng, n)
    return out.reshape(shape)


def noisy(values: np.ndarray, scale, rng: np.random.Generator, epsilon: float | None = None) -> np.ndarray:
    """``values`` (whole numbers) plus discrete Laplace noise of ``scale`` (a number, or one per value).

    ``epsilon`` (when given) names the budget in the error raised for a
    scale too large to draw (:func:`check_scale`).

    Raises
    ------
    InvalidParameterError
        When a value is not a whole number (use :func:`lattice_noisy`).

    Examples
    --------
    >>> y = noisy(np.array([3.0, 0.0, 7.0]), 1.0, np.random.default_rng(1))
    >>> bool(np.all(y == np.round(y)))
    True
    """
    check_scale(scale, value=epsilon)
    values = np.asarray(values, dtype=float)
    if not np.all(values == np.round(values)):
        raise InvalidParameterError("the measured values must be whole numbers for discrete noise; "
                                    "real-valued measurements go through lattice_noisy")
    return values + discrete_laplace(rng, scale, values.shape)


#: the lattice step is 2^-LATTICE_BITS of Δ/m (rounded down to a power of two): the noise grows by (1 + 2^-12)
#: at most, and values up to 2^(53 - 12)·Δ/m ≈ 2.2e12·Δ/m fit the float64 grid exactly
LATTICE_BITS = 12


def lattice_step(sensitivity: float, changed: int) -> float:
    """The public grid step γ of :func:`lattice_noisy`: the largest power of two ≤ 2^-12·Δ/m.

    Examples
    --------
    >>> lattice_step(1.0, 1) == 2.0**-12, lattice_step(3.0, 2) == 2.0**-12
    (True, True)
    """
    if sensitivity <= 0:
        return 1.0
    return 2.0 ** math.floor(math.log2(sensitivity / max(changed, 1)) - LATTICE_BITS)


def lattice_noisy(values: np.ndarray, sensitivity: float, epsilon: float, changed: int,
                  rng: np.random.Generator) -> np.ndarray:
    """Real-valued ``values`` released ε-privately on a public power-of-two grid.

    With γ = :func:`lattice_step` (the largest power of two ≤ 2^-12·Δ/m, Δ
    the L1 sensitivity, m the most coordinates one neighbour changes),
    w = round(values/γ) has L1 sensitivity ≤ Δ/γ + m, and
    w + DLap((Δ/γ + m)/ε) is ε-DP; the output is γ times it, exact in
    float64. The noise is (1 + 2^-12) times the continuous Laplace scale Δ/ε
    at most. An output of 2^53 grid steps or more is refused (the refusal is
    a function of the noisy output only).

    Examples
    --------
    >>> y = lattice_noisy(np.array([0.3, 1.7]), 1.0, 1.0, 2, np.random.default_rng(0))
    >>> y.shape
    (2,)
    """
    values = np.asarray(values, dtype=float)
    if sensitivity <= 0:
        return values.copy()
    check_scale(sensitivity / epsilon, value=epsilon)
    gamma = lattice_step(sensitivity, changed)
    w = np.round(values / gamma)
    scale = (sensitivity / gamma + changed) / epsilon
    out = w + discrete_laplace(rng, scale, w.shape)
    if np.abs(out).max(initial=0.0) >= 2.0**53:
        raise InvalidParameterError(
            f"the noisy measurements reach {np.abs(out).max() * gamma:.3g}, beyond the lattice sampler's "
            f"float64 grid of step {gamma:.3g} (2^53 steps)")
    return out * gamma


def selection_laplace(rng: np.random.Generator, scale, shape) -> np.ndarray:
    """Continuous Laplace(0, scale) draws for selection (compared, never released).

    Examples
    --------
    >>> selection_laplace(np.random.default_rng(0), 2.0, (2, 3)).shape
    (2, 3)
    """
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    n = int(np.prod(shape))
    e = standard_exponential(rng, n)
    np.negative(e, out=e, where=_signs(rng, n))
    return (e * scale).reshape(shape) if np.ndim(scale) == 0 else e.reshape(shape) * scale


def variance(scale) -> np.ndarray | float:
    """Variance of discrete Laplace noise of ``scale``: 2t/(1 − t)² = 1/(2 sinh²(1/(2b))), 0 at b = 0.

    Examples
    --------
    >>> round(variance(1.0), 4), round(variance(100.0), 2)  # 2b² − 1/6 for large b
    (1.8413, 19999.83)
    """
    b = np.asarray(scale, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):
        v = np.where(b > 0, 0.5 / np.sinh(0.5 / np.where(b > 0, b, 1.0)) ** 2, 0.0)
    return float(v) if v.ndim == 0 else v

