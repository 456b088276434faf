"""Exact workload reduction before a fit: cells with equal workload columns merged into segments.

**The reduction.** When cells u and u' have equal columns (W e_u = W e_u'),
no query tells them apart. Group the k cells into k' classes (for ranges on
one attribute: the ≤ 2q + 1 runs cut at the ranges' ends) and let S be the
k' × k 0/1 segment-sum matrix (S[s, u] = 1 iff cell u is in class s). Then
W = W'·S with W' the k' distinct columns, and any strategy A' on the k'
classes gives the strategy A = A'·S on the cells: column u of A is column
s(u) of A'.

**Sensitivity under any policy graph G (the proof).** Δ_A(G) is the largest
‖A e_u − A e_v‖₁ over edges (u, v) of G (‖A e_u‖₁ for an edge (u, ⊥)).
Since A e_u = A' S e_u = A' e_{s(u)},

* an edge (u, v) with s(u) = s(v) contributes ‖A'(e_s − e_s)‖₁ = 0;
* an edge (u, v) with s(u) = s ≠ t = s(v) contributes ‖A' e_s − A' e_t‖₁;
* an edge (u, ⊥) contributes ‖A' e_{s(u)}‖₁.

So the set of values over G's edges is, apart from zeros, exactly the set
over the edges of the *quotient graph* G' (one node per class; s–t when some
edge of G joins a cell of s to a cell of t; s–⊥ when some cell of s has an
edge to ⊥), each quotient edge being reached by at least one edge of G.
Hence Δ_{A'S}(G) = Δ_{A'}(G') for every A' and every G (0 when G' has no
edge). G' is BlowfishDB's projected policy (:func:`blowfish_nb.policy.project`),
which is what :func:`reduce_workload` uses.

**Error.** S has orthogonal rows, so S⁺ = Sᵀ diag(1/|s|) and S S⁺ = I. When
A' has full column rank, (A'S)⁺ = S⁺A'⁺ (full column rank times full row
rank), so for a query w = w'S: w (AᵀA)⁺ wᵀ = w' S S⁺ A'⁺ A'⁺ᵀ S⁺ᵀ Sᵀ w'ᵀ =
w' (A'ᵀA')⁻¹ w'ᵀ, and with the public total (w N 1, 1ᵀ N 1 with
N = S⁺ N' S⁺ᵀ and S⁺ᵀ 1 = 1) the constrained least squares' error is the
reduced one too. With equal Δ and the same number of measured rows the noise
is the same, so the reduced fit's expected error *is* the lifted strategy's
exact error (tested by brute force in ``tests/strategies/test_reduction.py``).

**What it is and is not.** Restricting the search to strategies of the form
A'·S is a choice of search space: the optimiser then sees k' cells instead of
k (a faster fit, and on small k' its dense templates apply), but under some
policy a strategy that is not constant on a class might do better; nothing
here claims otherwise. Privacy never rests on the reduced Δ: :func:`lift`
charges the lifted strategy the Δ the policy's own edge-difference code
computes on the full domain.

**Where it applies.** Workloads on one attribute whose columns can be read
cheaply: ranges (identity and prefix sums are ranges whose columns are all
distinct: nothing merges, :func:`reduce_workload` returns None and callers
behave as before) and explicit matrices (equal columns found by hashing).
Grids and other workloads are left alone (a class of cells of a grid is no
longer a grid, so the Kronecker templates would not see one).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from ..operators import Matrix, Workload
from ..policy import Constrained, Policy, project
from ..ranges import Ranges, as_ranges, cut_blocks
from .optimized import DenseFactor, FactoredStrategy

__all__ = ["Reduction", "reduce_workload", "column_classes", "lift", "lift_factor"]


@dataclass(frozen=True)
class Reduction:
    """A workload and policy over k cells, restated over the k' classes of cells with equal workload columns.

    Attributes
    ----------
    block_of : ndarray of int
        s(u), the class of every cell (0 … k'−1, numbered in order of their first cell).
    workload : Workload
        W', the k' distinct columns (ranges stay ranges).
    policy : Policy
        G', the quotient graph (:func:`blowfish_nb.policy.project`).
    """

    block_of: np.ndarray
    workload: Workload
    policy: Policy

    @property
    def cells(self) -> int:
        """k', the number of classes."""
        return int(self.block_of.max()) + 1

    @property
    def sizes(self) -> np.ndarray:
        """|s|, the cells in each class."""
        return np.bincount(self.block_of, minlength=self.cells)

    def segment_sum(self) -> sp.csr_array:
        """S, the k' × k 0/1 matrix that sums each class's cells (W = W'·S)."""
        k = self.block_of.size
        return sp.csr_array((np.ones(k), (self.block_of, np.arange(k))), shape=(self.cells, k))


def column_classes(workload: Workload) -> np.ndarray | None:
    """The class of every cell (cells with equal columns of ``workload`` share one), or None when none merge.

    Ranges: the runs between the ranges' ends (two runs whose columns happen
    to be equal, e.g. both ends uncovered, stay apart so that W' is ranges).
    An explicit matrix: equal columns, wherever they are. Other workloads:
    None (not read).

    Examples
    --------
    >>> from blowfish_nb.ranges import Ranges
    >>> column_classes(Ranges(8, [0, 2], [4, 5])).tolist()
    [0, 0, 1, 1, 1, 2, 3, 3]
    >>> column_classes(Ranges(4, [0, 1, 2, 3], [0, 1, 2, 3])) is None
    True
    """
    r = as_ranges(workload)
    if r is not None:
        ids = cut_blocks(r.k, r.lo, r.hi)  # the blocks the plan's projection uses too (queries)
    elif type(workload) is Matrix:
        ids = _equal_columns(workload.A)
    else:
        return None
    return ids if int(ids.max()) + 1 < ids.size else None


def reduce_workload(workload: Workload, policy: Policy) -> Reduction | None:
    """(W', G') over the classes of cells with equal workload columns, or None when nothing merges here.

    None also for a domain of several attributes and for a constrained policy
    (its sensitivity is not the edge differences the reduction preserves).

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> from blowfish_nb.ranges import Ranges
    >>> r = reduce_workload(Ranges(8, [0, 2], [4, 5]), policy.line(Domain.grid(8)))
    >>> r.cells, r.workload.lo.tolist(), r.workload.hi.tolist(), r.policy.edge_count()
    (4, [0, 1], [1, 2], 3)
    """
    if len(policy.domain.shape) != 1 or isinstance(policy, Constrained) or workload.shape[1] != policy.domain.size:
        return None
    ids = column_classes(workload)
    if ids is None:
        return None
    m = int(ids.max()) + 1
    r = as_ranges(workload)
    if r is not None:
        reduced = Ranges(m, ids[r.lo], ids[r.hi])
    else:
        first = np.zeros(m, dtype=np.intp)
        first[ids[::-1]] = np.arange(ids.size)[::-1]  # the first cell of each class
        reduced = Matrix(workload.A[:, first])
    return Reduction(ids, reduced, project(policy, ids).policy)


def lift_factor(factor: DenseFactor, reduction: Reduction) -> DenseFactor:
    """A'·S as a dense factor over the k cells, with its pseudo-inverse S⁺A'⁺ and inverse Gram S⁺N'S⁺ᵀ.

    Column u of A'·S is column s(u) of A'. The closed forms hold when A' has
    full column rank (checked: A'⁺A' = I); otherwise the pseudo-inverse is
    computed from the lifted matrix. Holds m × k, k × m and k × k arrays:
    a caller lifts only onto domains where k² is small.
    """
    s, size = reduction.block_of, reduction.sizes.astype(float)
    X = factor.dense()
    lifted = X[:, s]
    eye = factor.pinv @ X
    if np.abs(eye - np.eye(eye.shape[0])).max(initial=0.0) > 1e-9:
        return DenseFactor(lifted)
    pinv = (factor.pinv / size[:, None])[s, :]  # scaled on the k' classes first: one k-sized array each
    inverse_gram = (factor.inverse_gram / np.outer(size, size))[np.ix_(s, s)]
    return DenseFactor(lifted, pinv=pinv, inverse_gram=inverse_gram)


def lift(strategy: FactoredStrategy, reduction: Reduction, policy: Policy) -> FactoredStrategy:
    """The strategy fitted on (W', G') restated on the k cells, charged its exact Δ under ``policy`` (G).

    The Δ is computed by ``policy``'s own edge-difference code on the lifted
    factor, never taken from the reduced fit; the objective is rescaled to it
    (equal by the module's proof). ``info["reduced"]`` records k' and k.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> from blowfish_nb.ranges import Ranges
    >>> from blowfish_nb.strategies.optimized import optimize
    >>> g = policy.line(Domain.grid(8))
    >>> r = reduce_workload(Ranges(8, [0, 2], [4, 5]), g)
    >>> small = optimize(r.workload, r.policy, restarts=1, max_iter=20)
    >>> big = lift(small, r, g)
    >>> big.shape, big.sensitivity == small.sensitivity == g.sensitivity(big.operator)
    ((8,), True)
    """
    (factor,) = strategy.factors
    big = lift_factor(factor, reduction)
    delta = float(policy.sensitivity(big))
    base = strategy.objective / strategy.sensitivity**2 if strategy.sensitivity > 0 else 0.0
    info = {**strategy.info, "reduced": {"cells": reduction.cells, "from": int(reduction.block_of.size)}}
    return replace(strategy, factors=(big,), sensitivity=delta, objective=delta**2 * base,
                   shape=tuple(policy.domain.shape), info=info)


def _equal_columns(A) -> np.ndarray:
    """Class ids of a sparse matrix's columns (equal columns share one; numbered by first column)."""
    A = sp.csc_array(A)
    A.sum_duplicates()
    A.eliminate_zeros()
    A.sort_indices()
    keys = {}
    ids = np.empty(A.shape[1], dtype=np.intp)
    for j in range(A.shape[1]):
        a, b = A.indptr[j], A.indptr[j + 1]
        key = (A.indices[a:b].tobytes(), A.data[a:b].tobytes())
        ids[j] = keys.setdefault(key, len(keys))
    return ids
