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

__all__ = ["kmeans", "KMeansResult", "sulq_sensitivity"]

METHODS = ("sulq", "histogram")


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
           method: str = "sulq", rng=None, theta=None, bins=None, bounds=None, mechanism="auto") -> KMeansResult:
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
    method : {"sulq", "histogram"}
    rng : None, int or numpy.random.Generator
        Also draws the (data-independent) initial centroids.
    mechanism : "auto" or a Mechanism
        For ``"histogram"``: the histogram's mechanism (``"auto"``: ``choose_mechanism``).

    Examples
    --------
    >>> df = pd.DataFrame({"a": np.r_[np.full(200, 1.0), np.full(200, 9.0)]})
    >>> r = kmeans(df, "a", 2, epsilon=5.0, bins=10, bounds=(0, 10), rng=0)
    >>> sorted(np.round(r.centroids["a"]).tolist())  # the bins' centres 1.5 and 9.5, give or take the noise
    [2.0, 10.0]
    """
    from .spec import check_policy_params, domain_for, resolve_policy

    epsilon = check_epsilon(epsilon)
    if method not in METHODS:
        raise InvalidParameterError(f"method must be one of {METHODS}, got {method!r}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InvalidParameterError(f"k must be a positive integer, got {k!r}")
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise InvalidParameterError(f"iterations must be a positive integer, got {iterations!r}")
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
    C = P[generator.choice(P.shape[0], size=k, replace=P.shape[0] < k)]  # public, data-independent start
    sens, steps = [], []
    if method == "sulq":
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
        for _ in range(iterations):
            assign = _nearest(P, C)
            mass = np.bincount(assign, weights=w, minlength=k)
            sums = np.stack([np.bincount(assign, weights=w * P[:, d], minlength=k) for d in range(P.shape[1])], 1)
            ok = mass > 0
            C = np.where(ok[:, None], sums / np.where(ok, mass, 1.0)[:, None], C)
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
