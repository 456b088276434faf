"""The lattice measurement round(A x / γ), computed exactly (attack 36b: fl(A x) leaks through a tiny Δ).

:func:`.noise.lattice_noisy` releases a real-valued strategy's answers A x
on a public grid γ = 2^g (the largest power of two ≤ 2^-12·Δ/m): it adds
discrete Laplace noise of scale b = (Δ/γ + m)/ε, in grid units, to
w = round(A x / γ), and outputs γ·(w + z). This module computes w.

**Privacy argument.** Let x, x' be neighbours under the policy G (one record
moved along an edge, or added/removed at a cell joined to ⊥) and
d = A x − A x' the *exact* difference of the answers (A's entries are
float64 numbers, that is dyadic rationals, and x holds counts, so A x is an
exact rational). By the definition of the exact Δ, ‖d‖₁ ≤ Δ, and at most m
coordinates of d are nonzero. Let w(x) = round_half_even(A x / γ), the
rounding of the exact rational. For each coordinate, |w_i − w'_i| ≤
|d_i|/γ + 1 when d_i ≠ 0, and w_i = w'_i when d_i = 0 (the same exact
number rounds to the same integer). So ‖w − w'‖₁ ≤ Δ/γ + m, and for every
output o the discrete Laplace likelihood ratio is
∏ t^{|o_i − w_i| − |o_i − w'_i|} ≤ t^{−‖w − w'‖₁} ≤ e^ε with t = e^{−1/b}.
The released γ·(w + z) is exact in float64 (|w + z| < 2^53 and γ ≥ 2^-1074,
a power of two), so it is an injective function of w + z; the refusal of an
output with |w + z| ≥ 2^53 is a function of w + z too (post-processing).

**Why the float product broke it.** fl(A x) differs from A x by up to about
2^-53·Σ_j |a_ij| x_j per row, a quantity set by the *magnitudes* of the row
and the data, not by Δ. When a row cancels (equal columns within a component
of G, so its exact answers are the same on neighbours) while another row
makes Δ tiny but nonzero, γ is far below that rounding error: fl(A x) and
fl(A x') then sit 10^13 grid steps apart although d = 0 there, the noise
(about Δ/ε) cannot cover it, and neighbouring outputs never overlap (attack
36b, hunter loss ≥ 6 at ε = 1). The bound ‖w − w'‖₁ ≤ Δ/γ + m needs the
exact rounding; anything within rounding error of it is not enough.

**How w is computed (fast when it can be, exact always).**

1. *Certified float.* y = fl(A x) by the strategy's factors (a dense or
   sparse matrix, or their Kronecker product applied axis by axis) and a
   rigorous bound on |y − A x|: every output of a stage is a dot product of
   at most n_s terms, so the classical bound (any summation order, with or
   without FMA: |fl(aᵀv) − aᵀv| ≤ γ_{n}|a|ᵀ|v|, γ_n = n·u/(1 − n·u),
   u = 2^-53; Higham, *Accuracy and Stability*, §3.1) composes over the
   stages into ((1 + γ_{n_1})···(1 + γ_{n_S}) − 1)·(|A| |x|), computed by
   the same stages on |A| and |x| and inflated for its own rounding, plus an
   absolute term for underflow (a product may lose up to 2^-1075). A row whose
   interval y ± bound, in grid units, holds no half-integer rounds to the
   same integer as the exact value: w_i = round(y_i/γ) (the bits the float
   path always gave there).
2. *Split* (one factor on whole counts). The undecided rows are split into
   A_hi + A_lo with A_hi x exact in float64 (row entries rounded to a grid
   2^-β of the row's largest, β = 52 − bits(max x) − bits(n): every partial
   sum is an integer on that grid below 2^52), so only fl(A_lo x) carries
   rounding error, about 2^-β of the plain product's (:func:`_split_tier`).
3. *Extended.* The rows still undecided are recomputed (only their factor
   rows) in long double where it is IEEE-style (x87: u = 2^-64, a bound 2048
   times tighter) and decided by the same test.
4. *Exact.* The other rows (a cancelling row with a tiny γ, a value within
   the bound of a rounding tie, an overflow) are computed in integer
   arithmetic: every entry is M·2^e with M an integer (``np.frexp``), a row
   of a factor becomes Python integers over one power of two, the Kronecker
   row is contracted with x in integers, and the quotient by γ = 2^g is
   rounded half to even with ``divmod``.

Either way w is the exact rounding; which tier ran depends on the data but
the output does not (only the running time does: the exact tier is rare and
its cost is polynomial in the domain; a timing channel is the service's
concern, as any timing is).

**Tiny Δ.** γ = 2^g ≥ 2^-1074 whenever 2^-12·Δ/m ≥ 2^-1074. Below that the
grid underflows float64 and :func:`.noise.lattice_step` refuses the strategy
(the refusal reads Δ and m only: public, the same for every database). No
other limit on Δ remains: w is computed exactly however small γ is.

**Remaining assumption.** Δ is the float64 value of the exact sensitivity
(the policy's edge differences); a computed Δ a relative 10^-15 below the
exact one raises the loss by the same relative amount.
"""

