"""Privelet: Laplace noise on Haar wavelet coefficients (Xiao, Wang, Gehrke, ICDE 2010)."""

from __future__ import annotations

from .base import MatrixMechanism
from .factors import HaarFactor

__all__ = ["Privelet"]


class Privelet(MatrixMechanism):
    """The Haar wavelet strategy over cells padded to 2^L, inverted exactly.

    With Privelet's coefficient weights the strategy is the unnormalised Haar
    matrix (every column has L + 1 entries ±1, so Δ = 1 + log₂ k under DP);
    under a policy its Δ comes from edge differences like any strategy. On
    grids it is the Kronecker product of per-axis wavelets (Privelet's
    multi-dimensional transform).

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> Privelet().sensitivity(policy.dp(Domain.grid(16)))
    5.0
    """

    name = "Privelet"
    registry = {"privelet": {}}
    auto = ({},)
    auto_rank = 30
    factor = HaarFactor()
