"""Linear query workloads and strategies as structured operators.

A workload ``W`` (q×k) asks for ``W x`` where ``x`` is the histogram over k
cells; a strategy ``A`` is what a mechanism measures with noise. Both are
:class:`scipy.sparse.linalg.LinearOperator` s that know their structure:
``column_differences(u, v)`` = ‖A e_u − A e_v‖₁ and ``column_norms(u)`` =
‖A e_u‖₁ give policy-specific sensitivities by edge differences (DESIGN §3)
without forming the matrix; ``solve`` inverts a square strategy cheaply;
``dense()`` is for tests and tiny domains.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from scipy.sparse.linalg import LinearOperator

from .exceptions import InvalidParameterError

__all__ = [
    "Workload", "Identity", "Prefix", "Hierarchical", "Haar", "Kron", "BlockTrees", "Stack",
    "Total", "Matrix", "identity", "prefix", "hierarchical", "haar", "kron", "marginal", "matrix",
    "all_ranges", "random_ranges", "ranges_2d",
]

DENSE_LIMIT = 4096


class Workload(LinearOperator):
    """A structured linear operator over a k-cell histogram."""

    name: str = "workload"
    #: all entries are 0 or 1 and ``column_overlaps`` is available (Kronecker products need it)
    binary: bool = False
    #: the identity (the histogram): policies answer its sensitivity in closed form without importing this module
    is_identity: bool = False

    def __init__(self, shape: tuple[int, int]):
        super().__init__(dtype=np.float64, shape=shape)

    def column_differences(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """‖A e_u − A e_v‖₁ for each pair of cells (vectorised)."""
        raise NotImplementedError

    def column_norms(self, u: np.ndarray) -> np.ndarray:
        """‖A e_u‖₁ for each cell (vectorised)."""
        raise NotImplementedError

    def column_overlaps(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """⟨A e_u, A e_v⟩ for each pair of cells (binary operators only)."""
        raise NotImplementedError

    def solve(self, y: np.ndarray) -> np.ndarray:
        """``A⁻¹ y`` for an invertible square strategy."""
        raise NotImplementedError

    def dense(self) -> np.ndarray:
        """The matrix itself; only for tests and k ≤ 4096."""
        raise NotImplementedError

    def _check_dense(self) -> None:
        if max(self.shape) > DENSE_LIMIT:
            raise InvalidParameterError(
                f"dense() is for tests and domains of at most {DENSE_LIMIT} cells, got shape {self.shape}"
            )


class Identity(Workload):
    """The histogram: one query per cell.

    Examples
    --------
    >>> I = Identity(3)
    >>> (I @ np.array([1.0, 2.0, 3.0])).tolist(), I.column_differences(np.array([0]), np.array([2])).tolist()
    ([1.0, 2.0, 3.0], [2.0])
    """

    is_identity = True

    name = "histogram"
    binary = True
    diameter_at_extremes = True

    def __init__(self, k: int):
        super().__init__((k, k))

    def _matvec(self, x):
        return np.asarray(x, dtype=float).reshape(-1).copy()

    def _rmatvec(self, y):
        return np.asarray(y, dtype=float).reshape(-1).copy()

    def column_differences(self, u, v):
        return np.where(np.asarray(u) == np.asarray(v), 0.0, 2.0)

    def column_norms(self, u):
        return np.ones(np.shape(u), dtype=float)

    def column_overlaps(self, u, v):
        return (np.asarray(u) == np.asarray(v)).astype(float)

    def solve(self, y):
        return np.asarray(y, dtype=float).copy()

    def dense(self):
        self._check_dense()
        return np.eye(self.shape[1])


class Total(Workload):
    """One query: the sum of all cells (the factor a marginal uses for the attributes it drops).

    Examples
    --------
    >>> (Total(3) @ np.array([1.0, 2.0, 3.0])).tolist()
    [6.0]
    """

    name = "total"
    binary = True

    def __init__(self, k: int):
        super().__init__((1, k))

    def _matvec(self, x):
        return np.array([np.sum(x)], dtype=float)

    def _rmatvec(self, y):
        return np.full(self.shape[1], float(np.asarray(y).reshape(-1)[0]))

    def column_differences(self, u, v):
        return np.zeros(np.shape(u), dtype=float)

    def column_norms(self, u):
        return np.ones(np.shape(u), dtype=float)

    def column_overlaps(self, u, v):
        return np.ones(np.shape(u), dtype=float)

    def dense(self):
        self._check_dense()
        return np.ones((1, self.shape[1]))


class Prefix(Workload):
    """Cumulative counts: row i sums cells 0..i (the Ordered mechanism's strategy).

    Examples
    --------
    >>> P = Prefix(4)
    >>> (P @ np.array([1.0, 0.0, 2.0, 1.0])).tolist()
    [1.0, 1.0, 3.0, 4.0]
    >>> P.column_differences(np.array([0, 1]), np.array([3, 2])).tolist()
    [3.0, 1.0]
    """

    name = "cumulative"
    binary = True
    diameter_at_extremes = True

    def __init__(self, k: int):
        super().__init__((k, k))

    def _matvec(self, x):
        return np.cumsum(np.asarray(x, dtype=float).reshape(-1))

    def _rmatvec(self, y):
        return np.cumsum(np.asarray(y, dtype=float).reshape(-1)[::-1])[::-1]

    def column_differences(self, u, v):
        # A e_u has ones in rows u..k-1, so A e_u − A e_v is ±1 on |u − v| rows.
        return np.abs(np.asarray(u) - np.asarray(v)).astype(float)

    def column_norms(self, u):
        return (self.shape[0] - np.asarray(u)).astype(float)

    def column_overlaps(self, u, v):
        return (self.shape[0] - np.maximum(u, v)).astype(float)

    def solve(self, y):
        return np.diff(np.asarray(y, dtype=float), prepend=0.0)

    def dense(self):
        self._check_dense()
        return np.tril(np.ones(self.shape))


class Hierarchical(Workload):
    """The hierarchical strategy: one count per node of a b-ary tree over the cells (Hay et al.).

    Level 0 holds the k cells, level l the blocks ``u // b**l``, up to a
    single root; every node is a row. A cell lies in one node per level, so
    ‖A e_u‖₁ = levels and ‖A e_u − A e_v‖₁ = 2·(levels where u, v are apart).

    Examples
    --------
    >>> H = Hierarchical(4, 2)
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
        self.tree = Hierarchical(size, branching)
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


class Stack(Workload):
    """Weighted row blocks [w₁A₁; w₂A₂; …]: column L1 norms and differences add up with the weights."""

    def __init__(self, parts, weights):
        self.parts, self.weights = tuple(parts), tuple(float(w) for w in weights)
        self.diameter_at_extremes = all(getattr(p, "diameter_at_extremes", False) for p in self.parts)
        super().__init__((sum(p.shape[0] for p in self.parts), self.parts[0].shape[1]))

    def _matvec(self, x):
        return np.concatenate([w * p.matvec(x) for p, w in zip(self.parts, self.weights)])

    def _rmatvec(self, y):
        out, start = 0.0, 0
        for p, w in zip(self.parts, self.weights):
            out = out + w * p.rmatvec(y[start : start + p.shape[0]])
            start += p.shape[0]
        return out

    def column_differences(self, u, v):
        return sum(w * p.column_differences(u, v) for p, w in zip(self.parts, self.weights))

    def column_norms(self, u):
        return sum(w * p.column_norms(u) for p, w in zip(self.parts, self.weights))

    def dense(self):
        return np.vstack([w * p.dense() for p, w in zip(self.parts, self.weights)])


class Kron(Workload):
    """Kronecker product A₁ ⊗ A₂ ⊗ … of binary strategies over a C-ordered multi-attribute domain.

    For 0/1 matrices ‖A e_u − A e_v‖₁ = ‖A e_u‖₁ + ‖A e_v‖₁ − 2⟨A e_u, A e_v⟩, and both
    terms factor over the attributes, so sensitivities stay O(1) per edge.

    Examples
    --------
    >>> K = Kron([Prefix(2), Prefix(3)])
    >>> K.shape, K.column_differences(np.array([0]), np.array([4])).tolist()
    ((6, 6), [4.0])
    """

    name = "kron"

    def __init__(self, factors):
        self.factors = tuple(factors)
        self.binary = all(f.binary for f in self.factors)
        self.is_identity = all(f.is_identity for f in self.factors)
        self.cell_shape = tuple(f.shape[1] for f in self.factors)
        rows = int(np.prod([f.shape[0] for f in self.factors]))
        super().__init__((rows, int(np.prod(self.cell_shape))))

    def _apply(self, x, transpose):
        t = np.asarray(x, dtype=float).reshape(
            tuple(f.shape[0] for f in self.factors) if transpose else self.cell_shape
        )
        for axis, f in enumerate(self.factors):
            t = np.moveaxis(t, axis, -1)
            flat = t.reshape(-1, t.shape[-1])
            res = np.stack([(f.rmatvec(r) if transpose else f.matvec(r)) for r in flat]) if flat.size else flat
            t = np.moveaxis(res.reshape(t.shape[:-1] + (res.shape[-1],)), -1, axis)
        return t.reshape(-1)

    def _matvec(self, x):
        return self._apply(x, transpose=False)

    def _rmatvec(self, y):
        return self._apply(y, transpose=True)

    def _coords(self, u):
        return np.unravel_index(np.asarray(u, dtype=np.int64), self.cell_shape)

    def column_norms(self, u):
        out = np.ones(np.shape(u))
        for f, c in zip(self.factors, self._coords(u)):
            out = out * f.column_norms(c)
        return out

    def column_overlaps(self, u, v):
        out = np.ones(np.shape(u))
        for f, a, b in zip(self.factors, self._coords(u), self._coords(v)):
            out = out * f.column_overlaps(a, b)
        return out

    def column_differences(self, u, v):
        # cells that differ in one coordinate: the other factors contribute their column norms
        cu, cv = self._coords(u), self._coords(v)
        differ = np.stack([a != b for a, b in zip(cu, cv)])
        single = differ.sum(axis=0) <= 1
        out = np.empty(np.shape(u), dtype=float)
        if single.any():
            prod = np.ones(int(single.sum()))
            for f, a, b, d in zip(self.factors, cu, cv, differ):
                a, b, d = a[single], b[single], d[single]
                prod *= np.where(d, f.column_differences(a, b), f.column_norms(a))
            out[single] = prod
        if (~single).any():
            uu, vv = np.asarray(u)[~single], np.asarray(v)[~single]
            if self.binary:
                out[~single] = self.column_norms(uu) + self.column_norms(vv) - 2.0 * self.column_overlaps(uu, vv)
            else:
                out[~single] = self._explicit_differences(uu, vv)
        out[np.asarray(u) == np.asarray(v)] = 0.0  # the same cell: no difference (not the product of norms)
        return out

    def _explicit_differences(self, u, v) -> np.ndarray:
        """‖A e_u − A e_v‖₁ from the columns themselves (non-binary factors, cells apart in several axes)."""
        mats = [f.dense() for f in self.factors]
        cu, cv = self._coords(u), self._coords(v)
        out = np.empty(len(u))
        step = max(1, 4_000_000 // max(1, self.shape[0]))
        for s in range(0, len(u), step):
            cols = []
            for coords in (cu, cv):
                col = mats[0][:, coords[0][s : s + step]].T
                for M, c in zip(mats[1:], coords[1:]):
                    col = (col[:, :, None] * M[:, c[s : s + step]].T[:, None, :]).reshape(col.shape[0], -1)
                cols.append(col)
            out[s : s + step] = np.abs(cols[0] - cols[1]).sum(axis=1)
        return out

    def solve(self, y):
        t = np.asarray(y, dtype=float).reshape(self.cell_shape)
        for axis, f in enumerate(self.factors):
            t = np.apply_along_axis(f.solve, axis, t)
        return t.reshape(-1)

    def dense(self):
        self._check_dense()
        out = np.ones((1, 1))
        for f in self.factors:
            out = np.kron(out, f.dense())
        return out


def identity(k: int) -> Identity:
    """The histogram workload over ``k`` cells."""
    return Identity(_check_k(k))


def prefix(k: int) -> Prefix:
    """The cumulative-histogram workload over ``k`` cells."""
    return Prefix(_check_k(k))


def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
        raise InvalidParameterError(f"k must be a positive integer, got {k!r}")
    return int(k)


def hierarchical(k: int, branching: int = 2) -> Hierarchical:
    """The b-ary hierarchical strategy over ``k`` cells."""
    if isinstance(branching, bool) or not isinstance(branching, Integral) or branching < 2:
        raise InvalidParameterError(f"branching must be an integer >= 2, got {branching!r}")
    return Hierarchical(_check_k(k), int(branching))


def kron(*factors: Workload) -> Kron:
    """The Kronecker product of per-attribute operators (C order: the last factor varies fastest)."""
    if not factors or not all(isinstance(f, Workload) for f in factors):
        raise InvalidParameterError(f"kron needs one or more Workload factors, got {factors!r}")
    return Kron(factors)


def haar(k: int) -> Haar:
    """Privelet's Haar strategy over ``k = 2^L`` cells."""
    return Haar(_check_k(k))


def marginal(shape, keep) -> Kron:
    """The marginal over the attributes ``keep`` of a multi-attribute domain.

    Parameters
    ----------
    shape : Domain or tuple of int
        The domain (or its per-attribute sizes, C order).
    keep : int, str or sequence of them
        Attributes kept (positions, or names when a Domain is given); the
        others are summed out.

    Returns
    -------
    Kron
        Identity on kept attributes ⊗ Total on the others: one query per
        combination of kept values.

    Examples
    --------
    >>> M = marginal((2, 3), [0])  # row sums of a 2×3 table
    >>> (M @ np.arange(6.0)).tolist()
    [3.0, 12.0]
    """
    names = None
    if hasattr(shape, "shape") and hasattr(shape, "names"):
        names = list(shape.names)
        shape = shape.shape
    if isinstance(shape, Integral):
        shape = (shape,)
    try:
        shape = tuple(_check_k(s) for s in shape)
    except TypeError:
        raise InvalidParameterError(f"shape must be a Domain or a tuple of sizes, got {shape!r}") from None
    if isinstance(keep, (str, Integral)):
        keep = [keep]
    axes = set()
    for a in keep:
        if isinstance(a, str):
            if names is None or a not in names:
                raise InvalidParameterError(f"keep names an unknown attribute {a!r}; attributes: {names}")
            a = names.index(a)
        if isinstance(a, bool) or not isinstance(a, Integral) or not 0 <= a < len(shape):
            raise InvalidParameterError(f"keep must name attributes 0..{len(shape) - 1}, got {a!r}")
        axes.add(int(a))
    return Kron([Identity(k) if a in axes else Total(k) for a, k in enumerate(shape)])


class Matrix(Workload):
    """A user's own query matrix (dense or scipy sparse), q×k.

    Examples
    --------
    >>> M = Matrix(np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 1.0]]))
    >>> (M @ np.array([1.0, 2.0, 3.0])).tolist(), M.column_differences(np.array([0]), np.array([2])).tolist()
    ([3.0, 7.0], [2.0])
    """

    name = "matrix"

    def __init__(self, A):
        import scipy.sparse as sp

        self.A = sp.csc_array(A, dtype=float)
        self.binary = bool(np.all(np.isin(self.A.data, (0.0, 1.0))))
        super().__init__(self.A.shape)

    def _matvec(self, x):
        return self.A @ np.asarray(x, dtype=float).reshape(-1)

    def _rmatvec(self, y):
        return self.A.T @ np.asarray(y, dtype=float).reshape(-1)

    def column_norms(self, u):
        return np.asarray(abs(self.A[:, np.asarray(u)]).sum(axis=0)).reshape(-1)

    def column_differences(self, u, v):
        return np.asarray(abs(self.A[:, np.asarray(u)] - self.A[:, np.asarray(v)]).sum(axis=0)).reshape(-1)

    def column_overlaps(self, u, v):
        return np.asarray(self.A[:, np.asarray(u)].multiply(self.A[:, np.asarray(v)]).sum(axis=0)).reshape(-1)

    def dense(self):
        self._check_dense()
        return self.A.toarray()


def matrix(A) -> Matrix:
    """A custom workload from a q×k matrix (numpy array or scipy sparse; finite entries).

    Examples
    --------
    >>> matrix([[1, 0], [1, 1]]).shape
    (2, 2)
    """
    import scipy.sparse as sp

    try:
        M = Matrix(A if sp.issparse(A) else np.asarray(A, dtype=float))
    except (TypeError, ValueError):
        raise InvalidParameterError(f"matrix needs a 2-D numeric array, got {type(A).__name__}") from None
    if M.A.ndim != 2 or 0 in M.shape:
        raise InvalidParameterError(f"matrix needs a non-empty 2-D array, got shape {M.shape}")
    if not np.all(np.isfinite(M.A.data)):
        raise InvalidParameterError("matrix entries must be finite (an infinite weight has unbounded sensitivity)")
    return M


_RANGE_BUILDERS = ("all_ranges", "random_ranges", "ranges_2d")


def __getattr__(name):
    # range workloads live in blowfish_nb.ranges (which builds on this module); offered here too
    if name in _RANGE_BUILDERS:
        from . import ranges

        return getattr(ranges, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
