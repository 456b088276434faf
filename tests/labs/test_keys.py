"""The answer keys, the hint tables made from them, and what a student can reach: no answer in the lab modules'
docstrings or their public callables' return values; each key's right value passes its public check."""

from __future__ import annotations

import inspect
import json
import math
import re

import pytest

from blowfish_nb.labs import _check
from blowfish_nb.labs._key import kept_mistakes, load_key, numeric_answers, public_constants
from blowfish_nb.labs.build import HINTS, hints_for, lab_module, lab_sources
from tests.labs import answers, distinctive, hint_of, shown_precisely

SOURCES = {lab_module(p): p for p in lab_sources()}
LABS = sorted(SOURCES)
#: questions whose public check is written by hand (Monte Carlo, a function, an edge), tested in test_labNN.py
CUSTOM = {("lab03", "q3"), ("lab05", "q2"), ("lab05", "q4a"), ("lab09", "q5b")}


@pytest.mark.parametrize("lab", LABS)
def test_the_committed_hint_table_is_current(lab):
    committed = json.loads((HINTS / f"{lab}.json").read_text(encoding="utf-8"))
    assert committed == json.loads(json.dumps(hints_for(SOURCES[lab]))), \
        f"run `python -m blowfish_nb.labs.build --hints` and commit blowfish_nb/labs/hints/{lab}.json"


@pytest.mark.parametrize("lab", LABS)
def test_the_key_right_values_get_no_verdict_and_every_kept_mistake_gets_its_hint(lab):
    """The right values get what any unforeseen answer gets (the check returns quietly: it cannot tell); every
    mistake the build keeps gets its own one-line hint; every mistake it drops gets none."""
    module = __import__(f"blowfish_nb.labs.{lab}", fromlist=["x"])
    table = json.loads((HINTS / f"{lab}.json").read_text(encoding="utf-8"))["questions"]
    questions = load_key(lab)
    answers_, constants = numeric_answers(questions), public_constants(lab)
    for name, q in questions.items():
        if (lab, name) in CUSTOM:
            continue
        right = {p.arg: p.expected for p in q.parts}
        assert getattr(module, name)(*(right[a] for a in table[name]["args"])) is None
        for part in q.parts:
            kept = kept_mistakes(lab, name, part, answers_, constants)
            for mistake in part.mistakes:
                values = mistake.values if isinstance(mistake.values, (list, tuple)) else [mistake.values]
                for v in values:
                    wrong = {**right, part.arg: v}
                    message = hint_of(lambda: getattr(module, name)(*(wrong[a] for a in table[name]["args"])))
                    if mistake in kept:
                        assert message is not None and mistake.hint in message and "\n" not in message, message
                    else:
                        assert message is None or mistake.hint not in message, message


@pytest.mark.parametrize("lab", LABS)
def test_the_hint_table_holds_no_answer(lab):
    text = (HINTS / f"{lab}.json").read_text(encoding="utf-8")
    table = json.loads(text)
    hints = " ".join(m["hint"] for q in table["questions"].values() for p in q["parts"]
                     for m in p["mistakes"]) + " ".join(p["otherwise"] for q in table["questions"].values()
                                                        for p in q["parts"])
    hints = re.sub(r"\[[\d, ]+\]", "", hints)  # a list of the options to choose from (lab 7's sizes)
    for value in answers(lab):
        if distinctive(value):
            assert not shown_precisely(hints, value), value
    assert '"expected"' not in text


def _public(module):
    names = getattr(module, "__all__", [n for n in dir(module) if not n.startswith("_")])
    return {n: getattr(module, n) for n in names}


@pytest.mark.parametrize("lab", LABS)
def test_no_answer_in_a_docstring_or_an_example(lab):
    module = __import__(f"blowfish_nb.labs.{lab}", fromlist=["x"])
    docs = [module.__doc__ or ""] + [inspect.getdoc(obj) or "" for obj in _public(module).values()
                                     if callable(obj) and not isinstance(obj, type)]
    text = "\n".join(docs)
    for value in answers(lab):
        if distinctive(value):
            assert not shown_precisely(text, value), f"{lab}: a docstring shows {value!r}"
    for q in load_key(lab):
        for line in text.splitlines():
            # no example calls a check with a value (an example of the hint for a number typed as text is fine)
            example = line.lstrip().startswith((">>>", "..."))
            assert not (example and re.search(rf"\b{q}\((?!['\"])", line)), f"{lab}: {line}"


def _same(a, b) -> bool:
    if isinstance(b, str) or isinstance(a, str):
        return isinstance(a, str) and isinstance(b, str) and a.strip().lower() == b.strip().lower()
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return False
    return math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-12)


@pytest.mark.parametrize("lab", LABS)
def test_no_public_callable_returns_an_answer(lab):
    """Every public function of the lab module that can be called without arguments is called; no scalar it
    returns equals an answer of the lab (the checks return None)."""
    module = __import__(f"blowfish_nb.labs.{lab}", fromlist=["x"])
    expected = [a for a in answers(lab) if not isinstance(a, bool)]
    called = 0
    for name, obj in _public(module).items():
        if not callable(obj) or isinstance(obj, type):
            continue
        try:
            params = inspect.signature(obj).parameters.values()
        except (TypeError, ValueError):
            continue
        if any(p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
            continue
        try:
            out = obj()
        except _check.LabCheckFailed:
            continue
        called += 1
        results = out if isinstance(out, tuple) else (out,)
        for r in results:
            if isinstance(r, (int, float, str)) and not isinstance(r, bool):
                assert not any(_same(r, a) for a in expected), f"{lab}.{name}() returns an answer: {r!r}"
    assert called > 0
