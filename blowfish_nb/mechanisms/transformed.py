"""Transformed mechanisms: a differentially private mechanism run on x_T for a tree T (Haney et al. 2015).

On a tree, x ↦ x_T maps Blowfish neighbours exactly to unbounded-DP
neighbours (Lemma 4.7), so any ε-DP mechanism on (W_T, x_T) is (ε, T)-Blowfish
private (Thm 4.3). For a policy G that is not a tree, T is a spanning tree and
every edge of G is joined in T by at most ℓ edges (the stretch, computed
exactly), so the mechanism run with ε/ℓ is (ε, G)-Blowfish (Lemma 4.3).

* ``inner="laplace"`` — Transformed + Laplace (§5.4.2): Lap(ℓ/ε) on every x_T entry.
* ``inner="dawa"`` — Transformed + DAWA (§5.4.1), with DAWA's partition on
  the cells (issue 25, :mod:`.buckets`): DAWA's PrivTree partition of the
  histogram x (not of x_T), ε₁/g-DP (θ = g/ε₂; a policy edge changes g ≤ 2
  counts, so (ε₁, G)-Blowfish), then the policy projected onto the buckets
  (G′) and DAWA's greedy workload-aware hierarchy run on x_{T′} of a
  spanning tree T′ of G′ for the transformed workload, Laplace ℓ′/ε₂ —
  or over the bucket totals themselves (Δ exact under G′), whichever has
  the smaller expected error given the released partition. ε₁ = ρε, ρ =
  DAWA's ratio. *Why not partition x_T, as before issue 25:* on the line,
  x_T is (minus) the suffix sums, large wherever anything lies to the
  right, so PrivTree's count score split it down to single edges on sparse
  histograms (MEDCOST ε = 0.1: 37× DP DAWA's error at ε/2) and a
  deviation score cannot follow its ramps either; on the cells the
  partition is distributed exactly as DP DAWA's at ε/2, and each
  measurement is at most as noisy as DP DAWA's (Δ ≤ 2 = DP's group size).
* ``inner="dawa-consistent"`` — Transformed + DAWA + Cons: the same, then the
  line graph's monotonicity projection below.
* ``inner="consistent"`` — Transformed + ConsistentEst (§5.4.2): on the line
  graph x_T is a monotone sequence (prefix sums, in this package's orientation
  minus suffix sums: non-decreasing), so the noisy x_T is projected onto
  non-decreasing sequences (isotonic regression). The truth lies in that
  convex set, so the squared error of x_T itself never grows; answers derived
  from it (the histogram is its differences) usually gain a lot on sparse
  data but carry no pointwise guarantee, and :meth:`expected_error` reports
  the figure without consistency.
"""

from __future__ import annotations

import hashlib
import threading
import weakref

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._arrays import unique_sorted
from .._validation import as_generator, check_epsilon
from ..exceptions import InvalidParameterError
from ..operators import DENSE_LIMIT, Identity, Matrix, Workload
from ..policy import BOTTOM, Policy, spanning_tree, stretch, transform
from ..policy.transform import WINDOW_SPAN, crossing_counts, crossing_rows
from ..ranges import as_ranges
from . import noise
from .base import Mechanism, _check_histogram, _check_workload, apply_rows
from .buckets import dawa_measure, private_blocks, private_labels
from .dawa import RATIO as DAWA_RATIO, histogram_offset
from .gram import as_sparse
from .kron import AFFORDABLE, Unaffordable, as_boxes

__all__ = ["Transformed"]

#: (id(policy), tree method) → (weak reference to the policy, (tree, stretch)); a few recent policies
_PLANS: dict = {}
#: guards _PLANS: the service releases from worker threads (lookup, eviction and insertion happen under it)
_PLANS_LOCK = threading.Lock()

INNERS = ("laplace", "consistent", "dawa", "dawa-consistent")
#: the PrivTree score Transformed+DAWA used on x_T before issue 25 (it now partitions the cells, whose score is
#: the count: see :mod:`.buckets`); kept as the documented name :mod:`.privtree` refers to
SCORE = "count"
NAMES = {"laplace": "Transformed+Laplace", "consistent": "Transformed+ConsistentEst",
         "dawa": "Transformed+DAWA", "dawa-consistent": "Transformed+DAWA+Cons"}


