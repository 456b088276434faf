"""Distance-threshold policies over ordered attributes (He et al. 2014, §3.1; Haney et al. 2015, §5).

G^θ joins two cells whose bin coordinates are at most θ apart: |u − v| ≤ θ on
one attribute (``line`` is G^1), ‖u − v‖₁ ≤ θ on a k^d grid (G^θ_{k^d},
``grid``), or ‖u − v‖∞ ≤ θ with ``metric="linf"``. Edges come in one chunk per
offset vector δ (θ^d of them, each at most k edges), so sensitivities cost
O(|E|) and never a k×k matrix.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .._validation import check_theta
from ..domain import Domain, OrderedAttribute
from ..exceptions import InvalidParameterError, PolicyError
from ..ranges import Ranges
from .base import Policy
from .sensitivity import clique_sensitivity

__all__ = ["Threshold", "threshold", "line", "grid"]

METRICS = ("l1", "linf")


class Threshold(Policy):
    """G^θ on ordered attributes: edges between cells at distance 1..θ in the chosen metric."""

    kind = "threshold"

    def __init__(self, domain: Domain, theta: int, metric: str = "l1"):
        super().__init__(domain)
        _check_all_ordered(domain)
        self.theta = check_theta(theta)
        if metric not in METRICS:
            raise InvalidParameterError(f"metric must be one of {METRICS}, got {metric!r}")
        self.metric = metric
        self.warn_if_protects_nothing()  # one cell: nothing to move to

    @property
    def family(self) -> str:  # type: ignore[override]
        if len(self.domain.shape) > 1:
            return "grid"
        return "line" if self.theta == 1 else "threshold"

    @property
    def params(self):
        return {"theta": self.theta, "metric": self.metric}

    def _display_params(self):
        shown = {} if self.family == "line" else {"theta": self.theta}
        if self.metric != "l1" and len(self.domain.shape) > 1:
            shown["metric"] = self.metric
        return shown

    def offsets(self) -> list[tuple[int, ...]]:
        """Offset vectors δ (lexicographically positive) with 0 < ‖δ‖ ≤ θ that fit in the domain."""
        shape = self.domain.shape
        ranges = [range(-min(self.theta, n - 1), min(self.theta, n - 1) + 1) for n in shape]
        out = []
        for delta in itertools.product(*ranges):
            norm = sum(map(abs, delta)) if self.metric == "l1" else max(map(abs, delta))
            first = next((c for c in delta if c != 0), 0)
            if 0 < norm <= self.theta and first > 0:
                out.append(delta)
        return out

    def edge_chunks(self):
        shape = self.domain.shape
        strides = np.array([math.prod(shape[i + 1 :]) for i in range(len(shape))])
        for delta in self.offsets():
            # cells c with 0 <= c + δ < shape, as flat indices
            axes = [np.arange(max(0, -d), n - max(0, d)) for d, n in zip(delta, shape)]
            grid = np.ix_(*axes)
            flat = sum(a * s for a, s in zip(grid, strides))
            u = np.asarray(flat, dtype=np.intp).reshape(-1)
            yield u, u + int(np.dot(delta, strides))

    def sensitivity(self, strategy) -> float:
        """Δ_A(G^θ); on one attribute a closed form over θ-windows for strategies whose column distance over a run
        of cells is largest at its two ends (``diameter_at_extremes``), else the edge scan of :class:`Policy`.

        On a line G^θ is the union of the cliques on the windows [i, i + w],
        w = min(θ, k − 1): every window pair is within θ, and every edge
        (u, v), v − u ≤ θ, lies in the window starting at min(u, k − 1 − w).
        Over a window such a strategy's largest column distance is that of its
        two ends, so Δ = max_i ‖A e_i − A e_{i+w}‖₁: k − w pairs instead of
        about kθ edges (issue 28: 16× fewer at θ = 16).

        Examples
        --------
        >>> from blowfish_nb.operators import Prefix
        >>> threshold(Domain.grid(10), 3).sensitivity(Prefix(10))  # a prefix count moves by |u − v| ≤ θ
        3.0
        """
        k = self.domain.size
        if len(self.domain.shape) == 1 and getattr(strategy, "diameter_at_extremes", False) and k > 1:
            lows = np.arange(k - min(self.theta, k - 1))
            return clique_sensitivity(strategy, lows, lows + min(self.theta, k - 1), self.edge_chunks(), k)
        if len(self.domain.shape) == 1 and isinstance(strategy, Ranges) and strategy.k == k:
            found = _range_segments_sensitivity(strategy, self.theta, self.edge_count())
            if found is not None:
                return found
        return super().sensitivity(strategy)

    def edge_count(self) -> int:
        shape = self.domain.shape
        return int(sum(math.prod(n - abs(d) for d, n in zip(delta, shape)) for delta in self.offsets()))

    def component_labels(self) -> np.ndarray:
        return np.zeros(self.domain.size, dtype=np.intp)  # unit steps along each axis are edges

    def distance(self, u, v) -> float:
        a, b = self._vertex(u, "u"), self._vertex(v, "v")
        diff = np.abs(np.subtract(self.domain.cell(a), self.domain.cell(b)))
        norm = diff.sum() if self.metric == "l1" else diff.max(initial=0)
        return int(math.ceil(norm / self.theta))

    def projected_pairs(self, block_of: np.ndarray, m: int):
        """Closed-form projection onto blocks of consecutive cells of one attribute (BlowfishDB Def. 3.1).

        :func:`blowfish_nb.policy.project` calls this hook before it walks the
        edges. On a line, runs ``[f_i, l_i]`` and ``[f_j, l_j]`` (``l_i < f_j``)
        are joined iff their closest cells are, ``f_j − l_i ≤ θ``, and every
        pair of their cells is an edge iff their farthest cells are,
        ``l_j − f_i ≤ θ``. Cost O(k + |E*|) instead of O(|E|).

        Parameters
        ----------
        block_of : ndarray of int
            Block id (0 … m−1) of every cell.
        m : int
            Number of blocks.

        Returns
        -------
        (lo, hi, complete) or None
            The joined block pairs (``lo < hi``, sorted) and whether each pair's
            cells are all joined; ``None`` when the closed form does not apply
            (several attributes, or a block that is not one run of cells).

        Examples
        --------
        >>> g = threshold(Domain.grid(8), 2)
        >>> lo, hi, complete = g.projected_pairs(np.array([0, 0, 0, 1, 1, 2, 2, 2]), 3)
        >>> lo.tolist(), hi.tolist(), complete.tolist()
        ([0, 1], [1, 2], [False, False])
        """
        if len(self.domain.shape) != 1:
            return None
        k = block_of.size
        starts = np.r_[0, np.flatnonzero(np.diff(block_of)) + 1]
        if starts.size != m:  # some block is split into several runs
            return None
        lasts = np.r_[starts[1:] - 1, k - 1]
        # run r is joined to runs r+1 … reach[r]−1: those starting within θ of its last cell
        reach = np.searchsorted(starts, lasts + self.theta, side="right")
        count = reach - np.arange(m) - 1
        r = np.repeat(np.arange(m), count)
        s = r + 1 + (np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count))
        a, b = block_of[starts[r]], block_of[starts[s]]
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        complete = lasts[s] - starts[r] <= self.theta
        order = np.lexsort((hi, lo))
        return lo[order], hi[order], complete[order]


def threshold(domain: Domain, theta: int, metric: str = "l1") -> Threshold:
    """Distance-threshold policy G^θ (θ in bins) on one or more ordered attributes.

    Examples
    --------
    >>> from blowfish_nb import Domain, workload
    >>> threshold(Domain.grid(10), 3).sensitivity(workload.prefix(10))
    3.0
    """
    return Threshold(domain, theta, metric)


def line(domain: Domain) -> Threshold:
    """The line graph G^1 on one ordered attribute: only adjacent bins must stay indistinguishable."""
    if len(domain.shape) != 1:
        raise PolicyError(f"line needs one ordered attribute, got domain {domain!r}; use grid for several")
    return Threshold(domain, 1)


def grid(domain: Domain | tuple[int, ...], theta: int = 1, metric: str = "l1") -> Threshold:
    """G^θ_{k^d}: cells of a grid of ordered attributes within L1 distance θ.

    ``domain`` may be a shape such as ``(16, 16)`` (unit bins, see :meth:`Domain.grid`).

    Examples
    --------
    >>> g = grid((4, 4), theta=1)
    >>> g.edge_count(), g.distance(0, 15)
    (24, 6)
    """
    if not isinstance(domain, Domain):
        domain = Domain.grid(domain)
    return Threshold(domain, theta, metric)


def _check_all_ordered(domain: Domain) -> None:
    bad = [a.name for a in domain.attributes if not isinstance(a, OrderedAttribute)]
    if bad:
        raise PolicyError(
            f"distance-threshold policies need ordered attributes; {bad[0]!r} is categorical "
            "(use attribute, categorical or compose for it)"
        )


def _range_segments_sensitivity(ranges: Ranges, theta: int, edges: int) -> float | None:
    """Δ of a range workload under G^θ on its line, over segments of cells with equal columns (issue 28).

    A cell's column (which ranges hold it) changes only where a range starts
    or ends, so the cells between consecutive such breakpoints form segments
    whose cells have one column; ‖A e_u − A e_v‖₁ depends on the segments of u
    and v alone and is 0 inside one. Segments s < t hold a G^θ edge iff their
    closest cells are within θ (start_t − end_s ≤ θ), so Δ is the largest
    column difference over such pairs, one representative cell each. None
    (use the edge scan) when there are no fewer pairs than edges, or when
    the ranges are so many ((2q + 1)·θ ≥ |E|) that the segments would be
    about as many as the cells.
    """
    k = ranges.k
    if (2 * ranges.lo.size + 1) * theta >= edges:  # ≥ 1 pair per segment, up to 2q + 1 segments: no gain likely
        return None
    starts = np.unique(np.r_[0, ranges.lo, ranges.hi + 1])
    starts = starts[starts < k]
    ends = np.r_[starts[1:] - 1, k - 1]
    m = starts.size
    reach = np.searchsorted(starts, ends + theta, side="right")  # s is joined to segments s + 1 … reach[s] − 1
    count = reach - np.arange(m) - 1
    total = int(count.sum())
    if total == 0:
        return 0.0
    if total >= edges:
        return None
    s = np.repeat(np.arange(m), count)
    t = s + 1 + (np.arange(total) - np.repeat(np.cumsum(count) - count, count))
    return float(np.max(ranges.column_differences(ends[s], starts[t])))

