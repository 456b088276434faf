"""SuLQ k-means as a mechanism (He et al. 2014, §6), with the exact policy-specific sensitivity of every step.

The data are a histogram over a Domain of ordered attributes; every cell is a
point at its bin centre, weighted by its count. Each of ``iterations``
steps assigns the cells to the nearest (public) centroid and releases the
cluster sizes and the cluster coordinate sums with noise, ε/iterations each
time; the new centroids are sums / sizes (post-processing).

**Privacy.** For fixed centroids the sizes and sums are linear in the
histogram, q = S x, so their sensitivity under the policy is exact by edge
differences: Δ = max over edges (u, v) of ‖S e_u − S e_v‖₁ (``policy.sensitivity``
of S, brute-force tested in ``tests/test_kmeans.py``). Step t releases
S_t x through :func:`.noise.lattice_noisy` at (ε/T, Δ_t): (ε/T, G)-Blowfish
private given the centroids, which are a function of earlier *released*
values only (and of the public start below). By adaptive sequential
composition (He et al. 2014 Thm 4.1) the T steps together are
(ε, G)-Blowfish private: a session charges the whole ε at once.

**He et al. Lemma 6.1 does not hold as stated.** It gives 2θ for the sums
under the L1 distance-threshold policy. A record that moves from x to y
(‖x − y‖₁ ≤ θ) across a cluster boundary leaves one cluster's sum and joins
another's: the sums change by ‖x‖₁ + ‖y‖₁ (plus 2 for the sizes), which can
far exceed 2θ. The exact value is max over such edges of that, and over the
edges inside a cluster of ‖x − y‖₁. We compute it for the current centroids
and use **centred coordinates** (the domain's centre at 0), which shrinks
‖x‖₁ + ‖y‖₁ without changing the clustering (centroids are shifted back).

Compared with the complete graph a threshold policy lowers Δ; compared with
*unbounded* DP it need not: adding a record changes the sums by ‖x‖₁ only, a
move by ‖x‖₁ + ‖y‖₁.

**The start reads no data.** SuLQ's k-means++ start is drawn on the domain's
cell centres with *equal* weights (public: the bins), best of ``restarts`` by
that public objective — centres spread over the domain, not over the data.
Restarts judged by the data's objective would need a noisy objective per
restart, i.e. budget, so SuLQ runs once from that start.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_epsilon
from ..domain import OrderedAttribute
from ..exceptions import InvalidParameterError
from ..operators import Identity, Matrix
from ..policy import Policy
from . import noise
from .base import Mechanism

__all__ = ["SuLQ", "sulq_sensitivity", "kmeanspp", "best_of_kmeanspp", "cell_centres", "RESTARTS", "ITERATIONS"]

#: k-means++ starts tried by default
RESTARTS = 10
#: SuLQ steps by default
ITERATIONS = 10


@dataclass(frozen=True)
class SuLQ(Mechanism):
    """k-means by SuLQ: ``iterations`` noisy (sizes, sums) steps at ε/iterations each (see the module notes).

    ``release(x, workload, policy, epsilon, rng)`` returns the k centroids in
    data units, flattened row by row (k × d values); the workload is the
    identity over the cells (the mechanism reads the whole histogram).

    Parameters
    ----------
    k : int
        Number of clusters.
    iterations : int
        Noisy steps; each spends ε/iterations.
    restarts : int
        Public k-means++ starts tried on the cell centres (free: they read no data).

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> d = Domain.grid(10)
    >>> x = np.zeros(10); x[[1, 8]] = 200
    >>> c = SuLQ(k=2, iterations=5).release(x, Identity(10), policy.dp(d), 5.0, rng=0)
    >>> [round(v) for v in sorted(c)]  # cells 1 and 8 of Domain.grid(10) have their centres at 1.5 and 8.5
    [2, 8]
    """

    k: int = 2
    iterations: int = ITERATIONS
    restarts: int = RESTARTS

    name = "SuLQ k-means"
    linear = False

    def refusal(self, policy: Policy) -> str | None:
        """Categorical attributes have no centres to average; a constrained policy is refused as by every mechanism."""
        for a in policy.domain.attributes:
            if not isinstance(a, OrderedAttribute):
                return f"k-means needs ordered columns; {a.name!r} is categorical"
        return super().refusal(policy)

    def __post_init__(self):
        for field, value in (("k", self.k), ("iterations", self.iterations), ("restarts", self.restarts)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise InvalidParameterError(f"{field} must be a positive integer, got {value!r}")

    def _release(self, x, workload, policy, epsilon, rng) -> np.ndarray:
        return self._run(x, policy, epsilon, rng)[0].reshape(-1)

    def fit(self, x, policy: Policy, epsilon: float, rng=None) -> tuple[np.ndarray, list[float]]:
        """(k × d centroids in data units, Δ of each step): :meth:`release` with the per-step sensitivities.

        The sensitivities are functions of the released centroids (public), never of the data directly.
        """
        x, epsilon, rng = self._checked(x, Identity(policy.domain.size), policy, epsilon, rng)
        return self._run(x, policy, epsilon, rng)

    def noise_scale(self, policy: Policy, epsilon: float) -> float:
        """An upper bound on any step's Laplace scale: (2 + 2·max‖p‖₁)·iterations/ε (p: centred cell centres).

        A move changes one size and one cluster's sums by at most ‖p‖₁ each,
        on both ends of the edge; the exact Δ of a step depends on its
        (public) centroids and is at most this.
        """
        epsilon = check_epsilon(epsilon)
        P = _centred(policy)[0]
        return (2.0 + 2.0 * float(np.abs(P).sum(axis=1).max())) * self.iterations / epsilon

    def _run(self, x: np.ndarray, policy: Policy, epsilon: float, rng: np.random.Generator):
        P, centre = _centred(policy)
        lo, hi = P.min(axis=0), P.max(axis=0)
        k = self.k
        # public start: k-means++ on the cell centres with equal weights (reads no data, spends nothing)
        C = best_of_kmeanspp(P, np.ones(P.shape[0]), k, self.restarts, self.iterations, rng)
        eps = epsilon / self.iterations
        sens = []
        for _ in range(self.iterations):
            assign = _nearest(P, C)
            S = _stacked(P, assign, k)
            delta = float(policy.sensitivity(Matrix(S)))
            # real-valued sums (centred coordinates): the lattice sampler; a move changes the size and the d sums
            # of at most two clusters
            released = (noise.invariant_values(S, x, policy, "SuLQ") if delta == 0 else  # fl(S x) would leak
                        noise.lattice_noisy(noise.product(S, x), delta, eps, 2 * (P.shape[1] + 1), rng))
            sizes, sums = released[:k], released[k:].reshape(P.shape[1], k).T
            ok = sizes >= 1
            C = np.where(ok[:, None], np.clip(sums / np.where(ok, sizes, 1.0)[:, None], lo, hi), C)
            sens.append(delta)
        return C + centre, sens


def sulq_sensitivity(policy: Policy, coords: np.ndarray, assignment: np.ndarray, k: int) -> float:
    """Exact Δ of (cluster sizes, cluster coordinate sums) for a fixed assignment of cells to clusters.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy as P
    >>> pts = np.arange(10.0)[:, None]  # cells at 0..9, centroids at 0 and 9: the boundary is at 4.5
    >>> sulq_sensitivity(P.threshold(Domain.grid(10), 1), pts, (pts[:, 0] > 4.5).astype(int), 2)
    11.0
    """
    return float(policy.sensitivity(Matrix(_stacked(np.asarray(coords, dtype=float), np.asarray(assignment), k))))


def kmeanspp(P: np.ndarray, w: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k centres among the points ``P`` by k-means++ seeding with weights ``w`` (Arthur & Vassilvitskii 2007).

    The first centre is drawn with probability ∝ w, each next one ∝ w·D²
    (D: distance to the nearest centre so far); uniformly when that mass is
    zero (all weight already on centres, or no weight at all).

    Examples
    --------
    >>> P = np.array([[0.0], [1.0], [10.0], [11.0]])
    >>> np.sort(kmeanspp(P, np.array([1.0, 1.0, 0.0, 0.0]), 2, np.random.default_rng(0))[:, 0]).tolist()
    [0.0, 1.0]
    """
    picks = [_draw(w, rng)]
    d2 = ((P - P[picks[0]]) ** 2).sum(axis=1)
    for _ in range(1, k):
        picks.append(_draw(w * d2, rng))
        d2 = np.minimum(d2, ((P - P[picks[-1]]) ** 2).sum(axis=1))
    return P[np.asarray(picks)].copy()


