"""Lab 1, "Neighbours and policies": the checks of its questions (He et al. 2014, §3–4 and Eq. 9).

The lab's domain is the salary column of :func:`blowfish_nb.datasets.salaries` in ten bins of 25,000; every
check builds the policy the question is about with :mod:`blowfish_nb.policy` and asks the library for the
answer, then judges the student's value with :func:`blowfish_nb.labs._check.judge`.

Examples
--------
>>> from blowfish_nb.labs import lab01
>>> lab01.q1(3)          # d_G between the 2nd and 5th salary bins under the line policy
>>> lab01.salary_domain().size
10
"""

from __future__ import annotations

import math
from typing import Any

from .. import datasets, policy
from ..domain import Domain
from ..policy.edit import add_edges
from ._check import Mistake, judge, unanswered

__all__ = [
    "EPSILON", "DEPARTMENTS", "PARTITION_BLOCKS", "CHOICES", "salary_domain", "salary_department_domain",
    "unanswered", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8",
]

#: the ε of the guarantee questions
EPSILON = 0.5
#: the departments of the salary table (public: part of the survey design)
DEPARTMENTS = ("engineering", "operations", "research", "sales", "support")
#: the partition of question 4: salaries under 100,000, and the rest
PARTITION_BLOCKS = ([0, 1, 2, 3], [4, 5, 6, 7, 8, 9])
#: the answers question 7 accepts (policy family names)
CHOICES = ("dp", "bounded", "line", "threshold", "partition")

# the cells the questions name (salary bins of 25,000)
_U, _V = 1, 4  # 25,000–50,000 and 100,000–125,000
_FAR = 8  # 200,000–225,000
_THETA = 2
_NEW_EDGE = (1, 6)  # 25,000–50,000 joined to 150,000–175,000 on the canvas
#: the relative tolerance of a real-valued answer: a value worked by hand to 3 significant digits passes
_ROUNDED = 1e-3


def salary_domain() -> Domain:
    """The salary column in ten bins of 25,000 over its public bounds [0, 250,000].

    Examples
    --------
    >>> salary_domain().labels[1]
    Interval(25000.0, 50000.0, closed='left')
    """
    return Domain.from_column(datasets.salaries()["salary"], bins=10, bounds=(0, 250_000))


def salary_department_domain() -> Domain:
    """Salary (ten bins) × department (five categories): 50 cells, for the attribute policy.

    Examples
    --------
    >>> salary_department_domain().shape
    (10, 5)
    """
    return Domain.from_frame(datasets.salaries(), {"salary": 10, "department": list(DEPARTMENTS)},
                             bounds={"salary": (0, 250_000)})


def q1(answer: Any) -> None:
    """d_G(25,000–50,000, 100,000–125,000) under the line policy.

    Examples
    --------
    >>> q1(3)
    """
    p = policy.line(salary_domain())
    expected = p.distance(_U, _V)
    judge(answer, expected, question="q1 (distance under the line policy)", mistakes=[
        Mistake(expected + 1, "you counted the cells on the way, ends included; d_G counts the edges (moves) "
                              "between them."),
        Mistake(1, "under the line policy a record may only move to a neighbouring bin in one step; "
                   "how many steps does it take to get from the one value to the other?"),
    ], otherwise="the line policy joins each salary bin to the next one only: count the edges on the path.")


def q2(answer: Any) -> None:
    """d_G(25,000–50,000, 100,000–125,000) under (unbounded) differential privacy.

    Examples
    --------
    >>> q2(2)
    """
    d = salary_domain()
    expected = policy.dp(d).distance(_U, _V)
    judge(answer, expected, question="q2 (distance under unbounded DP)", mistakes=[
        Mistake(policy.bounded(d).distance(_U, _V),
                "that is bounded DP, where a record may change its value in one step. Unbounded DP only adds "
                "or removes a record: every edge goes to the null vertex ⊥."),
        Mistake(policy.line(d).distance(_U, _V), "that is the line policy's answer; in unbounded DP no "
                                                 "edge joins two salary bins, every edge goes through ⊥."),
    ], otherwise="draw the star: each bin is joined to ⊥ only. How many edges from one bin to another?")


def q3(answer: Any) -> None:
    """d_G(25,000–50,000, 200,000–225,000) under the threshold policy with θ = 2 bins.

    Examples
    --------
    >>> q3(4)
    """
    d = salary_domain()
    expected = policy.threshold(d, _THETA).distance(_U, _FAR)
    gap = _FAR - _U
    judge(answer, expected, question="q3 (distance under the threshold policy)", mistakes=[
        Mistake(gap, "that is the line policy's distance: with θ a single edge may jump up to θ bins."),
        Mistake(gap // _THETA, "walk the jumps one by one: does your last jump land on the second value, "
                                 "or short of it?"),
        Mistake(1, "θ bounds how far one edge reaches; these two bins are further apart than θ."),
    ], otherwise="each edge of the threshold policy joins bins at most θ apart: how many such jumps at least?")


