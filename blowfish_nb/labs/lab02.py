"""Lab 2, "Sensitivity by hand": the lab's setting and the hint checks of its questions (Haney et al. 2015, Lemma 4.5).

The questions ask for the policy-specific sensitivity Δ_W(G) = max over edges (u, v) of ‖W e_u − W e_v‖₁ of three
workloads on the salary domain (ten bins of 25,000). Each ``qN(answer)`` is a hint check: it knows hints, not
answers.

Examples
--------
>>> from blowfish_nb.labs import lab02
>>> lab02.RANGES
((0, 4), (5, 9), (2, 7))
"""

from __future__ import annotations

from typing import Any

from .. import policy, workload
from ..policy import Policy
from ..ranges import Ranges
from ._check import LabCheckFailed, make_check, unanswered
from .lab01 import salary_domain

__all__ = [
    "THETA", "RANGES", "PARTITION_BLOCKS", "salary_domain", "policies", "queries", "unanswered", "LabCheckFailed",
    "q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "q9", "q10",
]

#: θ of the threshold policy (bins)
THETA = 3
#: the three salary ranges of questions 8 and 9, as (first bin, last bin), inclusive
RANGES = ((0, 4), (5, 9), (2, 7))
#: the partition of question 10: under 100,000, 100,000–175,000, 175,000 and more
PARTITION_BLOCKS = ([0, 1, 2, 3], [4, 5, 6], [7, 8, 9])


def policies() -> dict[str, Policy]:
    """The lab's policies on the salary domain, by name: dp, bounded, line, threshold (θ = 3), partition.

    Examples
    --------
    >>> list(policies())
    ['dp', 'bounded', 'line', 'threshold', 'partition']
    """
    d = salary_domain()
    return {
        "dp": policy.dp(d), "bounded": policy.bounded(d), "line": policy.line(d),
        "threshold": policy.threshold(d, THETA), "partition": policy.partition(d, [list(b) for b in PARTITION_BLOCKS]),
    }


def queries() -> dict[str, Any]:
    """The lab's workloads on the ten salary bins, by name: histogram, cumulative, ranges.

    Examples
    --------
    >>> {name: w.shape for name, w in queries().items()}
    {'histogram': (10, 10), 'cumulative': (10, 10), 'ranges': (3, 10)}
    """
    k = salary_domain().size
    lo, hi = zip(*RANGES)
    return {"histogram": workload.identity(k), "cumulative": workload.prefix(k), "ranges": Ranges(k, lo, hi)}


q1 = make_check("lab02", "q1")
q2 = make_check("lab02", "q2")
q3 = make_check("lab02", "q3")
q4 = make_check("lab02", "q4")
q5 = make_check("lab02", "q5")
q6 = make_check("lab02", "q6")
q7 = make_check("lab02", "q7")
q8 = make_check("lab02", "q8")
q9 = make_check("lab02", "q9")
q10 = make_check("lab02", "q10")
