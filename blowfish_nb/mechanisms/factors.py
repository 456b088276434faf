"""One-dimensional strategies of the matrix mechanism, with fast least squares and exact variances.

A factor measures a 1-D domain padded to a convenient size K ≥ k (padded
cells hold zero and no policy edge touches them). For a range [lo, hi] with
indicator w, ``range_variances`` returns w (AᵀA)⁻¹ wᵀ, so that the expected
squared error of the least-squares answer is 2 (Δ/ε)² times it. On a grid the
strategy is the Kronecker product of factors: (A₁⊗A₂)⁺ = A₁⁺⊗A₂⁺ and a box is
w₁⊗w₂, so least squares and variances factorise over the axes.

The b-ary tree uses the block algebra: with B_l the block-diagonal all-ones
matrix of blocks b^l, B_l B_m = b^{min(l,m)} B_{max(l,m)}, AᵀA = Σ_l B_l and its
inverse is again Σ_l c_l B_l (L + 1 coefficients from a small linear system).
Least squares over the tree is Hay et al.'s consistent estimate.
"""

from __future__ import annotations

import numpy as np

from ..operators import Identity, Prefix, Workload
from ..strategies import Haar, Tree

__all__ = ["Factor", "IdentityFactor", "PrefixFactor", "TreeFactor", "HaarFactor", "block_inverse", "overlap_squares"]


