"""Count constraints: counts an adversary already knows (He et al. SIGMOD'14 §8).

A count constraint q_φ is the number of records whose value satisfies a
predicate φ (a published marginal cell, a census total, the count of a map
rectangle). Here φ is tabulated over the domain's cells: a constraint is a
boolean mask of cells. Knowing such counts changes who is a neighbour
(Def. 4.1: neighbours must both satisfy the constraints), so one move can
force others and the histogram's sensitivity grows; see
:func:`blowfish_nb.policy.constrained`.

Examples
--------
>>> from blowfish_nb import Domain
>>> d = Domain.grid((2, 2, 3), names=["A1", "A2", "A3"])
>>> q = marginal(d, ["A1", "A2"])
>>> len(q), q.names[0], int(q.masks[0].sum())
(4, 'A1=0, A2=0', 3)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .domain import CategoricalAttribute, Domain
from .exceptions import InvalidParameterError

__all__ = ["CountConstraint", "Constraints", "count", "marginal", "rectangles", "combine"]


@dataclass(frozen=True)
class CountConstraint:
    """One known count: the records whose cell is in ``cells`` (a boolean mask over the domain)."""

    name: str
    cells: np.ndarray

    def __post_init__(self):
        mask = np.array(self.cells, dtype=bool)  # a copy: the caller's array may change, this one may not
        if mask.ndim != 1 or not mask.any():
            raise InvalidParameterError(f"constraint {self.name!r} must select at least one cell (a 1-D mask)")
        mask.setflags(write=False)
        object.__setattr__(self, "cells", mask)


class Constraints(Sequence):
    """Known counts over one domain, with what the sensitivity theorems need to recognise them.

    ``kind`` records how the set was built (``"marginal"``, ``"marginals"``,
    ``"rectangles"`` or ``"counts"``), with its parameters in ``spec``.
    """

    def __init__(self, domain: Domain, items: Iterable[CountConstraint], kind: str = "counts", spec=None):
        self.domain = domain
        self.items = tuple(items)  # fixed: a constrained policy's Δ is computed once from these counts
        if not self.items:
            raise InvalidParameterError("constraints need at least one count")
        for c in self.items:
            if c.cells.size != domain.size:
                raise InvalidParameterError(
                    f"constraint {c.name!r} has {c.cells.size} cells, the domain {domain.size}")
        self.kind, self.spec = kind, spec
        self._sealed = True

    def __setattr__(self, name, value):
        if getattr(self, "_sealed", False):
            raise InvalidParameterError(f"constraints cannot be changed after they are made ({name}); build new ones")
        object.__setattr__(self, name, value)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]

    @property
    def names(self) -> list[str]:
        """The constraints' names, in order."""
        return [c.name for c in self.items]

    @property
    def masks(self) -> np.ndarray:
        """(p, k) boolean: row j is constraint j's cells."""
        return np.stack([c.cells for c in self.items])

    def disjoint(self) -> bool:
        """Whether no cell is in two constraints."""
        return bool((self.masks.sum(axis=0) <= 1).all())

    def answers(self, x: np.ndarray) -> np.ndarray:
        """The counts these constraints fix, for the histogram ``x``."""
        return self.masks.astype(float) @ np.asarray(x, dtype=float)

    def __repr__(self) -> str:
        return f"<Constraints {self.kind}: {len(self)} counts over {self.domain.size} cells>"


def count(domain: Domain, predicate, name: str | None = None) -> Constraints:
    """One known count, given as a cell mask, a list of cell indices, or a function of a cell's coordinates.

    Examples
    --------
    >>> count(Domain.grid(6), lambda c: c[0] >= 3, "upper half").masks.astype(int).tolist()
    [[0, 0, 0, 1, 1, 1]]
    """
    k = domain.size
    if callable(predicate):
        mask = np.array([bool(predicate(domain.cell(i))) for i in range(k)])
    else:
        arr = np.asarray(predicate)
        if arr.dtype == bool:
            mask = arr
        else:
            if arr.size and (arr.min() < 0 or arr.max() >= k):
                raise InvalidParameterError(f"cell indices must lie in [0, {k}), got {predicate!r}")
            mask = np.zeros(k, dtype=bool)
            mask[arr.astype(np.intp)] = True
    return Constraints(domain, [CountConstraint(name or "count", mask)])


