"""Policies with known count constraints (He et al. SIGMOD'14 §8): the histogram's sensitivity.

With constraints Q known, neighbours (Def. 4.1) must both satisfy Q and be
minimal, so one record's move can force a chain of others and
S(h, P) grows. Deciding S(h, P) > 0 is NP-hard in general (Thm 8.1); for
*sparse* constraints (Def. 8.2: every edge of G lifts at most one count and
lowers at most one) Thm 8.2 bounds it by 2·max{α, ξ} over the directed
constraint graph (Def. 8.3): α the longest simple cycle, ξ the longest simple
path v⁺ → v⁻. Closed forms: one marginal under the full-domain graph,
2·size(C) (Thm 8.4); disjoint marginals under the attribute graph,
2·max size(C_i) (Thm 8.5); disjoint rectangles under a distance threshold,
2·(largest component + 1) of the rectangles within θ of each other, with
equality when none is a single cell (Thm 8.6).

Only the histogram's sensitivity is known under constraints, so only the
Laplace mechanism on the histogram uses it; other strategies are refused.
"""

from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from ..constraints import Constraints
from ..exceptions import PolicyError
from .attribute import Attribute
from .base import BOTTOM, Policy
from .bounded import Bounded
from .threshold import Threshold

__all__ = ["Constrained", "constrained", "EXACT_LIMIT"]

#: exact longest-cycle/path search (over subsets) for constraint graphs up to this many vertices
EXACT_LIMIT = 14
V_PLUS, V_MINUS = "v+", "v-"


