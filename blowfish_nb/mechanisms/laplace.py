"""The Laplace mechanism on the identity strategy, calibrated to the policy (He et al. 2014, §5)."""

from __future__ import annotations

from ..workload import Identity
from .base import MatrixMechanism

__all__ = ["Laplace"]


class Laplace(MatrixMechanism):
    """Add Lap(Δ_I(G)/ε) to every cell of the histogram, answer any workload from it.

    Δ_I(G) is 1 under unbounded DP (an edge to ⊥ changes one count) and 2 under
    any policy with an edge between two cells (one count down, one up).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from blowfish_nb import Domain, policy, workload
    >>> d = Domain.from_column(pd.Series([1.0], name="v"), bins=8, bounds=(0, 8))
    >>> Laplace().expected_error(workload.identity(8), policy.line(d), epsilon=1.0)
    8.0
    """

    name = "Laplace"

    def strategy(self, k: int) -> Identity:
        return Identity(k)

    def __repr__(self) -> str:
        return "Laplace()"
