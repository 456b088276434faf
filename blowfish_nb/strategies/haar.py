"""Privelet's strategy: the unnormalised Haar wavelet (Xiao et al. 2010)."""

from __future__ import annotations

import numpy as np

from ..exceptions import InvalidParameterError
from ..operators import Workload

__all__ = ["Haar"]


class Haar(Workload):
    """Privelet's strategy: the unnormalised Haar wavelet over k = 2^L cells (Xiao et al.).

    Row 0 is the total; every node of the binary tree over the cells with 2^l
    leaves (l ≥ 1) has a row +1 on its left half and −1 on its right half. This
    is Privelet's weighted coefficient matrix: every column has L + 1 entries
    ±1, and the rows are orthogonal (A Aᵀ = diag(k, node sizes)), so
    A⁻¹ = Aᵀ diag(1/d) is an O(k) inverse wavelet transform.

    Examples
    --------
    >>> A = Haar(4)
    >>> A.dense().astype(int).tolist()
    [[1, 1, 1, 1], [1, 1, -1, -1], [1, -1, 0, 0], [0, 0, 1, -1]]
    >>> bool(np.allclose(A.solve(A @ np.array([3.0, 1, 4, 1])), [3, 1, 4, 1]))
    True
    """

    name = "haar"
    diameter_at_extremes = True

    def __init__(self, k: int):
        levels = int(k).bit_length() - 1
        if k < 1 or 2**levels != k:
            raise InvalidParameterError(f"Haar needs a power-of-two number of cells, got {k!r}")
        self.levels = levels
        super().__init__((k, k))

    def _matvec(self, x):
        x = np.asarray(x, dtype=float).reshape(-1)
        out, sums = [], x
        for _ in range(self.levels):  # bottom-up: level-1 nodes first
            pairs = sums.reshape(-1, 2)
            out.append(pairs[:, 0] - pairs[:, 1])
            sums = pairs.sum(axis=1)
        out.append(sums)  # the total
        return np.concatenate(out[::-1])

    def row_norms_sq(self) -> np.ndarray:
        """Diagonal of A Aᵀ: k for the total, the node's size for a detail row."""
        k = self.shape[0]
        sizes = [np.array([float(k)])]
        for l in range(self.levels, 0, -1):
            sizes.append(np.full(k >> l, float(2**l)))
        return np.concatenate(sizes)

    def _rmatvec(self, y):
        y = np.asarray(y, dtype=float).reshape(-1)
        x = y[:1].copy()
        offset = 1
        for l in range(self.levels, 0, -1):
            count = self.shape[0] >> l
            detail = y[offset : offset + count]
            offset += count
            x = np.column_stack([x + detail, x - detail]).reshape(-1)
        return x

    def solve(self, y):
        return self._rmatvec(np.asarray(y, dtype=float) / self.row_norms_sq())

    def column_differences(self, u, v):
        # the total cancels; levels below the LCA differ in node (2 each), the LCA splits u from v (2)
        u, v = np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64)
        return 2.0 * np.frexp((u ^ v).astype(float))[1]

    def column_norms(self, u):
        return np.full(np.shape(u), float(self.levels + 1))

    def dense(self):
        self._check_dense()
        return np.stack([self._matvec(e) for e in np.eye(self.shape[1])], axis=1)
