"""H^θ_k written out: the spanning tree of G^θ on one ordered attribute in closed form (Haney et al. 2015, §5.3.1).

Cells fall in blocks of θ (the last may be shorter) and the last cell of each
block is red: r_b = min(bθ + θ − 1, k − 1). A red cell joins the next red
cell, any other cell its own block's red. So every cell a < k − 1 is the
lower end of exactly one edge — (a, red_of(a)) for a non-red a, (r_b, r_{b+1})
for a red one — and in a policy's normal order (sorted pairs, lower end
first) edge a is the one whose lower end is a.

:func:`htheta_edges` writes the edges out in that order in O(k), without the
sort and the checks of an edge list given by hand; :func:`htheta_tree` wraps
them as a :class:`~.custom.Custom` policy; :func:`htheta_theta` recognises a
tree given edge by edge as H^θ (one O(k) comparison with the construction),
so the transform (:mod:`.transform`) and the stretch (:mod:`.spanning`) take
their closed forms for any policy whose edges *are* H^θ's, however it was
built. The tests compare the edges with the checked construction on every
(k, θ) with k ≤ 33, and the transform with the generic one on k ≤ 19 (θ
from 1 to past k).
"""

from __future__ import annotations

import numpy as np

from ..domain import Domain
from .base import Policy
from .custom import Custom

__all__ = ["htheta_edges", "htheta_tree", "htheta_theta", "is_htheta"]


def htheta_edges(k: int, theta: int) -> tuple[np.ndarray, np.ndarray]:
    """H^θ_k's edges (a, up(a)), a = 0 … k − 2, in normal order, and each cell's red cell.

    Examples
    --------
    >>> edges, red_of = htheta_edges(7, 3)
    >>> edges.tolist()
    [[0, 2], [1, 2], [2, 5], [3, 5], [4, 5], [5, 6]]
    >>> red_of.tolist()
    [2, 2, 2, 5, 5, 5, 6]
    """
    edges = np.empty((max(k - 1, 0), 2), dtype=np.intp)
    lower, upper = edges[:, 0], edges[:, 1]
    lower[:] = np.arange(k - 1, dtype=np.intp)
    red_of = np.empty(k, dtype=np.intp)
    np.floor_divide(lower, theta, out=red_of[:-1])
    red_of[:-1] *= theta
    red_of[:-1] += theta - 1
    red_of[-1] = k - 1
    np.minimum(red_of, k - 1, out=red_of)
    np.add(lower, theta, out=upper)  # a red cell's edge goes to the next red cell ...
    np.minimum(upper, k - 1, out=upper)
    np.copyto(upper, red_of[:-1], where=red_of[:-1] != lower)  # ... and a non-red cell's to its own red cell
    return edges, red_of


def htheta_tree(domain: Domain, theta: int) -> Custom:
    """H^θ over the cells of ``domain`` (taken in order) as a policy: equal to ``Custom(domain, edges)`` without
    the checks (the edges are in normal form by construction).

    Examples
    --------
    >>> from blowfish_nb import Domain
    >>> htheta_tree(Domain.grid(5), 2).edges().tolist()
    [[0, 1], [1, 3], [2, 3], [3, 4]]
    """
    return Custom._normal(domain, htheta_edges(domain.size, theta)[0])


def htheta_theta(tree: Policy) -> int | None:
    """A θ with ``tree``'s graph equal to H^θ on its cells (in order), or None (also for k < 3 and graphs with ⊥).

    Edge 0 of H^θ is (0, min(θ − 1, k − 1)) for θ ≥ 2 and (0, 1) for θ = 1, so
    at most two θ are candidates (θ ≥ k all give the star into k − 1; H¹ and
    H² coincide for k = 3): each is compared with the construction.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> htheta_theta(policy.line(Domain.grid(6))), htheta_theta(htheta_tree(Domain.grid(6), 4))
    (1, 4)
    >>> htheta_theta(policy.threshold(Domain.grid(6), 2)) is None  # G² is not a tree
    True
    """
    k = tree.domain.size
    if k < 3 or tree.has_bottom or tree.edge_count() != k - 1:
        return None
    u, v = _edge_columns(tree)
    first = int(v[0]) if u[0] == 0 else -1
    if first < 1:
        return None
    for theta in ((1, 2) if first == 1 else (first + 1,)):
        if _equal(u, v, htheta_edges(k, theta)[0]):
            return theta
    return None


def is_htheta(tree: Policy, theta: int) -> bool:
    """Whether ``tree``'s graph (no ⊥) is H^θ on its cells: one O(k) comparison of its edges, in their order.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> is_htheta(policy.line(Domain.grid(5)), 1), is_htheta(policy.line(Domain.grid(5)), 2)
    (True, False)
    """
    k = tree.domain.size
    if tree.has_bottom or tree.edge_count() != max(k - 1, 0):
        return False
    return k < 2 or _equal(*_edge_columns(tree), htheta_edges(k, theta)[0])


def _edge_columns(tree: Policy) -> tuple[np.ndarray, np.ndarray]:
    """(u, v) of the edges in :meth:`~.base.Policy.edges` order, without a copy when they come in one chunk."""
    chunks = list(tree.edge_chunks())
    if len(chunks) == 1:
        return chunks[0]
    e = tree.edges()
    return e[:, 0], e[:, 1]


def _equal(u: np.ndarray, v: np.ndarray, edges: np.ndarray) -> bool:
    return bool(np.array_equal(u, edges[:, 0]) and np.array_equal(v, edges[:, 1]))
