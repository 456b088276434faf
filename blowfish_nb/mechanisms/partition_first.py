"""Partition-first data-dependent histograms under any policy graph (Anuarbek, "Data-Dependent Blowfish
Private Algorithm for Histogram Queries").

ε = ε₁ + ε₂, three steps:

1. **Private partition** (ε₁) of the cells into buckets of similar counts.
   * ``"dawa"`` — DAWA's partition step, a PrivTree partition on counts
     (:mod:`.privtree`), run as ε₁/g-DP with threshold θ = g/ε₂
     (:func:`.buckets.private_blocks`), g = 2 when the policy moves records
     between cells (a move is a removal and an addition: two counts change
     by 1, and group privacy of two ε₁/2 steps gives ε₁), 1 when every edge
     goes to ⊥. Whatever the graph, the partition is private under its
     neighbours: a G-neighbour changes at most g counts by 1 each. With the
     default split (DAWA's ratio, 0.25) its buckets are distributed exactly
     as DP DAWA's at ε/2 (issue 25: Blowfish then never sees worse buckets
     than the ε/2-DP release, which is also (ε, G)-Blowfish private, and
     measures them with less noise).
   * ``"dawa-l1"`` — the same with DAWA's noisy least-cost L1 partition
     (:func:`~.dawa.l1_partition`), the default before issue 25.
   * ``"matching"`` — buckets of one or two cells: a maximum-weight perfect
     matching on primary vertices (cells) and secondary vertices (one per
     cell). Pairing cells i, j scores −(|x_i − x_j| + 1/ε₂), keeping i alone
     scores −1/ε₂ (the edge i–sᵢ), and secondaries of candidate pairs are
     joined at 0 so that every partition is a perfect matching. Every
     data-dependent edge gets Laplace(2g/ε₁) noise.
2. **Bucket counts** (ε₂): merge G's vertices by bucket into G'
   (:func:`~blowfish_nb.policy.project`) and answer them with Transformed +
   Laplace under G' (the paper), or with plain Laplace when G' is far from a
   tree and the spanning tree's stretch makes that better — chosen by the
   expected-error formulas from the released partition alone.
3. **Uniform expansion** within each bucket (post-processing).

**Why the matching step is private (checked, not taken on trust).** The
paper's proof (Thm 5.2) says one record changes the weight of "exactly one
edge in M"; in fact it changes every candidate edge at the changed cell i,
by at most 1 each. The proof still goes through: every perfect matching
holds exactly one edge at i (a pair or i's singleton edge), so every
matching's total moves by at most 1; fixing the noise of all edges but the
one M uses at i, M wins iff that noise beats a threshold that moves by at
most 2, hence noise of scale 2/ε per edge gives ε-DP for one changed count.
**Restricting the candidate pairs** to a data-independent set (the policy's
edges between cells, or a window of the domain order for policies with ⊥
only) keeps the argument intact: the set of matchings does not depend on
the data, and each still holds exactly one edge at i.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._validation import as_generator, check_epsilon
from ..exceptions import InvalidParameterError
from ..policy import BOTTOM, Policy, project
from ..ranges import as_ranges
from ..operators import Matrix
from ..strategies.optimized import optimize
from ..strategies.weighted_prefix import optimize_weights
from ..workload import Identity, Prefix, Workload
from .base import Mechanism, _check_histogram
from .noise import selection_laplace
from . import noise
from .buckets import bucket_gram_of as _bucket_gram, private_blocks, private_labels
from .dawa import RATIO as DAWA_RATIO, _GreedyTree, _group, histogram_offset
from .laplace import Laplace
from .optimized import AUTO
from .transformed import Transformed

__all__ = ["PartitionFirst", "matching_partition", "best_matching", "measure_buckets", "bucket_strategies", "gram_root",
           "OPTIMIZE_BUCKETS", "prefix_costs"]

PARTITIONERS = ("dawa", "dawa-l1", "matching")
#: the most buckets over which :func:`bucket_strategies` optimises a strategy at release time (one dense m×m
#: inverse per optimiser step, so about a second at 256 buckets on an idle core)
OPTIMIZE_BUCKETS = 256


@dataclass(frozen=True)
class PartitionFirst(Mechanism):
    """Private partition, projected policy, Transformed + Laplace on the buckets, uniform expansion.

    Parameters
    ----------
    partitioner : {"dawa", "dawa-l1", "matching"}
        How buckets are found (see the module notes).
    split : float
        Share of ε spent on the partition (0 < split < 1); DAWA's ratio by
        default (0.5 before issue 25).
    window : int
        For ``"matching"`` under policies without cell–cell edges: cells up to
        ``window`` apart in the domain order are candidate pairs.
    rounds : int
        For ``"matching"``: match the buckets again ``rounds − 1`` times
        (buckets of up to 2^rounds cells), ε₁ split evenly over the rounds.
    ranges : bool
        Answer any workload (ranges, boxes, …), not only the histogram: the
        bucket totals are measured by the best of the strategies over the
        buckets of :func:`bucket_strategies`, Δ exact under the projected policy (:func:`measure_buckets`),
        and the workload is answered on the uniform expansion (issue 16).
    optimize_buckets : int
        With ``ranges``: partitions of at most this many buckets also get a
        strategy optimised for the workload under the projected policy
        (:func:`~blowfish_nb.strategies.optimized.optimize`, seeded, so a
        function of the released partition and the public workload); 0 never
        optimises.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> x = np.r_[np.zeros(30), np.full(34, 40.0)]
    >>> est = PartitionFirst().release(x, workload.identity(64), policy.line(Domain.grid(64)), 1.0, rng=0)
    >>> est.shape, bool(abs(est[:30].mean()) < 5)
    ((64,), True)
    """

    partitioner: str = "dawa"
    split: float = DAWA_RATIO
    window: int = 1
    rounds: int = 1
    ranges: bool = False
    optimize_buckets: int = OPTIMIZE_BUCKETS

    def __post_init__(self):
        if self.partitioner not in PARTITIONERS:
            raise InvalidParameterError(f"partitioner must be one of {PARTITIONERS}, got {self.partitioner!r}")
        if isinstance(self.split, bool) or not isinstance(self.split, (int, float)) or not 0 < self.split < 1:
            raise InvalidParameterError(f"split must lie strictly between 0 and 1, got {self.split!r}")
        if isinstance(self.window, bool) or not isinstance(self.window, int) or self.window < 1:
            raise InvalidParameterError(f"window must be an integer >= 1, got {self.window!r}")
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or self.rounds < 1:
            raise InvalidParameterError(f"rounds must be an integer >= 1, got {self.rounds!r}")
        if not isinstance(self.ranges, bool):
            raise InvalidParameterError(f"ranges must be True or False, got {self.ranges!r}")
        if (isinstance(self.optimize_buckets, bool) or not isinstance(self.optimize_buckets, int)
                or self.optimize_buckets < 0):
            raise InvalidParameterError(f"optimize_buckets must be an integer >= 0, got {self.optimize_buckets!r}")
        if self.rounds > 1 and self.partitioner != "matching":
            raise InvalidParameterError(f"rounds > 1 is for partitioner='matching', got {self.partitioner!r}")

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"PartitionFirst({self.partitioner}{', ranges' if self.ranges else ''})"

    linear = False
    registry = {"partition-first": {}, "partition-first-matching": {"partitioner": "matching"},
                "partition-first-l1": {"partitioner": "dawa-l1"}}

    def _release(self, x, workload: Workload, policy: Policy, epsilon: float, rng) -> np.ndarray:
        r = as_ranges(workload)
        histogram = isinstance(workload, Identity) or (
            r is not None and np.array_equal(r.lo, np.arange(x.size)) and np.array_equal(r.hi, r.lo))
        if not (histogram or self.ranges):
            raise InvalidParameterError(
                f"{self.name} answers the histogram (identity workload) only, got {type(workload).__name__} "
                f"of shape {workload.shape}; for other queries use PartitionFirst(ranges=True), a "
                "data-independent mechanism or DAWA"
            )
        blocks = self.partition(x, policy, epsilon, rng, offset=histogram_offset(workload, x.size) if histogram else 0)
        if not histogram:
            return measure_buckets(x, blocks, workload, policy, (1 - self.split) * epsilon, rng,
                                   optimize_buckets=self.optimize_buckets)
        return expand(x, blocks, policy, (1 - self.split) * epsilon, rng)

    def partition(self, x: np.ndarray, policy: Policy, epsilon: float, rng: np.random.Generator,
                  offset: int = 0) -> np.ndarray:
        """Step 1: a block id per cell ((split·ε, G)-Blowfish private).

        ``offset``: the DAWA partitioners' public PrivTree bias start (the histogram release passes DP DAWA's
        :func:`~.dawa.histogram_offset`; the matching ignores it).
        """
        self.require(policy)
        eps1, eps2 = self.split * epsilon, (1 - self.split) * epsilon
        g = _group(policy)
        if self.partitioner.startswith("dawa"):
            # DAWA's partition of the cells (along its Hilbert curve on 2-D grids), ε₁/g-DP with θ = g/ε₂:
            # (ε₁, G)-Blowfish by group privacy (see :mod:`.buckets`)
            return private_blocks(x, policy, eps1, eps2, rng, method="l1" if self.partitioner == "dawa-l1" else "privtree",
                                  offset=offset)
        # Beyond the paper: later rounds match the buckets of the previous one (their counts, the projected
        # policy's edges), so buckets grow to 4, 8, ... cells; each round is (ε₁/rounds)-private on the
        # bucket counts, which one record changes as it changes cell counts, and rounds compose.
        blocks = np.arange(x.size)
        for _ in range(self.rounds):
            proj = project(policy, blocks)
            merged = matching_partition(proj.data(x), candidate_pairs(proj.policy, self.window),
                                        eps1 / (g * self.rounds), eps2, rng)
            blocks = merged[proj.block_of]
        return blocks

    def partitions(self, x, policy: Policy, epsilon: float, size: int, rng=None, workload=None) -> np.ndarray:
        """``size`` draws of step 1: a block label per cell (the block's first cell), one row per draw.

        With ``workload`` the DAWA partitioners draw the law a release of that workload uses (PrivTree's bias
        from DP DAWA's :func:`~.dawa.histogram_offset` on the histogram, from the root otherwise); the
        matching has one law and ignores it.
        """
        self.require(policy)
        epsilon = check_epsilon(epsilon)
        rng = as_generator(rng)
        x = _check_histogram(x, policy.domain.size)
        if self.partitioner.startswith("dawa"):  # batched: the partition step's own draws, size at once
            method = "l1" if self.partitioner == "dawa-l1" else "privtree"
            offset = 0 if workload is None else histogram_offset(workload, x.size)
            return private_labels(x, policy, self.split * epsilon, (1 - self.split) * epsilon, rng, size, method,
                                  offset=offset)
        out = np.empty((size, x.size), dtype=np.intp)
        for i in range(size):
            blocks = self.partition(x, policy, epsilon, rng)
            first = np.full(int(blocks.max()) + 1, x.size)
            np.minimum.at(first, blocks, np.arange(x.size))
            out[i] = first[blocks]
        return out

    def partition_epsilon(self, epsilon: float) -> float:
        """The ε the partition step spends."""
        return self.split * epsilon

    def expected_error(self, workload, policy, epsilon):
        raise InvalidParameterError(f"{self.name} is data-dependent: it has no analytic expected error; measure it")


def measure_buckets(x: np.ndarray, blocks: np.ndarray, workload: Workload, policy: Policy, epsilon: float,
                    rng: np.random.Generator, granularity: int = 100,
                    optimize_buckets: int = OPTIMIZE_BUCKETS, options: dict | None = None) -> np.ndarray:
    """Steps 2 and 3 for any workload: a strategy over the buckets with Δ exact under the projected policy.

    The workload's error over the bucket totals t is ⟨Cov(t̂), M⟩, M = (WE)ᵀ(WE)
    (:func:`~blowfish_nb.mechanisms.gram.bucket_gram`). The strategies A over
    the m buckets of :func:`bucket_strategies` are scored by
    2 (Δ_A(G*)/ε)² ⟨(AᵀA)⁻¹, M⟩, Δ computed exactly under the projected
    policy G* (edge differences): the identity (Laplace), prefix sums (the
    Ordered mechanism on the buckets — under G^θ, Δ is the largest number of
    buckets an edge spans, 1 once buckets are θ cells wide), DAWA's greedy
    workload-aware hierarchy (Δ ≤ 2), prefix sums with row weights fitted to
    M under G* (:mod:`~blowfish_nb.strategies.weighted_prefix`: less weight
    where narrow buckets crowd, whole-valued sums at per-row scales) and, for
    at most ``optimize_buckets`` buckets, a dense strategy optimised for M
    under G*. The least-error one is
    measured with discrete Laplace noise of scale Δ/ε (lattice noise for the
    optimised one's real entries) and inverted by least squares; the choice
    uses the released partition and the public workload only (``options``:
    the candidates :func:`bucket_strategies` gave for these buckets and this
    workload, to draw again without optimising again). A G-edge moves a
    record within a bucket (t unchanged) or between two buckets along a
    G*-edge, so releasing A t is (ε, G)-Blowfish private (BlowfishDB's
    dynamic projection).

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> x = np.r_[np.zeros(8), np.full(8, 5.0)]
    >>> est = measure_buckets(x, np.repeat([0, 1], 8), workload.prefix(16), policy.threshold(Domain.grid(16), 2),
    ...                       1e6, np.random.default_rng(0))
    >>> np.allclose(est, np.cumsum(x), atol=0.1)
    True
    """
    proj = project(policy, blocks)
    m = proj.policy.domain.size
    t = proj.data(x)
    sizes = np.bincount(proj.block_of, minlength=m)
    if options is None:
        options = bucket_strategies(_bucket_gram(workload, proj, sizes), proj.policy, granularity, optimize_buckets)
    choice = min(options, key=lambda c: options[c][1] ** 2 * options[c][2])
    _, delta, _, solver = options[choice]
    if choice == "laplace":
        estimate = noise.noisy(t, delta / epsilon, rng)
    elif choice == "ordered":
        estimate = np.diff(np.r_[0.0, noise.noisy(np.cumsum(t), delta / epsilon, rng)])
    elif choice == "weighted prefix":  # whole-valued prefix sums, row i at scale Δ/(ε w_i)
        estimate = np.diff(np.r_[0.0, noise.noisy(np.cumsum(t), delta / (epsilon * solver.weights), rng)])
    elif choice == "optimized":  # real-valued rows: the lattice sampler, every row may change
        measured = (noise.invariant_values(solver.A, t, proj.policy, "PartitionFirst") if delta == 0 else
                    noise.lattice_noisy(noise.product(solver.A, t), delta, epsilon, solver.shape[0], rng))
        estimate = solver.pinv @ measured
    else:
        estimate = solver.least_squares(t, delta / epsilon, rng)
    return np.asarray(workload @ (estimate / sizes)[proj.block_of], dtype=float)


def bucket_strategies(M: np.ndarray, policy: Policy, granularity: int = 100,
                      optimize_buckets: int = OPTIMIZE_BUCKETS) -> dict:
    """The candidate strategies over m buckets: name → (A as a sparse matrix, Δ_A(policy), ⟨(AᵀA)⁻¹, M⟩, solver).

    Expected total squared error at ε: 2 (Δ/ε)² ⟨(AᵀA)⁻¹, M⟩ (continuous
    Laplace; the discrete draws have slightly less, the lattice draws of the
    optimised strategy at most 2^-11 more). ``solver`` is DAWA's greedy tree
    for ``"greedy"``, the
    :class:`~blowfish_nb.strategies.weighted_prefix.WeightedPrefix` for
    ``"weighted prefix"``, the optimised factor
    (:class:`~blowfish_nb.strategies.optimized.DenseFactor`) for
    ``"optimized"`` (offered when 1 < m ≤ ``optimize_buckets``: optimised
    for a workload with Gram M under ``policy`` by
    :func:`~blowfish_nb.strategies.optimized.optimize`, seeded, its Δ exact),
    else None.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> opts = bucket_strategies(np.eye(4), policy.line(Domain.grid(4)), optimize_buckets=0)
    >>> {name: (float(d), round(float(e), 3)) for name, (_, d, e, _) in opts.items()}
    {'laplace': (2.0, 4.0), 'ordered': (1.0, 7.0), 'greedy': (2.0, 4.0), 'weighted prefix': (1.0, 6.0)}
    """
    m = M.shape[0]
    options = {"laplace": (sp.identity(m, format="csr"), policy.sensitivity(Identity(m)), float(np.trace(M)), None)}
    # prefix sums: (AᵀA)⁻¹ = DDᵀ with D the difference operator
    prefix = sp.csr_array(np.tril(np.ones((m, m)))) if m <= 2048 else None
    options["ordered"] = (prefix, policy.sensitivity(Prefix(m)),
                          float(2 * np.trace(M) - M[0, 0] - 2 * np.trace(M, offset=1)), None)
    if m > 1:
        tree = _GreedyTree(M, granularity)
        rows = np.flatnonzero(tree.weight > 0)
        lengths = tree.hi[rows] - tree.lo[rows]
        A = sp.csr_array((np.repeat(tree.weight[rows], lengths),
                          (np.repeat(np.arange(rows.size), lengths),
                           np.concatenate([np.arange(a, b) for a, b in zip(tree.lo[rows], tree.hi[rows])]))),
                         shape=(rows.size, m))
        options["greedy"] = (A, policy.sensitivity(A), tree.error, tree)
    if m > 1:  # prefix sums with row weights fitted to M (O(m) per optimiser step): every partition
        c = prefix_costs(M)
        weighted = optimize_weights(c, policy)
        A = sp.csr_array(weighted.dense()) if m <= OPTIMIZE_BUCKETS else None  # for audits; never measured
        options["weighted prefix"] = (A, policy.sensitivity(weighted), float(np.sum(c / weighted.weights**2)),
                                      weighted)
    if 1 < m <= optimize_buckets:
        found = optimize(gram_root(M), policy, **AUTO)
        F = found.factors[0]
        options["optimized"] = (F.A, found.sensitivity, float(np.sum(F.inverse_gram * M)), F)
    return options


def prefix_costs(M: np.ndarray) -> np.ndarray:
    """c = diag(DᵀMD), D the difference operator: the error of prefix sums with row weights w is Σ c_i / w_i².

    Examples
    --------
    >>> prefix_costs(np.eye(3)).tolist()
    [2.0, 2.0, 1.0]
    """
    d = np.diag(M).astype(float)
    return np.r_[d[:-1] + d[1:] - 2.0 * np.diag(M, 1), d[-1:]]


def gram_root(M: np.ndarray) -> Matrix:
    """A workload with Gram M (symmetric, positive semi-definite): √Λ Vᵀ from M = V Λ Vᵀ.

    Examples
    --------
    >>> M = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> R = gram_root(M).dense()
    >>> np.allclose(R.T @ R, M)
    True
    """
    lam, V = np.linalg.eigh(np.asarray(M, dtype=float))
    return Matrix(np.sqrt(np.clip(lam, 0.0, None))[:, None] * V.T)


def expand(x: np.ndarray, blocks: np.ndarray, policy: Policy, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Steps 2 and 3: bucket counts by Transformed + Laplace under the projected policy, spread uniformly."""
    proj = project(policy, blocks)
    m = proj.policy.domain.size
    # Transformed + Laplace as in the paper, unless G' is far from a tree and its stretch makes plain Laplace
    # better: the choice depends on the released partition and public formulas only
    candidates = [Transformed(), Laplace()]
    errors = [c.expected_error(Identity(m), proj.policy, epsilon) for c in candidates]
    counts = candidates[int(np.argmin(errors))].release(proj.data(x), Identity(m), proj.policy, epsilon, rng=rng)
    sizes = np.bincount(proj.block_of, minlength=m)
    return (counts / sizes)[proj.block_of]


#: above this many cells, candidate pairs are kept to a bipartite set (see :func:`candidate_pairs`)
BLOSSOM_LIMIT = 1024


def candidate_pairs(policy: Policy, window: int = 1) -> np.ndarray:
    """Data-independent candidate pairs: the policy's cell–cell edges, else cells within ``window`` in domain order.

    Above :data:`BLOSSOM_LIMIT` cells, when those edges do not form a
    bipartite graph (G^θ for θ ≥ 2, partitions), only the edges between
    cells one step apart along one attribute are kept: a bipartite set (cells
    split by the parity of their coordinate sum) whose matching scipy's
    assignment solver finds in a fraction of a second, where the blossom
    algorithm on the full set takes about a minute at 4,096 cells. The set
    depends on the policy and the domain only, so the privacy argument is
    unchanged; pairs farther apart are given up.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> len(candidate_pairs(policy.threshold(Domain.grid(100), 3))), len(candidate_pairs(policy.threshold(Domain.grid(2000), 3)))
    (294, 1999)
    """
    pairs = [np.column_stack([u[v != BOTTOM], v[v != BOTTOM]]) for u, v in policy.edge_chunks()]
    pairs = np.vstack(pairs) if pairs else np.zeros((0, 2), dtype=np.intp)
    k = policy.domain.size
    if len(pairs) == 0:
        pairs = np.vstack([np.column_stack([np.arange(k - d), np.arange(d, k)]) for d in range(1, min(window, k - 1) + 1)]) \
            if k > 1 else np.zeros((0, 2), dtype=np.intp)
    elif k > BLOSSOM_LIMIT:
        coords = np.stack(np.unravel_index(np.arange(k), policy.domain.shape), axis=1)
        step = np.abs(coords[pairs[:, 0]] - coords[pairs[:, 1]]).sum(axis=1) == 1
        if step.any() and not step.all():  # keep the unit steps (bipartite by the parity of the coordinate sum)
            pairs = pairs[step]  # (none at all: every edge is kept, and networkx's blossom decides)
    return pairs.astype(np.intp)


def best_matching(edges: np.ndarray, weights: np.ndarray, bipartite: bool | None = None) -> list[tuple[int, int]]:
    """A maximum-weight matching of the graph ``edges`` (positive ``weights``).

    Bipartite graphs (the line, the grid and their subgraphs) go to scipy's
    assignment solver (``linear_sum_assignment`` on the two colour classes,
    an unmatched vertex costing 0); others to networkx's blossom algorithm.
    Both are exact, so the matching is the same up to ties (probability 0
    with continuous noise). ``bipartite`` chooses the solver when given: a
    caller whose ``edges`` are a noisy subset of a public graph passes that
    graph's bipartiteness, so the solver (and its running time, 0.8 ms
    against 25 ms at k = 64) tells nothing about which edges were kept
    (an independent attacker found the choice made on the kept edges, a
    function of the data and the noise beyond the released matching). With
    ``bipartite=True`` the graph must be bipartite.

    Examples
    --------
    >>> sorted(best_matching(np.array([[0, 1], [1, 2], [2, 3]]), np.array([1.0, 5.0, 1.0])))
    [(1, 2)]
    """
    if len(edges) == 0:
        return []
    import networkx as nx  # lazy: import time
    from scipy.optimize import linear_sum_assignment

    G = nx.Graph()
    G.add_weighted_edges_from(zip(edges[:, 0].tolist(), edges[:, 1].tolist(), weights.tolist()))
    if bipartite is None:
        bipartite = nx.is_bipartite(G)
    if not bipartite:
        return [tuple(sorted(p)) for p in nx.max_weight_matching(G)]
    colour = {}
    for comp in nx.connected_components(G):
        left, _ = nx.bipartite.sets(G.subgraph(comp))
        colour.update({v: v in left for v in comp})
    left = sorted(v for v, c in colour.items() if c)
    right = sorted(v for v, c in colour.items() if not c)
    li, ri = {v: i for i, v in enumerate(left)}, {v: i for i, v in enumerate(right)}
    cost = np.zeros((len(left), len(right)))
    for (a, b), w in zip(edges.tolist(), weights.tolist()):
        if not colour[a]:
            a, b = b, a
        cost[li[a], ri[b]] = min(cost[li[a], ri[b]], -w)
    rows, cols = linear_sum_assignment(cost)
    chosen = cost[rows, cols] < 0
    return [tuple(sorted((left[r], right[c]))) for r, c in zip(rows[chosen], cols[chosen])]


def _public_bipartite(pairs: np.ndarray) -> bool:
    """Whether the public candidate graph ``pairs`` is bipartite (then so is every subgraph of it)."""
    import networkx as nx  # lazy: import time

    G = nx.Graph()
    G.add_edges_from(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist()))
    return nx.is_bipartite(G)


def matching_partition(x, pairs: np.ndarray, epsilon: float, eps2: float, rng: np.random.Generator) -> np.ndarray:
    """Buckets of one or two cells by a noisy maximum-weight perfect matching (ε-DP for one changed count).

    The perfect matching of the module notes is found on the cells alone:
    a perfect matching is a matching P of cells along candidate pairs (the
    secondaries of paired cells pair up along the same candidate pairs at
    weight 0, the others take their singleton edge), so its weight is
    Σᵢ wᵢ + Σ_{(i,j)∈P} (w_ij − wᵢ − w_j), and the best perfect matching is
    a maximum-weight matching on the cells with weights w_ij − wᵢ − w_j,
    keeping only the positive ones (the others never improve a matching),
    by :func:`best_matching`. Same noise, same argmax, so the same mechanism;
    k nodes instead of 2k, and few edges (seconds at 4,096 cells where the
    2k-node graph took minutes).

    Examples
    --------
    >>> x = np.array([0.0, 0.0, 50.0, 50.0])
    >>> matching_partition(x, np.array([[0, 1], [1, 2], [2, 3]]), 1e9, 1.0, np.random.default_rng(0)).tolist()
    [0, 0, 1, 1]
    """
    x = np.asarray(x, dtype=float)
    k = x.size
    scale = 2.0 / epsilon
    single = -1.0 / eps2 + selection_laplace(rng, scale, k)  # w_i: cell i alone
    pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
    pair = -(np.abs(x[pairs[:, 0]] - x[pairs[:, 1]]) + 1.0 / eps2) + selection_laplace(rng, scale, len(pairs))
    gain = pair - single[pairs[:, 0]] - single[pairs[:, 1]]
    keep = gain > 0
    matching = best_matching(pairs[keep], gain[keep], bipartite=_public_bipartite(pairs))
    blocks = np.full(k, -1, dtype=np.intp)
    next_id = 0
    for a, b in matching:
        blocks[[a, b]] = next_id
        next_id += 1
    for i in range(k):
        if blocks[i] < 0:
            blocks[i] = next_id
            next_id += 1
    # number blocks in order of their first cell, so that projections keep the domain order where they can
    first = np.full(next_id, k)
    np.minimum.at(first, blocks, np.arange(k))
    rank = np.empty(next_id, dtype=np.intp)
    rank[np.argsort(first, kind="stable")] = np.arange(next_id)
    return rank[blocks]
