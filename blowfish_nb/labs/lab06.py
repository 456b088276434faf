"""Checks for lab 6, "Spending a budget": sessions, composition, (α, β) → ε and the analyst panel.

Every check computes its answer with the library (a session, its quote, the policy's parallel composition) and
hands it to :func:`~blowfish_nb.labs._check.judge` with the mistakes a student typically makes.

Examples
--------
>>> from blowfish_nb.labs import lab06
>>> lab06.q1(sum(lab06.RELEASES))
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from .. import constraints as C
from ..accounting import Session
from ..datasets import salaries
from ..domain import Domain
from ..exceptions import BudgetExceededError, PolicyError
from ..policy import constrained, line, partition
from ..workload import identity
from ._check import Mistake, judge, unanswered

__all__ = ["data", "session", "RELEASES", "BUDGET", "OVERSPEND", "ACCURACY", "BLOCKS", "BLOCK_EPSILONS",
           "q1", "q2", "q3", "q4a", "q4b", "q5", "unanswered", "sequential_total", "spent_after_refusal",
           "laplace_quote", "histogram_sensitivity", "parallel_total", "halving_ratio"]

#: the session's total ε
BUDGET = 1.0
#: the ε of the three releases of question 1, in order
RELEASES = (0.1, 0.25, 0.2)
#: the ε of the release question 2 attempts once the three are spent
OVERSPEND = 0.6
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


# -- the library's answers ---------------------------------------------------------------------------------------
def sequential_total(epsilons: Sequence[float] = RELEASES) -> float:
    """What a session has spent after releases with these ε (it runs them)."""
    s = session(budget=max(BUDGET, 2 * sum(epsilons)))
    for i, e in enumerate(epsilons):
        s.release("histogram", "age", epsilon=e, rng=i)
    return s.spent


def spent_after_refusal() -> float:
    """What the session has spent after the releases of question 1 and a refused release of ε = OVERSPEND."""
    s = session()
    for i, e in enumerate(RELEASES):
        s.release("histogram", "age", epsilon=e, rng=i)
    try:
        s.release("histogram", "age", epsilon=OVERSPEND, rng=99)
    except BudgetExceededError:
        pass
    return s.spent


def laplace_quote(alpha: float = ACCURACY[0], beta: float = ACCURACY[1], policy="line") -> float:
    """The session's quote for an (α, β)-accurate age histogram with the Laplace mechanism."""
    return float(session(policy).quote("histogram", "age", accuracy=(alpha, beta), mechanism="laplace").epsilon)


def histogram_sensitivity(policy_name: str = "line") -> float:
    """Δ of the session's age histogram under ``policy_name`` (the library's policy sensitivity).

    Examples
    --------
    >>> histogram_sensitivity()
    2.0
    """
    return float(session(policy_name).column_policy("age").sensitivity(identity(session().attribute("age").size)))


def parallel_total(policy_name: str) -> float:
    """Total ε of the two group releases of question 4 under ``"partition"`` (young | old) or ``"line"``.

    He et al. 2014 Thm 4.3 through :meth:`~blowfish_nb.policy.constrained.Constrained.parallel_epsilon` (the
    groups' sizes known); where it refuses, sequential composition (the sum) is all that holds.
    """
    d = Domain([session().attribute("age")])
    blocks = [list(b) for b in BLOCKS]
    g = partition(d, blocks) if policy_name == "partition" else line(d)
    known = C.combine(*(C.count(d, b, f"group {i}") for i, b in enumerate(blocks)))
    try:
        return constrained(g, known).parallel_epsilon(blocks, BLOCK_EPSILONS)
    except PolicyError:
        return math.fsum(BLOCK_EPSILONS)


def halving_ratio(alpha: float = ACCURACY[0], beta: float = ACCURACY[1]) -> float:
    """ε for (α/2, β) over ε for (α, β), as the analyst panel quotes them (the session's choice of mechanism)."""
    s = session()
    return float(s.quote("histogram", "age", accuracy=(alpha / 2, beta)).epsilon
                 / s.quote("histogram", "age", accuracy=(alpha, beta)).epsilon)


# -- the checks ----------------------------------------------------------------------------------------------------
def q1(total: float) -> None:
    """Question 1: the ε spent after the releases :data:`RELEASES` on one session.

    Examples
    --------
    >>> q1(sum(RELEASES))
    """
    expected = sequential_total()
    judge(total, expected, question="q1 (ε spent after three releases)", mistakes=[
        Mistake(max(RELEASES), "the releases all read the same people's records: an adversary combines what "
                               "each one tells. Revisit sequential composition (He et al. Thm 4.1)."),
        Mistake(RELEASES[-1], "the session does not forget earlier releases: each one leaks something of its own."),
        Mistake(sum(RELEASES) / len(RELEASES), "composition does not average the ε: every release adds its own "
                                                "privacy loss."),
        Mistake(BUDGET - sum(RELEASES), "that is what is left of the budget; the question asks what was spent."),
    ], otherwise="look at the ledger: what does one release add to `spent`?")


