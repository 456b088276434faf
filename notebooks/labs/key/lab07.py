"""Answer key of lab 7, "Data-dependent releases and constraints" (DAWA against Transformed; He et al. 2014 §8)."""

from __future__ import annotations

from functools import lru_cache

import pandas as pd

from blowfish_nb import constraints as C
from blowfish_nb.labs._key import Part, Question, Wrong
from blowfish_nb.labs.lab07 import (AGE_EDGES, BOXES, CONTENDERS, FEW, KNOWN, RATIO_RTOL, SIZES, age_domain, data,
                                    mean_error, salary_histogram)
from blowfish_nb.policy import constrained, line
from blowfish_nb.workload import identity


def winner(x) -> str:
    return min(CONTENDERS, key=lambda name: mean_error(x, name)[0])


def size_table(sizes=SIZES) -> pd.DataFrame:
    """:func:`mean_error` (and its standard error) of each contender on the first n people, one row per size."""
    rows = {}
    for n in sizes:
        x = salary_histogram(data().head(n))
        for name in CONTENDERS:
            m, se = mean_error(x, name)
            rows.setdefault(int(n), {}).update({name: m, f"{name} se": se})
    return pd.DataFrame.from_dict(rows, orient="index")


@lru_cache(maxsize=1)
def crossover_size() -> int:
    table = size_table()
    dependent, independent = CONTENDERS
    later = table.index[table[independent] < table[dependent]]
    return int(later[0]) if len(later) else int(SIZES[-1]) + 1


def count_sensitivity() -> float:
    d = age_domain()
    return constrained(line(d), C.count(d, list(KNOWN), "under 50")).histogram_sensitivity(method="exact")


def boxes_sensitivity(neighbours: str = "definition") -> float:
    d = age_domain()
    return constrained(line(d), C.rectangles(d, [list(b) for b in BOXES])).histogram_sensitivity(
        method="exact", neighbours=neighbours)


def error_ratio(epsilon: float = 1.0) -> float:
    df = data()
    common = dict(bins=list(AGE_EDGES), policy="line", epsilon=epsilon, mechanism="laplace", rng=0)
    plain = df.blowfish.release("histogram", "age", **common)
    known = df.blowfish.release("histogram", "age", **common,
                                constraints=lambda d: C.count(d, list(KNOWN), "under 50"))
    return float(known.expected_error / plain.expected_error)


def questions() -> dict[str, Question]:
    q = {}
    names = f"one of {list(CONTENDERS)}"
    few = winner(salary_histogram(data().head(FEW)))
    q["q1"] = Question("q1 (few people: which mechanism wins?)", [Part(
        "winner_few", few, kind="choice", choices=CONTENDERS, mistakes=[
            Wrong(next(c for c in CONTENDERS if c != few),
                  "compare the two mean errors and their standard errors from check.mean_error: which is smaller "
                  "on these 300 people?"),
        ], otherwise=f"answer with {names}.")])
    many = winner(salary_histogram(data()))
    q["q2"] = Question("q2 (many people: which mechanism wins?)", [Part(
        "winner_all", many, kind="choice", choices=CONTENDERS, mistakes=[
            Wrong(next(c for c in CONTENDERS if c != many),
                  "measure both mechanisms on all 5,000 people with check.mean_error and compare the means, with "
                  "their standard errors."),
        ], otherwise=f"answer with {names}.")])
    cross = crossover_size()
    sizes = [int(n) for n in SIZES]
    q["q2b"] = Question("q2b (the data size where DAWA stops winning)", [Part("n_cross", cross, mistakes=[
        Wrong([n for n in sizes if n < cross], "at that size DAWA's error is still the smaller one: compare the two "
                                               "means (and their standard errors) at the larger sizes."),
        Wrong([n for n in sizes if n > cross], "the question asks for the first size where the data-independent "
                                               "mechanism wins: measure every size of the list, not only the ends."),
    ], otherwise=f"answer with one of the sizes {sizes} (a number of people): loop over them, call "
                 "`check.mean_error` for both mechanisms, and find the first size where `transformed` has the "
                 "smaller mean.")])
    plain = line(age_domain()).sensitivity(identity(6))
    known = count_sensitivity()
    q["q3"] = Question("q3 (Δ with one public count)", [Part("delta_count", known, mistakes=[
        Wrong(plain, "that is Δ without the public count. Take the move from the 40–50 bin to 50–60: is the neighbour "
                     "still consistent with the published number of people under 50? What else must change?"),
        Wrong(1, "revisit what a move along the line policy changes in the histogram, and what else the public count "
                 "forces to change."),
        Wrong(3, "count the changed cells: every record that moves changes two counts."),
    ], otherwise="follow one move across the boundary of the public count, then the move that restores the count.")])
    q["q4"] = Question("q4 (Δ with two public counts)", [Part("delta_boxes", boxes_sensitivity(), mistakes=[
        Wrong(boxes_sensitivity("edges"),
              "that is the value of He et al.'s Thm 8.6, whose proof lets every changed record move only along an edge "
              "of the policy. Def. 4.1 lets records the policy does not protect move anywhere to restore the counts: "
              "use the library's exact search with its default neighbours."),
        Wrong(plain, "that is Δ without the public counts."),
    ], otherwise="build the policy with `bf.policy.constrained(...)` and ask for `histogram_sensitivity()`.")])
    r = RATIO_RTOL
    q["q5"] = Question("q5 (the price of a public count)", [Part("error_factor", error_ratio(), rtol=r, mistakes=[
        Wrong(known / plain, "the noise's *scale* grows like Δ; its squared error grows like the square of the scale.",
              rtol=r),
        Wrong(plain / known, "revisit whether the public count makes Δ larger or smaller, and how the noise follows "
                             "Δ.", rtol=r),
        Wrong(1.0, "the public count changes Δ, and Δ sets the noise.", rtol=r),
    ], otherwise="the Laplace mechanism's noise scale is Δ/ε; how does the squared error depend on the scale?")])
    return q
