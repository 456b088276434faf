"""Certified quantiles of OrderedHierarchical's largest prefix error, tabulated once (issue 28).

The cumulative query under a policy whose blocks span the domain (dp, or any
policy with θ ≥ k) is answered by OrderedHierarchical as one 16-ary tree of
discrete-Laplace measurements of one scale b = Δ_H/ε, read by least squares:
every prefix's error is a weighted sum of all the tree's noise, with no chain
or closed form, and before this module its (α, β) → ε quote drew Monte-Carlo
rounds of 800 releases (~1.2 s cold at k = 4,096). But the law of
M(b) = max_j |error_j| depends on (k, b) only, so its quantiles can be drawn
once, with many more draws than a quote can afford, and looked up:

* **The table.** For each power-of-two k in :data:`SIZES` and each b on the
  grid b_g = 2^(g/:data:`STEPS`) (g from :data:`LOG2_B` · STEPS), n = :data:`DRAWS`
  releases of the noise alone are drawn through the mechanism's own
  ``sample`` (the release's law, discrete sampler and least squares
  included) at ε_g = Δ_H/b_g, each grid point from its own seed
  (``SeedSequence([k, g])``). For each β in :data:`BETAS` the entry is the
  order statistic M_(j), j the least rank with P(Binomial(n, 1 − β) ≤ j − 1)
  ≥ :data:`CONFIDENCE`: an upper confidence bound for the (1 − β)-quantile of
  M(b_g), P(M_(j) ≥ q_{1−β}) ≥ 0.99 (the Clopper–Pearson order statistic the
  Monte-Carlo rounds of :mod:`blowfish_nb.accuracy` use, with 10× their
  draws, so the bound sits nearer the quantile: the 0.95-quantile's is the
  0.9557-quantile at n = 8,000 against 0.969 at 800). Stored as M_(j)/b_g
  in float16 rounded *up* (conservative): 55 kB for the nine sizes.
* **The quote.** For (α, β) the level is the largest tabulated β' ≤ β
  (so the table certifies coverage ≥ 1 − β' ≥ 1 − β); walking the grid from
  the least noise upward, the quote is the last b_g of the run whose entry
  is ≤ α, returned as ε = Δ_H(policy)/b_g. It is certified exactly as a
  Monte-Carlo round certifies its ε: with confidence 0.99 over the table's
  draws, P(every prefix within α) ≥ 1 − β at the returned ε (each entry is its
  own 99 % bound from independent draws; the first grid point whose true
  quantile exceeds α ends the run unless its own bound fails, which has
  probability ≤ 1 %, when coverage falls as the noise grows). Between grid
  points nothing is interpolated, so the ε is at most one grid step
  (2^(1/32) − 1 = 2.2 %) above the least certified one.
* **Not covered** (the caller falls back to Monte Carlo): a k whose rows
  were not drawn (powers of two 16 … 4,096 were; a k between two of them could
  soundly use the larger's rows, its prefixes being a subset of those of
  the same padded tree, but k = 1,000 would then ask 19 % more ε than its
  own ε*), a branching other than 16, blocks narrower than the domain,
  a workload other than all k prefixes, β below the smallest level, or an α
  outside the grid's reach (its first entry already above α, or its last
  still below).

Why not the continuous law's exact 1/ε scaling: the sampler's noise is
discrete (Z = ⌊bE₁⌋ − ⌊bE₂⌋), and at the quote's b ≈ 2.7 every coupling to
Laplace(b) found moves each term by up to 1 (continuous Laplace is exactly
discrete Laplace plus an independent term of density ∝ sinh((1 − |u|)/b) on
[−1, 1], variance ≈ 1/6, but lattice laws have no Anderson inequality, so a
rigorous bridge has to bound that term's sum over 4,096 prefixes: about 9 % of
α here, more than the target's slack). Tabulating the discrete law itself at
each b avoids the bridge.

``python -m blowfish_nb.analysis.prefix_table`` rebuilds the table
(tests/analysis/test_prefix_table.py recomputes entries and fails if the
sampler or the estimator changed under it).
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path

import numpy as np

from ..domain import Domain
from ..exceptions import InvalidParameterError
from ..mechanisms import OrderedHierarchical
from ..policy import dp
from ..ranges import as_ranges
from ..workload import prefix

__all__ = ["tabulated_epsilon", "build_rows", "unit_scale", "SIZES", "BETAS", "DRAWS", "CONFIDENCE", "STEPS",
           "LOG2_B", "TABLE_PATH"]

#: the table's file (package data)
TABLE_PATH = Path(__file__).with_name("prefix_table.npz")
#: the domain sizes tabulated (others fall back to Monte Carlo). The trees pad a block to a power of 16 leaves, so
#: 512, 1,024 and 2,048 cost a build as much as 4,096: 330–470 s of CPU each, 2–15 s for each k ≤ 256
SIZES = tuple(2**e for e in range(4, 13))
#: grid points per doubling of the noise scale b
STEPS = 32
#: the grid's range of log₂ b (both ends included): b from 0.5 to 128
LOG2_B = (-1, 7)
#: draws per grid point
DRAWS = 8000
#: confidence of each entry's upper bound on its quantile
CONFIDENCE = 0.99
#: the failure probabilities β tabulated (a quote uses the largest one ≤ its β)
BETAS = (0.5, 0.3, 0.2, 0.15, 0.1, 0.075, 0.05, 0.04, 0.03, 0.025, 0.02, 0.015, 0.01, 0.005, 0.002, 0.001)
#: the in-block trees' fan-out the table was drawn for (the mechanism's default)
BRANCHING = 16
#: draws per ``sample`` call while building
_CHUNK = 1000


def tabulated_epsilon(mechanism, workload, policy, alpha: float, beta: float) -> float | None:
    """The table's ε for (α, β), or None when the table does not cover the quote (see the module notes).

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy, workload
    >>> m, W, pol = mechanisms.OrderedHierarchical(), workload.prefix(4096), policy.dp(Domain.grid(4096))
    >>> e = tabulated_epsilon(m, W, pol, 50, 0.05)
    >>> 1.40 < e < 1.52
    True
    >>> tabulated_epsilon(m, W, pol, 50, 0.0001) is None  # below the smallest tabulated β
    True
    """
    unit = unit_scale(mechanism, workload, policy)
    if unit is None:
        return None
    levels = [i for i, b in enumerate(BETAS) if b <= beta]
    if not levels:
        return None
    table = _rows(policy.domain.size)
    if table is None:
        return None
    ratios = table[:, levels[0]].astype(np.float64)
    passing = ratios * _grid() <= alpha
    if not passing[0] or passing.all():
        return None
    last = int(np.argmin(passing)) - 1  # the last grid point of the run that starts at the least noise
    # the returned ε draws noise of scale unit/ε ≤ b_g (a hair below it: smaller noise, never larger)
    return float(unit / _grid()[last] * (1 + 2.0**-40))


def unit_scale(mechanism, workload, policy) -> float | None:
    """Δ_H, the trees' noise scale at ε = 1, when the table's law applies to (mechanism, workload, policy); else None.

    The law is M(b) of one 16-ary tree over the whole domain with all k prefixes asked; whether rows were drawn
    for k is looked up by :func:`tabulated_epsilon`.

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy, workload
    >>> unit_scale(mechanisms.OrderedHierarchical(), workload.prefix(64), policy.dp(Domain.grid(64)))
    3.0
    >>> unit_scale(mechanisms.OrderedHierarchical(), workload.prefix(64), policy.threshold(Domain.grid(64), 4))
    """
    if type(mechanism) is not OrderedHierarchical or mechanism.branching != BRANCHING:
        return None
    domain = policy.domain
    k = domain.size
    if len(domain.shape) != 1 or mechanism.refusal(policy) is not None:
        return None
    if mechanism._theta(policy) < k:
        return None
    r = as_ranges(workload)
    if r is None or r.lo.size != k or r.lo.any() or not np.array_equal(np.sort(r.hi), np.arange(k)):
        return None
    b_s, b_h = mechanism._scales(policy, 1.0, 0.0)
    return float(b_h) if math.isfinite(b_h) and b_h > 0 else None


def build_rows(k: int, grid_points=None, draws: int = DRAWS) -> np.ndarray:
    """The table's rows for domain size ``k``: M_(j)/b_g per grid point (rows) and β (columns), in float64.

    ``grid_points`` (indices into the grid, default all) lets tests recompute a few rows; each row's draws
    come from ``SeedSequence([k, g])`` whatever else is built.

    Examples
    --------
    >>> rows = build_rows(16, [0, 1])
    >>> rows.shape, bool(np.all(rows[:, :-1] <= rows[:, 1:]))  # a smaller β, a higher quantile
    ((2, 16), True)
    """
    m, W, pol = OrderedHierarchical(), prefix(k), dp(Domain.grid(k))
    unit = m._scales(pol, 1.0, 0.0)[1]
    grid = _grid()
    points = range(grid.size) if grid_points is None else list(grid_points)
    ranks = [_rank(draws, 1 - b) for b in BETAS]
    zeros = np.zeros(k)
    rows = []
    for g in points:
        seeds = np.random.SeedSequence([k, int(g)]).spawn(-(-draws // _CHUNK))
        z = []
        for i, seed in enumerate(seeds):
            size = min(_CHUNK, draws - i * _CHUNK)
            e = m.sample(zeros, W, pol, unit / grid[g], size, rng=np.random.default_rng(seed))
            z.append(np.maximum(e.max(axis=1), -e.min(axis=1)))
        z = np.sort(np.concatenate(z))
        rows.append([z[j - 1] / grid[g] for j in ranks])
    return np.array(rows)


def _rank(n: int, p: float) -> int:
    """The least j with P(Binomial(n, p) ≤ j − 1) ≥ :data:`CONFIDENCE`, the entry's order statistic (build time)."""
    from scipy.stats import binom  # lazy: only the build and the tests rank

    j = int(binom.ppf(CONFIDENCE, n, p)) + 1
    if j > n:
        raise InvalidParameterError(f"draws={n} cannot bound the {p:g}-quantile with confidence {CONFIDENCE}")
    return j


