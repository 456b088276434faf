"""The shape of a lab's answer key, and what the build makes of it: the public hint tables and the hidden tests.

The answer keys themselves live outside the package, in ``notebooks/labs/key/labNN.py`` (each defines
``questions() -> dict[str, Question]``, computing every expected value and every typical wrong value with the
library). From a key the build writes

* the hint table ``blowfish_nb/labs/hints/labNN.json`` that the student's checks read: salted hashes of known
  mistakes that reveal no answer, and hints; nothing computed from a right answer (:func:`hint_table`, and
  :mod:`blowfish_nb.labs._check` for the rules and what remains);
* the hidden test of each question, with the expected value as a literal, into the autograder only
  (:func:`hidden_test`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ._check import canonical, digest, digits_for, matches

__all__ = ["KEYS", "Wrong", "Part", "Question", "load_key", "hint_table", "hidden_test", "first_attempt_test",
           "revealing", "transforms",
           "MIN_UNRECOGNISED_CHOICES"]

#: where the answer keys live (the repository's ``notebooks/labs/key``; not part of the installed package)
KEYS = Path(__file__).resolve().parents[2] / "notebooks" / "labs" / "key"


@dataclass(frozen=True)
class Wrong:
    """Wrong values a typical mistake produces (one value or several), and the hint shown for them."""

    values: Any
    hint: str
    rtol: float | None = None  # the part's rtol when None


@dataclass(frozen=True)
class Part:
    """One answer variable of a question: its expected value, how it is compared, its hints.

    ``grade`` replaces the standard hidden comparison: a format string of one Python call to a function of
    :mod:`blowfish_nb.labs._grade`, with ``{arg}`` for the answer's name (e.g. ``"expect_pair({arg}, [(4, 5)])"``).
    """

    arg: str
    expected: Any
    otherwise: str
    kind: str = "number"  # number | choice | bool | code (a function the hidden test runs; no hint table entry)
    rtol: float = 1e-6
    mistakes: Sequence[Wrong] = ()
    choices: Sequence[str] = ()
    grade: str | None = None


@dataclass(frozen=True)
class Question:
    """A question: the title shown in its hints, and its parts (answer variables) in the order they are judged.

    ``before``: for a "predict" question, the names the notebook's next cell (the one that runs what was predicted)
    creates. The hidden tests fail while any of them exists: otter grades the question right after its check cell
    (``blowfish_nb.labs.build``), where they do not exist yet, unless the student moved the answer below that cell or
    took the check cell's grading mark away, so that the answer could be copied from the result.
    """

    title: str
    parts: Sequence[Part] = field(default_factory=tuple)
    before: Sequence[str] = ()


def load_key(lab: str, keys: Path | None = None) -> dict[str, Question]:
    """The questions of lab ``lab`` (e.g. ``"lab02"``) from its answer key ``notebooks/labs/key/labNN.py``.

    Computed once per process for each version of the key file (its path, size and modification time): a key
    computes its values with the library (lab 8's runs the strategy optimiser for tens of seconds), and the build
    and the tests ask for the same key many times. The questions are frozen dataclasses; each call returns a new
    dict of them.
    """
    path = ((keys or KEYS) / f"{lab}.py").resolve()
    stat = path.stat()
    return dict(_questions(lab, str(path), stat.st_size, stat.st_mtime_ns))


@lru_cache(maxsize=32)
def _questions(lab: str, path: str, size: int, mtime_ns: int) -> dict[str, Question]:
    spec = importlib.util.spec_from_file_location(f"_blowfish_lab_key_{lab}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.questions()


def _salt(lab: str, question: str, arg: str) -> str:
    return hashlib.sha256(f"blowfish_nb labs {lab} {question} {arg}".encode()).hexdigest()[:16]


def _entry(values: Any, kind: str, rtol: float, salt: str) -> dict:
    many = values if isinstance(values, (list, tuple, set, frozenset)) else [values]
    digits = digits_for(rtol)
    texts = {canonical(v, kind, digits) for v in many}
    return {"rtol": rtol, "hashes": sorted(digest(salt, t) for t in texts if t is not None)}


#: a choice question recognises mistakes only while this many choices (the right one among them) stay unrecognised
MIN_UNRECOGNISED_CHOICES = 3


def transforms(a: float, constants: Sequence[float] = ()) -> list[float]:
    """The simple invertible functions of a right answer ``a`` that no hint table may hash (rule 2 of
    :mod:`blowfish_nb.labs._check`): ``a`` itself, ``a ± 1``, ``a ± 2``, ``k·a`` and ``a/k`` (k = 2, 3, 4, 10),
    ``−a``, ``1/a``, ``a²``, ``√a``, ``e^a``, ``ln a``, and ``a ± c``, ``c·a``, ``a/c``, ``c/a``, ``c − a`` for each
    public constant ``c``.

    Examples
    --------
    >>> sorted(transforms(2.0))[:4]
    [-2.0, 0.0, 0.2, 0.5]
    """
    x = float(a)
    if not math.isfinite(x):
        return [x]
    out = [x, x + 1, x - 1, x + 2, x - 2, -x, x * x]
    for k in (2, 3, 4, 10):
        out += [k * x, x / k]
    if x != 0:
        out.append(1 / x)
    if x >= 0:
        out.append(math.sqrt(x))
    if x > 0:
        out.append(math.log(x))
    if x < 700:
        out.append(math.exp(x))
    for c in constants:
        c = float(c)
        if not math.isfinite(c) or c in (0.0, 1.0):
            continue
        out += [x + c, x - c, c - x, c * x, x / c]
        if x != 0:
            out.append(c / x)
    return out


def revealing(values: Any, kind: str, rtol: float, salt: str, answers: Sequence[float],
              constants: Sequence[float] = ()) -> bool:
    """Whether a mistake's ``values`` (hashed at ``rtol`` with ``salt``) would let a search recover one of the lab's
    numeric right ``answers``: one of them, or one of its :func:`transforms`, meets the mistake's hashes.

    Examples
    --------
    >>> revealing(4, "number", 1e-6, "s", [2.0]), revealing(7, "number", 1e-6, "s", [2.0])
    (True, False)
    """
    if kind != "number":
        return False
    entry = _entry(values, kind, rtol, salt)
    return any(matches(t, entry, kind, salt) for a in answers for t in transforms(a, constants))


def numeric_answers(questions: dict[str, Question]) -> list[float]:
    """Every numeric right answer of a lab's key (graded by value or, like a Monte-Carlo estimate, around it)."""
    found = []
    for q in questions.values():
        for part in q.parts:
            if part.kind == "number" and isinstance(part.expected, (int, float)) and not isinstance(part.expected, bool):
                found.append(float(part.expected))
    return found


def public_constants(lab: str) -> list[float]:
    """The numbers of lab ``lab``'s public setting: its module's upper-case scalar constants (ε, θ, a budget; not
    the cells listed in a tuple, whose small integers would make every small-integer mistake look revealing)."""
    from importlib import import_module

    module = import_module(f"blowfish_nb.labs.{lab}")
    found: set[float] = set()

    def walk(v: Any) -> None:
        if isinstance(v, bool):
            return
        if isinstance(v, (int, float)):
            found.add(float(v))

    for name in dir(module):
        if name.isupper():
            walk(getattr(module, name))
    return sorted(found)


def kept_mistakes(lab: str, name: str, part: Part, answers: Sequence[float],
                  constants: Sequence[float]) -> list[Wrong]:
    """The mistakes of ``part`` that its hint table may recognise (rules 1–3 of :mod:`blowfish_nb.labs._check`)."""
    if part.kind == "bool":
        return []
    salt = _salt(lab, name, part.arg)
    if part.kind == "choice":
        kept, choices = [], [c.lower() for c in part.choices]
        for m in part.mistakes:
            many = m.values if isinstance(m.values, (list, tuple, set, frozenset)) else [m.values]
            named = {str(v).strip().lower() for v in many}
            if str(part.expected).strip().lower() in named:
                continue
            if choices:
                taken = {str(v).strip().lower() for k in kept for v in
                         (k.values if isinstance(k.values, (list, tuple, set, frozenset)) else [k.values])}
                if len(set(choices) - taken - named) < MIN_UNRECOGNISED_CHOICES:
                    continue
            kept.append(m)
        return kept
    public = [0.0, 1.0, *constants]
    kept = []
    for m in part.mistakes:
        rtol = m.rtol or part.rtol
        entry = _entry(m.values, part.kind, rtol, salt)
        if any(matches(a, entry, part.kind, salt) for a in answers):
            continue  # a right answer of the lab itself, within the tolerance, even 0, 1 or a constant: its hint
            # ("that is Δ under DP") would name another question's answer, or give this one a mistake's hint
        if not revealing(m.values, part.kind, rtol, salt, answers, constants) or (
                _all_public(m.values, public) and not _next_to_a_whole_answer(m.values, _own(part))):
            kept.append(m)
    return kept


def _own(part: Part) -> list[float]:
    """The part's own expected value, when it is one plain number."""
    e = part.expected
    return [float(e)] if isinstance(e, (int, float)) and not isinstance(e, bool) else []


def _next_to_a_whole_answer(values: Any, answers: Sequence[float]) -> bool:
    """Whether a value is within 2 of a whole-number answer of its own question: a public value there still narrows
    a small range (lab 9 q3: recognising 0, 1 and 3 of 0–3 left only the answer, a student's review found)."""
    many = values if isinstance(values, (list, tuple, set, frozenset)) else [values]
    whole = [float(a) for a in answers if math.isfinite(float(a)) and float(a) == round(float(a))]
    try:
        return any(0 < abs(float(v) - a) <= 2 for v in many for a in whole)
    except (TypeError, ValueError):
        return False


def _all_public(values: Any, public: Sequence[float]) -> bool:
    """Whether every value of a mistake is 0, 1 or a constant of the lab's setting: a student knows it without the
    table, so recognising it tells only that the answer is not that value (the inherent cost of any hint)."""
    many = values if isinstance(values, (list, tuple, set, frozenset)) else [values]
    try:
        return all(any(math.isclose(float(v), c, rel_tol=1e-9, abs_tol=1e-12) for c in public) for v in many)
    except (TypeError, ValueError):
        return False


def hint_table(lab: str, questions: dict[str, Question], args: dict[str, list[str]]) -> dict:
    """The student-facing table of a lab: for each question its title, answer names and per part its kind, salt,
    the salted hashes of the mistakes that reveal no answer (:func:`kept_mistakes`) with their hints, and the
    general hint. Nothing computed from a right answer. ``args`` maps each question to the names its check reads
    from the notebook (the test cell's arguments)."""
    answers = numeric_answers(questions)
    try:
        constants = public_constants(lab)
    except ImportError:  # a test's made-up lab
        constants = []
    table = {}
    for name, q in questions.items():
        parts = []
        for part in q.parts:
            salt = _salt(lab, name, part.arg)
            mistakes = [{**_entry(m.values, part.kind, m.rtol or part.rtol, salt), "hint": m.hint}
                        for m in kept_mistakes(lab, name, part, answers, constants)]
            parts.append({
                "arg": part.arg, "kind": part.kind, "salt": salt,
                "mistakes": mistakes, "otherwise": part.otherwise,
                **({"choices": [c.lower() for c in part.choices]} if part.choices else {}),
            })
        table[name] = {"title": q.title, "args": args.get(name, [p.arg for p in q.parts]), "parts": parts}
    return {"lab": lab, "questions": table}


def hidden_test(question: str, q: Question, index: int, part: Part) -> str:
    """The source of one hidden, exception-based otter test: the student's answer against a literal.

    A failing test shows nothing that holds the expected value (issue 26, leak37). otter reports a failing test
    case by the one source line of the test function where the exception left it (``_generate_error_message``
    of ``otter.test_files.exception_test``: the test file's line at ``tb_next.tb_next.tb_lineno``) and the
    exception's message, in ``results.json``, its printed summary and what Gradescope shows; a teacher who
    forwards them would hand every wrong answer's expected value to the student. So the comparison with the
    literal is only defined on its own line (a ``lambda`` that cannot raise there), run by :func:`_verdict`,
    which never raises and returns the short reason alone; the test raises a new exception of that reason (an
    ``AssertionError``, or the built-in class the comparison raised) from a line without a literal, outside any
    ``except`` block (no exception chain, no frame of the comparison in its traceback). The literal stays in the
    test's source: nothing is looked up in the student's namespace. (otter keeps that source in its results
    pickle, ``results.pkl``, which is the teacher's, as the autograder zip is.)

    Examples
    --------
    >>> env = {}
    >>> exec(hidden_test("q1", Question("q1", [Part("answer", 42, otherwise="")]), 0,
    ...                  Part("answer", 42, otherwise="")), env)
    >>> env["test_q1_0"](42)
    >>> import traceback
    >>> try:
    ...     env["test_q1_0"](41)
    ... except AssertionError as e:
    ...     print(e, "42" in "".join(traceback.format_exception(e)))
    wrong False
    """
    if part.grade is not None:
        call = part.grade.format(arg=part.arg)
    elif part.kind == "choice":
        call = f"expect_choice({part.arg}, {str(part.expected).strip().lower()!r})"
    elif part.kind == "bool":
        call = f"expect_bool({part.arg}, {bool(part.expected)!r})"
    else:
        x = float(part.expected)
        literal = "float('inf')" if math.isinf(x) else repr(x)
        call = f"expect_number({part.arg}, {literal}, rtol={part.rtol!r})"
    fn = call.split("(", 1)[0]
    names = ", ".join([part.arg, *q.before])
    order = "".join(f"    if {n} is not None:\n        raise AssertionError('answered after the result was shown')\n"
                    for n in q.before)
    return (f"# HIDDEN\ndef test_{question}_{index}({names}):\n{order}"
            f"    _grade = {{}}\n"
            f"    exec({_hidden_source()!r}, _grade)\n"
            f"    {fn} = _grade[{fn!r}]\n"
            f"    _judge = lambda: {call}\n"
            f"    _kind, _why = _grade['_verdict'](_judge)\n"
            f"    if _kind is not None:\n"
            f"        raise _kind(_why)\n")


def _verdict(judge):
    """Why ``judge()`` (a hidden test's comparison with its literal) fails: the exception class to raise and a short
    reason, or ``(None, None)`` when it passes. Never raises.

    The reason is the message of an ``AssertionError`` of the comparisons (``"wrong"``, ``"not a plain number"``,
    a noise verdict's reason), of a grading proxy's ``RuntimeError`` about the answer's own function
    (:class:`blowfish_nb.labs._answers.CodeProxy`: ``"the answer raised …"``), or else ``"raised while grading"`` (the
    exception's class tells its type): an error raised inside a comparison could quote the expected value in its
    message. The class is the exception's
    when it is a built-in one (a ``TypeError`` stays a ``TypeError``), else ``AssertionError``. Its source is carried
    by every hidden test (:func:`hidden_test`) and runs in the test's own namespace.

    Examples
    --------
    >>> _verdict(lambda: None), _verdict(lambda: 1 / 0)
    ((None, None), (<class 'ZeroDivisionError'>, 'raised while grading'))
    """
    import builtins

    try:
        judge()
        return None, None
    except BaseException as e:  # noqa: BLE001 - a failed comparison, whatever it raised, fails the test
        error = e
    kind = type(error)
    args = error.args if kind in (AssertionError, RuntimeError) else ()
    text = args[0] if len(args) == 1 and type(args[0]) is str else ""
    if kind is AssertionError:
        return AssertionError, text or "wrong"
    if kind is RuntimeError and text.startswith(("the answer ", "malformed ")):
        return RuntimeError, text
    name = type.__dict__["__name__"].__get__(kind)  # no property of the class's own
    if getattr(builtins, name, None) is not kind:  # not a built-in exception: nothing of it is run or shown
        return AssertionError, "error while grading"
    why = "raised while grading"
    try:
        kind(why)
    except BaseException:  # noqa: BLE001 - a built-in exception that takes other arguments (UnicodeDecodeError)
        return AssertionError, why
    return kind, why


def first_attempt_test(question: str, args: Sequence[str]) -> str:
    """The source of a "predict" question's report test (the build gives it no points): it passes when the first
    attempt the submitted notebook records (its check cell's saved output) is the answer graded, and otherwise fails
    with both, so that the teacher reads them in otter's results (:func:`blowfish_nb.labs._grade.expect_first_attempt`).
    """
    names = ", ".join(args)
    return (f"# HIDDEN\ndef test_{question}_first_attempt({names}):\n"
            f"    _grade = {{}}\n"
            f"    exec({_hidden_source()!r}, _grade)\n"
            f"    _grade['expect_first_attempt']({question!r}, [{names}])\n")


@lru_cache(maxsize=1)
def _grade_source() -> str:
    """The source of :mod:`blowfish_nb.labs._grade`, which each hidden test carries and runs in a namespace of its
    own: the hidden tests run in the student's kernel (otter's design), and a notebook that replaces the installed
    module's functions (``blowfish_nb.labs._grade.expect_number = ...``) no longer grades itself."""
    return (Path(__file__).resolve().parent / "_grade.py").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _hidden_source() -> str:
    """What each hidden test runs in its own namespace: :func:`_grade_source` and :func:`_verdict`."""
    import inspect

    return _grade_source() + "\n\n" + inspect.getsource(_verdict)


def public_test(lab: str, question: str, args: Sequence[str]) -> str:
    """The source of a question's public otter test (no points): the student module's hint check."""
    names = ", ".join(args)
    return (f"def test_{question}({names}):\n"
            f"    from blowfish_nb.labs import {lab}\n"
            f"    {lab}.{question}({names})\n")
