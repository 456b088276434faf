"""Measurement strategies: the matrices a mechanism measures with noise (trees, wavelets, optimised ones).

Each is a :class:`blowfish_nb.operators.Workload` that knows its structure
(column norms and differences for policy sensitivities, a fast solve where
the strategy is square). The builders users call (``hierarchical``,
``haar``) are in :mod:`blowfish_nb.workload`.
"""

from .haar import Haar
from .optimized import OptimizedStrategy, optimize
from .trees import BlockTrees, Tree
from .weighted_prefix import WeightedPrefix, optimize_weights

__all__ = ["Tree", "BlockTrees", "Haar", "optimize", "OptimizedStrategy", "WeightedPrefix", "optimize_weights"]
