"""Answer key of lab 4, "Spanning trees and stretch": H^θ and the price of a policy that is not a tree."""

from __future__ import annotations

import math

from blowfish_nb.labs._key import Part, Question, Wrong
from blowfish_nb.labs.lab04 import EPSILON, K, THETA, TREES, comb_tree, edge_counts_matrix, policy, trees
from blowfish_nb.mechanisms import HThetaRanges
from blowfish_nb.policy import stretch
from blowfish_nb.workload import matrix


def questions() -> dict[str, Question]:
    g, t = policy(), trees()
    q = {}
    q["q1"] = Question("q1 (edges of a spanning tree)", [Part("n_tree_edges", len(t["htheta"].edges()), mistakes=[
        Wrong(len(g.edges()), "that counts the edges of G^θ itself; a tree keeps only enough edges to connect every "
                              "cell, with no cycle."),
        Wrong(K, "check which end counts: draw a tree on a few cells and compare its number of edges with its number "
                 "of cells."),
    ], otherwise="a tree connects all the cells without a cycle: count how many edges that takes.")])
    s_h = stretch(g, t["htheta"])
    q["q2"] = Question("q2 (stretch of H^θ)", [Part("stretch_htheta", s_h, mistakes=[
        Wrong(1, "every edge of the tree has stretch 1, but most edges of G^θ are not in the tree: look for one whose "
                 "two ends hang off different red cells."),
        Wrong(THETA, "that is the stretch of the path: along it an edge of G^θ spanning θ cells takes θ steps. In H^θ, "
                     "cells climb to a red cell and travel between red cells."),
        Wrong(2, "from a non-red cell, first climb to its red cell, walk along the red path, then come down: count the "
                 "steps of the worst edge of G^θ."),
    ], otherwise="for every edge (u, v) of G^θ find the path from u to v in the tree; the stretch is the longest.")])
    q["q2b"] = Question("q2b (stretch of the comb)", [Part("stretch_comb", stretch(g, comb_tree()), mistakes=[
        Wrong(s_h, "that is H^θ's stretch. The comb has more red cells, so a long edge of G^θ walks past more of them: "
                   "draw the comb and follow the edges of G^θ that start on a non-red cell."),
        Wrong(1, "that is the stretch of an edge the comb keeps; most edges of G^θ are not in the comb: "
                 "follow their paths in the comb."),
        Wrong(2, "from a non-red cell you first climb to its red cell, walk along the red path, then come down: count "
                 "all three parts for the worst edge of G^θ."),
    ], otherwise="for every edge (u, v) of G^θ follow the path from u to v in the comb; the stretch is the longest.")])
    X = matrix(edge_counts_matrix(t["htheta"]))
    delta_g = g.sensitivity(X)
    q["q3"] = Question("q3 (noise scale for x_T under G^θ)", [Part("scale_xT", delta_g / EPSILON, mistakes=[
        Wrong(t["htheta"].sensitivity(X) / EPSILON, "that protects the tree's edges only. Under G^θ a record moves "
                                                    "along an edge (u, v) of G^θ, and x_T changes on every tree edge "
                                                    "of the path from u to v."),
        Wrong(delta_g * EPSILON, "the Laplace scale is Δ divided by ε."),
    ], otherwise="a move along an edge of G^θ changes x_T by one on each edge of the tree path joining its ends: Δ is "
                 "the longest such path; the scale is Δ/ε.")])
    stretches = {name: stretch(g, tr) for name, tr in t.items()}
    best = min(stretches, key=stretches.get)
    hints4 = {"path": "along the path an edge of G^θ spanning θ cells takes θ steps.",
              "bfs": "a breadth-first tree keeps the cells close to its root, not to each other: measure its stretch "
                     "with the library.",
              "htheta": "measure each tree's stretch with bf.policy.stretch and compare."}
    q["q4a"] = Question("q4a (the tree of smallest stretch)", [Part(
        "best_tree", best, kind="choice", choices=TREES,
        mistakes=[Wrong(n, h) for n, h in hints4.items() if n != best],
        otherwise="compute the stretch of each tree with bf.policy.stretch.")])
    e4b = next(th for th in range(1, K) if stretch(policy(th), trees(th)["htheta"]) < stretch(policy(th),
                                                                                             trees(th)["path"]))
    q["q4b"] = Question("q4b (when H^θ beats the path)", [Part("theta_htheta_wins", e4b, mistakes=[
        Wrong(e4b - 1, "at that θ the two stretches are equal; the question asks for strictly smaller."),
        Wrong(1, "at that θ G^θ is the path itself, and H^θ is the same tree: their stretches tie."),
    ], otherwise="tabulate the stretch of both trees for θ = 1, 2, 3, … and find the first θ where H^θ wins.")])
    paper = HThetaRanges(budget="stretch").sensitivity(g)
    exact = HThetaRanges().sensitivity(g)
    ratio = (exact / paper) ** 2
    q["q5"] = Question("q5 (exact Δ of H^θ + Privelet)", [Part("delta_exact", exact, rtol=0.02, mistakes=[
        Wrong(paper, "that is the paper's accounting: stretch × Δ under the tree. The exact Δ under G^θ can be smaller, "
                     "because the changes along one tree path partly cancel in the wavelet: read it off the errors."),
        Wrong(paper * ratio, "the squared error grows with Δ², not Δ: take a square root of the errors' ratio."),
        Wrong(paper / ratio, "the ratio is upside down, and the squared error grows with Δ²."),
        Wrong(paper / math.sqrt(ratio), "that is not the exact Δ: revisit which column of the table belongs to which "
                                        "Δ, and "
                                        "how the table's error depends on Δ."),
    ], otherwise="the two columns differ only in Δ, and the squared error is proportional to (Δ/ε)²: scale the "
                 "paper's Δ by the right power of the errors' ratio.")])
    return q
