"""The student side of a lab check: hints for known mistakes, keyed by salted hashes; no answer; one line.

A lab's public checks know *hints, not answers*. For each question the package ships a table
(``blowfish_nb/labs/hints/labNN.json``, written by ``python -m blowfish_nb.labs.build --hints`` from the answer
key that lives outside the package, in ``notebooks/labs/key/``): per answer variable its kind, a salt, the salted
hashes of the wrong values some typical mistakes produce with the hint for each, and a general hint shown on
request (:meth:`Grader.hint`). The table holds nothing computed from the right answer: no hash of it, no tolerance
around it. Grading never uses these checks: the autograder's hidden tests compare with literal values written at
build time (:mod:`blowfish_nb.labs._grade`).

What a check says
-----------------
* the ``...`` placeholder, or a value of the wrong type (``'1'`` where a number is asked): a one-line hint
  (:class:`LabCheckFailed`); a type needs no answer;
* a value a known mistake produces: :class:`LabCheckFailed` with that mistake's one-line hint, never a value;
* anything else, the right answer and every unforeseen wrong one alike: the check returns quietly (``None``) and
  the notebook's ``grader.check`` shows the line :data:`NOT_RECOGNISED` — no known mistake recognised, the hidden
  tests grade it. A check never says "correct": it cannot tell.

Why the right answer cannot be searched for
-------------------------------------------
The salt is public (it is in the table), so any hash in the table can be inverted by trying candidate values: a
student who enumerates small integers, simple fractions or values rounded to the question's precision recovers
every value the table hashes, in seconds. A table therefore hashes only values that are *not answer-revealing*:

1. no hash of a right answer (of any question of the lab: a mistake of one question may be another's answer);
2. no mistake whose value is a simple invertible function of a right answer of the lab — ``a ± 1``, ``a ± 2``,
   ``k·a`` and ``a/k`` (k = 2, 3, 4, 10), ``−a``, ``1/a``, ``a²``, ``√a``, ``e^a``, ``ln a``, and ``a ± c``,
   ``c·a``, ``a/c``, ``c/a``, ``c − a`` for every public numeric constant ``c`` of the lab module (ε, θ, the budget …):
   "you answered twice the answer" is the same search problem as "you answered the answer". The build drops such a
   mistake (:func:`blowfish_nb.labs._key.kept_mistakes`), whatever the key says, even when the relation is a
   coincidence — unless its value is 0, 1 or a constant of the lab's setting, which a student knows without the
   table (recognising it says only "not this value"), is no right answer of the lab itself (its hint, "that is
   Δ under DP", would name another question's answer) and is not within 2 of its own question's whole-number
   answer (recognising 0, 1 and 3 of a question answered in 0–3 leaves only the answer: lab 9 q3, found by a
   student's review). ``tests/labs/test_no_answer_in_tables.py`` searches every
   installed table for these transforms of every graded answer;
3. a yes/no question recognises no mistake (the other value of a bool *is* the answer), and a question with a
   list of choices recognises mistakes only while at least three choices stay unrecognised (the right one among
   them): the checks never narrow a choice to fewer than three.

What remains (stated on the teacher's page, ``docs/course/teaching.md``): a student who enumerates learns the
values of the known mistakes, so that the answer is none of them (nor a simple transform of one, by rule 2 run
backwards); on a question whose answer is a small integer this narrows the candidates to a handful. No check
confirms a guess, so the guess stays a guess until the hidden tests grade it.

In a notebook, ``grader = Grader("lab02")`` and ``grader.check("q1")`` print one line. Every checked answer's first
attempt is kept in ``labNN-first-attempts.json`` beside the notebook and in the notebook's own metadata when the
kernel can reach it (the teacher collects the notebook: the record of the "predict first" questions; a student can
edit either, see the teacher's page).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from importlib import import_module, resources
from pathlib import Path
from typing import Any

import numpy as np

from ._grade import show_answer

__all__ = ["LabCheckFailed", "Grader", "CheckResult", "public_check", "make_check", "unanswered", "digest",
           "canonical", "NOT_RECOGNISED"]

#: where a lab's first attempts are kept (relative to the notebook's working folder); ``{lab}`` is e.g. lab02
ATTEMPTS_FILE = "{lab}-first-attempts.json"
#: what a check says of an answer it does not recognise as a known mistake (right or wrong: it cannot tell)
NOT_RECOGNISED = "no known mistake recognised; the hidden tests will grade it."
#: steps of the grid of relative offsets tried when a question accepts an answer within ``rtol``
_GRID = 100


class LabCheckFailed(AssertionError):
    """A lab answer is wrong; the message is the one-line hint a student sees (never the expected value).

    An ``AssertionError`` so that otter-grader counts it as a failed test case.
    """


def unanswered(answer: Any) -> bool:
    """True while the student has left the ``...`` placeholder of the student notebook in place.

    Examples
    --------
    >>> unanswered(...), unanswered(3)
    (True, False)
    """
    return answer is Ellipsis or answer is None


def digits_for(rtol: float) -> int:
    """Significant digits at which a value is hashed: the rounding step (relative, at most 10^(1−digits)) no coarser
    than the step rtol/_GRID of the offsets tried, so that an answer within ``rtol`` meets the right hash.

    Examples
    --------
    >>> digits_for(1e-6), digits_for(1e-3), digits_for(0.05)
    (8, 5, 3)
    """
    return max(2, math.floor(math.log10(_GRID / rtol)))


def canonical(value: Any, kind: str, digits: int = 8) -> str | None:
    """The text a value is hashed as: a number to ``digits`` significant digits, a choice lower-cased, a bool.

    ``None`` when ``value`` is not of the question's kind (a number typed as a string, say).

    Examples
    --------
    >>> canonical(3, "number"), canonical(" Line ", "choice"), canonical(False, "bool"), canonical("1", "number")
    ('3', 'line', 'False', None)
    """
    if kind == "choice":
        return value.strip().lower() if isinstance(value, str) else None
    if kind == "bool":
        return str(bool(value)) if isinstance(value, (bool, np.bool_)) else None
    if isinstance(value, (bool, np.bool_, str, bytes)):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x + 0.0:.{digits}g}"  # + 0.0: −0 and 0 are one answer


def digest(salt: str, text: str) -> str:
    """The salted hash a hint table stores for one canonical answer.

    Examples
    --------
    >>> len(digest("lab00/q1", "3"))
    20
    """
    return hashlib.sha256(f"{salt}\x00{text}".encode()).hexdigest()[:20]


def matches(answer: Any, entry: dict, kind: str, salt: str) -> bool:
    """Whether ``answer`` hashes like the table ``entry`` (``{"hashes": [...], "rtol": r}``) within its ``rtol``."""
    rtol = float(entry.get("rtol", 1e-6))
    digits = digits_for(rtol)
    if kind != "number":
        text = canonical(answer, kind)
        return text is not None and digest(salt, text) in entry["hashes"]
    if canonical(answer, kind, digits) is None:
        return False
    x = float(answer)
    offsets = [0.0] if math.isinf(x) else [rtol * i / _GRID for i in range(-_GRID, _GRID + 1)]
    tried = {canonical(x * (1 + t), kind, digits) for t in offsets}
    return any(digest(salt, t) in entry["hashes"] for t in tried if t is not None)


def public_check(lab: str, question: str, *answers: Any) -> None:
    """Look the student's answers to one question up in the lab's hint table: return quietly or raise a one-line hint.

    Parameters
    ----------
    lab : the lab module's name, e.g. ``"lab02"``.
    question : the question's name, e.g. ``"q1"``.
    answers : the values of the question's answer variables, in the order of its table's parts.

    Raises
    ------
    LabCheckFailed
        With the hint for the first part left at ``...``, of the wrong type, or equal to a known mistake.

    Examples
    --------
    >>> try:
    ...     public_check("lab02", "q1", ...)
    ... except LabCheckFailed as e:
    ...     print(e)
    q1 (histogram, unbounded DP): replace the `...` with your answer, then run this check again.
    """
    spec = _table(lab)[question]
    values = dict(zip(spec["args"], answers))
    for part in spec["parts"]:  # in the key's order (e.g. Δ before the ε computed from it)
        _judge_part(part, values.get(part["arg"], answers[0] if len(answers) == 1 else ...), spec["title"])


def make_check(lab: str, question: str):
    """The public check ``labNN.qN(answer, ...)``: :class:`LabCheckFailed` with a one-line hint for a known mistake,
    the placeholder or a wrong type; ``None`` otherwise (no verdict: the hidden tests grade)."""

    def check(*answers: Any) -> None:
        public_check(lab, question, *answers)

    check.__name__ = check.__qualname__ = question
    check.__doc__ = (f"Question {question[1:]}'s check: a one-line hint when your answer is a known mistake; no "
                     f"verdict otherwise (the hidden tests grade).\n\n"
                     f"In the notebook, ``grader.check({question!r})`` runs it on your variables.")
    return check


def _judge_part(part: dict, answer: Any, title: str) -> None:
    kind, salt = part["kind"], part["salt"]
    if unanswered(answer):
        raise LabCheckFailed(f"{title}: replace the `...` with your answer, then run this check again.")
    if canonical(answer, kind) is None:
        raise LabCheckFailed(f"{title}: not yet. Hint: {_kind_hint(answer, part)}")
    for mistake in part["mistakes"]:
        if matches(answer, mistake, kind, salt):
            raise LabCheckFailed(f"{title}: not yet. Hint: {mistake['hint']}")
    if kind == "choice" and part.get("choices") and answer.strip().lower() not in part["choices"]:
        names = ", ".join(repr(c) for c in part["choices"])
        raise LabCheckFailed(f"{title}: not yet. Hint: answer with one of {names}.")


def _kind_hint(answer: Any, part: dict) -> str:
    kind = part["kind"]
    if kind == "number" and isinstance(answer, str):
        return "store a number, not text: remove the quotes around it."
    if kind == "number":
        return "store one number (an int or a float)."
    if kind == "bool":
        return "answer with a Python bool, True or False (not a number or a string)."
    names = ", ".join(repr(c) for c in part.get("choices", []))
    return f"answer with one of {names} (a string)." if names else "answer with a string."


@lru_cache(maxsize=None)
def _table(lab: str) -> dict:
    text = resources.files("blowfish_nb.labs").joinpath("hints", f"{lab}.json").read_text(encoding="utf-8")
    return json.loads(text)["questions"]


@dataclass(frozen=True)
class CheckResult:
    """What ``grader.check`` shows: one line, a hint or :data:`NOT_RECOGNISED` (never "correct").

    ``hinted`` is True when the line is a hint (placeholder, wrong type, known mistake, broken function).
    """

    question: str
    hinted: bool
    message: str
    first_attempt: str | None = None

    def __repr__(self) -> str:
        line = f"{self.question} results: {self.message}"
        if self.first_attempt is not None:
            line += f"\n(first attempt, kept for your teacher: {self.first_attempt})"
        return line

    def _repr_html_(self) -> str:
        import html

        colour = "#9a6700" if self.hinted else "#555555"
        text = "<br>".join(html.escape(s) for s in repr(self).split("\n"))
        return f'<p style="color:{colour};font-family:monospace">{text}</p>'

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The line as text and HTML, and in the output's metadata (saved in the notebook) the first attempt, for a
        teacher's script: ``{"blowfish_nb": {"question": "q1", "first_attempt": "'7'"}}``."""
        data = {"text/plain": repr(self), "text/html": self._repr_html_()}
        meta = {"blowfish_nb": {"question": self.question, "first_attempt": self.first_attempt}}
        return data, meta


