"""Kronecker strategies on grids: per-query variances and least squares axis by axis, never a dense k×k solve.

On a grid of shape (k₁, …, k_d) a matrix mechanism measures A = A₁ ⊗ … ⊗ A_d,
each factor over its padded size K_i. Since (A₁ ⊗ A₂)⁺ = A₁⁺ ⊗ A₂⁺, the inverse
Gram matrix factorises, (AᵀA)⁻¹ = G₁⁻¹ ⊗ … ⊗ G_d⁻¹ with G_i = A_iᵀA_i, so the
variance w (AᵀA)⁻¹ wᵀ of a query w is

* for a box (one range per axis, w = w₁ ⊗ … ⊗ w_d): Π_i w_i G_i⁻¹ w_iᵀ, each
  factor's closed form (:meth:`Factor.range_variances`);
* for a Kronecker workload W = W₁ ⊗ … ⊗ W_d: the Kronecker product of the
  per-axis row variances (a per-axis K_i×K_i form for non-range factors);
* for any other row, reshaped to the grid: ⟨w, w ×₁ G₁⁻¹ ⋯ ×_d G_d⁻¹⟩ (mode
  products), O(k·ΣK_i) per row — used only when the whole workload costs at
  most :data:`AFFORDABLE` operations. Beyond that the error is not computed:
  :class:`Unaffordable` says so, and mechanism choice lists the candidate
  as skipped with that reason.

Least squares factorises the same way: A⁺ is applied along one axis at a
time, to every line of the grid at once (:func:`lstsq_grid`).
"""

from __future__ import annotations

import math

import numpy as np

from ..exceptions import InvalidParameterError
from ..operators import DENSE_LIMIT, Identity, Kron, Matrix, Total, Workload
from ..ranges import Boxes, as_ranges, axis_ranges
from .factors import Factor, IdentityFactor

__all__ = ["grid_variances", "lstsq_grid", "as_boxes", "apply_grid", "Unaffordable", "AFFORDABLE"]

#: the most multiply-adds an exact expected error may cost on the interactive path (about a second)
AFFORDABLE = 3e8


class Unaffordable(InvalidParameterError):
    """An exact expected error that would cost more than :data:`AFFORDABLE`: the candidate is skipped, not guessed."""


def grid_variances(factor: Factor, ops: list[Workload], workload: Workload, shape) -> np.ndarray:
    """w (AᵀA)⁻¹ wᵀ for every row of ``workload`` with A = ⊗ ``ops`` (padded) over the grid ``shape``.

    Parameters
    ----------
    factor : Factor
        The 1-D strategy family of every axis.
    ops : list of Workload
        The per-axis strategies over the padded sizes K_i ≥ k_i.
    workload : Workload
        q queries over the k = Π k_i real cells (C order).
    shape : tuple of int
        The real grid (k₁, …, k_d).

    Returns
    -------
    numpy.ndarray
        q variances (multiply by the noise variance for the expected squared error).

    Raises
    ------
    Unaffordable
        When the workload has no product form and its exact variances would
        cost more than :data:`AFFORDABLE` operations.

    Examples
    --------
    >>> from blowfish_nb.mechanisms.factors import PrefixFactor
    >>> from blowfish_nb.operators import Prefix
    >>> W = Kron([Prefix(2), Prefix(3)])  # the 2-D cumulative counts, measured exactly by the strategy
    >>> grid_variances(PrefixFactor(), [Prefix(2), Prefix(3)], W, (2, 3)).tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    """
    shape = tuple(int(s) for s in shape)
    axes = axis_ranges(workload, shape)
    if axes is not None:  # a product of per-axis ranges (histograms, marginals, cumulative): rows in C order
        return _outer([factor.range_variances(op, lo, hi) for op, (lo, hi) in zip(ops, axes)])
    if isinstance(workload, Boxes) and workload.cell_shape == shape:
        out = np.ones(workload.shape[0])
        for axis, op in enumerate(ops):
            out *= factor.range_variances(op, workload.lo[:, axis], workload.hi[:, axis])
        return out
    if isinstance(workload, Kron) and tuple(workload.cell_shape) == shape:
        return _outer([_axis_variances(factor, op, f) for op, f in zip(ops, workload.factors)])
    return _row_variances(factor, ops, workload, shape)


