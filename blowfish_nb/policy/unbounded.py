"""The unbounded-DP policy: every cell joined to the null vertex ⊥ (He et al. 2014, §4)."""

from __future__ import annotations

import numpy as np

from ..domain import Domain
from .base import BOTTOM, Policy

__all__ = ["UnboundedDP", "dp"]


class UnboundedDP(Policy):
    """Standard (unbounded) differential privacy as a policy graph: a star to ⊥."""

    family = "dp"

    @property
    def has_bottom(self) -> bool:
        return True

    def edge_chunks(self):
        k = self.domain.size
        yield np.arange(k, dtype=np.intp), np.full(k, BOTTOM, dtype=np.intp)

    def summary(self) -> str:
        return f"differential privacy (unbounded) on {', '.join(self.domain.names)} ({self.domain.size} cells)"


def dp(domain: Domain) -> UnboundedDP:
    """Unbounded differential privacy: any record may be added or removed.

    Examples
    --------
    >>> import pandas as pd
    >>> from blowfish_nb import Domain, workload
    >>> d = Domain.from_column(pd.Series([0.5], name="v"), bins=4, bounds=(0, 4))
    >>> dp(d).sensitivity(workload.prefix(4))
    4.0
    """
    return UnboundedDP(domain)
