"""The shape of a lab's answer key, and what the build makes of it: the public hint tables and the hidden tests.

The answer keys themselves live outside the package, in ``notebooks/labs/key/labNN.py`` (each defines
``questions() -> dict[str, Question]``, computing every expected value and every typical wrong value with the
library). From a key the build writes

* the hint table ``blowfish_nb/labs/hints/labNN.json`` that the student's checks read: salted hashes and hints,
  no value (:func:`hint_table`);
* the hidden test of each question, with the expected value as a literal, into the autograder only
  (:func:`hidden_test`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._check import canonical, digest, digits_for

__all__ = ["KEYS", "Wrong", "Part", "Question", "load_key", "hint_table", "hidden_test"]

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
    kind: str = "number"  # number | choice | bool
    rtol: float = 1e-6
    mistakes: Sequence[Wrong] = ()
    choices: Sequence[str] = ()
    grade: str | None = None


@dataclass(frozen=True)
class Question:
    """A question: the title shown in its hints, and its parts (answer variables) in the order they are judged."""

    title: str
    parts: Sequence[Part] = field(default_factory=tuple)


def load_key(lab: str, keys: Path | None = None) -> dict[str, Question]:
    """The questions of lab ``lab`` (e.g. ``"lab02"``) from its answer key ``notebooks/labs/key/labNN.py``."""
    path = (keys or KEYS) / f"{lab}.py"
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


def hint_table(lab: str, questions: dict[str, Question], args: dict[str, list[str]]) -> dict:
    """The student-facing table of a lab: for each question its title, answer names and per part the salted hashes
    of the right value and of each mistake's values, with the hints. ``args`` maps each question to the names its
    check reads from the notebook (the test cell's arguments)."""
    table = {}
    for name, q in questions.items():
        parts = []
        for part in q.parts:
            salt = _salt(lab, name, part.arg)
            mistakes = [{**_entry(m.values, part.kind, m.rtol or part.rtol, salt), "hint": m.hint}
                        for m in part.mistakes]
            parts.append({
                "arg": part.arg, "kind": part.kind, "salt": salt,
                "right": _entry(part.expected, part.kind, part.rtol, salt),
                "mistakes": mistakes, "otherwise": part.otherwise,
                **({"choices": [c.lower() for c in part.choices]} if part.choices else {}),
            })
        table[name] = {"title": q.title, "args": args.get(name, [p.arg for p in q.parts]), "parts": parts}
    return {"lab": lab, "questions": table}


def hidden_test(question: str, q: Question, index: int, part: Part) -> str:
    """The source of one hidden, exception-based otter test: the student's answer against a literal."""
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
    return (f"# HIDDEN\ndef test_{question}_{index}({part.arg}):\n"
            f"    from blowfish_nb.labs._grade import {fn}\n"
            f"    {call}\n")


def public_test(lab: str, question: str, args: Sequence[str]) -> str:
    """The source of a question's public otter test (no points): the student module's hint check."""
    names = ", ".join(args)
    return (f"def test_{question}({names}):\n"
            f"    from blowfish_nb.labs import {lab}\n"
            f"    {lab}.{question}({names})\n")
