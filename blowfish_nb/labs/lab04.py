"""Lab 4 — spanning trees and stretch: H^θ, and the price of a policy that is not a tree.

The lab's setting is public and fixed here: ``K`` = 16 ordered cells, the threshold policy G^θ with θ =
``THETA``, budget ε = ``EPSILON``. Each ``qN(answer)`` is a hint check: it knows hints, not answers.
"""

from __future__ import annotations

import numpy as np

from ..domain import Domain
from ..policy import Policy, custom, line, spanning_tree, threshold, transform
from ._check import LabCheckFailed, make_check, unanswered

__all__ = ["K", "THETA", "EPSILON", "TREES", "policy", "trees", "comb_tree", "edge_counts_matrix", "q1", "q2", "q2b",
           "q3", "q4a", "q4b", "q5", "unanswered", "LabCheckFailed"]

#: cells of the lab's domain
K = 16
#: θ of the lab's threshold policy G^θ
THETA = 4
#: the budget of q3
EPSILON = 0.5
#: the spanning trees the lab compares, by name
TREES = ("path", "htheta", "bfs")


def policy(theta: int = THETA, k: int = K) -> Policy:
    """The lab's policy G^θ on ``k`` cells.

    Examples
    --------
    >>> policy().is_tree()
    False
    """
    return threshold(Domain.grid(k), theta)


def trees(theta: int = THETA, k: int = K) -> dict[str, Policy]:
    """The lab's candidate spanning trees of G^θ: the path 0–1–…–(k−1), H^θ, a breadth-first tree from cell 0.

    Examples
    --------
    >>> sorted(trees())
    ['bfs', 'htheta', 'path']
    """
    g = policy(theta, k)
    return {"path": line(g.domain), "htheta": spanning_tree(g, "htheta"), "bfs": spanning_tree(g, "bfs")}


def comb_tree(step: int = 2, k: int = K) -> Policy:
    """The comb: every ``step``-th cell is red, the red cells form a path, every other cell hangs off the red cell
    to its left (a spanning tree of G^θ for θ ≥ ``step``).

    Examples
    --------
    >>> comb_tree().is_tree(), len(comb_tree().edges())
    (True, 15)
    """
    edges = [(r, r + step) for r in range(0, k - step, step)] + [(c, c - c % step) for c in range(k) if c % step]
    return custom(Domain.grid(k), edges)


def edge_counts_matrix(tree: Policy) -> np.ndarray:
    """The matrix of x ↦ x_T (one row per tree edge): the data the tree's mechanisms measure (Haney §4.4).

    Examples
    --------
    >>> edge_counts_matrix(trees()["htheta"]).shape
    (15, 16)
    """
    t = transform(tree)
    return np.column_stack([t.data(np.eye(tree.domain.size)[i]) for i in range(tree.domain.size)])


q1 = make_check("lab04", "q1")
q2 = make_check("lab04", "q2")
q2b = make_check("lab04", "q2b")
q3 = make_check("lab04", "q3")
q4a = make_check("lab04", "q4a")
q4b = make_check("lab04", "q4b")
q5 = make_check("lab04", "q5")
