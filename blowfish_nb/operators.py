"""Linear operators over a k-cell histogram: the building blocks of workloads and strategies.

A workload ``W`` (q×k) asks for ``W x`` where ``x`` is the histogram over k
cells; a strategy ``A`` is what a mechanism measures with noise. Both are
:class:`scipy.sparse.linalg.LinearOperator` s that know their structure:
``column_differences(u, v)`` = ‖A e_u − A e_v‖₁ and ``column_norms(u)`` =
‖A e_u‖₁ give policy-specific sensitivities by edge differences (DESIGN §3)
without forming the matrix; ``solve`` inverts a square operator cheaply;
``dense()`` is for tests and tiny domains.

This module holds the generic operators (the base class, the identity, the
total, prefix sums, weighted stacks, Kronecker products, a user's matrix and
a column slice); the measurement strategies of the papers (trees, Haar) live
in :mod:`blowfish_nb.strategies`, the range workloads in
:mod:`blowfish_nb.ranges`, and the builders users call in
:mod:`blowfish_nb.workload`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from .exceptions import InvalidParameterError

__all__ = ["Workload", "Identity", "Total", "Prefix", "Stack", "Kron", "Matrix", "ColumnSlice", "DENSE_LIMIT"]

#: the largest side of a matrix ``dense()`` will form (tests and tiny domains only)
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


class Stack(Workload):
    """Weighted row blocks [w₁A₁; w₂A₂; …]: column L1 norms and differences add up with the weights.

    Examples
    --------
    >>> S = Stack([Identity(3), Total(3)], [1.0, 0.5])
    >>> S.shape, (S @ np.array([1.0, 2.0, 3.0])).tolist()
    ((4, 3), [1.0, 2.0, 3.0, 3.0])
    >>> S.column_differences(np.array([0]), np.array([2])).tolist()
    [2.0]
    """

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
        self.is_identity = all(f.is_identity for f in self.factors)
        self.cell_shape = tuple(f.shape[1] for f in self.factors)
        rows = int(np.prod([f.shape[0] for f in self.factors]))
        super().__init__((rows, int(np.prod(self.cell_shape))))

    @property
    def binary(self) -> bool:
        """All factors 0/1 — read from the factors now, never a flag that an edited factor could leave stale."""
        return all(f.binary for f in self.factors)

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
        self.A = sp.csc_array(A, dtype=float)
        super().__init__(self.A.shape)

    @property
    def binary(self) -> bool:
        """Every entry 0 or 1 (read from the entries now: the 0/1 formulas must never outlive an edit)."""
        return bool(np.all(np.isin(self.A.data, (0.0, 1.0))))

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


class ColumnSlice(Workload):
    """The first k columns of a strategy over K ≥ k cells (the real cells of a padded domain).

    A strategy built for a padded size (a power of the branching, say) acts
    on the real cells through this slice: the padding cells hold zeros and no
    record, so sensitivities are computed on the real columns only.

    Examples
    --------
    >>> S = ColumnSlice(Prefix(4), 3)
    >>> S.shape, (S @ np.array([1.0, 2.0, 3.0])).tolist()
    ((4, 3), [1.0, 3.0, 6.0, 6.0])
    >>> S.rmatvec(np.ones(4)).tolist(), S.column_norms(np.array([0, 2])).tolist()
    ([4.0, 3.0, 2.0], [4.0, 2.0])
    """

    def __init__(self, base: Workload, k: int):
        self.base = base
        self.diameter_at_extremes = getattr(base, "diameter_at_extremes", False)
        super().__init__((base.shape[0], k))

    @property
    def binary(self) -> bool:
        return getattr(self.base, "binary", False)

    def _matvec(self, x):
        full = np.zeros(self.base.shape[1])
        full[: self.shape[1]] = np.asarray(x, dtype=float).reshape(-1)
        return self.base.matvec(full)

    def _rmatvec(self, y):
        return self.base.rmatvec(y)[: self.shape[1]]

    def column_differences(self, u, v):
        return self.base.column_differences(u, v)

    def column_norms(self, u):
        return self.base.column_norms(u)

    def column_overlaps(self, u, v):
        return self.base.column_overlaps(u, v)

    def dense(self):
        return self.base.dense()[:, : self.shape[1]]
