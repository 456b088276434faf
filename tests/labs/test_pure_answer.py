"""A noise answer is one function of ``rng`` alone, judged on its source (student-gamer gamer36c).

gamer36c's ``fixed_noise`` (lab 5 q2) and ``range_noise`` (lab 3 q3) are the right noise on every call the grader makes
and exact after a 90 s pause (the clock read through ``pd.Timestamp.now()`` / ``np.datetime64("now")``) or after more
calls in a row on one generator than the grader's longest run; the state lives in a generator driven by ``.send``. No
behavioural verdict sees a condition its calls never create, so the plugin grades the answer cell's source
(:func:`blowfish_nb.labs.scan.pure_answer`, also a scan rule): one ``def NAME(rng):`` whose body has nowhere to keep a
value between calls and no clock. The fixtures (tests/labs/fixtures/gamer36c/, outputs stripped) are gamer36c's four
notebooks; the labs' solutions and a few other right answers must pass.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from blowfish_nb.labs._plugin import ANSWER_TAG, LabGrader
from blowfish_nb.labs.scan import _defined, pure_answer

from . import ROOT

FIXTURES = Path(__file__).parent / "fixtures"
SOURCES = ROOT / "notebooks" / "labs" / "source"
IMPORTS = "import numpy as np\nimport pandas as pd\nimport blowfish_nb as bf\n"
LAB05 = [IMPORTS + "from blowfish_nb.labs import lab05 as check",
         "eps = check.EPSILON\nline = check.line_policy()\n\n"
         "def buggy_noise(rng):\n    return rng.laplace(0.0, 1 / eps, size=check.K)"]
LAB03 = [IMPORTS + "from blowfish_nb.labs import lab03 as check",
         "x, where = check.load_histogram()\nk = len(x)",
         "eps = check.EPSILON\nlo, hi = check.RANGE\nR = check.range_query()\ndomain = bf.Domain.grid(k)\n"
         "line = bf.policy.line(domain)",
         "ordered = bf.mechanisms.Ordered()\nlaplace = bf.mechanisms.Laplace()"]


def _src(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _solution(slug: str, name: str) -> tuple[str, list[str]]:
    """The lab's solution cell of ``name`` and the code cells before it (its master notebook)."""
    cells = [c for c in json.loads((SOURCES / f"{slug}.ipynb").read_text(encoding="utf-8"))["cells"]
             if c["cell_type"] == "code"]
    at = next(i for i, c in enumerate(cells) if name in _defined(_src(c)))
    return _src(cells[at]), [_src(c) for c in cells[:at]]


def _answer(path: Path, name: str) -> tuple[str, list[str]]:
    """A submission's answer cell defining ``name`` and its other answer cells."""
    cells = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    answers = [c for c in cells if ANSWER_TAG in c.get("metadata", {}).get("tags", [])]
    mine = next(_src(c) for c in answers if name in _defined(_src(c)))
    return mine, [_src(c) for c in answers if name not in _defined(_src(c))]


@pytest.mark.parametrize("slug, name", [("05-break-it", "fixed_noise"), ("03-ranges", "range_noise")])
def test_the_labs_solutions_keep_the_rule(slug, name):
    cell, setup = _solution(slug, name)
    assert pure_answer(cell, name, setup) is None


RIGHT_05 = [
    "def fixed_noise(rng):\n    return rng.laplace(0, 2 / eps, check.K)",
    "def fixed_noise(rng):\n    \"\"\"Δ = 2.\"\"\"\n    b = 2 / eps\n"
    "    return np.array([rng.laplace(0.0, b) for _ in range(check.K)])",
    "def fixed_noise(rng):\n    b = 2.0 / eps\n"
    "    return rng.exponential(b, size=check.K) - rng.exponential(b, size=check.K)",
    "def fixed_noise(rng):\n    if eps <= 0:\n        return np.zeros(check.K)\n    return 2 * buggy_noise(rng)",
    "def fixed_noise(rng):\n    u = rng.random(check.K) - 0.5\n"
    "    return -2 / eps * np.sign(u) * np.log(1 - 2 * np.abs(u))",
    "def fixed_noise(rng):\n    ...",  # unanswered: no state either (the verdict gives it 0)
]
RIGHT_03 = [
    "def range_noise(rng):\n"
    "    return float(ordered.release(np.zeros(k, dtype=np.int64), R, line, eps, rng=rng)[0])",
    "def range_noise(rng):\n    empty = np.zeros(k, dtype=np.int64)\n"
    "    out = ordered.release(empty, R, line, eps, rng=rng)\n"
    "    return out[0] - 0",
]


@pytest.mark.parametrize("source", RIGHT_05)
def test_right_lab05_answers_keep_the_rule(source):
    assert pure_answer(source, "fixed_noise", LAB05) is None


@pytest.mark.parametrize("source", RIGHT_03)
def test_right_lab03_answers_keep_the_rule(source):
    assert pure_answer(source, "range_noise", LAB03) is None