class Constrained(Policy):
    """A policy graph G with count constraints Q known to the adversary."""

    family = "constrained"
    kind = "constrained"

    def __init__(self, policy: Policy, constraints: Constraints):
        if not isinstance(policy, Policy) or isinstance(policy, Constrained):
            raise PolicyError(f"constrained() needs a policy without constraints, got {policy!r}")
        if not isinstance(constraints, Constraints):
            raise PolicyError("constraints must come from blowfish_nb.constraints (count, marginal, rectangles)")
        if constraints.domain != policy.domain:
            raise PolicyError("the constraints are over another domain than the policy")
        if _constrained_inside(policy):
            raise PolicyError(f"constrained() needs a policy without constraints, got one with a constrained part: "
                              f"{policy.summary()}")
        super().__init__(policy.domain)
        self.base, self.constraints = policy, constraints
        self._delta: float | None = None
        self._sealed = True

    def __setattr__(self, name, value):
        # Δ is computed once from the graph and the counts: neither may change after the policy is made
        if getattr(self, "_sealed", False) and name in ("base", "constraints", "domain", "_sealed"):
            raise PolicyError(f"a constrained policy cannot be changed after it is made ({name} is fixed: its "
                              "sensitivity depends on it); make a new one with constrained(...)")
        object.__setattr__(self, name, value)

    # -- the graph is G's --------------------------------------------------------
    @property
    def has_bottom(self) -> bool:
        return self.base.has_bottom

    def edge_chunks(self):
        return self.base.edge_chunks()

    def edge_count(self) -> int:
        return self.base.edge_count()

    def component_labels(self) -> np.ndarray:
        return self.base.component_labels()

    @property
    def params(self):
        return {"policy": self.base.to_dict(), "constraints": self.constraints.names}

    def summary(self) -> str:
        return f"{self.base.summary()} with {len(self.constraints)} known counts ({self.constraints.kind})"

    # -- §8 ----------------------------------------------------------------------
    def _patterns(self):
        """Cells grouped by which constraints hold there (⊥, when present, holds none): (pattern of each vertex,
        membership matrix of the patterns), vertices being the cells then ⊥."""
        M = self.constraints.masks
        cols = np.concatenate([M, np.zeros((M.shape[0], 1), dtype=bool)], axis=1)
        if not self.has_bottom:
            cols = cols[:, :-1]
        patterns, of = np.unique(cols.T, axis=0, return_inverse=True)
        return of.reshape(-1), patterns.T  # (vertices,), (p, P)

    def _move_effects(self, neighbours: str):
        """{(pattern a, pattern b): (lowered q or −1, lifted q or −1, made by an edge of G)} for the moves considered.

        ``neighbours="definition"``: every move of a record (Def. 4.1 lets records the policy does not protect
        change to restore the counts); ``"edges"``: only moves along G's edges (the model of Thms 8.2–8.6).
        """
        of, pat = self._patterns()
        P = pat.shape[1]
        k = self.domain.size
        joined = np.zeros((P, P), dtype=bool)  # some edge of G joins a cell of pattern a to one of pattern b
        for u, v in self.edge_chunks():
            a, b = of[u], of[np.where(v == BOTTOM, k, v)]
            joined[a, b] = joined[b, a] = True
        effects = {}
        for a in range(P):
            for b in range(P):
                if a == b or (neighbours == "edges" and not joined[a, b]):
                    continue
                up = np.flatnonzero(pat[:, b] & ~pat[:, a])
                down = np.flatnonzero(pat[:, a] & ~pat[:, b])
                if len(up) > 1 or len(down) > 1:
                    self._not_sparse(of, a, b, up, down, neighbours)
                effects[(a, b)] = (int(down[0]) if len(down) else -1, int(up[0]) if len(up) else -1, bool(joined[a, b]))
        return effects, bool(joined.diagonal().any())

    def _not_sparse(self, of, a, b, up, down, neighbours):
        names = self.constraints.names
        k = self.domain.size
        x, y = int(np.flatnonzero(of == a)[0]), int(np.flatnonzero(of == b)[0])
        xs, ys = ("⊥" if x == k else str(x)), ("⊥" if y == k else str(y))
        why = ("an edge of the graph" if neighbours == "edges" else
               "Def. 4.1 lets a record the policy does not protect make this move to restore the counts")
        raise PolicyError(
            f"the constraints are not sparse (He et al. Def. 8.2): moving a record from cell {xs} to cell {ys} "
            f"({why}) lifts {[names[i] for i in up]} and lowers {[names[i] for i in down]}; with more than one "
            "count changed by one move, computing the histogram's sensitivity is NP-hard in general (Thm 8.1). "
            "Coarsen or merge the constraints so that each move changes at most one count up and one down"
        )

    def constraint_graph(self, neighbours: str = "edges") -> nx.DiGraph:
        """The directed graph of Def. 8.3: the counts, v⁺ and v⁻; q → q' when a move lowers q and lifts q'.

        Edges carry ``marked=True`` when an edge of G makes that move. ``neighbours="edges"`` (the paper's
        graph): moves along G only; ``"definition"``: every move (see :meth:`histogram_sensitivity`).
        """
        _check_model(neighbours)
        return self._graph(self._move_effects(neighbours)[0])

    def _graph(self, effects) -> nx.DiGraph:
        names = self.constraints.names
        import networkx as nx  # lazy: `import blowfish_nb` does not import networkx

        g = nx.DiGraph()
        g.add_nodes_from([V_PLUS, *names, V_MINUS])
        for lowered, lifted, marked in effects.values():
            a = names[lowered] if lowered >= 0 else V_PLUS
            b = names[lifted] if lifted >= 0 else V_MINUS
            if a == V_PLUS and b == V_MINUS:
                continue
            g.add_edge(a, b, marked=g.get_edge_data(a, b, {}).get("marked", False) or marked)
        g.add_edge(V_PLUS, V_MINUS, marked=g.get_edge_data(V_PLUS, V_MINUS, {}).get("marked", False))
        return g

    def histogram_sensitivity(self, method: str = "auto", neighbours: str = "definition") -> float:
        """S(h, P), the histogram's sensitivity under the policy and the known counts.

        ``neighbours="definition"`` (default): neighbours as Def. 4.1 defines them, where records the policy
        does not protect may change to restore the counts. A minimal neighbour's changes then form one simple
        cycle or one v⁺ → v⁻ path of the constraint graph over *all* moves, using at least one move along G
        (two or more would split into a smaller neighbour), so S ≤ 2·L with L the longest such cycle or path
        (exact search), and L ≤ |Q| + 1 (``method="bound"``). This equals Thm 8.4's 2·size(C) for the
        full-domain graph, and exceeds Thms 8.5 and 8.6 elsewhere (brute-force counter-examples in the tests).

        ``neighbours="edges"``: the model of He et al.'s Thms 8.2–8.6, in which every changed record moves
        along an edge of G: 2·max{α, ξ} over the graph of Def. 8.3 (exact search), the closed forms of Thms
        8.4–8.6, or Corollary 8.3's 2·max{|Q|, 1} (``method="bound"``).

        Examples
        --------
        >>> from blowfish_nb import Domain, constraints, policy
        >>> d = Domain.grid((2, 2, 3), names=["A1", "A2", "A3"])
        >>> constrained(policy.bounded(d), constraints.marginal(d, ["A1", "A2"])).histogram_sensitivity()
        8.0
        """
        if method not in ("auto", "exact", "bound"):
            raise PolicyError(f"method must be 'auto', 'exact' or 'bound', got {method!r}")
        _check_model(neighbours)
        q = len(self.constraints)
        effects, noop = self._move_effects(neighbours)  # the sparsity check (raises with the reason)
        if method == "bound":
            return 2.0 * (q + 1) if neighbours == "definition" else 2.0 * max(q, 1)
        if method == "auto":
            closed = self._closed_form(neighbours)
            if closed is not None:
                return closed
        g = self._graph(effects)
        if g.number_of_nodes() > EXACT_LIMIT:
            bound = 2 * (q + 1) if neighbours == "definition" else 2 * max(q, 1)
            raise PolicyError(
                f"the constraint graph has {g.number_of_nodes()} vertices; the exact longest-cycle search is for at "
                f"most {EXACT_LIMIT} and no closed form applies here. A safe upper bound is {bound}: "
                "histogram_sensitivity(method='bound')"
            )
        longest = longest_marked(g, V_PLUS, V_MINUS)
        if neighbours == "edges":
            return 2.0 * longest
        return 2.0 * max(longest, 1 if noop else 0)

    def _closed_form(self, neighbours: str) -> float | None:
        q, base = self.constraints, self.base
        if not _spec_matches(q):
            return None  # a kind or spec that does not describe the counts: no theorem applies, search instead
        if q.kind == "marginal" and isinstance(base, Bounded):
            return 2.0 * q.spec["size"]  # Thm 8.4 (G complete: both models agree)
        if neighbours != "edges":
            return None
        if q.kind == "marginals" and isinstance(base, Attribute) and base.params.get("attributes") is None \
                and _disjoint_attribute_sets(q.spec["marginals"]):
            return 2.0 * max(m["size"] for m in q.spec["marginals"])  # Thm 8.5
        if q.kind == "rectangles" and isinstance(base, Threshold) and q.disjoint():
            boxes = q.spec["boxes"]
            if any(all(lo == hi for lo, hi in box) for box in boxes):
                return None  # a point query: Thm 8.6 gives only an upper bound; search instead
            return 2.0 * (_largest_component(boxes, base.theta, base.metric) + 1)  # Thm 8.6
        return None

    # -- parallel composition (Thm 4.3) --------------------------------------------
    def parallel_epsilon(self, blocks, epsilons) -> float:
        """ε of releases on disjoint groups of records (records whose cell is in ``blocks[i]`` get ``epsilons[i]``).

        Thm 4.3: max εᵢ when the groups of records are fixed by the neighbours: the groups are closed under G
        (no edge between two groups, no ⊥), and no move along an edge lifts or lowers a known count. If one did,
        Def. 4.1 would let a record the policy does not protect cross from another group to restore the count
        (cells (5, 5, 0) → (5, 0, 2) under two halves with cell 0's count known), so both groups' data change
        and the loss is Σ εᵢ, not max εᵢ. Otherwise refused with the reason (then only sequential composition,
        Σ εᵢ, holds). Known group totals (each block's count) satisfy this: a move inside a block keeps them.

        Examples
        --------
        >>> from blowfish_nb import Domain, constraints, policy
        >>> d = Domain.grid(6)
        >>> G = policy.partition(d, [[0, 1, 2], [3, 4, 5]])
        >>> q = constraints.combine(constraints.count(d, [0, 1, 2], "S"), constraints.count(d, [3, 4, 5], "rest"))
        >>> constrained(G, q).parallel_epsilon([[0, 1, 2], [3, 4, 5]], [0.5, 0.3])
        0.5
        """
        k = self.domain.size
        group = np.full(k, -1)
        for i, b in enumerate(blocks):
            cells = np.asarray(list(b), dtype=np.intp)
            if cells.size == 0 or cells.min() < 0 or cells.max() >= k or (group[cells] >= 0).any():
                raise PolicyError(f"blocks must be disjoint, non-empty sets of cells in [0, {k}); block {i} is not")
            group[cells] = i
        eps = [float(e) for e in epsilons]
        if len(eps) != len(blocks) or any(not np.isfinite(e) or e <= 0 for e in eps):
            raise PolicyError(f"give one ε > 0 per block ({len(blocks)}), got {epsilons!r}")
        M = self.constraints.masks
        names = self.constraints.names
        for u, v in self.edge_chunks():
            if (v == BOTTOM).any():
                raise PolicyError("a policy with ⊥ lets records appear anywhere: groups of records are not fixed, "
                                  "so parallel composition (Thm 4.3) does not apply")
            gu, gv = group[u], group[v]
            cross = (gu != gv) | (gu < 0)
            if cross.any():
                j = int(np.flatnonzero(cross)[0])
                raise PolicyError(
                    f"cells {int(u[j])} and {int(v[j])} are joined by an edge but lie in different groups (or outside "
                    "every block): a record's move would change its group, so parallel composition (Thm 4.3) is "
                    "refused; use sequential composition (the sum of the ε)")
            changed = M[:, u] != M[:, v]  # (p, edges): the move lifts or lowers the count
            if changed.any():
                q, e = (int(a[0]) for a in np.nonzero(changed))
                raise PolicyError(
                    f"the known count {names[q]!r} is changed by the move {int(u[e])} → {int(v[e])} inside a group: "
                    "under Def. 4.1 a record the policy does not protect may then cross from another group to "
                    "restore the count, so the groups' data are not separate and parallel composition (Thm 4.3) is "
                    "refused; use sequential composition (the sum of the ε)")
        return max(eps)

    # -- privacy: only the histogram -------------------------------------------------
    def sensitivity(self, strategy) -> float:
        if getattr(strategy, "is_identity", False) or _is_identity(strategy, self.domain.size):
            if self._delta is None:
                self._delta = self.histogram_sensitivity()
            return self._delta
        raise PolicyError(
            "under count constraints only the histogram's sensitivity is known (He et al. §8): answer the "
            "histogram with the Laplace mechanism, and derive other answers from it"
        )


