"""Mechanisms: one per module, one common interface."""

from .base import ColumnSlice, MatrixMechanism, Mechanism
from .dawa import DAWA
from .htheta import HThetaRanges
from .partition_first import PartitionFirst
from .hierarchical import Hierarchical
from .laplace import Laplace
from .ordered import Ordered
from .ordered_hierarchical import OrderedHierarchical
from .privelet import Privelet
from .transformed import Transformed

__all__ = ["Mechanism", "MatrixMechanism", "ColumnSlice", "DAWA", "HThetaRanges", "PartitionFirst", "Laplace", "Ordered", "OrderedHierarchical", "Hierarchical", "Privelet", "Transformed"]