from __future__ import annotations

import math

import numpy as np

from ..exceptions import InvalidParameterError

__all__ = ["Product", "lattice_units", "exact_units"]

_U = 2.0**-53
#: |w| at or above this is held as a Python integer (float64 is exact for whole numbers below 2^53)
_BIG = 2.0**53


class Product:
    """A strategy's answers A x, kept as (A, x) so the lattice can round the exact product.

    ``np.asarray(Product(A, x))`` is the float product fl(A x) (for display and
    for tests that record what was measured); :func:`lattice_units` never reads it.

    Examples
    --------
    >>> p = Product(np.array([[0.1, 0.2]]), np.array([1.0, 2.0]))
    >>> p.shape, np.asarray(p).tolist()
    ((1,), [0.5])
    """

    def __init__(self, A, x):
        self.A = A
        self.x = np.asarray(x, dtype=float).reshape(-1)
        self.shape = (int(A.shape[0]),)
        self.size = self.shape[0]
        self._float = None

    def __array__(self, dtype=None, copy=None):
        if self._float is None:
            self._float = np.asarray(self.A @ self.x, dtype=float).reshape(-1)
        return self._float if dtype is None else self._float.astype(dtype)

    def __len__(self) -> int:
        return self.size


def lattice_units(values, g: int) -> tuple[np.ndarray, dict]:
    """(w, big): w = round_half_even(values / 2^g) exactly, as float64 whole numbers.

    ``values`` is a :class:`Product` (rounded from the exact A x) or an array
    taken as the exact values. Entries with |w| ≥ 2^53 are also given
    exactly in ``big`` (index → Python int); w holds ±inf there.

    Examples
    --------
    >>> A = np.array([[0.1, 0.1, -0.2, -0.2]])  # 0.1·6 − 0.2·3 = 0 exactly; fl gives 5.6e-17
    >>> a, b = np.array([3.0, 3, 3, 0]), np.array([3.0, 3, 2, 1])
    >>> lattice_units(Product(A, a), -97)[0].tolist(), lattice_units(Product(A, b), -97)[0].tolist()
    ([0.0], [0.0])
    >>> float(np.round(np.asarray(Product(A, b))[0] * 2.0**97)) > 1e12  # the float product: far off the lattice
    True
    """
    if not isinstance(values, Product):
        values = np.asarray(values, dtype=float)
        if not np.all(np.isfinite(values)):
            raise InvalidParameterError("the measured values must be finite for the lattice sampler")
        w = np.round(np.ldexp(values, -g))
        if not np.all(np.isfinite(w)) or np.abs(w).max(initial=0.0) >= _BIG:
            return _with_big(w, {i: _round_fraction(*_exact_scalar(float(values[i])), g)
                                 for i in np.flatnonzero(~(np.abs(w) < _BIG))})
        return w, {}
    factors, cells = _factors(values.A)
    x = values.x
    if x.size != math.prod(cells) or not np.all(np.isfinite(x)):
        raise InvalidParameterError(f"the histogram must hold {math.prod(cells)} finite counts, got shape {x.shape}")
    y = _staged(factors, cells, x, abs_=False)
    bound = _bound(factors, cells, x)
    with np.errstate(invalid="ignore", over="ignore"):
        t = np.ldexp(y, -g)
        b = np.ldexp(bound, -g)
        fl = np.floor(t)
        h = np.abs((t - fl) - 0.5)
        ok = np.isfinite(t) & np.isfinite(b) & (np.abs(t) < 2.0**51) & (h > b * (1 + 2.0**-40) + 2.0**-50)
    w = np.where(ok, np.round(np.where(ok, t, 0.0)), 0.0)
    rest = np.flatnonzero(~ok)
    if rest.size and len(factors) == 1:  # one factor on whole counts: the split product, on those rows only
        F = factors[0]
        split = _split_tier(F[rest].toarray() if _is_sparse(F) else F[rest], x, g)
        if split is not None:
            units, decided = split
            w[rest[decided]] = units[decided]
            rest = rest[~decided]
    if rest.size and _EXTENDED:
        decided, units = _extended_units(factors, cells, x, rest, g)
        w[rest[decided]] = units[decided]
        rest = rest[~decided]
    if rest.size == 0:
        return w, {}
    exact = exact_units(factors, cells, x, rest, g)
    big = {}
    for i, v in zip(rest.tolist(), exact):
        if abs(v) < _BIG:
            w[i] = float(v)
        else:
            big[i] = v
    return _with_big(w, big)