def q4(answer: Any) -> None:
    """Whether 25,000–50,000 is protected from 150,000–175,000 by the partition {under 100,000, the rest}.

    Examples
    --------
    >>> q4(False)
    """
    p = policy.partition(salary_domain(), [list(b) for b in PARTITION_BLOCKS])
    expected = math.isfinite(p.distance(_U, _NEW_EDGE[1]))
    judge(answer, expected, question="q4 (protection under the partition)", mistakes=[
        Mistake(not expected, "look at the blocks: is there any path of edges from the one value to the other? "
                              "A value is protected only from the values it can reach."),
    ], otherwise="answer with a Python bool (yes or no), not a number or a string.")


def q5(answer: Any) -> None:
    """The bound e^{ε·d_G(u, v)} for the two values of question 1 under the line policy, with ε = 0.5.

    Examples
    --------
    >>> import math
    >>> q5(math.exp(0.5 * 3))
    """
    d = salary_domain()
    line = policy.line(d)
    expected = line.guarantee(_U, _V, EPSILON).bound
    distance = line.distance(_U, _V)
    judge(answer, expected, question="q5 (the guarantee e^(ε·d))", mistakes=[
        Mistake(math.exp(EPSILON), "e^ε is the promise for neighbours only (one edge apart); values further "
                                   "apart get the promise once per edge on the path."),
        Mistake(EPSILON * distance, "you have the exponent; the bound on the odds ratio is e raised to it."),
        Mistake(policy.dp(d).guarantee(_U, _V, EPSILON).bound, "that uses the distance under unbounded DP; the "
                                                               "question asks about the line policy."),
    ], otherwise="multiply ε by the number of edges between the two values, then take the exponential.",
       rtol=_ROUNDED)


def q6(answer: Any) -> None:
    """d_G((25,000–50,000, engineering), (100,000–125,000, research)) under the attribute policy.

    Examples
    --------
    >>> q6(2)
    """
    dom = salary_department_domain()
    a = dom.index((_U, DEPARTMENTS.index("engineering")))
    b = dom.index((_V, DEPARTMENTS.index("research")))
    expected = policy.attribute(dom).distance(a, b)
    judge(answer, expected, question="q6 (distance under the attribute policy)", mistakes=[
        Mistake(1, "one edge changes one attribute only (to any value of it); these records differ in more."),
        Mistake(policy.line(salary_domain()).distance(_U, _V),
                "the attribute policy does not walk bin by bin: one edge may change the salary to any bin."),
    ], otherwise="count the attributes in which the two records differ.")


def q7(answer: Any) -> None:
    """Which policy family fits the employer's wish (the scenario of the lab's question 7).

    The employer wants: salaries up to two bins apart indistinguishable in one step, the lowest and the
    highest bins *not* neighbours, and the number of employees public (no record appears or vanishes).

    Examples
    --------
    >>> q7("threshold")
    """
    d = salary_domain()
    candidates = {
        "dp": policy.dp(d), "bounded": policy.bounded(d), "line": policy.line(d),
        "threshold": policy.threshold(d, _THETA),
        "partition": policy.partition(d, [list(b) for b in PARTITION_BLOCKS]),
    }
    k = d.size
    close = [(i, j) for i in range(k) for j in range(i + 1, min(i + _THETA, k - 1) + 1)]
    fits = [name for name, p in candidates.items()
            if all(p.distance(i, j) == 1 for i, j in close) and p.distance(0, k - 1) > 1 and not p.has_bottom]
    judge(answer, fits[0], question="q7 (which policy?)", mistakes=[
        Mistake("dp", "in unbounded DP a record may vanish: the number of employees would be secret too."),
        Mistake("bounded", "bounded DP makes every pair of bins neighbours, the lowest and highest included."),
        Mistake("line", "under the line policy, bins two apart are two edges apart, not neighbours."),
        Mistake("partition", "look at the boundary between the blocks: two bins on either side of it are close "
                             "but not neighbours."),
    ], otherwise="answer with the name of one policy family from the list in the question, as a string.")


def q8(answer: Any) -> None:
    """d_G(25,000–50,000, 200,000–225,000) once the edge 25,000–50,000 — 150,000–175,000 joins the line policy.

    Examples
    --------
    >>> q8(3)
    """
    d = salary_domain()
    line = policy.line(d)
    expected = add_edges(line, [_NEW_EDGE]).distance(_U, _FAR)
    judge(answer, expected, question="q8 (distance after your edit)", mistakes=[
        Mistake(line.distance(_U, _FAR), "that is the distance before the edit: the new edge is a shortcut."),
        Mistake(1, "the new edge does not reach the second value itself; add the steps after the shortcut."),
    ], otherwise="take the new edge, then walk along the line: count every edge of the shortest path.")