@dataclass(frozen=True)
class Transformed(Mechanism):
    """Run a DP mechanism on the transformed data x_T of a (spanning) tree T of the policy.

    Parameters
    ----------
    inner : {"laplace", "consistent", "dawa", "dawa-consistent"}
        The differentially private mechanism applied to x_T.
    tree : str
        ``spanning_tree`` method used when the policy is not already a forest.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> line = policy.line(Domain.grid(16))
    >>> round(Transformed().expected_error(workload.identity(16), line, 1.0), 4)  # 2 edges per cell, ε on each
    3.4525
    """

    inner: str = "laplace"
    tree: str = "auto"

    registry = {"transformed": {}, "transformed-consistent": {"inner": "consistent"},
                "transformed-dawa": {"inner": "dawa"}}
    auto = ({},)  # Transformed+Laplace (the other inners have no analytic error, or need the line graph)
    auto_rank = 40

    def __post_init__(self):
        if self.inner not in INNERS:
            raise InvalidParameterError(f"inner must be one of {INNERS}, got {self.inner!r}")

    @property
    def name(self) -> str:  # type: ignore[override]
        return NAMES[self.inner]

    @property
    def linear(self) -> bool:
        """Whether answers are a fixed linear map of the noise (Laplace only)."""
        return self.inner == "laplace"

    @property
    def analytic_error(self) -> bool:  # type: ignore[override]
        """Whether :meth:`expected_error` is analytic (not for the data-dependent DAWA inners)."""
        return not self.inner.startswith("dawa")

    def refusal(self, policy: Policy) -> str | None:
        """Constrained policies are refused; the consistent inners need a path (the line graph) as their tree."""
        reason = super().refusal(policy)
        if reason is None and self.inner.endswith("consistent"):
            tree = self._plan(policy)[0]
            try:
                _check_path(tree)
            except InvalidParameterError as exc:
                reason = str(exc)
        return reason

    def plan(self, policy: Policy) -> tuple[Policy, int]:
        """The tree T used and its stretch ℓ over the policy (1 when the policy is a forest).

        Remembered for the last few policies (by identity; policies are not
        changed after construction): choosing a mechanism asks for the error
        and the sensitivity of the same policy in turn, and the stretch over
        millions of edges costs a second.
        """
        return self._plan(self.require(policy))

    def _plan(self, policy: Policy) -> tuple[Policy, int]:
        key = (id(policy), self.tree)
        state = _state(policy)  # a policy changed in place since its plan was made must not reuse it
        with _PLANS_LOCK:
            hit = _PLANS.get(key)
            if hit is not None and hit[0]() is policy and hit[2] == state:
                return hit[1]
        if policy.is_forest():  # computed outside the lock: a stretch over millions of edges takes a second
            found = (policy, 1)
        else:
            tree = spanning_tree(policy, self.tree)
            found = (tree, stretch(policy, tree))
        with _PLANS_LOCK:
            while len(_PLANS) >= 8:
                _PLANS.pop(next(iter(_PLANS)))
            _PLANS[key] = (weakref.ref(policy), found, state)
        return found

    def sensitivity(self, policy: Policy) -> float:
        """The Laplace scale factor ℓ: one x_T entry per edge moves by 1, ℓ edges per policy edge."""
        return float(self.plan(policy)[1])

    def noise_scale(self, policy: Policy, epsilon: float) -> float:
        return self.sensitivity(policy) / epsilon

    def _release(self, x, workload: Workload, policy: Policy, epsilon: float, rng) -> np.ndarray:
        tree, ell = self.plan(policy)
        if self.inner.endswith("consistent"):
            _check_path(tree)
        t = transform(tree)
        if self.inner.startswith("dawa"):
            blocks = private_blocks(x, policy, DAWA_RATIO * epsilon, (1 - DAWA_RATIO) * epsilon, rng,
                                    offset=histogram_offset(workload, x.size))  # DP DAWA's bias start (public)
            estimate = dawa_measure(x, blocks, workload, policy, (1 - DAWA_RATIO) * epsilon, rng)
            if self.inner == "dawa":
                return np.asarray(workload @ estimate, dtype=float)
            noisy = t.data(estimate)  # then the line's monotone projection, answers through x_T (offset: public n)
        else:
            noisy = noise.noisy(t.data(x), ell / epsilon, rng, epsilon=epsilon)
        if self.inner.endswith("consistent"):
            from scipy.optimize import isotonic_regression  # lazy (import time)

            noisy = isotonic_regression(noisy, increasing=True).x
        return t.workload(workload) @ noisy + t.offset(workload, x)

    def _sample(self, x, workload: Workload, policy: Policy, epsilon: float, size: int, rng) -> np.ndarray:
        """Vectorised releases for ``inner="laplace"``: W x + W P_T η (the offset carries no noise)."""
        if not self.linear:
            return super()._sample(x, workload, policy, epsilon, size, rng)
        tree, ell = self.plan(policy)
        noise.check_scale(ell / epsilon, value=epsilon)
        P = transform(tree).incidence.tocsr()
        eta = noise.discrete_laplace(rng, ell / epsilon, (size, P.shape[1]))
        truth = np.asarray(workload @ x, dtype=float)
        return truth[None, :] + apply_rows(workload, np.asarray((P @ eta.T).T))

    def single_terms(self, workload: Workload, policy: Policy) -> tuple[int, float] | None:
        """(q, ℓ) when every range crosses at most one edge of the forest (else None).

        Ranges crossing the same edge carry the same noise term (±1), so all
        answers are within α exactly when the q distinct terms are: q counts
        terms, not ranges.
        """
        r = as_ranges(workload)
        if r is None or not self.linear or not policy.is_forest():
            return None
        edges = transform(policy).edges
        if len(edges) == 0 or edges.min() < 0 or np.abs(edges[:, 0] - edges[:, 1]).max() > WINDOW_SPAN:
            return None  # long or ⊥ edges: leave it to Monte Carlo rather than tabulate every range × edge
        M = crossing_rows(r.lo, r.hi, edges, policy.domain.size).tocsr()
        per_row = np.diff(M.indptr)
        if per_row.max(initial=0) > 1 or not np.all(np.abs(M.data) == 1):
            return None
        return int(np.unique(M.indices).size), self.sensitivity(policy)

    def difference_chain(self, workload: Workload, policy: Policy) -> tuple[int, float] | None:
        """(n, ℓ) when the answers' errors are, up to sign, the first differences of (0, Z₁, …, Z_n, 0).

        The histogram under the line policy: cell i crosses the path's edges (i − 1, i) and (i, i + 1), so
        its error is η_{i−1} − η_i, the end cells carry one term each. Detected on the ranges' crossing rows
        W P_T: every distinct row (up to sign) is ±η_e or ±η_e ± η_f, the two-term rows join the n edges
        into one path e₁ … e_n, and the one-term rows are exactly its two ends. The signs do not matter: the
        terms are independent and symmetric, so Z_j = g_j·η_{e_j} with signs g_j chosen along the path turns
        every two-term row into ±(Z_j − Z_{j+1}) without changing the law.

        Examples
        --------
        >>> from blowfish_nb import Domain, policy, workload
        >>> Transformed().difference_chain(workload.identity(16), policy.line(Domain.grid(16)))
        (15, 1.0)
        """
        r = as_ranges(workload)
        if r is None or not self.linear or not policy.is_forest():
            return None
        edges = transform(policy).edges
        if len(edges) < 2 or edges.min() < 0 or np.abs(edges[:, 0] - edges[:, 1]).max() > WINDOW_SPAN:
            return None
        M = crossing_rows(r.lo, r.hi, edges, policy.domain.size).tocsr()
        M.sum_duplicates()
        per_row = np.diff(M.indptr)
        if per_row.max(initial=0) > 2 or not np.all(np.abs(M.data) == 1):
            return None
        first, count = M.indptr[:-1], len(edges)
        one, two = first[per_row == 1], first[per_row == 2]
        single = np.zeros(count, dtype=bool)
        single[M.indices[one]] = True
        a, b = np.minimum(M.indices[two], M.indices[two + 1]), np.maximum(M.indices[two], M.indices[two + 1])
        relation = M.data[two] * M.data[two + 1] > 0  # a sum or a difference (equal in law after the signs g_j)
        keys = unique_sorted((a.astype(np.int64) * count + b) * 2 + relation)
        pairs = keys // 2
        if pairs.size and np.any(pairs[1:] == pairs[:-1]):
            return None  # one pair of edges both summed and differenced
        a, b = pairs // count, pairs % count
        degree = np.bincount(a, minlength=count) + np.bincount(b, minlength=count)
        used = single | (degree > 0)
        n = int(used.sum())
        if n < 2 or pairs.size != n - 1 or degree.max() > 2 or not np.array_equal(single, degree == 1):
            return None  # the one-term answers must be exactly the two ends of n − 1 links
        from scipy.sparse.csgraph import connected_components  # noqa: PLC0415 (scipy.sparse is loaded already)

        graph = sp.csr_array((np.ones(pairs.size), (a, b)), shape=(count, count))
        if connected_components(graph, directed=False)[0] != count - n + 1:
            return None  # n − 1 links of degree ≤ 2 on n edges form one path exactly when they connect them
        return n, self.sensitivity(policy)

    def partitions(self, x, policy: Policy, epsilon: float, size: int, rng=None, workload=None) -> np.ndarray:
        """``size`` draws of the DAWA partition of the cells (``inner="dawa..."``): a block label per cell.

        Claimed privacy: :meth:`partition_epsilon` (ratio·ε/g-DP for one changed count, g ≤ 2 counts per
        policy edge; see :mod:`.buckets`). With ``workload``, the law a release of that workload uses (PrivTree's
        bias from :func:`~.dawa.histogram_offset`).
        """
        self.require(policy)
        if not self.inner.startswith("dawa"):
            raise InvalidParameterError(f"{self.name} has no partition step")
        epsilon = check_epsilon(epsilon)
        rng = as_generator(rng)
        x = _check_histogram(x, policy.domain.size)
        offset = 0 if workload is None else histogram_offset(workload, x.size)
        return private_labels(x, policy, DAWA_RATIO * epsilon, (1 - DAWA_RATIO) * epsilon, rng, size, offset=offset)

    def partition_epsilon(self, epsilon: float) -> float | None:
        """The ε the partition step spends (DAWA's ratio of ε; None for the inners without a partition)."""
        return DAWA_RATIO * epsilon if self.inner.startswith("dawa") else None

    def expected_error(self, workload: Workload, policy: Policy, epsilon: float) -> float:
        """2 (ℓ/ε)² · mean over queries of ‖w P_T‖² (the figure without consistency)."""
        epsilon = check_epsilon(epsilon)
        if self.inner.startswith("dawa"):
            raise InvalidParameterError(f"{self.name} is data-dependent: it has no analytic expected error; measure it")
        _check_workload(workload, policy.domain.size)
        tree, ell = self.plan(policy)
        return float(noise.variance(ell / epsilon) * np.mean(_row_norms_sq(workload, tree)))

    def __repr__(self) -> str:
        return f"Transformed(inner={self.inner!r})"


