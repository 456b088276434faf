"""DAWA's two stages for Blowfish policies: a private partition of the cells, a workload-aware second stage (issue 25).

Shared by :class:`~.partition_first.PartitionFirst` and ``Transformed(inner="dawa")``.

**Step 1, the partition** (:func:`private_blocks`). DAWA's PrivTree
partition (:func:`~.dawa.partition_starts`) of the *cells* (along DAWA's
Hilbert curve on 2-D grids), run at ε₁/g with threshold θ = g/ε₂, where
g = 2 when the policy has an edge between two cells and 1 when every edge
goes to ⊥ (:func:`~.dawa._group`).

* *Privacy.* The partition is ε₁/g-DP for one count changed by at most 1
  (:mod:`.privtree`, checked exactly there). A neighbour under the policy
  moves one record along an edge: two counts change by 1 (u → v) or one
  (u → ⊥). By group privacy the partition is (ε₁, G)-Blowfish private for
  every policy G; θ is a public function of ε₂ and g. A constrained policy
  (whose neighbours may change many counts) is refused before any data are
  read (``Mechanism.require``).
* *Why these constants.* θ = g/ε₂ is the noise scale at which a bucket
  total is measured with Laplace under the policy (Δ = g): a node whose
  count is below it gains less by a split than an extra bucket's noise
  costs — DAWA's own rule, 1/ε₂ under DP. With ε₁ = ρε, ε₂ = (1 − ρ)ε and
  ρ = DAWA's ratio, g = 2, the partition has **exactly the distribution of
  DP DAWA's at ε/2** (ε₁/2 = ρε/2, θ = 2/((1 − ρ)ε) = 1/((1 − ρ)ε/2)): the
  Blowfish release sees the same buckets as an ε/2-DP release, and can only
  gain in the second stage. On the histogram both start PrivTree's bias at
  DP DAWA's level ⌊D/2⌋ (:func:`~.dawa.histogram_offset`; public, so the
  bound is unchanged): on the 64 × 64 tweet grid this cut PartitionFirst's
  error 61,500 → 38,900 (ε = 0.01), 5,060 → 2,240 (0.1), 165 → 44 (1), a
  3-seed check in this session.

**Step 2, the measurement** (:func:`dawa_measure`). Given the released
blocks, project the policy onto them (G′, :func:`~blowfish_nb.policy.project`)
and measure the bucket totals t with the least expected error of:

* ``"greedy"`` — DAWA's greedy workload-aware hierarchy over the buckets
  (its rows' weights sum to 1 along every root-to-leaf path), Laplace of
  scale Δ/ε₂ with Δ = Δ_A(G′) computed exactly. Under G′ an edge moves one
  record between two buckets: Δ ≤ 2 = DP's Δ at group size 2, so this
  candidate alone matches DP DAWA at ε/2 (same partition, same strategy,
  same noise), and is often better (Δ = 1 when every G′ edge is to ⊥, or
  when the hierarchy separates the two buckets nowhere… rarely);
* ``"transformed"`` — the paper's Transformed + DAWA second stage on the
  projected policy: y = x_{T′} of a spanning tree T′ of G′ (stretch ℓ′),
  the greedy hierarchy over T′'s edges for the transformed workload (Gram
  PᵀMP, P the tree's incidence), Laplace of scale ℓ′/ε₂ (one G′ edge moves
  ℓ′ entries of y by 1, the path weights sum to 1). Under the line the
  projected tree is the line over the buckets: ranges cross at most two of
  its edges, so this is what makes Blowfish beat DP on ranges.

The expected error of each is 2(scale)²⟨(AᵀA)⁻¹, M⟩, a function of the
released partition, the public workload and the policy only: choosing by
it is post-processing. Both measurements are ε₂-private under G′, and a
G-neighbour is a G′-neighbour or leaves t alone, so the release is
(ε₁ + ε₂, G)-Blowfish private by sequential composition.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..exceptions import PolicyError
from ..policy import Policy, line, project, spanning_tree, stretch, transform
from ..workload import Workload
from .dawa import _GreedyTree, _ends, _group, hilbert_order, partition_starts
from .gram import as_sparse, bucket_gram

__all__ = ["private_blocks", "private_labels", "dawa_measure", "bucket_gram_of", "greedy_matrix"]


def private_blocks(x: np.ndarray, policy: Policy, eps1: float, eps2: float, rng: np.random.Generator,
                   method: str = "privtree", offset: int = 0) -> np.ndarray:
    """Step 1: a block id per cell, numbered by first cell ((eps1, policy)-Blowfish private; module notes).

    ``offset`` is PrivTree's public bias start level j₀ (:func:`~.dawa.histogram_offset` for a histogram
    release, as DP DAWA's; any public j₀ keeps the privacy bound, :mod:`.privtree`).

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> x = np.r_[np.zeros(8), np.full(8, 1000.0)]
    >>> private_blocks(x, policy.line(Domain.grid(16)), 100.0, 0.01, np.random.default_rng(0)).tolist()
    [0, 0, 0, 0, 1, 1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9]

    The empty half stays in wide buckets (a node of count 0 still splits
    with probability 1/4: its biased score sits δ below θ); the heavy cells
    are split down to single cells (the count score).
    """
    g = _group(policy)
    order = hilbert_order(policy.domain.shape)
    starts = partition_starts(np.asarray(x, dtype=float)[order], eps1 / g, g / eps2, rng, method=method,
                              offset=offset, ends=_ends(policy))
    blocks = np.empty(x.size, dtype=np.intp)
    blocks[order] = np.cumsum(np.isin(np.arange(x.size), starts)) - 1
    return _renumber(blocks)


def private_labels(x: np.ndarray, policy: Policy, eps1: float, eps2: float, rng: np.random.Generator, size: int,
                   method: str = "privtree", offset: int = 0) -> np.ndarray:
    """``size`` draws of :func:`private_blocks` at once: a label per cell (its bucket's first cell on the curve)."""
    g = _group(policy)
    order = hilbert_order(policy.domain.shape)
    starts = partition_starts(np.asarray(x, dtype=float)[order], eps1 / g, g / eps2, rng, size=size, method=method,
                              offset=offset, ends=_ends(policy))
    first = np.maximum.accumulate(np.where(starts, np.arange(x.size), 0), axis=1)
    labels = np.empty_like(first)
    labels[:, order] = order[first]
    return labels


def _renumber(blocks: np.ndarray) -> np.ndarray:
    """Block ids in order of each block's first cell (so that 1-D blocks stay intervals numbered left to right)."""
    first = np.full(int(blocks.max()) + 1, blocks.size)
    np.minimum.at(first, blocks, np.arange(blocks.size))
    rank = np.empty(first.size, dtype=np.intp)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[blocks]


def bucket_gram_of(workload: Workload, proj, sizes: np.ndarray) -> np.ndarray:
    """M = (WE)ᵀ(WE), E spreading each bucket's total uniformly over its cells."""
    m = sizes.size
    starts = np.r_[0, np.flatnonzero(np.diff(proj.block_of)) + 1]
    if starts.size == m and np.array_equal(proj.block_of, np.repeat(np.arange(m), sizes)):
        return bucket_gram(workload, starts)
    # buckets that are not intervals in order (2-D grids, the matching partitioner)
    k = proj.block_of.size
    E = sp.csr_array((1.0 / sizes[proj.block_of], (np.arange(k), proj.block_of)), shape=(k, m))
    B = as_sparse(workload) @ E
    return np.asarray((B.T @ B).todense())


def greedy_matrix(tree: _GreedyTree, m: int) -> sp.csr_array:
    """The greedy hierarchy's strategy as a sparse matrix (rows of positive weight only)."""
    rows = np.flatnonzero(tree.weight > 0)
    lengths = tree.hi[rows] - tree.lo[rows]
    return sp.csr_array((np.repeat(tree.weight[rows], lengths),
                         (np.repeat(np.arange(rows.size), lengths),
                          np.concatenate([np.arange(a, b) for a, b in zip(tree.lo[rows], tree.hi[rows])]))),
                        shape=(rows.size, m))


def _tree_plan(policy: Policy) -> tuple[Policy, float]:
    """The tree T′ for the transformed candidate and its stretch ℓ′ over ``policy`` (G′).

    G′ itself when it is a forest; else the less stretched of its "auto"
    spanning tree and, on one attribute without ⊥, the line over the
    buckets in order. The line need not be a subgraph of G′: x_{T′} of any
    tree over the same buckets moves by 1 on each of the d_{T′}(a, b) edges
    between a G′-edge's ends, so ℓ′ = max d_{T′} is what the argument needs
    (for interval buckets under G^θ the line's ℓ′ is at most θ, where the
    "auto" tree's was up to twice that on the DPBench partitions).
    """
    if policy.is_forest():
        return policy, 1
    trees = [spanning_tree(policy, "auto")]
    if len(policy.domain.shape) == 1 and not policy.has_bottom:
        try:
            trees.append(line(policy.domain))
        except PolicyError:  # buckets of a categorical attribute have no order to follow
            pass
    plans = [(tree, stretch(policy, tree)) for tree in trees]
    return min(plans, key=lambda p: p[1])


def dawa_options(M: np.ndarray, policy: Policy, granularity: int = 100) -> dict:
    """Step 2's candidates over m buckets under ``policy`` (G′): name → (expected error ÷ 2/ε², Δ, state)."""
    m = M.shape[0]
    tree = _GreedyTree(M, granularity)
    delta = float(policy.sensitivity(greedy_matrix(tree, m))) if m > 1 else float(policy.sensitivity(np.ones((1, 1))))
    options = {"greedy": (delta**2 * tree.error, delta, tree)}
    if m > 1:
        T, ell = _tree_plan(policy)
        tr = transform(T)
        P = sp.csr_array(tr.incidence)
        if P.shape[1] > 0:
            MT = np.asarray(P.T @ (P.T @ M).T)  # PᵀMP (M symmetric)
            ttree = _GreedyTree(MT, granularity)
            options["transformed"] = (ell**2 * ttree.error, float(ell), (ttree, tr))
    return options


def dawa_measure(x: np.ndarray, blocks: np.ndarray, workload: Workload, policy: Policy, epsilon: float,
                 rng: np.random.Generator, granularity: int = 100, transformed: bool = True) -> np.ndarray:
    """Step 2 (ε-Blowfish private for the released blocks): cell estimates, uniform within each bucket.

    ``transformed=False`` offers the bucket-domain hierarchy only.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> x = np.r_[np.zeros(8), np.full(8, 5.0)]
    >>> est = dawa_measure(x, np.repeat([0, 1], 8), workload.prefix(16), policy.line(Domain.grid(16)), 1e6,
    ...                    np.random.default_rng(0))
    >>> np.allclose(est, x, atol=0.01)
    True
    """
    proj = project(policy, blocks)
    m = proj.policy.domain.size
    t = proj.data(x)
    sizes = np.bincount(proj.block_of, minlength=m)
    options = dawa_options(bucket_gram_of(workload, proj, sizes), proj.policy, granularity)
    if not transformed:
        options.pop("transformed", None)
    choice = min(options, key=lambda c: options[c][0])
    _, scale_factor, state = options[choice]
    if scale_factor == 0:  # no edge of G′ moves a record between buckets (or out): the totals are public
        estimate = t.astype(float)
    elif choice == "greedy":
        estimate = state.least_squares(t, scale_factor / epsilon, rng)
    else:
        ttree, tr = state
        y = ttree.least_squares(tr.data(t), scale_factor / epsilon, rng)
        e = np.zeros(m)
        e[tr.roots] = tr.component_totals(t)  # public: neighbours under G′ share each component's total
        estimate = tr.incidence @ y + e
    return (estimate / sizes)[proj.block_of]
