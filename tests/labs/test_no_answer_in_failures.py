"""Issue 26 (leak37): a failing hidden test reports its short reason and nothing that holds the expected value.

otter reports a failing exception-based test case by the test file's source line where the exception left the test
function, and the exception's message (``ExceptionTestFile._generate_error_message``), in ``results.json``, in its
printed summary and in what Gradescope shows; the hidden tests once failed on ``expect_number(true_loss, 2.0,
rtol=1e-06)``, so a teacher who forwarded the output gave away every answer a student got wrong. Lab 1 (numbers,
a number graded at rtol 10⁻³, a yes/no and a choice answer) is graded under ``otter run`` with every answer wrong:
no expected value of its key, in any form its checks would accept, appears in ``results.json`` or in what otter
prints, while the same search finds every one of them in the hidden tests' own source (the search is not blind).
The solutions' full marks are tests/labs/test_grading.py's.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from blowfish_nb.labs._key import Part, Question, hidden_test, load_key
from tests.labs import ROOT, built_labs_fixture

SLUG, LAB = "01-neighbours-and-policies", "lab01"
OTTER = Path(sys.executable).with_name("otter")
#: every wrong number of the notebook (no expected value of lab 1 is near it, none of its forms is in it)
WRONG_NUMBER = -987.25
#: the one line a failing hidden test may show (otter quotes it), and the reasons it may give
CLEAN_LINES = ("raise _kind(_why)",
               "raise AssertionError('answered after the result was shown')")

built_labs = pytest.fixture(scope="session")(built_labs_fixture)


def forms(part: Part) -> set[str]:
    """Every text that gives ``part``'s expected value away: ``repr``, ``str``, ``:g``, the whole number, and every
    rounding (to significant digits or decimals) that the hidden test would accept at the part's ``rtol``; the word
    of a choice; ``True``/``False`` for a yes/no answer.

    Examples
    --------
    >>> sorted(sorted(forms(Part("x", 4.4816890703380645, otherwise="", rtol=1e-3))), key=len)[:4]
    ['4.48', '4.482', '4.4817', '4.48169']
    >>> sorted(forms(Part("x", 3, otherwise="")), key=len)[:3]
    ['3', '3.0', '3.00']
    """
    e = part.expected
    if part.kind == "choice" or isinstance(e, str):
        return {str(e).strip().lower()}
    if part.kind == "bool" or isinstance(e, bool):
        return {str(bool(e))}
    x = float(e)
    found = {repr(x), str(x), f"{x:g}"}
    if math.isfinite(x) and x == int(x):
        found.add(str(int(x)))
    for text in [f"{x:.{d}g}" for d in range(1, 18)] + [f"{x:.{k}f}" for k in range(0, 16)]:
        if abs(float(text) - x) <= 1e-9 + part.rtol * abs(x):
            found.add(text)
    return found


def where(text: str, form: str) -> str | None:
    """Where ``form`` stands in ``text`` as a whole token (not a piece of a longer number or word): the text around
    it, or ``None``."""
    if re.fullmatch(r"[A-Za-z_]\w*", form):
        m = re.search(rf"(?<!\w){re.escape(form)}(?!\w)", text, re.IGNORECASE)
    else:
        m = re.search(rf"(?<![\w.]){re.escape(form)}(?![.]?\d)", text)
    return None if m is None else text[max(0, m.start() - 60):m.end() + 60]


def found_in(text: str, form: str) -> bool:
    return where(text, form) is not None


#: otter's own framing, whose numbers are no answer: test names (q1, q5 - 2), line numbers, the score table
FRAMING = [re.compile(p, re.M) for p in (r"^\s*\d+\s+q\d+[a-z]?\s+\d+\.\d+\s+\d+\.\d+\s*$", r"^Total Score:.*$",
                                         r"\bq\d+[a-z]?(?: - \d+)?", r"Error at line \d+")]


def unframed(text: str) -> str:
    for pattern in FRAMING:
        text = pattern.sub(" ", text)
    return text


def strings(data) -> list[str]:
    """Every string value (and key) of a JSON document."""
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for k, v in data.items() for s in [k, *strings(v)]]
    if isinstance(data, list):
        return [s for v in data for s in strings(v)]
    return []


def wrong_value(part: Part):
    if part.kind == "choice":
        return next(c for c in [*part.choices, "nonsense"] if c.lower() != str(part.expected).lower())
    if part.kind == "bool":
        return not bool(part.expected)
    return WRONG_NUMBER


def test_a_failing_hidden_test_shows_a_clean_line_and_its_reason_only():
    """The hidden test's failure, as otter's own exception-based test file reports it: the quoted line holds no
    literal, the message is the reason, and the traceback has no frame of the comparison and no chain."""
    import traceback

    from otter.test_files.exception_test import ExceptionTestFile

    q = Question("q1", [Part("answer", 4.4816890703380645, otherwise="", rtol=1e-3)], before=("shown",))
    source = ("from otter.test_files import test_case\nOK_FORMAT = False\nname = 'q1'\npoints = [1]\n"
              "@test_case(points=1, hidden=True)\n" + hidden_test("q1", q, 0, q.parts[0]))
    tf = ExceptionTestFile.from_string(source, path="tests/q1.py")
    cheat = type("Any", (float,), {"__eq__": lambda s, o: True})(0.0)
    for answer, reason in ((2.0, "wrong"), ("4.48", "the answer is not a plain number"),
                           (cheat, "the answer is not a plain number")):
        tf.run({"answer": answer, "shown": None})
        (result,) = tf.test_case_results
        assert not result.passed
        head, line, last = result.message.splitlines()[-3:]
        assert head.startswith("Error at line") and line.strip() == CLEAN_LINES[0], result.message
        assert last == f"AssertionError: {reason}"
        assert not any(found_in(unframed(result.message), f) for f in forms(q.parts[0])), result.message
    # a comparison that raises something else (a function of the histogram too, gamer34b's shape): its class only
    noise = Question("q2", [Part("range_noise", 10.0, otherwise="", kind="code",
                                 grade="expect_range_noise({arg}, 10.0)")])
    tf2 = ExceptionTestFile.from_string(source.replace("'q1'", "'q2'").split("def test_q1_0")[0]
                                       + hidden_test("q2", noise, 0, noise.parts[0]), path="tests/q2.py")
    tf2.run({"range_noise": lambda x, rng: rng.laplace(0.0, 10.0) - rng.laplace(0.0, 10.0)})
    message = tf2.test_case_results[0].message
    line, last = message.splitlines()[-2:]
    assert line.strip() == CLEAN_LINES[0] and last == "TypeError: raised while grading", message
    assert "10" not in unframed(message)
    tf.run({"answer": 4.4817, "shown": None})
    assert tf.test_case_results[0].passed
    env, lines = {}, hidden_test("q1", q, 0, q.parts[0]).splitlines()
    exec(compile("\n".join(lines), "tests/q1.py", "exec"), env)
    try:
        env["test_q1_0"](2.0, None)
    except AssertionError as e:
        assert e.__cause__ is None and e.__context__ is None
        *_, last = traceback.extract_tb(e.__traceback__)  # raised in the test's own frame, nowhere deeper
        assert last.name == "test_q1_0" and lines[last.lineno - 1].strip() == CLEAN_LINES[0], last
    else:
        raise AssertionError("a wrong answer passed")


@pytest.mark.slow
@pytest.mark.notebook
def test_every_answer_wrong_under_otter_run_shows_no_expected_value(built_labs, tmp_path):
    lab = built_labs(SLUG) / SLUG
    key = load_key(LAB)
    parts = {p.arg: p for q in key.values() for p in q.parts}
    assert {"number", "bool", "choice"} <= {p.kind for p in parts.values()}
    assert any(p.rtol > 1e-6 for p in parts.values())  # a value graded at a tolerance: its roundings count
    # the search finds every value in the hidden tests themselves, on the lines that otter once quoted
    (zip_path,) = (lab / "autograder").glob("*.zip")
    with zipfile.ZipFile(zip_path) as z:
        tests = "\n".join(z.read(n).decode() for n in z.namelist() if n.startswith("tests/") and n.endswith(".py"))
    judged = "\n".join(line for line in tests.splitlines() if "_judge = lambda:" in line)
    for arg, part in parts.items():
        assert any(found_in(unframed(judged), f) for f in forms(part)), (arg, forms(part))

    nb = nbformat.read(lab / "student" / f"{SLUG}.ipynb", as_version=4)
    answered = set()
    for cell in nb.cells:
        if cell.cell_type == "code" and "otter_answer_cell" in cell.metadata.get("tags", []):
            for name in re.findall(r"^(\w+) = \.\.\.", cell.source, flags=re.M):
                cell.source = cell.source.replace(f"{name} = ...", f"{name} = {wrong_value(parts[name])!r}")
                answered.add(name)
    assert answered == set(parts)
    path = tmp_path / f"{SLUG}.ipynb"
    nbformat.write(nb, path)

    out = tmp_path / "out"
    out.mkdir()
    command = [str(OTTER), "run", "-a", str(zip_path), "-o", str(out), "--pickle-results", str(path)]
    if shutil.which("unshare") and shutil.which("ip") and subprocess.run(["unshare", "-n", "true"]).returncode == 0:
        command = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *command]
    env = {"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(out),
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd=out)
    results = json.loads((out / "results.json").read_text())
    graded = [t for t in results["tests"] if t.get("max_score")]
    assert graded and all(t["score"] == 0 for t in graded), graded  # every answer wrong, every point lost

    outputs = [t["output"] for t in graded]
    for text in outputs:  # each failure quotes a clean line and gives its reason
        quoted = re.findall(r"Error at line \d+ in test [^\n]*:\n([^\n]*)\n", text)
        assert quoted and all(line.strip() in CLEAN_LINES for line in quoted), text
        assert "AssertionError: wrong" in text
    printed = done.stdout + done.stderr
    assert "Total Score" in printed
    # the results pickle (the teacher's, as Gradescope writes it) held each hidden test's whole source until the
    # plugin emptied it: its text is searched as it lies on disk
    # (it also holds the submitted notebook, whose text has small numbers of its own: the hidden tests' lines are
    # what must be gone, the values' longest forms with them)
    pickled = (out / "results.pkl").read_bytes().decode("latin-1")
    assert "_judge = lambda" not in pickled and "expect_number(" not in pickled
    assert not [f for part in parts.values() for f in forms(part) if len(f) >= 8 and any(c.isdigit() for c in f)
                and f in pickled]
    texts = {"results.json": unframed("\n".join(strings(results))), "printed": unframed(printed)}
    leaks = [(name, arg, f, where(text, f)) for name, text in texts.items() for arg, part in parts.items()
             for f in forms(part) if found_in(text, f)]
    assert not leaks, leaks
