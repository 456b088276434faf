"""DAWA: data- and workload-aware range queries (Li, Hay, Miklau, Wang, VLDB 2014).

Two steps, ε = ε₁ + ε₂ (``ratio`` = ε₁/ε):

1. **Private partition.** Since issue 25 the default is a PrivTree
   partition (:mod:`.privtree`): a fixed binary tree over the cells, each
   node split when its count, less a bias of δ per level, beats θ = 1/ε₂
   after Laplace noise; privacy independent of the depth, one-sided score,
   derived and checked there. It replaced the noisy least-cost partition
   below (``partition="l1"``), whose minimum over ~k log k noisy interval
   costs collected the most negative draws: at k = 4,096 it never kept
   fewer than ~450 buckets, whatever the data (issue 25's table; PrivTree
   keeps 10–30 on the sparse DPBench sets at ε = 0.01, where the
   non-private reference keeps 13–15). On one-dimensional domains the two
   end cells are tested on their own beside the tree (stop 40, below).

   For the histogram the depth bias starts at level ⌊D/2⌋ of the tree
   (:func:`histogram_offset`): empty space is then cut into at most
   2^{⌊D/2⌋} buckets, costing about one bucket's noise on the histogram, and
   a lone cell is isolated at about half the count. Privacy does not
   depend on where the bias starts (:mod:`.privtree`). The principle is the
   histogram's noise price; on the DPBench sets it moved DAWA's histogram
   error by 0.21–2.7× (median 0.78×) in a one-off comparison of two runs
   (issue 25), range workloads keep the bias from the root.

   **The worst cell, and what no private partition avoids (issue 25, stop 33).**
   MEDCOST's histogram at ε = 0.01: cell 0 holds h = 2,782 of 9,415
   records, ε₁h = 6.96 < ln k = 8.32. In closed form
   (``benchmarks/dawa_spike.py``, ``dawa_spike.md``): PrivTree makes
   {0} a bucket with probability 0.046 (its lone-cell level θ + 5δ is
   4,293), and the bucket holding the spike costs 1,356 a cell in
   expectation (the partition's own error measured in
   ``dawa_reference.md``: 1,630). Every release with an ε₁-DP partition
   and this second stage costs at least 74.5 a cell on the data set or on
   one of its copies with the spike moved to an empty cell (derived there:
   a chain of neighbours from 0 to h records bounds P[false
   singleton]·P[missed spike] ≥ ¼e^{−ε₁(h+1)} per cell): 1.33× the
   reference's expected error (55.8 ± 5.7 a cell over 1,000 runs), so 3×
   is not ruled out. A per-cell test
   x_i + Lap(1/ε₁) > T nearly reaches it (74.6) but spends all of ε₁ on
   spikes; with half of ε₁ it is 425 a cell, so no public split of ε₁
   between such a test and PrivTree reaches 3× here, and Laplace (20,000)
   is 13× worse than DAWA, so the private choice rightly keeps DAWA.
   **Closed in stop 40 by where the spike sits:** cell 0, an end of the
   domain. On one-dimensional domains PrivTree now tests the two end cells
   on their own (``ends``, :mod:`.privtree`: parallel composition, no
   budget), so a spike there is one of two candidates, not one of k, and
   ε₁h = 6.96 is far above ln 2: MEDCOST at ε = 0.01 went from 1,363 ± 26
   to 68.0 ± 2.7 a cell (Adaptive 1,398 → 78.1 ± 3.1, 1.31 ± 0.28 × the
   reference's 59.5 ± 12; ``dawa_sparse.md``, 250 runs). The principle is
   where one-dimensional data pile up (values clamped to the bounds, the
   zeros of a mostly-zero attribute), not this set; a lone spike inside
   the domain still costs what the floor above says.
   Neither where the bias starts nor β = e^{δ/λ} (the fanout's part in it)
   does: modelled and measured in :func:`histogram_offset` (stop 34), the
   best public level for a lone spike cuts MEDCOST's error at ε = 0.01 by
   39% (1,473 → 905 a cell, still 54× the reference) and costs the sparse
   sets elsewhere up to 8×.

   Nor does a per-cell spike test x_i + Lap(1/ε_S) > T beside PrivTree
   (stop 36, ``benchmarks/dawa_spiketest.py``, ``dawa_spiketest.md``; T
   the public minimax of a false singleton's noise against a missed
   spike's bias, or at most one false singleton on k empty cells). It can
   even share ε₁ without splitting it: PrivTree on y = min(x, c) and the
   test on x − y, both at ε₁, since one record moves y_i by a and
   x_i − y_i by 1 − a and PrivTree's bound is linear in the move (exact
   at k = 8 there; unclipped, 1.30ε₁). Measured (3 runs): the histogram's
   median over the reference goes 1.25 → 1.42–1.87, MEDCOST at ε = 0.01
   80.8 → 13.4–105 and the sparse sets at ε = 0.01 1.59 → 6.6–13.4
   (NETTRACE: the false singletons, ≈ 24σ₂² at the minimax T, and the
   band between c and c + T that neither part sees); on UCI Adult it
   fixes the lone-cell columns (up to 22× better) and is up to 3.6× worse
   on five cells at ε ≤ 0.1. Nor does a larger ε₁ with PrivTree
   (``benchmarks/dawa_ratio.py``): 0.4ε and 0.5ε take MEDCOST to 26.6
   and 17.2 × the reference but the histogram's median to 1.73 and 1.96,
   ranges' to 1.52 and 2.29. Spikes against clustered mass is a choice
   the data must make (privately), not a public threshold or split.

   **The noisy least-cost partition** (``partition="l1"``). The cost of a bucket B is its L1 deviation
   dev(B) = Σ_{i∈B} |x_i − mean_B(x)| plus the expected absolute noise of its
   measured total. Every interval whose length is a power of two gets a noisy
   cost, and a shortest path returns the partition of least noisy cost.
   All deviations come from a wavelet matrix over the cells' ranks
   (:func:`interval_deviations`, O(k log k) per length) and the path from
   Dijkstra's algorithm (:func:`shortest_path_starts`): O(k log² k) in all,
   where summing every window cost O(k²) (issue 16).
2. **Workload-aware measurement.** Over the buckets, a binary hierarchy is
   weighted greedily, bottom-up, to minimise the workload's least-squares
   error ⟨(AᵀA)⁻¹, EᵀWᵀWE⟩ (E spreads a bucket total uniformly over its
   cells); the weights along every root-to-leaf path sum to 1, so one record
   moves the measurements by 1 in L1. Laplace(1/ε₂) noise, least squares,
   uniform expansion.

**Privacy of step 1, derived here.** Adding or removing one record at cell i
changes dev(B) by at most δ_B = 2 − 2/|B| for intervals B ∋ i and leaves
every other interval's cost alone. Fix the noise of the intervals not
containing i: the least-cost partition is then determined by which interval
B* ∋ i wins min_B (c_B + η_B + L_B), the L_B (best partitions left and right
of B) being unchanged. This is report-noisy-min over independent noises, and
the winner's margin moves by at most δ_{B*} + max_B δ_B, so noise of scale
(δ_B + max δ)/ε₁ on each interval — single cells included, whose δ is 0 but
whose margin still moves by max δ — makes the partition ε₁-DP. The argument
needs the noisy costs exactly as drawn: **no floor**. A floor max(c + η,
floor) lets the winner sit at the floor, where it cannot absorb a
competitor's drop; floored at ``bucket_cost`` the partition's privacy loss
was measured at 1.31 for ε₁ = 1 (issue 13; the privacy hunter of
:mod:`blowfish_nb.analysis.hunt` flags it). Without a floor costs may be
negative; the least-cost partition is a shortest path through the DAG of
intervals, which negative weights do not disturb.

**Do single cells need their own noise? Yes.** A single cell's cost never
moves (dev = 0), but the argument above needs noise on the *winner*, and a
singleton {i} wins iff its cost beats every competitor B ∋ i, each of which
moves by up to δ_B: its winning threshold moves by max δ, so it needs scale
max δ/ε₁ like any other candidate. Without it the chance that {i} wins is a
product of one tail probability per competitor; the ratio between
neighbours is then bounded only by exp(Σ_B δ_B/b_B) over the ~2k intervals
holding i, i.e. not at all. DPComp's recipe drops exactly this noise (besides its
smaller scale and its floor). The hunter does not flag our partition with
the singletons' noise removed at k = 8 (lower bound 0.65 for ε₁ = 1, 16
pairs, 40,000 runs; issue 16), so the loss may be small there, but no
argument here certifies it: the noise stays. Nor can any candidate's scale go below
(δ_B + max δ)/ε₁ in this argument: it is the largest move of the winner's
margin. What the budget can still buy is the split ε₁/ε: measured on the
seven DPBench sets × ε ∈ {0.01, 0.1, 1} under dp (one run each, issue 16),
ε₁ = 0.4ε lowers DAWA's histogram error to 0.74× (median; 0.92×, 0.74×,
0.55× per ε) of ε₁ = 0.25ε but raises its error on 2,000 random ranges to
1.44×; ε₁ = 0.1ε gives 0.90× on ranges and 1.8× on histograms; a larger
public penalty (4 or 6 noise scales) is worse on both. At smaller budgets
the histogram gain goes: under G¹ at ε/2 ≤ 0.05 (``anuarbek.md``) 0.4ε is
lower in 7 of 21 cells only. The default stays 0.25.

**Finding on the reference implementation.** DPComp's ``cutil.cpp`` uses
scale (2 − 1/|B| − 1/n)/ε₁ on intervals longer than one cell, *no* noise on
single cells, and the same floor; built and run by the reviewer of issue 13
it violated ε₁-DP by a factor of about 53 on a k = 8 case. Our hunter's
fixture re-implements that recipe from this description and flags it.

**A public penalty instead of the floor.** The floor was there for utility:
the minimum over many noisy sums favours partitions with many buckets (more
chances of a large negative draw). Every candidate's cost here carries
``PENALTY`` times its own noise scale, a constant fixed by |B| and ε₁ alone:
it shifts scores by public amounts, so the report-noisy-min argument is
unchanged, and it restores most of the floor's utility (on 256-cell piecewise
constant, rough and sparse histograms DAWA's error is 1.4–10× below
Laplace's with 2, 1.8–2.4× with none; ``tests/mechanisms/test_dawa.py``).

Under a policy with edges between cells (not to ⊥), a neighbour changes two
counts, so both steps run with ε/2 (group privacy). For Blowfish, DAWA runs
on the transformed data of a tree policy (``Transformed(inner="dawa")``),
where one edge of the policy changes one count of x_T.

Two-dimensional domains are linearised along a Hilbert curve (as the DAWA
paper does); other dimensions use the cells' row-major order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from .._validation import as_generator, check_epsilon
from ..exceptions import InvalidParameterError
from ..policy import BOTTOM, Policy
from ..policy.unbounded import UnboundedDP
from ..workload import Workload
from . import noise
from .base import Mechanism, _check_histogram
from ..ranges import as_ranges
from .gram import as_sparse, bucket_gram
from .privtree import privtree_partition

__all__ = ["DAWA", "dawa_estimate", "histogram_offset", "partition_starts", "PARTITIONS", "l1_partition", "interval_deviations", "least_cost_starts", "shortest_path_starts", "hilbert_order", "PENALTY"]

#: DAWA's default share of ε spent on the partition
RATIO = 0.25
#: above this many cells one partition is found by Dijkstra's algorithm (:func:`shortest_path_starts`)
DIJKSTRA_FROM = 256
#: public per-bucket penalty, in units of the interval's noise scale (see the module notes)
PENALTY = 2.0
#: step 1's algorithms: PrivTree (:mod:`.privtree`, the default since issue 25) or the noisy least-cost partition
PARTITIONS = ("privtree", "l1")


@dataclass(frozen=True)
class DAWA(Mechanism):
    """DAWA (L1 partition + greedy workload-aware hierarchy), data-dependent.

    Parameters
    ----------
    ratio : float
        Share of ε spent on the partition (0 < ratio < 1).
    granularity : int
        Number of candidate splits tried per tree node in the greedy weighting.
    decay : bool
        GreedyH's depth decay in the greedy weighting (see ``_GreedyTree``).
    partition : {"privtree", "l1"}
        Step 1: a PrivTree partition on counts (:mod:`.privtree`) or the
        noisy least-cost partition of every interval of power-of-two length
        (:func:`l1_partition`, the pre-issue-25 default).
    ends : bool
        On one-dimensional domains PrivTree tests the two end cells on their
        own (:mod:`.privtree`, stop 40; no budget: parallel composition).
        ``False`` is the tree alone, for comparison.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> x = np.r_[np.zeros(60), np.full(4, 500.0)]
    >>> answers = DAWA().release(x, workload.identity(64), policy.dp(Domain.grid(64)), 1.0, rng=0)
    >>> answers.shape, bool(abs(answers[:60].sum()) < 100)
    ((64,), True)
    """

    ratio: float = RATIO
    granularity: int = 100
    decay: bool = True
    partition: str = "privtree"
    ends: bool = True
    name = "DAWA"
    registry = {"dawa": {}}
    linear = False

    def __post_init__(self):
        if not (isinstance(self.ratio, (int, float)) and 0 < float(self.ratio) < 1):
            raise InvalidParameterError(f"ratio must lie strictly between 0 and 1, got {self.ratio!r}")
        if isinstance(self.granularity, bool) or not isinstance(self.granularity, int) or self.granularity < 2:
            raise InvalidParameterError(f"granularity must be an integer >= 2, got {self.granularity!r}")
        if self.partition not in PARTITIONS:
            raise InvalidParameterError(f"partition must be one of {PARTITIONS}, got {self.partition!r}")
        if not isinstance(self.ends, bool):
            raise InvalidParameterError(f"ends must be True or False, got {self.ends!r}")

    def _release(self, x, workload: Workload, policy: Policy, epsilon: float, rng) -> np.ndarray:
        order = hilbert_order(policy.domain.shape)
        if np.array_equal(order, np.arange(x.size)) and as_ranges(workload) is not None:
            W = workload
        else:
            W = as_sparse(workload)[:, order]
        estimate = np.empty(x.size)
        estimate[order] = dawa_estimate(
            x[order], W, epsilon / _group(policy), rng, ratio=self.ratio, granularity=self.granularity,
            decay=self.decay, partition=self.partition, offset=histogram_offset(workload, x.size),
            ends=self.ends and _ends(policy))
        return np.asarray(workload @ estimate, dtype=float)

    def partitions(self, x, policy: Policy, epsilon: float, size: int, rng=None, workload=None) -> np.ndarray:
        """``size`` draws of step 1 alone: a block label per cell (the bucket's first cell in domain order).

        The buckets are visible in the answers (uniform expansion), so the
        partition is part of what is released; it claims
        :meth:`partition_epsilon`. With ``workload`` the draws follow the law
        a release of that workload uses (PrivTree's bias level
        :func:`histogram_offset`: ⌊D/2⌋ on the histogram); without it, level 0
        (the range workloads' law).
        """
        self.require(policy)
        epsilon = check_epsilon(epsilon)
        rng = as_generator(rng)
        x = _check_histogram(x, policy.domain.size)
        order = hilbert_order(policy.domain.shape)
        eps = epsilon / _group(policy)
        offset = 0 if workload is None else histogram_offset(workload, x.size)
        starts = partition_starts(x[order], self.ratio * eps, 1.0 / ((1 - self.ratio) * eps), rng, size=size,
                                  method=self.partition, offset=offset, ends=self.ends and _ends(policy))
        first = np.maximum.accumulate(np.where(starts, np.arange(x.size), 0), axis=1)
        labels = np.empty_like(first)
        labels[:, order] = order[first]
        return labels

    def partition_epsilon(self, epsilon: float) -> float:
        """The ε the partition step spends."""
        return self.ratio * epsilon

    def expected_error(self, workload, policy, epsilon):
        raise InvalidParameterError("DAWA is data-dependent: it has no analytic expected error; measure it")

    def __repr__(self) -> str:
        return f"DAWA(ratio={self.ratio}, partition={self.partition!r}{'' if self.ends else ', ends=False'})"


def dawa_estimate(x, W, epsilon: float, rng: np.random.Generator, *, ratio: float = RATIO,
                  granularity: int = 100, decay: bool = True, partition: str = "privtree",
                  score: str = "count", offset: int = 0, ends: bool = False) -> np.ndarray:
    """DAWA's estimate of the vector x (ε-DP when one record changes one entry of x by 1).

    Parameters
    ----------
    x : array of k floats
        The data (counts, or transformed counts; any real values).
    W : Workload or scipy sparse matrix
        The queries over x's entries (see :func:`~blowfish_nb.mechanisms.gram.bucket_gram`).
    epsilon : float
        Total budget; ``ratio`` of it goes to the partition.
    rng : numpy.random.Generator
    partition, score : str
        Step 1 (see :func:`partition_starts`).
    offset : int
        PrivTree's bias level j₀ (:func:`histogram_offset`; 0 but for the histogram).
    ends : bool
        PrivTree tests the two end cells on their own (:func:`~.privtree.privtree_partition`; DAWA passes it on
        one-dimensional domains).

    Returns
    -------
    array of k floats
        Uniform expansion of the least-squares bucket totals.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> x = np.r_[np.full(8, 10.0), np.zeros(8)]
    >>> est = dawa_estimate(x, sp.identity(16, format='csr'), 1e6, np.random.default_rng(0))
    >>> np.allclose(est, x, atol=1e-3)
    True
    """
    x = np.asarray(x, dtype=float)
    eps1, eps2 = ratio * epsilon, (1 - ratio) * epsilon
    starts = partition_starts(x, eps1, 1.0 / eps2, rng, method=partition, score=score, offset=offset, ends=ends)
    M = bucket_gram(W, starts)
    totals = np.add.reduceat(x, starts)
    tree = _GreedyTree(M, granularity, decay)
    estimate = tree.least_squares(totals, 1.0 / eps2, rng)
    sizes = np.diff(np.r_[starts, x.size])
    return np.repeat(estimate / sizes, sizes)


def partition_starts(x, epsilon: float, bucket_cost: float, rng: np.random.Generator, size: int | None = None,
                     method: str = "privtree", score: str = "count", offset: int = 0,
                     ends: bool = False) -> np.ndarray:
    """DAWA step 1 (ε-DP for one entry of x changed by at most 1): the first cells of the buckets.

    ``method="privtree"``: :func:`~.privtree.privtree_partition` with θ =
    ``bucket_cost`` (1/ε₂, the second stage's noise per bucket) and
    ``score`` ("count", the default everywhere, or "deviation", see
    :mod:`.privtree`), the two end cells tested on their own with ``ends``
    (one-dimensional histograms: see :mod:`.privtree`); ``"l1"``:
    :func:`l1_partition` (``ends`` is PrivTree's only). With ``size``, a
    boolean (size, k) array of bucket starts.

    Examples
    --------
    >>> x = np.r_[np.zeros(8), np.full(8, 100.0)]
    >>> partition_starts(x, 1e9, 1.0, np.random.default_rng(0), method="l1").tolist()
    [0, 8]
    """
    if method not in PARTITIONS:
        raise InvalidParameterError(f"partition must be one of {PARTITIONS}, got {method!r}")
    if method == "l1":
        return l1_partition(x, epsilon, bucket_cost, rng, size=size)
    return privtree_partition(x, epsilon, bucket_cost, rng, score=score, size=size, offset=offset, ends=ends)


def histogram_offset(workload, k: int) -> int:
    """PrivTree's bias level j₀ for DAWA: ⌊D/2⌋ (D = ⌈log₂ k⌉, the tree's depth) for the histogram, else 0.

    On the histogram a bucket B's noise reaches its cells as σ₂²/|B| in all
    (uniform expansion of one noisy total), so cutting empty space into the
    2^{j₀} nodes of level j₀, about k/2^{j₀} cells each, costs about
    4^{j₀}/k bucket noises: at most one for j₀ ≤ D/2. Starting the bias there
    lowers the count a lone cell needs to be isolated by ⌊D/2⌋δ (about half)
    at that price; privacy is the same for any public j₀ (:mod:`.privtree`).
    Range workloads keep j₀ = 0: a range adds up the noise of every bucket it
    covers, and more buckets over empty space cost them more.

    **That price is about 5×, not 1×** (issue 25, fourth session). Below j₀
    an empty node's biased score sits at the clamp θ − δ, so it still
    splits with probability ½e^{−δ/λ} = ¼; each node of s cells spawns a
    branching process whose expected noise is f(s) = ¾/s + ½f(s/2) =
    (¾ log₂ s + 1)/s bucket noises, 4^{j} (¾(D − j) + 1)/k over level j:
    5.5 at j₀ = 6, k = 4,096 (an empty histogram's Σ 1/|B| measured 5.0
    over 400 draws; 0.35 at j₀ = 4, 1.37 at 5). The rule "≤ one bucket
    noise", counted so, gives j₀ = 4; tried in
    ``python -m benchmarks.dawa_reference --runs 3`` it is not better on
    issue 25's targets (DAWA/ref on the histogram: median 1.20 either way,
    worst 36.7 vs 27.6; INCOME at every ε and HEPTH at ε ≥ 0.1 1.4–1.8×
    worse, NETTRACE and ADULTFRANK at ε = 0.01 1.6× and 3.1× better, at
    ε = 0.1 within 10%; Adaptive's median 0.86 vs 0.98, its worst 39.9 vs
    28.8), so ⌊D/2⌋ stays, with this
    as its known price: the trade is between isolating sparse cells and
    splitting dense ones, which the data decide.

    **The minimax level of a public cost model (issue 25, stop 34).** In
    closed form (``benchmarks/dawa_offset.py``, ``dawa_offset.md``), in
    bucket noises σ₂² = 2/ε₂²: empty space costs E₀(j) (the branching sum
    above, 4.97 at j = 6, 55.9 at j = 8 for k = 4,096), and a lone spike of h
    records C₀(h, j), the bias h²(1 − 1/|B|) of the bucket it ends in plus
    the buckets' noise (the model is within 2.2 standard errors of 40 DAWA
    releases in each of six cases there). Over the family "empty space and
    s ≥ 1 spikes of any height at unknown cells", whose oracle pays σ₂² a
    spike, the worst ratio is max_h C₀(h, j): 271 at j = 6 against 160 at
    j* = 8, and j* = ⌊D/2⌋ + 2 for every k from 256 to 65,536 and ε from
    0.01 to 1 (the costs scale as 1/ε²). The fanout's part, β = e^{δ/λ},
    does not improve the trade (empty space against worst spike) for β
    from 1.25 to 3: none beats β = 2's curve, 1.25 is worse. Measured at j* (``python -m
    benchmarks.dawa_reference --runs 3 [--histogram-offset 8]``, dpcomp_core's
    own partition, same seeds): DAWA/reference on the histogram falls where
    mid-density structure was left unsplit (INCOME 4.61 → 2.47 at ε = 0.1,
    4.12 → 2.33 at 1; HEPTH 2.87 → 1.63, 3.01 → 1.69; MEDCOST at ε = 0.01
    88 → 54) and rises where empty space dominates (ADULTFRANK at ε = 0.01
    0.97 → 8.0, NETTRACE 1.65 → 6.7, MEDCOST at ε = 0.1 1.21 → 2.50); the
    median goes 1.21 → 1.63, the worst cell other than MEDCOST at ε = 0.01
    4.61 → 8.02, Adaptive's median 1.00 → 1.07 (its worst against Laplace
    1.074 either way). The minimax level serves the spike family and the
    dense sets at the sparse sets' expense, so ⌊D/2⌋ stays: no public level
    does both, and choosing one per data set is a private choice, not a
    constant. ⌊D/2⌋ is not this model's optimum either (its worst spike is
    1.7× j*'s, its empty space 11× cheaper): it is kept as the measured
    compromise, not as a derived level. A free and always-right choice
    between ⌊D/2⌋ and j* per cell would give DAWA/reference a median of
    1.21 and a worst of 2.47 but for MEDCOST at ε = 0.01 (54): the most a
    private choice of the level could buy here (``dawa_offset.md``).

    Examples
    --------
    >>> from blowfish_nb import workload
    >>> histogram_offset(workload.identity(4096), 4096), histogram_offset(workload.prefix(4096), 4096)
    (6, 0)
    """
    r = as_ranges(workload)
    histogram = getattr(workload, "is_identity", False) or (
        r is not None and r.lo.size == k and np.array_equal(r.lo, np.arange(k)) and np.array_equal(r.hi, r.lo))
    return (max(int(k) - 1, 0).bit_length() // 2) if histogram else 0


def l1_partition(x, epsilon: float, bucket_cost: float, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
    """DAWA step 1: the first cells of the buckets of the least noisy-cost partition (ε-DP).

    Candidate buckets are all intervals whose length is a power of two; the
    cost of a bucket is dev(B) + ``bucket_cost`` + ``PENALTY``·scale plus
    Laplace noise of scale (δ_B + max δ)/ε (see the module notes). The noisy
    costs are *not* floored:
    the least-cost partition is a shortest path through a DAG of intervals,
    which negative costs do not disturb, and a floor would break the
    report-noisy-min argument (the reference implementation's floor is what
    made its partition leak).

    Parameters
    ----------
    size : int, optional
        Draw ``size`` independent partitions at once (audits, tests); the
        result is then a boolean array of shape (size, k), True at the first
        cell of every bucket.

    Examples
    --------
    >>> x = np.r_[np.zeros(8), np.full(8, 100.0)]
    >>> l1_partition(x, 1e9, 1.0, np.random.default_rng(0)).tolist()
    [0, 8]
    """
    x = np.asarray(x, dtype=float)
    k = x.size
    n = 1 if size is None else int(size)
    lengths = 1 << np.arange(k.bit_length())
    lengths = lengths[lengths <= k]
    top = 2.0 - 2.0 / lengths[-1]
    cost = np.full((n, lengths.size, k), np.inf)
    for j, (L, dev) in enumerate(zip(lengths, interval_deviations(x, lengths))):
        scale = (2.0 - 2.0 / L + top) / epsilon
        cost[:, j, : dev.size] = dev + (bucket_cost + PENALTY * scale) + noise.selection_laplace(rng, scale, (n, dev.size))
    if size is None and k > DIJKSTRA_FROM:
        return shortest_path_starts(cost[0], lengths)
    return least_cost_starts(cost, lengths, size)


def interval_deviations(x, lengths) -> list[np.ndarray]:
    """dev(B) = Σ_{i∈B} |x_i − mean_B(x)| of every interval B = [s, s + L), per length L, in O(k log k) per length.

    dev = S − 2·S₋ − μ·(L − 2·n₋), where S₋ and n₋ are the sum and number of
    the cells of B below its mean μ. Cells below μ are those whose rank (in
    sorted order) is below r = #{i : x_i < μ}; a wavelet matrix over the
    ranks counts them in any interval in log₂k steps of O(1) each, and
    carries prefix sums of x per level for S₋, so every interval of every
    length is answered at once by whole-array steps. The windowed form (Σ
    over every window of its L cells) costs O(kL) per length and O(k²) over
    all of them — the step that made DAWA grow as k^1.84.

    Examples
    --------
    >>> interval_deviations(np.array([0.0, 4.0, 1.0, 1.0]), [1, 2, 4])[1].tolist()
    [4.0, 3.0, 0.0]
    """
    x = np.asarray(x, dtype=float)
    k = x.size
    lengths = [int(L) for L in lengths]
    order = np.argsort(x, kind="stable")
    sorted_x = x[order]
    seq = np.empty(k, dtype=np.int64)
    seq[order] = np.arange(k)  # ranks, in domain order
    values = x.copy()
    bits = k.bit_length()  # ranks and thresholds r ≤ k fit
    levels = []  # per level, top bit first: zeros before each position, x summed over them, number of zeros
    for level in range(bits - 1, -1, -1):
        zero = ((seq >> level) & 1) == 0
        zeros = np.r_[0, np.cumsum(zero)]
        sums = np.r_[0.0, np.cumsum(np.where(zero, values, 0.0))]
        levels.append((level, zeros, sums, int(zeros[-1])))
        move = np.r_[np.flatnonzero(zero), np.flatnonzero(~zero)]  # stable: zeros first
        seq, values = seq[move], values[move]
    # every interval of every length at once
    starts = [np.arange(k - L + 1, dtype=np.int64) for L in lengths]
    a = np.concatenate(starts)
    size = np.concatenate([np.full(s.size, L, dtype=np.int64) for s, L in zip(starts, lengths)])
    b = a + size
    cum = np.r_[0.0, np.cumsum(x)]
    total = cum[b] - cum[a]
    mu = total / size
    r = np.searchsorted(sorted_x, mu, side="left")  # cells below μ are exactly those of rank < r
    below_n = np.zeros(a.size)
    below_s = np.zeros(a.size)
    for level, zeros, sums, n_zeros in levels:
        one = ((r >> level) & 1) == 1
        za, zb = zeros[a], zeros[b]
        # where r has a 1 here, every cell with a 0 here (and r's higher bits) has rank below r
        below_n += np.where(one, zb - za, 0)
        below_s += np.where(one, sums[b] - sums[a], 0.0)
        a = np.where(one, n_zeros + a - za, za)
        b = np.where(one, n_zeros + b - zb, zb)
    dev = np.maximum(total - 2.0 * below_s - mu * (size - 2.0 * below_n), 0.0)
    return np.split(dev, np.cumsum([s.size for s in starts])[:-1])


def least_cost_starts(cost: np.ndarray, lengths: np.ndarray, size: int | None) -> np.ndarray:
    """The least-cost partition per row of ``cost`` (n, lengths, k) — a shortest path, so negative costs are fine.

    Returns the bucket starts of the one run (``size`` None) or an (n, k) mask of starts.
    """
    n, _, k = cost.shape
    best = np.zeros((n, k + 1))
    back = np.zeros((n, k + 1), dtype=np.intp)
    rows = np.arange(n)
    for end in range(1, k + 1):
        m = np.searchsorted(lengths, end, side="right")
        begin = end - lengths[:m]
        total = best[:, begin] + cost[:, np.arange(m), begin]
        j = np.argmin(total, axis=1)
        best[:, end], back[:, end] = total[rows, j], begin[j]
    starts = np.zeros((n, k), dtype=bool)
    end = np.full(n, k)
    while (end > 0).any():
        live = end > 0
        end = np.where(live, back[rows, end], 0)
        starts[rows[live], end[live]] = True
    if size is None:
        return np.flatnonzero(starts[0]).astype(np.intp)
    return starts


def shortest_path_starts(cost: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The least-cost partition of one row of costs (lengths, k) by Dijkstra's algorithm, in O(k log² k).

    Cell boundaries 0..k are the vertices, candidate bucket [s, s + L) the
    edge s → s + L. Every partition is a path from 0 to k of total length k,
    so adding C·L to every edge of length L adds C·k to every path and
    leaves the least-cost one unchanged; with C above the most negative
    cost per cell every weight is positive, as Dijkstra needs. The same
    partition as :func:`least_cost_starts` (whose loop over the k cells runs
    in Python), up to ties between float sums.

    Examples
    --------
    >>> cost = np.array([[1.0, 1.0, 1.0, 1.0], [-5.0, 0.5, 0.5, np.inf], [3.0, np.inf, np.inf, np.inf]])
    >>> shortest_path_starts(cost, np.array([1, 2, 4])).tolist()
    [0, 2]
    """
    n_len, k = cost.shape
    j, begin = np.nonzero(np.isfinite(cost))
    size = np.asarray(lengths)[j]
    weight = cost[j, begin]
    shift = max(0.0, float(np.max(-weight / size))) + 1.0
    graph = sp.csr_array((weight + shift * size, (begin, begin + size)), shape=(k + 1, k + 1))
    _, previous = dijkstra(graph, directed=True, indices=0, return_predecessors=True)
    starts, end = [], k
    while end > 0:
        end = int(previous[end])
        starts.append(end)
    return np.array(starts[::-1], dtype=np.intp)


