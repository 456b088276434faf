"""Lab 5 — break it: a mis-calibrated mechanism caught by the violation hunter, and published results that failed.

Part A: a mechanism with a calibration bug (Laplace noise from the wrong Δ) is caught by
:func:`blowfish_nb.analysis.hunt`; the student fixes it and tells a real leak from harmless post-processing.
Part B: three published claims that the project found not to hold, each checked with the library's exact
sensitivity: He et al. 2014 Lemma 6.1 (k-means sums), Haney et al. 2015 §5.2.2 (edge counts on a grid),
He et al. 2014 §8 (known counts, Thm 8.6).

Every check computes the right answer with the library and explains a recognised mistake without the value.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..constraints import rectangles
from ..domain import Domain
from ..exceptions import InvalidParameterError
from ..kmeans import sulq_sensitivity
from ..mechanisms import Laplace
from ..policy import Policy, constrained, grid, line, threshold, transform
from ..workload import matrix, prefix
from ._check import LabCheckFailed, Mistake, judge, unanswered

__all__ = ["K", "EPSILON", "THETA", "VARIANTS", "line_policy", "theta_policy", "variant", "kmeans_setting",
           "kmeans_edge_change", "grid_policy", "edge_counts_matrix", "constraint_setting", "forced_pair",
           "q1", "q2", "q3",
           "q4a", "q4b", "q5", "q6", "unanswered"]

#: cells of the small domains the hunter searches
K = 6
#: the claimed budget of every mechanism in part A
EPSILON = 1.0
#: θ of the cumulative-histogram variants of q3
THETA = 2
#: the names of q3's variants (one of them leaks)
VARIANTS = ("clamp", "sort", "theta")


def line_policy() -> Policy:
    """The line policy on ``K`` cells (part A's policy for the histogram)."""
    return line(Domain.grid(K))


def theta_policy() -> Policy:
    """G^θ on ``K`` cells with θ = ``THETA`` (q3's policy for the cumulative histogram)."""
    return threshold(Domain.grid(K), THETA)


def variant(name: str) -> Callable[[np.ndarray, int, np.random.Generator], np.ndarray]:
    """One of q3's three releases of the cumulative histogram under G^θ, as a hunter's ``draw(x, size, rng)``.

    ``"clamp"`` and ``"sort"`` add Laplace noise of scale 2/ε… and then post-process; ``"theta"`` calibrates
    its noise to the line policy. Which scale is right is the student's question; this function only runs them.

    Examples
    --------
    >>> variant("clamp")(np.ones(K), 3, np.random.default_rng(0)).shape
    (3, 6)
    """
    if name not in VARIANTS:
        raise InvalidParameterError(f"name must be one of {VARIANTS}, got {name!r}")
    right = theta_policy().sensitivity(prefix(K)) / EPSILON
    wrong = line_policy().sensitivity(prefix(K)) / EPSILON

    def draw(x, size, rng):
        c = np.cumsum(np.asarray(x, dtype=float))[None, :]
        if name == "theta":
            return c + rng.laplace(0.0, wrong, size=(size, c.shape[1]))
        y = c + rng.laplace(0.0, right, size=(size, c.shape[1]))
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


def q1(answer) -> None:
    """The privacy loss ε' the buggy mechanism (histogram + Lap(1/ε) under the line policy) really has.

    Examples
    --------
    >>> q1(Laplace().sensitivity(line_policy()) * EPSILON)
    """
    expected = Laplace().sensitivity(line_policy()) / (1.0 / EPSILON)  # Δ / scale
    judge(answer, expected, question="q1 (the buggy mechanism's real privacy loss)", mistakes=[
        Mistake(EPSILON, "that is what the mechanism claims; the hunter shows it loses more."),
        Mistake(lambda a: isinstance(a, float) and EPSILON < a < expected,
                "the hunter reports a lower bound at 95% confidence, not the exact loss. The exact loss of "
                "Laplace noise of scale b on a query of sensitivity Δ is Δ/b."),
    ], otherwise="the loss of Laplace noise of scale b is Δ/b, with Δ the histogram's sensitivity under the line "
                 "policy (how many counts does one move change?).")


def q2(draw) -> None:
    """The student's fixed mechanism ``draw(x, size, rng)``: unbiased, and noise of the right variance.

    Draws 20,000 releases on a fixed histogram (seeded); the mean squared deviation must lie within 5 standard
    errors of 2 (Δ/ε)², the variance of Laplace noise calibrated to the histogram's Δ under the line policy
    (the library's whole-number Laplace noise is accepted too).

    Examples
    --------
    >>> q2(lambda x, size, rng: x + rng.laplace(0, 2 / EPSILON, size=(size, len(x))))
    """
    question = "q2 (the fixed mechanism)"
    if unanswered(draw):
        judge(draw, 0, question=question, otherwise="")
    if not callable(draw):
        raise LabCheckFailed(f"{question}: not yet. Hint: store a function draw(x, size, rng), like buggy_draw.")
    x = np.array([3.0, 0.0, 7.0, 1.0, 1.0, 12.0])
    runs = 20_000
    try:
        out = draw(x, runs, np.random.default_rng(5))
    except Exception as e:  # the student's code: say what broke, whatever it was
        raise LabCheckFailed(f"{question}: not yet. Hint: calling draw(x, size, rng) failed with "
                             f"{type(e).__name__}: {e}") from None
    if unanswered(out):  # the student version's body is `...`: the function returns None
        raise LabCheckFailed(f"{question}: replace the `...` in the function with your code (it must return the "
                             "releases), then run this check again.")
    try:
        out = np.asarray(out, dtype=float)
    except (TypeError, ValueError):
        raise LabCheckFailed(f"{question}: not yet. Hint: draw(x, size, rng) must return an array of numbers, "
                             "like buggy_draw.") from None
    if out.shape != (runs, K):
        raise LabCheckFailed(f"{question}: not yet. Hint: draw(x, size, rng) must return one row per release "
                             f"(size rows) and one column per cell, like buggy_draw; got shape {out.shape}.")
    dev = out - x[None, :]
    if abs(dev.mean()) > 5 * dev.std() / math.sqrt(dev.size) + 1e-12:
        raise LabCheckFailed(f"{question}: not yet. Hint: the noise must have mean zero: add noise to the true "
                             "counts, nothing else.")
    sq = (dev**2).ravel()
    mean, se = float(sq.mean()), float(sq.std(ddof=1) / math.sqrt(sq.size))
    target = 2 * (Laplace().sensitivity(line_policy()) / EPSILON) ** 2
    if abs(mean - target) <= 5 * se + 0.03 * target:  # 3%: the whole-number Laplace law's variance is 2b² − 1/6
        return
    if mean < target:
        hint = "still too little noise: the scale must come from the histogram's Δ under the line policy."
    else:
        hint = "more noise than needed: the histogram's Δ under the line policy is smaller than that."
    raise LabCheckFailed(f"{question}: not yet. Hint: {hint}")


def q3(answer) -> None:
    """Which of ``VARIANTS`` is not (ε, G^θ)-Blowfish private.

    Examples
    --------
    >>> q3("theta")
    """
    leaking = [n for n in VARIANTS if n == "theta"
               and line_policy().sensitivity(prefix(K)) < theta_policy().sensitivity(prefix(K))]
    expected = leaking[0]
    judge(answer, expected, question="q3 (which variant leaks)", mistakes=[
        Mistake(lambda a: isinstance(a, str) and a.strip().lower() not in VARIANTS,
                f"answer with one of the names {', '.join(repr(v) for v in VARIANTS)}."),
        Mistake("clamp", "clamping a private output at 0 is post-processing: it cannot leak more than its input."),
        Mistake("sort", "sorting a private output is post-processing: it uses nothing but the noisy answers."),
    ], otherwise="run the hunter on each variant and compare its lower bound with ε.")


def q4a(answer) -> None:
    """An edge (u, v) of the k-means setting's policy on which (sizes, sums) change the most.

    Examples
    --------
    >>> q4a((4, 5))
    """
    pol, points, assign = kmeans_setting()
    exact = sulq_sensitivity(pol, points, assign, 2)
    question = "q4a (the edge where Lemma 6.1 fails)"
    if unanswered(answer):
        judge(answer, 0, question=question, otherwise="")
    try:
        u, v = (int(a) for a in answer)
    except (TypeError, ValueError):
        raise LabCheckFailed(f"{question}: not yet. Hint: answer with a pair of cells, like (2, 3).") from None
    edges = {tuple(sorted(e)) for e in pol.edges().tolist()}
    if tuple(sorted((u, v))) not in edges:
        raise LabCheckFailed(f"{question}: not yet. Hint: that pair is not an edge of the policy G^1: a record may "
                             "only move to a neighbouring cell.")
    judge(kmeans_edge_change(u, v), exact, question=question, mistakes=[
        Mistake(lambda c: assign[u] == assign[v],
                "inside one cluster a move changes one cluster's sum by at most θ. Look where a record changes "
                "cluster."),
    ], otherwise="compute kmeans_edge_change for every edge and keep the largest.")


def q4b(answer) -> None:
    """The exact Δ of (sizes, sums) in the k-means setting (Lemma 6.1 says 2θ + 2).

    Examples
    --------
    >>> pol, points, assign = kmeans_setting()
    >>> q4b(sulq_sensitivity(pol, points, assign, 2))
    """
    pol, points, assign = kmeans_setting()
    expected = sulq_sensitivity(pol, points, assign, 2)
    judge(answer, expected, question="q4b (exact Δ of the k-means step)", mistakes=[
        Mistake(2 * pol.theta + 2, "that is Lemma 6.1's value. A record that crosses the boundary leaves one "
                                   "cluster's sum and joins the other's."),
        Mistake(expected - 2, "add the change of the cluster sizes too (one down, one up)."),
    ], otherwise="take the largest kmeans_edge_change over the policy's edges, or ask bf.kmeans.sulq_sensitivity.")


def _edge_changes(g: Policy) -> np.ndarray:
    """The change of x_G for a move along each edge of ``g`` (one row per edge)."""
    X = edge_counts_matrix(g)
    return np.array([X[:, v] - X[:, u] for u, v in g.edges().tolist()])


def _largest_entry_change(g: Policy) -> float:
    return float(np.abs(_edge_changes(g)).max())


def _l2_change(g: Policy) -> float:
    return float(np.linalg.norm(_edge_changes(g), axis=1).max())


def _isclose(a, b: float) -> bool:
    try:
        return math.isclose(float(a), b, rel_tol=1e-3)
    except (TypeError, ValueError):
        return False


def q5(answer) -> None:
    """The exact Δ, under the 2×2 grid policy, of releasing the edge counts x_G (§5.2.2 charges 1).

    Examples
    --------
    >>> q5(grid_policy().sensitivity(matrix(edge_counts_matrix(grid_policy()))))
    """
    g = grid_policy()
    expected = g.sensitivity(matrix(edge_counts_matrix(g)))
    judge(answer, expected, question="q5 (Δ of the grid's edge counts)", mistakes=[
        Mistake(1, "that is §5.2.2's accounting, which assumes one move changes one edge count. Compute how much "
                   "x_G really changes (all its entries) when one record moves along an edge."),
        Mistake(lambda a: _isclose(a, _largest_entry_change(g)),
                "that is the largest change of one entry; Δ adds the changes of all the entries (ℓ₁ norm)."),
        Mistake(lambda a: _isclose(a, _l2_change(g)), "Δ of the Laplace mechanism is an ℓ₁ norm: add the absolute "
                                                      "changes, do not square them."),
    ], otherwise="a move of one record from u to v changes x_G by the difference of two columns of the matrix; "
                 "Δ is the largest ℓ₁ norm of that difference over the edges (u, v) of the policy.")


def q6(answer) -> None:
    """The histogram's sensitivity in the §8 puzzle under the definition of neighbours (Def. 4.1).

    Examples
    --------
    >>> pol, known = constraint_setting()
    >>> q6(constrained(pol, known).histogram_sensitivity())
    """
    pol, known = constraint_setting()
    p = constrained(pol, known)
    expected = p.histogram_sensitivity()
    judge(answer, expected, question="q6 (Δ of the histogram with known counts)", mistakes=[
        Mistake(p.histogram_sensitivity(neighbours="edges"),
                "that is Thm 8.6's value, in which every changed record moves along an edge. Def. 4.1 also lets "
                "records the policy does not protect change, to restore the known counts."),
        Mistake(Laplace().sensitivity(pol), "that ignores the known counts: one protected move can force other "
                                            "records to move."),
        Mistake(lambda a: _isclose(a, _pair_distance()),
                "that is the pair above, one neighbour among many: a forced move can leave another known range, "
                "and force yet another record to move."),
    ], otherwise="build two neighbouring databases with the same known counts, a protected move and as many forced "
                 "moves as the known ranges allow, and compare their histograms.")


def _pair_distance() -> float:
    """‖h1 − h2‖₁ of the notebook's pair (``forced_pair``)."""
    k = constraint_setting()[0].domain.size
    d1, d2 = forced_pair()
    return float(np.abs(np.bincount(d1, minlength=k) - np.bincount(d2, minlength=k)).sum())
