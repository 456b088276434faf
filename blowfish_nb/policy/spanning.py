"""Spanning trees of policy graphs and their exact stretch (Haney et al. 2015, Lemma 4.3, §5.3).

If every edge of G is joined in a tree T by a path of at most ℓ edges, an
(ε, T)-Blowfish mechanism is (ℓ·ε, G)-Blowfish (Lemma 4.3). ℓ — the stretch —
is computed exactly here (max over the edges of G of the tree distance, by
lowest common ancestors), never assumed.

* ``"htheta"`` — H^θ_k for G^θ_k (§5.3.1): "red" cells every θ cells form a
  path; every other cell hangs off the next red cell to its right. Stretch ≤ 3.
* ``"red"`` — the d-dimensional red-vertex construction (§5.3.2): cubes of side
  ⌊θ/d⌋, each cell joined to its cube's corner ("upper right") red cell. The
  paper joins the red cells in a full grid, which is not a tree; here they are
  joined by a comb (a path along the last axis, the rows joined along the
  first), which is a tree whose stretch grows with the number of red rows.
  :func:`red_vertex_graph` returns the paper's graph itself.
* ``"bfs"`` — a breadth-first tree from the ground(s), for any policy.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from .._arrays import unique_sorted
from ..exceptions import PolicyError
from .base import BOTTOM, Policy, derived, refuse_constrained
from .custom import Custom
from .htheta_tree import htheta_tree, is_htheta
from .threshold import Threshold

__all__ = ["spanning_tree", "stretch", "red_vertex_graph", "tree_distances"]

METHODS = ("auto", "bfs", "htheta", "red")


def spanning_tree(policy: Policy, method: str = "auto") -> Custom:
    """A spanning tree (forest, for disconnected policies) of ``policy``.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy as P
    >>> g = P.threshold(Domain.grid(10), 3)
    >>> t = spanning_tree(g, "htheta")
    >>> t.is_tree(), stretch(g, t)
    (True, 3)
    """
    refuse_constrained(policy, "a spanning tree")
    if method not in METHODS:
        raise PolicyError(f"method must be one of {METHODS}, got {method!r}")
    with derived():  # a forest of an edgeless graph has no edge either; the policy itself warned
        return _spanning_tree(policy, method)


def _spanning_tree(policy: Policy, method: str) -> Custom:
    one_d = isinstance(policy, Threshold) and len(policy.domain.shape) == 1
    if method == "auto":
        method = "htheta" if one_d else "red" if isinstance(policy, Threshold) else "bfs"
    if method == "htheta":
        if not one_d or policy.metric != "l1":
            raise PolicyError(f"method='htheta' is for G^θ on one ordered attribute, got {policy.summary()}")
        return htheta_tree(policy.domain, policy.theta)  # H^θ written out in normal order
    if method == "red":
        if not isinstance(policy, Threshold):
            raise PolicyError(f"method='red' is for distance-threshold grids, got {policy.summary()}")
        edges, red = _red_star_edges(policy)
        return Custom(policy.domain, np.vstack([edges, _comb_edges(policy.domain.shape, red)]))
    return _bfs_tree(policy)


def red_vertex_graph(policy: Threshold) -> Custom:
    """The paper's H^θ_{k^d}: stars to red corner cells plus the full grid of red cells (not a tree)."""
    if not isinstance(policy, Threshold):
        raise PolicyError(f"red_vertex_graph is for distance-threshold grids, got {policy.summary()}")
    edges, red = _red_star_edges(policy)
    with derived():
        return Custom(policy.domain, np.vstack([edges, _red_grid_edges(policy.domain.shape, red)]))


def stretch(policy: Policy, tree: Policy) -> float:
    """max over the edges (u, v) of ``policy`` of the distance from u to v in ``tree``.

    ``tree`` must be a forest over the same cells; ``inf`` when some edge of the
    policy joins two different trees of the forest.
    """
    if tree.domain.size != policy.domain.size:
        raise PolicyError(f"tree has {tree.domain.size} cells, the policy {policy.domain.size}")
    if policy.has_bottom and not tree.has_bottom:
        raise PolicyError("the policy has ⊥ but the tree does not")
    closed = _htheta_stretch(policy, tree)
    if closed is not None:
        return closed
    return _edge_stretch(policy, tree)


