"""Policy graphs: which pairs of values must stay indistinguishable.

Every builder takes the domain first; every policy answers ``sensitivity``,
``distance``, ``guarantee``, ``components``, ``is_tree`` and JSON/networkx I/O.
"""

from .attribute import Attribute, Categorical, attribute, categorical, sensitive_attributes
from .base import BOTTOM, EDGE_LIMIT, Guarantee, Policy
from .bounded import Bounded, bounded
from .compose import Composed, compose
from .constrained import Constrained, constrained
from .custom import Custom, custom, from_networkx
from .partition import Partition, partition
from .project import Projection, project
from .spanning import red_vertex_graph, spanning_tree, stretch, tree_distances
from .threshold import Threshold, grid, line, threshold
from .transform import Transform, transform
from .unbounded import UnboundedDP, dp

__all__ = [
    "Policy", "Guarantee", "BOTTOM", "EDGE_LIMIT",
    "UnboundedDP", "Bounded", "Threshold", "Partition", "Attribute", "Categorical", "Custom", "Composed",
    "Projection", "Transform",
    "dp", "bounded", "line", "threshold", "grid", "partition", "attribute", "sensitive_attributes",
    "categorical", "custom", "from_networkx", "compose", "project", "transform", "constrained", "Constrained",
    "spanning_tree", "stretch", "red_vertex_graph", "tree_distances",
]
