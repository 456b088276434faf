"""Lab 4 — spanning trees and stretch: H^θ, and the price of a policy that is not a tree.

The lab's setting is public and fixed here: ``K`` = 16 ordered cells, the threshold policy G^θ with θ =
``THETA``, budget ε = ``EPSILON``. Every check computes the right answer with the library (spanning trees,
exact stretch, the transform x ↦ x_T and the policy's exact sensitivity) and explains a recognised mistake
without giving the value away.
"""

from __future__ import annotations

import math

import numpy as np

from ..domain import Domain
from ..mechanisms import HThetaRanges
from ..policy import Policy, custom, line, spanning_tree, stretch, threshold, transform
from ..workload import matrix
from ._check import Mistake, judge, unanswered

__all__ = ["K", "THETA", "EPSILON", "TREES", "policy", "trees", "comb_tree", "edge_counts_matrix", "q1", "q2", "q2b",
           "q3", "q4a", "q4b", "q5", "unanswered"]

#: cells of the lab's domain
K = 16
#: θ of the lab's threshold policy G^θ
THETA = 4
#: the budget of q3
EPSILON = 0.5
#: the spanning trees the lab compares, by name
TREES = ("path", "htheta", "bfs")


def policy(theta: int = THETA, k: int = K) -> Policy:
    """The lab's policy G^θ on ``k`` cells.

    Examples
    --------
    >>> policy().is_tree()
    False
    """
    return threshold(Domain.grid(k), theta)


def trees(theta: int = THETA, k: int = K) -> dict[str, Policy]:
    """The lab's candidate spanning trees of G^θ: the path 0–1–…–(k−1), H^θ, a breadth-first tree from cell 0.

    Examples
    --------
    >>> sorted(trees())
    ['bfs', 'htheta', 'path']
    """
    g = policy(theta, k)
    return {"path": line(g.domain), "htheta": spanning_tree(g, "htheta"), "bfs": spanning_tree(g, "bfs")}


def comb_tree(step: int = 2, k: int = K) -> Policy:
    """The comb: every ``step``-th cell is red, the red cells form a path, every other cell hangs off the red cell
    to its left (a spanning tree of G^θ for θ ≥ ``step``).

    Examples
    --------
    >>> comb_tree().is_tree(), len(comb_tree().edges())
    (True, 15)
    """
    edges = [(r, r + step) for r in range(0, k - step, step)] + [(c, c - c % step) for c in range(k) if c % step]
    return custom(Domain.grid(k), edges)


def edge_counts_matrix(tree: Policy) -> np.ndarray:
    """The matrix of x ↦ x_T (one row per tree edge): the data the tree's mechanisms measure (Haney §4.4).

    Examples
    --------
    >>> edge_counts_matrix(trees()["htheta"]).shape
    (15, 16)
    """
    t = transform(tree)
    return np.column_stack([t.data(np.eye(tree.domain.size)[i]) for i in range(tree.domain.size)])


def q1(answer) -> None:
    """How many edges a spanning tree of the lab's 16 cells has.

    Examples
    --------
    >>> q1(len(trees()["htheta"].edges()))
    """
    expected = len(trees()["htheta"].edges())
    judge(answer, expected, question="q1 (edges of a spanning tree)", mistakes=[
        Mistake(len(policy().edges()), "that counts the edges of G^θ itself; a tree keeps only enough edges to "
                                       "connect every cell, with no cycle."),
        Mistake(K, "check which end counts: draw a tree on a few cells and compare its number of edges with its "
                   "number of cells."),
    ], otherwise="a tree connects all the cells without a cycle: count how many edges that takes.")


def q2(answer) -> None:
    """The stretch of H^θ for G^θ: the longest tree path joining the two ends of an edge of G^θ.

    Examples
    --------
    >>> q2(stretch(policy(), trees()["htheta"]))
    """
    expected = stretch(policy(), trees()["htheta"])
    judge(answer, expected, question="q2 (stretch of H^θ)", mistakes=[
        Mistake(1, "every edge of the tree has stretch 1, but most edges of G^θ are not in the tree: look for one "
                   "whose two ends hang off different red cells."),
        Mistake(THETA, "that is the stretch of the path: along it an edge of G^θ spanning θ cells takes θ steps. "
                       "In H^θ, cells climb to a red cell and travel between red cells."),
        Mistake(2, "from a non-red cell, first climb to its red cell, walk along the red path, then come down: "
                   "count the steps of the worst edge of G^θ."),
    ], otherwise="for every edge (u, v) of G^θ find the path from u to v in the tree; the stretch is the longest.")