def exact_units(factors, cells, x, rows, g: int) -> list[int]:
    """round_half_even((⊗ factors) x / 2^g) for the flat row indices ``rows``, in integer arithmetic.

    Examples
    --------
    >>> F = [np.array([[0.1, 0.1, -0.2, -0.2]])]
    >>> exact_units(F, (4,), np.array([3.0, 3, 2, 1]), np.array([0]), -97)
    [0]
    """
    xi, ex = _integers(np.asarray(x, dtype=float).reshape(cells))
    coords = np.unravel_index(np.asarray(rows, dtype=np.int64), tuple(f.shape[0] for f in factors))
    memo: dict = {}
    out = []
    for r in zip(*(c.tolist() for c in coords)):
        total, e = _contract(factors, xi, r, memo)
        out.append(_round_fraction(total, e + ex, g))
    return out


# -- helpers ---------------------------------------------------------------------------------------------------------

def _with_big(w: np.ndarray, big: dict) -> tuple[np.ndarray, dict]:
    for i, v in big.items():
        w[i] = math.inf if v > 0 else -math.inf  # |v| ≥ 2^53: never 0
    return w, big


def _factors(A) -> tuple[list, tuple]:
    """(the factors whose Kronecker product is A, in C order; the cell shape)."""
    from ..operators import Kron, Matrix

    if isinstance(A, Kron):
        out = []
        for f in A.factors:
            out += _factors(f)[0]
        return out, tuple(int(f.shape[1]) for f in out)
    if isinstance(A, Matrix):
        M = A.A
    elif isinstance(A, np.ndarray) or _is_sparse(A):
        M = A
    elif hasattr(A, "dense"):
        M = np.asarray(A.dense(), dtype=float)
    else:
        raise InvalidParameterError(f"the lattice measurement needs a matrix or Kronecker strategy, got {type(A).__name__}")
    if _is_sparse(M):  # duplicate entries summed (attack37b): a row's terms are then at most its columns
        M = _summed(M)
    else:
        M = np.asarray(M, dtype=float)
    if M.ndim != 2:
        raise InvalidParameterError(f"the strategy must be two-dimensional, got shape {M.shape}")
    return [M], (int(M.shape[1]),)


