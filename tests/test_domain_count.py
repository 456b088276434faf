"""The blocked count (``Domain.histogram``) bins exactly as ``pd.cut`` does, on adversarial values (issue 28, speed35).

The count takes shortcuts for speed (an exact affine map truncated through int32, unit integers counted as they
are); none may move a value to another bin, accept a value outside the domain, or fail otherwise than with the
column's DomainError. Reference: ``pd.cut(v, edges, right=False)`` (bins closed on the left), with the upper edge
itself in the last bin (our one difference from pd.cut's half-open bins); anything pd.cut leaves out (NaN,
±inf, below the first edge, above the last) must make the whole count raise DomainError.
"""

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import Domain, DomainError
from blowfish_nb.domain import OrderedAttribute

#: (bounds, bins): the benchmark's three columns, a negative origin, a non-integer width, an integer width
EQUAL = [((0, 250_000), 4096), ((0, 4_096_000), 4096), ((0, 4096), 4096), ((-3.5, 7.25), 13), ((10, 110), 100),
         ((0, 100), 20), ((1e-3, 1e-3 + 62 * 17), 17)]
UNEQUAL = [0, 0.5, 3, 3.25, 10, 100]


def _reference(v: np.ndarray, edges: np.ndarray) -> np.ndarray | None:
    """pd.cut's codes with the upper edge in the last bin, or None when some value is left out."""
    k = edges.size - 1
    codes = pd.cut(pd.Series(v, dtype=float), edges, right=False, labels=False).to_numpy()
    codes = np.where(v.astype(float) == edges[-1], k - 1, codes)
    return None if np.isnan(codes).any() else codes.astype(np.intp)


def _adversarial(edges: np.ndarray, rng) -> np.ndarray:
    """Every edge, the floats either side of each, ties (each edge repeated), midpoints and random values."""
    e = edges
    mids = (e[:-1] + e[1:]) / 2
    inside = np.r_[e, e, np.nextafter(e, -np.inf), np.nextafter(e, np.inf), mids, rng.uniform(e[0], e[-1], 300)]
    return inside[(inside >= e[0]) & (inside <= e[-1])]


def _check(attribute: OrderedAttribute, v: np.ndarray) -> None:
    df = pd.DataFrame({attribute.name: v})
    d = Domain([attribute])
    want = _reference(v, attribute.edges)
    if want is None:
        with pytest.raises(DomainError, match=f"column {attribute.name!r}"):
            d.histogram(df)
        with pytest.raises(DomainError, match=f"column {attribute.name!r}"):
            d.encode(df)
        return
    assert np.array_equal(d.encode(df), want)
    assert np.array_equal(d.histogram(df), np.bincount(want, minlength=d.size))


@pytest.mark.parametrize("bounds,bins", EQUAL + [(None, None)])
def test_float_columns_bin_as_pd_cut_at_every_edge_and_refuse_what_it_leaves_out(bounds, bins):
    rng = np.random.default_rng(35)
    edges = np.asarray(UNEQUAL, float) if bounds is None else np.linspace(bounds[0], bounds[1], bins + 1)
    a = OrderedAttribute("x", edges)
    v = _adversarial(a.edges, rng)
    for dtype in (np.float64, np.float32):
        w = v.astype(dtype)
        w = w[(w >= a.edges[0]) & (w <= a.edges[-1])]  # float32 rounding may step over an end
        _check(a, w)
        _check(a, np.tile(w, 70_000 // w.size + 2))  # several counting blocks
    lo, hi = a.edges[0], a.edges[-1]
    width = (hi - lo) / a.size
    outside = [np.nan, np.inf, -np.inf, np.nextafter(lo, -np.inf), np.nextafter(hi, np.inf), lo - width / 2,
               hi + width / 2, lo - 2 * width, 1e300, -1e300]
    big = np.tile(v, 70_000 // v.size + 2)
    for bad in outside:
        for where in (0, big.size // 2, big.size - 1):  # the first block, a middle one, the last
            w = big.copy()
            w[where] = bad
            _check(a, w)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint16])
@pytest.mark.parametrize("bounds,bins", [((0, 4096), 4096), ((10, 110), 100), ((0, 100), 20), ((0, 100), 100),
                                         ((0, 30), 7)])
def test_integer_columns_bin_as_pd_cut_and_refuse_values_past_either_end(dtype, bounds, bins):
    a = OrderedAttribute("n", np.linspace(bounds[0], bounds[1], bins + 1))
    lo, hi = bounds
    v = np.r_[np.arange(lo, hi + 1), np.arange(lo, hi + 1)].astype(dtype)  # every value, each twice (ties)
    _check(a, v)
    _check(a, np.tile(v, 70_000 // v.size + 2))
    outside = [hi + 1, hi + 10**6, np.iinfo(dtype).max] + ([lo - 1, np.iinfo(dtype).min] if lo > 0 or
                                                            np.iinfo(dtype).min < 0 else [])
    big = np.tile(v, 70_000 // v.size + 2)
    for bad in outside:
        if np.iinfo(dtype).min <= bad <= np.iinfo(dtype).max:
            w = big.copy()
            w[big.size // 2] = bad
            _check(a, w)


def test_a_huge_integer_is_refused_with_the_columns_error_not_a_memory_error():
    """Unit-width integers are counted as they are: a value of 10¹² made np.bincount ask for 7 TiB (MemoryError,
    and 10⁹ allocated 8 GB before the range check); the largest value is now checked first."""
    d = Domain([OrderedAttribute("n", np.arange(4097.0))])
    for bad in (10**12, 10**9, 2**62):
        with pytest.raises(DomainError, match="column 'n'"):
            d.histogram(pd.DataFrame({"n": np.array([1, bad, 3], dtype=np.int64)}))