def constrained(policy: Policy, constraints: Constraints) -> Constrained:
    """``policy`` with the counts ``constraints`` known to the adversary (He et al. §8).

    Examples
    --------
    >>> from blowfish_nb import Domain, constraints, policy
    >>> d = Domain.grid((6,))
    >>> p = constrained(policy.line(d), constraints.rectangles(d, [[(0, 1)], [(4, 5)]]))
    >>> p.histogram_sensitivity(neighbours="edges")  # Thm 8.6: the boxes are 3 bins apart, no edge joins them
    4.0
    >>> p.histogram_sensitivity()  # Def. 4.1: unprotected records may jump between the boxes to restore counts
    6.0
    """
    return Constrained(policy, constraints)


def _check_model(neighbours: str) -> None:
    if neighbours not in ("definition", "edges"):
        raise PolicyError(f"neighbours must be 'definition' or 'edges', got {neighbours!r}")


def longest_marked(g: nx.DiGraph, source, target) -> int:
    """Edges of the longest simple directed cycle or simple source → target path using at least one edge with
    ``marked=True`` (every edge counts as marked when none carries the attribute); search over subsets."""
    nodes = list(g.nodes)
    n = len(nodes)
    index = {v: i for i, v in enumerate(nodes)}
    any_flag = any("marked" in d for _, _, d in g.edges(data=True))
    succ = [[] for _ in range(n)]
    for a, b, d in g.edges(data=True):
        succ[index[a]].append((index[b], bool(d.get("marked", True)) if any_flag else True))
    best = 0

    def walk(start: int, closes: bool, stop: int | None):
        nonlocal best
        seen = set()
        frontier = [(1 << start, start, False)]
        while frontier:
            nxt = []
            for mask, v, marked in frontier:
                for w, m in succ[v]:
                    hit = marked or m
                    if closes and w == start:
                        if hit:
                            best = max(best, bin(mask).count("1"))
                        continue
                    if mask >> w & 1 or (closes and w < start):
                        continue
                    if stop is not None and w == stop:
                        if hit:
                            best = max(best, bin(mask).count("1"))
                        continue
                    state = (mask | 1 << w, w, hit)
                    if state not in seen:
                        seen.add(state)
                        nxt.append(state)
            frontier = nxt

    s, t = index[source], index[target]
    for start in range(n):  # cycles, found from their smallest vertex
        if start not in (s, t):
            walk(start, True, None)
    walk(s, False, t)  # paths v+ → v−
    return best


