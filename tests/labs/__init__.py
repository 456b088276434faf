"""Tests of the lab checks (blowfish_nb/labs/labNN.py) and of the lab build."""

from __future__ import annotations

import math
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: where `make labs` (and `make test`, before pytest) writes the built labs
BUILT = ROOT / "build" / "labs"


def value_shown(message: str, expected) -> bool:
    """Whether ``message`` gives ``expected`` away: the number as a whole token (3, 3.0, 4.48, 4.4817 …), the
    word for a choice, True/False for a yes/no answer.

    >>> value_shown("q1: not yet. Hint: count edges", 3), value_shown("it is 3 edges", 3)
    (False, True)
    >>> value_shown("about 4.48", math.exp(1.5)), value_shown("answer threshold", "threshold")
    (True, True)
    """
    if isinstance(expected, bool):
        return re.search(rf"\b{expected}\b", message) is not None
    if isinstance(expected, str):
        return re.search(rf"\b{re.escape(expected.strip())}\b", message, re.IGNORECASE) is not None
    x = float(expected)
    forms = {f"{x:g}", f"{x:.2f}", f"{x:.3g}", f"{x:.4g}", f"{x:.1f}"}
    if math.isfinite(x) and x == int(x):
        forms.add(str(int(x)))
    return any(re.search(rf"(?<![\w.]){re.escape(f)}(?![\d])", message) for f in forms)


def fresh(folder: Path, slug: str) -> bool:
    """Whether ``folder`` holds lab ``slug`` built after every lab source, module, key and hint table last changed."""
    inputs = [*(ROOT / "notebooks" / "labs" / "source").glob("*.ipynb"), *(ROOT / "blowfish_nb" / "labs").glob("*.py"),
              *(ROOT / "notebooks" / "labs" / "key").glob("*.py"), *(ROOT / "blowfish_nb" / "labs" / "hints").glob("*")]
    newest_input = max(p.stat().st_mtime for p in inputs)
    outputs = [folder / slug / v / f"{slug}.ipynb" for v in ("student", "solution")]
    return all(p.is_file() for p in outputs) and min(p.stat().st_mtime for p in outputs) > newest_input


#: slug -> the folder a test of this process built the lab into (reused while fresh: one build per lab and process)
_BUILT_HERE: dict[str, Path] = {}


def built_lab(slug: str, dest: Path) -> Path:
    """The folder holding lab ``slug`` built: ``build/labs`` when it is fresh, else the folder an earlier test of this
    process built it into when that is still fresh, else a build into ``dest`` (otter assign without its own run of
    the solution; the tests run it)."""
    if fresh(BUILT, slug):
        return BUILT
    earlier = _BUILT_HERE.get(slug)
    if earlier is not None and fresh(earlier, slug):
        return earlier
    if not fresh(dest, slug):
        from blowfish_nb.labs.build import build

        build(dest, names=[slug], run_tests=False)
    _BUILT_HERE[slug] = dest
    return dest


def built_labs_fixture(tmp_path_factory):
    """``folder(slug)``: the folder holding lab ``slug`` built (see :func:`built_lab`: ``build/labs`` when fresh,
    else built on first use, once per process). Imported as the ``built_labs`` fixture by the notebook and grading
    tests."""
    dest = tmp_path_factory.getbasetemp() / "built-labs"
    dest.mkdir(exist_ok=True)
    return lambda slug: built_lab(slug, dest)


def solution_notebook(slug: str, dest: Path) -> Path:
    """The path of lab ``slug``'s built solution notebook (see :func:`built_lab`)."""
    return built_lab(slug, dest) / slug / "solution" / f"{slug}.ipynb"


def _lab_of(check) -> str:
    for n in range(1, 10):
        module = __import__(f"blowfish_nb.labs.lab{n:02d}", fromlist=["x"])
        if any(getattr(module, name, None) is check for name in dir(module) if name.startswith("q")):
            return f"lab{n:02d}"
    raise LookupError(check)


def known_mistake(lab: str, question: str, value) -> bool:
    """Whether the answer key lists ``value`` as a mistake of ``question`` that the build keeps in the hint table
    (:func:`blowfish_nb.labs._key.kept_mistakes`: not answer-revealing). A listed mistake the build drops must get
    no hint at all (the check does not recognise it)."""
    from blowfish_nb.labs._key import kept_mistakes, load_key, numeric_answers, public_constants

    questions = load_key(lab)
    answers, constants = numeric_answers(questions), public_constants(lab)
    for part in questions[question].parts:
        for m in kept_mistakes(lab, question, part, answers, constants):
            many = m.values if isinstance(m.values, (list, tuple, set, frozenset)) else [m.values]
            for v in many:
                if isinstance(v, str) or isinstance(value, str):
                    if str(v).strip().lower() == str(value).strip().lower():
                        return True
                elif isinstance(v, bool) or isinstance(value, bool):
                    continue
                elif math.isclose(float(v), float(value), rel_tol=max(m.rtol or part.rtol, 1e-9)):
                    return True
    return False


#: the hints a check gives without knowing any answer: a wrong type, a name outside the list of choices
TYPE_HINTS = ("answer with one of", "not text", "a Python bool", "store one number", "answer with a string")


def type_hint(message: str | None) -> bool:
    """Whether ``message`` is a hint on the answer's type or spelling (it needs no answer)."""
    return message is not None and any(words in message for words in TYPE_HINTS)


def hint_of(call) -> str | None:
    """The one-line hint ``call()`` raises, or None when the check returns quietly (no known mistake)."""
    from blowfish_nb.labs._check import LabCheckFailed

    try:
        call()
    except LabCheckFailed as e:
        return str(e)
    return None


