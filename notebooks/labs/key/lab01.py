"""Answer key of lab 1, "Neighbours and policies" (He et al. 2014, §3–4 and Eq. 9). Teachers only."""

from __future__ import annotations

import math

from blowfish_nb import policy
from blowfish_nb.labs._key import Part, Question, Wrong
from blowfish_nb.labs.lab01 import DEPARTMENTS, EPSILON, PARTITION_BLOCKS, salary_department_domain, salary_domain
from blowfish_nb.policy.edit import add_edges

_U, _V, _FAR, _THETA, _NEW_EDGE = 1, 4, 8, 2, (1, 6)
_ROUNDED = 1e-3


def questions() -> dict[str, Question]:
    d = salary_domain()
    line, dp, bounded = policy.line(d), policy.dp(d), policy.bounded(d)
    q = {}
    e1 = line.distance(_U, _V)
    q["q1"] = Question("q1 (distance under the line policy)", [Part("d_line", e1, mistakes=[
        Wrong(e1 + 1, "you counted the cells on the way, ends included; d_G counts the edges (moves) between them."),
        Wrong(1, "under the line policy a record may only move to a neighbouring bin in one step; how many steps "
                 "does it take to get from the one value to the other?"),
    ], otherwise="the line policy joins each salary bin to the next one only: count the edges on the path.")])
    q["q2"] = Question("q2 (distance under unbounded DP)", [Part("d_dp", dp.distance(_U, _V), mistakes=[
        Wrong(bounded.distance(_U, _V), "that is bounded DP, where a record may change its value in one step. "
                                        "Unbounded DP only adds or removes a record: every edge goes to the null "
                                        "vertex ⊥."),
        Wrong(line.distance(_U, _V), "that is the line policy's answer; in unbounded DP no edge joins two salary "
                                     "bins, every edge goes through ⊥."),
    ], otherwise="draw the star: each bin is joined to ⊥ only. How many edges from one bin to another?")])
    gap = _FAR - _U
    q["q3"] = Question("q3 (distance under the threshold policy)", [Part(
        "d_threshold", policy.threshold(d, _THETA).distance(_U, _FAR), mistakes=[
            Wrong(gap, "that is the distance under the line policy. Revisit the definition of the threshold "
                       "policy: which bins does a single edge of G_θ join?"),
            Wrong(gap // _THETA, "walk the jumps one by one: does your last jump land on the second value, or "
                                 "short of it?"),
            Wrong(1, "that would make these bins neighbours. Revisit the definition of the threshold policy: "
                  "which bins does a single edge of G_θ join?"),
        ], otherwise="each edge of the threshold policy joins bins at most θ apart: how many such jumps at least?")])
    part = policy.partition(d, [list(b) for b in PARTITION_BLOCKS])
    e4 = math.isfinite(part.distance(_U, _NEW_EDGE[1]))
    q["q4"] = Question("q4 (protection under the partition)", [Part("protected", e4, kind="bool", mistakes=[
        Wrong(not e4, "look at the blocks: is there any path of edges from the one value to the other? A value is "
                      "protected only from the values it can reach."),
    ], otherwise="answer with a Python bool (True or False).")])
    e5 = line.guarantee(_U, _V, EPSILON).bound
    q["q5"] = Question("q5 (the guarantee e^(ε·d))", [Part("bound", e5, rtol=_ROUNDED, mistakes=[
        Wrong(math.exp(EPSILON), "that is the promise for neighbouring values. Revisit how the guarantee depends on "
                                 "the distance d_G between the values."),
        Wrong(EPSILON * e1, "you have the exponent; the bound on the odds ratio is e raised to it."),
        Wrong(dp.guarantee(_U, _V, EPSILON).bound, "that uses the distance under unbounded DP; the question asks "
                                                   "about the line policy."),
    ], otherwise="multiply ε by the number of edges between the two values, then take the exponential.")])
    dom = salary_department_domain()
    a = dom.index((_U, DEPARTMENTS.index("engineering")))
    b = dom.index((_V, DEPARTMENTS.index("research")))
    q["q6"] = Question("q6 (distance under the attribute policy)", [Part(
        "d_attribute", policy.attribute(dom).distance(a, b), mistakes=[
            Wrong(1, "one edge changes one attribute only (to any value of it); these records differ in more."),
            Wrong(e1, "the attribute policy does not walk bin by bin: one edge may change the salary to any bin."),
        ], otherwise="count the attributes in which the two records differ.")])
    candidates = {"dp": dp, "bounded": bounded, "line": line, "threshold": policy.threshold(d, _THETA),
                  "partition": part}
    k = d.size
    close = [(i, j) for i in range(k) for j in range(i + 1, min(i + _THETA, k - 1) + 1)]
    fits = [n for n, p in candidates.items()
            if all(p.distance(i, j) == 1 for i, j in close) and p.distance(0, k - 1) > 1 and not p.has_bottom]
    hints7 = {
        "dp": "in unbounded DP a record may vanish: the number of employees would be secret too.",
        "bounded": "bounded DP makes every pair of bins neighbours, the lowest and highest included.",
        "line": "under the line policy, bins two apart are two edges apart, not neighbours.",
        "partition": "look at the boundary between the blocks: two bins on either side of it are close but not "
                     "neighbours.",
        "threshold": "under the threshold policy bins up to θ apart are neighbours: check each wish against it.",
    }
    q["q7"] = Question("q7 (which policy?)", [Part(
        "which_policy", fits[0], kind="choice", choices=tuple(candidates),
        mistakes=[Wrong(n, h) for n, h in hints7.items() if n != fits[0]],
        otherwise="answer with the name of one policy family from the list in the question, as a string.")])
    q["q8"] = Question("q8 (distance after your edit)", [Part(
        "d_edited", add_edges(line, [_NEW_EDGE]).distance(_U, _FAR), mistakes=[
            Wrong(line.distance(_U, _FAR), "that is the distance before the edit: the new edge is a shortcut."),
            Wrong(1, "the new edge does not reach the second value itself; add the steps after the shortcut."),
        ], otherwise="take the new edge, then walk along the line: count every edge of the shortest path.")])
    return q
