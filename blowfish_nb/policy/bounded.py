"""Bounded differential privacy: the complete graph over the cells (He et al. 2014, §3.1 "full").

The k(k−1)/2 edges are never listed for sensitivity: strategies whose rows
are intervals of cells have closed forms (Δ_I = 2, Δ_prefix = k − 1, ...).
"""

from __future__ import annotations

import numpy as np

from ..domain import Domain
from .base import Policy
from .sensitivity import clique_sensitivity

__all__ = ["Bounded", "bounded"]


class Bounded(Policy):
    """The complete graph K_k: any value may change into any other."""

    family = "bounded"
    kind = "bounded"

    def __init__(self, domain: Domain):
        super().__init__(domain)
        self.warn_if_protects_nothing()  # one cell: nothing to move to

    def edge_chunks(self):
        k = self.domain.size
        for d in range(1, k):
            u = np.arange(k - d, dtype=np.intp)
            yield u, u + d

    def edge_count(self) -> int:
        k = self.domain.size
        return k * (k - 1) // 2

    def component_labels(self) -> np.ndarray:
        return np.zeros(self.domain.size, dtype=np.intp)

    def distance(self, u, v) -> float:
        return 0 if self._vertex(u, "u") == self._vertex(v, "v") else 1

    def sensitivity(self, strategy) -> float:
        k = self.domain.size
        return clique_sensitivity(strategy, np.array([0]), np.array([k - 1]), self.edge_chunks(), k)


def bounded(domain: Domain) -> Bounded:
    """Bounded DP: the number of records is public and any record may take any value.

    Examples
    --------
    >>> from blowfish_nb import Domain, workload
    >>> bounded(Domain.grid(6)).sensitivity(workload.prefix(6)), bounded(Domain.grid(6)).edge_count()
    (5.0, 15)
    """
    return Bounded(domain)