def _edge_stretch(policy: Policy, tree: Policy) -> float:
    """:func:`stretch` edge by edge: the tree distance of every edge of ``policy`` (LCA by binary lifting)."""
    best = 0.0
    dist = tree_distances(tree)
    for u, v in policy.edge_chunks():
        if len(u):
            best = max(best, float(np.max(dist(u, v))))
    return int(best) if math.isfinite(best) else math.inf


def tree_distances(tree: Policy):
    """A vectorised d_T(u, v) for a forest T (``BOTTOM`` allowed), by binary-lifting LCA."""
    k = tree.domain.size
    n = k + 2  # cells, ⊥, super-root joining the trees
    e = tree.edges()
    u, v = e[:, 0], np.where(e[:, 1] == BOTTOM, k, e[:, 1])
    adj = sp.csr_array((np.ones(2 * len(u)), (np.r_[u, v], np.r_[v, u])), shape=(n, n))
    ncomp, labels = csgraph.connected_components(adj[: k + 1, : k + 1], directed=False)
    if len(u) != (k + 1 if tree.has_bottom else k) - (ncomp - (0 if tree.has_bottom else 1)):
        raise PolicyError(f"{tree.summary()} is not a forest ({len(u)} edges, {ncomp} components)")
    roots = unique_sorted(labels, return_index=True)[1]
    adj = sp.csr_array(
        (np.r_[np.ones(2 * len(u)), np.ones(2 * len(roots))],
         (np.r_[u, v, np.full(len(roots), k + 1), roots], np.r_[v, u, roots, np.full(len(roots), k + 1)])),
        shape=(n, n),
    )
    _, pred = csgraph.breadth_first_order(adj, k + 1, directed=False)
    pred = np.where(pred < 0, k + 1, pred)
    reach = csgraph.shortest_path(adj, unweighted=True, directed=False, indices=k + 1)
    depth = np.where(np.isfinite(reach), reach, 0).astype(np.int64)
    levels = max(1, int(depth.max()).bit_length())
    up = [pred]
    for _ in range(1, levels):
        up.append(up[-1][up[-1]])
    comp = np.r_[labels, -1, -2]

    def dist(a, b):
        a = np.where(np.asarray(a) == BOTTOM, k, a).astype(np.intp)
        b = np.where(np.asarray(b) == BOTTOM, k, b).astype(np.intp)
        x, y = a.copy(), b.copy()
        swap = depth[x] < depth[y]
        x[swap], y[swap] = b[swap], a[swap]
        diff = depth[x] - depth[y]
        for j in range(levels):
            move = (diff >> j) & 1 == 1
            x[move] = up[j][x[move]]
        for j in reversed(range(levels)):
            differ = up[j][x] != up[j][y]
            x[differ], y[differ] = up[j][x[differ]], up[j][y[differ]]
        lca = np.where(x == y, x, pred[x])
        out = (depth[a] + depth[b] - 2 * depth[lca]).astype(float)
        out[comp[a] != comp[b]] = math.inf
        return out

    return dist


