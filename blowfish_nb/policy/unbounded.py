"""The unbounded-DP policy: every cell joined to the null vertex ⊥ (He et al. 2014, §4)."""

from __future__ import annotations


import numpy as np

from ..domain import Domain
from .base import BOTTOM, Policy

__all__ = ["UnboundedDP", "dp"]


class UnboundedDP(Policy):
    """Standard (unbounded) differential privacy as a policy graph: a star to ⊥."""

    family = "dp"
    kind = "dp"

    @property
    def has_bottom(self) -> bool:
        return True

    def edge_chunks(self):
        k = self.domain.size
        yield np.arange(k, dtype=np.intp), np.full(k, BOTTOM, dtype=np.intp)

    def edge_count(self) -> int:
        return self.domain.size

    def component_labels(self) -> np.ndarray:
        return np.zeros(self.domain.size, dtype=np.intp)

    def distance(self, u, v) -> float:
        a, b = self._vertex(u, "u"), self._vertex(v, "v")
        if a == b:
            return 0
        return 1 if self.domain.size in (a, b) else 2

    def summary(self) -> str:
        return f"differential privacy (unbounded) on {', '.join(self.domain.names)} ({self.domain.size} cells)"


def dp(domain: Domain) -> UnboundedDP:
    """Unbounded differential privacy: any record may be added or removed.

    Examples
    --------
    >>> from blowfish_nb import Domain, workload
    >>> dp(Domain.grid(4)).sensitivity(workload.prefix(4))
    4.0
    """
    return UnboundedDP(domain)


