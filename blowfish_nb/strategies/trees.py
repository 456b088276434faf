"""Tree strategies: a count per node of a b-ary tree over the cells, and one such tree per block.

Hay et al. 2010 (the hierarchical strategy, :class:`Tree`) and He et al.
2014, §7.2 (the H nodes of Ordered Hierarchical, :class:`BlockTrees`). A cell
lies in exactly one node per level, so ‖A e_u‖₁ is the number of levels and
‖A e_u − A e_v‖₁ counts the levels at which u and v part: policy
sensitivities in O(1) per edge.
"""

from __future__ import annotations

import numpy as np

from ..operators import Workload

__all__ = ["Tree", "BlockTrees"]


class Tree(Workload):
    """The hierarchical strategy: one count per node of a b-ary tree over the cells (Hay et al. 2010).

    (Named ``Tree`` so that it does not clash with the mechanism that
    measures it, :class:`blowfish_nb.mechanisms.Hierarchical`.)

    Level 0 holds the k cells, level l the blocks ``u // b**l``, up to a
    single root; every node is a row. A cell lies in one node per level, so
    ‖A e_u‖₁ = levels and ‖A e_u − A e_v‖₁ = 2·(levels where u, v are apart).

    Examples
    --------
    >>> H = Tree(4, 2)
    >>> H.shape, (H @ np.array([1.0, 2.0, 3.0, 4.0])).tolist()
    ((7, 4), [1.0, 2.0, 3.0, 4.0, 3.0, 7.0, 10.0])
    >>> H.column_differences(np.array([0, 1]), np.array([1, 2])).tolist()
    [2.0, 4.0]
    """

    name = "hierarchical"
    binary = True
    diameter_at_extremes = True

    def __init__(self, k: int, branching: int = 2):
        self.k, self.branching = k, branching
        sizes = [k]
        while sizes[-1] > 1:
            sizes.append(-(-sizes[-1] // branching))
        self.level_sizes = tuple(sizes)
        super().__init__((sum(sizes), k))

    @property
    def levels(self) -> int:
        """Number of levels, leaves and root included."""
        return len(self.level_sizes)

    def _matvec(self, x):
        level = np.asarray(x, dtype=float).reshape(-1)
        out = [level]
        for _ in self.level_sizes[1:]:
            level = np.add.reduceat(level, np.arange(0, level.size, self.branching))
            out.append(level)
        return np.concatenate(out)

    def _rmatvec(self, y):
        y = np.asarray(y, dtype=float).reshape(-1)
        cells = np.arange(self.k)
        out = np.zeros(self.k)
        offset = 0
        for level, size in enumerate(self.level_sizes):
            out += y[offset + cells // self.branching**level]
            offset += size
        return out

    def apart_levels(self, u, v) -> np.ndarray:
        """Number of levels at which cells u and v lie in different nodes."""
        u, v = np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64)
        b = self.branching
        if b & (b - 1) == 0:  # b = 2^m: levels apart = ceil(bit_length(u XOR v) / m)
            bits = np.frexp((u ^ v).astype(float))[1]
            m = b.bit_length() - 1
            return -(-bits // m)
        count = np.zeros(u.shape, dtype=np.int64)
        for level in range(self.levels):
            count += (u // b**level) != (v // b**level)
        return count

    def column_differences(self, u, v):
        return 2.0 * self.apart_levels(u, v)

    def column_norms(self, u):
        return np.full(np.shape(u), float(self.levels))

    def column_overlaps(self, u, v):
        return (self.levels - self.apart_levels(u, v)).astype(float)

    def dense(self):
        self._check_dense()
        rows = []
        for level in range(self.levels):
            blocks = np.arange(self.k) // self.branching**level
            rows.append((blocks[None, :] == np.arange(self.level_sizes[level])[:, None]).astype(float))
        return np.vstack(rows)


class BlockTrees(Workload):
    """A complete f-ary tree over every block of θ consecutive cells (padded to f^h), block-diagonal.

    The H nodes of He et al.'s Ordered Hierarchical structure (§7.2).

    Examples
    --------
    >>> H = BlockTrees(6, 3, 2)  # two blocks of 3 cells, each a binary tree over 4 (padded) cells
    >>> H.shape, H.column_differences(np.array([0, 2]), np.array([1, 3])).tolist()
    ((14, 6), [2.0, 6.0])
    """

    binary = True
    diameter_at_extremes = True

    def __init__(self, k: int, theta: int, branching: int):
        self.k, self.theta = k, theta
        size = 1
        while size < theta:
            size *= branching
        self.tree = Tree(size, branching)
        self.blocks = -(-k // theta)
        super().__init__((self.blocks * self.tree.shape[0], k))

    def _matvec(self, x):
        X = np.zeros((self.blocks, self.tree.shape[1]))
        x = np.asarray(x, dtype=float).reshape(-1)
        cells = np.arange(self.k)
        X[cells // self.theta, cells % self.theta] = x
        b = self.tree.branching
        levels = [X.reshape(self.blocks, -1, b**l).sum(axis=2) for l in range(self.tree.levels)]
        return np.concatenate(levels, axis=1).reshape(-1)

    def _rmatvec(self, y):
        Y = np.asarray(y, dtype=float).reshape(self.blocks, -1)
        cells = np.arange(self.k)
        back = np.stack([self.tree.rmatvec(row) for row in Y])
        return back[cells // self.theta, cells % self.theta]

    def column_differences(self, u, v):
        u, v = np.asarray(u), np.asarray(v)
        same = u // self.theta == v // self.theta
        inside = self.tree.column_differences(u % self.theta, v % self.theta)
        return np.where(same, inside, 2.0 * self.tree.levels)

    def column_norms(self, u):
        return np.full(np.shape(u), float(self.tree.levels))

    def column_overlaps(self, u, v):
        u, v = np.asarray(u), np.asarray(v)
        same = u // self.theta == v // self.theta
        return np.where(same, self.tree.column_overlaps(u % self.theta, v % self.theta), 0.0)

    def dense(self):
        self._check_dense()
        return np.stack([self._matvec(e) for e in np.eye(self.k)], axis=1)
