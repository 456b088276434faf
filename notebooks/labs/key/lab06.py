"""Answer key of lab 6, "Spending a budget": sessions, composition, (α, β) → ε. Teachers only."""

from __future__ import annotations

import math
from collections.abc import Sequence

from blowfish_nb import constraints as C
from blowfish_nb.domain import Domain
from blowfish_nb.exceptions import BudgetExceededError, PolicyError
from blowfish_nb.labs._key import Part, Question, Wrong
from blowfish_nb.labs.lab06 import (ACCURACY, BLOCK_EPSILONS, BLOCKS, BUDGET, FORMULA_RTOL, OVERSPEND, RELEASES,
                                    SMALLER, session)
from blowfish_nb.policy import constrained, line, partition
from blowfish_nb.workload import identity


def sequential_total(epsilons: Sequence[float] = RELEASES) -> float:
    s = session(budget=max(BUDGET, 2 * sum(epsilons)))
    for i, e in enumerate(epsilons):
        s.release("histogram", "age", epsilon=e, rng=i)
    return s.spent


def spent_after_refusal() -> float:
    s = session()
    for i, e in enumerate(RELEASES):
        s.release("histogram", "age", epsilon=e, rng=i)
    try:
        s.release("histogram", "age", epsilon=OVERSPEND, rng=99)
    except BudgetExceededError:
        pass
    s.release("histogram", "age", epsilon=SMALLER, rng=98)
    return s.spent


def parallel_total(policy_name: str) -> float:
    d = Domain([session().attribute("age")])
    blocks = [list(b) for b in BLOCKS]
    g = partition(d, blocks) if policy_name == "partition" else line(d)
    known = C.combine(*(C.count(d, b, f"group {i}") for i, b in enumerate(blocks)))
    try:
        return constrained(g, known).parallel_epsilon(blocks, BLOCK_EPSILONS)
    except PolicyError:
        return math.fsum(BLOCK_EPSILONS)


def laplace_quote(alpha: float = ACCURACY[0], beta: float = ACCURACY[1], policy="line") -> float:
    return float(session(policy).quote("histogram", "age", accuracy=(alpha, beta), mechanism="laplace").epsilon)


def histogram_sensitivity(policy_name: str = "line") -> float:
    s = session(policy_name)
    return float(s.column_policy("age").sensitivity(identity(s.attribute("age").size)))


def halving_ratio(alpha: float = ACCURACY[0], beta: float = ACCURACY[1]) -> float:
    s = session()
    return float(s.quote("histogram", "age", accuracy=(alpha / 2, beta)).epsilon
                 / s.quote("histogram", "age", accuracy=(alpha, beta)).epsilon)


