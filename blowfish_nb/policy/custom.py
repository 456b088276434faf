"""Policies given edge by edge, and networkx graphs as policies."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

from .._arrays import unique_sorted
from ..domain import Domain
from ..exceptions import PolicyError
from .base import BOTTOM, Policy, derived, edge_keys

__all__ = ["Custom", "custom", "from_networkx"]

_BOTTOM_NAMES = ("⊥", "bottom", None)


class Custom(Policy):
    """An explicit edge list over the cells (``BOTTOM`` / ``"⊥"`` for the null vertex)."""

    family = "custom"
    kind = "custom"

    def __init__(self, domain: Domain, edges: Iterable, bottom: bool | None = None):
        super().__init__(domain)
        k = domain.size
        if bottom is not None and not isinstance(bottom, (bool, np.bool_)):
            raise PolicyError(f"bottom must be True, False or None, got {bottom!r}")
        if isinstance(edges, np.ndarray) and edges.ndim == 2 and edges.shape[1] == 2 and edges.dtype.kind in "iu":
            self._from_array(edges, k, bottom)
            self.warn_if_protects_nothing()
            return
        if isinstance(edges, (str, bytes)) or not isinstance(edges, Iterable):
            raise PolicyError(f"edges must be a list of pairs (u, v), got {edges!r}")
        pairs = []
        for edge in edges:
            try:
                a, b = edge
            except (TypeError, ValueError):
                raise PolicyError(f"edges must be pairs (u, v), got {edge!r}") from None
            a, b = _node(a, k, edge), _node(b, k, edge)
            if a == b:
                raise PolicyError(f"self-loops are not edges: {edge!r}")
            if a == BOTTOM:
                a, b = b, a
            pairs.append((a, b) if b == BOTTOM or a < b else (b, a))
        unique = sorted(set(pairs))
        self._edges = np.array(unique, dtype=np.intp).reshape(-1, 2)
        has_bottom_edge = bool((self._edges[:, 1] == BOTTOM).any())
        self._bottom = has_bottom_edge if bottom is None else bool(bottom)
        if has_bottom_edge and not self._bottom:
            raise PolicyError("edges to ⊥ given but bottom=False")
        self.warn_if_protects_nothing()

    def _from_array(self, e: np.ndarray, k: int, bottom) -> None:
        """The same checks and normal form as the generic path, vectorised (BOTTOM = −1 names ⊥)."""
        e = e.astype(np.intp)
        bad = (e < BOTTOM) | (e >= k)
        if bad.any():
            row = e[np.flatnonzero(bad.any(axis=1))[0]]
            raise PolicyError(f"edge {tuple(row.tolist())!r} names a node outside the domain's cells [0, {k}) or ⊥")
        if (e[:, 0] == e[:, 1]).any():
            row = e[np.flatnonzero(e[:, 0] == e[:, 1])[0]]
            raise PolicyError(f"self-loops are not edges: {tuple(row.tolist())!r}")
        to_bottom = (e == BOTTOM).any(axis=1)
        key = unique_sorted(edge_keys(e, k))  # lexicographic order of the normal forms, as sorted() gives
        self._edges = np.column_stack([key // (k + 1), key % (k + 1) - 1]).astype(np.intp).reshape(-1, 2)
        has_bottom_edge = bool(to_bottom.any())
        self._bottom = has_bottom_edge if bottom is None else bool(bottom)
        if has_bottom_edge and not self._bottom:
            raise PolicyError("edges to ⊥ given but bottom=False")

    @classmethod
    def _normal(cls, domain: Domain, edges: np.ndarray) -> "Custom":
        """A graph between cells (no ⊥) from ``edges`` already in normal form: rows (u, v) with u < v, unique, in
        lexicographic order, dtype ``intp`` — stored as given, without the checks. For constructions that produce
        that form by design (H^θ's edges, :mod:`.htheta_tree`, tested against the checked path); the checked
        path costs ~15 passes over the array (0.1–0.15 s for 10⁶ edges)."""
        self = cls.__new__(cls)
        Policy.__init__(self, domain)
        self._edges, self._bottom = edges, False
        self.warn_if_protects_nothing()
        return self

    @property
    def has_bottom(self) -> bool:
        return self._bottom

    @property
    def params(self):
        return {"edges": self._edges.tolist(), "bottom": self._bottom}

    def _display_params(self):
        return {"edges": len(self._edges)}

    def summary(self) -> str:
        """One line for humans, e.g. ``"custom graph of 145 edges on salary (50 cells)"``.

        The edge list is the parameter, so the line counts it in words rather than printing ``edges=145``; a
        graph with ⊥ (unbounded neighbours) says so.
        """
        n = len(self._edges)
        bottom = " and ⊥" if self._bottom else ""
        return (f"custom graph of {n:,} edge{'s' if n != 1 else ''}{bottom} on {', '.join(self.domain.names)} "
                f"({self.domain.size} cells)")

    def __eq__(self, other: object) -> bool:
        # the edge arrays are in normal form: compare them directly, not as JSON lists (the canvas compares
        # policies on every edit)
        if isinstance(other, Custom):
            return (self._bottom == other._bottom and self.domain == other.domain
                    and np.array_equal(self._edges, other._edges))
        return super().__eq__(other)

    def __hash__(self) -> int:
        return hash((self.domain.size, self._bottom, hashlib.sha1(np.ascontiguousarray(self._edges).tobytes()).digest()))

    def edges(self) -> np.ndarray:
        """The stored normal-form array, copied once (the generic path stacks, joins and converts: three copies,
        ~20 ms for a 10⁶-edge spanning tree on each call)."""
        self._check_listable()
        return self._edges.copy()

    def edge_chunks(self):
        if len(self._edges):
            yield self._edges[:, 0], self._edges[:, 1]

    def edge_count(self) -> int:
        return len(self._edges)


def custom(domain: Domain, edges: Iterable, bottom: bool | None = None) -> Custom:
    """A policy from an explicit list of edges ``(u, v)`` between cell indices (``"⊥"`` for ⊥).

    Cells that appear in no edge are privacy-agnostic: nothing protects them.
    A graph with no edge at all protects nothing and warns with
    :class:`~blowfish_nb.exceptions.PrivacyLeakWarning`.

    Examples
    --------
    >>> p = custom(Domain.grid(4), [(0, 1), (1, 2), (3, "⊥")])
    >>> p.edge_count(), p.has_bottom, len(p.components())
    (3, True, 2)
    """
    return Custom(domain, edges, bottom)


def from_networkx(graph, domain: Domain | None = None) -> Policy:
    """A policy from a networkx graph whose nodes are cell indices 0..k−1 (and ``"⊥"``).

    A graph made by :meth:`Policy.to_networkx` carries its policy description
    and comes back as the same family (checked edge for edge); any other graph
    becomes a :class:`Custom` policy over ``domain`` (default: ``Domain.grid(k)``).

    Examples
    --------
    >>> from blowfish_nb import policy
    >>> p = policy.threshold(Domain.grid(8), 2)
    >>> from_networkx(p.to_networkx()) == p
    True
    """
    stored = graph.graph.get("policy")
    if stored is not None:
        pol = Policy.from_dict(stored)
        if domain is None or domain == pol.domain:
            with derived():  # only compared with pol, which warned already if it protects nothing
                rebuilt = Custom(pol.domain, graph.edges(), bottom="⊥" in graph)
            if rebuilt.same_graph(pol):
                return pol
    cells = [n for n in graph.nodes if n not in _BOTTOM_NAMES]
    if domain is None:
        domain = Domain.grid(len(cells))
    return Custom(domain, graph.edges(), bottom="⊥" in graph)


def _node(x, k: int, edge) -> int:
    if isinstance(x, str) and x in ("⊥", "bottom") or x is None:
        return BOTTOM
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise PolicyError(f"edge {edge!r} names an unknown node {x!r}: nodes are cell indices or '⊥'")
    if int(x) == BOTTOM:
        return BOTTOM
    if not 0 <= int(x) < k:
        raise PolicyError(f"edge {edge!r} names node {x!r}, outside the domain's cells [0, {k})")
    return int(x)
