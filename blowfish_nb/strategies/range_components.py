"""Ranges measured per group of ranges that one policy edge can change together (1-D, no ⊥, any graph).

Under a 1-D policy without ⊥ one record's move along an edge (u, v) changes
a range's count by ±1 exactly when one of u, v lies inside it (Haney et al.
2017, Thm 4.1: Δ_A(G) = max over edges of ‖A(e_u − e_v)‖₁). Write g_e ∈
{0, ±1}^q for how edge e changes the q distinct ranges. A strategy whose rows
are combinations of the ranges, A = M R (R the ranges' indicator rows), has
Δ = max_e ‖M g_e‖₁, and when R has full row rank, least squares returns the
ranges as M⁺ y: the whole problem lives in *range space*, q coordinates.

**Components.** Link two ranges when some edge changes both (both appear in
one g_e). The connected components split the problem: every g_e lies inside
one component, so a block-diagonal M has Δ = the largest Δ of its blocks,
and the blocks' noise is independent. Under the line a range is a component
of its own unless it shares a boundary; under G^θ the edges that jump over a
narrow block (fewer than θ cells between two boundaries) change the ranges
ending on both sides of it (a few pairs and triples per 64 random ranges at
k = 4,096, issue 28). Each component gets one of two blocks, each of Δ ≤ 1:

* **edge weights** (:mod:`.range_edges`): each range once, weight
  w_r = 1 / (the most ranges an edge changing r changes); each answer is one
  noise term divided by w_r (a shared edge halves the weight of both ranges);
* **Hadamard rotation**: for c ranges, the c columns H_C of the last c of a
  Sylvester–Hadamard matrix of order h = 2^⌈log₂ c⌉, M = H_C / (h·d) with
  d = max_e ‖H_C g_e‖₁ / h (exact, over the component's edges), so Δ ≤ 1.
  Since H_Cᵀ H_C = h·I, M⁺ = d·H_Cᵀ: each answer is d·Σ_j ±η_j, h terms of
  coefficient d. An edge changing two ranges changes them with ±1 each, and
  two distinct Hadamard columns agree on exactly h/2 rows, so ‖H_C g_e‖₁ = h:
  d = 1 whenever no edge changes three or more ranges of the component. The
  pair sharing an edge is then answered with two terms of coefficient 1
  (u = (u+v)/2 + (u−v)/2) instead of one of coefficient 2: half the variance
  and, what an (α, β) quote reads, a tail exp(−αε) instead of exp(−αε/2).

**Groupings.** A component may also be split into groups, each its own
Hadamard block (a group of one: the range alone), all scaled by the same
1/δ, δ = max_e Σ_groups ‖H_k g_e‖₁/h_k (exact, so the component's Δ is 1):
an edge changing three ranges costs 1.5 inside one block, 1 + 1 across a
pair and a single. Components of at most :data:`PARTITION_RANGES` ranges try
every set partition (Bell(5) = 52); larger ones the edge weights, one block,
and a greedy merge from singletons. The option kept is the one whose
component failure (the continuous-Laplace law of the quote,
:func:`_failure`) falls to :data:`TAIL` per answer at the fewest noise
scales: the per-answer tail an (α, β) quote of a few dozen ranges asks for
(β/q ≈ 0.05/64). The choice reads the component alone, never the data or
(α, β).

**Privacy never rests on the construction.** The strategy carries the exact
Δ of its rows under the policy, from the policy's own edge scan
(:meth:`Policy.sensitivity`), and :class:`~blowfish_nb.mechanisms.Optimized`
recomputes it from what it measures. The components and d only shape the
error; :func:`component_blocks` (the exact (α, β) quote,
:mod:`blowfish_nb.analysis.range_component_quote`) rebuilds the strategy from
the public inputs and uses the structure only when the measured matrix is the
rebuilt one, bit for bit.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..operators import Workload
from ..policy import Policy
from ..ranges import as_ranges
from .optimized import DenseFactor, OptimizedStrategy

__all__ = ["range_component_strategy", "exhaustive", "component_blocks", "sum_laplace_tail", "sylvester", "TEMPLATE",
           "TAIL", "RANGE_COMPONENT_CELLS", "PARTITION_RANGES"]

#: the template name the strategy's ``info`` carries
TEMPLATE = "range-components"
#: the per-answer two-sided tail at which the blocks of a component are compared (≈ β/q of a 64-range quote)
TAIL = 1e-3
#: the largest domain it is built on (a dense q × n pseudo-inverse, as :mod:`.range_edges`)
RANGE_COMPONENT_CELLS = 512
#: the largest component given a Hadamard block (order h ≤ 2 × this); larger ones keep the edge weights
HADAMARD_RANGES = 16
#: components of at most this many ranges try every grouping into Hadamard blocks (Bell(5) = 52); larger ones
#: the edge weights or one Hadamard block
PARTITION_RANGES = 5
#: rows count as independent when R R⁺ is the identity to this (max abs entry)
INDEPENDENT = 1e-9


def range_component_strategy(workload: Workload, policy: Policy) -> OptimizedStrategy | None:
    """The component strategy of the module notes for 1-D ranges under a policy without ⊥, or None.

    None where :mod:`.range_edges` would give None too: a domain of more than one attribute, of fewer than 2 or
    more than :data:`RANGE_COMPONENT_CELLS` cells, a policy with ⊥ or without edges, workloads that are not
    ranges, and linearly dependent ranges (least squares would mix the blocks' noise).

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy
    >>> from blowfish_nb.ranges import Ranges
    >>> g = policy.threshold(Domain.grid(12), 2)
    >>> W = Ranges(12, [0, 5], [3, 9])  # the edge 3 → 5 jumps over cell 4: it changes both ranges
    >>> s = range_component_strategy(W, g)
    >>> s.info["template"], s.sensitivity, [b[0] for b in s.info["blocks"]]
    ('range-components', 1.0, ['hadamard'])
    >>> m = mechanisms.Optimized(s)
    >>> m.sensitivity(g) == s.sensitivity  # charged what the policy's edge scan says
    True
    >>> from blowfish_nb.strategies.range_edges import range_edge_strategy
    >>> e = mechanisms.Optimized(range_edge_strategy(W, g))
    >>> m.expected_error(W, g, 1.0) < e.expected_error(W, g, 1.0)  # two terms of weight 1, not one of weight 1/2
    True
    """
    found = _ranges(workload, policy)
    if found is None:
        return None
    _, _, R, G = found
    if np.abs(R @ np.linalg.pinv(R) - np.eye(R.shape[0])).max() > INDEPENDENT:
        return None
    blocks = _blocks(G)
    factor = DenseFactor(_matrix(R, blocks))
    delta = float(policy.sensitivity(factor))
    info = {"template": TEMPLATE, "blocks": [(b[0], b[1].tolist()) + tuple(b[2:]) for b in blocks],
            "largest": max(len(c) for c in _components(G))}
    return OptimizedStrategy((factor,), delta, 0.0, (int(policy.domain.size),), info)


def exhaustive(strategy) -> bool:
    """Whether every component of a component strategy has at most :data:`PARTITION_RANGES` ranges, i.e. its
    blocks are the best of *every* grouping of its ranges (by the module notes' tail criterion), not of a greedy
    search; where it holds the strategy stands in for auto's fit (:func:`~blowfish_nb.analysis.selection.
    range_edge_stand_in`).

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> from blowfish_nb.ranges import Ranges
    >>> exhaustive(range_component_strategy(Ranges(12, [0, 5], [3, 9]), policy.threshold(Domain.grid(12), 2)))
    True
    """
    return strategy.info.get("template") == TEMPLATE and strategy.info.get("largest", math.inf) <= PARTITION_RANGES


def component_blocks(strategy, workload: Workload, policy: Policy) -> tuple[list[tuple], np.ndarray] | None:
    """(blocks, row of each answer among the distinct ranges) when ``strategy`` is exactly the component strategy
    of (``workload``, ``policy``) — rebuilt here from the public inputs and compared bit for bit — else None.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> from blowfish_nb.ranges import Ranges
    >>> g, W = policy.threshold(Domain.grid(12), 2), Ranges(12, [5, 0, 5], [9, 3, 9])
    >>> blocks, index = component_blocks(range_component_strategy(W, g), W, g)
    >>> [(b[0], b[1].tolist()) for b in blocks], index.tolist()  # the repeated range is the same answer
    ([('hadamard', [0, 1])], [1, 0, 1])
    """
    if type(strategy) is not OptimizedStrategy or strategy.info.get("template") != TEMPLATE:
        return None
    if len(strategy.factors) != 1:
        return None
    found = _ranges(workload, policy)
    if found is None:
        return None
    lo, hi, R, G = found
    blocks = _blocks(G)
    if not np.array_equal(strategy.factors[0].X, _matrix(R, blocks)):
        return None
    if np.abs(R @ np.linalg.pinv(R) - np.eye(R.shape[0])).max() > INDEPENDENT:
        return None
    r = as_ranges(workload)
    index = np.searchsorted(lo * (int(policy.domain.size) + 1) + hi, r.lo * (int(policy.domain.size) + 1) + r.hi)
    return blocks, index



def sum_laplace_tail(h: int, x: float) -> float:
    """P(L₁ + … + L_h > x) for independent continuous Laplace variables of scale 1, x ≥ 0 (closed form).

    The sum's density is e^{−|u|}/(2^h (h−1)!) · Σ_{j<h} a_j |u|^{h−1−j}, a_j = (h−1+j)!/(j!(h−1−j)! 2^j),
    so the tail is a finite sum of upper incomplete gammas Γ(n+1, x) = n! e^{−x} Σ_{i≤n} x^i/i!.

    Examples
    --------
    >>> round(sum_laplace_tail(1, 2.0) / (0.5 * math.exp(-2.0)), 12)  # one Laplace: e^{−x}/2
    1.0
    >>> round(sum_laplace_tail(2, 0.0), 12)  # symmetric
    0.5
    """
    x = float(x)
    if x < 0:
        return 1.0 - sum_laplace_tail(h, -x)
    total = 0.0
    for j in range(h):
        n = h - 1 - j
        a = math.factorial(h - 1 + j) / (math.factorial(j) * math.factorial(n) * 2.0**j)
        series = sum(x**i / math.factorial(i) for i in range(n + 1))
        total += a * math.factorial(n) * series
    return total * math.exp(-x) / (2.0**h * math.factorial(h - 1))


def sylvester(h: int) -> np.ndarray:
    """The Sylvester–Hadamard matrix of order h (a power of two): ±1 entries, HᵀH = h·I.

    Examples
    --------
    >>> sylvester(2).tolist()
    [[1.0, 1.0], [1.0, -1.0]]
    """
    H = np.ones((1, 1))
    while H.shape[0] < h:
        H = np.block([[H, H], [H, -H]])
    return H


@functools.lru_cache(maxsize=64)
def _tail_quantile(h: int, p: float) -> float:
    """The x with 2·P(L₁ + … + L_h > x) = p (bisection)."""
    lo, hi = 0.0, 1.0
    while 2 * sum_laplace_tail(h, hi) > p:
        lo, hi = hi, 2 * hi
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if 2 * sum_laplace_tail(h, mid) > p else (lo, mid)
    return hi


def _ranges(workload: Workload, policy: Policy):
    """(lo, hi, R, G) of the distinct ranges (R their indicator rows, G: column e = how edge e changes them), or None."""
    if len(policy.domain.shape) != 1 or policy.has_bottom:
        return None
    n = int(policy.domain.size)
    r = as_ranges(workload)
    if r is None or not 2 <= n <= RANGE_COMPONENT_CELLS or workload.shape[1] != n:
        return None
    edges = np.asarray(policy.edges(), dtype=np.int64).reshape(-1, 2)
    if edges.shape[0] == 0:
        return None
    lo, hi = np.unique(np.stack([r.lo, r.hi]), axis=1)
    cells = np.arange(n)
    R = ((lo[:, None] <= cells) & (cells <= hi[:, None])).astype(float)
    G = R[:, edges[:, 0]] - R[:, edges[:, 1]]  # q × |E|, entries in {0, ±1}
    return lo, hi, R, G


def _components(G: np.ndarray) -> list[np.ndarray]:
    """The ranges' groups: connected by the edges that change two or more of them (sorted, in order of first range)."""
    q = G.shape[0]
    parent = list(range(q))

    def root(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for e in np.flatnonzero((G != 0).sum(axis=0) > 1):
        changed = np.flatnonzero(G[:, e])
        for j in changed[1:]:
            parent[root(int(j))] = root(int(changed[0]))
    groups: dict[int, list[int]] = {}
    for i in range(q):
        groups.setdefault(root(i), []).append(i)
    return [np.array(g) for g in groups.values()]


def _partitions(items: list) -> list[list[list]]:
    """Every set partition of ``items`` (Bell(c) of them)."""
    if not items:
        return [[]]
    first, rest = items[0], items[1:]
    out = []
    for p in _partitions(rest):
        out.append([[first]] + p)
        for i in range(len(p)):
            out.append(p[:i] + [[first] + p[i]] + p[i + 1:])
    return out


def _group_cost(sub: np.ndarray, groups: list[np.ndarray]) -> tuple[float, list[tuple]]:
    """(δ, blocks) of Hadamard-rotated groups of one component (``sub``: its ranges' edge changes, local indices):
    group k's rows H_k/h_k, all scaled by 1/δ, δ = max_e Σ_k ‖H_k g_e‖₁/h_k (exact: the component's Δ is then 1)."""
    cost = np.zeros(sub.shape[1])
    shapes = []
    for g in groups:
        h = 1 << (len(g) - 1).bit_length()
        cost += np.abs(sylvester(h)[:, h - len(g):] @ sub[g]).sum(axis=0) / h
        shapes.append(h)
    return float(cost.max()), shapes


def _failure(kind: tuple, x: float) -> float:
    """The continuous-Laplace failure of one block when α is ``x`` noise scales (the quote's law, without the grid)."""
    if kind[0] == "weights":
        return sum(math.exp(-x * w) for w in kind[1])
    _, c, d, h = kind
    if h == 1:
        return math.exp(-x / d)
    if (c, h) == (2, 2):
        return math.exp(-x / d) * (1.0 + x / d)
    return c * 2.0 * sum_laplace_tail(h, x / d)


def _quantile(kinds: list[tuple], target: float) -> float:
    """The least x (noise scales) at which the blocks' summed failure is at most ``target`` (bisection)."""
    def fails(x):
        return sum(_failure(k, x) for k in kinds) > target
    lo, hi = 0.0, 1.0
    while fails(hi):
        lo, hi = hi, 2 * hi
    for _ in range(32):  # to 2^-32 of the bracket: far finer than the options' differences
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fails(mid) else (lo, mid)
    return hi


def _blocks(G: np.ndarray) -> list[tuple]:
    """Per component, the blocks chosen as the module notes say: ("weights", ranges, w) or ("hadamard", ranges, d, h).

    A function of G alone, remembered by its exact bytes (the strategy and its quote's check both ask for it).
    """
    key = (G.shape, G.tobytes())
    hit = _BLOCKS.get(key)
    if hit is None:
        hit = _BLOCKS[key] = _choose_blocks(G)
        for block in hit:  # shared between callers: read-only
            for part in block:
                if isinstance(part, np.ndarray):
                    part.setflags(write=False)
        while len(_BLOCKS) > 32:
            _BLOCKS.pop(next(iter(_BLOCKS)))
    return hit


_BLOCKS: dict = {}


def _choose_blocks(G: np.ndarray) -> list[tuple]:
    touched = G != 0
    load = touched.sum(axis=0)
    worst = np.where(touched, load[None, :], 0).max(axis=1)
    w = 1.0 / np.maximum(worst, 1)
    out = []
    for comp in _components(G):
        c = comp.size
        edge_block = [("weights", comp, w[comp])]
        if c == 1 or c > HADAMARD_RANGES:
            out += edge_block
            continue
        sub = G[comp][:, touched[comp].any(axis=0)]
        options = [(edge_block, [("weights", w[comp])])]
        if c <= PARTITION_RANGES:
            groupings = [g for g in _partitions(list(range(c))) if any(len(x) > 1 for x in g)]
            options += [_grouped_option(comp, sub, g) for g in groupings]
        else:  # greedy: from one block, and from singletons merging the pair of groups that lowers the score most
            options.append(_grouped_option(comp, sub, [list(range(c))]))
            groups = [[i] for i in range(c)]
            current = _grouped_option(comp, sub, groups)
            while len(groups) > 1:
                trials = [(i, j) for i in range(len(groups)) for j in range(i + 1, len(groups))]
                made = [_grouped_option(comp, sub, [g for k, g in enumerate(groups) if k not in (i, j)]
                                        + [groups[i] + groups[j]]) for i, j in trials]
                best = int(np.argmin([m[2] for m in made]))
                if not made[best][2] < current[2]:
                    break
                i, j = trials[best]
                groups = [g for k, g in enumerate(groups) if k not in (i, j)] + [groups[i] + groups[j]]
                current = made[best]
            options.append(current)
        # the option whose failure reaches TAIL per answer at the fewest noise scales (first listed on a tie)
        scores = [o[2] if len(o) > 2 else _quantile(o[1], c * TAIL) for o in options]
        out += options[int(np.argmin(scores))][0]
    return out


def _grouped_option(comp: np.ndarray, sub: np.ndarray, groups: list[list[int]]) -> tuple:
    """(blocks, kinds, score) of one grouping of a component's ranges into Hadamard blocks (singletons: weight 1/δ)."""
    delta, shapes = _group_cost(sub, [np.array(g) for g in groups])
    blocks, kinds = [], []
    for g, h in zip(groups, shapes):
        if h == 1:
            blocks.append(("weights", comp[g], np.array([1.0 / delta])))
        else:
            blocks.append(("hadamard", comp[g], delta, h))
        kinds.append(("hadamard", len(g), delta, h))
    return blocks, kinds, _quantile(kinds, comp.size * TAIL)


def _matrix(R: np.ndarray, blocks: list[tuple]) -> np.ndarray:
    rows = []
    for b in blocks:
        if b[0] == "weights":
            rows.append(b[2][:, None] * R[b[1]])
        else:
            _, comp, d, h = b
            rows.append((sylvester(h)[:, h - comp.size:] / (h * d)) @ R[comp])
    return np.vstack(rows)