def lstsq_grid(factor: Factor, ops: list[Workload], Y: np.ndarray) -> np.ndarray:
    """A⁺ y for A = ⊗ ``ops``, for every leading index of Y (shape (..., m₁, …, m_d) → (..., K₁, …, K_d)).

    Examples
    --------
    >>> from blowfish_nb.mechanisms.factors import PrefixFactor
    >>> from blowfish_nb.operators import Prefix
    >>> lstsq_grid(PrefixFactor(), [Prefix(2), Prefix(2)], np.array([[1.0, 3.0], [4.0, 10.0]])).tolist()  # 2-D prefix sums
    [[1.0, 2.0], [3.0, 4.0]]
    """
    d = len(ops)
    out = np.asarray(Y, dtype=float)
    for j, op in enumerate(ops):
        axis = out.ndim - d + j
        moved = np.moveaxis(out, axis, -1)
        lead = moved.shape[:-1]
        solved = factor.lstsq_rows(op, moved.reshape(-1, moved.shape[-1]))
        out = np.moveaxis(np.asarray(solved).reshape(lead + (op.shape[1],)), -1, axis)
    return out


def as_boxes(workload: Workload, shape) -> tuple[np.ndarray, np.ndarray] | None:
    """(lo, hi) as (q, d) arrays when every row of ``workload`` is a box of the grid ``shape`` (else None).

    Examples
    --------
    >>> lo, hi = as_boxes(Identity(4), (2, 2))
    >>> lo.tolist() == hi.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    True
    """
    shape = tuple(int(s) for s in shape)
    if isinstance(workload, Boxes) and workload.cell_shape == shape:
        return workload.lo, workload.hi
    axes = axis_ranges(workload, shape)
    if axes is None:
        return None
    index = np.meshgrid(*[np.arange(lo.size) for lo, _ in axes], indexing="ij")
    lo = np.stack([axes[a][0][i.reshape(-1)] for a, i in enumerate(index)], axis=1)
    hi = np.stack([axes[a][1][i.reshape(-1)] for a, i in enumerate(index)], axis=1)
    return lo.astype(np.int64), hi.astype(np.int64)


def apply_grid(workload: Workload, X: np.ndarray, shape) -> np.ndarray:
    """``workload`` applied to every row of X (rows are histograms over the grid), axis by axis where it can be.

    Examples
    --------
    >>> from blowfish_nb.operators import Prefix
    >>> apply_grid(Kron([Prefix(2), Prefix(2)]), np.array([[1.0, 2.0, 3.0, 4.0]]), (2, 2)).tolist()
    [[1.0, 3.0, 4.0, 10.0]]
    """
    shape = tuple(int(s) for s in shape)
    X = np.asarray(X, dtype=float)
    if isinstance(workload, Identity):
        return X
    n = X.shape[0]
    if isinstance(workload, Kron) and tuple(workload.cell_shape) == shape:
        T = X.reshape((n,) + shape)
        for axis, f in enumerate(workload.factors, start=1):
            moved = np.moveaxis(T, axis, -1)
            flat = _rows(f, moved.reshape(-1, moved.shape[-1]))
            T = np.moveaxis(flat.reshape(moved.shape[:-1] + (flat.shape[-1],)), -1, axis)
        return T.reshape(n, -1)
    if isinstance(workload, Boxes) and workload.cell_shape == shape:
        table = X.reshape((n,) + shape)
        for axis in range(1, table.ndim):
            table = np.cumsum(table, axis=axis)
        table = np.pad(table, [(0, 0)] + [(1, 0)] * len(shape))
        total = np.zeros((n, workload.shape[0]))
        for corner in np.ndindex(*(2,) * len(shape)):
            idx = tuple(np.where(c, workload.hi[:, a] + 1, workload.lo[:, a]) for a, c in enumerate(corner))
            total += (-1) ** (len(shape) - sum(corner)) * table[(slice(None),) + idx]
        return total
    return np.stack([workload @ row for row in X])