class Factor:
    """A 1-D strategy family."""

    def padded(self, k: int) -> int:
        """Number of cells measured (k, or the next full tree size)."""
        return k

    def operator(self, K: int) -> Workload:
        """The strategy over K cells."""
        raise NotImplementedError

    def lstsq(self, A: Workload, y: np.ndarray) -> np.ndarray:
        """x̂ = A⁺ y for one measured vector."""
        return A.solve(y)

    def lstsq_rows(self, A: Workload, Y: np.ndarray, overwrite: bool = False) -> np.ndarray:
        """A⁺ applied to every row of Y (one measured vector per row); a loop unless a factor vectorises it."""
        return np.stack([self.lstsq(A, row) for row in np.asarray(Y, dtype=float)]) if len(Y) else np.zeros((0, A.shape[1]))

    def inverse_gram(self, A: Workload) -> np.ndarray:
        """(AᵀA)⁻¹ = A⁺A⁺ᵀ as a dense K×K matrix, from least squares on the unit measurements (one axis only).

        No linear system is solved: each factor's own least squares is applied
        to the rows of the identity.

        Examples
        --------
        >>> from blowfish_nb.operators import Prefix
        >>> PrefixFactor().inverse_gram(Prefix(3)).tolist()  # (PᵀP)⁻¹ is tridiagonal
        [[1.0, -1.0, 0.0], [-1.0, 2.0, -1.0], [0.0, -1.0, 2.0]]
        """
        pinv_t = self.lstsq_rows(A, np.eye(A.shape[0]), overwrite=True)  # row j: A⁺ e_j
        return pinv_t.T @ pinv_t

    def range_variances(self, A: Workload, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """w (AᵀA)⁻¹ wᵀ for the ranges [lo, hi]."""
        raise NotImplementedError


class IdentityFactor(Factor):
    def operator(self, K):
        return Identity(K)

    def lstsq_rows(self, A, Y, overwrite=False):
        return np.asarray(Y, dtype=float) if overwrite else np.array(Y, dtype=float)

    def inverse_gram(self, A):
        return np.eye(A.shape[1])

    def range_variances(self, A, lo, hi):
        return (hi - lo + 1).astype(float)


class PrefixFactor(Factor):
    def operator(self, K):
        return Prefix(K)

    def lstsq_rows(self, A, Y, overwrite=False):
        return np.diff(np.asarray(Y, dtype=float), axis=1, prepend=0.0)

    def range_variances(self, A, lo, hi):
        # a range is a difference of two prefix sums (one when it starts at 0)
        return np.where(lo == 0, 1.0, 2.0)


class TreeFactor(Factor):
    """The b-ary hierarchical strategy on a complete tree over b^L ≥ k cells."""

    def __init__(self, branching: int = 2):
        self.branching = branching

    def padded(self, k):
        K = 1
        while K < k:
            K *= self.branching
        return K

    def operator(self, K):
        return Tree(K, self.branching)

    def _coefficients(self, A: Tree) -> np.ndarray:
        return block_inverse(np.ones(A.levels), self.branching)

    def lstsq(self, A, y):
        return self.lstsq_rows(A, np.asarray(y, dtype=float)[None, :])[0]

    def lstsq_rows(self, A: Tree, Y: np.ndarray, overwrite: bool = False) -> np.ndarray:
        """Least squares for every row of Y (one measured tree per row), vectorised, O(K) per row.

        Aᵀy (each cell: the sum of its ancestors' measurements) and
        (AᵀA)⁻¹ = Σ_l c_l B_l are applied level by level. The cell level,
        the largest, is touched only twice: its block sums are
        blocksum(y₀) + b·v₁ (v_l: the ancestors' sums at level l), and the
        answer there is c₀·y₀ + repeat(c₀·v₁ + out₁). ``overwrite=True``
        writes that answer into Y's cell columns (no new array) and returns a
        view of them.
        """
        b = self.branching
        c = self._coefficients(A)
        bounds = np.r_[0, np.cumsum(A.level_sizes)]  # level 0 (the cells) first, the root last
        levels = len(A.level_sizes)
        if levels == 1:
            return Y * c[0] if not overwrite else np.multiply(Y, c[0], out=Y)

        def level(l):
            return Y[:, bounds[l] : bounds[l + 1]]

        # v₁: every level-1 node's sum of its own and its ancestors' measurements.
        # Strided slices (child j of every node) keep numpy's inner loops long.
        v = level(levels - 1)
        for l in range(levels - 2, 0, -1):
            below = level(l)
            nxt = np.empty_like(below)
            for j in range(b):
                np.add(below[:, j::b], v, out=nxt[:, j::b])
            v = nxt
        cells = level(0)
        first = cells[:, 0::b].copy()
        for j in range(1, b):
            first += cells[:, j::b]
        first += b * v  # Σ over each level-1 block of v₀ = its cells' y + b·v₁
        sums = [None, first]
        for l in range(2, levels):
            x = sums[-1]
            up = x[:, 0::b].copy()
            for j in range(1, b):
                up += x[:, j::b]
            sums.append(up)
        out = c[-1] * sums[-1]
        for l in range(levels - 2, 0, -1):
            here = sums[l]
            here *= c[l]
            for j in range(b):
                here[:, j::b] += out
            out = here
        out += c[0] * v  # what every cell of a level-1 block receives besides c₀·y₀
        est = cells if overwrite else np.empty_like(cells)
        for j in range(b):
            np.multiply(cells[:, j::b], c[0], out=est[:, j::b])
            est[:, j::b] += out
        return est

    def range_variances(self, A, lo, hi):
        c = self._coefficients(A)
        return sum(coef * overlap_squares(lo, hi, self.branching**level) for level, coef in enumerate(c))


class HaarFactor(Factor):
    """Privelet: the Haar wavelet strategy over 2^L ≥ k cells."""

    def padded(self, k):
        return 1 << max(0, (k - 1).bit_length())

    def operator(self, K):
        return Haar(K)

    def lstsq_rows(self, A, Y, overwrite=False):
        """A⁻¹ on every row: scale by 1/diag(AAᵀ), then the inverse wavelet transform, level by level."""
        Y = np.asarray(Y, dtype=float) / A.row_norms_sq()
        x, offset = Y[:, :1], 1
        for level in range(A.levels, 0, -1):
            count = A.shape[0] >> level
            detail = Y[:, offset : offset + count]
            offset += count
            x = np.stack([x + detail, x - detail], axis=2).reshape(len(Y), -1)
        return x

    def range_variances(self, A, lo, hi):
        K = A.shape[1]
        length = (hi - lo + 1).astype(float)
        total = (length / K) ** 2  # the total row: (w·row)² / d² with d = K
        for level in range(1, A.levels + 1):
            size, half = 2**level, 2 ** (level - 1)
            first, last = lo // size, hi // size
            total += _haar_node(lo, hi, first * size, half) ** 2 / size**2
            other = last != first
            total += np.where(other, _haar_node(lo, hi, last * size, half) ** 2 / size**2, 0.0)
        return total


def _haar_node(lo, hi, start, half):
    """(cells of [lo, hi] in the node's left half) − (in its right half)."""
    left = np.clip(np.minimum(hi, start + half - 1) - np.maximum(lo, start) + 1, 0, None)
    right = np.clip(np.minimum(hi, start + 2 * half - 1) - np.maximum(lo, start + half) + 1, 0, None)
    return (left - right).astype(float)


def block_inverse(weights_sq: np.ndarray, b: int) -> np.ndarray:
    """Coefficients c with (Σ_l a_l B_l)(Σ_m c_m B_m) = I, for a_l = ``weights_sq[l]`` (levels 0..L).

    Examples
    --------
    >>> block_inverse(np.ones(2), 2).round(4).tolist()  # (I + B_1)^{-1} on blocks of 2
    [1.0, -0.3333]
    """
    a = np.asarray(weights_sq, dtype=float)
    n = a.size
    T = np.zeros((n, n))
    for l in range(n):
        for m in range(n):
            T[max(l, m), m] += a[l] * b ** min(l, m)
    rhs = np.zeros(n)
    rhs[0] = 1.0
    return np.linalg.solve(T, rhs)


def overlap_squares(lo, hi, size: int) -> np.ndarray:
    """Σ over blocks of ``size`` consecutive cells of |[lo, hi] ∩ block|² (vectorised over ranges).

    Examples
    --------
    >>> overlap_squares(np.array([1]), np.array([6]), 4).tolist()  # blocks 0-3, 4-7: 3² + 3²
    [18.0]
    """
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    first, last = lo // size, hi // size
    same = first == last
    head = (first + 1) * size - lo
    tail = hi - last * size + 1
    full = np.maximum(last - first - 1, 0)
    split = head.astype(float) ** 2 + tail.astype(float) ** 2 + full * float(size) ** 2
    return np.where(same, (hi - lo + 1).astype(float) ** 2, split)
