"""Mechanisms: one per module, one common interface."""

from .base import MatrixMechanism, Mechanism
from .laplace import Laplace
from .ordered import Ordered

__all__ = ["Mechanism", "MatrixMechanism", "Laplace", "Ordered"]