def _disjoint_attribute_sets(marginals) -> bool:
    seen = set()
    for m in marginals:
        attrs = set(m["attributes"])
        if attrs & seen:
            return False
        seen |= attrs
    return True


def _largest_component(boxes, theta: int, metric: str) -> int:
    """Nodes in the largest component of the graph joining boxes within distance θ (scipy.sparse.csgraph)."""
    m = len(boxes)
    lo = np.array([[s[0] for s in b] for b in boxes])
    hi = np.array([[s[1] for s in b] for b in boxes])
    rows, cols = [], []
    for i, j in itertools.combinations(range(m), 2):
        gap = np.maximum(0, np.maximum(lo[i] - hi[j], lo[j] - hi[i]))  # per-axis distance between the boxes
        dist = gap.sum() if metric == "l1" else gap.max()
        if dist <= theta:
            rows.append(i)
            cols.append(j)
    adj = sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=(m, m))
    _, labels = csgraph.connected_components(adj, directed=False)
    return int(np.bincount(labels).max())


def _is_identity(strategy, k: int) -> bool:
    if sp.issparse(strategy):
        s = sp.csr_array(strategy)
        return s.shape == (k, k) and s.nnz == k and (abs(s - sp.identity(k)).sum() == 0)
    if isinstance(strategy, np.ndarray):
        return strategy.shape == (k, k) and np.array_equal(strategy, np.eye(k))
    return False