def best_of_kmeanspp(P: np.ndarray, w: np.ndarray, k: int, restarts: int, iterations: int,
                     rng: np.random.Generator) -> np.ndarray:
    """Weighted Lloyd from ``restarts`` k-means++ starts; the centres with the lowest Σ w·D² (post-processing).

    Examples
    --------
    >>> P = np.arange(10.0)[:, None]
    >>> w = np.array([5, 5, 0, 0, 0, 0, 0, 0, 5, 5.0])
    >>> np.sort(best_of_kmeanspp(P, w, 2, 10, 10, np.random.default_rng(1))[:, 0]).tolist()
    [0.5, 8.5]
    """
    best, best_cost = None, np.inf
    for _ in range(restarts):
        C = _lloyd(P, w, kmeanspp(P, w, k, rng), iterations)
        cost = _cost(P, w, C)
        if cost < best_cost:
            best, best_cost = C, cost
    return best


def cell_centres(domain) -> np.ndarray:
    """One row per cell: the centre of its bin on every attribute (data units)."""
    mids = [(a.edges[:-1] + a.edges[1:]) / 2 for a in domain.attributes]
    grids = np.meshgrid(*mids, indexing="ij")
    return np.column_stack([g.reshape(-1) for g in grids])


def _centred(policy: Policy) -> tuple[np.ndarray, np.ndarray]:
    """(cell centres minus the domain's centre, that centre): same clustering, smaller sums."""
    domain = policy.domain
    for a in domain.attributes:
        if not isinstance(a, OrderedAttribute):
            raise InvalidParameterError(f"k-means needs ordered columns; {a.name!r} is categorical")
    centre = np.array([(a.edges[0] + a.edges[-1]) / 2 for a in domain.attributes])
    return cell_centres(domain) - centre, centre


