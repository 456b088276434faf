"""Ranges under G^θ through the H^θ_k spanning tree (Haney et al. 2015, Alg. 1 and Thm 5.5).

H^θ_k joins every cell to the next "red" cell (every θ-th) and the red cells
in a path. The transformed range query q_H (edges with exactly one end in
the range) is, within each *group* — the θ edges arriving at one red cell,
ordered by their other end — a single contiguous run of equal signs. The
strategy answers all ranges inside every group with Privelet (Haar) on the
group's entries of x_H; groups are disjoint, so they share the budget.

* θ = 1 is Alg. 1: H¹ is the line, groups are single edges, Privelet on one
  entry is the Laplace mechanism on the prefix sums.
* ``budget="stretch"`` is the paper's accounting: ε/3, because every edge of
  G^θ is a path of ≤ 3 edges of H^θ (Lemma 4.3, Thm 5.5).
* ``budget="exact"`` (default) computes Δ of the strategy under G^θ itself:
  for a policy edge (u, v) the change of x_H is the signed tree path from u
  to v, and Δ = max ‖S · path‖₁. Paths whose edges share a group partly
  cancel under the wavelet, so Δ_exact ≤ 3·Δ_S and the noise is never larger.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from .._arrays import unique_sorted
from .._validation import check_epsilon
from ..exceptions import InvalidParameterError
from ..operators import Workload
from ..policy import Policy, spanning_tree, transform
from ..policy.custom import Custom
from ..policy.htheta_tree import htheta_edges
from ..policy.threshold import Threshold
from ..policy.transform import HThetaTransform
from ..ranges import as_ranges
from . import noise
from .base import Mechanism, _check_workload
from .factors import HaarFactor
from .gram import as_sparse

__all__ = ["HThetaRanges"]

BUDGETS = ("exact", "stretch")


#: H^θ+Privelet is offered by "auto" up to this θ: it is built for small θ (Haney et al. §5), and its exact
#: sensitivity scans a window of edges that grows with θ (seconds at θ = 256, minutes at θ = k on 4,096 cells)
AUTO_MAX_THETA = 64

@dataclass(frozen=True)
class HThetaRanges(Mechanism):
    """Privelet on the groups of the H^θ tree's transformed data, for 1-D ranges under G^θ.

    Parameters
    ----------
    budget : {"exact", "stretch"}
        Exact Δ under the policy, or the paper's ε/ℓ with ℓ the stretch (3).

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> g = policy.threshold(Domain.grid(64), 4)
    >>> HThetaRanges(budget="stretch").sensitivity(g)  # 3 edges × (1 + log2 4) wavelet entries
    9.0
    >>> HThetaRanges().sensitivity(g) <= 9.0
    True
    """

    budget: str = "exact"

    linear = True
    registry = {"h-theta": {}}
    auto = ({},)
    auto_rank = 60

    def __post_init__(self):
        if self.budget not in BUDGETS:
            raise InvalidParameterError(f"budget must be one of {BUDGETS}, got {self.budget!r}")

    @property
    def name(self) -> str:  # type: ignore[override]
        return "H^θ+Privelet" + (" (ε/3)" if self.budget == "stretch" else "")

    analytic_error = True

    def refusal(self, policy: Policy) -> str | None:
        """Only G^θ (L1 distance threshold) on one ordered attribute."""
        reason = super().refusal(policy)
        if reason is None and not (isinstance(policy, Threshold) and len(policy.domain.shape) == 1
                                   and policy.metric == "l1"):
            reason = f"{self.name} is for G^θ on one ordered attribute, got {policy.summary()}"
        return reason

    def offered(self, policy: Policy) -> bool:
        """"auto" offers it up to θ = :data:`AUTO_MAX_THETA`."""
        return super().offered(policy) and policy.theta <= AUTO_MAX_THETA

    # -- the plan: tree, groups, wavelet --------------------------------------------------
    def plan(self, policy: Policy) -> "_Plan":
        return _plan_for(self.require(policy))

    def sensitivity(self, policy: Policy) -> float:
        """Δ of the grouped wavelet strategy: exact under the policy, or stretch × its Δ under the tree."""
        return self._sensitivity(self.plan(policy))

    def _sensitivity(self, plan: "_Plan") -> float:
        if self.budget == "stretch":
            return float(plan.stretch * plan.levels)
        return plan.sensitivity()

    def noise_scale(self, policy: Policy, epsilon: float) -> float:
        return self.sensitivity(policy) / epsilon

    def _release(self, x, workload: Workload, policy: Policy, epsilon: float, rng) -> np.ndarray:
        plan = self.plan(policy)
        scale = self._sensitivity(plan) / epsilon
        X = plan.to_groups(plan.t.data(x))
        Y = noise.noisy(X @ plan.A.T, scale, rng, epsilon=epsilon)
        xh = plan.from_groups(np.linalg.solve(plan.A, Y.T).T)
        return np.asarray(plan.t.workload(workload) @ xh + plan.t.offset(workload, x), dtype=float)

    def _sample(self, x, workload: Workload, policy: Policy, epsilon: float, size: int, rng) -> np.ndarray:
        """``size`` independent releases as rows (vectorised; for small domains, audits and tests)."""
        plan = self.plan(policy)
        scale = self.sensitivity(policy) / epsilon
        noise.check_scale(scale, value=epsilon)
        X = plan.to_groups(plan.t.data(x))
        eta = noise.discrete_laplace(rng, scale, (size,) + X.shape)
        # least squares is linear: the estimate is x_H plus the noise pulled back through A⁻¹
        back = np.linalg.solve(plan.A, np.moveaxis(eta, -1, 1)).transpose(0, 2, 1)
        delta = plan.sign * back.reshape(size, -1)[:, plan.column]
        WH = plan.t.workload(workload)
        truth = np.asarray(workload @ x, dtype=float)
        return truth[None, :] + np.asarray(WH @ delta.T).T

    def query_variances(self, workload: Workload, policy: Policy) -> np.ndarray:
        """w_H (SᵀS)⁻¹ w_Hᵀ per query, block by block over the groups."""
        plan = self.plan(policy)
        Wg = sp.coo_array(plan.group_rows(workload))
        Wg.sum_duplicates()
        # block by block without the (n_groups·K)² block-diagonal (SᵀS)⁻¹: each (query, group) pair's K entries
        # as one row of a small dense array, w V wᵀ per pair, summed per query
        group, place = np.divmod(Wg.coords[1], plan.K)
        pairs, pair = unique_sorted(Wg.coords[0] * plan.n_groups + group, return_inverse=True)
        blocks = np.zeros((pairs.size, plan.K))
        blocks[pair, place] = Wg.data
        per_pair = np.einsum("ip,pq,iq->i", blocks, plan.V, blocks)
        return np.bincount(pairs // plan.n_groups, weights=per_pair, minlength=Wg.shape[0])

    def expected_error(self, workload: Workload, policy: Policy, epsilon: float) -> float:
        epsilon = check_epsilon(epsilon)
        _check_workload(workload, policy.domain.size)
        scale = self.sensitivity(policy) / epsilon
        return float(noise.variance(scale) * np.mean(self.query_variances(workload, policy)))

    def __repr__(self) -> str:
        return f"HThetaRanges(budget={self.budget!r})"


#: plans remembered: a plan is a function of (k, θ) alone (public), and one quote or release asks for it up to three
#: times (sensitivity, noise scale, expected error), each a spanning tree, a transform and the tree's paths
_PLANS: "OrderedDict[tuple[int, int], _Plan]" = OrderedDict()
PLANS_REMEMBERED = 8
_PLANS_LOCK = threading.Lock()


def _plan_for(policy: Threshold) -> "_Plan":
    """The plan of G^θ on k cells, built once per (k, θ) (the most recent :data:`PLANS_REMEMBERED` kept).

    Everything in a plan depends on k and θ only (the tree H^θ, its groups,
    the wavelet, the window of edges), so two policies with the same k and
    θ share one; nothing in it is written after it is built but its Δ,
    computed once on first use (:meth:`_Plan.sensitivity`).
    """
    key = (policy.domain.size, policy.theta)
    with _PLANS_LOCK:
        plan = _PLANS.get(key)
        if plan is not None:
            _PLANS.move_to_end(key)
            return plan
    plan = _Plan(policy)
    with _PLANS_LOCK:
        _PLANS[key] = plan
        while len(_PLANS) > PLANS_REMEMBERED:
            _PLANS.popitem(last=False)
    return plan


class _Plan:
    """H^θ, its transform, and the layout of x_H as a (groups × K) array (K = padded group size)."""

    def __init__(self, policy: Threshold):
        self.policy = policy
        self._tree = None
        self.stretch = 1 if policy.theta == 1 or policy.domain.size <= 2 else None
        k = policy.domain.size
        written = htheta_edges(k, policy.theta) if k >= 3 else None
        if k >= 3:  # H^θ and its transform written out (policy/htheta_tree.py): no checks, searches or solves
            self._tree = Custom._normal(policy.domain, written[0])  # = htheta_tree(domain, θ), edges made once
        t = self.t = HThetaTransform(self._tree, policy.theta, written) if k >= 3 else transform(self.tree)
        e = t.edges
        if k >= 3:  # written out: the edges are stored (lower, upper) and group by their upper (red) end in order
            self.sign = np.ones(len(e))
            group, pos = _htheta_groups(k, policy.theta)
            counts = np.bincount(group)
        else:
            group, pos, counts = _generic_groups(e)
            # orientation (lower, upper): x_H entries flipped where the transform stores (upper, lower)
            self.sign = np.where(e[:, 0] < e[:, 1], 1.0, -1.0)
        self.group, self.pos, self.n_groups = group, pos, len(counts)
        self.K = HaarFactor().padded(int(counts.max()))
        self.A = HaarFactor().operator(self.K).dense()
        self.levels = int(np.abs(self.A).sum(axis=0).max())
        self.V = np.linalg.inv(self.A.T @ self.A)
        self.column = group * self.K + pos
        self.paths = _HThetaPaths(policy.theta, written) if k >= 3 else _TreePaths(self.t.edges, k)
        self._sensitivity: float | None = None  # filled by sensitivity() on first use
        if self.stretch is None:
            self.stretch = int(self._distances(*self._window()).max())

    @property
    def tree(self):
        """H^θ as a policy (written out for k ≥ 3; built by :func:`spanning_tree` on first use otherwise)."""
        if self._tree is None:
            self._tree = spanning_tree(self.policy, "htheta")
        return self._tree

    def window_edges(self):
        """The policy's edges whose lower end lies within 3θ of either end of the domain.

        H^θ, its groups and G^θ's edges repeat with period θ away from the
        ends, so the change of x_H along an edge (and its wavelet image)
        depends only on the edge's position within its block there: these
        edges already show every configuration (checked against all edges
        in the tests).
        """
        k, theta = self.policy.domain.size, self.policy.theta
        # built directly (G^θ on one attribute: (u, u + d), d = 1 … θ), not filtered from all kθ edges
        lower = np.arange(k)
        lower = lower[(lower < 3 * theta) | (lower >= k - 4 * theta)]
        for d in range(1, theta + 1):
            u = lower[lower + d < k]
            if u.size:
                yield u, u + d

    def _window(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`window_edges` as one pair of arrays (≤ 7θ² edges: one tree walk and one wavelet product)."""
        pairs = list(self.window_edges())
        return (np.concatenate([u for u, _ in pairs]).astype(np.int64),
                np.concatenate([v for _, v in pairs]).astype(np.int64))

    def _distances(self, u, v):
        rows, _, _ = self.paths.between(u, v)
        return np.bincount(rows, minlength=len(u))

    def to_groups(self, xh: np.ndarray) -> np.ndarray:
        X = np.zeros(self.n_groups * self.K)
        X[self.column] = self.sign * xh
        return X.reshape(self.n_groups, self.K)

    def from_groups(self, X: np.ndarray) -> np.ndarray:
        return self.sign * X.reshape(-1)[self.column]

    def group_rows(self, workload: Workload) -> sp.csr_array:
        """W_H in the group layout (sparse): ranges in closed form, others through a sparse W."""
        ranges = as_ranges(workload)
        if ranges is None:
            WH = sp.csr_array(as_sparse(workload) @ self.t.incidence)
        else:
            WH = self.t.range_rows(ranges.lo, ranges.hi)
        # W_H · diag(sign) · M, M the 0/1 matrix sending edge a to its slot column[a] (one 1 per row, slots
        # distinct): the product relabels each nonzero's column and flips its sign, exactly; done so, without an
        # (edges × slots) matrix (10⁶ rows at k = 10⁶)
        WH = sp.csr_array(WH)
        WH.sum_duplicates()
        n = self.n_groups * self.K
        return sp.csr_array((WH.data * self.sign[WH.indices], self.column[WH.indices], WH.indptr),
                            shape=(WH.shape[0], n))

    def sensitivity(self) -> float:
        """:meth:`exact_sensitivity` over the window edges, computed once per plan (a function of (k, θ) alone).

        A release asks for it on every call (at k = 10⁶ the scan took 0.07–0.1 s of a release); two threads that
        race compute the same number, and a float is stored whole.
        """
        if self._sensitivity is None:
            self._sensitivity = self.exact_sensitivity()
        return self._sensitivity

    def exact_sensitivity(self, every_edge: bool = False) -> float:
        """max over the policy's edges of ‖S · (x_H change)‖₁, the change being the signed tree path.

        Only :meth:`window_edges` are needed (periodicity); ``every_edge`` checks them all.
        """
        best = 0.0
        for u, v in (self.policy.edge_chunks() if every_edge else [self._window()]):
            for s in range(0, len(u), 1_000_000):
                rows, edges, signs = self.paths.between(u[s : s + 1_000_000], v[s : s + 1_000_000])
                if rows.size == 0:
                    continue
                # only the groups these paths touch: a block-diagonal wavelet over them alone
                touched, local = unique_sorted(self.group[edges], return_inverse=True)
                S = sp.kron(sp.identity(touched.size), sp.csr_array(self.A), format="csr")
                D = sp.csc_array((signs * self.sign[edges], (local * self.K + self.pos[edges], rows)),
                                 shape=(touched.size * self.K, min(1_000_000, len(u) - s)))
                best = max(best, float(abs(S @ D).sum(axis=0).max()))
        return best


