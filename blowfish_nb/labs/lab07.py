"""Checks for lab 7, "Data-dependent releases and constraints": DAWA against a data-independent mechanism on sparse
and dense data and the data size where they cross, and the histogram's sensitivity when counts are public (He et
al. 2014 §8).

Every check computes its answer with the library (Monte Carlo runs of the mechanisms with fixed seeds, the exact
constrained sensitivity, the releases' expected error) and hands it to :func:`~blowfish_nb.labs._check.judge`.

Examples
--------
>>> from blowfish_nb.labs import lab07
>>> lab07.q3(lab07.count_sensitivity())
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from .. import constraints as C
from ..datasets import salaries
from ..domain import Domain, OrderedAttribute
from ..mechanisms import by_name
from ..policy import Policy, constrained, line
from ..workload import identity
from ._check import Mistake, judge, unanswered

__all__ = ["data", "FEW", "EPSILON", "TRIALS", "CONTENDERS", "SALARY_EDGES", "AGE_EDGES", "KNOWN", "BOXES",
           "salary_domain", "salary_histogram", "mean_error", "winner", "age_domain", "count_sensitivity",
           "boxes_sensitivity", "error_ratio", "SIZES", "size_table", "crossover_size", "q1", "q2", "q2b", "q3", "q4",
           "q5", "unanswered"]

#: rows of the "few people" data set of question 1 (the first rows of :func:`data`)
FEW = 300
#: ε of the sparse/dense comparison
EPSILON = 0.1
#: Monte Carlo releases per mechanism in :func:`mean_error`
TRIALS = 10
#: the data-dependent and the data-independent mechanism compared (names of blowfish_nb.mechanisms)
CONTENDERS = ("dawa", "transformed")
#: data sizes of question 2b: the first n people of :func:`data`, for n in this list
SIZES = (250, 500, 1000, 2000, 4000, 5000)
#: salary bins: 100 bins of 2,500 between the public bounds 0 and 250,000
SALARY_EDGES = tuple(np.linspace(0, 250_000, 101))
#: age bins of the constraints part (6 bins)
AGE_EDGES = (18, 30, 40, 50, 60, 70, 81)
#: question 3's public count: the people under 50 (age bins 0–2)
KNOWN = (0, 1, 2)
#: question 4's public counts: the people aged 18–40 (bins 0–1) and 60–81 (bins 4–5)
BOXES = ([(0, 1)], [(4, 5)])
#: relative tolerance of question 5 (the lab's (Δ'/Δ)² against the discrete-noise ratio of the library)
RATIO_RTOL = 0.05


def data(n: int = 5_000, seed: int = 0) -> pd.DataFrame:
    """The lab's data: the embedded salaries table.

    Examples
    --------
    >>> len(data()), len(data().head(FEW))
    (5000, 300)
    """
    return salaries(n=n, seed=seed)


def salary_domain() -> Domain:
    """Salary in 100 bins of 2,500 (public bounds 0–250,000)."""
    return Domain([OrderedAttribute("salary", edges=np.asarray(SALARY_EDGES))])


def salary_histogram(frame: pd.DataFrame) -> np.ndarray:
    """The true salary histogram of ``frame`` over :func:`salary_domain` (what only the curator sees).

    Examples
    --------
    >>> x = salary_histogram(data().head(FEW)); x.size, int(x.sum())
    (100, 300)
    """
    return salary_domain().histogram(frame)


def mean_error(x: np.ndarray, mechanism: str, *, epsilon: float = EPSILON, trials: int = TRIALS,
               seed: int = 0, policy: Policy | None = None) -> tuple[float, float]:
    """Mean absolute error per bin of ``mechanism``'s histogram release of ``x``, and its standard error.

    ``trials`` releases under ``policy`` (the line policy over the bins by default), noise from one generator
    seeded with ``seed``.

    Examples
    --------
    >>> m, se = mean_error(salary_histogram(data().head(FEW)), "laplace", trials=4)
    >>> 0 < se < m
    True
    """
    k = x.size
    pol = line(Domain.grid(k)) if policy is None else policy
    rng = np.random.default_rng(seed)
    m = by_name(mechanism)
    errors = np.array([np.abs(m.release(x, identity(k), pol, epsilon, rng=rng) - x).mean() for _ in range(trials)])
    return float(errors.mean()), float(errors.std(ddof=1) / np.sqrt(trials))


def winner(x: np.ndarray) -> str:
    """The one of :data:`CONTENDERS` with the smaller :func:`mean_error` on ``x``."""
    return min(CONTENDERS, key=lambda name: mean_error(x, name)[0])


def size_table(sizes=SIZES) -> pd.DataFrame:
    """:func:`mean_error` of each of :data:`CONTENDERS` on the salaries of the first n people, for n in ``sizes``.

    One row per size; columns ``"<name>"`` (mean absolute error per bin) and ``"<name> se"`` (its standard error).

    Examples
    --------
    >>> t = size_table((300,)); list(t.columns), t.index.tolist()
    (['dawa', 'dawa se', 'transformed', 'transformed se'], [300])
    """
    return _size_table(tuple(int(n) for n in sizes)).copy()


@lru_cache(maxsize=4)
def _size_table(sizes: tuple[int, ...]) -> pd.DataFrame:
    rows = {}
    for n in sizes:
        x = salary_histogram(data().head(n))
        for name in CONTENDERS:
            m, se = mean_error(x, name)
            rows.setdefault(n, {}).update({name: m, f"{name} se": se})
    return pd.DataFrame.from_dict(rows, orient="index")


@lru_cache(maxsize=1)
def crossover_size() -> int:
    """The smallest n of :data:`SIZES` at which the data-independent contender has the smaller :func:`mean_error`.

    Examples
    --------
    >>> crossover_size() in SIZES
    True
    """
    table = size_table()
    dependent, independent = CONTENDERS
    later = table.index[table[independent] < table[dependent]]
    return int(later[0]) if len(later) else int(SIZES[-1]) + 1


def age_domain() -> Domain:
    """Age in the 6 bins :data:`AGE_EDGES`."""
    return Domain([OrderedAttribute("age", edges=np.asarray(AGE_EDGES, dtype=float))])


def count_sensitivity() -> float:
    """Δ of the histogram under the line policy when the count of the bins :data:`KNOWN` is public (exact search).

    Examples
    --------
    >>> count_sensitivity() > line(age_domain()).sensitivity(identity(6))
    True
    """
    d = age_domain()
    return constrained(line(d), C.count(d, list(KNOWN), "under 50")).histogram_sensitivity(method="exact")


def boxes_sensitivity(neighbours: str = "definition") -> float:
    """Δ of the histogram under the line policy with the counts of :data:`BOXES` public (exact search)."""
    d = age_domain()
    return constrained(line(d), C.rectangles(d, [list(b) for b in BOXES])).histogram_sensitivity(
        method="exact", neighbours=neighbours)


def error_ratio(epsilon: float = 1.0) -> float:
    """Expected squared error of the Laplace age histogram with the :data:`KNOWN` count public over without it."""
    df = data()
    common = dict(bins=list(AGE_EDGES), policy="line", epsilon=epsilon, mechanism="laplace", rng=0)
    plain = df.blowfish.release("histogram", "age", **common)
    known = df.blowfish.release("histogram", "age", **common,
                                constraints=lambda d: C.count(d, list(KNOWN), "under 50"))
    return float(known.expected_error / plain.expected_error)


# -- the checks ------------------------------------------------------------------------------------------------------
_NAMES = f"one of {list(CONTENDERS)}"


def _choice(answer):
    return answer.strip().lower() if isinstance(answer, str) else answer


def q1(name: str) -> None:
    """Question 1: which of :data:`CONTENDERS` has the smaller error on the salaries of the first :data:`FEW` people.

    Examples
    --------
    >>> q1(winner(salary_histogram(data().head(FEW))))
    """
    expected = winner(salary_histogram(data().head(FEW)))
    other = next(c for c in CONTENDERS if c != expected)
    judge(_choice(name), expected, question="q1 (few people: which mechanism wins?)", mistakes=[
        Mistake(other, "with 300 people in 100 bins most bins are empty or tiny, and long runs of bins look alike. "
                       "Which mechanism can average such runs, and pay the noise once per run?"),
        Mistake(lambda a: a not in CONTENDERS, f"answer with {_NAMES}."),
    ], otherwise=f"answer with {_NAMES}.")


def q2(name: str) -> None:
    """Question 2: the same question on the salaries of all 5,000 people.

    Examples
    --------
    >>> q2(winner(salary_histogram(data())))
    """
    expected = winner(salary_histogram(data()))
    other = next(c for c in CONTENDERS if c != expected)
    judge(_choice(name), expected, question="q2 (many people: which mechanism wins?)", mistakes=[
        Mistake(other, "with 5,000 people neighbouring bins differ by far more than the noise: there is little to "
                       "average, and a data-dependent mechanism still pays for finding its partition (part of ε) "
                       "and for a record's move changing two counts."),
        Mistake(lambda a: a not in CONTENDERS, f"answer with {_NAMES}."),
    ], otherwise=f"answer with {_NAMES}.")


def q2b(n) -> None:
    """Question 2b: the smallest of :data:`SIZES` at which ``"transformed"`` beats ``"dawa"`` (first n people).

    Examples
    --------
    >>> q2b(crossover_size())
    """
    expected = crossover_size()
    sizes = [int(v) for v in SIZES]

    def size(a):
        try:
            return int(a) if float(a) == int(a) else None
        except (TypeError, ValueError, OverflowError):
            return None

    judge(n, expected, question="q2b (the data size where DAWA stops winning)", mistakes=[
        Mistake(lambda a: size(a) not in sizes, f"answer with one of the sizes {sizes} (a number of people)."),
        Mistake(lambda a: size(a) < expected,
                "at that size DAWA's error is still the smaller one: compare the two means (and their standard "
                "errors) at the larger sizes."),
        Mistake(lambda a: size(a) > expected,
                "the data-independent mechanism is ahead already at a smaller size of the list: measure every size, "
                "not only the ends."),
    ], otherwise="loop over the sizes, call `check.mean_error` for both mechanisms, and find the first size where "
                 "`transformed` has the smaller mean.")


def q3(delta: float) -> None:
    """Question 3: Δ of the 6-bin age histogram under the line policy when the number of people under 50 is public.

    Examples
    --------
    >>> q3(count_sensitivity())
    """
    judge(delta, count_sensitivity(), question="q3 (Δ with one public count)", mistakes=[
        Mistake(line(age_domain()).sensitivity(identity(6)),
                "that is Δ without the public count. Take the move from the 40–50 bin to 50–60: is the neighbour "
                "still consistent with the published number of people under 50? What else must change?"),
        Mistake(1, "a record that moves changes two counts — and here the public count forces more."),
        Mistake(3, "count the changed cells: every record that moves changes two counts."),
    ], otherwise="follow one move across the boundary of the public count, then the move that restores the count.")


def q4(delta: float) -> None:
    """Question 4: Δ under the line policy with two public counts, ages 18–40 and 60–81 (Def. 4.1, exact search).

    Examples
    --------
    >>> q4(boxes_sensitivity())
    """
    judge(delta, boxes_sensitivity(), question="q4 (Δ with two public counts)", mistakes=[
        Mistake(boxes_sensitivity("edges"),
                "that is the value of He et al.'s Thm 8.6, whose proof lets every changed record move only along an "
                "edge of the policy. Def. 4.1 lets records the policy does not protect move anywhere to restore "
                "the counts: use the library's exact search with its default neighbours."),
        Mistake(line(age_domain()).sensitivity(identity(6)), "that is Δ without the public counts."),
    ], otherwise="build the policy with `bf.policy.constrained(...)` and ask for `histogram_sensitivity()`.")


def q5(ratio: float) -> None:
    """Question 5: how many times larger the Laplace histogram's expected squared error is with the count public.

    Examples
    --------
    >>> q5(error_ratio())
    """
    delta, known = line(age_domain()).sensitivity(identity(6)), count_sensitivity()
    judge(ratio, error_ratio(), question="q5 (the price of a public count)", rtol=RATIO_RTOL, mistakes=[
        Mistake(lambda a: _close(a, known / delta), "the noise's *scale* grows like Δ; its squared error grows like "
                                                    "the square of the scale."),
        Mistake(lambda a: _close(a, delta / known), "the public count makes Δ larger, so more noise is needed, "
                                                    "not less."),
        Mistake(lambda a: _close(a, 1.0), "the public count changes Δ, and Δ sets the noise."),
    ], otherwise="the Laplace mechanism's noise scale is Δ/ε; how does the squared error depend on the scale?")


def _close(a, b: float) -> bool:
    try:
        a = float(a)
    except (TypeError, ValueError):
        return False
    return bool(np.isfinite(a)) and abs(a - b) <= RATIO_RTOL * abs(b)