class Grader:
    """The student notebook's ``grader``: ``grader.check("q1")`` runs question 1's public check on the notebook's
    variables and shows one line; ``grader.hint("q1")`` shows the question's general hint. Works whatever the
    notebook file is called (renamed, duplicated, downloaded).

    Parameters
    ----------
    lab : the lab module's name, e.g. ``"lab02"``.
    attempts_dir : the folder of the first-attempts file; the working folder (the notebook's) by default.

    Examples
    --------
    >>> import tempfile
    >>> g = Grader("lab02", attempts_dir=tempfile.mkdtemp())
    >>> delta_hist_dp = "1"
    >>> g.check("q1")
    q1 results: q1 (histogram, unbounded DP): not yet. Hint: store a number, not text: remove the quotes around it.
    (first attempt, kept for your teacher: '1')
    >>> delta_hist_dp = 12345
    >>> g.check("q1")
    q1 results: q1 (histogram, unbounded DP): no known mistake recognised; the hidden tests will grade it.
    (first attempt, kept for your teacher: '1')
    """

    def __init__(self, lab: str, attempts_dir: str | os.PathLike | None = None):
        self.lab = lab
        self._attempts = Path(attempts_dir) if attempts_dir is not None else None
        self._module = import_module(f"blowfish_nb.labs.{lab}")

    def check(self, question: str, global_env: dict | None = None) -> CheckResult:
        """Run ``question``'s public check on the caller's variables; never raises for a wrong answer."""
        env = global_env if global_env is not None else inspect.currentframe().f_back.f_globals
        spec = _table(self.lab).get(question)
        if spec is None:
            return CheckResult(question, True, f"{self.lab} has no question {question!r}.")
        answers = [env.get(name, ...) for name in spec["args"]]
        first = self._record(question, answers)
        try:
            getattr(self._module, question)(*answers)
        except LabCheckFailed as e:
            return CheckResult(question, True, str(e), first)
        except Exception as e:  # the student's own code (a function they wrote) broke: one line, no traceback
            return CheckResult(question, True, f"{spec['title']}: your answer raised {type(e).__name__}: {e}", first)
        return CheckResult(question, False, f"{spec['title']}: {NOT_RECOGNISED}", first)

    def hint(self, question: str) -> str:
        """The general hint of ``question`` (the same whatever the answer: it knows no answer).

        Examples
        --------
        >>> Grader("lab01").hint("q1")[:30]
        'q1 (distance under the line po'
        """
        spec = _table(self.lab).get(question)
        if spec is None:
            return f"{self.lab} has no question {question!r}."
        hints = [p.get("otherwise", "") for p in spec["parts"] if p.get("otherwise")]
        return f"{spec['title']}: " + (" ".join(hints) if hints else "no general hint for this question.")

    def _record(self, question: str, answers: list) -> str | None:
        if all(unanswered(a) for a in answers):
            return None
        path = (self._attempts or Path.cwd()) / ATTEMPTS_FILE.format(lab=self.lab)
        try:
            kept = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        except (OSError, ValueError):
            kept = {}
        if question not in kept:
            kept[question] = ", ".join(_show(a) for a in answers)
            try:
                path.write_text(json.dumps(kept, indent=1, sort_keys=True), encoding="utf-8")
            except OSError:
                pass  # a read-only folder: the check still runs
        return kept[question]


#: one writer of the record, shared with the hidden tests that compare it with the graded answer
_show = show_answer