def _state(policy: Policy) -> str:
    """A digest of the policy's family, domain and parameters (arrays by their bytes): what its plan depends on."""
    h = hashlib.sha256()

    def feed(v):
        if isinstance(v, np.ndarray):
            h.update(f"{v.dtype}{v.shape}".encode())
            h.update(np.ascontiguousarray(v).tobytes())
        elif isinstance(v, dict):
            for k in sorted(v, key=str):
                h.update(repr(k).encode())
                feed(v[k])
        elif isinstance(v, (list, tuple)):
            h.update(f"[{len(v)}".encode())
            for item in v:
                feed(item)
        else:
            h.update(repr(v).encode())

    feed({"family": policy.family, "shape": policy.domain.shape, "params": policy.params,
          "bottom": policy.has_bottom})
    return h.hexdigest()


def _check_path(tree: Policy) -> None:
    e = tree.edges()
    k = tree.domain.size
    if tree.has_bottom or len(e) != k - 1 or not np.array_equal(e, np.column_stack([np.arange(k - 1), np.arange(1, k)])):
        raise InvalidParameterError(
            "inner='consistent' needs the line graph (x_T is then monotone); "
            f"the tree used here is {tree.summary()}"
        )


def _row_norms_sq(workload: Workload, tree: Policy) -> np.ndarray:
    """‖w P_T‖² per query: Σ over tree edges (u, v) of (w_u − w_v)² (w_⊥ = 0).

    0/1 ranges and boxes: the number of tree edges with exactly one end
    inside, counted without forming W (a single cell: its degree in the tree;
    boxes: :func:`box_crossings`); a user's sparse matrix through W P_T;
    anything else densely on small domains. Beyond :data:`.kron.AFFORDABLE` operations the error is not
    computed (:class:`.kron.Unaffordable`).
    """
    e = tree.edges()
    k = tree.domain.size
    if isinstance(workload, Identity):  # a single cell: every tree edge at it crosses
        return np.bincount(e[e >= 0], minlength=k).astype(float)
    ranges = as_ranges(workload)
    if ranges is not None:
        try:
            return crossing_counts(ranges.lo, ranges.hi, e, k)
        except InvalidParameterError as exc:
            raise Unaffordable(f"skipped: {exc}") from None
    shape = tree.domain.shape
    boxes = as_boxes(workload, shape)
    if boxes is not None:
        return box_crossings(*boxes, e, shape)
    if isinstance(workload, Matrix):
        WP = sp.csr_array(workload.A) @ transform(tree).incidence
        return np.asarray(WP.multiply(WP).sum(axis=1), dtype=float).reshape(-1)
    if k > DENSE_LIMIT or workload.shape[0] * (k + len(e)) > AFFORDABLE:
        raise Unaffordable(
            f"skipped: the exact error of {workload.shape[0]:,} {type(workload).__name__} queries on {k:,} cells "
            "has no box form; give ranges, boxes, marginals or a sparse matrix")
    W = workload.dense()
    u, v = e[:, 0], e[:, 1]
    diff = W[:, u] - np.where(v == BOTTOM, 0.0, W[:, np.where(v == BOTTOM, 0, v)])
    return np.sum(diff**2, axis=1)