def q2b(answer) -> None:
    """The stretch of the comb (``comb_tree()``, red cells twice as dense as in H^θ) for the lab's G^θ.

    Examples
    --------
    >>> q2b(stretch(policy(), comb_tree()))
    """
    expected = stretch(policy(), comb_tree())
    judge(answer, expected, question="q2b (stretch of the comb)", mistakes=[
        Mistake(stretch(policy(), trees()["htheta"]),
                "that is H^θ's stretch. The comb has more red cells, so a long edge of G^θ walks past more of them: "
                "draw the comb and follow the edges of G^θ that start on a non-red cell."),
        Mistake(1, "edges of the comb have stretch 1, but most edges of G^θ are not in the comb."),
        Mistake(2, "from a non-red cell you first climb to its red cell, walk along the red path, then come down: "
                   "count all three parts for the worst edge of G^θ."),
    ], otherwise="for every edge (u, v) of G^θ follow the path from u to v in the comb; the stretch is the longest.")


def q3(answer) -> None:
    """The Laplace noise scale for releasing x_T of H^θ (ε, G^θ)-privately at ε = ``EPSILON``.

    Examples
    --------
    >>> q3(policy().sensitivity(matrix(edge_counts_matrix(trees()["htheta"]))) / EPSILON)
    """
    tree = trees()["htheta"]
    X = matrix(edge_counts_matrix(tree))
    delta_g = policy().sensitivity(X)
    expected = delta_g / EPSILON
    judge(answer, expected, question="q3 (noise scale for x_T under G^θ)", mistakes=[
        Mistake(tree.sensitivity(X) / EPSILON,
                "that protects the tree's edges only. Under G^θ a record moves along an edge (u, v) of G^θ, and "
                "x_T changes on every tree edge of the path from u to v."),
        Mistake(delta_g * EPSILON, "the Laplace scale is Δ divided by ε."),
    ], otherwise="a move along an edge of G^θ changes x_T by one on each edge of the tree path joining its ends: "
                 "Δ is the longest such path; the scale is Δ/ε.")


def q4a(answer) -> None:
    """Which of ``TREES`` has the smallest stretch for the lab's G^θ.

    Examples
    --------
    >>> q4a("htheta")
    """
    g = policy()
    stretches = {name: stretch(g, t) for name, t in trees().items()}
    expected = min(stretches, key=stretches.get)
    judge(answer, expected, question="q4a (the tree of smallest stretch)", mistakes=[
        Mistake(lambda a: isinstance(a, str) and a.strip().lower() not in TREES,
                f"answer with one of the names {', '.join(repr(t) for t in TREES)}."),
        Mistake("path", "along the path an edge of G^θ spanning θ cells takes θ steps."),
        Mistake("bfs", "a breadth-first tree keeps the cells close to its root, not to each other: measure its "
                       "stretch with the library."),
    ], otherwise="compute the stretch of each tree with bf.policy.stretch.")


def q4b(answer) -> None:
    """The smallest θ for which H^θ has a strictly smaller stretch than the path, on the lab's 16 cells.

    Examples
    --------
    >>> q4b(4)
    """
    expected = next(theta for theta in range(1, K)
                    if stretch(policy(theta), trees(theta)["htheta"]) < stretch(policy(theta), trees(theta)["path"]))
    judge(answer, expected, question="q4b (when H^θ beats the path)", mistakes=[
        Mistake(expected - 1, "at that θ the two stretches are equal; the question asks for strictly smaller."),
        Mistake(1, "at θ = 1 G^θ is the path itself, and H^θ is the same tree."),
    ], otherwise="tabulate the stretch of both trees for θ = 1, 2, 3, … and find the first θ where H^θ wins.")


def q5(answer) -> None:
    """The exact Δ under the lab's G^θ of the H^θ + Privelet strategy for ranges (``HThetaRanges``).

    The student works it out from the error table (squared error ∝ Δ², the same strategy and ε) and the paper's
    Δ; any answer within 2 % passes (3 significant digits of the table's values suffice).

    Examples
    --------
    >>> q5(HThetaRanges().sensitivity(policy()))
    """
    paper = HThetaRanges(budget="stretch").sensitivity(policy())
    expected = HThetaRanges().sensitivity(policy())
    ratio = (expected / paper) ** 2  # the exact-Δ error over the paper's, as the table shows it
    judge(answer, expected, question="q5 (exact Δ of H^θ + Privelet)", rtol=0.02, mistakes=[
        Mistake(paper, "that is the paper's accounting: stretch × Δ under the tree. The exact Δ under G^θ can be "
                       "smaller, because the changes along one tree path partly cancel in the wavelet: read it off "
                       "the errors."),
        Mistake(paper * ratio, "the squared error grows with Δ², not Δ: take a square root of the errors' ratio."),
        Mistake(paper / ratio, "the ratio is upside down, and the squared error grows with Δ²."),
        Mistake(paper / math.sqrt(ratio), "the ratio is upside down: the exact Δ is the smaller one."),
    ], otherwise="the two columns differ only in Δ, and the squared error is proportional to (Δ/ε)²: scale the "
                 "paper's Δ by the right power of the errors' ratio.")
