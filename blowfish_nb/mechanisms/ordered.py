"""The Ordered mechanism: noisy prefix sums (He et al. 2014, §7.1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import isotonic_regression

from ..workload import Prefix, Workload
from .base import MatrixMechanism

__all__ = ["Ordered"]


@dataclass(frozen=True)
class Ordered(MatrixMechanism):
    """Measure the cumulative histogram with Lap(Δ_P(G)/ε) noise.

    Δ_P(G) is 1 under the line graph, θ under G^θ (for θ < k) and k under
    unbounded DP, so the mechanism shines for small θ.

    Parameters
    ----------
    consistent : bool
        Project the noisy prefix sums onto non-decreasing, non-negative
        sequences (constrained inference of Hay et al.;
        ``scipy.optimize.isotonic_regression``, then clipping at 0). The true
        prefix sums lie in that convex set and projection onto it is
        non-expansive, so consistency never increases the total squared
        error; :meth:`expected_error` then is an upper bound, exact when
        ``consistent=False``.

    Examples
    --------
    >>> import pandas as pd
    >>> from blowfish_nb import Domain, policy, workload
    >>> d = Domain.from_column(pd.Series([1.0], name="v"), bins=8, bounds=(0, 8))
    >>> Ordered().expected_error(workload.prefix(8), policy.threshold(d, 2), epsilon=1.0)
    8.0
    """

    consistent: bool = False

    name = "Ordered"

    def strategy(self, k: int) -> Prefix:
        return Prefix(k)

    def reconstruct(self, strategy: Workload, y: np.ndarray) -> np.ndarray:
        if self.consistent:
            y = np.maximum(isotonic_regression(y, increasing=True).x, 0.0)
        return strategy.solve(y)
