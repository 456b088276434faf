"""Checks for lab 7, "Data-dependent releases and constraints": DAWA against a data-independent mechanism on sparse
and dense data and the data size where they cross, and the histogram's sensitivity when counts are public (He et
al. 2014 §8).

Each ``qN(answer)`` is a hint check: it knows hints, not answers. :func:`mean_error` is the lab's instrument (the
student measures with it).

Examples
--------
>>> from blowfish_nb.labs import lab07
>>> lab07.age_domain().size
6
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..datasets import salaries
from ..domain import Domain, OrderedAttribute
from ..mechanisms import by_name
from ..policy import Policy, line
from ..workload import identity
from ._check import LabCheckFailed, make_check, unanswered

__all__ = ["data", "FEW", "EPSILON", "TRIALS", "CONTENDERS", "SALARY_EDGES", "AGE_EDGES", "KNOWN", "BOXES",
           "RATIO_RTOL", "salary_domain", "salary_histogram", "mean_error", "age_domain", "SIZES", "q1", "q2", "q2b",
           "q3", "q4", "q5", "unanswered", "LabCheckFailed"]

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


def age_domain() -> Domain:
    """Age in the 6 bins :data:`AGE_EDGES`."""
    return Domain([OrderedAttribute("age", edges=np.asarray(AGE_EDGES, dtype=float))])


q1 = make_check("lab07", "q1")
q2 = make_check("lab07", "q2")
q2b = make_check("lab07", "q2b")
q3 = make_check("lab07", "q3")
q4 = make_check("lab07", "q4")
q5 = make_check("lab07", "q5")
