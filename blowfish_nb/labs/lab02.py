"""Lab 2, "Sensitivity by hand": the checks of its questions (Haney et al. 2015, Lemma 4.5; DESIGN §3).

Every check computes the policy-specific sensitivity Δ_W(G) = max over edges (u, v) of ‖W e_u − W e_v‖₁
(‖W e_u‖₁ on an edge to ⊥) with :meth:`blowfish_nb.Policy.sensitivity` on the lab's salary domain (ten bins of
25,000) and judges the student's value with :func:`blowfish_nb.labs._check.judge`.

Examples
--------
>>> from blowfish_nb.labs import lab02
>>> lab02.q1(1)          # Δ of the histogram under unbounded DP
>>> lab02.RANGES
((0, 4), (5, 9), (2, 7))
"""

from __future__ import annotations

from typing import Any

from .. import policy, workload
from ..policy import Policy
from ..ranges import Ranges
from ._check import Mistake, judge, unanswered
from .lab01 import salary_domain

__all__ = [
    "THETA", "RANGES", "PARTITION_BLOCKS", "salary_domain", "policies", "queries", "sensitivity", "unanswered",
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


def sensitivity(query: str, policy_name: str) -> float:
    """The library's Δ of one of the lab's queries under one of its policies (for the summary table).

    Examples
    --------
    >>> sensitivity("histogram", "dp")
    1.0
    """
    return policies()[policy_name].sensitivity(queries()[query])


def q1(answer: Any) -> None:
    """Δ of the histogram under unbounded DP.

    Examples
    --------
    >>> q1(1)
    """
    judge(answer, sensitivity("histogram", "dp"), question="q1 (histogram, unbounded DP)", mistakes=[
        Mistake(sensitivity("histogram", "bounded"),
                "in unbounded DP a neighbour adds or removes one record; it does not move one. How many "
                "counts does adding a record change?"),
    ], otherwise="add one record to the data: which bin counts change, and by how much in total?")


def q2(answer: Any) -> None:
    """Δ of the histogram under bounded DP.

    Examples
    --------
    >>> q2(2)
    """
    judge(answer, sensitivity("histogram", "bounded"), question="q2 (histogram, bounded DP)", mistakes=[
        Mistake(sensitivity("histogram", "dp"),
                "a move is not one change: the record leaves one bin and arrives in another."),
    ], otherwise="move one record from one bin to another: add up how much every count changes.")


def q3(answer: Any) -> None:
    """Δ of the histogram under the line policy.

    Examples
    --------
    >>> q3(2)
    """
    judge(answer, sensitivity("histogram", "line"), question="q3 (histogram, line policy)", mistakes=[
        Mistake(sensitivity("histogram", "dp"),
                "a short move is still a move: the record leaves one bin and arrives in the next one."),
    ], otherwise="the line policy only shortens how far a record moves; count the bins a move touches.")


def q4(answer: Any) -> None:
    """Δ of the cumulative histogram under unbounded DP.

    Examples
    --------
    >>> q4(10)
    """
    expected = sensitivity("cumulative", "dp")
    judge(answer, expected, question="q4 (cumulative histogram, unbounded DP)", mistakes=[
        Mistake(expected - 1, "check which end counts: list the cumulative counts one by one and ask of each "
                              "whether it includes the lowest bin."),
        Mistake(sensitivity("histogram", "dp"), "that is the histogram's; a cumulative count adds up every bin "
                                                "up to its own, so one record is counted many times."),
    ], otherwise="add a record to the lowest bin: how many cumulative counts include it?")


def q5(answer: Any) -> None:
    """Δ of the cumulative histogram under bounded DP.

    Examples
    --------
    >>> q5(9)
    """
    expected = sensitivity("cumulative", "bounded")
    judge(answer, expected, question="q5 (cumulative histogram, bounded DP)", mistakes=[
        Mistake(sensitivity("cumulative", "dp"), "a move keeps the number of records: the last cumulative count "
                                                 "(the total) does not change."),
        Mistake(2 * expected, "each cumulative count changes by at most one when a record moves; the leaving "
                              "and the arriving cancel in the counts that include both bins."),
        Mistake(sensitivity("histogram", "bounded"), "that is the histogram's; try moving a record from the "
                                                     "lowest bin to the highest one."),
    ], otherwise="move a record from the lowest bin to the highest: which cumulative counts change?")


def q6(answer: Any) -> None:
    """Δ of the cumulative histogram under the line policy.

    Examples
    --------
    >>> q6(1)
    """
    judge(answer, sensitivity("cumulative", "line"), question="q6 (cumulative histogram, line policy)", mistakes=[
        Mistake(sensitivity("histogram", "line"), "that is the histogram's; a move to the next bin changes "
                                                  "only the cumulative counts that include one bin but not the "
                                                  "other."),
        Mistake(sensitivity("cumulative", "bounded"), "that is bounded DP's; under the line policy a record only "
                                                      "moves to the next bin."),
    ], otherwise="move a record from one bin to the next: which cumulative counts include one but not the other?")


def q7(answer: Any) -> None:
    """Δ of the cumulative histogram under the threshold policy (θ = 3 bins).

    Examples
    --------
    >>> q7(3)
    """
    expected = sensitivity("cumulative", "threshold")
    judge(answer, expected, question="q7 (cumulative histogram, threshold policy)", mistakes=[
        Mistake(sensitivity("cumulative", "line"), "that is the line policy's; with θ a record may jump θ bins."),
        Mistake(expected + 1, "check which end counts: a cumulative count that includes both the bin the "
                              "record leaves and the one it arrives in does not change."),
        Mistake(sensitivity("cumulative", "bounded"), "that is bounded DP's; θ limits how far a record moves."),
    ], otherwise="move a record as far as θ allows: how many cumulative counts lie between the two bins?")


def q8(answer: Any) -> None:
    """Δ of the three ranges of :data:`RANGES` under unbounded DP.

    Examples
    --------
    >>> q8(2)
    """
    expected = sensitivity("ranges", "dp")
    judge(answer, expected, question="q8 (three ranges, unbounded DP)", mistakes=[
        Mistake(1, "some bins lie in more than one of the ranges; a record there is counted by each of them."),
        Mistake(len(RANGES), "no bin lies in all the ranges at once."),
    ], otherwise="add a record in each bin in turn: how many of the ranges count it, at most?")


def q9(answer: Any) -> None:
    """Δ of the three ranges of :data:`RANGES` under bounded DP.

    Examples
    --------
    >>> q9(3)
    """
    expected = sensitivity("ranges", "bounded")
    judge(answer, expected, question="q9 (three ranges, bounded DP)", mistakes=[
        Mistake(sensitivity("ranges", "dp"), "a move both removes and adds: find a move where the ranges the "
                                             "record leaves and the ranges it enters do not cancel."),
        Mistake(2 * sensitivity("ranges", "dp"), "a range containing both the old and the new bin does not "
                                                 "change; and no move can leave two ranges and enter two others."),
    ], otherwise="for a move from bin u to bin v, count the ranges that contain exactly one of u and v.")


def q10(answer: Any) -> None:
    """Δ of the cumulative histogram under the partition :data:`PARTITION_BLOCKS`.

    Examples
    --------
    >>> q10(3)
    """
    expected = sensitivity("cumulative", "partition")
    judge(answer, expected, question="q10 (cumulative histogram, partition)", mistakes=[
        Mistake(sensitivity("cumulative", "bounded"), "a record only moves inside its block: it cannot go from "
                                                      "the lowest bin to the highest."),
        Mistake(max(len(b) for b in PARTITION_BLOCKS), "check which end counts: a cumulative count that "
                                                      "includes both the bin the record leaves and the one it "
                                                      "arrives in does not change."),
        Mistake(sensitivity("cumulative", "line"), "inside a block any two bins are neighbours, not only "
                                                   "adjacent ones."),
    ], otherwise="find the widest block: move a record from its first bin to its last one.")
