"""Checks for lab 6, "Spending a budget": sessions, composition, (α, β) → ε and the analyst panel.

Each ``qN(answer)`` is a hint check: it knows hints, not answers.

Examples
--------
>>> from blowfish_nb.labs import lab06
>>> lab06.session().budget
1.0
"""

from __future__ import annotations

import pandas as pd

from ..accounting import Session
from ..datasets import salaries
from ._check import LabCheckFailed, make_check, unanswered

__all__ = ["data", "session", "RELEASES", "BUDGET", "OVERSPEND", "SMALLER", "ACCURACY", "BLOCKS", "BLOCK_EPSILONS",
           "FORMULA_RTOL", "q1", "q2", "q3", "q4a", "q4b", "q5", "unanswered", "LabCheckFailed"]

#: the session's total ε
BUDGET = 1.0
#: the ε of the three releases of question 1, in order
RELEASES = (0.1, 0.25, 0.2)
#: the ε of the release question 2 attempts once the three are spent, and of the smaller one asked for next
OVERSPEND = 0.6
SMALLER = 0.4
#: question 3's accuracy target (α, β) for the age histogram
ACCURACY = (30.0, 0.05)
#: question 4's two groups of age bins (young: bins 0–9, i.e. 18–38; old: the rest) and their ε
BLOCKS = (tuple(range(0, 10)), tuple(range(10, 31)))
BLOCK_EPSILONS = (0.3, 0.5)
#: relative tolerance of question 3: the continuous-Laplace formula against the library's discrete quote
FORMULA_RTOL = 0.05

_BINS = {"age": 31}
_BOUNDS = {"age": (18, 80)}


def data(n: int = 2_000, seed: int = 0) -> pd.DataFrame:
    """The lab's data: the embedded salaries table (ages 18–80 are the public bounds).

    Examples
    --------
    >>> len(data())
    2000
    """
    return salaries(n=n, seed=seed)


def session(policy="line", budget: float = BUDGET) -> Session:
    """A fresh session on :func:`data`: age in 31 bins of 2 years, the given policy, seeds allowed (teaching).

    Examples
    --------
    >>> s = session(); s.budget, s.spent, s.column_policy("age").summary()
    (1.0, 0.0, 'line on age (31 cells)')
    """
    return data().blowfish.session(budget, bins=_BINS, bounds=_BOUNDS, policy=policy, reproducible=True)


q1 = make_check("lab06", "q1")
q2 = make_check("lab06", "q2")
q3 = make_check("lab06", "q3")
q4a = make_check("lab06", "q4a")
q4b = make_check("lab06", "q4b")
q5 = make_check("lab06", "q5")
