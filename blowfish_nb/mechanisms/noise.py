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
  A strategy's answers are passed as ``product(A, x)`` and rounded from the
  *exact* A x (:mod:`.exact_measure`, which holds the privacy argument): the
  float ``A @ x`` is off by rounding errors that a tiny Δ does not bound
  (attack 36b).
* **Sensitivity 0** (answers the policy does not protect): no noise, and the
  values come from :func:`invariant_values` (A x from the policy graph's
  class sums after an exact column check), never from ``fl(A x)``, whose
  last bit can depend on where a record sits; :func:`lattice_noisy` refuses Δ = 0.
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
from .exact_measure import Product, lattice_units

__all__ = ["MAX_SCALE", "check_scale", "discrete_laplace", "noisy", "lattice_noisy", "lattice_draws", "lattice_step",
           "product", "invariant_values", "selection_laplace",
           "variance", "uniform_open", "standard_exponential"]

#: the largest noise scale drawn (≈ 1.1e12): beyond it whole-number noise loses exactness in float64 and the
#: answers carry no information; ε so small that Δ/ε exceeds it is refused
MAX_SCALE = 2.0**40
#: below this discrete Laplace scale, Z ≠ 0 is drawn against p itself, not against tanh(1/(2b)) = 1 − p
TINY_SCALE = 1.0 / 24

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
    if n and e.max() > 30.0:  # one reduction, no mask, in the usual case (the same draws: nothing is drawn here)
        tail = np.flatnonzero(e > 30.0)
        e[tail] = 30.0 - np.log(uniform_open(rng, tail.size))
    return e


def discrete_laplace(rng: np.random.Generator, scale, shape) -> np.ndarray:
    """Whole-number draws with P(Z = z) ∝ e^{−|z|/scale} (float64 array; ``scale`` may be an array).

    ``scale`` = 0 gives zeros (nothing to protect).

    Z ≠ 0 with probability p = 2t/(1 + t), t = e^{−1/b}. For b ≥ :data:`TINY_SCALE` the sampler keeps Z ≠ 0 when a
    53-bit uniform is ≥ tanh(1/(2b)) = 1 − p: p ≥ 7.5e-11 there, and its two roundings (tanh's and the uniform's
    grid, 1.1e-16 each) move p by a relative 3e-6 at most. Below it 1 − p no longer carries p (for b < 0.0267 tanh
    rounded to 1 and every draw was 0: an exact release at ε ≳ 37 for a count, attack 36b), so Z ≠ 0 is drawn as
    U < p with U from :func:`uniform_open`, whose law is exact at a relative resolution of 2^-21 or finer all the
    way down (refined below 2^-32), against p computed directly. Below b ≈ 1/700 (ε above ~700 per unit of Δ) p
    itself falls under e^-700 and the draws are 0: the same truncation, a δ below 1e-300, as the magnitudes'
    exponential tail (:func:`standard_exponential`, about 770 scales).

    Examples
    --------
    >>> z = discrete_laplace(np.random.default_rng(0), 3.0, 100_000)
    >>> bool(np.all(z == np.round(z))), round(float(z.var()) / 18, 1)  # variance ≈ 2b² − 1/6
    (True, 1.0)
    """
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    n = math.prod(shape)
    scale = np.asarray(scale, dtype=float)
    if scale.ndim:
        scale = np.broadcast_to(scale, shape).reshape(-1)
    # Z = 0 with probability (1 − t)/(1 + t); otherwise ±(1 + G), G ~ Geometric(t) on {0, 1, …} as ⌊E·b⌋
    out = standard_exponential(rng, n)
    if scale.ndim == 0 and scale > 0:
        zero, tiny = np.tanh(0.5 / scale), bool(scale < TINY_SCALE)  # (1 − t)/(1 + t)
    else:
        with np.errstate(divide="ignore"):
            zero = np.tanh(0.5 / scale)  # 1 at scale 0
        tiny = bool(((scale > 0) & (scale < TINY_SCALE)).any())
    if not tiny:
        return _whole_draws(rng, out, scale, zero).reshape(shape)
    out *= scale
    np.floor(out, out=out)
    out += 1.0
    # the zeros, then the signs, as multiplications (the same bits as setting out[u < zero] = 0 and negating where
    # the sign bit is set, -0.0 included; a boolean-mask store and a masked negation cost 5× more)
    keep = rng.random(n) >= zero
    # p too small for 1 − p to carry it: U < p with a uniform exact near 0
    where = np.flatnonzero(np.broadcast_to((scale > 0) & (scale < TINY_SCALE), (n,)))
    b = np.broadcast_to(scale, (n,))[where]
    t = np.exp(-1.0 / b)
    keep[where] = uniform_open(rng, where.size) < 2.0 * t / (1.0 + t)
    out *= keep
    out *= 1.0 - 2.0 * _signs(rng, n)
    return out.reshape(shape)


