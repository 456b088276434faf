"""No installed file of blowfish_nb/labs lets a search recover a graded answer (issue 26: "the student-facing module
knows hints, not answers").

The salt of every hint table is public, so a student can hash candidate values and compare. Two attacks, from the
attacker's side (the installed files only; the key gives the graded values to look for):

* every salted hash, in any installed file, of a graded answer of the lab — or of a simple transform of one
  (a ± 1, a ± 2, k·a, a/k, −a, 1/a, a², √a, e^a, ln a, a ± c, c·a, a/c, c/a, c − a with c a public constant of the
  lab) — at every rounding from 2 to 10 significant digits, under every salt of the lab: none may be present;
* a brute-force search over small integers, two- and three-digit values in every decade from 10⁻⁴ to 10⁴, and the
  lab's choice names recovers the values the tables hash: none of them is a graded answer or such a transform.

A value that is 0, 1 or a public constant of the lab may be hashed (a student knows it without the table; its hint
says only "not this value"): see blowfish_nb/labs/_check.py for the rules and docs/course/teaching.md for what
remains.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from blowfish_nb.labs._check import canonical, digest, digits_for
from blowfish_nb.labs._key import load_key, public_constants

LABS = [f"lab{n:02d}" for n in range(1, 10)]
PACKAGE = Path(__file__).resolve().parents[2] / "blowfish_nb" / "labs"
HEX20 = re.compile(r"\b[0-9a-f]{20}\b")


def _family(a: float, constants) -> set[float]:
    """The simple transforms of a graded answer, written out here (not imported from the build)."""
    out = {a, a + 1, a - 1, a + 2, a - 2, -a, a * a, 2 * a, a / 2, 3 * a, a / 3, 4 * a, a / 4, 10 * a, a / 10}
    if a != 0:
        out.add(1 / a)
    if a >= 0:
        out.add(math.sqrt(a))
    if a > 0:
        out.add(math.log(a))
    if a < 700:
        out.add(math.exp(a))
    for c in constants:
        if c in (0.0, 1.0):
            continue
        out |= {a + c, a - c, c - a, c * a, a / c}
        if a != 0:
            out.add(c / a)
    return {x for x in out if math.isfinite(x)}


@lru_cache(maxsize=None)
def _installed_hashes() -> frozenset[str]:
    """Every 20-hex-digit token of every installed text file under blowfish_nb/labs (tables, modules, data)."""
    found = set()
    for path in PACKAGE.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            try:
                found |= set(HEX20.findall(path.read_text(encoding="utf-8")))
            except UnicodeDecodeError:
                continue
    return frozenset(found)


def _tables(lab: str) -> list[dict]:
    table = json.loads((PACKAGE / "hints" / f"{lab}.json").read_text(encoding="utf-8"))["questions"]
    return [part for q in table.values() for part in q["parts"]]


def _graded(lab: str):
    numbers, words = [], []
    for q in load_key(lab).values():
        for part in q.parts:
            if part.kind == "number":
                numbers.append(float(part.expected))
            else:
                words.append(canonical(part.expected, part.kind))
    return numbers, words


def _public(lab: str) -> list[float]:
    return [0.0, 1.0, *public_constants(lab)]


def _known(x: float, public, rtol: float = 1e-9) -> bool:
    return any(math.isclose(x, c, rel_tol=rtol, abs_tol=1e-12) for c in public)


@pytest.mark.parametrize("lab", LABS)
def test_no_installed_hash_is_a_graded_answer_or_a_simple_transform_of_one(lab):
    hashes = _installed_hashes()
    numbers, words = _graded(lab)
    public = _public(lab)
    constants = public_constants(lab)
    targets = {t for a in numbers for t in _family(a, constants)}
    key = {q: [p.rtol for p in question.parts] for q, question in load_key(lab).items()}
    rtols = {r for rs in key.values() for r in rs}
    found = []
    for part in _tables(lab):
        salt = part["salt"]
        # the roundings a search can match: the tables' own, and every question's precision (an old right hash)
        digits = {digits_for(float(m.get("rtol", 1e-6))) for m in part["mistakes"]} | {digits_for(r) for r in rtols}
        for d in digits:
            public_hashes = {digest(salt, canonical(c, "number", d)) for c in public}
            for t in targets:
                h = digest(salt, canonical(t, "number", d))
                is_answer = any(math.isclose(t, a, rel_tol=1e-12) for a in numbers)
                if h in hashes and (is_answer or h not in public_hashes):
                    found.append((part["arg"], t, d))
        for w in words:  # a choice or a yes/no answer, under any salt of the lab
            if digest(salt, w) in hashes:
                found.append((part["arg"], w))
    assert not found, f"{lab}: a hash of a graded answer (or a transform) is installed: {found[:5]}"


def _space() -> list[float]:
    """The attacker's candidates: integers −100…2000 and two- and three-significant-digit values, 10⁻⁴ to 10⁴."""
    values = {float(i) for i in range(-100, 2001)}
    for e in range(-4, 3):
        values |= {k * 10.0**e for k in range(100, 1000)}
    return sorted(values | {-v for v in values} | {math.inf, -math.inf})