def marginal(domain: Domain, attributes: Sequence[str]) -> Constraints:
    """A published marginal: one count per combination of the ``attributes``' values (Def. 8.4).

    The marginal must leave out at least one attribute ([C] ⊊ A): the full
    histogram itself known would leave nothing to protect.
    """
    attrs = [attributes] if isinstance(attributes, str) else list(attributes)
    unknown = [a for a in attrs if a not in domain.names]
    if unknown or not attrs or len(set(attrs)) != len(attrs):
        raise InvalidParameterError(f"attributes must be distinct columns of {list(domain.names)}, got {attributes!r}")
    if len(attrs) == len(domain.names):
        raise InvalidParameterError(
            "a marginal over every attribute is the histogram itself; keep at least one attribute out ([C] ⊊ A)")
    axes = [domain.names.index(a) for a in attrs]
    coords = np.unravel_index(np.arange(domain.size), domain.shape)
    shape = [domain.shape[a] for a in axes]
    key = np.ravel_multi_index([coords[a] for a in axes], shape)
    items = []
    for j in range(int(np.prod(shape))):
        values = np.unravel_index(j, shape)
        label = ", ".join(f"{a}={_value(domain, ax, int(v))}" for a, ax, v in zip(attrs, axes, values))
        items.append(CountConstraint(label, key == j))
    return Constraints(domain, items, kind="marginal", spec={"attributes": attrs, "size": int(np.prod(shape))})


def rectangles(domain: Domain, boxes: Sequence[Sequence[tuple[int, int]]]) -> Constraints:
    """Known range counts: each box is one inclusive (lo, hi) bin range per attribute (He et al. §8.2.3)."""
    d = len(domain.shape)
    coords = np.unravel_index(np.arange(domain.size), domain.shape)
    items, norm = [], []
    for i, box in enumerate(boxes):
        box = [tuple(int(v) for v in side) for side in box]
        if len(box) != d or any(len(s) != 2 for s in box):
            raise InvalidParameterError(f"box {i} must give one (lo, hi) per attribute ({d}), got {boxes[i]!r}")
        for (lo, hi), n in zip(box, domain.shape):
            if not 0 <= lo <= hi < n:
                raise InvalidParameterError(f"box {i} range ({lo}, {hi}) must satisfy 0 <= lo <= hi < {n}")
        mask = np.ones(domain.size, dtype=bool)
        for c, (lo, hi) in zip(coords, box):
            mask &= (c >= lo) & (c <= hi)
        items.append(CountConstraint(f"box {i} {box}", mask))
        norm.append(box)
    return Constraints(domain, items, kind="rectangles", spec={"boxes": norm})


def combine(*parts: Constraints) -> Constraints:
    """Several constraint sets known together (disjoint marginals keep their description)."""
    if not parts:
        raise InvalidParameterError("combine needs at least one constraint set")
    domain = parts[0].domain
    if any(p.domain != domain for p in parts):
        raise InvalidParameterError("constraint sets must be over one domain")
    items = [c for p in parts for c in p.items]
    if all(p.kind == "marginal" for p in parts):
        return Constraints(domain, items, kind="marginals",
                           spec={"marginals": [p.spec for p in parts]})
    if all(p.kind == "rectangles" for p in parts):
        return Constraints(domain, items, kind="rectangles", spec={"boxes": [b for p in parts for b in p.spec["boxes"]]})
    return Constraints(domain, items)


def _value(domain: Domain, axis: int, v: int) -> str:
    attr = domain.attributes[axis]
    if isinstance(attr, CategoricalAttribute):
        return str(attr.labels[v])
    return str(v)