#: values per block in :func:`_whole_draws`: its scratch arrays (uniforms, flags, signs) stay in the L2 cache
BLOCK = 1 << 14


def _whole_draws(rng: np.random.Generator, out: np.ndarray, scale, zero) -> np.ndarray:
    """:func:`discrete_laplace` above :data:`TINY_SCALE` from the exponentials ``out``, in place, block by block.

    The same operations on the same draws as the whole-array form (``out = (⌊E·b⌋ + 1)·[U ≥ zero]·(1 − 2s)``,
    kept for scales below :data:`TINY_SCALE`): the n uniforms are drawn in consecutive blocks (a Generator's
    stream does not depend on how a draw is split), then the ⌈n/64⌉ words of sign bits, so the generator is
    consumed exactly as before and every value, -0.0 included, has the same bits. Blocks keep the uniforms,
    the flags and the ±1 factors in cache instead of four fresh n-element temporaries (10⁶ draws: ~27 → ~18 ms
    on this project's machines, benchmarks/noise_speed.py).
    """
    n = out.size
    m = min(BLOCK, n)
    u, keep, sign = np.empty(m), np.empty(m, dtype=bool), np.empty(m)
    per_value = np.ndim(scale) > 0
    for s in range(0, n, BLOCK):
        o = out[s : s + BLOCK]
        k = o.size
        np.multiply(o, scale[s : s + BLOCK] if per_value else scale, out=o)
        np.floor(o, out=o)
        o += 1.0
        rng.random(out=u[:k])
        o *= np.greater_equal(u[:k], zero[s : s + BLOCK] if per_value else zero, out=keep[:k])
    bits = np.unpackbits(rng.bit_generator.random_raw((n + 63) // 64).view(np.uint8))[:n]
    for s in range(0, n, BLOCK):
        o = out[s : s + BLOCK]
        k = o.size
        np.multiply(bits[s : s + BLOCK], -2.0, out=sign[:k])  # 1 − 2s: exactly ±1.0
        sign[:k] += 1.0
        o *= sign[:k]
    return out


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

    Raises
    ------
    InvalidParameterError
        When Δ/m is so small that γ would fall below 2^-1074, the smallest
        float64 (Δ/m below about 2.5e-320): the grid underflows. The refusal
        reads Δ and m only, the same for every database.

    Examples
    --------
    >>> lattice_step(1.0, 1) == 2.0**-12, lattice_step(3.0, 2) == 2.0**-12
    (True, True)
    """
    if sensitivity <= 0:
        return 1.0
    ratio = sensitivity / max(changed, 1)
    exponent = math.floor(math.log2(ratio)) - LATTICE_BITS if ratio > 0 else -math.inf
    if exponent < -1074:
        raise InvalidParameterError(
            f"sensitivity={sensitivity!r} over {changed} measured rows puts the lattice step 2^-12·Δ/m below "
            "2^-1074, the smallest float64: the strategy's scale is too small to release; rescale it")
    return 2.0**exponent


def product(A, x) -> Product:
    """A strategy's answers A x for :func:`lattice_noisy`, rounded to the lattice from the exact product.

    Examples
    --------
    >>> np.asarray(product(np.array([[0.5, 0.25]]), np.array([2.0, 4.0]))).tolist()
    [2.0]
    """
    return Product(A, x)


def lattice_noisy(values, sensitivity: float, epsilon: float, changed: int,
                  rng: np.random.Generator) -> np.ndarray:
    """Real-valued ``values`` released ε-privately on a public power-of-two grid.

    With γ = :func:`lattice_step` (the largest power of two ≤ 2^-12·Δ/m, Δ
    the L1 sensitivity, m the most coordinates one neighbour changes),
    w = round(values/γ) has L1 sensitivity ≤ Δ/γ + m, and
    w + DLap((Δ/γ + m)/ε) is ε-DP; the output is γ times it, exact in
    float64. The noise is (1 + 2^-12) times the continuous Laplace scale Δ/ε
    at most. An output of 2^53 grid steps or more is refused (the refusal is
    a function of the noisy output only).

    ``values`` is :func:`product` (A, x) for a strategy's answers: w is then
    rounded from the exact A x (:mod:`.exact_measure`), never from the float
    ``A @ x``, whose rounding error is not bounded by Δ (attack 36b). A plain
    array is taken as the exact values themselves.

    Examples
    --------
    >>> y = lattice_noisy(np.array([0.3, 1.7]), 1.0, 1.0, 2, np.random.default_rng(0))
    >>> y.shape
    (2,)
    >>> A = np.array([[0.1, 0.1, -0.2, -0.2], [0.0, 1e-25, 0.0, 0.0]])  # row 0 cancels; Δ = 1e-25
    >>> a = lattice_noisy(product(A, [3.0, 3, 3, 0]), 1e-25, 1.0, 2, np.random.default_rng(0))
    >>> b = lattice_noisy(product(A, [3.0, 3, 2, 1]), 1e-25, 1.0, 2, np.random.default_rng(0))
    >>> bool(np.all(a == b))  # row 0's exact answers are equal: the same draw gives the same output
    True
    """
    return _lattice(values, sensitivity, epsilon, changed, rng, ())


def lattice_draws(values, sensitivity: float, epsilon: float, changed: int, rng: np.random.Generator,
                  size: int) -> np.ndarray:
    """``size`` independent :func:`lattice_noisy` releases of ``values`` at once (a size × len(values) array).

    Examples
    --------
    >>> lattice_draws(product(np.eye(2) * 0.3, [1.0, 2.0]), 0.3, 1.0, 1, np.random.default_rng(0), 4).shape
    (4, 2)
    """
    return _lattice(values, sensitivity, epsilon, changed, rng, (int(size),))


def _lattice(values, sensitivity, epsilon, changed, rng, lead: tuple) -> np.ndarray:
    if not isinstance(values, Product):
        values = np.asarray(values, dtype=float)
    if sensitivity <= 0:  # fl(A x) may still differ in its last bit between neighbours (attack 36)
        raise InvalidParameterError(
            f"lattice_noisy got sensitivity {sensitivity!r}: measurements of sensitivity 0 are released without "
            "noise only through invariant_values (computed from the policy-invariant class sums)")
    check_scale(sensitivity / epsilon, value=epsilon)
    gamma = lattice_step(sensitivity, changed)
    w, big = lattice_units(values, math.frexp(gamma)[1] - 1)
    scale = (sensitivity / gamma + changed) / epsilon
    z = discrete_laplace(rng, scale, lead + w.shape)
    out = w + z
    for i, v in big.items():  # |w| ≥ 2^53: w + z in Python integers (exact), refused below unless it came back
        exact = [v + int(zj) for zj in np.atleast_1d(z[..., i]).reshape(-1)]
        out[..., i] = np.array([float(o) if abs(o) < 2**53 else math.inf for o in exact]).reshape(out[..., i].shape)
    if np.abs(out).max(initial=0.0) >= 2.0**53:  # w, z whole: the float sum is ≥ 2^53 iff the exact one is
        raise InvalidParameterError(
            f"the noisy measurements reach {np.abs(out).max() * gamma:.3g}, beyond the lattice sampler's "
            f"float64 grid of step {gamma:.3g} (2^53 steps)")
    return out * gamma


#: the largest strategy (rows × cells) :func:`invariant_values` checks column by column
INVARIANT_LIMIT = 2**24


def invariant_values(A, x, policy, mechanism: str) -> np.ndarray:
    """A x for a strategy of sensitivity Δ = 0, computed so neighbours get bit-identical values.

    Δ = 0 says the exact A x is the same on neighbouring inputs, but the float
    ``A @ x`` is not: its summation order lets the last bit depend on where
    a record sits (attack 36), and with no noise that bit is released. Here
    the cells are grouped into the classes of the policy graph: its connected
    components, and the component holding ⊥ (if any). The check is exact (bit
    equality, no tolerance): every column in a class equals the class's
    first column, and every column of the ⊥ class is 0; otherwise the
    strategy is refused. Then A x = Σ_C a_C s_C with s_C = Σ_{j∈C} x_j, the
    class sums of whole counts (exact in float64 below 2^53), accumulated
    class by class in a fixed order with elementwise operations only.

    Privacy: a neighbour moves one record along an edge (u, v) of G, both
    ends in one class C (s_C unchanged), or adds/removes one at a cell u
    joined to ⊥ (u in the ⊥ class, which is not summed). So every s_C, and
    hence every operand and every operation here, is the same on
    neighbours: the output is bit-identical (privacy loss 0 for every ε).
    Any later post-processing is a function of these values.

    Parameters
    ----------
    A : array or operator with ``dense()``
        The strategy, one column per cell of ``policy.domain``.
    x : ndarray
        The histogram (whole counts).
    policy : Policy
        The policy under which Δ = 0.
    mechanism : str
        Named in the refusal.

    Raises
    ------
    InvalidParameterError
        When the columns are not exactly equal within a class (or 0 on the
        ⊥ class), when the counts are not whole numbers below 2^53, or when
        the strategy is too large to check.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> pol = policy.sensitive_attributes(Domain.grid((2, 2)), ["x1"])
    >>> A = np.kron(np.diag([0.1, -0.7]), np.ones((1, 2)))
    >>> invariant_values(A, np.array([1.0, 2.0, 0.0, 4.0]), pol, "Optimized").tolist()
    [0.30000000000000004, -2.8]
    """
    n = policy.domain.size
    rows = int(A.shape[0]) if len(getattr(A, "shape", ())) == 2 else -1
    if rows < 0 or A.shape[1] != n:
        raise InvalidParameterError(f"{mechanism}: the strategy's shape {getattr(A, 'shape', None)} does not "
                                    f"have one column per cell of the policy's domain ({n})")
    if rows * n > INVARIANT_LIMIT:
        raise InvalidParameterError(
            f"{mechanism}: a strategy of sensitivity 0 and {rows} × {n} entries is too large to check cell by cell "
            f"(limit {INVARIANT_LIMIT}); it is refused rather than released without noise")
    A = np.asarray(A.dense() if hasattr(A, "dense") else A, dtype=float)
    x = np.asarray(x, dtype=float).reshape(-1)
    if x.shape != (n,) or not np.all(x == np.round(x)) or np.abs(x).sum() >= 2.0**53:
        raise InvalidParameterError(f"{mechanism}: the histogram must hold {n} whole counts below 2^53 "
                                    "for a release of sensitivity 0")
    labels, bottom = _classes(policy)
    out = np.zeros(rows)
    for c in range(int(labels.max(initial=-1)) + 1):
        members = np.flatnonzero(labels == c)
        if members.size == 0:
            continue
        cols = A[:, members]
        if c == bottom:
            if not np.all(cols == 0.0):
                raise InvalidParameterError(
                    f"{mechanism}: the strategy has sensitivity 0 but a nonzero column at a cell joined to ⊥; "
                    "refused (it would be released without noise)")
            continue
        if not np.all(cols == cols[:, :1]):
            raise InvalidParameterError(
                f"{mechanism}: the strategy has sensitivity 0 but its columns differ within a component of the "
                "policy graph; refused (it would be released without noise)")
        out += cols[:, 0] * float(x[members].sum())  # whole counts: the class sum is exact
    return out


def _classes(policy) -> tuple[np.ndarray, int]:
    """(class label of every cell, the label of ⊥'s class or −1): the policy graph's connected components."""
    if not policy.has_bottom:
        return np.asarray(policy.component_labels(), dtype=np.intp), -1
    from scipy.sparse import csgraph  # lazy: keeps the import of this module light

    n = policy.domain.size
    _, labels = csgraph.connected_components(policy.adjacency(), directed=False)
    return labels[:n].astype(np.intp), int(labels[n])


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