def _spec_matches(q: Constraints) -> bool:
    """Whether the counts are exactly what ``q.kind`` and ``q.spec`` say (rebuilt from the spec, compared mask by
    mask): the closed forms of Thms 8.4–8.6 read the spec, so a mislabelled set must not reach them."""
    from .. import constraints as C

    try:
        if q.kind == "marginal":
            rebuilt = C.marginal(q.domain, q.spec["attributes"])
            if q.spec.get("size") != len(rebuilt):
                return False
        elif q.kind == "marginals":
            rebuilt = C.combine(*(C.marginal(q.domain, m["attributes"]) for m in q.spec["marginals"]))
            if any(m.get("size") != len(C.marginal(q.domain, m["attributes"])) for m in q.spec["marginals"]):
                return False
        elif q.kind == "rectangles":
            rebuilt = C.rectangles(q.domain, q.spec["boxes"])
        else:
            return True  # "counts": no closed form reads a spec
    except Exception:  # noqa: BLE001 - a spec the builders cannot read describes nothing
        return False
    return rebuilt.masks.shape == q.masks.shape and bool(np.array_equal(rebuilt.masks, q.masks))


def _constrained_inside(policy: Policy) -> bool:
    """Whether ``policy`` is, or is composed of, a constrained policy (known counts on a part are not known on the
    product domain's Def. 4.1 neighbours, so the part would lose its constraints)."""
    if getattr(policy, "kind", None) == "constrained":
        return True
    parts = getattr(policy, "parts", None)
    return isinstance(parts, dict) and any(_constrained_inside(p) for p in parts.values())

