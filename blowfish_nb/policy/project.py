"""Dynamic projection of a policy onto a partition of the domain (BlowfishDB Def. 3.1, Thm 3).

Given a partition T* of the cells, the projected policy G* has one vertex per
block and an edge between two blocks iff some edge of G joins them (⊥ edges
carry over). A matrix mechanism run on x* = T x with G* is (ε, G)-Blowfish
private for every workload the partition supports (W T⁺ T = W), and for a
strategy A = A* T its sensitivity is unchanged: every edge of G* comes from
an edge of G with the same column difference, and edges inside a block
change nothing. ``preserves_neighbours`` says whether N(G) = N(G*): every
pair of cells in two joined blocks is itself an edge of G (and every cell of
a block with a ⊥ edge has one), so the projected guarantee is exactly the
original one rather than a stronger one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._arrays import unique_sorted
from ..domain import CategoricalAttribute, Domain, OrderedAttribute
from ..exceptions import PolicyError
from .base import BOTTOM, Policy, derived, refuse_constrained
from .custom import Custom

__all__ = ["Projection", "project"]


@dataclass(frozen=True)
class Projection:
    """The projected policy G* with the partition that made it."""

    policy: Policy
    block_of: np.ndarray
    matrix: sp.csr_array
    preserves_neighbours: bool

    def data(self, x: np.ndarray) -> np.ndarray:
        """x* = T x: the counts of the blocks."""
        return np.bincount(self.block_of, weights=np.asarray(x, dtype=float), minlength=self.matrix.shape[0])

    def workload(self, W) -> sp.csr_array:
        """W* = W T⁺ (T⁺ = Tᵀ diag(1/|block|)); equals W on x* when the partition supports W."""
        sizes = np.bincount(self.block_of, minlength=self.matrix.shape[0])
        t_pinv = self.matrix.T.tocsr() @ sp.diags_array(1.0 / sizes)
        return sp.csr_array(W @ t_pinv) if sp.issparse(W) else W @ t_pinv

    def supports(self, W, rng=0, trials: int = 3) -> bool:
        """Whether W T⁺ T = W (checked on random vectors; exact for the answer up to rounding)."""
        g = np.random.default_rng(rng)
        sizes = np.bincount(self.block_of, minlength=self.matrix.shape[0])
        for _ in range(trials):
            x = g.normal(size=self.block_of.size)
            averaged = (self.data(x) / sizes)[self.block_of]
            if not np.allclose(W @ x, W @ averaged, atol=1e-8 * (1 + np.abs(W @ x).max())):
                return False
        return True


def project(policy: Policy, partition) -> Projection:
    """Project ``policy`` onto a partition: a block id per cell, or a list of blocks of cells.

    Examples
    --------
    >>> from blowfish_nb import policy as P
    >>> g = P.threshold(Domain.grid(8), 2)
    >>> pr = project(g, [0, 0, 0, 0, 1, 1, 1, 1])
    >>> pr.policy.edge_count(), pr.preserves_neighbours, pr.data(np.arange(8)).tolist()
    (1, False, [6.0, 22.0])
    """
    refuse_constrained(policy, "a projection")
    k = policy.domain.size
    block_of = _block_ids(partition, k)
    m = int(block_of.max()) + 1
    # a family with a closed form answers itself (e.g. Threshold on runs of a line)
    hook = getattr(policy, "projected_pairs", None)
    closed = hook(block_of, m) if hook is not None else None
    lo, hi, complete = closed if closed is not None else _walk_edges(policy, block_of, m)
    preserves = bool(np.all(complete))
    edges = [(int(a), "⊥" if b == m else int(b)) for a, b in zip(lo.tolist(), hi.tolist())]
    domain = _projected_domain(policy.domain, block_of, m)
    matrix = sp.csr_array((np.ones(k), (block_of, np.arange(k))), shape=(m, k))
    with derived():  # no edge left is normal here (every edge inside one block): the policy itself warned if empty
        projected = Custom(domain, edges, bottom=policy.has_bottom)
    return Projection(projected, block_of, matrix, preserves)


def _walk_edges(policy: Policy, block_of: np.ndarray, m: int):
    """Joined block pairs (``hi == m`` is ⊥) from every edge, and whether each pair's cells are all joined."""
    sizes = np.bincount(block_of, minlength=m)
    pair_counts: dict[int, int] = {}
    for u, v in policy.edge_chunks():
        a = block_of[u]
        b = np.where(v == BOTTOM, m, block_of[np.where(v == BOTTOM, 0, v)])
        cross = a != b
        lo, hi = np.minimum(a[cross], b[cross]), np.maximum(a[cross], b[cross])
        keys, counts = unique_sorted(lo.astype(np.int64) * (m + 1) + hi, return_counts=True)
        for key, count in zip(keys.tolist(), counts.tolist()):
            pair_counts[key] = pair_counts.get(key, 0) + count
    keys = np.array(sorted(pair_counts), dtype=np.int64)
    lo, hi = keys // (m + 1), keys % (m + 1)
    counts = np.array([pair_counts[key] for key in keys.tolist()], dtype=np.int64)
    full = np.where(hi == m, sizes[lo], sizes[lo] * sizes[np.minimum(hi, m - 1)])
    return lo, hi, counts == full


def _block_ids(partition, k: int) -> np.ndarray:
    if isinstance(partition, np.ndarray) and partition.ndim == 1 and partition.size == k:
        ids = partition
    elif len(partition) == k and all(np.ndim(p) == 0 for p in partition):
        ids = np.asarray(partition)
    else:
        ids = None
    if ids is not None:
        if not np.issubdtype(ids.dtype, np.integer) or ids.min() < 0:
            raise PolicyError(f"a partition as block ids needs non-negative integers, got {partition!r}")
        _, ids = unique_sorted(ids, return_inverse=True)  # number blocks 0..m−1 in id order
        return ids.astype(np.intp)
    ids = np.full(k, -1, dtype=np.intp)
    for b, block in enumerate(partition):
        cells = np.asarray(block, dtype=np.int64).reshape(-1)
        if cells.size == 0 or cells.min() < 0 or cells.max() >= k or (ids[cells] >= 0).any():
            raise PolicyError(f"block {b} ({block!r}) is empty, outside [0, {k}) or overlaps an earlier block")
        ids[cells] = b
    if (ids < 0).any():
        raise PolicyError(f"the partition must cover every cell; cell {int(np.flatnonzero(ids < 0)[0])} is in no block")
    return ids


def _projected_domain(domain: Domain, block_of: np.ndarray, m: int) -> Domain:
    attr = domain.attributes[0]
    runs = np.flatnonzero(np.diff(block_of)) + 1
    consecutive = len(domain.attributes) == 1 and isinstance(attr, OrderedAttribute) and np.array_equal(
        block_of[np.r_[0, runs]], np.arange(m)
    )
    if consecutive:
        return Domain([OrderedAttribute(attr.name, attr.edges[np.r_[0, runs, domain.size]])])
    return Domain([CategoricalAttribute("block", tuple(f"block {b}" for b in range(m)))])
