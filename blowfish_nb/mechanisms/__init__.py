"""Mechanisms: one per module, one common interface (see :mod:`.base` for the contract and the registry)."""

from .base import REGISTRY, ColumnSlice, MatrixMechanism, Mechanism, by_name
from .adaptive import Adaptive
from .dawa import DAWA
from .hierarchical import Hierarchical
from .htheta import HThetaRanges
from .laplace import Laplace
from .optimized import Optimized
from .ordered import Ordered
from .ordered_hierarchical import OrderedHierarchical
from .partition_first import PartitionFirst
from .privelet import Privelet
from .sulq import SuLQ
from .transformed import Transformed

__all__ = ["Mechanism", "MatrixMechanism", "ColumnSlice", "REGISTRY", "by_name", "DAWA", "HThetaRanges",
           "PartitionFirst", "Laplace", "Ordered", "OrderedHierarchical", "Hierarchical", "Privelet", "Transformed",
           "Optimized", "SuLQ", "Adaptive"]
