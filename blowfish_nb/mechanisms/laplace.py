"""The Laplace mechanism on the identity strategy, calibrated to the policy (He et al. 2014, §5)."""

from __future__ import annotations

from .base import MatrixMechanism
from .factors import IdentityFactor

__all__ = ["Laplace"]


class Laplace(MatrixMechanism):
    """Add Lap(Δ_I(G)/ε) to every cell of the histogram, answer any workload from it.

    Δ_I(G) is 1 under unbounded DP (an edge to ⊥ changes one count) and 2 under
    any policy with an edge between two cells (one count down, one up). The
    noise is discrete Laplace (the geometric mechanism): counts plus noise
    are whole numbers.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> round(Laplace().expected_error(workload.identity(8), policy.line(Domain.grid(8)), epsilon=1.0), 3)
    7.835

    (discrete Laplace noise of scale Δ/ε = 2 per cell: variance 2·2² − 1/6 + O(1/b²), see :mod:`.noise`)
    """

    name = "Laplace"
    registry = {"laplace": {}}
    auto = ({},)
    auto_rank = 0
    factor = IdentityFactor()