def _grid() -> np.ndarray:
    """The noise scales b_g = 2^(g/STEPS) of the grid, least first."""
    return np.exp2(np.arange(LOG2_B[0] * STEPS, LOG2_B[1] * STEPS + 1) / STEPS)


@functools.lru_cache(maxsize=None)
def _rows(k: int) -> np.ndarray | None:
    """The shipped rows of domain size k (float16 M_(j)/b_g, rounded up), read once; None when not shipped (or
    drawn under other settings, which certify nothing here, or no file): the quote falls back to Monte Carlo."""
    if not TABLE_PATH.exists():
        return None
    with np.load(TABLE_PATH) as f:
        if (int(f["draws"]) != DRAWS or int(f["steps"]) != STEPS or tuple(f["log2_b"]) != LOG2_B
                or not np.array_equal(f["betas"], BETAS) or float(f["confidence"]) != CONFIDENCE
                or k not in set(f["sizes"].tolist())):
            return None
        return f[f"k{k}"]


def _round_up16(x: np.ndarray) -> np.ndarray:
    """float16 values ≥ x (the table is stored rounded up: an entry may only overstate its quantile)."""
    y = x.astype(np.float16)
    low = y.astype(np.float64) < x
    y[low] = np.nextafter(y[low], np.float16(np.inf))
    return y


def main() -> None:  # pragma: no cover (build time)
    import sys
    import time

    sizes = [int(a) for a in sys.argv[1:]] or list(SIZES)
    stored = {}
    if TABLE_PATH.exists():
        with np.load(TABLE_PATH) as f:
            stored = {f"k{k}": f[f"k{k}"] for k in f["sizes"]}
    for k in sizes:  # written after each size, so a stopped build keeps what it finished
        t = time.process_time()
        stored[f"k{k}"] = _round_up16(build_rows(k))
        print(f"k = {k}: {time.process_time() - t:.1f} s CPU", flush=True)
        done = sorted(int(name[1:]) for name in stored)
        partial = TABLE_PATH.with_suffix(".partial.npz")  # replaced in one step: a stopped build leaves a whole file
        np.savez_compressed(partial, sizes=np.array(done), draws=DRAWS, steps=STEPS, log2_b=np.array(LOG2_B),
                            betas=np.array(BETAS), confidence=CONFIDENCE, **stored)
        os.replace(partial, TABLE_PATH)


if __name__ == "__main__":  # pragma: no cover
    main()
