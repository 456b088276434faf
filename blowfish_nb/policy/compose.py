"""Attribute composition: per-attribute policies combined into their Cartesian product graph.

BlowfishDB Def. 3.2: cells u, v are adjacent iff Σ_j d_{G_j}(u_j, v_j) = 1,
i.e. they differ in exactly one attribute j and (u_j, v_j) is an edge of G_j.
Distances add up over the attributes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ..domain import Domain
from ..exceptions import PolicyError
from .base import Policy

__all__ = ["Composed", "compose"]


class Composed(Policy):
    """The product graph of per-attribute policies (attributes without a policy get no edges)."""

    family = "composed"
    kind = "composed"

    def __init__(self, domain: Domain, parts: Mapping[str, Policy]):
        super().__init__(domain)
        if not isinstance(parts, Mapping):
            raise PolicyError(f"compose needs a dict attribute -> policy, got {parts!r}")
        for name, part in parts.items():
            if name not in domain.names:
                raise PolicyError(f"compose got a policy for {name!r}, not an attribute of {list(domain.names)!r}")
            if not isinstance(part, Policy):
                raise PolicyError(f"compose needs Policy objects, got {type(part).__name__} for {name!r}")
            if getattr(part, "kind", None) == "constrained":
                raise PolicyError(
                    f"compose cannot take the policy of {name!r} ({part.summary()}): known counts on one attribute "
                    "are not established on the product domain's neighbours (He et al. §8 gives the histogram's Δ "
                    "for one policy with its counts); build the constraints over the whole domain instead")
            attr = domain.attributes[domain.names.index(name)]
            if part.domain.names != (name,) or part.domain.size != attr.size:
                raise PolicyError(
                    f"the policy for {name!r} must be over that attribute alone ({attr.size} cells), "
                    f"got {part.domain!r}"
                )
            if part.has_bottom:
                raise PolicyError(
                    f"the policy for {name!r} has ⊥; ⊥ belongs to whole records, not to one attribute "
                    "(compose bounded per-attribute policies)"
                )
        self.parts = {n: parts[n] for n in domain.names if n in parts}
        self.warn_if_protects_nothing()

    @property
    def params(self):
        return {"parts": {n: p.to_dict() for n, p in self.parts.items()}}

    @classmethod
    def _from_params(cls, domain, params):
        return cls(domain, {n: Policy.from_dict(d) for n, d in params["parts"].items()})

    def _display_params(self):
        return {"of": " × ".join(f"{p.family}({n})" for n, p in self.parts.items())}

    def _others(self, axis: int) -> tuple[np.ndarray, int]:
        shape = self.domain.shape
        cells = np.arange(self.domain.size, dtype=np.intp).reshape(shape)
        return np.take(cells, 0, axis=axis).reshape(-1), math.prod(shape[axis + 1 :])

    def edge_chunks(self):
        for name, part in self.parts.items():
            axis = self.domain.names.index(name)
            base, stride = self._others(axis)
            for a, b in part.edge_chunks():
                yield ((base[None, :] + stride * a[:, None]).reshape(-1),
                       (base[None, :] + stride * b[:, None]).reshape(-1))

    def edge_count(self) -> int:
        k = self.domain.size
        return int(sum(p.edge_count() * (k // p.domain.size) for p in self.parts.values()))

    def component_labels(self) -> np.ndarray:
        shape = self.domain.shape
        coords = np.unravel_index(np.arange(self.domain.size), shape)
        labels, sizes = [], []
        for axis, name in enumerate(self.domain.names):
            if name in self.parts:
                lab = self.parts[name].component_labels()
                _, lab = np.unique(lab, return_inverse=True)
                labels.append(lab[coords[axis]])
                sizes.append(int(lab.max()) + 1)
            else:
                labels.append(coords[axis])
                sizes.append(shape[axis])
        return np.ravel_multi_index(labels, sizes).astype(np.intp)

    def distance(self, u, v) -> float:
        a, b = self.domain.cell(self._vertex(u, "u")), self.domain.cell(self._vertex(v, "v"))
        total = 0
        for axis, name in enumerate(self.domain.names):
            if a[axis] == b[axis]:
                continue
            if name not in self.parts:
                return math.inf
            total += self.parts[name].distance(a[axis], b[axis])
        return total


def compose(domain_or_parts, parts: Mapping[str, Policy] | None = None) -> Composed:
    """Compose per-attribute policies into one policy on the product domain.

    ``compose({"age": line(age_domain), "sex": bounded(sex_domain)})`` builds the
    domain from the parts in order; ``compose(domain, parts)`` uses a given domain.

    Examples
    --------
    >>> from blowfish_nb import policy
    >>> a, b = Domain.grid(3, ["a"]), Domain.grid(2, ["b"])
    >>> p = compose({"a": policy.line(a), "b": policy.bounded(b)})
    >>> p.domain.shape, p.edge_count(), p.distance(0, 5)
    ((3, 2), 7, 3)
    """
    if parts is None:
        parts = domain_or_parts
        if not isinstance(parts, Mapping) or not parts:
            raise PolicyError(f"compose needs a dict attribute -> policy, got {parts!r}")
        attrs = []
        for name, part in parts.items():
            if not isinstance(part, Policy) or len(part.domain.attributes) != 1:
                raise PolicyError(f"the policy for {name!r} must be a Policy over one attribute, got {part!r}")
            attrs.append(part.domain.attributes[0])
        domain = Domain(attrs)
    else:
        domain = domain_or_parts
    return Composed(domain, parts)