# -- helpers -------------------------------------------------------------------------------
def _outer(parts: list[np.ndarray]) -> np.ndarray:
    out = np.ones(1)
    for p in parts:
        out = np.multiply.outer(out, p).reshape(-1)
    return out


def _rows(f: Workload, Z: np.ndarray) -> np.ndarray:
    """A 1-D workload applied to every row of Z."""
    if isinstance(f, Total):
        return Z.sum(axis=1, keepdims=True)
    r = as_ranges(f)
    if r is not None:
        C = np.concatenate([np.zeros((Z.shape[0], 1)), np.cumsum(Z, axis=1)], axis=1)
        return C[:, r.hi + 1] - C[:, r.lo]
    if max(f.shape) <= DENSE_LIMIT:
        return Z @ f.dense().T
    return np.stack([f @ z for z in Z])


def _axis_variances(factor: Factor, op: Workload, f: Workload) -> np.ndarray:
    """diag(W_f G⁻¹ W_fᵀ) on one axis (closed form for ranges and totals, a K×K form otherwise)."""
    k = f.shape[1]
    if isinstance(f, Total):
        return factor.range_variances(op, np.zeros(1, dtype=np.intp), np.full(1, k - 1, dtype=np.intp))
    r = as_ranges(f)
    if r is not None:
        return factor.range_variances(op, r.lo, r.hi)
    K = op.shape[1]
    if f.shape[0] * K * K > AFFORDABLE or K > DENSE_LIMIT:
        raise Unaffordable(f"skipped: the exact error of {type(f).__name__} on an axis of {k} cells "
                           f"needs {f.shape[0] * K * K:.2g} operations (at most {AFFORDABLE:.2g} are spent)")
    W = np.zeros((f.shape[0], K))
    W[:, :k] = f.dense()
    return np.einsum("ij,jk,ik->i", W, factor.inverse_gram(op), W)


def _row_variances(factor: Factor, ops: list[Workload], workload: Workload, shape) -> np.ndarray:
    """⟨w, w ×₁ G₁⁻¹ ⋯ ×_d G_d⁻¹⟩ row by row, in chunks (any workload; only when affordable)."""
    q, k = workload.shape
    padded = tuple(op.shape[1] for op in ops)
    if isinstance(factor, IdentityFactor):  # G = I: the variance is ‖w‖²
        cost = q * k
    else:
        cost = q * math.prod(padded) * sum(padded)
    if cost > AFFORDABLE:
        raise Unaffordable(
            f"skipped: the exact error of {q:,} {type(workload).__name__} queries on {k:,} cells has no product form "
            f"and would cost {cost:.2g} operations (at most {AFFORDABLE:.2g} are spent); use boxes, marginals or "
            "cumulative counts, or fewer queries")
    grams = None if isinstance(factor, IdentityFactor) else [factor.inverse_gram(op) for op in ops]
    out = np.empty(q)
    step = max(1, 4_000_000 // math.prod(padded))
    for s in range(0, q, step):
        rows = _dense_rows(workload, s, min(q, s + step))
        if grams is None:
            out[s : s + len(rows)] = np.sum(rows**2, axis=1)
            continue
        T = np.zeros((len(rows),) + padded)
        T[(slice(None),) + tuple(slice(0, n) for n in shape)] = rows.reshape((len(rows),) + tuple(shape))
        Z = T
        for axis, G in enumerate(grams, start=1):
            Z = np.moveaxis(np.tensordot(Z, G, axes=([axis], [0])), -1, axis)
        out[s : s + len(rows)] = np.sum((Z * T).reshape(len(rows), -1), axis=1)
    return out


def _dense_rows(workload: Workload, start: int, stop: int) -> np.ndarray:
    if isinstance(workload, Matrix):
        return workload.A.tocsr()[start:stop].toarray()
    eye = np.zeros((stop - start, workload.shape[0]))
    eye[np.arange(stop - start), np.arange(start, stop)] = 1.0
    return np.stack([workload.rmatvec(e) for e in eye])
