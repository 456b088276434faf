"""Lab 5 — break it: a mis-calibrated mechanism caught by the violation hunter, and published results that failed.

Part A: a mechanism with a calibration bug (Laplace noise from the wrong Δ) is caught by
:func:`blowfish_nb.analysis.hunt`; the student fixes it and tells a real leak from harmless post-processing.
Part B: three published claims that the project found not to hold, each checked with the library's exact
sensitivity: He et al. 2014 Lemma 6.1 (k-means sums), Haney et al. 2015 §5.2.2 (edge counts on a grid),
He et al. 2014 §8 (known counts, Thm 8.6).

Each ``qN(answer)`` is a hint check: it knows hints, not answers (question 2's tests the law of the student's noise
function at the scale its own draws show, and never shows the right one).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..constraints import rectangles
from ..domain import Domain
from ..exceptions import InvalidParameterError
from ..policy import Policy, grid, line, threshold, transform
from ..workload import prefix
from ._check import LabCheckFailed, make_check, public_check, unanswered
from ._grade import laplace_noise_verdict

__all__ = ["K", "EPSILON", "THETA", "VARIANTS", "NOISE_READS", "line_policy", "theta_policy", "variant", "kmeans_setting",
           "kmeans_edge_change", "grid_policy", "edge_counts_matrix", "constraint_setting", "forced_pair",
           "q1", "q2", "q3",
           "q4a", "q4b", "q5", "q6", "unanswered", "LabCheckFailed"]

#: cells of the small domains the hunter searches
K = 6
#: the claimed budget of every mechanism in part A
EPSILON = 1.0
#: θ of the cumulative-histogram variants of q3
THETA = 2
#: the names of q3's variants (one of them leaks)
VARIANTS = ("clamp", "sort", "theta")
#: the handout's names a noise answer may read (question 2's ``fixed_noise(rng)``), besides ``rng``, ``np``/``math``
#: and this module's UPPER constants (the cell count ``check.K``): what the lab's solution reads. Not ``buggy_noise``
#: (a function reads the kernel's names when it runs: another cell could rebind them) and no data: the noise must not
#: depend on the data (:func:`blowfish_nb.labs.scan.pure_answer`)
NOISE_READS = {"fixed_noise": ("eps",)}


def line_policy() -> Policy:
    """The line policy on ``K`` cells (part A's policy for the histogram)."""
    return line(Domain.grid(K))


def theta_policy() -> Policy:
    """G^θ on ``K`` cells with θ = ``THETA`` (q3's policy for the cumulative histogram)."""
    return threshold(Domain.grid(K), THETA)


def variant(name: str) -> Callable[[np.ndarray, int, np.random.Generator], np.ndarray]:
    """One of q3's three releases of the cumulative histogram under G^θ, as a hunter's ``draw(x, size, rng)``.

    ``"clamp"`` and ``"sort"`` post-process their noisy prefix sums, ``"theta"`` releases them as drawn. Which
    of them is private is the student's question (the hunter answers it); this function only runs them.

    Examples
    --------
    >>> variant("clamp")(np.ones(K), 3, np.random.default_rng(0)).shape
    (3, 6)
    """
    if name not in VARIANTS:
        raise InvalidParameterError(f"name must be one of {VARIANTS}, got {name!r}")
    scale_theta = theta_policy().sensitivity(prefix(K)) / EPSILON
    scale_line = line_policy().sensitivity(prefix(K)) / EPSILON

    def draw(x, size, rng):
        c = np.cumsum(np.asarray(x, dtype=float))[None, :]
        if name == "theta":
            return c + rng.laplace(0.0, scale_line, size=(size, c.shape[1]))
        y = c + rng.laplace(0.0, scale_theta, size=(size, c.shape[1]))
        return np.maximum(y, 0.0) if name == "clamp" else np.sort(y, axis=1)

    draw.__name__ = name
    return draw


def kmeans_setting() -> tuple[Policy, np.ndarray, np.ndarray]:
    """Part B's k-means step: 10 cells at 0..9 under G^1, two clusters split at 4.5 → (policy, points, assignment)."""
    points = np.arange(10.0)[:, None]
    return threshold(Domain.grid(10), 1), points, (points[:, 0] > 4.5).astype(int)


def kmeans_edge_change(u: int, v: int) -> float:
    """How much (cluster sizes, cluster sums) change in L1 when one record moves from cell u to cell v.

    Examples
    --------
    >>> kmeans_edge_change(0, 1)
    1.0
    """
    _, points, assign = kmeans_setting()
    S = np.zeros((4, len(points)))
    S[assign, np.arange(len(points))] = 1.0  # sizes
    S[2 + assign, np.arange(len(points))] = points[:, 0]  # sums
    return float(np.abs(S[:, u] - S[:, v]).sum())


def grid_policy() -> Policy:
    """The 2×2 grid policy (a 4-cycle) of the §5.2.2 puzzle."""
    return grid(Domain.grid((2, 2)), 1)


def edge_counts_matrix(policy: Policy) -> np.ndarray:
    """The matrix of x ↦ x_G (one row per edge of G), the library's transform (Haney §4.4).

    Examples
    --------
    >>> edge_counts_matrix(grid_policy()).shape
    (4, 4)
    """
    t = transform(policy)
    k = policy.domain.size
    return np.column_stack([t.data(np.eye(k)[i]) for i in range(k)])


def constraint_setting():
    """The §8 puzzle: line policy on 8 cells, the counts of cells {0, 1}, {3, 4} and {6, 7} known: (policy,
    constraints).

    Examples
    --------
    >>> pol, known = constraint_setting()
    >>> pol.domain.size, known.names
    (8, ['box 0 [(0, 1)]', 'box 1 [(3, 4)]', 'box 2 [(6, 7)]'])
    """
    d = Domain.grid(8)
    return line(d), rectangles(d, [[(0, 1)], [(3, 4)], [(6, 7)]])


def forced_pair() -> tuple[list[int], list[int]]:
    """The notebook's neighbouring databases of the §8 puzzle (one cell per record): record A moves 1 → 2 (an edge
    of the line: protected), B moves 3 → 0 to restore the count of {0, 1}, C moves 5 → 4 to restore {3, 4}.

    Not the worst pair: the student extends the chain of forced moves.

    Examples
    --------
    >>> forced_pair()
    ([1, 3, 5], [2, 0, 4])
    """
    return [1, 3, 5], [2, 0, 4]


#: the seed of question 2's generators: ``None`` (fresh seeds drawn at each check); an int only in the project's tests
_Q2_SEED: int | None = None

_Q2_HINTS = {
    "none": "replace the `...` in the function with your code (it must return the noise), then run this check again.",
    "not a function": "store a function fixed_noise(rng), like buggy_noise.",
    "not numbers": "fixed_noise(rng) must return an array of numbers, like buggy_noise.",
    "shape": f"fixed_noise(rng) must return the noise of one release: one number per cell ({K} numbers), like "
             "buggy_noise.",
    "not finite": "the noise must be finite numbers.",
    "ignores rng": "the noise must come from the generator `rng` you are given, and from nothing else (no generator, "
                   "table or counter of your own): the same generator must give the same noise, and deterministic "
                   "noise is no noise.",
    "repeats": "your noise repeats values that fresh noise would not: draw it fresh at every call, from `rng` (no "
               "stored values).",
    "exact release": "some of your noise values are exactly 0: every release needs its noise (a point mass on the "
                     "true count leaks it).",
    "correlated": "draw an independent noise value for every cell (one value shared by the cells releases their "
                  "differences exactly).",
    "mean": "the noise must have mean zero: return the noise alone (the lab adds it to the counts).",
}


def q2(noise) -> None:
    """Question 2's check: the *shape* of your fixed mechanism's noise ``fixed_noise(rng)``, never its scale.

    Calls ``noise`` 3,000 times, each with a generator of its own seeded afresh at each check, and tests what needs
    no answer (see :func:`blowfish_nb.labs._grade.laplace_noise_verdict`): the noise comes from the generator, the
    cells' noises are independent with mean zero, never exactly 0, and each cell's noise follows a Laplace law
    (continuous, or the library's whole-number one) *at the scale your own draws show*. Uniform or Gaussian noise
    fails that (it is not ε-private: run the hunter on it). Whether the scale is the right one is question 1's
    business and the hidden tests': a check that knew it would give it away (try scales until one passes).
    """
    question = "q2 (the fixed mechanism)"
    if unanswered(noise):
        raise LabCheckFailed(f"{question}: replace the `...` with your answer, then run this check again.")
    if not callable(noise):
        raise LabCheckFailed(f"{question}: not yet. Hint: {_Q2_HINTS['not a function']}")
    try:
        scale = _own_scale(noise)
        why = None if scale is None else laplace_noise_verdict(noise, K, scale, runs=3_000, seed=_Q2_SEED)
        if scale is None:  # the draws are not numbers of the right shape, or show no noise: let the verdict say which
            why = laplace_noise_verdict(noise, K, 1.0, runs=400, seed=_Q2_SEED)
    except Exception as e:  # the student's own code: say what broke, whatever it was
        raise LabCheckFailed(f"{question}: not yet. Hint: calling fixed_noise(rng) failed with "
                             f"{type(e).__name__}: {e}") from None
    if why is None or why in ("too little", "too much"):  # the scale is the hidden tests' business
        return None
    if why == "none":
        raise LabCheckFailed(f"{question}: {_Q2_HINTS['none']}")
    hint = _Q2_HINTS.get(why, "the noise's law is not Laplace: the proof of ε-privacy needs the Laplace law (noise "
                              "of another shape, even of the right variance, leaks: run the hunter on it).")
    raise LabCheckFailed(f"{question}: not yet. Hint: {hint}")


def _own_scale(noise) -> float | None:
    """The Laplace scale the student's own noise shows (by the mean absolute value of 2,000 calls; for whole-number
    noise the discrete Laplace's q solved from E|z| = 2q/(1 − q²)); ``None`` when there is no noise to measure."""
    rng = np.random.default_rng(_Q2_SEED)
    try:
        dev = np.array([np.asarray(noise(rng), dtype=float).reshape(K) for _ in range(2000)])
    except (TypeError, ValueError, AttributeError):
        return None
    if not np.all(np.isfinite(dev)):
        return None
    m = float(np.abs(dev).mean())
    if m <= 0:
        return None
    if np.all(dev == np.round(dev)):
        q = (math.sqrt(1 + m * m) - 1) / m
        return -1.0 / math.log(q) if 0 < q < 1 else None
    return m


def q4a(answer) -> None:
    """Question 4a's check: an edge (u, v) of the k-means setting's policy on which (sizes, sums) change the most."""
    question = "q4a (the edge where Lemma 6.1 fails)"
    if unanswered(answer):
        raise LabCheckFailed(f"{question}: replace the `...` with your answer, then run this check again.")
    try:
        u, v = (int(a) for a in answer)
    except (TypeError, ValueError):
        raise LabCheckFailed(f"{question}: not yet. Hint: answer with a pair of cells, like (2, 3).") from None
    pol, _, assign = kmeans_setting()
    edges = {tuple(sorted(e)) for e in pol.edges().tolist()}
    if tuple(sorted((u, v))) not in edges:
        raise LabCheckFailed(f"{question}: not yet. Hint: that pair is not an edge of the policy G^1: a record may "
                             "only move to a neighbouring cell.")
    if assign[u] == assign[v]:
        raise LabCheckFailed(f"{question}: not yet. Hint: inside one cluster a move changes one cluster's sum by at "
                             "most θ. Look where a record changes cluster.")
    public_check("lab05", "q4a", kmeans_edge_change(u, v))


q1 = make_check("lab05", "q1")
q3 = make_check("lab05", "q3")
q4b = make_check("lab05", "q4b")
q5 = make_check("lab05", "q5")
q6 = make_check("lab05", "q6")