def hilbert_order(shape) -> np.ndarray:
    """Cells (row-major indices) in Hilbert-curve order for 2-D shapes, row-major order otherwise.

    The grid is embedded in the smallest 2^n square; consecutive cells of a
    full 2^n square are grid neighbours.

    Examples
    --------
    >>> hilbert_order((2, 2)).tolist()
    [0, 1, 3, 2]
    """
    shape = tuple(int(s) for s in shape)
    size = int(np.prod(shape))
    if len(shape) != 2:
        return np.arange(size)
    n = 1 << max(0, (max(shape) - 1).bit_length())
    r, c = np.unravel_index(np.arange(size), shape)
    x, y = r.astype(np.int64), c.astype(np.int64)
    d = np.zeros(size, dtype=np.int64)
    s = n // 2
    while s > 0:
        rx = (x & s) > 0
        ry = (y & s) > 0
        d += s * s * ((3 * rx.astype(np.int64)) ^ ry.astype(np.int64))
        flip = ~ry & rx
        x = np.where(flip, s - 1 - x, x)
        y = np.where(flip, s - 1 - y, y)
        swap = ~ry
        x, y = np.where(swap, y, x), np.where(swap, x, y)
        s //= 2
    return np.argsort(d, kind="stable")


class _GreedyTree:
    """A binary hierarchy over m buckets with greedily chosen node weights.

    Node v measures its total with weight (1 − p_v)·s_v, where s_v is the
    product of its ancestors' p; its children's subtrees are scaled by p_v.
    Working up from the leaves, with B the children's block-diagonal
    (AᵀA)⁻¹, u = B·1 and K = 1ᵀu, adding the node's row gives by
    Sherman–Morrison (AᵀA)⁻¹ = (B − β uuᵀ)/p² with β = (1−p)²/(p² + (1−p)²K),
    and the workload error ⟨(AᵀA)⁻¹, M⟩ = (Σ child errors − β uᵀMu)/p².

    **Depth decay** (GreedyH, dpcomp_core ``greedyH.py``): p is chosen on a
    grid to minimise a discounted version of that error at a node of depth
    d (root 0), decay = 2^(−d/2): the node's own row enters as if its
    weight were (1 − p)·√decay, and the part of uᵀMu that couples the two
    children (uᵀMu − Σ_c u_cᵀM_cc u_c, the queries that straddle the split)
    is scaled by decay; the discounted error is what a parent sees of its
    children. Deep nodes thus keep less weight and leave more to the
    leaves. ``decay=False`` gives the undiscounted local rule. The weights
    chosen either way are valid (paths still sum to 1), and the true error
    ⟨(AᵀA)⁻¹, M⟩ of the chosen weights is tracked exactly (``self.error``).
    The reference evaluates the rule with QᵀQ where Q belongs (its leaf
    error is ‖QᵀQ e_i‖²); here it is evaluated with M = QᵀQ as the
    least-squares error ⟨(AᵀA)⁻¹, QᵀQ⟩ requires.
    """

    def __init__(self, M: np.ndarray, granularity: int, decay: bool = True):
        m = M.shape[0]
        lo, hi, kids, depth = [0], [m], [], [0]
        i = 0
        while i < len(lo):
            if hi[i] - lo[i] > 1:
                mid = (lo[i] + hi[i]) // 2
                kids.append((len(lo), len(lo) + 1))
                lo += [lo[i], mid]
                hi += [mid, hi[i]]
                depth += [depth[i] + 1] * 2
            else:
                kids.append(None)
            i += 1
        self.lo, self.hi, self.kids = np.array(lo), np.array(hi), kids
        n = len(lo)
        self.p, self.beta, self.K = np.ones(n), np.zeros(n), np.ones(n)
        self.u: list[np.ndarray | None] = [None] * n
        err = np.zeros(n)  # the exact ⟨(AᵀA)⁻¹, M⟩ of each subtree
        score = np.zeros(n)  # what the (discounted) rule sees of each subtree
        own = np.zeros(n)  # u_vᵀ M_vv u_v
        grid = np.arange(1, granularity + 1) / granularity
        c = (1 - grid) ** 2
        for v in range(n - 1, -1, -1):
            if kids[v] is None:
                self.u[v] = np.ones(1)
                err[v] = score[v] = M[lo[v], lo[v]]
                own[v] = M[lo[v], lo[v]]
                continue
            a, b = kids[v]
            uc = np.concatenate([self.u[a], self.u[b]])
            K = self.K[a] + self.K[b]
            block = slice(lo[v], hi[v])
            q = float(uc @ M[block, block] @ uc)
            q1 = own[a] + own[b]
            d = 2.0 ** (-depth[v] / 2) if decay else 1.0
            cd = c * d
            rule = (score[a] + score[b] - ((q - q1) * d + q1) * cd / (grid**2 + cd * K)) / grid**2
            j = int(np.argmin(rule))
            p = grid[j]
            beta = c[j] / (p**2 + c[j] * K)
            self.p[v], self.beta[v], self.K[v] = p, beta, K * (1 - beta * K) / p**2
            self.u[v] = uc * (1 - beta * K) / p**2
            err[v] = (err[a] + err[b] - beta * q) / p**2
            score[v] = rule[j]
            own[v] = q * ((1 - beta * K) / p**2) ** 2
        self.error = float(err[0])  # ⟨(AᵀA)⁻¹, M⟩ of the chosen weights
        # children's K and u are needed again in the least-squares pass
        self.Kc = np.array([self.K[k[0]] + self.K[k[1]] if k else 1.0 for k in kids])
        self.uc = [np.concatenate([self.u[k[0]], self.u[k[1]]]) if k else None for k in kids]
        scale = np.ones(n)
        for v in range(n):
            if kids[v] is not None:
                for child in kids[v]:
                    scale[child] = scale[v] * self.p[v]
        self.scale = scale
        self.weight = np.where([k is None for k in kids], scale, (1 - self.p) * scale)

    def least_squares(self, totals: np.ndarray, scale: float, rng: np.random.Generator) -> np.ndarray:
        """Measure every weighted node total with noise of ``scale`` and return the bucket estimates.

        Node v's row is weight_v times its (whole) total; it is measured as
        weight_v · (total + DLap(scale/weight_v)), so one changed count moves
        the privacy loss by Σ_path weight/scale = 1/scale (the weights along a
        root-to-leaf path sum to 1).

        A row whose weight is so small that scale/weight exceeds the largest
        noise scale drawn (:data:`.noise.MAX_SCALE`; greedy weights multiply
        down the levels) is not measured at all: its y stays 0, a row of
        negligible precision in the least squares. Which rows those are
        follows from the partition and the workload alone, so the release
        never fails on a data-dependent condition.
        """
        cum = np.r_[0.0, np.cumsum(totals)]
        node_totals = cum[self.hi] - cum[self.lo]
        y = np.zeros(self.weight.size)
        with np.errstate(divide="ignore"):
            row_scale = np.where(self.weight > 0, scale / np.where(self.weight > 0, self.weight, 1.0), np.inf)
        measured = row_scale <= noise.MAX_SCALE
        w = self.weight[measured]
        y[measured] = w * noise.noisy(node_totals[measured], row_scale[measured], rng)
        return self.solve(y)

    def solve(self, y: np.ndarray) -> np.ndarray:
        """Least-squares bucket totals from the weighted node measurements ``y``."""
        local = y / self.scale
        z: list[np.ndarray | None] = [None] * self.weight.size
        for v in range(self.weight.size - 1, -1, -1):
            kids = self.kids[v]
            if kids is None:
                z[v] = local[v : v + 1]
                continue
            zc = np.concatenate([z[kids[0]], z[kids[1]]])
            p, beta, K, uc = self.p[v], self.beta[v], self.Kc[v], self.uc[v]
            z[v] = (1 - p) * local[v] * uc * (1 - beta * K) / p**2 + zc - beta * uc * zc.sum()
            z[kids[0]] = z[kids[1]] = None
        return z[0]


def _ends(policy: Policy) -> bool:
    """Whether PrivTree tests the two end cells on their own: on one-dimensional domains (the attribute's bounds)."""
    return len(policy.domain.shape) == 1


def _group(policy: Policy) -> int:
    """How many counts one neighbouring step changes: 1 when every edge goes to ⊥, else 2."""
    if type(policy) is UnboundedDP:  # the star to ⊥ by construction: 1 without building its k edges (issue 28)
        return 1
    for u, v in policy.edge_chunks():
        if (v != BOTTOM).any():
            return 2
    return 1
