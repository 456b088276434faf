"""Blowfish k-means (He et al. 2014, §6): SuLQ iterations with exact policy-specific sensitivity, or a noisy histogram.

The data are binned into a Domain; every cell is a point at its bin centre,
weighted by its count.

``method="sulq"`` — every iteration assigns cells to the nearest (public)
centroid and releases the cluster sizes and the cluster coordinate sums with
Laplace noise, ε/iterations each time. For fixed centroids both are linear
in the histogram, q = S x, so their joint sensitivity under the policy is
exact by edge differences: Δ = max over edges (u, v) of ‖S e_u − S e_v‖₁.

**He et al. Lemma 6.1 does not hold as stated.** It gives 2θ for the sums
under the L1 distance-threshold policy. A record that moves from x to y
(‖x − y‖₁ ≤ θ) across a cluster boundary leaves one cluster's sum and joins
another's: the sums change by ‖x‖₁ + ‖y‖₁ (plus 2 for the sizes), which can
far exceed 2θ. The exact value is max over such edges of that, and over the
edges inside a cluster of ‖x − y‖₁. We compute it for the current centroids
and use **centred coordinates** (the domain's centre at 0), which shrinks
‖x‖₁ + ‖y‖₁ without changing the clustering (centroids are shifted back).

Compared with the complete graph (any value may become any other: the
paper's baseline) a threshold policy lowers Δ; compared with *unbounded* DP
it need not: adding a record changes the sums by ‖x‖₁ only, a move by
‖x‖₁ + ‖y‖₁ (see the tests).

``method="histogram"`` — one release of the histogram with the mechanism
``choose_mechanism`` picks for the policy, then weighted k-means on the
non-negative noisy counts (post-processing; the whole ε goes to the counts).
Being post-processing, it may try as often as it likes: ``restarts`` runs of
Lloyd's algorithm, each from a k-means++ start drawn on the noisy counts
(Arthur & Vassilvitskii 2007: the first centre with probability ∝ w, each
next one ∝ w·D², D the distance to the nearest centre so far), and the run
with the lowest objective Σ w·D² on the noisy counts is kept. A single
uniform start put two centres into one of three separated clusters, or one
onto the noise of empty cells, on more than half the seeds.

**Which steps of SuLQ spend budget.** Only the releases of each iteration's
(sizes, sums) read the data, so only they are charged (ε/iterations each).
The start is free only if it reads no data: SuLQ's k-means++ start is drawn
on the domain's cell centres with *equal* weights (public: the bins), best
of ``restarts`` by that public objective — centres spread over the domain,
not over the data. Restarts judged by the data's objective would need a
noisy objective per restart, i.e. budget, so SuLQ runs once from that start.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ._validation import as_generator, check_epsilon
from .mechanisms.noise import lattice_noisy
from .domain import OrderedAttribute
from .exceptions import InvalidParameterError
from .policy import Policy
from .workload import Identity, Matrix

__all__ = ["kmeans", "KMeansResult", "sulq_sensitivity", "kmeanspp", "best_of_kmeanspp"]

METHODS = ("sulq", "histogram")
#: k-means++ starts tried by default
RESTARTS = 10


@dataclass(frozen=True)
class KMeansResult:
    """Private k-means centroids and how they were made.

    Attributes
    ----------
    centroids : pandas.DataFrame
        One row per cluster, one column per attribute (data units).
    sensitivities : list of float
        Δ of (sizes, sums) at each SuLQ iteration (empty for ``"histogram"``).
    epsilon_per_step : list of float
        The budget of each release (iterations for SuLQ, one for the histogram).
    method : str
    policy : Policy
    """

    centroids: pd.DataFrame
    sensitivities: list[float]
    epsilon_per_step: list[float]
    method: str
    policy: Policy
    columns: tuple[str, ...] = field(default=())

    def labels(self, df: pd.DataFrame) -> np.ndarray:
        """Index of the nearest centroid for every row of ``df`` (squared Euclidean distance)."""
        X = df[list(self.columns)].to_numpy(dtype=float)
        return _nearest(X, self.centroids.to_numpy())

    def objective(self, df: pd.DataFrame) -> float:
        """Σ over rows of the squared distance to the nearest centroid (the k-means objective)."""
        X = df[list(self.columns)].to_numpy(dtype=float)
        C = self.centroids.to_numpy()
        return float(np.sum(np.min(((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2), axis=1)))


def kmeans(data: pd.DataFrame, columns, k: int, policy="dp", epsilon: float = 1.0, iterations: int = 10,
           method: str = "sulq", rng=None, theta=None, bins=None, bounds=None, mechanism="auto",
           restarts: int = RESTARTS) -> KMeansResult:
    """Blowfish-private k-means over ordered columns (see the module notes).

    Parameters
    ----------
    data : pandas.DataFrame
    columns : str or list of str
        Ordered (numeric) columns to cluster on.
    k : int
        Number of clusters.
    policy, theta, bins, bounds
        As in ``df.blowfish.release`` (θ in bins; bins and bounds per column).
    epsilon : float
        Total budget (split evenly over the SuLQ iterations).
    iterations : int
        SuLQ: noisy iterations (each spends ε/iterations). Histogram: Lloyd
        steps per restart at most (free; they stop early once stable).
    method : {"sulq", "histogram"}
    rng : None, int or numpy.random.Generator
        Draws the noise and the k-means++ starts.
    mechanism : "auto" or a Mechanism
        For ``"histogram"``: the histogram's mechanism (``"auto"``: ``choose_mechanism``).
    restarts : int
        k-means++ starts tried (histogram: judged on the noisy counts; SuLQ:
        on the public cell centres, see the module notes). At least 1.

    Examples
    --------
    >>> df = pd.DataFrame({"a": np.r_[np.full(200, 1.0), np.full(200, 9.0)]})
    >>> r = kmeans(df, "a", 2, epsilon=5.0, bins=10, bounds=(0, 10), rng=0)
    >>> lo, hi = sorted(r.centroids["a"])  # the bins' centres 1.5 and 9.5, give or take the noise
    >>> bool(abs(lo - 1.5) < 1 and abs(hi - 9.5) < 1)
    True
    """
    from .spec import check_policy_params, domain_for, resolve_policy

    epsilon = check_epsilon(epsilon)
    if method not in METHODS:
        raise InvalidParameterError(f"method must be one of {METHODS}, got {method!r}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InvalidParameterError(f"k must be a positive integer, got {k!r}")
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise InvalidParameterError(f"iterations must be a positive integer, got {iterations!r}")
    if isinstance(restarts, bool) or not isinstance(restarts, (int, np.integer)) or restarts < 1:
        raise InvalidParameterError(f"restarts must be a positive integer, got {restarts!r}")
    generator = as_generator(rng)
    cols = [columns] if isinstance(columns, str) else list(columns)
    domain = domain_for(data, cols, bins, None, bounds)
    for a in domain.attributes:
        if not isinstance(a, OrderedAttribute):
            raise InvalidParameterError(f"k-means needs ordered columns; {a.name!r} is categorical")
    check_policy_params(policy, theta=theta)  # a θ given with a policy that takes none is refused, not ignored
    pol = resolve_policy(policy, domain, theta=theta)
    x = domain.histogram(data).astype(float)
    coords = _cell_centres(domain)
    centre = np.array([(a.edges[0] + a.edges[-1]) / 2 for a in domain.attributes])
    P = coords - centre  # centred coordinates: same clustering, smaller sums
    lo, hi = P.min(axis=0), P.max(axis=0)
    sens, steps = [], []
    if method == "sulq":
        # public start: k-means++ on the cell centres with equal weights (reads no data, spends nothing)
        C = best_of_kmeanspp(P, np.ones(P.shape[0]), k, restarts, iterations, generator)
        eps = epsilon / iterations
        for _ in range(iterations):
            assign = _nearest(P, C)
            S = _stacked(P, assign, k)
            delta = pol.sensitivity(Matrix(S))
            # real-valued sums (centred coordinates): the lattice sampler; a move changes the size and the d sums
            # of at most two clusters
            noisy = lattice_noisy(S @ x, float(delta), eps, 2 * (P.shape[1] + 1), generator)
            sizes, sums = noisy[:k], noisy[k:].reshape(P.shape[1], k).T
            ok = sizes >= 1
            C = np.where(ok[:, None], np.clip(sums / np.where(ok, sizes, 1.0)[:, None], lo, hi), C)
            sens.append(float(delta))
            steps.append(eps)
    else:
        from .analysis import choose_mechanism

        W = Identity(domain.size)
        mech = choose_mechanism(W, pol, epsilon)[0] if isinstance(mechanism, str) and mechanism == "auto" else mechanism
        if not hasattr(mech, "release"):
            raise InvalidParameterError(f"mechanism must be 'auto' or a mechanism object, got {mechanism!r}")
        w = np.clip(mech.release(x, W, pol, epsilon, rng=generator), 0.0, None)
        C = best_of_kmeanspp(P, w, k, restarts, iterations, generator)  # post-processing of the noisy counts
        steps.append(epsilon)
    return KMeansResult(pd.DataFrame(C + centre, columns=cols), sens, steps, method, pol, tuple(cols))


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


def _cell_centres(domain) -> np.ndarray:
    mids = [(a.edges[:-1] + a.edges[1:]) / 2 for a in domain.attributes]
    grids = np.meshgrid(*mids, indexing="ij")
    return np.column_stack([g.reshape(-1) for g in grids])
