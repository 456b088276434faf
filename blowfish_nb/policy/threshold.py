"""Distance-threshold policies on one ordered attribute (He et al. 2014, §3.1).

G^θ joins two bins whose indices differ by at most θ: an adversary must not
tell apart values within θ bins of each other. ``line`` is G^1.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_theta
from ..domain import Domain, OrderedAttribute
from ..exceptions import PolicyError
from .base import Policy

__all__ = ["Threshold", "threshold", "line"]


class Threshold(Policy):
    """G^θ on a one-attribute ordered domain: edges (u, v) with 1 ≤ v − u ≤ θ."""

    def __init__(self, domain: Domain, theta: int):
        super().__init__(domain)
        self.theta = theta

    @property
    def family(self) -> str:  # type: ignore[override]
        return "line" if self.theta == 1 else "threshold"

    @property
    def params(self):
        return {} if self.theta == 1 else {"theta": self.theta}

    def edge_chunks(self):
        k = self.domain.size
        for d in range(1, min(self.theta, k - 1) + 1):
            u = np.arange(k - d, dtype=np.intp)
            yield u, u + d


def threshold(domain: Domain, theta: int) -> Threshold:
    """Distance-threshold policy G^θ on one ordered attribute, θ in bins.

    Examples
    --------
    >>> import pandas as pd
    >>> from blowfish_nb import Domain, workload
    >>> d = Domain.from_column(pd.Series([1.0], name="v"), bins=10, bounds=(0, 10))
    >>> threshold(d, 3).sensitivity(workload.prefix(10))
    3.0
    """
    theta = check_theta(theta)
    _check_one_ordered(domain)
    return Threshold(domain, theta)


def line(domain: Domain) -> Threshold:
    """The line graph G^1: only adjacent bins must stay indistinguishable."""
    _check_one_ordered(domain)
    return Threshold(domain, 1)


def _check_one_ordered(domain: Domain) -> None:
    if len(domain.attributes) != 1 or not isinstance(domain.attributes[0], OrderedAttribute):
        raise PolicyError(
            f"line and threshold policies need one ordered attribute, got domain {domain!r}"
        )
