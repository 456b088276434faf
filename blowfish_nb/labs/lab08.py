"""Checks for lab 8, "Strategies and lower bounds": the SVD lower bound on the error of any matrix mechanism (Haney et
al. 2015, App. A), the optimiser (:func:`blowfish_nb.strategies.optimized.optimize`, the ``Optimized`` mechanism) and
two-dimensional boxes under the grid policy.

Each ``qN(answer)`` is a hint check: it knows hints, not answers. The rest is the lab's public setting: an 8×8 grid
of age and salary bins, the workload of all its boxes, the grid policy and the fixed strategies compared.

Examples
--------
>>> from blowfish_nb.labs import lab08
>>> lab08.domain().shape, lab08.boxes().shape
((8, 8), (1296, 64))
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..datasets import salaries
from ..domain import Domain, OrderedAttribute
from ..operators import Workload
from ..policy import BOTTOM, Policy, grid
from ..ranges import all_ranges
from ..workload import kron
from ._check import LabCheckFailed, make_check, unanswered

__all__ = ["EPSILON", "K_HIST", "K_PREFIX", "AGE_EDGES", "SALARY_EDGES", "THETAS", "FIXED", "data", "domain",
           "histogram", "boxes", "grid_policy", "edge_matrix", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "unanswered",
           "LabCheckFailed"]

#: ε of every error compared in the lab (errors scale like 1/ε², so ratios do not depend on it)
EPSILON = 1.0
#: bins of the histogram of question 1 (unbounded differential privacy)
K_HIST = 16
#: bins of the prefix sums of question 2 (the line policy)
K_PREFIX = 6
#: age bins of the grid (8 bins)
AGE_EDGES = (18, 25, 30, 35, 40, 45, 50, 60, 81)
#: salary bins of the grid: 8 bins of 31,250 between the public bounds 0 and 250,000
SALARY_EDGES = tuple(float(v) for v in np.linspace(0, 250_000, 9))
#: the grid policy's thresholds of part 3 (L1 distance in bins)
THETAS = (1, 2, 3, 4)
#: the fixed (data-independent, not optimised) strategies of part 2, by their names in blowfish_nb.mechanisms
FIXED = ("laplace", "ordered", "hierarchical", "privelet")


def data(n: int = 5_000, seed: int = 0) -> pd.DataFrame:
    """The lab's data: the embedded salaries table (age, salary, department).

    Examples
    --------
    >>> len(data())
    5000
    """
    return salaries(n=n, seed=seed)


def domain() -> Domain:
    """Age × salary, 8 × 8 bins (:data:`AGE_EDGES`, :data:`SALARY_EDGES`); cells in C order, age first.

    Examples
    --------
    >>> domain().size
    64
    """
    return Domain([OrderedAttribute("age", edges=np.asarray(AGE_EDGES, dtype=float)),
                   OrderedAttribute("salary", edges=np.asarray(SALARY_EDGES))])


def histogram(frame: pd.DataFrame) -> np.ndarray:
    """The true 64-cell histogram of ``frame`` over :func:`domain` (what only the curator sees), flattened.

    Examples
    --------
    >>> int(histogram(data()).sum())
    5000
    """
    return np.asarray(domain().histogram(frame)).reshape(-1)


def boxes() -> Workload:
    """Every box of the 8×8 grid: a range of age bins × a range of salary bins, 36 × 36 = 1,296 queries.

    The Kronecker product of the 1-D workloads of all ranges (:func:`blowfish_nb.workload.kron`).
    """
    return kron(all_ranges(len(AGE_EDGES) - 1), all_ranges(len(SALARY_EDGES) - 1))


def grid_policy(theta: int = 1) -> Policy:
    """The grid policy over :func:`domain`: an adversary must not tell apart two cells within L1 distance ``theta``
    (``theta`` = 1: one bin up or down in age, or in salary).

    Examples
    --------
    >>> grid_policy().edge_count()
    112
    """
    return grid(domain(), theta=theta)


def edge_matrix(policy: Policy) -> np.ndarray:
    """P_G: one column per edge (u, v) of ``policy``, e_u − e_v (just e_u for an edge to ⊥), k rows.

    W @ P_G is the matrix W_G whose singular values the SVD lower bound adds up.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> edge_matrix(policy.line(Domain.grid(3))).astype(int).tolist()
    [[1, 0], [-1, 1], [0, -1]]
    """
    e = policy.edges()
    P = np.zeros((policy.domain.size, len(e)))
    for j, (u, v) in enumerate(e):
        P[u, j] = 1.0
        if v != BOTTOM:
            P[v, j] = -1.0
    return P


q1 = make_check("lab08", "q1")
q2 = make_check("lab08", "q2")
q3 = make_check("lab08", "q3")
q4 = make_check("lab08", "q4")
q5 = make_check("lab08", "q5")
q6 = make_check("lab08", "q6")
q7 = make_check("lab08", "q7")