def box_crossings(lo: np.ndarray, hi: np.ndarray, edges: np.ndarray, shape) -> np.ndarray:
    """Per box [lo, hi] of the grid ``shape``, the number of edges (u, v) with exactly one end inside (⊥ is outside).

    An edge to ⊥ crosses when its cell is inside: box sums of a d-dimensional
    cumulative count, O(k·d + q·2^d). Between cells, boxes that all start at
    the first cell (cumulative counts) are counted by dominance,
    #{u ≤ h} + #{v ≤ h} − 2·#{max(u, v) ≤ h}, O(k·d + |E|) for every box at
    once; other boxes are compared with every edge in chunks (O(q·|E|·d),
    refused beyond :data:`.kron.AFFORDABLE`).

    Examples
    --------
    >>> box_crossings(np.array([[0, 0]]), np.array([[0, 1]]), np.array([[0, 1], [1, 3], [2, -1]]), (2, 2)).tolist()
    [1.0]
    """
    shape = tuple(int(n) for n in shape)
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    paired = edges[:, 1] != BOTTOM
    u = np.stack(np.unravel_index(edges[paired, 0], shape), axis=1).reshape(-1, len(shape))
    v = np.stack(np.unravel_index(edges[paired, 1], shape), axis=1).reshape(-1, len(shape))
    out = _box_sums(_dominance_table(edges[~paired, 0], shape), lo, hi)  # an edge to ⊥ crosses when its cell is inside
    if not lo.any():
        def dominated(cells):
            return _dominance_table(np.ravel_multi_index(tuple(cells.T), shape), shape)[tuple(hi.T)]

        return out + dominated(u) + dominated(v) - 2.0 * dominated(np.maximum(u, v))
    cost = lo.shape[0] * len(u) * len(shape)
    if cost > AFFORDABLE:
        raise Unaffordable(
            f"skipped: counting the tree edges across {lo.shape[0]:,} boxes × {len(u):,} edges costs "
            f"{cost:.2g} operations (at most {AFFORDABLE:.2g} are spent)")
    step = max(1, 2_000_000 // max(1, len(u)))
    for s in range(0, lo.shape[0], step):
        a, b = lo[s : s + step, None, :], hi[s : s + step, None, :]
        in_u = np.all((u[None] >= a) & (u[None] <= b), axis=2)
        in_v = np.all((v[None] >= a) & (v[None] <= b), axis=2)
        out[s : s + step] += np.count_nonzero(in_u != in_v, axis=1)
    return out


def _dominance_table(cells: np.ndarray, shape) -> np.ndarray:
    """T[h] = number of the given cells (with repeats) that are ≤ h in every coordinate."""
    table = np.bincount(np.asarray(cells, dtype=np.int64), minlength=int(np.prod(shape))).astype(float).reshape(shape)
    for axis in range(len(shape)):
        table = np.cumsum(table, axis=axis)
    return table


def _box_sums(dominance: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Counts inside each box [lo, hi] from a dominance table, by inclusion–exclusion over its corners."""
    d = dominance.ndim
    table = np.pad(dominance, [(1, 0)] * d)
    total = np.zeros(lo.shape[0])
    for corner in np.ndindex(*(2,) * d):
        idx = tuple(np.where(c, hi[:, a] + 1, lo[:, a]) for a, c in enumerate(corner))
        total += (-1) ** (d - sum(corner)) * table[idx]
    return total
