"""An empirical privacy audit: a lower confidence bound on the privacy loss a mechanism realises.

For neighbouring histograms x, x' along the policy's worst-case edges (those
where the strategy's column difference is largest), the mechanism runs many
times on each. Half of the runs choose a test statistic (the outputs projected
on the sign of their mean difference) and thresholds; on the other half, for
every event E = {s > t} and {s < t}, Clopper–Pearson bounds give with
confidence 1 − α (Bonferroni over all events and both directions)

    ε ≥ ln( P̲[E | x] / P̄[E | x'] ).

A mechanism whose lower bound exceeds its claimed ε is not (ε, G)-Blowfish
private. A bound below ε proves nothing by itself — it is evidence, sampled
where a violation would show first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import beta

from .._validation import as_generator, check_epsilon
from ..exceptions import InvalidParameterError
from ..operators import Workload
from ..policy import BOTTOM, Policy
from ..workload import identity

__all__ = ["audit", "AuditResult", "log_ratio_lower_bound"]


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit`."""

    mechanism: str
    policy: str
    epsilon: float
    lower_bound: float
    confidence: float
    samples: int
    edges: pd.DataFrame

    @property
    def violation(self) -> bool:
        """Whether the realised privacy loss provably exceeds the claimed ε."""
        return self.lower_bound > self.epsilon

    def __str__(self) -> str:
        verdict = (
            f"VIOLATION: privacy loss ≥ {self.lower_bound:.3f} > ε = {self.epsilon:g}"
            if self.violation else
            f"no violation found (lower bound {self.lower_bound:.3f} ≤ ε = {self.epsilon:g})"
        )
        return f"{self.mechanism} under {self.policy}: {verdict}, {self.confidence:.0%} confidence, {self.samples:,} runs per database"


def audit(
    mechanism,
    policy: Policy,
    epsilon: float,
    workload: Workload | None = None,
    x: np.ndarray | None = None,
    samples: int = 200_000,
    edges: int = 2,
    alpha: float = 0.05,
    thresholds: int = 30,
    rng=None,
    progress: bool = False,
) -> AuditResult:
    """Audit ``mechanism`` for (ε, policy)-Blowfish privacy on a small domain.

    Parameters
    ----------
    mechanism
        Anything with ``release(x, workload, policy, epsilon, rng)``; a
        ``sample`` method (the matrix mechanisms) makes it fast.
    workload : Workload, optional
        The query the mechanism answers (default: the histogram).
    x : array, optional
        The base histogram (default: 3 records per cell).
    samples : int
        Runs per database (half choose the events, half bound them).
    edges : int
        How many worst-case edges to test.
    progress : bool
        Show a tqdm progress bar over the edges.

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy
    >>> r = audit(mechanisms.Laplace(), policy.line(Domain.grid(4)), 1.0, samples=20_000, rng=0)
    >>> r.violation
    False
    """
    epsilon = check_epsilon(epsilon)
    if not (isinstance(samples, int) and samples >= 1000):
        raise InvalidParameterError(f"samples must be an integer >= 1000, got {samples!r}")
    if not 0 < alpha < 1:
        raise InvalidParameterError(f"alpha must lie in (0, 1), got {alpha!r}")
    rng = as_generator(rng)
    k = policy.domain.size
    W = workload if workload is not None else identity(k)
    base = np.full(k, 3.0) if x is None else np.asarray(x, dtype=float)
    chosen = _worst_edges(mechanism, policy, edges)
    per_event_alpha = alpha / (len(chosen) * 2 * 2 * thresholds)
    rows, best = [], -math.inf
    if progress:
        from tqdm.auto import tqdm

        chosen = tqdm(chosen, desc=f"audit {getattr(mechanism, 'name', 'mechanism')}")
    for u, v in chosen:
        x0 = base.copy()
        x0[u] = max(x0[u], 1.0)
        x1 = x0.copy()
        x1[u] -= 1
        if v != BOTTOM:
            x1[v] += 1
        out0 = _draw(mechanism, x0, W, policy, epsilon, samples, rng)
        out1 = _draw(mechanism, x1, W, policy, epsilon, samples, rng)
        half = samples // 2
        bound = _bound(out0[:half], out1[:half], out0[half:], out1[half:], thresholds, per_event_alpha)
        rows.append({"u": int(u), "v": "⊥" if v == BOTTOM else int(v), "lower_bound": bound})
        best = max(best, bound)
    return AuditResult(
        mechanism=getattr(mechanism, "name", type(mechanism).__name__),
        policy=policy.summary(),
        epsilon=epsilon,
        lower_bound=max(best, 0.0),
        confidence=1 - alpha,
        samples=samples,
        edges=pd.DataFrame(rows),
    )


