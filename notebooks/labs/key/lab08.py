"""Answer key of lab 8, "Strategies and lower bounds" (the SVD bound, the optimiser, 2-D boxes under the grid policy;
Haney et al. 2015 App. A, McKenna et al. 2018). Teachers only."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from blowfish_nb.analysis import lower_bound
from blowfish_nb.domain import Domain
from blowfish_nb.labs._key import Part, Question, Wrong
from blowfish_nb.labs.lab08 import (EPSILON, FIXED, K_HIST, K_PREFIX, THETAS, boxes, edge_matrix, grid_policy)
from blowfish_nb.mechanisms import Laplace, Optimized, by_name
from blowfish_nb.policy import dp, line
from blowfish_nb.strategies.optimized import optimize
from blowfish_nb.workload import identity, prefix

#: the ratios to the bound are compared within 0.1 % (analytic); the optimiser's within 5 % (an optimisation)
RTOL = 1e-3
OPT_RTOL = 0.05


def laplace_beaten() -> bool:
    """Whether the SVD bound for the histogram under DP lies below Laplace's error (it does not: Laplace is optimal)."""
    g = dp(Domain.grid(K_HIST))
    bound = lower_bound(identity(K_HIST), g, EPSILON)
    return bool(bound < Laplace().expected_error(identity(K_HIST), g, EPSILON) * (1 - 1e-9))


def singular_term(k: int = K_PREFIX, edges: int | None = None) -> float:
    """(Σλ)²/n_G for the prefix sums of k bins under the line policy, from the SVD of W P_G."""
    g = line(Domain.grid(k))
    lam = np.linalg.svd(prefix(k).dense() @ edge_matrix(g), compute_uv=False)
    return float(lam.sum() ** 2 / (len(g.edges()) if edges is None else edges))


def fixed_errors(theta: int = 1) -> dict[str, float]:
    g = grid_policy(theta)
    return {name: by_name(name).expected_error(boxes(), g, EPSILON) for name in FIXED}


def best_fixed() -> str:
    errors = fixed_errors()
    return min(errors, key=errors.get)


def floor(theta: int = 1) -> float:
    return lower_bound(boxes(), grid_policy(theta), EPSILON)


@lru_cache(maxsize=None)
def optimized_error(theta: int = 1) -> float:
    g = grid_policy(theta)
    return Optimized(optimize(boxes(), g)).expected_error(boxes(), g, EPSILON)


def questions() -> dict[str, Question]:
    q = {}
    q["q1"] = Question("q1 (can a strategy beat Laplace on the histogram under DP?)", [Part(
        "beats_laplace", laplace_beaten(), kind="bool", mistakes=[
            Wrong(not laplace_beaten(), "compute both: `bf.analysis.lower_bound(W, G, 1.0)` is the floor for every "
                                        "matrix mechanism, `bf.mechanisms.Laplace().expected_error(W, G, 1.0)` is "
                                        "Laplace's error. Is there any room between them?"),
        ], otherwise="answer with True or False.")])
    n_edges = K_PREFIX - 1
    q["q2"] = Question("q2 ((Σλ)²/n_G for the prefix sums under the line policy)", [Part(
        "sv_term", singular_term(), mistakes=[
            Wrong(singular_term(edges=K_PREFIX), "revisit what n_G stands for in the bound: the bins, or the edges "
                                                 "of the line policy?"),
            Wrong(singular_term(edges=1), "that is (Σλ)²: divide it by n_G, the number of edges of the policy."),
            Wrong(float(K_PREFIX) ** 2 / n_edges, "revisit the shape of W_G = W P_G (its columns are the policy's "
                                                  "edges) and what its singular values are."),
        ], otherwise="write W P_G for a few edges: each column W(e_u − e_v) is the change of the prefix sums when "
                     "one record moves from u to v. What matrix is W_G, and what are its singular values?")])
    best = best_fixed()
    others = [n for n in FIXED if n != best]
    q["q3"] = Question("q3 (predict: the best fixed strategy for 2-D boxes under the grid)", [Part(
        "best_fixed", best, kind="choice", choices=FIXED, mistakes=[
            Wrong(others, "compare the strategies' expected errors (`by_name(name).expected_error(W, G, 1.0)`) and "
                          "their sensitivities under the grid policy: a strategy built for one ordered attribute "
                          "pays for every edge of the second one."),
        ], otherwise=f"answer with one of {list(FIXED)}.")])
    gap = fixed_errors()[best] / floor()
    q["q4"] = Question("q4 (how far the best fixed strategy is from the floor)", [Part(
        "gap_fixed", gap, rtol=RTOL, mistakes=[
            Wrong(1 / gap, "that is the floor divided by the error: the ratio asked is error / floor (at least 1).",
                  rtol=RTOL),
            Wrong([fixed_errors()[n] / floor() for n in others], "that is the ratio of another fixed strategy: take "
                                                                "the strategy with the smallest expected error.",
                  rtol=RTOL),
        ], otherwise="divide the best fixed strategy's expected error per query by `bf.analysis.lower_bound(W, G, "
                     "1.0)`, both for all boxes under the grid policy with θ = 1.")])
    opt = optimized_error() / floor()
    q["q5"] = Question("q5 (how far the optimised strategy is from the floor)", [Part(
        "gap_optimized", opt, rtol=OPT_RTOL, mistakes=[
            Wrong(gap, "that is the best fixed strategy's ratio: optimise a strategy with "
                       "`bf.strategies.optimize(W, G)` and measure it with `bf.mechanisms.Optimized(strategy)`.",
                  rtol=OPT_RTOL),
            Wrong(1 / opt, "that is the floor divided by the error: the ratio asked is error / floor (at least 1).",
                  rtol=OPT_RTOL),
        ], otherwise="`strategy = bf.strategies.optimize(W, G)` with its default settings, then "
                     "`bf.mechanisms.Optimized(strategy).expected_error(W, G, 1.0)` divided by the lower bound.")])
    first, last = THETAS[0], THETAS[-1]
    growth = floor(last) / floor(first)
    moves = "up" if growth > 1 + 1e-9 else "down" if growth < 1 - 1e-9 else "same"
    q["q6"] = Question("q6 (predict: the floor when θ grows)", [Part(
        "floor_moves", moves, kind="choice", choices=("up", "down", "same"), mistakes=[
            Wrong([c for c in ("up", "down", "same") if c != moves],
                  "a larger θ adds edges to the policy: every pair of cells within θ must look alike. Can a "
                  "strategy's sensitivity fall when the maximum runs over more edges?"),
        ], otherwise="answer with 'up', 'down' or 'same'.")])
    laplace_growth = (Laplace().expected_error(boxes(), grid_policy(last), EPSILON)
                      / Laplace().expected_error(boxes(), grid_policy(first), EPSILON))
    q["q7"] = Question("q7 (how much the floor rises from θ = 1 to θ = 4)", [Part(
        "floor_growth", growth, rtol=RTOL, mistakes=[
            Wrong(laplace_growth, "that is how Laplace's error moves (its Δ is the same for every θ): the question "
                                  "is about the lower bound.", rtol=RTOL),
            Wrong(optimized_error(last) / optimized_error(first), "that is how the optimised strategy's error moves: "
                                                                  "the question is about the lower bound.",
                  rtol=OPT_RTOL),
            Wrong(1 / growth, "divide the bound at θ = 4 by the bound at θ = 1, not the other way.", rtol=RTOL),
        ], otherwise="compute `bf.analysis.lower_bound(W, lab.grid_policy(theta), 1.0)` for θ = 1 and θ = 4 and "
                     "divide the second by the first.")])
    return q