class _TreePaths:
    """Signed edge lists of tree paths: Σ sign·(e_a − e_b) over the path's edges (a, b) = e_u − e_v."""

    def __init__(self, edges: np.ndarray, k: int):
        self.edges = edges
        adj = sp.csr_array((np.ones(2 * len(edges)), (np.r_[edges[:, 0], edges[:, 1]], np.r_[edges[:, 1], edges[:, 0]])),
                           shape=(k, k))
        _, labels = csgraph.connected_components(adj, directed=False)
        pred = np.full(k, -1)
        depth = np.zeros(k, dtype=np.int64)
        roots = unique_sorted(labels, return_index=True)[1]
        for root in roots:
            order, p = csgraph.breadth_first_order(adj, int(root), directed=False)
            pred[order[1:]] = p[order[1:]]
        dist = csgraph.shortest_path(adj, unweighted=True, directed=False,
                                     indices=roots)
        finite = np.where(np.isfinite(dist), dist, np.inf).min(axis=0)
        depth = finite.astype(np.int64)
        self.pred, self.depth = pred, depth
        child = np.where(pred[edges[:, 0]] == edges[:, 1], edges[:, 0], edges[:, 1])
        self.up_edge = np.full(k, -1)
        self.up_edge[child] = np.arange(len(edges))

    def between(self, u, v):
        a, b = np.array(u, dtype=np.int64), np.array(v, dtype=np.int64)
        rows, out_edges, signs = [], [], []
        idx = np.arange(a.size)
        while True:
            active = a != b
            if not active.any():
                break
            climb_a = active & (self.depth[a] >= self.depth[b])
            climb_b = active & ~climb_a
            for mask, node, forward in ((climb_a, a, True), (climb_b, b, False)):
                if mask.any():
                    c = node[mask]
                    e = self.up_edge[c]
                    stored_from_child = self.edges[e, 0] == c
                    # walking u → v: up from a's side, down into b's side
                    signs.append(np.where(stored_from_child == forward, 1.0, -1.0))
                    rows.append(idx[mask])
                    out_edges.append(e)
                    node[mask] = self.pred[c]
        if not rows:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp), np.zeros(0)
        return np.concatenate(rows), np.concatenate(out_edges), np.concatenate(signs)