def q2(spent: float) -> None:
    """Question 2: ``spent`` after a release of ε = :data:`OVERSPEND` is attempted once the three are spent.

    Examples
    --------
    >>> q2(sum(RELEASES))
    """
    expected = spent_after_refusal()
    judge(spent, expected, question="q2 (spent after a release the budget cannot pay for)", mistakes=[
        Mistake(sum(RELEASES) + OVERSPEND, "the session checks the budget *before* it reads any data; a release it "
                                           "cannot pay for is refused. Does a refusal cost anything?"),
        Mistake(BUDGET, "a session never runs a release with less ε than asked (the accuracy would not be what "
                        "was asked for); it refuses it whole."),
        Mistake(OVERSPEND, "the earlier releases stay in the ledger; a refused one adds nothing to it."),
    ], otherwise="a refused release raises BudgetExceededError: what does the ledger hold afterwards?")


def q3(epsilon: float, delta: float) -> None:
    """Question 3: ``delta``, the age histogram's Δ under the line policy, and ``epsilon``, the ε an (α, β) =
    :data:`ACCURACY` age histogram needs with Laplace noise under that policy.

    ``delta`` is judged first (exactly: it is the library's Δ); ``epsilon`` passes within :data:`FORMULA_RTOL` of
    the library's quote (the continuous-Laplace formula of the lab against the library's exact discrete-Laplace
    solution).

    Examples
    --------
    >>> q3(laplace_quote(), histogram_sensitivity())
    """
    judge(delta, histogram_sensitivity(), question="q3 (Δ of the age histogram under the line policy)", mistakes=[
        Mistake(1, "that is Δ of plain DP (adding or removing one person changes one count by one). Under the line "
                   "policy a person *moves* to a neighbouring bin: how many counts change, and by how much? (the "
                   "lab 'Sensitivity by hand')"),
    ], otherwise="Δ is a number: the largest L1 change of the histogram when one person moves along one edge of "
                 "the line policy (the lab 'Sensitivity by hand').")
    expected = laplace_quote()
    k = session().attribute("age").size
    alpha, beta = ACCURACY
    one = -math.log(-math.expm1(math.log1p(-beta) / k))  # ln 1/p with p = 1 − (1 − β)^{1/k}

    def near(value: float):
        return lambda a: _close(a, value, FORMULA_RTOL)

    judge(epsilon, expected, question="q3 (ε for an (α, β)-accurate histogram)", rtol=FORMULA_RTOL, mistakes=[
        Mistake(near(one / alpha), "that is the ε of plain DP (one count changes). Under the line policy a person "
                                   "moves to a neighbouring bin: did your formula use the Δ you found?"),
        Mistake(near(2 * math.log(1 / beta) / alpha), "α must hold for *every* answer at once: with k answers each "
                                                      "one may fail only with a much smaller probability than β."),
        Mistake(near(math.log(1 / beta) / alpha), "two things are missing: the line policy's sensitivity, and that "
                                                  "all k answers must be within α at once."),
        Mistake(near(alpha / (2 * one)), "ε is upside down: a larger α (looser accuracy) must need *less* ε."),
    ], otherwise="write P(one answer is off by more than α) for Laplace noise of scale Δ/ε, make all k answers "
                 "succeed with probability 1 − β, and solve for ε.")


def q4a(total: float) -> None:
    """Question 4a: total ε of the young (ε 0.3) and old (ε 0.5) histograms under the partition policy young | old.

    Examples
    --------
    >>> q4a(max(BLOCK_EPSILONS))
    """
    judge(total, parallel_total("partition"), question="q4a (two groups, partition policy)", mistakes=[
        Mistake(sum(BLOCK_EPSILONS), "no edge of this policy joins a young bin to an old one, and the group sizes "
                                     "are public: no one's record can appear in both releases. Revisit parallel "
                                     "composition (He et al. Thms 4.2–4.3)."),
        Mistake(min(BLOCK_EPSILONS), "each person is in one group, and the guarantee must hold for everyone: who "
                                     "is protected least?"),
    ], otherwise="a person's record is in exactly one of the two groups; which release can it affect?")


def q4b(total: float) -> None:
    """Question 4b: the same two releases under the line policy.

    Examples
    --------
    >>> q4b(sum(BLOCK_EPSILONS))
    """
    judge(total, parallel_total("line"), question="q4b (two groups, line policy)", mistakes=[
        Mistake(max(BLOCK_EPSILONS), "under the line policy a person aged 37 may move to 38 or 39: a move across "
                                     "the boundary changes *both* releases. Parallel composition needs groups "
                                     "that no edge of the policy crosses."),
        Mistake(min(BLOCK_EPSILONS), "each person is in one group, but can a move along the policy take them into "
                                     "the other?"),
    ], otherwise="can one edge of the line policy join a young bin to an old one?")


def q5(ratio: float) -> None:
    """Question 5: how many times more ε an answer twice as accurate (α halved, same β) costs.

    Examples
    --------
    >>> q5(halving_ratio())
    """
    judge(ratio, halving_ratio(), question="q5 (ε for α halved)", rtol=FORMULA_RTOL, mistakes=[
        Mistake(lambda a: _close(a, 4.0, 0.1), "that would be so if ε set the noise's variance; it sets its width "
                                               "(scale Δ/ε), and α is a width too."),
        Mistake(lambda a: _close(a, 0.5, 0.1), "a tighter α needs less noise, and less noise costs *more* ε."),
        Mistake(lambda a: _close(a, 1.0, 0.05), "type the two α into the panel (or quote both): the ε changes."),
    ], otherwise="quote both accuracies (panel or `s.quote(..., accuracy=...)`) and divide.")


def _close(a, b: float, rtol: float) -> bool:
    try:
        a = float(a)
    except (TypeError, ValueError):
        return False
    return math.isfinite(a) and abs(a - b) <= rtol * abs(b)
