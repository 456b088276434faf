"""The Policy object: a domain and a graph over its cells (plus the null vertex ⊥).

(ε, G)-Blowfish privacy bounds the output ratio by e^ε for databases that
differ in one record whose value moves along one edge of G (He et al. 2014,
§4). Edges are produced in chunks of integer arrays ``(u, v)``; ``v ==
BOTTOM`` marks an edge to ⊥ (adding or removing a record: unbounded DP).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..domain import Domain
from .sensitivity import edge_sensitivity

__all__ = ["Policy", "BOTTOM"]

BOTTOM = -1


class Policy:
    """A Blowfish policy graph over the cells of a domain.

    Subclasses describe one family of the papers and yield its edges; they
    may override :meth:`sensitivity` with a closed form.
    """

    family: str = "policy"

    def __init__(self, domain: Domain):
        self.domain = domain

    # -- graph -----------------------------------------------------------------
    @property
    def has_bottom(self) -> bool:
        """Whether the graph has the null vertex ⊥ (records may appear or vanish)."""
        return False

    @property
    def params(self) -> dict[str, Any]:
        """The family's parameters (for display and serialisation)."""
        return {}

    def edge_chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield the edges as chunks of arrays ``(u, v)`` with ``u < v`` (``v = BOTTOM`` for ⊥)."""
        raise NotImplementedError

    def edges(self) -> np.ndarray:
        """All edges as an ``(m, 2)`` int array (``BOTTOM`` = ⊥); for graphs small enough to list."""
        chunks = [np.column_stack([u, v]) for u, v in self.edge_chunks()]
        if not chunks:
            return np.empty((0, 2), dtype=np.intp)
        return np.concatenate(chunks).astype(np.intp)

    def edge_count(self) -> int:
        """Number of edges of the graph."""
        return int(sum(len(u) for u, _ in self.edge_chunks()))

    # -- privacy -------------------------------------------------------------
    def sensitivity(self, strategy) -> float:
        """Policy-specific sensitivity Δ_A(G) = max over edges of ‖A e_u − A e_v‖₁.

        ``strategy`` may be a structured :class:`~blowfish_nb.workload.Workload`,
        a dense array or a scipy.sparse matrix with ``domain.size`` columns.
        """
        return edge_sensitivity(strategy, self.edge_chunks(), self.domain.size)

    def summary(self) -> str:
        """One line for humans, e.g. ``"threshold θ=5 on salary (20 cells)"``."""
        params = " ".join(f"{'θ' if k == 'theta' else k}={v}" for k, v in self.params.items())
        on = ", ".join(self.domain.names)
        return f"{self.family}{' ' + params if params else ''} on {on} ({self.domain.size} cells)"

    def to_networkx(self):
        """The graph as a ``networkx.Graph`` (nodes 0..k−1, and ``"⊥"`` when present)."""
        import networkx as nx

        graph = nx.Graph(family=self.family, **self.params)
        graph.add_nodes_from(range(self.domain.size))
        if self.has_bottom:
            graph.add_node("⊥")
        for u, v in self.edges():
            graph.add_edge(int(u), "⊥" if v == BOTTOM else int(v))
        return graph

    def __repr__(self) -> str:
        return f"<Policy {self.summary()}>"
