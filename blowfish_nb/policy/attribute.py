"""Attribute policies on multi-attribute domains (He et al. 2014, §3.1; Haney et al. 2015, App. E; BlowfishDB).

* ``attribute``: two records are secret pairs when they differ in exactly one
  attribute (any values of it);
* ``sensitive_attributes``: the same, but only for the listed attributes —
  records differing in another attribute are not protected from each other
  (a disconnected policy);
* ``categorical``: a clique on listed categories of one attribute, other
  attributes fixed (BlowfishDB's categorical policy).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..domain import CategoricalAttribute, Domain
from ..exceptions import PolicyError
from .base import Policy
from .sensitivity import clique_sensitivity

__all__ = ["Attribute", "Categorical", "attribute", "sensitive_attributes", "categorical"]


class Attribute(Policy):
    """Edges between cells that differ in exactly one of ``attributes`` (all by default)."""

    kind = "attribute"

    def __init__(self, domain: Domain, attributes: Sequence[str] | None = None):
        super().__init__(domain)
        names = list(domain.names)
        chosen = names if attributes is None else list(attributes)
        unknown = [a for a in chosen if a not in names]
        if unknown or not chosen or len(set(chosen)) != len(chosen):
            raise PolicyError(f"attributes must be distinct names among {names!r}, got {attributes!r}")
        self.axes = sorted(names.index(a) for a in chosen)
        self.all = attributes is None or len(chosen) == len(names)
        self.warn_if_protects_nothing()

    @property
    def family(self) -> str:  # type: ignore[override]
        return "attribute" if self.all else "sensitive_attributes"

    @property
    def params(self):
        return {"attributes": None if self.all else [self.domain.names[i] for i in self.axes]}

    def _display_params(self):
        return {} if self.all else {"attributes": ",".join(self.domain.names[i] for i in self.axes)}

    def _fibres(self, axis: int) -> tuple[np.ndarray, int, int]:
        """First cell of every line along ``axis``, the axis stride and its length."""
        shape = self.domain.shape
        stride = math.prod(shape[axis + 1 :])
        starts = np.arange(self.domain.size, dtype=np.intp).reshape(shape)
        starts = np.take(starts, 0, axis=axis).reshape(-1)
        return starts, stride, shape[axis]

    def edge_chunks(self):
        for axis in self.axes:
            starts, stride, n = self._fibres(axis)
            for d in range(1, n):
                u = (starts[:, None] + stride * np.arange(n - d)[None, :]).reshape(-1)
                yield u, u + d * stride

    def edge_count(self) -> int:
        shape, k = self.domain.shape, self.domain.size
        return int(sum(k // shape[a] * shape[a] * (shape[a] - 1) // 2 for a in self.axes))

    def component_labels(self) -> np.ndarray:
        shape = self.domain.shape
        free = [i for i in range(len(shape)) if i not in self.axes]
        if not free:
            return np.zeros(self.domain.size, dtype=np.intp)
        coords = np.unravel_index(np.arange(self.domain.size), shape)
        return np.ravel_multi_index([coords[i] for i in free], [shape[i] for i in free]).astype(np.intp)

    def distance(self, u, v) -> float:
        a, b = self.domain.cell(self._vertex(u, "u")), self.domain.cell(self._vertex(v, "v"))
        differ = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        return float("inf") if any(i not in self.axes for i in differ) else len(differ)

    def sensitivity(self, strategy) -> float:
        lows, highs = [], []
        for axis in self.axes:
            starts, stride, n = self._fibres(axis)
            if n > 1:
                lows.append(starts)
                highs.append(starts + (n - 1) * stride)
        if not lows:
            return 0.0
        return clique_sensitivity(strategy, np.concatenate(lows), np.concatenate(highs),
                                  self.edge_chunks(), self.domain.size)


class Categorical(Policy):
    """A clique on the listed categories of one attribute (other attributes unchanged)."""

    family = "categorical"
    kind = "categorical"

    def __init__(self, domain: Domain, attribute: str, sensitive: Sequence[object]):
        super().__init__(domain)
        if attribute not in domain.names:
            raise PolicyError(f"attribute must be one of {list(domain.names)!r}, got {attribute!r}")
        self.axis = domain.names.index(attribute)
        attr = domain.attributes[self.axis]
        values = list(attr.categories) if isinstance(attr, CategoricalAttribute) else list(range(attr.size))
        sensitive = list(sensitive)
        unknown = [s for s in sensitive if s not in values]
        if unknown or len(set(map(str, sensitive))) != len(sensitive):
            raise PolicyError(
                f"sensitive must list distinct values of {attribute!r} among {values!r}, got {sensitive!r}"
            )
        self.attribute = attribute
        self.sensitive = sensitive
        self.codes = sorted(values.index(s) for s in sensitive)
        self.warn_if_protects_nothing()

    @property
    def params(self):
        return {"attribute": self.attribute, "sensitive": self.sensitive}

    def _display_params(self):
        return {"attribute": self.attribute, "sensitive": len(self.sensitive)}

    def edge_chunks(self):
        shape = self.domain.shape
        stride = math.prod(shape[self.axis + 1 :])
        cells = np.arange(self.domain.size, dtype=np.intp).reshape(shape)
        for i, a in enumerate(self.codes):
            base = np.take(cells, a, axis=self.axis).reshape(-1)
            for b in self.codes[i + 1 :]:
                yield base, base + (b - a) * stride

    def edge_count(self) -> int:
        m = len(self.codes)
        return self.domain.size // self.domain.shape[self.axis] * m * (m - 1) // 2

    def distance(self, u, v) -> float:
        a, b = self.domain.cell(self._vertex(u, "u")), self.domain.cell(self._vertex(v, "v"))
        if a == b:
            return 0
        others_equal = all(x == y for i, (x, y) in enumerate(zip(a, b)) if i != self.axis)
        both = a[self.axis] in self.codes and b[self.axis] in self.codes
        return 1 if others_equal and both else float("inf")


def attribute(domain: Domain) -> Attribute:
    """Secret pairs: records that differ in exactly one attribute.

    Examples
    --------
    >>> p = attribute(Domain.grid((2, 3)))
    >>> p.edge_count(), p.distance(0, 5)
    (9, 2)
    """
    return Attribute(domain)


def sensitive_attributes(domain: Domain, attributes: Sequence[str]) -> Attribute:
    """Secret pairs only among records that differ in one of the listed attributes.

    Examples
    --------
    >>> p = sensitive_attributes(Domain.grid((2, 3)), ["x1"])
    >>> len(p.components()), p.distance(0, 3)
    (2, inf)
    """
    if isinstance(attributes, str):
        attributes = [attributes]
    return Attribute(domain, list(attributes))


def categorical(domain: Domain, attribute: str, sensitive: Sequence[object]) -> Categorical:
    """A clique on the ``sensitive`` values of ``attribute``; other values are not secret."""
    return Categorical(domain, attribute, sensitive)
