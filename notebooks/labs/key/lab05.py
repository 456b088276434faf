"""Answer key of lab 5, "Break it": a mis-calibrated mechanism, its fix, and published results that failed."""

from __future__ import annotations

import numpy as np

from blowfish_nb.clustering import sulq_sensitivity
from blowfish_nb.labs._key import Part, Question, Wrong
from blowfish_nb.labs.lab05 import (EPSILON, K, VARIANTS, constraint_setting, edge_counts_matrix, forced_pair,
                                    grid_policy, kmeans_edge_change, kmeans_setting, line_policy, theta_policy)
from blowfish_nb.mechanisms import Laplace
from blowfish_nb.policy import constrained
from blowfish_nb.workload import matrix, prefix


def questions() -> dict[str, Question]:
    q = {}
    e1 = Laplace().sensitivity(line_policy()) / (1.0 / EPSILON)  # Δ / scale
    q["q1"] = Question("q1 (the buggy mechanism's real privacy loss)", [Part("true_loss", e1, mistakes=[
        Wrong(EPSILON, "that is what the mechanism claims; the hunter shows it loses more."),
    ], otherwise="the loss of Laplace noise of scale b is Δ/b, with Δ the histogram's sensitivity under the line "
                 "policy (how many counts does one move change?). The hunter reports a lower bound at 95% confidence, "
                 "not the exact loss.")])
    scale = Laplace().sensitivity(line_policy()) / EPSILON
    # graded by running the student's fixed_noise(rng) with generators of the hidden test's own; the lab, not the
    # student, adds the noise to the counts, so the function never sees a histogram
    q["q2"] = Question("q2 (the fixed mechanism)", [Part(
        "fixed_noise", None, kind="code", otherwise="",
        grade=f"expect_laplace_noise({{arg}}, {K!r}, {float(scale)!r})")])
    leaking = [n for n in VARIANTS if n == "theta"
               and line_policy().sensitivity(prefix(K)) < theta_policy().sensitivity(prefix(K))]
    hints3 = {"clamp": "clamping a private output at 0 is post-processing: it cannot leak more than its input.",
              "sort": "sorting a private output is post-processing: it uses nothing but the noisy answers.",
              "theta": "compare the noise scale of this variant with Δ of the cumulative histogram under G^θ."}
    q["q3"] = Question("q3 (which variant leaks)", [Part(
        "leaky", leaking[0], kind="choice", choices=VARIANTS,
        mistakes=[Wrong(n, h) for n, h in hints3.items() if n != leaking[0]],
        otherwise="run the hunter on each variant and compare its lower bound with ε.")])
    pol, points, assign = kmeans_setting()
    exact = sulq_sensitivity(pol, points, assign, 2)
    edges = [tuple(e) for e in pol.edges().tolist()]
    worst = [e for e in edges if kmeans_edge_change(*e) == exact]
    q["q4a"] = Question("q4a (the edge where Lemma 6.1 fails)", [Part(
        "worst_edge", exact, otherwise="compute kmeans_edge_change for every edge and keep the largest.",
        grade=f"expect_pair({{arg}}, {worst!r})")])
    q["q4b"] = Question("q4b (exact Δ of the k-means step)", [Part("kmeans_delta", exact, mistakes=[
        Wrong(2 * pol.theta + 2, "that is Lemma 6.1's value. A record that crosses the boundary leaves one cluster's "
                                 "sum and joins the other's."),
        Wrong(exact - 2, "add the change of the cluster sizes too (one down, one up)."),
    ], otherwise="take the largest kmeans_edge_change over the policy's edges, or ask bf.kmeans.sulq_sensitivity.")])
    g = grid_policy()
    X = edge_counts_matrix(g)
    changes = np.array([X[:, v] - X[:, u] for u, v in g.edges().tolist()])
    q["q5"] = Question("q5 (Δ of the grid's edge counts)", [Part("grid_delta", g.sensitivity(matrix(X)), mistakes=[
        Wrong(1, "that is §5.2.2's accounting, which assumes a move changes a single edge count. Revisit how x_G "
                 "really changes (all its entries) when a record moves along an edge of the grid."),
        Wrong(float(np.abs(changes).max()), "that is the largest change of one entry; Δ adds the changes of all the "
                                            "entries (ℓ₁ norm).", rtol=1e-3),
        Wrong(float(np.linalg.norm(changes, axis=1).max()), "that is a Euclidean length: revisit which norm the "
                                                            "sensitivity of the Laplace mechanism uses.", rtol=1e-3),
    ], otherwise="a move of one record from u to v changes x_G by the difference of two columns of the matrix; Δ is "
                 "the largest ℓ₁ norm of that difference over the edges (u, v) of the policy.")])
    base, known = constraint_setting()
    p = constrained(base, known)
    k = base.domain.size
    d1, d2 = forced_pair()
    pair = float(np.abs(np.bincount(d1, minlength=k) - np.bincount(d2, minlength=k)).sum())
    q["q6"] = Question("q6 (Δ of the histogram with known counts)", [Part(
        "known_counts_delta", p.histogram_sensitivity(), mistakes=[
            Wrong(p.histogram_sensitivity(neighbours="edges"),
                  "that is Thm 8.6's value, in which every changed record moves along an edge. Def. 4.1 also lets "
                  "records the policy does not protect change, to restore the known counts."),
            Wrong(Laplace().sensitivity(base), "that ignores the known counts: one protected move can force other "
                                               "records to move."),
            Wrong(pair, "that is the pair above, one neighbour among many: a forced move can leave another known "
                        "range, and force yet another record to move.", rtol=1e-3),
        ], otherwise="build two neighbouring databases with the same known counts, a protected move and as many "
                     "forced moves as the known ranges allow, and compare their histograms.")])
    return q
