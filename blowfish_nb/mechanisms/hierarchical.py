"""The hierarchical mechanism: noisy counts of every node of a b-ary tree, made consistent (Hay et al. 2010)."""

from __future__ import annotations

from dataclasses import dataclass

from ..exceptions import InvalidParameterError
from .base import MatrixMechanism
from .factors import TreeFactor

__all__ = ["Hierarchical"]


@dataclass(frozen=True, repr=False)
class Hierarchical(MatrixMechanism):
    """Measure every node of a complete b-ary tree over the cells (padded to b^L), then least squares.

    Least squares over the tree is Hay et al.'s consistency step: the estimate
    is the unique tree of counts in which every parent equals the sum of its
    children and that is closest to the measurements. On grids the strategy is
    the Kronecker product of per-axis trees.

    Parameters
    ----------
    branching : int
        Fan-out b ≥ 2.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> m = Hierarchical(2)
    >>> m.sensitivity(policy.dp(Domain.grid(8)))  # 4 levels: a record is counted once per level
    4.0
    """

    branching: int = 2

    name = "Hierarchical"
    registry = {"hierarchical": {}}
    auto = ({"branching": 2}, {"branching": 4})
    auto_rank = 20

    def __post_init__(self):
        if isinstance(self.branching, bool) or not isinstance(self.branching, int) or self.branching < 2:
            raise InvalidParameterError(f"branching must be an integer >= 2, got {self.branching!r}")

    @property
    def factor(self):  # type: ignore[override]
        return TreeFactor(self.branching)

    def __repr__(self) -> str:
        return f"Hierarchical(branching={self.branching})"