@pytest.mark.parametrize("lab", LABS)
def test_a_brute_force_search_recovers_no_graded_answer(lab):
    numbers, words = _graded(lab)
    public = _public(lab)
    answers = [t for a in numbers for t in _family(a, public_constants(lab))]
    space = _space()
    recovered = []
    for part in _tables(lab):
        salt = part["salt"]
        for entry in part["mistakes"]:
            targets = set(entry["hashes"])
            if part["kind"] == "number":
                digits = digits_for(float(entry.get("rtol", 1e-6)))
                hits = [x for x in space if digest(salt, canonical(x, "number", digits)) in targets]
                for x in hits:
                    rtol = max(float(entry.get("rtol", 1e-6)), 10.0 ** (1 - digits))
                    bad = [a for a in answers if math.isclose(x, a, rel_tol=rtol, abs_tol=1e-12)]
                    if _known(x, public, rtol) and not any(math.isclose(x, a, rel_tol=rtol) for a in numbers):
                        continue  # a value the student knows already (0, 1, a constant): "not this value" only
                    if bad:
                        recovered.append((part["arg"], x, bad[0]))
            else:
                choices = part.get("choices", []) + words + ["true", "false", "True", "False"]
                hits = [w for w in choices if digest(salt, w) in targets]
                recovered += [(part["arg"], w, w) for w in hits if w in words]
    assert not recovered, f"{lab}: the search recovers graded answers (arg, value found, answer): {recovered[:5]}"


@pytest.mark.parametrize("lab", LABS)
def test_no_question_recognises_a_value_within_2_of_its_whole_number_answer(lab):
    # a second student review: lab 9 q3 (answered in 0-3) recognised 0, 1 and 3, which left only the answer 2
    tables = {p["arg"]: p for p in _tables(lab)}
    near = []
    for q in load_key(lab).values():
        for part in q.parts:
            if part.kind != "number" or float(part.expected) != round(float(part.expected)):
                continue
            table = tables[part.arg]
            for entry in table["mistakes"]:
                digits = digits_for(float(entry.get("rtol", 1e-6)))
                for x in np.arange(float(part.expected) - 2, float(part.expected) + 3):
                    if digest(table["salt"], canonical(float(x), "number", digits)) in entry["hashes"]:
                        near.append((part.arg, float(x)))
    assert not near, f"{lab}: recognised next to a whole-number answer: {near}"


#: references a hint may make to the text it points back to (the section, theorem or lab), not numbers to compute with
_REFERENCE = re.compile(
    r"(§\s*[\d.]+|\b(?:part|lab|question|q|Thm|Thms|Theorem|Def\.|Lemma|Eq\.|section)\s*[\d.–-]+\w?)", re.IGNORECASE)
#: what makes a hint a recipe from the mistake to the answer: a number, or arithmetic (or a direction to reverse)
#: applied to the student's value — "you counted it twice", "halve it", "one count, not two", "upside down"
_RECIPE = re.compile(
    r"\d|\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|once|twice|thrice|half|halve\w*|double\w*|"
    r"tripl\w*|add|adds|added|adding|subtract\w*|multipl\w*|divid\w*|square\w*|root|cube\w*|invert\w*|inverse|"
    r"reciprocal|plus|minus|times|upside down|the other way|not less|not more|round(?:ed)? (?:up|down))\b",
    re.IGNORECASE)


@pytest.mark.parametrize("lab", LABS)
def test_no_hint_of_a_recognised_mistake_is_a_recipe_for_the_answer(lab):
    # the second student review: lab 1 q3 recognised 7 (the line policy's distance) with "with θ a single edge
    # may jump up to θ bins", which with θ = 2 is the recipe ⌈7/2⌉ = 4. A hint on a recognised value names the
    # concept to revisit; it holds no number and no arithmetic on the student's value (general hints, shown whatever
    # the answer, may say how to compute: they recognise nothing)
    recipes = []
    for part in _tables(lab):
        for entry in part["mistakes"]:
            found = _RECIPE.search(_REFERENCE.sub(" ", entry["hint"]))
            if found:
                recipes.append((part["arg"], found.group(0), entry["hint"]))
    assert not recipes, f"{lab}: hints of recognised mistakes that say what to compute: {recipes}"
