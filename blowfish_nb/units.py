"""Bins in data units: the words and numbers views show for cells, ranges and bin edges.

A domain's cells are bins of public edges; users think in the column's own
units ("ages 24–27", "salary 70,000–135,000"), not in bin numbers. These
helpers round an edge to the fewest decimals that keep every edge of its
attribute within a twentieth of the narrowest bin, and print thousands with
separators. Everything here is public (the edges are), so it may appear in
any view or message.
"""

from __future__ import annotations

import numpy as np

from .domain import CategoricalAttribute, Domain, OrderedAttribute

__all__ = ["decimals", "format_edge", "format_edges", "bin_label", "range_label", "cell_label", "span_label"]

#: never print more decimals than this, however narrow the bins
MAX_DECIMALS = 6


def decimals(attr: OrderedAttribute) -> int:
    """The fewest decimals that print every edge within 1/20 of the narrowest bin.

    Examples
    --------
    >>> from blowfish_nb.domain import OrderedAttribute
    >>> decimals(OrderedAttribute("salary", [0, 5000, 10000])), decimals(OrderedAttribute("age", [17, 19.5, 22]))
    (0, 1)
    """
    edges = np.asarray(attr.edges, dtype=float)
    tolerance = float(np.min(np.diff(edges))) / 20
    for d in range(MAX_DECIMALS + 1):
        if float(np.max(np.abs(np.round(edges, d) - edges))) <= tolerance:
            return d
    return MAX_DECIMALS


def format_edge(attr: OrderedAttribute, value: float, digits: int | None = None) -> str:
    """One edge (or any value on the attribute's scale) rounded as :func:`decimals` says, with separators.

    ``digits`` is ``decimals(attr)`` when the caller formats many values of one attribute (it costs O(k) to find).

    Examples
    --------
    >>> from blowfish_nb.domain import OrderedAttribute
    >>> format_edge(OrderedAttribute("salary", [0, 5000, 250000]), 70000.0)
    '70,000'
    """
    d = decimals(attr) if digits is None else digits
    text = f"{float(value):,.{d}f}"
    return text[1:] if text.startswith("-") and float(text.replace(",", "")) == 0 else text  # no "-0"


def format_edges(attr: OrderedAttribute, values, digits: int | None = None) -> list[str]:
    """Many values of one attribute formatted as :func:`format_edge` does, in one pass (labels of k bins).

    Examples
    --------
    >>> from blowfish_nb.domain import OrderedAttribute
    >>> format_edges(OrderedAttribute("t", [-1, 0, 0.5]), [-0.01, 0.5, 1234.5])
    ['0.0', '0.5', '1,234.5']
    """
    spec = f",.{decimals(attr) if digits is None else digits}f"
    texts = [format(v, spec) for v in np.asarray(values, dtype=float).tolist()]
    return [t[1:] if t[0] == "-" and not t[1:].strip("0.,") else t for t in texts]  # no "-0"


def bin_label(attr: OrderedAttribute | CategoricalAttribute, i: int) -> str:
    """Bin ``i`` as its value range ``lo–hi`` (a category's own name for categorical attributes).

    Examples
    --------
    >>> from blowfish_nb.domain import OrderedAttribute
    >>> bin_label(OrderedAttribute("salary", [0, 5000, 10000]), 1)
    '5,000–10,000'
    """
    return range_label(attr, i, i)


def range_label(attr: OrderedAttribute | CategoricalAttribute, lo: int, hi: int) -> str:
    """Bins ``lo`` … ``hi`` (inclusive bin numbers) as one value range ``left edge–right edge``.

    The range is half-open like the bins (``70,000–135,000`` holds 70,000 and
    values below 135,000; the last bin also holds its right edge).

    Examples
    --------
    >>> from blowfish_nb.domain import OrderedAttribute
    >>> range_label(OrderedAttribute("salary", np.arange(0, 250001, 5000)), 14, 26)
    '70,000–135,000'
    """
    if isinstance(attr, CategoricalAttribute):
        names = [str(c) for c in attr.categories[lo : hi + 1]]
        return names[0] if len(names) == 1 else f"{names[0]} … {names[-1]}"
    return f"{format_edge(attr, attr.edges[lo])}–{format_edge(attr, attr.edges[hi + 1])}"


def span_label(attr: OrderedAttribute, bins: int) -> str:
    """How much of the attribute ``bins`` consecutive bins span, in data units (θ's meaning on equal bins).

    Examples
    --------
    >>> from blowfish_nb.domain import OrderedAttribute
    >>> span_label(OrderedAttribute("salary", np.arange(0, 250001, 5000)), 3)
    '15,000'
    >>> span_label(OrderedAttribute("x", [0, 1, 5]), 1) is None  # unequal bins: no single width
    True
    """
    widths = np.diff(np.asarray(attr.edges, dtype=float))
    if not np.allclose(widths, widths[0], rtol=1e-9, atol=0):
        return None
    return format_edge(attr, bins * float(widths[0]))


def cell_label(domain: Domain, index: int) -> str:
    """One cell of a (possibly multi-attribute) domain in data units: ``age 24–27 · salary 70,000–75,000``.

    One-attribute domains omit the attribute name.

    Examples
    --------
    >>> from blowfish_nb import Domain
    >>> d = Domain.grid((2, 3), names=["a", "b"])
    >>> cell_label(d, 4)
    'a 1–2 · b 1–2'
    """
    cell = domain.cell(int(index))
    if len(domain.attributes) == 1:
        return bin_label(domain.attributes[0], cell[0])
    return " · ".join(f"{a.name} {bin_label(a, c)}" for a, c in zip(domain.attributes, cell))