def _summed(M):
    """A sparse matrix with its duplicate entries summed correctly rounded (``math.fsum``; scipy's own
    ``sum_duplicates`` adds them one by one: 1 + 5,000 × 2^-53 stays 1), as a new CSR array."""
    import scipy.sparse as sp

    coo = sp.coo_array(M, dtype=float)
    if coo.nnz == 0:
        return sp.csr_array(coo.shape, dtype=float)
    key = coo.row.astype(np.int64) * coo.shape[1] + coo.col
    order = np.argsort(key, kind="stable")
    key, data = key[order], coo.data[order]
    first = np.r_[True, key[1:] != key[:-1]]
    starts = np.flatnonzero(first)
    values = data[starts].copy()
    ends = np.r_[starts[1:], key.size]
    for i in np.flatnonzero(ends - starts > 1):
        values[i] = math.fsum(data[starts[i]:ends[i]])
    uniq = key[starts]
    return sp.csr_array((values, (uniq // coo.shape[1], uniq % coo.shape[1])), shape=coo.shape)


def _is_sparse(A) -> bool:
    import scipy.sparse as sp

    return sp.issparse(A)


def _staged(factors, cells, x, abs_: bool) -> np.ndarray:
    """(⊗ factors) x in x's precision, one axis at a time (|factors| |x| when ``abs_``)."""
    t = (np.abs(x) if abs_ else x).reshape(cells)
    for axis, F in enumerate(factors):
        if abs_:
            F = abs(F)
        t = np.moveaxis(t, axis, 0)
        rest = t.shape[1:]
        t = np.asarray(F @ t.reshape(t.shape[0], -1)).reshape((F.shape[0],) + rest)
        t = np.moveaxis(t, 0, axis)
    return t.reshape(-1)


def _gamma(n: int, u: float) -> float:
    """γ_n = n·u / (1 − n·u), the relative error bound of an n-term dot product at unit roundoff ``u`` (∞ when
    n·u ≥ 1/2), rounded up by 2^-30 relative."""
    nu = n * u  # exact: u is a power of two
    return nu / (1 - nu) * (1 + 2.0**-30) if nu < 0.5 else math.inf


def _theta(columns: list[int], u: float) -> float:
    """Π(1 + γ_n) − 1 over the stages, inflated by 2^-30 relative: computed as expm1(Σ log1p(γ_n)), never as a
    product of ``1 + γ_n`` in float64, which is exactly 1 when γ_n is below 2^-53 (attack37b: at u = 2^-64 the long
    double tier's bound was 0 for any row of fewer than 2,048 columns, and it accepted wrong roundings)."""
    total = 0.0
    for n in columns:
        g = _gamma(n, u)
        if not math.isfinite(g):
            return math.inf
        total += math.log1p(g)
    return math.expm1(total) * (1 + 2.0**-30)


def _bound(factors, cells, x) -> np.ndarray:
    """A rigorous bound on |fl(A x) − A x| for :func:`_staged` (see the module docstring)."""
    eta = 0.0
    absolute = [abs(F) for F in factors]
    for F in absolute:
        n = int(F.shape[1])
        gn = _gamma(n, _U)
        rowsum = float(np.max(np.asarray(F.sum(axis=1)), initial=0.0))
        # underflow: each product of a stage may lose 2^-1075; earlier losses pass through this stage's rows
        eta = eta * rowsum * (1 + gn) + n * 2.0**-1074
    theta = _theta([int(F.shape[1]) for F in absolute], _U)
    if not math.isfinite(theta) or theta >= 0.01:
        return np.full(math.prod(f.shape[0] for f in factors), math.inf)
    c = _staged(absolute, cells, np.abs(x), abs_=False)
    with np.errstate(over="ignore"):
        return theta * (c + eta) * (1 + 2 * theta + 2.0**-40) + 2 * eta


def _split_tier(F, x, g: int):
    """(w, decided) for one factor and whole counts: A = A_hi + A_lo with A_hi x exact in float64, or None.

    Row i's entries are rounded to the grid 2^(e_i − β) (|a_ij| ≤ 2^e_i, β = 52 − bits(max x) − bits(n)):
    A_hi x then sums integers times 2^(e_i − β) below 2^52 of them, exact in any order; A_lo = A − A_hi is exact
    and at most 2^-β of the row's largest entry, so the certified bound on fl(A_lo x) is about 2^-β of the plain
    one. The value (A_hi x)/γ + fl(A_lo x)/γ is rounded from its integer part r and the fraction
    (A_hi x/γ − r) + A_lo x/γ, with the fraction's own rounding in the margin.
    """
    if not np.all(x == np.round(x)):
        return None
    top = float(np.abs(x).max(initial=0.0))
    if top >= 2.0**40:
        return None
    n = int(F.shape[1])
    beta = 52 - int(top).bit_length() - n.bit_length()
    if beta < 8:
        return None
    sparse = _is_sparse(F)
    if sparse:
        F = F.tocsr()
        data = F.data
        rowmax = np.asarray(abs(F).max(axis=1).todense()).reshape(-1)
        owner = np.repeat(np.arange(F.shape[0]), np.diff(F.indptr))
    else:
        data = np.asarray(F, dtype=float)
        rowmax = np.abs(data).max(axis=1, initial=0.0)
    e = np.frexp(rowmax)[1].astype(np.int64)  # |a_ij| < 2^e_i
    shift = beta - e
    shift = np.where(e - beta >= -1074, shift, 0)  # a grid below 2^-1074: no split for that row (hi = 0)
    use = (e - beta >= -1074) & (rowmax > 0)
    per = shift[owner] if sparse else shift[:, None]
    hi = np.ldexp(np.round(np.ldexp(data, per)), -per)
    hi = np.where((use[owner] if sparse else use[:, None]), hi, 0.0)
    lo = data - hi
    if sparse:
        import scipy.sparse as sp

        F_hi = sp.csr_array((hi, F.indices, F.indptr), shape=F.shape)
        F_lo = sp.csr_array((lo, F.indices, F.indptr), shape=F.shape)
    else:
        F_hi, F_lo = hi, lo
    y_hi = np.asarray(F_hi @ x)
    y_lo = np.asarray(F_lo @ x)
    bound = _bound([F_lo], (n,), x)
    u = _U
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        t_hi = np.ldexp(y_hi, -g)
        r = np.round(t_hi)
        f = (t_hi - r) + np.ldexp(y_lo, -g)
        b = np.ldexp(bound, -g) + 2.0**-1070
        h = np.abs((f - np.floor(f)) - 0.5)
        ok = (np.isfinite(t_hi) & np.isfinite(f) & np.isfinite(b) & (np.abs(t_hi) < 2.0**51) & (np.abs(f) < 2.0**40)
              & ((y_hi == 0) | (np.abs(t_hi) >= 2.0**-1000))  # t_hi exact (no underflow)
              & (h > b * (1 + 2.0**-40) + 4 * u * (np.abs(f) + 1) + 2.0**-60))
    w = np.where(ok, r + np.round(np.where(ok, f, 0.0)), 0.0)
    return w, ok


#: the extended tier runs where long double is IEEE-style (x87 extended: 64-bit significand, or binary128): the
#: rounding model fl(a ∘ b) = (a ∘ b)(1 + δ), |δ| ≤ u holds there (not for IBM double-double)
_EXTENDED = np.finfo(np.longdouble).nmant in (63, 112)


def _extended_units(factors, cells, x, rows, g: int) -> tuple[np.ndarray, np.ndarray]:
    """(decided, w) for the flat ``rows``: the staged product in long double restricted to those rows' factor rows,
    with the same certified test as the float tier at u = 2^-64 (x87) — 2048 times tighter. No underflow: products
    of up to 14 float64 entries and a count stay above long double's smallest normal (about 1e-4932)."""
    if len(factors) > 14:
        return np.zeros(rows.size, dtype=bool), np.zeros(rows.size)
    ld = np.longdouble
    u = float(np.finfo(ld).eps) / 2
    coords = np.unravel_index(rows, tuple(f.shape[0] for f in factors))
    subs, picks = [], []
    for F, c in zip(factors, coords):
        keep, inverse = np.unique(c, return_inverse=True)
        sub = F[keep].toarray() if _is_sparse(F) else np.asarray(F)[keep]
        subs.append(sub.astype(ld))
        picks.append(inverse)
    if sum(f.size for f in subs) > 5 * 10**7:
        return np.zeros(rows.size, dtype=bool), np.zeros(rows.size)
    flat = np.ravel_multi_index(tuple(picks), tuple(f.shape[0] for f in subs))
    y = _staged(subs, cells, x.astype(ld), abs_=False)[flat]
    c = _staged(subs, cells, x.astype(ld), abs_=True)[flat]
    theta = _theta([int(F.shape[1]) for F in subs], u)
    if not math.isfinite(theta) or theta >= 0.01:
        return np.zeros(rows.size, dtype=bool), np.zeros(rows.size)
    bound = ld(theta) * c * ld(1 + 2 * theta + 2.0**-40)
    t, b = np.ldexp(y, -g), np.ldexp(bound, -g)
    with np.errstate(invalid="ignore", over="ignore"):
        fl = np.floor(t)
        h = np.abs((t - fl) - ld(0.5))
        ok = np.isfinite(t) & np.isfinite(b) & (np.abs(t) < ld(2.0**51)) & (h > b * ld(1 + 2.0**-40) + ld(2.0**-60))
    return ok, np.where(ok, np.round(np.where(ok, t, 0)), 0).astype(float)


def _integers(a: np.ndarray) -> tuple[np.ndarray, int]:
    """(object array of Python ints N, e) with a = N·2^e exactly (e the smallest exponent of a nonzero entry)."""
    m, e = np.frexp(a)
    mant = (m * 2.0**53).astype(np.int64)  # exact: |m| < 1 has 53 significant bits
    e = e.astype(np.int64) - 53
    nz = mant != 0
    if not nz.any():
        return np.zeros(a.shape, dtype=object), 0
    lo = int(e[nz].min())
    shift = np.where(nz, e - lo, 0)
    return mant.astype(object) << shift.astype(object), lo  # elementwise Python-int shifts (exact, any width)


def _row_integers(F, r: int) -> tuple[np.ndarray, int]:
    row = F[r:r + 1].toarray().reshape(-1) if _is_sparse(F) else np.asarray(F[r], dtype=float)
    return _integers(row)


def _contract(factors, xi: np.ndarray, rows: tuple, memo: dict) -> tuple[int, int]:
    """(N, e) with (row ``rows`` of ⊗ factors) · xi = N·2^e exactly; partial contractions memoised by row prefix."""
    t, e = xi, 0
    for s, (F, r) in enumerate(zip(factors, rows)):
        key = rows[: s + 1]
        if key in memo:
            t, e = memo[key]
            continue
        v, ev = _row_integers(F, r)
        t = np.tensordot(v, t, axes=([0], [0])) if t.ndim > 1 else int(np.dot(v, t))
        e = e + ev
        memo[key] = (t, e)
    return int(t), e


def _exact_scalar(v: float) -> tuple[int, int]:
    n, d = v.as_integer_ratio()
    return n, -(d.bit_length() - 1)


def _round_fraction(n: int, e: int, g: int) -> int:
    """round_half_even(n·2^e / 2^g) for Python ints n, e, g."""
    s = e - g
    if s >= 0:
        return n << s
    q, r = divmod(n, 1 << -s)  # floor division: 0 ≤ r < 2^-s
    half = 1 << (-s - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return q
