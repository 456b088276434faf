"""Query templates over a Domain: the workload, the labels of its answers, and the coarsest partition it needs.

Templates (BlowfishDB's analyst view, extended):

* ``"histogram"`` — one count per cell (1-D or the cells of a multi-attribute domain);
* ``"cumulative"`` — counts of values ≤ each bin (1-D), or of the lower-left
  box up to each cell on a grid;
* ``"range"`` — counts inside given ranges, in data units: ``(lo, hi)`` per
  range on one attribute, one ``(lo, hi)`` per attribute on several. Ranges
  are **half-open**, ``[lo, hi)``, as in pandas and numpy, so adjacent ranges
  ``(0, 40_000), (40_000, 250_000)`` share no bin. A range covers every bin
  that meets ``[lo, hi)`` (an end inside a bin rounds outward to whole bins);
  ``hi`` equal to the domain's upper bound takes the last bin, which holds its
  right edge. Each answer is labelled with the interval its bins span (e.g.
  ``(20, 35)`` on 5-year bins from 17 answers ``[17, 37)``);
  bins are labelled in data units as the widgets print them (``"5,000–10,000"``, a
  category by its name; a MultiIndex on several attributes);
* ``"marginal"`` — counts over the attributes in ``keep``, the others summed out;
* ``"kmeans"`` — ``k`` cluster centres over ordered attributes, found by SuLQ
  (:mod:`blowfish_nb.mechanisms.sulq`) in ``iterations`` noisy steps; the
  answers are the centres' coordinates, labelled (cluster, column).

:data:`TEMPLATES` is the registry: each template with the request parameters
it takes. The request object (:class:`blowfish_nb.request.Request`), the
service's HTTP schema and its ``describe`` read their query names from it.

**Dynamic projection** (BlowfishDB Def. 3.1, Thm 3): a template is answered
on the coarsest partition of the cells that supports it — range queries on
the blocks cut at their endpoints, marginals on the kept attributes — so the
mechanism runs on x* = T x with the projected policy G*. For a strategy
A = A*T the sensitivity and the expected error are those of the full-domain
computation, and the guarantee is still (ε, G).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ._validation import is_number
from .domain import CategoricalAttribute, Domain
from .exceptions import DomainError, InvalidParameterError
from .mechanisms.sulq import ITERATIONS
from .operators import Identity, Kron, Prefix, Workload
from .ranges import Boxes, Ranges, cut_blocks
from .units import decimals, format_edge, format_edges
from .workload import marginal

__all__ = ["Query", "build_query", "bin_labels", "covered_bins", "QUERIES", "TEMPLATES", "PARAMETERS"]

#: the query templates, each with the request parameters it takes (besides columns, the budget and the mechanism)
TEMPLATES: dict[str, tuple[str, ...]] = {
    "histogram": (),
    "cumulative": (),
    "range": ("ranges",),
    "marginal": ("keep",),
    "kmeans": ("k", "iterations"),
}
#: the template names
QUERIES = tuple(TEMPLATES)
#: every template parameter, once
PARAMETERS = tuple(dict.fromkeys(p for ps in TEMPLATES.values() for p in ps))


@dataclass(frozen=True)
class Query:
    """A template made concrete over a domain.

    Attributes
    ----------
    name : str
        Template name (or ``"workload"`` for a user's Workload).
    workload : Workload
        The queries over the full domain's cells.
    labels : pandas.Index
        One label per answer.
    blocks : int array or None
        Block id per cell of the coarsest supporting partition (None: no coarser one).
    params : dict
        Template parameters the mechanism needs too (k-means: ``k`` and ``iterations``).
    """

    name: str
    workload: Workload
    labels: pd.Index
    blocks: np.ndarray | None = None
    params: Mapping = field(default_factory=dict)

    def projected(self) -> Workload:
        """The workload over the blocks (W* = W T⁺), as a structured operator."""
        return _project_workload(self)


def build_query(domain: Domain, query, **params) -> Query:
    """The Query for a template name (or a ready Workload) over ``domain``.

    Examples
    --------
    >>> d = Domain.from_column(pd.Series([0.0], name="age"), bins=10, bounds=(0, 100))
    >>> q = build_query(d, "range", ranges=[(20, 40), (0, 100)])
    >>> q.workload.lo.tolist(), q.workload.hi.tolist(), q.blocks.tolist()
    ([2, 0], [3, 9], [0, 0, 1, 1, 2, 2, 2, 2, 2, 2])
    >>> list(q.labels)
    ['[20, 40)', '[0, 100]']

    ``params`` are the template's parameters (:data:`TEMPLATES`); one given to a template that does not take it is
    refused, naming it.
    """
    unknown = [p for p in params if p not in PARAMETERS]
    if unknown:
        raise InvalidParameterError(f"unknown query parameter {unknown[0]!r}; parameters are {list(PARAMETERS)}")
    if isinstance(query, Workload):
        if query.shape[1] != domain.size:
            raise InvalidParameterError(f"query has {query.shape[1]} columns but the domain has {domain.size} cells")
        return Query("workload", query, pd.RangeIndex(query.shape[0], name="query"))
    if not isinstance(query, str) or query not in QUERIES:
        raise InvalidParameterError(f"query must be one of {QUERIES} or a Workload, got {query!r}")
    for p, value in params.items():
        if value is not None and p not in TEMPLATES[query]:
            owner = next(t for t, ps in TEMPLATES.items() if p in ps)
            raise InvalidParameterError(f"{p}= is for query={owner!r}, got query={query!r}")
    shape = domain.shape
    if query == "histogram":
        return Query("histogram", Identity(domain.size), bin_labels(domain))
    if query == "cumulative":
        _ordered_only(domain, "cumulative")
        W = Prefix(shape[0]) if len(shape) == 1 else Kron([Prefix(s) for s in shape])
        return Query("cumulative", W, _upper_labels(domain))
    if query == "range":
        return _ranges(domain, params.get("ranges"))
    if query == "kmeans":
        return _kmeans(domain, params.get("k"), params.get("iterations"))
    return _marginal(domain, params.get("keep"))


def bin_labels(domain: Domain) -> pd.Index:
    """One label per cell in data units, as the widgets print bins: ``"5,000–10,000"`` (a category: its name).

    A one-attribute domain gives an Index named after the column, several a
    MultiIndex of them. The half-open intervals themselves stay in
    :attr:`Domain.labels <blowfish_nb.Domain.labels>`. An attribute's labels
    are built once and reused (O(k) string formatting, ≈ 0.5 µs a bin, would
    otherwise be paid by every release).

    Examples
    --------
    >>> d = Domain.from_column(pd.Series([0.0], name="salary"), bins=3, bounds=(0, 15_000))
    >>> bin_labels(d).tolist(), bin_labels(d).name
    (['0–5,000', '5,000–10,000', '10,000–15,000'], 'salary')
    """
    indexes = [_attribute_labels(a) for a in domain.attributes]
    if len(indexes) == 1:
        return indexes[0]
    return pd.MultiIndex.from_product(indexes, names=domain.names)


#: labels of recently used ordered attributes, by (name, edges): a repeated release formats nothing
_LABELS: dict[tuple[str, bytes], pd.Index] = {}
_LABELS_KEPT = 32


def _attribute_labels(attr) -> pd.Index:
    if isinstance(attr, CategoricalAttribute):
        return attr.labels
    key = (attr.name, attr.edges.tobytes())
    cached = _LABELS.get(key)
    if cached is None:
        texts = format_edges(attr, attr.edges)
        cached = pd.Index(np.array([f"{a}–{b}" for a, b in zip(texts[:-1], texts[1:])], dtype=object),
                          dtype=object, name=attr.name)
        if len(_LABELS) >= _LABELS_KEPT:
            _LABELS.pop(next(iter(_LABELS)), None)
        _LABELS[key] = cached
    return cached.rename(attr.name)  # a fresh Index object on the shared values: renaming a release's index is local


def _ordered_only(domain: Domain, what: str) -> None:
    for a in domain.attributes:
        if isinstance(a, CategoricalAttribute):
            raise InvalidParameterError(f"query={what!r} needs ordered attributes; {a.name!r} is categorical")


def _upper_labels(domain: Domain) -> pd.Index:
    """Cumulative answer i counts the values below bin i's right edge (the last one: up to and including it)."""
    if len(domain.attributes) == 1:
        attr = domain.attributes[0]
        texts = format_edges(attr, attr.edges[1:])  # one pass: a repeated quote rebuilds these labels
        ends = [f"< {t}" for t in texts[:-1]] + [f"≤ {texts[-1]}"]
        return pd.Index(ends, name=f"{attr.name} up to")
    return bin_labels(domain)


def _is_seq(value) -> bool:
    return isinstance(value, (Sequence, np.ndarray)) and not isinstance(value, (str, bytes))


def _ranges(domain: Domain, ranges) -> Query:
    if not _is_seq(ranges) or len(ranges) == 0:
        raise InvalidParameterError(f"query='range' needs ranges=[(lo, hi), ...] in data units, got {ranges!r}")
    _ordered_only(domain, "range")
    d = len(domain.attributes)
    lows, highs, labels = [], [], []
    digits = [decimals(a) for a in domain.attributes]  # once per attribute, not per label
    for j, r in enumerate(ranges):
        per_axis = [r] if d == 1 else list(r) if _is_seq(r) and len(r) == d else None
        if per_axis is None:
            raise InvalidParameterError(
                f"ranges[{j}] must give one (lo, hi) per attribute {domain.names}, got {r!r}")
        lo_idx, hi_idx, covered = [], [], []
        for attr, bounds, dig in zip(domain.attributes, per_axis, digits):
            if not _is_seq(bounds) or len(bounds) != 2:
                raise InvalidParameterError(f"ranges[{j}] must be (lo, hi) pairs, got {r!r}")
            lo, hi = bounds
            if not all(is_number(v) and np.isfinite(v) for v in (lo, hi)):
                raise InvalidParameterError(
                    f"ranges[{j}] bounds must be finite numbers (not bools or text), got {(lo, hi)!r}")
            if lo >= hi:
                raise InvalidParameterError(
                    f"ranges[{j}] = {(lo, hi)!r} on {attr.name!r} is empty: ranges are half-open [lo, hi), "
                    "so lo must be below hi")
            e = attr.edges
            if lo < e[0] or hi > e[-1]:
                clip_lo, clip_hi = max(lo, e[0]), min(hi, e[-1])
                hint = (f"; clipped to the domain it is ({clip_lo:.15g}, {clip_hi:.15g}): ask for that range (no "
                        "value lies outside the bounds, so it counts the same rows)" if clip_lo < clip_hi else
                        "; it does not meet the domain at all, so it would count no row")
                raise DomainError(
                    f"ranges[{j}] = {(lo, hi)!r} on {attr.name!r} leaves the domain [{e[0]:.15g}, {e[-1]:.15g}]"
                    + hint)
            a, b = covered_bins(e, lo, hi)
            lo_idx.append(a)
            hi_idx.append(b)
            close = "]" if b == attr.size - 1 else ")"
            covered.append(f"[{format_edge(attr, e[a], dig)}, {format_edge(attr, e[b + 1], dig)}{close}")
        lows.append(lo_idx)
        highs.append(hi_idx)
        labels.append(" × ".join(covered))
    lo, hi = np.array(lows), np.array(highs)
    index = pd.Index(labels, name="range")
    if d == 1:
        W = Ranges(domain.size, lo[:, 0], hi[:, 0])
        return Query("range", W, index, cut_blocks(domain.size, lo[:, 0], hi[:, 0]))
    W = Boxes(domain.shape, lo, hi)
    per_axis_blocks = [cut_blocks(s, lo[:, a], hi[:, a]) for a, s in enumerate(domain.shape)]
    grids = np.meshgrid(*per_axis_blocks, indexing="ij")
    sizes = [int(b.max()) + 1 for b in per_axis_blocks]
    blocks = np.ravel_multi_index([g.reshape(-1) for g in grids], sizes)
    return Query("range", W, index, blocks)


def covered_bins(edges, lo: float, hi: float) -> tuple[int, int]:
    """First and last bin (inclusive) of those that meet the half-open range ``[lo, hi)``.

    Bin i is ``[edges[i], edges[i+1])`` (the last one also holds its right
    edge). The caller checks ``edges[0] <= lo < hi <= edges[-1]``.

    Examples
    --------
    >>> covered_bins([0, 5, 10, 15], 0, 5), covered_bins([0, 5, 10, 15], 5, 15), covered_bins([0, 5, 10, 15], 4, 6)
    ((0, 0), (1, 2), (0, 1))
    """
    a = int(np.searchsorted(edges, lo, side="right")) - 1  # the bin holding lo
    b = int(np.searchsorted(edges, hi, side="left")) - 1   # the last bin starting below hi
    return a, b


def _marginal(domain: Domain, keep) -> Query:
    if keep is None:
        raise InvalidParameterError("query='marginal' needs keep=<attribute or list of attributes>")
    given = keep
    keep = [keep] if isinstance(keep, str) else list(keep) if isinstance(keep, (list, tuple)) else None
    if not keep:
        raise InvalidParameterError(f"keep must name one attribute or a list of them among {list(domain.names)}, "
                                    f"got {given!r}")
    unknown = [k for k in keep if not isinstance(k, str) or k not in domain.names]
    if unknown or len(set(keep)) != len(keep):
        raise InvalidParameterError(f"keep names an unknown or repeated attribute {unknown[0] if unknown else given!r}; "
                                    f"attributes: {list(domain.names)}")
    order = [n for n in domain.names if n in keep]
    W = marginal(domain, order)
    kept = Domain([a for a in domain.attributes if a.name in keep])
    coords = np.unravel_index(np.arange(domain.size), domain.shape)
    axes = [domain.names.index(n) for n in order]
    blocks = np.ravel_multi_index([coords[a] for a in axes], kept.shape).astype(np.intp)
    return Query("marginal", W, bin_labels(kept), blocks)


def _kmeans(domain: Domain, k, iterations) -> Query:
    """k centres: the mechanism reads the whole histogram; one answer per (cluster, column)."""
    for name, value in (("k", k), ("iterations", ITERATIONS if iterations is None else iterations)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InvalidParameterError(f"query='kmeans' needs {name}=<a positive whole number>, got {value!r}")
    _ordered_only(domain, "kmeans")
    labels = pd.MultiIndex.from_product([range(int(k)), list(domain.names)], names=["cluster", "column"])
    steps = ITERATIONS if iterations is None else int(iterations)
    return Query("kmeans", Identity(domain.size), labels, params={"k": int(k), "iterations": steps})


def _project_workload(q: Query) -> Workload:
    """W* over the blocks. Ranges stay ranges (their ends are block ends), boxes stay boxes, marginals become the identity."""
    W = q.workload
    if isinstance(W, Ranges):
        return Ranges(int(q.blocks.max()) + 1, q.blocks[W.lo], q.blocks[W.hi])
    if isinstance(W, Boxes):
        sizes, lo, hi = [], [], []
        for a, s in enumerate(W.cell_shape):
            b = cut_blocks(s, W.lo[:, a], W.hi[:, a])
            sizes.append(int(b.max()) + 1)
            lo.append(b[W.lo[:, a]])
            hi.append(b[W.hi[:, a]])
        return Boxes(tuple(sizes), np.column_stack(lo), np.column_stack(hi))
    if q.name == "marginal":
        return Identity(int(q.blocks.max()) + 1)
    raise InvalidParameterError(f"no projection for {type(W).__name__}")
