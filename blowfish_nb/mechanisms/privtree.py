"""PrivTree partitions (Zhang, Xiao, Xie, SIGMOD 2016) of an ordered vector, for DAWA and the partition-first releases.

A fixed binary tree splits [0, k) at midpoints, down to single cells (public:
it depends on k only). From the root down, a node v is split when its
biased score plus noise beats a threshold θ:

    b(v) = max(g(v) − depth(v)·δ, θ − δ),   split  iff  b(v) + Lap(λ) > θ,

and the leaves reached are the buckets. Every node of the tree gets its
noise (drawn whether or not it is reached), so the time does not depend on
the data. O(k log k) for the scores of all nodes, O(k) for the rest.

Two scores, both **monotone** (a child's score is at most its parent's) and
moved by at most 1 on every node holding the changed cell, and by nothing on
any other node, when one entry of x changes by at most 1:

* ``"count"``: g(v) = Σ_{i∈v} |x_i|. One entry changes, so every node on its
  path moves by the *same* amount t, |t| ≤ 1 (**one-sided**). PrivTree's own
  score, for counts: a bucket of count c has L1 deviation below 2c, so the
  leaves are buckets whose deviation is bounded by about θ, and dense cells
  are split down to single cells.
* ``"deviation"``: g(v) = min_c Σ_{i∈v} |x_i − c| (the distance to the
  median). Monotone since for a child C ⊂ B, g(C) ≤ Σ_{i∈C} |x_i − med_B|
  ≤ g(B); 1-Lipschitz in every entry. The moves along a path may have
  different signs (**two-sided**). For vectors that are not counts, where a
  constant stretch should be one bucket whatever its level (offered, not
  used by default: on Transformed's x_T under G⁴ the count score did
  better, see :data:`~.transformed.SCORE`).

θ is the second stage's noise per bucket, 1/ε₂ (the ``bucket_cost`` DAWA
already adds): a node whose count (or deviation) is below it gains less by a
split than the extra bucket's noise costs. It is a public function of ε.

**Privacy, derived here (ε for one entry changed by at most 1).** Let β =
e^{δ/λ} and P(b) = Pr[b + Lap(λ) > θ]. The tree's shape is public and a
node off the changed cell's path has the same score, so the log-ratio of
the probability of one output (set of leaves) on neighbours is a sum over
the path v₀ (root), v₁, …, v_m (the leaf holding the cell) of
ln P(b′_j) − ln P(b_j) for the split nodes j < m and
ln(1 − P(b′_m)) − ln(1 − P(b_m)) for the leaf (none when the leaf is one
cell: it is never split). Facts used:

1. G = (ln P)′ is 1/λ below θ and (1/λ)(½e^{−u})/(1 − ½e^{−u}) ≤
   (1/λ)e^{−u} at b = θ + λu above it: non-increasing, and ≤
   (1/λ)·min(1, e^{−(b−θ)/λ}); (ln(1 − P))′ has magnitude ≤ 1/λ. So the
   leaf term is at most 1/λ in magnitude, and a split term is at most
   ∫ G over the interval its biased score moves through (length ≤ 1).
2. The unclamped scores s_j = g(v_j) − (j − j₀)δ fall by at least δ a level
   (g is monotone). A node with s_j + 1 ≤ θ − δ is clamped at θ − δ on both
   sides and contributes 0; the others, counted from the deepest, have
   s_r > θ − δ − 1 + rδ.

*One-sided* (``"count"``): every path node moves by the same t, so the
split terms all have one sign and the leaf term the other: the loss is at
most max(leaf, Σ split) ≤ Σ_r ∫_{s_r}^{s_r+1} G ≤
(1/λ)·Σ_{r≥0} min(1, e^{1/λ}β^{1−r}) (the r-th interval starts above
θ − 1 + (r−1)δ). For δ ≥ 1 this is (1/λ)(2 + e^{1/λ}/(β − 1)), → 3/λ for β
= 2 — PrivTree's (2β − 1)/((β − 1)λ), re-derived with the clamp at θ − δ.

*Two-sided* (``"deviation"``): signs may differ, so the terms add: a split
term is at most ∫ G over [s_j − 1, s_j] (G non-increasing), the r-th of
those starts above θ − δ − 2 + rδ, and the leaf adds 1/λ:
(1/λ)·(1 + Σ_{r≥0} min(1, e^{2/λ}β^{1−r})), → 4/λ for β = 2.

*Where the bias starts.* Nothing above uses the absolute level of the
bias, only that the unclamped scores fall by at least δ a level and the
clamp at θ − δ: the bias may start at any public level j₀ (``offset``;
b(v) = max(g(v) − (depth − j₀)δ, θ − δ), a bonus above j₀) with the same
bound. (Equivalently: b(v) > θ − η iff max(g(v) − depth·δ, θ − δ − j₀δ) >
θ − j₀δ − η, so j₀ is PrivTree from the root with its threshold and clamp
lowered by j₀δ, and the bound never depended on θ.) j₀ trades the coarsest bucket over empty space (nodes above j₀ are
split almost surely, so buckets are at most k/2^{j₀} cells) against the
level a lone cell must reach to be isolated (about θ + (D − 1 − j₀)δ for a
tree of depth D). Checked exactly at k = 8 for j₀ = 0, 1, 2, 3 (= D, every
split node biased upward) and by the hunter. Where it should start is a
utility question (:func:`~.dawa.histogram_offset`, ``benchmarks/dawa_offset.py``).

:func:`privtree_scale` solves these bounds for λ given ε (bisection; the
bound is decreasing in λ) with δ = λ ln 2. Checked exactly on small domains
(``tests/mechanisms/test_privtree.py`` enumerates every partition of k = 8 and
computes each one's probability in closed form on neighbours) and by the
violation hunter; a variant with half the noise is flagged.

**The two end cells (``ends=True``).** Locating one lone spike of h
records among m candidate cells takes ε₁h of about ln m for *any* ε₁-DP
partition (group privacy over the h records: if a spike at any of the m
cells is a bucket of its own with probability p, then on the data without
it each of those cells is one with probability at least p·e^{−ε₁h}, so
m·p·e^{−ε₁h} false singletons are expected there); PrivTree needs about
3 ln(k)/ε₁ from the root, and about θ + (D − 1 − j₀)δ from a bias level
j₀. No rule that treats the cells alike escapes the ln k. But the cells of
a one-dimensional histogram are not alike: its two ends are where the data
pile up — values clamped to the bounds land there, and an attribute that is
mostly zero (costs, capital gains, counts of events) has its zeros at the
lower bound. Testing those two cells on their own puts a spike there
among two candidates, not k (it is kept apart with probability
1 − ½e^{−(h − θ)ε} once h > θ, where the tree needs about θ + (D − 1 − j₀)δ),
and costs no budget:

* cell 0 is a bucket of its own iff |x₀| + Lap(1/ε) > θ, cell k − 1
  likewise (θ: the tree's own threshold, one bucket's noise), and the tree
  runs at the same ε on x with x₀ and x_{k−1} set to 0 (so it reads only
  x[1:k − 1], and its nodes are those of k cells); the partition is the
  tree's with a bucket boundary added after cell 0 and before cell k − 1
  when those are kept apart (post-processing).
* *Privacy.* One entry changed by at most 1 is x₀, x_{k−1} or an entry of
  x[1:k − 1]: it moves the input of exactly one of three independent parts
  (|x₀| is 1-Lipschitz, so its test is ε-DP; the tree is ε-DP by the bound
  above), and the log-ratio of any joint output of the three is the sum of
  their log-ratios, of which one is non-zero: at most ε (parallel
  composition); the partition is a function of that joint output. Checked
  exactly at k = 8 (every partition's probability in closed form on every
  neighbour) and by the hunter; the end test with half its noise is
  flagged.
* *Price where no end spike is.* An empty end cell is kept apart with
  probability ½e^{−θε} (0.36 in DAWA, whose θε = ε₁/ε₂ = 1/3): at most two
  cells more kept apart, each one bucket's noise on one cell. The tree keeps
  the nodes of k cells: a first version ran it on the k − 2 cells between
  the ends, whose nodes then straddle the dyadic points of k, and lost
  1.4–1.8× on SEARCHLOGS (ε = 0.01, 0.1) against the tree alone
  (``benchmarks/dawa_ends.py``, stop 40).

**Why not DAWA's noisy least-cost partition.** It scores every interval of
power-of-two length with noise and takes the least-cost partition: with noise
dominating, the least-cost path collects the most negative draws, and no
public per-bucket penalty undoes that without swamping real structure (a
first-moment bound over the partitions asks for about 4.5 noise scales a
bucket). PrivTree makes one noisy decision per node; the price is the
depth bias δ per level: a single spike is isolated down to one cell only when
its count exceeds about depth·δ ≈ 3 ln(k)/ε₁, within a factor 3 of what
any ε₁-DP mechanism needs to locate one spike among k cells (ln(k)/ε₁).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..exceptions import InvalidParameterError
from . import noise

__all__ = ["privtree_partition", "privtree_scale", "privtree_bound", "tree_nodes", "node_scores", "SCORES"]

SCORES = ("count", "deviation")
#: branching of the tree (binary: δ = λ ln 2)
FANOUT = 2


def privtree_bound(lam: float, score: str = "count") -> float:
    """The ε of PrivTree with noise scale ``lam`` and δ = λ ln 2 (see the module notes).

    Examples
    --------
    >>> round(privtree_bound(3e6) * 3e6, 4), round(privtree_bound(4e6, "deviation") * 4e6, 4)
    (3.0, 4.0)
    """
    _check_score(score)
    lam = float(lam)
    # 4,096 terms. The series has more than 4,096 terms equal to 1 once 1/λ > 4,095·ln 2 (λ < 3.5e-4, ε ≳ 1e7),
    # where this sum understates it; the bound stays sound because a root-to-leaf path has at most 64 nodes
    # (k < 2⁶⁴), so no real path has a term past the 64th.
    r = np.arange(0, 4096)
    shift = (1.0 if score == "count" else 2.0) / lam
    terms = np.exp(np.minimum(0.0, shift - (r - 1.0) * math.log(FANOUT)))  # min(1, e^a)
    total = float(np.sum(terms))
    return (total if score == "count" else 1.0 + total) / lam


def privtree_scale(epsilon: float, score: str = "count") -> float:
    """The least noise scale λ whose :func:`privtree_bound` is at most ``epsilon``.

    Examples
    --------
    >>> lam = privtree_scale(0.5)
    >>> privtree_bound(lam) <= 0.5, round(lam * 0.5, 2)
    (True, 3.17)
    """
    _check_score(score)
    epsilon = float(epsilon)
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise InvalidParameterError(f"epsilon must be a positive finite number, got {epsilon!r}")
    return _scale(epsilon, score)


@functools.lru_cache(maxsize=256)
def _scale(epsilon: float, score: str) -> float:
    """:func:`privtree_scale` by bisection, remembered: a function of the public (ε, score) alone (100 bounds a call)."""
    lo, hi = 1.0 / epsilon, 8.0 / epsilon  # the bound is at least 3/λ (count) and at most 6/λ for λ ≥ 1/ε
    while privtree_bound(hi, score) > epsilon:
        hi *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if privtree_bound(mid, score) > epsilon:
            lo = mid
        else:
            hi = mid
    return hi


def tree_nodes(k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, depth, parent) of the binary tree over [0, k) split at midpoints, in breadth-first order.

    Examples
    --------
    >>> lo, hi, depth, parent = tree_nodes(3)
    >>> lo.tolist(), hi.tolist(), depth.tolist(), parent.tolist()
    ([0, 0, 1, 1, 2], [3, 1, 3, 2, 3], [0, 1, 1, 2, 2], [-1, 0, 0, 2, 2])
    """
    lo, hi, parent = [np.array([0])], [np.array([int(k)])], [np.array([-1])]
    first = 0
    while True:
        a, b = lo[-1], hi[-1]
        wide = np.flatnonzero(b - a > 1)
        if wide.size == 0:
            break
        mid = (a[wide] + b[wide]) // 2
        lo.append(np.column_stack([a[wide], mid]).ravel())
        hi.append(np.column_stack([mid, b[wide]]).ravel())
        parent.append(np.repeat(first + wide, 2))
        first += a.size
    depth = np.concatenate([np.full(level.size, d) for d, level in enumerate(lo)])
    return np.concatenate(lo), np.concatenate(hi), depth, np.concatenate(parent)


