"""Lab 1, "Neighbours and policies": the lab's setting and the hint checks of its questions (He et al. 2014, §3–4).

The lab's domain is the salary column of :func:`blowfish_nb.datasets.salaries` in ten bins of 25,000. Each
``qN(answer)`` is a hint check (:func:`blowfish_nb.labs._check.make_check`): it knows hints, not answers.

Examples
--------
>>> from blowfish_nb.labs import lab01
>>> lab01.salary_domain().size
10
>>> try:
...     lab01.q1("3")
... except lab01.LabCheckFailed as e:
...     print(e)
q1 (distance under the line policy): not yet. Hint: store a number, not text: remove the quotes around it.
"""

from __future__ import annotations

from .. import datasets
from ..domain import Domain
from ._check import LabCheckFailed, make_check, unanswered

__all__ = [
    "EPSILON", "DEPARTMENTS", "PARTITION_BLOCKS", "CHOICES", "salary_domain", "salary_department_domain",
    "unanswered", "LabCheckFailed", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8",
]

#: the ε of the guarantee questions
EPSILON = 0.5
#: the departments of the salary table (public: part of the survey design)
DEPARTMENTS = ("engineering", "operations", "research", "sales", "support")
#: the partition of question 4: salaries under 100,000, and the rest
PARTITION_BLOCKS = ([0, 1, 2, 3], [4, 5, 6, 7, 8, 9])
#: the policy families question 7 chooses among
CHOICES = ("dp", "bounded", "line", "threshold", "partition")



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


q1 = make_check("lab01", "q1")
q2 = make_check("lab01", "q2")
q3 = make_check("lab01", "q3")
q4 = make_check("lab01", "q4")
q5 = make_check("lab01", "q5")
q6 = make_check("lab01", "q6")
q7 = make_check("lab01", "q7")
q8 = make_check("lab01", "q8")
