"""The one way a lab question judges an answer: compare with the library's value, explain a wrong one.

A lab's check function computes the right answer with the library, then calls :func:`judge` with the
mistakes it knows how to recognise (the answer a student gets by using plain DP, by forgetting θ, by counting
a move as one change …), each with a hint that names the idea to revisit without giving the value away.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["LabCheckFailed", "Mistake", "judge", "unanswered"]


class LabCheckFailed(AssertionError):
    """A lab answer is wrong; the message is the hint a student sees (never the expected value).

    An ``AssertionError`` so that otter-grader counts it as a failed test case.
    """


@dataclass(frozen=True)
class Mistake:
    """A recognisable wrong answer and the hint shown for it.

    ``matches`` is either the wrong value the mistake produces (compared like the answer) or a predicate on
    the student's answer.
    """

    matches: Any
    hint: str


def unanswered(answer: Any) -> bool:
    """True while the student has left the ``...`` placeholder of the student notebook in place.

    Examples
    --------
    >>> unanswered(...), unanswered(3)
    (True, False)
    """
    return answer is Ellipsis or answer is None


def judge(
    answer: Any,
    expected: Any,
    *,
    question: str,
    mistakes: Iterable[Mistake] = (),
    otherwise: str,
    rtol: float = 1e-6,
    atol: float = 1e-9,
) -> None:
    """Pass silently when ``answer`` equals ``expected``; raise :class:`LabCheckFailed` with a hint otherwise.

    Parameters
    ----------
    answer : the student's value (number, array-like, bool or string).
    expected : the library's value.
    question : short name shown in the message, e.g. ``"q2a (Δ of the histogram under the line policy)"``.
    mistakes : known wrong answers with their hints, tried in order.
    otherwise : the hint for a wrong answer no mistake explains (a direction to think in, not the value).
    rtol, atol : tolerances for numeric answers.

    Examples
    --------
    >>> judge(2.0, 2, question="q1", otherwise="count the cells one move changes")
    >>> judge(float("inf"), np.inf, question="q2", otherwise="are the two values joined at all?")
    >>> try:
    ...     judge(1, 2, question="q1", mistakes=[Mistake(1, "a move changes two cells")], otherwise="…")
    ... except LabCheckFailed as e:
    ...     print(e)
    q1: not yet. Hint: a move changes two cells
    """
    if unanswered(answer):
        raise LabCheckFailed(f"{question}: replace the `...` with your answer, then run this check again.")
    if _same(answer, expected, rtol, atol):
        return
    for mistake in mistakes:
        m = mistake.matches
        hit = m(answer) if callable(m) and not isinstance(m, type) else _same(answer, m, rtol, atol)
        if hit:
            raise LabCheckFailed(f"{question}: not yet. Hint: {mistake.hint}")
    raise LabCheckFailed(f"{question}: not yet. Hint: {otherwise}")


def _same(a: Any, b: Any, rtol: float, atol: float) -> bool:
    if isinstance(a, str) or isinstance(b, str):  # a choice among named options: case and spaces do not count
        return isinstance(a, str) and isinstance(b, str) and a.strip().lower() == b.strip().lower()
    if isinstance(b, (bool, np.bool_)):  # a yes/no question wants True or False, not 1 or 0
        return isinstance(a, (bool, np.bool_)) and bool(a) == bool(b)
    try:
        x = np.asarray(a, dtype=float)
        y = np.asarray(b, dtype=float)
    except (TypeError, ValueError):
        return False
    if x.shape != y.shape or np.isnan(x).any():
        return False
    # ∞ is a right answer where the library says ∞ (values with no protection from each other)
    inf = np.isinf(y)
    if not np.array_equal(np.isinf(x), inf) or not np.array_equal(x[inf], y[inf]):
        return False
    return bool(np.allclose(x[~inf], y[~inf], rtol=rtol, atol=atol))