def _worst_edges(mechanism, policy: Policy, count: int) -> list[tuple[int, int]]:
    e = policy.edges()
    if len(e) == 0:
        raise InvalidParameterError(f"{policy.summary()} has no edges: there is nothing to protect or audit")
    strategy = getattr(mechanism, "strategy", None)
    if strategy is not None:
        A = strategy(policy)
        to_bottom = e[:, 1] == BOTTOM
        score = np.empty(len(e))
        score[to_bottom] = A.column_norms(e[to_bottom, 0])
        score[~to_bottom] = A.column_differences(e[~to_bottom, 0], e[~to_bottom, 1])
        order = np.argsort(-score, kind="stable")
    else:
        order = np.arange(len(e))
    return [tuple(map(int, e[i])) for i in order[:count]]


def _draw(mechanism, x, W, policy, epsilon, n, rng) -> np.ndarray:
    if hasattr(mechanism, "sample"):
        return mechanism.sample(x, W, policy, epsilon, n, rng=rng)
    return np.stack([mechanism.release(x, W, policy, epsilon, rng=rng) for _ in range(n)])


def _bound(sel0, sel1, ev0, ev1, thresholds, a) -> float:
    shift = sel0.mean(axis=0) - sel1.mean(axis=0)
    noise = np.sqrt(sel0.var(axis=0) / len(sel0) + sel1.var(axis=0) / len(sel1)) + 1e-12
    direction = np.where(np.abs(shift) > 3 * noise, np.sign(shift), 0.0)
    if not direction.any():
        direction = np.sign(shift)
    s_sel = np.concatenate([sel0 @ direction, sel1 @ direction])
    cuts = np.unique(np.quantile(s_sel, np.linspace(0.02, 0.98, thresholds)))
    s0, s1 = ev0 @ direction, ev1 @ direction
    n0, n1 = len(s0), len(s1)
    best = -math.inf
    for t in cuts:
        for c0, c1 in (((s0 > t).sum(), (s1 > t).sum()), ((s0 < t).sum(), (s1 < t).sum())):
            best = max(best, _log_ratio(c0, n0, c1, n1, a), _log_ratio(c1, n1, c0, n0, a))
    return best


def _log_ratio(k_num, n_num, k_den, n_den, a) -> float:
    return float(log_ratio_lower_bound(k_num, n_num, k_den, n_den, a))


def log_ratio_lower_bound(k_num, n_num, k_den, n_den, alpha):
    """Clopper–Pearson lower confidence bound on ln(p_num / p_den) from two binomial counts.

    p_num is bounded below at level ``alpha`` (one-sided) from ``k_num``
    successes in ``n_num`` runs, p_den above at level ``alpha`` from
    ``k_den`` in ``n_den``; both hold together with probability ≥ 1 − 2α, and
    then ln(p_num/p_den) ≥ the returned value (−inf when ``k_num`` = 0).
    Vectorised over array arguments (numpy broadcasting).

    Parameters
    ----------
    k_num, n_num : int or array
        Occurrences of the event and runs on the numerator's database.
    k_den, n_den : int or array
        The same on the denominator's database.
    alpha : float or array
        One-sided level of each of the two bounds.

    Returns
    -------
    float or array
        The lower bound on the log-ratio.

    Examples
    --------
    >>> round(float(log_ratio_lower_bound(900, 1000, 100, 1000, 0.005)), 3)
    1.929
    >>> float(log_ratio_lower_bound(0, 1000, 10, 1000, 0.005))
    -inf
    """
    k_num, n_num, k_den, n_den, alpha = np.broadcast_arrays(
        *(np.asarray(v, dtype=float) for v in (k_num, n_num, k_den, n_den, alpha)))
    lo = np.zeros(k_num.shape)
    hit = k_num > 0
    lo[hit] = beta.ppf(alpha[hit], k_num[hit], n_num[hit] - k_num[hit] + 1)
    hi = np.ones(k_den.shape)
    below = k_den < n_den
    hi[below] = beta.ppf(1 - alpha[below], k_den[below] + 1, n_den[below] - k_den[below])
    with np.errstate(divide="ignore"):
        out = np.where(lo > 0, np.log(np.where(lo > 0, lo, 1.0) / hi), -np.inf)
    return float(out) if out.ndim == 0 else out
