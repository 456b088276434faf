"""Range-query workloads: 1-D ranges [lo, hi] and d-D boxes, as structured operators.

The histogram (ranges [i, i]) and the cumulative histogram ([0, i]) are range
workloads too, so every 1-D workload of the papers reduces to two index arrays.
Answers come from prefix sums (summed-area tables in d-D): O(k + q).
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np

from ._validation import as_generator
from .exceptions import InvalidParameterError
from .operators import Identity, Kron, Prefix, Total, Workload

__all__ = ["Ranges", "Boxes", "all_ranges", "random_ranges", "ranges_2d", "as_ranges", "axis_ranges", "cut_blocks",
           "ALL_RANGES_LIMIT"]

ALL_RANGES_LIMIT = 4096


class Ranges(Workload):
    """Range counts over a 1-D domain: query j sums cells lo[j]..hi[j] (inclusive).

    Examples
    --------
    >>> R = Ranges(5, [0, 1, 4], [4, 2, 4])
    >>> (R @ np.arange(5.0)).tolist()
    [10.0, 3.0, 4.0]
    """

    name = "ranges"

    def __init__(self, k: int, lo, hi):
        lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
        if lo.shape != hi.shape or lo.ndim != 1:
            raise InvalidParameterError(f"lo and hi must be 1-D arrays of one shape, got {lo.shape} and {hi.shape}")
        bad = (lo < 0) | (hi >= k) | (lo > hi)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise InvalidParameterError(f"range {j} = [{lo[j]}, {hi[j]}] must satisfy 0 <= lo <= hi < {k}")
        self.k, self.lo, self.hi = k, lo, hi
        super().__init__((lo.size, k))

    def _matvec(self, x):
        c = np.concatenate([[0.0], np.cumsum(np.asarray(x, dtype=float).reshape(-1))])
        return c[self.hi + 1] - c[self.lo]

    def _rmatvec(self, y):
        d = np.zeros(self.k + 1)
        np.add.at(d, self.lo, y)
        np.add.at(d, self.hi + 1, -np.asarray(y, dtype=float))
        return np.cumsum(d[:-1])

    binary = True

    def column_norms(self, u):
        """How many ranges cover each cell (by sorted endpoints: O(q log q + |u| log q))."""
        u = np.asarray(u)
        lo, hi = _sorted(self.lo), _sorted(self.hi)
        return (np.searchsorted(lo, u, side="right") - np.searchsorted(hi, u, side="left")).astype(float)

    def column_overlaps(self, u, v):
        """How many ranges cover both cells (in blocks of pairs, O(q) memory per block)."""
        a, b = np.minimum(u, v).ravel(), np.maximum(u, v).ravel()
        out = np.empty(a.size)
        step = max(1, 2_000_000 // max(1, self.lo.size))
        for s in range(0, a.size, step):
            out[s : s + step] = np.count_nonzero(
                (self.lo[None, :] <= a[s : s + step, None]) & (self.hi[None, :] >= b[s : s + step, None]), axis=1
            )
        return out.reshape(np.shape(u))

    def column_differences(self, u, v):
        if (self.lo == 0).all():
            # prefix ranges: e_u and e_v differ exactly on the ranges ending in [min, max)
            ends = _sorted(self.hi)
            a, b = np.minimum(u, v), np.maximum(u, v)
            return (np.searchsorted(ends, b, side="left") - np.searchsorted(ends, a, side="left")).astype(float)
        return self.column_norms(u) + self.column_norms(v) - 2.0 * self.column_overlaps(u, v)

    def dense(self):
        self._check_dense()
        cells = np.arange(self.k)
        return ((cells[None, :] >= self.lo[:, None]) & (cells[None, :] <= self.hi[:, None])).astype(float)


class Boxes(Workload):
    """Box counts over a C-ordered grid: query j sums cells with lo[j] <= coords <= hi[j].

    Examples
    --------
    >>> B = Boxes((2, 3), [[0, 1]], [[1, 2]])
    >>> (B @ np.arange(6.0)).tolist()
    [12.0]
    """

    name = "boxes"

    def __init__(self, shape, lo, hi):
        self.cell_shape = tuple(int(n) for n in shape)
        lo, hi = np.atleast_2d(np.asarray(lo, dtype=np.int64)), np.atleast_2d(np.asarray(hi, dtype=np.int64))
        if lo.shape != hi.shape or lo.shape[1] != len(self.cell_shape):
            raise InvalidParameterError(f"lo and hi must be (q, {len(self.cell_shape)}) arrays, got {lo.shape}, {hi.shape}")
        bad = (lo < 0).any(1) | (hi >= np.array(self.cell_shape)).any(1) | (lo > hi).any(1)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise InvalidParameterError(f"box {j} = {lo[j].tolist()}..{hi[j].tolist()} lies outside {self.cell_shape}")
        self.lo, self.hi = lo, hi
        super().__init__((lo.shape[0], math.prod(self.cell_shape)))

    def factor(self, axis: int) -> Ranges:
        """The 1-D ranges of every box along ``axis``."""
        return Ranges(self.cell_shape[axis], self.lo[:, axis], self.hi[:, axis])

    def _matvec(self, x):
        table = np.asarray(x, dtype=float).reshape(self.cell_shape)
        for axis in range(table.ndim):
            table = np.cumsum(table, axis=axis)
        table = np.pad(table, [(1, 0)] * table.ndim)
        total = np.zeros(self.lo.shape[0])
        for corner in np.ndindex(*(2,) * table.ndim):
            idx = tuple(np.where(c, self.hi[:, a] + 1, self.lo[:, a]) for a, c in enumerate(corner))
            sign = (-1) ** (table.ndim - sum(corner))
            total += sign * table[idx]
        return total

    def _rmatvec(self, y):
        d = np.zeros(tuple(n + 1 for n in self.cell_shape))
        y = np.asarray(y, dtype=float)
        for corner in np.ndindex(*(2,) * len(self.cell_shape)):
            idx = tuple(np.where(c, self.hi[:, a] + 1, self.lo[:, a]) for a, c in enumerate(corner))
            np.add.at(d, idx, (-1) ** sum(corner) * y)
        for axis in range(d.ndim):
            d = np.cumsum(d, axis=axis)
        return d[tuple(slice(0, n) for n in self.cell_shape)].reshape(-1)

    def dense(self):
        self._check_dense()
        coords = np.unravel_index(np.arange(self.shape[1]), self.cell_shape)
        inside = np.ones((self.shape[0], self.shape[1]), dtype=bool)
        for a, c in enumerate(coords):
            inside &= (c[None, :] >= self.lo[:, a, None]) & (c[None, :] <= self.hi[:, a, None])
        return inside.astype(float)


def all_ranges(k: int) -> Ranges:
    """Every range [lo, hi] of a k-cell domain: k(k+1)/2 queries (k ≤ 4096).

    Examples
    --------
    >>> all_ranges(3).shape
    (6, 3)
    """
    k = _positive(k, "k")
    if k > ALL_RANGES_LIMIT:
        raise InvalidParameterError(
            f"all_ranges lists k(k+1)/2 queries; k={k} is above {ALL_RANGES_LIMIT}: use random_ranges(k, n, rng)"
        )
    lo, hi = np.triu_indices(k)
    return Ranges(k, lo, hi)


def random_ranges(k: int, n: int = 10_000, rng=None) -> Ranges:
    """``n`` ranges with endpoints drawn uniformly (then ordered), as in the papers' 10,000 random ranges.

    Examples
    --------
    >>> r = random_ranges(100, 5, rng=0)
    >>> bool((r.lo <= r.hi).all()), r.shape
    (True, (5, 100))
    """
    k, n = _positive(k, "k"), _positive(n, "n")
    g = as_generator(rng)
    ends = g.integers(0, k, size=(n, 2))
    return Ranges(k, ends.min(1), ends.max(1))


def ranges_2d(shape, n: int = 10_000, rng=None) -> Boxes:
    """``n`` random rectangles over a 2-D grid (uniform corners per axis)."""
    shape = tuple(_positive(s, "shape") for s in shape)
    if len(shape) != 2:
        raise InvalidParameterError(f"ranges_2d needs a 2-D shape, got {shape!r}")
    n = _positive(n, "n")
    g = as_generator(rng)
    ends = np.stack([g.integers(0, s, size=(n, 2)) for s in shape], axis=1)  # (n, 2 axes, 2 ends)
    return Boxes(shape, ends.min(2), ends.max(2))


def as_ranges(W: Workload) -> Ranges | None:
    """The workload as 1-D ranges when it is one (identity, prefix, ranges), else None."""
    if isinstance(W, Ranges):
        return W
    if isinstance(W, Identity):
        cells = np.arange(W.shape[1])
        return Ranges(W.shape[1], cells, cells)
    if isinstance(W, Prefix):
        k = W.shape[1]
        return Ranges(k, np.zeros(k, dtype=np.int64), np.arange(k))
    return None


def _positive(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise InvalidParameterError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def axis_ranges(workload: Workload, shape) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Per-axis (lo, hi) when the rows of ``workload`` are the Cartesian product of one range list per axis.

    The identity over the whole grid (the multi-column histogram) and Kronecker
    products of 1-D range workloads and totals (cumulative counts, marginals)
    qualify; their rows run in C order, the order of the product's rows.

    Examples
    --------
    >>> from blowfish_nb.workload import marginal
    >>> [(lo.tolist(), hi.tolist()) for lo, hi in axis_ranges(marginal((2, 3), [0]), (2, 3))]
    [([0, 1], [0, 1]), ([0], [2])]
    """
    shape = tuple(int(s) for s in shape)
    if isinstance(workload, Identity) and workload.shape[1] == math.prod(shape):
        return [(np.arange(k), np.arange(k)) for k in shape]
    if not isinstance(workload, Kron) or tuple(workload.cell_shape) != shape:
        return None
    axes = []
    for f, k in zip(workload.factors, shape):
        if isinstance(f, Total):
            axes.append((np.zeros(1, dtype=np.intp), np.full(1, k - 1, dtype=np.intp)))
            continue
        r = as_ranges(f)
        if r is None:
            return None
        axes.append((r.lo, r.hi))
    return axes


def _sorted(a: np.ndarray) -> np.ndarray:
    """``a`` sorted; ``a`` itself when it already is (a cumulative workload's ends: an O(q) check, not a sort,
    on each of the many edge chunks a sensitivity scan passes through)."""
    return a if a.size < 2 or bool((a[1:] >= a[:-1]).all()) else np.sort(a)


def cut_blocks(k: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Block id per cell of ``k`` for the partition cut at every range's ends (cells no range end separates share one).

    Examples
    --------
    >>> cut_blocks(8, np.array([0, 2]), np.array([4, 5])).tolist()
    [0, 0, 1, 1, 1, 2, 3, 3]
    """
    cuts = np.zeros(k + 1, dtype=bool)
    cuts[lo] = True
    cuts[hi + 1] = True
    cuts[0] = False
    return np.cumsum(cuts[:k]).astype(np.intp)

