"""Answer key of lab 2, "Sensitivity by hand" (Haney et al. 2015, Lemma 4.5). Teachers only."""

from __future__ import annotations

from blowfish_nb import policy, workload
from blowfish_nb.labs._key import Part, Question, Wrong
from blowfish_nb.labs.lab02 import PARTITION_BLOCKS, RANGES, THETA, salary_domain
from blowfish_nb.ranges import Ranges


def sensitivity(query: str, policy_name: str) -> float:
    """The library's Δ of one of the lab's queries under one of its policies."""
    d = salary_domain()
    k = d.size
    policies = {"dp": policy.dp(d), "bounded": policy.bounded(d), "line": policy.line(d),
                "threshold": policy.threshold(d, THETA),
                "partition": policy.partition(d, [list(b) for b in PARTITION_BLOCKS])}
    lo, hi = zip(*RANGES)
    queries = {"histogram": workload.identity(k), "cumulative": workload.prefix(k), "ranges": Ranges(k, lo, hi)}
    return policies[policy_name].sensitivity(queries[query])


def questions() -> dict[str, Question]:
    s = sensitivity
    q = {}
    q["q1"] = Question("q1 (histogram, unbounded DP)", [Part("delta_hist_dp", s("histogram", "dp"), mistakes=[
        Wrong(s("histogram", "bounded"), "in unbounded DP a neighbour adds or removes one record; it does not move "
                                         "one. How many counts does adding a record change?"),
    ], otherwise="add one record to the data: which bin counts change, and by how much in total?")])
    q["q2"] = Question("q2 (histogram, bounded DP)", [Part("delta_hist_bounded", s("histogram", "bounded"), mistakes=[
        Wrong(s("histogram", "dp"), "a move is not one change: the record leaves one bin and arrives in another."),
    ], otherwise="move one record from one bin to another: add up how much every count changes.")])
    q["q3"] = Question("q3 (histogram, line policy)", [Part("delta_hist_line", s("histogram", "line"), mistakes=[
        Wrong(s("histogram", "dp"), "a short move is still a move: the record leaves one bin and arrives in the next "
                                    "one."),
    ], otherwise="the line policy only shortens how far a record moves; count the bins a move touches.")])
    e4 = s("cumulative", "dp")
    q["q4"] = Question("q4 (cumulative histogram, unbounded DP)", [Part("delta_cum_dp", e4, mistakes=[
        Wrong(e4 - 1, "check which end counts: list the cumulative counts one by one and ask of each whether it "
                      "includes the lowest bin."),
        Wrong(s("histogram", "dp"), "that is the histogram's; a cumulative count adds up every bin up to its own, so "
                                    "one record is counted many times."),
    ], otherwise="add a record to the lowest bin: how many cumulative counts include it?")])
    e5 = s("cumulative", "bounded")
    q["q5"] = Question("q5 (cumulative histogram, bounded DP)", [Part("delta_cum_bounded", e5, mistakes=[
        Wrong(s("cumulative", "dp"), "a move keeps the number of records: the last cumulative count (the total) does "
                                     "not change."),
        Wrong(2 * e5, "each cumulative count changes by at most one when a record moves; the leaving and the arriving "
                      "cancel in the counts that include both bins."),
        Wrong(s("histogram", "bounded"), "that is the histogram's; try moving a record from the lowest bin to the "
                                         "highest one."),
    ], otherwise="move a record from the lowest bin to the highest: which cumulative counts change?")])
    q["q6"] = Question("q6 (cumulative histogram, line policy)", [Part("delta_cum_line", s("cumulative", "line"),
                                                                       mistakes=[
        Wrong(s("histogram", "line"), "that is the histogram's; a move to the next bin changes only the cumulative "
                                      "counts that include one bin but not the other."),
        Wrong(s("cumulative", "bounded"), "that is bounded DP's; under the line policy a record only moves to the "
                                          "next bin."),
    ], otherwise="move a record from one bin to the next: which cumulative counts include one but not the other?")])
    e7 = s("cumulative", "threshold")
    q["q7"] = Question("q7 (cumulative histogram, threshold policy)", [Part("delta_cum_threshold", e7, mistakes=[
        Wrong(s("cumulative", "line"), "that is the line policy's; with θ a record may jump θ bins."),
        Wrong(e7 + 1, "check which end counts: a cumulative count that includes both the bin the record leaves and "
                      "the one it arrives in does not change."),
        Wrong(s("cumulative", "bounded"), "that is bounded DP's; θ limits how far a record moves."),
    ], otherwise="move a record as far as θ allows: how many cumulative counts lie between the two bins?")])
    q["q8"] = Question("q8 (three ranges, unbounded DP)", [Part("delta_ranges_dp", s("ranges", "dp"), mistakes=[
        Wrong(1, "some bins lie in more than one of the ranges; a record there is counted by each of them."),
        Wrong(len(RANGES), "no bin lies in all the ranges at once."),
    ], otherwise="add a record in each bin in turn: how many of the ranges count it, at most?")])
    q["q9"] = Question("q9 (three ranges, bounded DP)", [Part("delta_ranges_bounded", s("ranges", "bounded"),
                                                              mistakes=[
        Wrong(s("ranges", "dp"), "a move both removes and adds: find a move where the ranges the record leaves and "
                                 "the ranges it enters do not cancel."),
        Wrong(2 * s("ranges", "dp"), "a range containing both the old and the new bin does not change; and no move "
                                     "can leave two ranges and enter two others."),
    ], otherwise="for a move from bin u to bin v, count the ranges that contain exactly one of u and v.")])
    q["q10"] = Question("q10 (cumulative histogram, partition)", [Part("delta_cum_partition",
                                                                       s("cumulative", "partition"), mistakes=[
        Wrong(s("cumulative", "bounded"), "a record only moves inside its block: it cannot go from the lowest bin to "
                                          "the highest."),
        Wrong(max(len(b) for b in PARTITION_BLOCKS), "check which end counts: a cumulative count that includes both "
                                                     "the bin the record leaves and the one it arrives in does not "
                                                     "change."),
        Wrong(s("cumulative", "line"), "inside a block any two bins are neighbours, not only adjacent ones."),
    ], otherwise="find the widest block: move a record from its first bin to its last one.")])
    return q
