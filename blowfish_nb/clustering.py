"""Blowfish k-means (He et al. 2014, §6): a front end over SuLQ (a mechanism) or a noisy histogram.

The package exports the function as ``blowfish_nb.kmeans``; this module is
named ``clustering`` so that the function does not shadow it (with a module
``blowfish_nb/kmeans.py``, ``import blowfish_nb.kmeans as m`` bound ``m`` to
the function, and the module's other names could not be reached that way).

The data are binned into a Domain; every cell is a point at its bin centre,
weighted by its count.

``method="sulq"`` — the :class:`~blowfish_nb.mechanisms.sulq.SuLQ` mechanism
(:mod:`blowfish_nb.mechanisms.sulq`: exact policy-specific sensitivity per
step, the counter-example to He et al. Lemma 6.1, the public start). Being a
mechanism, it goes through planning like any release: a
:class:`~blowfish_nb.Session`, a :class:`~blowfish_nb.service.RemoteSession`
and the analyst service charge it (``session.kmeans(...)``, or
``session.release("kmeans", columns, k=..., epsilon=...)``), the whole ε of
all its steps at once.

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
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ._validation import as_generator, check_epsilon
from .domain import OrderedAttribute
from .exceptions import InvalidParameterError
from .mechanisms import Mechanism
from .mechanisms.sulq import (  # noqa: F401  (re-exported: they lived here before SuLQ became a mechanism)
    RESTARTS, SuLQ, _cost, _lloyd, _nearest, _stacked, best_of_kmeanspp, cell_centres, kmeanspp, sulq_sensitivity,
)
from .policy import Policy
from .workload import Identity

__all__ = ["kmeans", "KMeansResult", "sulq_sensitivity", "kmeanspp", "best_of_kmeanspp"]

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
    if method == "sulq":
        C, sens = SuLQ(k=int(k), iterations=int(iterations), restarts=int(restarts)).fit(x, pol, epsilon, generator)
        return KMeansResult(pd.DataFrame(C, columns=cols), sens, [epsilon / iterations] * int(iterations), method,
                            pol, tuple(cols))
    from .analysis import choose_mechanism

    centre = np.array([(a.edges[0] + a.edges[-1]) / 2 for a in domain.attributes])
    P = cell_centres(domain) - centre  # centred coordinates: same clustering, smaller sums
    W = Identity(domain.size)
    mech = choose_mechanism(W, pol, epsilon)[0] if isinstance(mechanism, str) and mechanism == "auto" else mechanism
    if not isinstance(mech, Mechanism):
        raise InvalidParameterError(f"mechanism must be 'auto' or a mechanism object, got {mechanism!r}")
    w = np.clip(mech.release(x, W, pol, epsilon, rng=generator), 0.0, None)
    C = best_of_kmeanspp(P, w, k, restarts, iterations, generator)  # post-processing of the noisy counts
    return KMeansResult(pd.DataFrame(C + centre, columns=cols), [], [epsilon], method, pol, tuple(cols))
