"""Answer key of lab 3, "Ranges": the Ordered mechanism, its error, the trade-off. Teachers only."""

from __future__ import annotations

import math

from blowfish_nb.domain import Domain
from blowfish_nb.labs._key import Part, Question, Wrong
from blowfish_nb.labs.lab03 import EPSILON, K, RANGE, THETA, range_query
from blowfish_nb.mechanisms import Laplace, Ordered
from blowfish_nb.policy import dp, line, threshold


def questions() -> dict[str, Question]:
    g1, gdp = line(Domain.grid(K)), dp(Domain.grid(K))
    q = {}
    q["q1"] = Question("q1 (Δ of the prefix sums under the line policy)", [Part(
        "delta_prefix", Ordered().sensitivity(g1), mistakes=[
            Wrong(Laplace().sensitivity(g1), "that is the histogram's Δ (one count down, one up). A move to the next "
                                             "cell changes which prefix sums? Count only the prefixes that contain one "
                                             "end of the move but not the other."),
            Wrong(Ordered().sensitivity(gdp), "that is Δ under differential privacy, where a record may appear or "
                                              "vanish anywhere. Under the line policy a record only moves to a "
                                              "neighbouring cell."),
        ], otherwise="write the prefix sums of a histogram before and after one record moves from a cell to the next "
                     "one, and add up how much they changed.")])
    expected = Ordered().expected_error(range_query(), g1, EPSILON)
    b = Ordered().noise_scale(g1, EPSILON)
    q["q2"] = Question("q2 (expected squared error of the Ordered mechanism for the range)", [Part(
        "predicted", expected, rtol=0.01, mistakes=[
            Wrong(2 * b**2, "that is the error of one noisy prefix sum. A range that does not start at cell 0 is the "
                            "difference of two prefix sums, each with its own noise."),
            Wrong(math.sqrt(expected), "that is a standard deviation (a typical error), not a squared error."),
            Wrong(2 * b**2 * (RANGE[1] - RANGE[0] + 1), "that is what the Laplace mechanism pays for this range. "
                                                        "Revisit how the Ordered mechanism answers a range from its "
                                                        "noisy prefix sums."),
        ], otherwise="the range [lo, hi] = P[hi] − P[lo − 1]; every noisy prefix sum carries Laplace noise of scale "
                     "b = Δ/ε, whose variance is 2b².")])
    # graded by running the student's range_noise(rng) with generators of the hidden test's own; the lab, not the
    # student, adds the noise to the true count, so the function never sees a histogram
    q["q3"] = Question("q3 (the noise of one release of the range by the Ordered mechanism)", [Part(
        "range_noise", None, kind="code", otherwise="",
        grade=f"expect_range_noise({{arg}}, {float(b)!r})")])
    laplace_dp = Laplace().expected_error(range_query(), gdp, EPSILON)
    ratio = laplace_dp / expected
    q["q4"] = Question("q4 (Laplace under DP against Ordered under the line policy)", [Part(
        "ratio", ratio, rtol=0.02, mistakes=[
            Wrong(math.sqrt(ratio), "that is the ratio of standard deviations; compare squared errors."),
            Wrong(1 / ratio, "the ratio is upside down: Laplace's error divided by Ordered's."),
            Wrong(4 * ratio, "check the sensitivity you used for the Laplace mechanism: revisit Δ of a "
                             "histogram under unbounded DP, where a record appears or vanishes."),
            Wrong(2 * ratio, "the Ordered mechanism answers this range from two noisy prefix sums."),
        ], otherwise="the Laplace mechanism adds one noisy count per cell of the range, each of variance 2(Δ/ε)² with "
                     "Δ = 1 under DP; divide by your answer to q2.")])
    r = Ordered().sensitivity(threshold(Domain.grid(K), THETA)) / Ordered().sensitivity(g1)
    q["q5"] = Question(f"q5 (ε for G^{THETA} matching G^1 at ε = {EPSILON})", [Part(
        "eps_for_theta4", EPSILON * r, rtol=0.01, mistakes=[
            Wrong(EPSILON / r, "that ε does not keep the error. Revisit how the noise scale Δ/ε depends on Δ and "
                               "on ε, "
                               "and how Δ of the prefix sums depends on θ."),
            Wrong(EPSILON * math.sqrt(r), "the noise scale is Δ/ε; keep Δ/ε the same (the square in the error "
                                          "cancels)."),
            Wrong(EPSILON, "that ignores θ: revisit how Δ of the prefix sums depends on θ (the first part of the "
                           "lab)."),
        ], otherwise="the error depends on ε and θ only through the noise scale Δ/ε: find the ε that keeps it.")])
    return q