def node_scores(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, depth: np.ndarray, score: str) -> np.ndarray:
    """g(v) of every node: Σ|x_i| (``"count"``) or the L1 distance to the node's median (``"deviation"``).

    Examples
    --------
    >>> lo, hi, depth, _ = tree_nodes(4)
    >>> node_scores(np.array([0.0, 4.0, 1.0, 1.0]), lo, hi, depth, "deviation").tolist()
    [4.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    """
    _check_score(score)
    x = np.asarray(x, dtype=float)
    if score == "count":
        cum = np.r_[0.0, np.cumsum(np.abs(x))]
        return cum[hi] - cum[lo]
    out = np.zeros(lo.size)
    for d in range(int(depth.max(initial=0)) + 1):
        nodes = np.flatnonzero(depth == d)
        a, b = lo[nodes], hi[nodes]
        sizes = b - a
        seg = np.repeat(np.arange(nodes.size), sizes)
        cells = np.concatenate([np.arange(s, e) for s, e in zip(a, b)]) if nodes.size < 64 else \
            _ranges(a, sizes)
        values = x[cells]
        order = np.lexsort((values, seg))
        ordered = values[order]
        offsets = np.r_[0, np.cumsum(sizes)[:-1]]
        median = ordered[offsets + (sizes - 1) // 2]
        out[nodes] = np.add.reduceat(np.abs(ordered - np.repeat(median, sizes)), offsets)
    return out


def privtree_partition(x, epsilon: float, theta: float, rng: np.random.Generator, score: str = "count",
                       size: int | None = None, offset: int = 0, ends: bool = False) -> np.ndarray:
    """The first cells of the buckets of a PrivTree partition of x (ε-DP for one entry changed by ≤ 1).

    Parameters
    ----------
    x : array of k floats
    epsilon : float
        The partition's budget; the noise scale is :func:`privtree_scale`.
    theta : float
        The public threshold θ (DAWA passes 1/ε₂, the second stage's noise per bucket).
    score : {"count", "deviation"}
        See the module notes.
    size : int, optional
        Draw ``size`` partitions at once: a boolean (size, k) array, True at the first cell of every bucket.
    offset : int
        The public level j₀ at which the depth bias starts: b(v) = max(g(v) − (depth − j₀)·δ, θ − δ). The
        privacy bound does not depend on it (see the module notes); nodes above j₀ get a bonus and are split
        unless their score is far below θ. DAWA passes ⌊D/2⌋ for the histogram (see :mod:`.dawa`).
    ends : bool
        Test the two end cells on their own (``"count"`` only; k ≥ 4): cell 0 is a bucket of its own iff
        |x₀| + Lap(1/ε) > θ, cell k − 1 likewise, and the tree runs on x with those two counts set to 0; an
        end cell not kept apart stays in the tree's bucket. Still ε-DP (parallel composition; module notes
        "The two end cells"). DAWA and the partition-first releases pass it on one-dimensional domains.

    Examples
    --------
    >>> x = np.r_[np.zeros(8), np.full(8, 1000.0)]
    >>> privtree_partition(x, 1e3, 1.0, np.random.default_rng(1), score="deviation").tolist()
    [0, 8]
    >>> privtree_partition(x, 1e3, 1.0, np.random.default_rng(1)).tolist()  # counts: dense cells alone
    [0, 8, 9, 10, 11, 12, 13, 14, 15]
    >>> spike = np.r_[40.0, np.zeros(15)]  # a lone spike at an end: found by the end test
    >>> privtree_partition(spike, 0.5, 2.0, np.random.default_rng(0), ends=True).tolist()
    [0, 1, 4, 8]
    """
    x = np.asarray(x, dtype=float)
    k = x.size
    theta = float(theta)
    if ends:
        _check_score(score)
        if score != "count":
            raise InvalidParameterError(f"ends=True tests counts: it needs score='count', got {score!r}")
        if k >= 4:
            return _with_ends(x, epsilon, theta, rng, score, size, offset)
    lam = privtree_scale(epsilon, score)
    delta = lam * math.log(FANOUT)
    lo, hi, depth, parent = tree_nodes(k)
    g = node_scores(x, lo, hi, depth, score)
    biased = np.maximum(g - (depth - int(offset)) * delta, theta - delta)
    n = 1 if size is None else int(size)
    split = (biased + noise.selection_laplace(rng, lam, (n, lo.size)) > theta) & (hi - lo > 1)
    reached = np.zeros((n, lo.size), dtype=bool)
    reached[:, 0] = True
    level_start = np.r_[0, np.flatnonzero(np.diff(depth)) + 1, lo.size]  # breadth-first: one level after another
    for d in range(1, level_start.size - 1):
        level = slice(level_start[d], level_start[d + 1])
        up = parent[level]
        reached[:, level] = reached[:, up] & split[:, up]
    leaf = reached & ~split
    starts = np.zeros((n, k), dtype=bool)
    rows, nodes = np.nonzero(leaf)
    starts[rows, lo[nodes]] = True
    if size is None:
        return np.flatnonzero(starts[0]).astype(np.intp)
    return starts


def _with_ends(x: np.ndarray, epsilon: float, theta: float, rng: np.random.Generator, score: str,
               size: int | None, offset: int, end_epsilon: float | None = None):
    """:func:`privtree_partition` with ``ends=True``: the tree on x with its end counts set to 0, each end tested apart.

    ``end_epsilon`` (default ε) scales the end tests' noise alone: the tests' known-bad variant uses it.
    """
    k = x.size
    n = 1 if size is None else int(size)
    inner = x.copy()
    inner[[0, -1]] = 0.0  # the tree never reads the end counts: its nodes stay where they are for k cells
    starts = privtree_partition(inner, epsilon, theta, rng, score=score, size=n, offset=offset)
    # the same threshold as the tree's nodes (one bucket's noise), Laplace of scale 1/ε on a count of one cell;
    # drawn whatever the data (the draws and the time do not depend on x)
    apart = np.abs(x[[0, -1]]) + noise.selection_laplace(rng, 1.0 / float(end_epsilon or epsilon), (n, 2)) > theta
    starts[:, 1] |= apart[:, 0]
    starts[:, k - 1] |= apart[:, 1]
    if size is None:
        return np.flatnonzero(starts[0]).astype(np.intp)
    return starts


def _ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Concatenated aranges [s, s + n) without a Python loop."""
    total = int(sizes.sum())
    out = np.ones(total, dtype=np.int64)
    offsets = np.r_[0, np.cumsum(sizes)[:-1]]
    out[offsets] = starts - np.r_[0, (starts + sizes)[:-1]] + 1
    out[0] = starts[0]
    return np.cumsum(out)


def _check_score(score) -> None:
    if score not in SCORES:
        raise InvalidParameterError(f"score must be one of {SCORES}, got {score!r}")