def _draw(mass: np.ndarray, rng: np.random.Generator) -> int:
    total = float(mass.sum())
    if not np.isfinite(total) or total <= 0:
        return int(rng.integers(mass.size))
    return int(min(np.searchsorted(np.cumsum(mass), rng.random() * total, side="right"), mass.size - 1))


def _lloyd(P: np.ndarray, w: np.ndarray, C: np.ndarray, iterations: int) -> np.ndarray:
    """At most ``iterations`` weighted Lloyd steps; a centre with no weight stays where it is."""
    k = C.shape[0]
    for _ in range(iterations):
        assign = _nearest(P, C)
        mass = np.bincount(assign, weights=w, minlength=k)
        sums = np.stack([np.bincount(assign, weights=w * P[:, d], minlength=k) for d in range(P.shape[1])], 1)
        ok = mass > 0
        new = np.where(ok[:, None], sums / np.where(ok, mass, 1.0)[:, None], C)
        if np.array_equal(new, C):
            break
        C = new
    return C


def _cost(P: np.ndarray, w: np.ndarray, C: np.ndarray) -> float:
    return float(np.sum(w * np.min(((P[:, None, :] - C[None, :, :]) ** 2).sum(axis=2), axis=1)))


def _stacked(P: np.ndarray, assign: np.ndarray, k: int) -> np.ndarray:
    """Rows: cluster indicators (sizes), then one block of k rows per coordinate (sums)."""
    cells = P.shape[0]
    ind = np.zeros((k, cells))
    ind[assign, np.arange(cells)] = 1.0
    return np.vstack([ind] + [ind * P[:, d][None, :] for d in range(P.shape[1])])


def _nearest(X: np.ndarray, C: np.ndarray) -> np.ndarray:
    return np.argmin(((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2), axis=1)
