"""Policy graphs: which pairs of values must stay indistinguishable."""

from .base import BOTTOM, Policy
from .threshold import Threshold, line, threshold
from .unbounded import UnboundedDP, dp

__all__ = ["Policy", "BOTTOM", "UnboundedDP", "Threshold", "dp", "line", "threshold"]