# -- H^θ written out: groups, parents and depths in closed form ---------------------------------------------
#
# The generic constructions (:class:`_TreePaths`' searches, the group ranks) took seconds at k = 10⁶ for a tree
# whose shape is known (policy/htheta_tree.py: edge a is the one whose lower end is a). Grounded at cell 0 (the
# transform's root: the smallest cell of the one component), a cell's parent is its neighbour towards 0. The tests
# compare every array with the generic one.


def _generic_groups(e: np.ndarray):
    """Each edge's group (the rank of its upper end among the upper ends), its place in the group by lower end,
    and the groups' sizes: the definition, for any edge list (:func:`_htheta_groups` writes it out for H^θ)."""
    lo, hi = e.min(axis=1), e.max(axis=1)
    reds, group = unique_sorted(hi, return_inverse=True)
    order = np.lexsort((lo, group))
    pos = np.empty(len(e), dtype=np.intp)
    counts = np.bincount(group)
    first = np.r_[0, np.cumsum(counts)[:-1]]
    pos[order] = np.arange(len(e)) - np.repeat(first, counts)
    return group, pos, counts


def _htheta_groups(k: int, theta: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_generic_groups` of H^θ's sorted edges a = 0 … k − 2 (group, place).

    θ = 1: edge a = (a, a + 1) is alone in group a. θ > 1: group 0 is the edges into r_0 (a = 0 … θ − 2, place a);
    group b ≥ 1 the edges into r_b, a = bθ − 1 (from r_{b−1}, the lowest) … bθ + θ − 2, place a + 1 − bθ.
    """
    a = np.arange(k - 1, dtype=np.intp)
    if theta == 1:
        return a, np.zeros(k - 1, dtype=np.intp)
    group, pos = np.divmod(a + 1, theta)
    pos[: theta - 1] -= 1  # group 0 starts at a = 0, not at a = −1
    return group, pos


def _htheta_parents(k: int, theta: int, red_of: np.ndarray) -> np.ndarray:
    """Each cell's parent in H^θ grounded at cell 0 (−1 for cell 0)."""
    cells = np.arange(k, dtype=np.intp)
    # a non-red cell hangs off its red cell; a red cell off the previous block's red cell (bθ − 1), or off 0 in
    # block 0 (max(bθ − 1, 0))
    pred = cells - cells % theta - 1
    np.maximum(pred, 0, out=pred)
    np.copyto(pred, red_of, where=red_of != cells)
    pred[0] = -1
    return pred


class _HThetaPaths(_TreePaths):
    """:class:`_TreePaths` of H^θ (k ≥ 3) grounded at cell 0, its arrays written out (see above)."""

    def __init__(self, theta: int, written):  # noqa: D107 — written: htheta_edges(k, θ)
        self.edges, red_of = written
        k = len(red_of)
        self.pred = pred = _htheta_parents(k, theta, red_of)
        cells = np.arange(k, dtype=np.intp)
        # the red path from 0 (through r_0 when 0 is not red), one more step to a non-red cell
        depth = np.floor_divide(cells, theta, dtype=np.int64)
        depth += 0 if red_of[0] == 0 else 1
        depth[red_of != cells] += 1
        depth[0] = 0
        self.depth = depth
        self.up_edge = np.minimum(cells, pred, out=cells)  # edge a joins a's lower end a to its upper end
        self.up_edge[0] = -1
