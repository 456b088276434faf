"""The transformational equivalence x ↦ x_G, W ↦ W_G (Haney et al. 2015, §4.4, App. D and E).

P_G is the k×|E| incidence matrix: the column of edge (u, v) is e_u − e_v, and
e_u for an edge (u, ⊥). Each component of G is *grounded*: at ⊥ when it
contains ⊥ (Case I), otherwise at a root cell r that plays ⊥'s part (Case II,
and Case III one root per component). With P' = P_G without the root rows,

    x_G = P'ᵀ φ,   L φ = x' ,   L = P' P'ᵀ (the grounded Laplacian, sparse SPD),

so P' x_G = x' and, for every workload, W x = W_G x_G + c with W_G = W P_G and
c = Σ_components n_c · W e_{r_c}: the component totals n_c are the same in all
neighbouring databases (a record never leaves its component), so c reveals
nothing the policy protects.

On a forest the system is triangular: x_G on the edge from v to its parent is
±(the sum of x over v's subtree), one sparse triangular solve in BFS order,
O(k). Other graphs factorise L once (SuperLU). No dense pseudo-inverse.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph
from scipy.sparse.linalg import LinearOperator, aslinearoperator, spsolve_triangular, splu

from ..exceptions import InvalidParameterError
from .base import BOTTOM, Policy, refuse_constrained
from .htheta_tree import htheta_edges, htheta_theta

__all__ = ["Transform", "HThetaTransform", "transform", "crossing_rows", "crossing_counts"]


class Transform:
    """x_G and W_G for one policy; the graph work is done once, in the constructor.

    Attributes
    ----------
    edges : (m, 2) int array
        The edges, in the order of x_G's entries (``BOTTOM`` = ⊥).
    roots : int array
        The root cells grounding the components without ⊥ (empty in Case I).
    is_forest : bool
        Whether the triangular fast path is used.
    """

    def __init__(self, policy: Policy):
        refuse_constrained(policy, "the transform")
        self.policy = policy
        k = self.k = policy.domain.size
        self.edges = policy.edges()
        u, v = self.edges[:, 0], self.edges[:, 1]
        m = len(u)
        to_bottom = v == BOTTOM
        self.incidence = sp.csc_array(
            (np.r_[np.ones(m), -np.ones(int((~to_bottom).sum()))],
             (np.r_[u, v[~to_bottom]], np.r_[np.arange(m), np.flatnonzero(~to_bottom)])),
            shape=(k, m),
        )
        # components over cells + ⊥ (vertex k); ground each at ⊥ or at its smallest cell
        n = k + 1
        vv = np.where(to_bottom, k, v)
        adj = sp.csr_array((np.ones(2 * m), (np.r_[u, vv], np.r_[vv, u])), shape=(n, n))
        ncomp, labels = csgraph.connected_components(adj, directed=False)
        grounded = np.zeros(ncomp, dtype=bool)
        grounded[labels[k]] = policy.has_bottom and bool(to_bottom.any())
        cell_labels = labels[:k]
        first = np.full(ncomp, -1)
        first[cell_labels[::-1]] = np.arange(k)[::-1]
        self.roots = np.sort(first[(first >= 0) & ~grounded])
        self.component_of_cell = cell_labels
        self._keep = np.ones(k, dtype=bool)
        self._keep[self.roots] = False
        vertices_in_use = k + (1 if grounded.any() else 0)
        grounds = len(self.roots) + (1 if grounded.any() else 0)
        self.is_forest = m == vertices_in_use - grounds
        if self.is_forest:
            self._prepare_forest(u, vv, adj, grounded.any())
        else:
            reduced = self.incidence[self._keep, :]
            self._lu = splu(sp.csc_array(reduced @ reduced.T), permc_spec="COLAMD")
            self._reduced = reduced

    # -- forests: subtree sums -----------------------------------------------------------
    def _prepare_forest(self, u, vv, adj, has_ground_bottom) -> None:
        k = self.k
        n = k + 2  # cells, ⊥ (k), and a super-root (k + 1) joined to every ground
        grounds = list(self.roots) + ([k] if has_ground_bottom else [])
        rows, cols = adj.nonzero()  # once (each call converts the whole matrix)
        adj = sp.csr_array(
            (np.r_[adj.data, np.ones(2 * len(grounds))],
             (np.r_[rows, np.full(len(grounds), k + 1), grounds],
              np.r_[cols, grounds, np.full(len(grounds), k + 1)])),
            shape=(n, n),
        )
        order, pred = csgraph.breadth_first_order(adj, k + 1, directed=False)
        pos = np.empty(n, dtype=np.intp)
        pos[order] = np.arange(order.size)
        cells = order[(order < k)]  # cells in BFS order (⊥ and the super-root carry no count)
        self._order = cells
        # (I − C) S = x with C[parent, child] = 1, rows/cols in BFS order: upper triangular
        rank = np.empty(k, dtype=np.intp)
        rank[cells] = np.arange(k)
        child = cells
        parent = pred[child]
        real = parent < k
        rows = np.r_[np.arange(k), rank[parent[real]]]
        cols = np.r_[np.arange(k), rank[child[real]]]
        data = np.r_[np.ones(k), -np.ones(int(real.sum()))]
        self._tri = sp.csr_array((data, (rows, cols)), shape=(k, k))
        self._rank = rank
        # subtree sums of whole counts as differences of one running sum: in depth-first preorder a cell's subtree
        # is the run [start, start + size) (the tree is the BFS tree's: a forest has one spanning tree)
        pre = csgraph.depth_first_order(adj, k + 1, directed=False, return_predecessors=False)
        self._preorder = pre[pre < k]
        self._pre_start = np.empty(k, dtype=np.intp)
        self._pre_start[self._preorder] = np.arange(k)
        size = np.empty(k)
        size[cells] = spsolve_triangular(self._tri, np.ones(k), lower=False, unit_diagonal=True)
        self._pre_end = self._pre_start + np.rint(size).astype(np.intp)
        # x_G[e] = S[child] if the edge is stored as (child, parent), −S[child] if as (parent, child)
        child_is_u = pred[u] == vv
        self._edge_child = np.where(child_is_u, u, vv)
        self._edge_sign = np.where(child_is_u, 1.0, -1.0)

    # -- the transform ---------------------------------------------------------------------
    def data(self, x) -> np.ndarray:
        """x_G: a weight per edge with P_G x_G = x off the roots.

        Examples
        --------
        >>> from blowfish_nb import Domain, policy
        >>> t = transform(policy.line(Domain.grid(4)))
        >>> t.data([1.0, 2.0, 3.0, 4.0]).tolist()  # root 0; edges (0,1), (1,2), (2,3)
        [-9.0, -7.0, -4.0]
        """
        x = np.asarray(x, dtype=float)
        if x.shape != (self.k,):
            raise InvalidParameterError(f"x must be a histogram of {self.k} cells, got shape {x.shape}")
        if self.is_forest:
            running = np.concatenate([[0.0], np.cumsum(x[self._preorder])])
            if np.all(x == np.rint(x)) and abs(running).max(initial=0.0) < 2.0**53:
                # whole counts: every partial sum is exact, so the differences are the subtree sums exactly (O(k))
                subtree = running[self._pre_end] - running[self._pre_start]
            else:
                subtree = np.empty(self.k)
                subtree[self._order] = spsolve_triangular(
                    self._tri, x[self._order], lower=False, unit_diagonal=True
                )
            return self._edge_sign * subtree[self._edge_child]
        phi = self._lu.solve(x[self._keep])
        return self._reduced.T @ phi

    def workload(self, W) -> LinearOperator:
        """W_G = W P_G as an operator over the edges (q × |E|)."""
        W = aslinearoperator(W)
        if W.shape[1] != self.k:
            raise InvalidParameterError(f"workload must have {self.k} columns, got shape {W.shape}")
        P = self.incidence
        return LinearOperator(
            (W.shape[0], P.shape[1]),
            matvec=lambda y: W.matvec(P @ np.asarray(y, dtype=float).reshape(-1)),
            rmatvec=lambda z: P.T @ W.rmatvec(np.asarray(z, dtype=float).reshape(-1)),
            dtype=float,
        )

    def range_rows(self, lo, hi) -> sp.csr_array:
        """W_G = W P_G for the ranges [lo, hi], sparse (see :func:`crossing_rows`)."""
        return crossing_rows(lo, hi, self.edges, self.k)

    def component_totals(self, x) -> np.ndarray:
        """n_c for the root of each ungrounded component (public: neighbours share them)."""
        totals = np.bincount(self.component_of_cell, weights=np.asarray(x, dtype=float))
        return totals[self.component_of_cell[self.roots]]

    def offset(self, W, x) -> np.ndarray:
        """c = Σ_c n_c W e_{r_c}, so that W x = W_G x_G + c."""
        e = np.zeros(self.k)
        e[self.roots] = self.component_totals(x)
        return aslinearoperator(W).matvec(e)


def transform(policy: Policy) -> Transform:
    """The transform of ``policy`` (Case I, II or III chosen from its graph).

    A policy whose graph is H^θ (the line, or G^θ's spanning tree: :func:`~.htheta_tree.htheta_theta`) gets
    its transform written out in closed form (:class:`HThetaTransform`, equal to the generic one bit for bit).

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> pol = policy.threshold(Domain.grid(6), 2)
    >>> t = transform(pol)
    >>> x = np.arange(6.0)
    >>> W = workload.prefix(6)
    >>> np.allclose(t.workload(W) @ t.data(x) + t.offset(W, x), W @ x)
    True
    """
    refuse_constrained(policy, "the transform")
    theta = htheta_theta(policy)
    if theta is not None:
        return HThetaTransform(policy, theta)
    return Transform(policy)


class HThetaTransform(Transform):
    """:class:`Transform` of a policy whose graph is H^θ (k ≥ 3), its arrays written out (:mod:`.htheta_tree`).

    The generic forest transform (breadth- and depth-first orders, a triangular
    solve, sparse conversions) took 0.9–2.3 s at k = 10⁶ for a tree whose shape
    is known. Grounded at cell 0 (the generic root: the smallest cell of the
    one component), x_H on edge a = (a, up(a)) is +x_a when the lower end a is
    the child — a non-red a ≠ 0 — and otherwise −(the sum of x over the cells
    after a): for a red a the subtree beyond r_{b+1} is every later block,
    and for a = 0 the rest of the tree is every other cell. Whole counts whose
    absolute sum is below 2⁵³ make every partial sum exact, so this equals the
    generic transform's exact subtree sums bit for bit; any other x goes to the
    generic transform (built then). Tested array for array against
    :class:`Transform` on small domains (k ≤ 19, θ from 1 to past k).
    """

    def __init__(self, policy: Policy, theta: int, written=None):  # noqa: D107 — Transform.__init__ is not called
        k = policy.domain.size
        self.policy = policy
        self._generic = None
        self.k = k
        self.edges, red_of = written if written is not None else htheta_edges(k, theta)
        m = k - 1
        self.roots = np.zeros(1, dtype=np.intp)
        self.component_of_cell = np.zeros(k, dtype=np.intp)
        self._keep = np.ones(k, dtype=bool)
        self._keep[0] = False
        self.is_forest = True
        # the incidence matrix in CSC form: column a holds +1 at row a and −1 at row up(a) (a < up(a): sorted rows)
        self.incidence = sp.csc_array((np.tile([1.0, -1.0], m), self.edges.reshape(-1),
                                       np.arange(0, 2 * m + 1, 2)), shape=(k, m))
        lower = self.edges[:, 0]
        self._child_is_lower = (red_of[:-1] != lower) & (lower != 0)

    def data(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if x.shape != (self.k,):
            raise InvalidParameterError(f"x must be a histogram of {self.k} cells, got shape {x.shape}")
        if not (np.all(x == np.rint(x)) and np.abs(x).sum() < 2.0**53):
            if self._generic is None:
                self._generic = Transform(self.policy)
            return self._generic.data(x)
        running = np.concatenate([[0.0], np.cumsum(x)])
        k = self.k
        # edge a = (a, up(a)): x_a (exactly, as a difference of exact partial sums) when a is the child, else
        # −(the sum over the cells after a); negation is the generic transform's product by −1.0, bit for bit
        out = np.subtract(running[k], running[1:k])
        np.negative(out, out=out)
        own = np.subtract(running[1:k], running[: k - 1])
        np.copyto(out, own, where=self._child_is_lower)
        return out


#: longest edge (in cell order) for which ranges are scanned near their ends rather than against every edge
WINDOW_SPAN = 64


def crossing_rows(lo, hi, edges: np.ndarray, k: int) -> sp.csr_array:
    """W P_G for the ranges [lo, hi]: +1 on edges (a, b) with only a inside, −1 with only b inside.

    Examples
    --------
    >>> crossing_rows(np.array([1]), np.array([2]), np.array([[0, 1], [1, 2], [2, 3]]), 4).toarray().tolist()
    [[-1.0, 0.0, 1.0]]
    """
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    if len(edges) and edges.min() >= 0 and np.abs(edges[:, 0] - edges[:, 1]).max() <= WINDOW_SPAN:
        return _windowed_rows(lo, hi, edges, k)
    u, v = edges[:, 0], edges[:, 1]
    if lo.size * len(u) > 500_000_000:
        raise InvalidParameterError(
            f"the transformed rows of {lo.size:,} ranges over {len(u):,} edges are too costly to tabulate"
        )
    parts = [sp.csr_array((0, len(u)))]
    step = max(1, 2_000_000 // max(1, len(u)))
    for s in range(0, lo.size, step):
        a, b = lo[s : s + step, None], hi[s : s + step, None]
        in_u = (u[None, :] >= a) & (u[None, :] <= b)
        in_v = (v[None, :] >= a) & (v[None, :] <= b) & (v[None, :] != BOTTOM)
        parts.append(sp.csr_array(in_u.astype(np.int8) - in_v.astype(np.int8), dtype=float))
    return sp.csr_array(sp.vstack(parts))


def crossing_counts(lo, hi, edges: np.ndarray, k: int) -> np.ndarray:
    """Per range, the number of edges with exactly one end inside: the squared row norms of :func:`crossing_rows`.

    Counts directly (no sparse matrix) when the edges are long, which is
    what the Transformed mechanism's error on a complete or star-shaped tree needs.

    Examples
    --------
    >>> crossing_counts(np.array([1]), np.array([2]), np.array([[0, 1], [1, 2], [2, 3]]), 4).tolist()
    [2.0]
    """
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    if len(edges) and edges.min() >= 0 and np.abs(edges[:, 0] - edges[:, 1]).max() <= WINDOW_SPAN:
        rows = _windowed_rows(lo, hi, edges, k)
        return np.asarray(rows.multiply(rows).sum(axis=1), dtype=float).reshape(-1)
    to_bottom = edges[:, 1] == BOTTOM if len(edges) else np.zeros(0, dtype=bool)
    if to_bottom.all():  # a star to ⊥ (the dp spanning tree): an edge (u, ⊥) crosses exactly when u is inside
        ends = np.sort(edges[:, 0])
        return (np.searchsorted(ends, hi, side="right") - np.searchsorted(ends, lo, side="left")).astype(float)
    u, v = edges[:, 0], edges[:, 1]
    if lo.size * len(u) > 500_000_000:
        raise InvalidParameterError(
            f"the crossing counts of {lo.size:,} ranges over {len(u):,} edges are too costly to tabulate"
        )
    out = np.zeros(lo.size)
    step = max(1, 2_000_000 // max(1, len(u)))
    for s in range(0, lo.size, step):
        a, b = lo[s : s + step, None], hi[s : s + step, None]
        in_u = (u[None, :] >= a) & (u[None, :] <= b)
        in_v = (v[None, :] >= a) & (v[None, :] <= b) & (v[None, :] != BOTTOM)
        out[s : s + step] = np.count_nonzero(in_u != in_v, axis=1)
    return out


def _windowed_rows(lo, hi, edges, k) -> sp.csr_array:
    """crossing_rows for short edges between cells: only edges whose lower end lies within the longest
    edge length of a range boundary can cross it, so the candidates per query are few."""
    a, b = edges[:, 0], edges[:, 1]
    lower = np.minimum(a, b)
    span = int((np.abs(a - b)).max()) if len(edges) else 0
    # edges by lower end: a stable sort is the identity when they come sorted (normal order, H^θ: one O(k) check
    # instead of the sort); ptr[i] = #{lower < i}, as searchsorted on the sorted ends gives it, by one count
    by_lower = np.arange(len(lower)) if np.all(lower[1:] >= lower[:-1]) else np.argsort(lower, kind="stable")
    ptr = np.zeros(k + 1, dtype=np.intp)
    np.cumsum(np.bincount(lower, minlength=k), out=ptr[1:])
    degree = int(np.diff(ptr).max()) if len(edges) else 0
    rows, cols, vals = [], [], []
    for boundary, floor in ((lo, 0), (hi + 1, lo)):  # lower end left of the range, or inside it
        for d in range(1, span + 1):
            start = boundary - d
            ok = (start >= floor) & (start < k)
            for j in range(degree):
                idx = np.flatnonzero(ok)
                slot = ptr[start[idx]] + j
                has = slot < ptr[start[idx] + 1]
                idx, slot = idx[has], slot[has]
                e = by_lower[slot]
                in_a = (a[e] >= lo[idx]) & (a[e] <= hi[idx])
                in_b = (b[e] >= lo[idx]) & (b[e] <= hi[idx])
                cross = in_a != in_b
                rows.append(idx[cross])
                cols.append(e[cross])
                vals.append(np.where(in_a[cross], 1.0, -1.0))
    rows, cols, vals = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    # the two scans look at disjoint lower ends (left of lo, inside the range): no edge twice
    return sp.csr_array((vals, (rows, cols)), shape=(lo.size, len(edges)))
