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

__all__ = ["Workload", "Identity", "Prefix", "identity", "prefix"]

DENSE_LIMIT = 4096


class Workload(LinearOperator):
    """A structured linear operator over a k-cell histogram."""

    name: str = "workload"

    def __init__(self, shape: tuple[int, int]):
        super().__init__(dtype=np.float64, shape=shape)

    def column_differences(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """‖A e_u − A e_v‖₁ for each pair of cells (vectorised)."""
        raise NotImplementedError

    def column_norms(self, u: np.ndarray) -> np.ndarray:
        """‖A e_u‖₁ for each cell (vectorised)."""
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

    name = "histogram"

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

    def solve(self, y):
        return np.asarray(y, dtype=float).copy()

    def dense(self):
        self._check_dense()
        return np.eye(self.shape[1])


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

    def solve(self, y):
        return np.diff(np.asarray(y, dtype=float), prepend=0.0)

    def dense(self):
        self._check_dense()
        return np.tril(np.ones(self.shape))


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