def questions() -> dict[str, Question]:
    q = {}
    q["q1"] = Question("q1 (ε spent after three releases)", [Part("total_spent", sequential_total(), mistakes=[
        Wrong(max(RELEASES), "the releases all read the same people's records: an adversary combines what each one "
                             "tells. Revisit sequential composition (He et al. Thm 4.1)."),
        Wrong(RELEASES[-1], "the session does not forget earlier releases: each one leaks something of its own."),
        Wrong(sum(RELEASES) / len(RELEASES), "composition does not average the ε: every release adds its own privacy "
                                             "loss."),
        Wrong(BUDGET - sum(RELEASES), "that is what is left of the budget; the question asks what was spent."),
    ], otherwise="look at the ledger: what does one release add to `spent`?")], before=("r_second", "r_third"))
    q["q2"] = Question("q2 (spent after a refused release and a smaller one)", [Part(
        "spent_after", spent_after_refusal(), mistakes=[
            Wrong(sum(RELEASES), "the session refused the larger release only: revisit whether a refusal closes the "
                                 "session."),
            Wrong(sum(RELEASES) + OVERSPEND, "the session checks the budget *before* it reads any data: revisit "
                                             "what a refusal charges."),
            Wrong(BUDGET, "a session never runs a release with less ε than asked (the accuracy would not be what was "
                          "asked for). Revisit what a session does with a release the budget cannot pay."),
            Wrong(SMALLER, "that is the last release alone. Revisit what the ledger keeps of earlier releases."),
        ], otherwise="a refused release raises BudgetExceededError: what does the ledger hold afterwards, and after "
                     "the release that fits?")], before=("r_smaller",))
    s = session()
    k = s.attribute("age").size
    delta = histogram_sensitivity()
    alpha, beta = ACCURACY
    quote = laplace_quote()
    one = -math.log(-math.expm1(math.log1p(-beta) / k))  # ln 1/p with p = 1 − (1 − β)^{1/k}
    r = FORMULA_RTOL
    q["q3"] = Question("q3 (Δ and ε for an (α, β)-accurate histogram)", [
        Part("delta", delta, mistakes=[
            Wrong(1, "that is Δ of plain DP (adding or removing one person changes one count by one). Under the line "
                     "policy a person *moves* to a neighbouring bin: how many counts change, and by how much? (the lab "
                     "'Sensitivity by hand')"),
        ], otherwise="Δ is a number: the largest L1 change of the histogram when one person moves along one edge of "
                     "the line policy (the lab 'Sensitivity by hand')."),
        Part("eps_needed", quote, rtol=r, mistakes=[
            Wrong(one / alpha, "that is the ε of plain DP (one count changes). Under the line policy a person moves to "
                               "a neighbouring bin: did your formula use the Δ you found?", rtol=r),
            Wrong(2 * math.log(1 / beta) / alpha, "α must hold for *every* answer at once: with k answers each one may "
                                                  "fail only with a much smaller probability than β.", rtol=r),
            Wrong(math.log(1 / beta) / alpha, "two things are missing: the line policy's sensitivity, and that all k "
                                              "answers must be within α at once.", rtol=r),
            Wrong(alpha / (2 * one), "ε is upside down: a larger α (looser accuracy) must need *less* ε.", rtol=r),
        ], otherwise="write P(one answer is off by more than α) for Laplace noise of scale Δ/ε, make all k answers "
                     "succeed with probability 1 − β, and solve for ε."),
    ])
    q["q4a"] = Question("q4a (two groups, partition policy)", [Part("eps_partition", parallel_total("partition"),
                                                                    mistakes=[
        Wrong(sum(BLOCK_EPSILONS), "no edge of this policy joins a young bin to an old one, and the group sizes are "
                                   "public: no one's record can appear in both releases. Revisit parallel composition "
                                   "(He et al. Thms 4.2–4.3)."),
        Wrong(min(BLOCK_EPSILONS), "each person is in one group, and the guarantee must hold for everyone: who is "
                                   "protected least?"),
    ], otherwise="a person's record is in exactly one of the two groups; which release can it affect?")])
    q["q4b"] = Question("q4b (two groups, line policy)", [Part("eps_line", parallel_total("line"), mistakes=[
        Wrong(max(BLOCK_EPSILONS), "under the line policy a person aged 37 may move to 38 or 39: a move across the "
                                   "boundary changes *both* releases. Parallel composition needs groups that no edge "
                                   "of the policy crosses."),
        Wrong(min(BLOCK_EPSILONS), "each person is in one group, but can a move along the policy take them into the "
                                   "other?"),
    ], otherwise="can one edge of the line policy join a young bin to an old one?")])
    ratio = halving_ratio()
    q["q5"] = Question("q5 (ε for α halved)", [Part("eps_ratio", ratio, rtol=r, mistakes=[
        Wrong(4.0, "that would be so if α followed the noise's variance. Which does α measure, a width of the noise "
                   "or its variance?", rtol=0.1),
        Wrong(0.5, "a tighter α needs less noise, and less noise costs *more* ε.", rtol=0.1),
        Wrong(1.0, "a tighter α leaves less room for noise, and less noise is paid for in ε: it cannot cost the "
                   "same.", rtol=0.02),
    ], otherwise="quote both accuracies (panel or `s.quote(..., accuracy=...)`) and divide.")])
    return q
