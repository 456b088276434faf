"""The Ordered mechanism: noisy prefix sums (He et al. 2014, §7.1; Haney et al. 2015, Alg. 1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import isotonic_regression

from .base import MatrixMechanism
from .factors import PrefixFactor

__all__ = ["Ordered"]


@dataclass(frozen=True, repr=False)
class Ordered(MatrixMechanism):
    """Measure the cumulative histogram with Lap(Δ_P(G)/ε) noise.

    Δ_P(G) is 1 under the line graph, θ under G^θ (for θ < k) and k under
    unbounded DP, so the mechanism shines for small θ. Under G^1 it is Haney
    et al.'s Algorithm 1 (x_G of the line graph is the prefix sums), optimal
    for range queries up to constants (Lemma 5.4). On a grid it measures the
    d-dimensional prefix sums.

    Parameters
    ----------
    consistent : bool
        Project the noisy prefix sums onto non-decreasing, non-negative
        sequences (constrained inference of Hay et al.;
        ``scipy.optimize.isotonic_regression``, then clipping at 0; 1-D only).
        The true prefix sums lie in that convex set and projection onto it is
        non-expansive, so consistency never increases the total squared error
        of the prefix sums (for the cumulative workload :meth:`expected_error`
        is then an upper bound); other workloads derived from them usually
        gain too, without a pointwise guarantee. Exact when ``consistent=False``.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> round(Ordered().expected_error(workload.prefix(8), policy.threshold(Domain.grid(8), 2), epsilon=1.0), 3)
    7.835
    """

    consistent: bool = False

    name = "Ordered"
    registry = {"ordered": {}, "ordered-consistent": {"consistent": True}}
    auto = ({},)
    auto_rank = 10
    factor = PrefixFactor()

    @property
    def linear(self) -> bool:  # type: ignore[override]
        return not self.consistent

    def _postprocess(self, y, ndim):
        if self.consistent and ndim == 1:
            return np.maximum(isotonic_regression(y, increasing=True).x, 0.0)
        return y

    def __repr__(self) -> str:
        return f"Ordered(consistent={self.consistent})"