def _htheta_stretch(policy: Policy, tree: Policy) -> int | None:
    """The stretch of G^θ on one attribute over H^θ in closed form (issue 28), or None when ``tree`` is not H^θ.

    Cells fall in blocks of θ (the last may be shorter), the last cell of each
    block is red; a red cell joins the next red one, any other cell its own
    block's red. So d_T(u, v) = [u not red] + [v not red] + |block(u) − block(v)|
    (u ≠ v), and a G^θ edge joins cells of the same or of adjacent blocks. Hence,
    with m blocks and θ ≥ 2: 3 when some block after the first has a cell that
    is not red (the cell just before the first block's red and the first cell of
    the next block are 2 ≤ θ apart) — m ≥ 3, or m = 2 with a last block of ≥ 2
    cells; 2 when m = 2 and the last block is its red alone (cell 0 to cell
    θ = k − 1), or m = 1 with k ≥ 3 (a star: two leaves); 1 for θ = 1 (the tree
    is the line) or k = 2. Recognising H^θ costs one O(k) comparison of edge
    arrays with :func:`~.htheta_tree.htheta_edges` (:func:`~.htheta_tree.is_htheta`; already in normal order:
    no sort, no copy of the tree's edges); the edge-by-edge alternative is
    O(kθ) tree distances (5 s at k = 10⁶, θ = 16). Tested against
    :func:`_edge_stretch` on small domains.
    """
    if not isinstance(policy, Threshold) or len(policy.domain.shape) != 1 or policy.has_bottom or tree.has_bottom:
        return None
    k, theta = policy.domain.size, policy.theta
    if k < 2:
        return None
    if not is_htheta(tree, theta):
        return None
    m = -(-k // theta)
    if theta == 1 or k == 2:
        return 1
    if m >= 3 or (m == 2 and k - theta >= 2):
        return 3
    return 2


def _red_star_edges(policy: Threshold) -> tuple[np.ndarray, np.ndarray]:
    shape = policy.domain.shape
    side = max(1, policy.theta // len(shape)) if policy.metric == "l1" else policy.theta
    coords = np.unravel_index(np.arange(policy.domain.size), shape)
    red_coords = [np.minimum((c // side) * side + side - 1, n - 1) for c, n in zip(coords, shape)]
    red_of = np.ravel_multi_index(red_coords, shape)
    cells = np.arange(policy.domain.size)
    is_red = red_of == cells
    return np.column_stack([cells[~is_red], red_of[~is_red]]), is_red


def _red_values(shape, is_red):
    coords = np.unravel_index(np.flatnonzero(is_red), shape)
    return [np.unique(c) for c in coords]


def _red_grid_edges(shape, is_red) -> np.ndarray:
    values = _red_values(shape, is_red)
    return _steps(shape, [(axis, values) for axis in range(len(shape))])


def _comb_edges(shape, is_red) -> np.ndarray:
    # along each axis, join consecutive red values where every later axis sits at its first red value
    values = _red_values(shape, is_red)
    return _steps(shape, [(axis, [v if i <= axis else v[:1] for i, v in enumerate(values)])
                          for axis in range(len(shape))])


def _steps(shape, plan) -> np.ndarray:
    """Edges joining consecutive values along ``axis`` on the grid of per-axis ``values``, per (axis, values)."""
    edges = []
    for axis, values in plan:
        grid = np.meshgrid(*values, indexing="ij")
        for j in range(len(values[axis]) - 1):
            a = [g.take(j, axis=axis).ravel() for g in grid]
            b = [g.take(j + 1, axis=axis).ravel() for g in grid]
            edges.append(np.column_stack([np.ravel_multi_index(a, shape), np.ravel_multi_index(b, shape)]))
    return np.vstack(edges) if edges else np.empty((0, 2), dtype=np.intp)


def _bfs_tree(policy: Policy) -> Custom:
    k = policy.domain.size
    adj = policy.adjacency()
    n = adj.shape[0]
    ncomp, labels = csgraph.connected_components(adj, directed=False)
    starts = [k] if policy.has_bottom else []
    starts += [int(np.flatnonzero(labels == c)[0]) for c in range(ncomp) if not (policy.has_bottom and labels[k] == c)]
    edges = []
    for s in starts:
        _, pred = csgraph.breadth_first_order(adj, s, directed=False)
        child = np.flatnonzero(pred >= 0)
        edges.append(np.column_stack([child, pred[child]]))
    e = np.vstack(edges) if edges else np.empty((0, 2), dtype=np.intp)
    e = np.where(e == k, BOTTOM, e) if n > k else e
    return Custom(policy.domain, e.astype(np.intp), bottom=policy.has_bottom)  # the array path: BOTTOM marks ⊥