def assert_each_mistake_has_its_own_hint(question: str, check, expected, mistakes) -> None:
    """Every listed ``(wrong answer, words)`` of ``question`` that the hint table keeps fails with a hint naming
    ``words``, never showing ``expected``, and no two share a hint; a listed mistake the build dropped as
    answer-revealing gets no hint (the check returns quietly, as for any unforeseen answer)."""
    lab = _lab_of(check)
    hints = []
    for wrong, words in mistakes:
        message = hint_of(lambda: check(wrong))
        if not known_mistake(lab, question, wrong) and not type_hint(message):
            assert message is None, message
            continue
        assert message is not None and message.startswith(f"{question} (") and "Hint:" in message, message
        assert words in message, message
        assert not value_shown(message, expected), message
        hints.append(message)
    assert len(set(hints)) == len(hints)


class _LabAndKey:
    """A lab module with its answer key's helpers (``notebooks/labs/key/labNN.py``) as attributes, for the tests."""

    def __init__(self, lab: str):
        import importlib.util

        from blowfish_nb.labs import _key

        self._module = __import__(f"blowfish_nb.labs.{lab}", fromlist=["x"])
        spec = importlib.util.spec_from_file_location(f"_test_key_{lab}", _key.KEYS / f"{lab}.py")
        self._key = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self._key)

    def __getattr__(self, name):
        if hasattr(self._module, name):
            return getattr(self._module, name)
        return getattr(self._key, name)


def lab_and_key(lab: str) -> _LabAndKey:
    """``lab_and_key("lab07").crossover_size()``: the lab module and its key's helpers in one namespace."""
    return _LabAndKey(lab)


def answers(lab: str) -> list:
    """Every expected value of lab ``lab``'s answer key (numbers, choices, bools; not a function the hidden test runs),
    less those that are also a public constant of the lab's setting (lab 3's ratio 1024 is also where its range starts:
    shown, and no leak)."""
    from blowfish_nb.labs._key import load_key

    module = __import__(f"blowfish_nb.labs.{lab}", fromlist=["x"])
    setting = set()
    for name in getattr(module, "__all__", []):
        value = getattr(module, name)
        for v in (value if isinstance(value, (tuple, list)) else (value,)):
            for w in (v if isinstance(v, (tuple, list)) else (v,)):
                if isinstance(w, (int, float)) and not isinstance(w, bool):
                    setting.add(float(w))
    every = [part.expected for q in load_key(lab).values() for part in q.parts if part.kind != "code"]  # code: run
    return [a for a in every if isinstance(a, (str, bool)) or float(a) not in setting]


def distinctive(value) -> bool:
    """Whether a numeric answer is specific enough to search for in text: not an integer below 100, and at least two
    significant digits (0.5 or 3 turn up in any text about ε and bins; 4.48 or 400 do not).

    >>> distinctive(4.4817), distinctive(400.0), distinctive(3), distinctive(0.5), distinctive("line")
    (True, True, False, False, False)
    """
    if isinstance(value, (bool, str)):
        return False
    x = float(value)
    if not math.isfinite(x):
        return False
    if x == int(x):
        return abs(x) >= 100
    return len(f"{abs(x):.3g}".replace(".", "").lstrip("0").rstrip("0")) >= 2


def shown_precisely(text: str, value) -> bool:
    """Whether ``text`` holds the number ``value`` to 3 or more significant digits (4.06, 4.063, 400 …): stricter
    than :func:`value_shown`, for searching the answers in long texts (where "Def. 4.1" is not 4.0628).

    >>> shown_precisely("Def. 4.1 says", 4.0628), shown_precisely("about 4.06", 4.0628)
    (False, True)
    """
    x = float(value)
    forms = {f"{x:.3g}", f"{x:.4g}", f"{x:.5g}", f"{x:.6g}"}
    if x == int(x):
        forms.add(str(int(x)))
        forms.add(f"{int(x):,}")
    return any(re.search(rf"(?<![\w.]){re.escape(f)}(?![\d])", text) for f in forms)


# --- executed notebooks ------------------------------------------------------------------------------------

#: a ``grader.check("q3")`` call in a notebook cell
CHECK = re.compile(r"""grader\.check\(\s*["']([^"']+)["']\s*\)""")


def cell_errors(nb) -> list[str]:
    """``"Name: value"`` of every error output of an executed notebook."""
    return [
        f"{o.get('ename')}: {o.get('evalue')}"
        for cell in nb.cells
        if cell.cell_type == "code"
        for o in cell.outputs
        if o.output_type == "error"
    ]


def check_outputs(nb) -> list[tuple[str, str]]:
    """(question, the check's output text) for every ``grader.check("q…")`` cell of an executed notebook."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for question in CHECK.findall(cell.source):
            text = "\n".join(o.get("data", {}).get("text/plain", "") + o.get("text", "") for o in cell.outputs)
            found.append((question, text))
    return found


def lab_number(path: Path, numbers) -> str:
    """Which of the labs ``numbers`` ("05", …) a built or submitted notebook belongs to (its ``Grader("labNN")``)."""
    text = Path(path).read_text(encoding="utf-8")
    return next(n for n in numbers if f'Grader(\\"lab{n}\\")' in text)


def built_versions(built_labs, slug: str) -> tuple[Path, Path]:
    """(student, solution) notebooks of ``slug`` from the ``built_labs`` fixture."""
    folder = built_labs(slug) / slug
    return folder / "student" / f"{slug}.ipynb", folder / "solution" / f"{slug}.ipynb"