BODY = "def fixed_noise(rng):\n    {}\n    return rng.laplace(0.0, 2 / eps, size=check.K) * keep\n"
BROKEN = {
    "a clock through pandas": BODY.format("keep = pd.Timestamp.now().second >= 0"),
    "a clock through numpy": BODY.format("keep = np.datetime64('now') > np.datetime64('2000-01-01')"),
    "a generator's send": BODY.format("keep = pace.send(1)"),
    "yield": BODY.format("keep = yield 1"),
    "global": BODY.format("global n\n    keep = 1"),
    "the generator compared by ==": BODY.format("keep = rng == 1"),
    "the generator compared by is": BODY.format("keep = rng is not None"),
    "a generator attribute": BODY.format("keep = rng.bit_generator.state['state']['state'] > 0"),
    "an attribute store": BODY.format("check.seen = 1\n    keep = 1"),
    "an item store into a handout value": BODY.format("line[0] = 1\n    keep = 1"),
    "+= on an alias": BODY.format("a = line\n    a += 1\n    keep = 1"),
    "out=": BODY.format("keep = np.add(1, 0, out=check.Q2_DATA)"),
    "a lambda": BODY.format("keep = (lambda: 1)()"),
    "a nested def": BODY.format("def g():\n        return 1\n    keep = g()"),
    "an import": BODY.format("import time\n    keep = time.time() > 0"),
    "open": BODY.format("keep = len(open('x').read())"),
    "getattr": BODY.format("keep = getattr(check, 'K')"),
    "eval": BODY.format("keep = eval('1')"),
    "a dunder": BODY.format("keep = display.__name__ == '<lambda>'"),
    "a name the handout does not bind": BODY.format("keep = counter"),
    "the global random state": BODY.format("keep = np.random.random() >= 0"),
    "a lab function of the check module": BODY.format("keep = check.line_policy() is not None"),
    "a while loop": BODY.format("while False:\n        pass\n    keep = 1"),
    "a default": "def fixed_noise(rng, seen=[]):\n    return rng.laplace(0.0, 2 / eps, size=check.K)",
    "two parameters": "def fixed_noise(rng, n):\n    return rng.laplace(0.0, 2 / eps, size=check.K)",
    "*args": "def fixed_noise(rng, *args):\n    return rng.laplace(0.0, 2 / eps, size=check.K)",
    "a decorator": "@staticmethod\ndef fixed_noise(rng):\n    return rng.laplace(0.0, 2 / eps, size=check.K)",
    "another statement in the cell": "n = 0\ndef fixed_noise(rng):\n    return rng.laplace(0.0, 2 / eps, size=check.K)",
    "another name": "def noise(rng):\n    return rng.laplace(0.0, 2 / eps, size=check.K)",
    "the generator's identity": BODY.format("keep = id(rng) > 0"),
    "rng rebound": BODY.format("rng = buggy_noise\n    keep = 1"),
    "rng called": BODY.format("keep = rng(1)"),
}


@pytest.mark.parametrize("what", sorted(BROKEN))
def test_the_rule_refuses(what):
    assert pure_answer(BROKEN[what], "fixed_noise", LAB05) is not None, what


def test_a_handout_name_rebound_in_another_answer_cell_is_not_the_handouts():
    right = RIGHT_05[0]
    assert pure_answer(right, "fixed_noise", LAB05, ["true_loss = 2 * eps"]) is None
    assert pure_answer(right, "fixed_noise", LAB05, ["eps = _clocked()"]) is not None
    assert pure_answer(right, "fixed_noise", LAB05, ["check.K = 7"]) is not None


@pytest.mark.parametrize("path, name", [
    ("gamer36c/lab05_idle_clock", "fixed_noise"), ("gamer36c/lab05_long_streak", "fixed_noise"),
    ("gamer36c/lab03_idle_clock", "range_noise"), ("gamer36c/lab03_long_streak", "range_noise"),
    ("gamer36b/lab05_reused_rng", "fixed_noise"), ("gamer36b/lab03_reused_rng", "range_noise"),
    ("gamer35b/lab05_display_lambda", "fixed_noise"), ("gamer35b/lab03_display_lambda", "range_noise"),
])
def test_the_gamers_noise_answers_break_the_rule(path, name):
    cell, others = _answer(FIXTURES / f"{path}.ipynb", name)
    assert pure_answer(cell, name, LAB05 if "lab05" in path else LAB03, others) is not None


def _grader(answer: str, check_tests: str) -> LabGrader:
    """A plugin with lab 5's set-up cells, one answer cell and its check cell (as :func:`rebuild` lays them)."""
    grader = LabGrader.__new__(LabGrader)
    grader.tests = {"q2": check_tests}
    grader.cells = ([{"cell_type": "code", "metadata": {}, "source": s} for s in LAB05]
                    + [{"cell_type": "code", "metadata": {"tags": [ANSWER_TAG]}, "source": answer},
                       {"cell_type": "code", "metadata": {"otter": {"tests": ["q2"]}}, "source": "grader.check('q2')"}])
    return grader


NOISE_TEST = "fn = _grade['expect_laplace_noise']\n\ndef test_q2(env, fixed_noise):\n    pass\n"


def test_the_plugin_judges_the_source_of_noise_questions_only():
    cell, _ = _answer(FIXTURES / "gamer36c" / "lab05_idle_clock.ipynb", "fixed_noise")
    assert _grader(cell, NOISE_TEST)._impure("q2").startswith("the cell must hold only")
    assert _grader(RIGHT_05[0], NOISE_TEST)._impure("q2") is None
    # a question without a noise verdict is not judged by the rule
    assert _grader(cell, "def test_q2(env, fixed_noise):\n    pass\n")._impure("q2") is None
