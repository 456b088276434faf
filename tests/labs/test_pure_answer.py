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

import numpy as np
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
    "def fixed_noise(rng):\n    if eps <= 0:\n        return np.zeros(check.K)\n    return rng.laplace(0.0, 2 / eps, check.K)",
    "def fixed_noise(rng):\n    return rng.laplace(0.0, 2 / check.EPSILON, size=check.K)",
    "def fixed_noise(rng):\n    q = np.exp(-eps / 2)\n"  # the library's discrete Laplace, by hand
    "    return rng.geometric(1 - q, check.K) - rng.geometric(1 - q, check.K)",
    # an item store into an array the function makes (gamer37c: refused before stop 38)
    "def fixed_noise(rng):\n    noise = np.zeros(check.K)\n    for i in range(check.K):\n"
    "        noise[i] = rng.laplace(0.0, 2 / eps)\n    return noise",
    "def fixed_noise(rng):\n    out = [0.0] * check.K\n    for i in range(check.K):\n"
    "        out[i] = rng.exponential(2 / eps) - rng.exponential(2 / eps)\n    return np.array(out)",
    # gamer38d's over-refusal, relaxed: appending draws to a list the function made
    "def fixed_noise(rng):\n    out = []\n    for _ in range(check.K):\n"
    "        out.append(rng.laplace(0.0, 2 / eps))\n    return np.array(out)",
    # gamer38's over-refusals, relaxed: .astype(float), .tolist()
    "def fixed_noise(rng):\n    return rng.laplace(0.0, 2 / eps, size=check.K).astype(float)",
    "def fixed_noise(rng):\n    return np.array(rng.laplace(0.0, 2 / eps, size=check.K).tolist())",
    "def fixed_noise(rng):\n    z = rng.laplace(0.0, 1.0, size=(2, check.K))\n"
    "    return (z.sum(axis=0) - z[1]) * (2 / eps) + np.zeros(check.K, dtype=float)",
    "def fixed_noise(rng):\n    ...",  # unanswered: no state either (the verdict gives it 0)
]
RIGHT_03 = [
    "def range_noise(rng):\n"
    "    return float(ordered.release(np.zeros(k, dtype=np.int64), R, line, eps, rng=rng)[0])",
    "def range_noise(rng):\n    empty = np.zeros(k, dtype=np.int64)\n"
    "    out = ordered.release(empty, R, line, eps, rng=rng)\n"
    "    return out[0] - 0",
    "def range_noise(rng):\n    return rng.laplace(0, 1 / eps) - rng.laplace(0, 1 / eps)",
    "def range_noise(rng):\n    return ordered.release(np.zeros(check.K), R, line, check.EPSILON, rng=rng).sum()",
    "def range_noise(rng):\n    z = ordered.release(np.zeros(k), R, line, eps, rng=rng)\n    return np.add(z, 0)[0]",
    # gamer37c: a builtin type as the dtype, as people write it
    "def range_noise(rng):\n    return ordered.release(np.zeros(k, dtype=int), R, line, eps, rng=rng)[0]",
    "def range_noise(rng):\n    return ordered.release(np.zeros(k, dtype=float), R, line, eps, rng=rng)[0]",
    # gamer38's over-refusals, relaxed: the mechanism's own scale and Δ, np.squeeze, R.shape
    "def range_noise(rng):\n    b = ordered.noise_scale(line, eps)\n    return rng.laplace(0, b) - rng.laplace(0, b)",
    "def range_noise(rng):\n    b = ordered.sensitivity(line) / eps\n"
    "    return np.squeeze(rng.laplace(0, b, 1) - rng.laplace(0, b, 1)) + 0 * R.shape[0]",
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
    # gamer37: a handout function reads the kernel's names when it runs (another cell rebinds buggy_noise there)
    "a handout function": "def fixed_noise(rng):\n    return 2 * buggy_noise(rng)",
    "a handout name not allow-listed": BODY.format("keep = line is not None"),
    # gamer37: a ufunc's third positional argument is its out
    "a ufunc's positional out": BODY.format("keep = np.add(1, 0, np.zeros(1))"),
    "np.clip's positional out": BODY.format("keep = np.clip(1, 0, 2, np.zeros(1))"),
    "np.sum's positional out": BODY.format("keep = np.sum(np.ones(1), 0, float, np.zeros(()))"),
    "an array method's positional out": BODY.format("keep = np.ones(1).cumsum(0, float, np.zeros(1))"),
    "a ufunc aliased (its out unseen)": BODY.format("f = np.add\n    keep = f(1, 0, np.zeros(1))"),
}


@pytest.mark.parametrize("what", sorted(BROKEN))
def test_the_rule_refuses(what):
    assert pure_answer(BROKEN[what], "fixed_noise", LAB05) is not None, what


def test_a_handout_name_rebound_in_another_answer_cell_is_not_the_handouts():
    right = RIGHT_05[0]
    assert pure_answer(right, "fixed_noise", LAB05, ["true_loss = 2 * eps"]) is None
    assert pure_answer(right, "fixed_noise", LAB05, ["eps = _clocked()"]) is not None
    assert pure_answer(right, "fixed_noise", LAB05, ["check.K = 7"]) is not None


#: every syntax that binds a module name in another cell (gamer37: ``:=`` in a comprehension binds the cell's scope)
REBINDS = {
    "walrus in a comprehension": "worst_edge = max([(eps := 1e300) for e in range(3)])",
    "walrus in a generator": "n = sum((eps := 1e300) for _ in 'e')",
    "walrus in a lambda's comprehension": "f = [[(eps := 2) for _ in 'a'] for _ in 'b']",
    "a match capture": "match 1:\n    case eps:\n        pass",
    "a match star": "match [1]:\n    case [*eps]:\n        pass",
    "a match mapping rest": "match {}:\n    case {**eps}:\n        pass",
    "except as": "try:\n    1 / 0\nexcept ZeroDivisionError as eps:\n    pass",
    "a def under if": "if True:\n    def eps():\n        return 1",
    "a class under try": "try:\n    class eps:\n        pass\nexcept Exception:\n    pass",
    "with as": "with open('f') as eps:\n    pass",
    "a for target": "for eps in [1e300]:\n    pass",
    "an import": "import math as eps",
    "global in a function": "def f():\n    global eps\n    eps = 1e300\nf()",
    "del": "del eps",
    "a tuple target": "(a, eps) = (1, 2)",
}


@pytest.mark.parametrize("what", sorted(REBINDS))
def test_an_allowed_name_another_cell_binds_is_refused(what):
    why = pure_answer(RIGHT_05[0], "fixed_noise", LAB05, [REBINDS[what]])
    assert why is not None and "eps" in why, what


#: gamer37b: another answer cell changes an allowed object without binding its name (the kernel's release then
#: returns 0 after 10,000 calls), or can bind any name
MUTATES = {
    "vars().update": "b = 1.0 + 0 * len([vars(ordered).update(release=lambda *a, **kw: 0)])",
    "setattr": "setattr(ordered, 'release', print)",
    "a dunder": "ordered.__dict__.update(release=print)",
    "globals()": "globals()['eps2'] = 1",
    "exec": "exec('pass')",
    "__main__": "import sys\nm = sys.modules['__main__']",
}


@pytest.mark.parametrize("what", sorted(MUTATES))
def test_an_allowed_object_another_cell_changes_is_refused(what):
    why = pure_answer(RIGHT_03[0], "range_noise", LAB03, [MUTATES[what]])
    assert why is not None and "another answer cell binds" in why, (what, why)
    assert pure_answer(RIGHT_03[0], "range_noise", LAB03, ["b = vars(dict)"]) is None  # another object: no effect


#: gamer37b: exact noise on the first release of generators the grader's plan never makes (popular seeds), picked out
#: by a test of a draw (the notebook held 4,030 first draws; three are enough to show it)
SEED_TABLES = {
    "not in a set": "first = rng.integers(0, 2 ** 62)\n    keep = first not in {1605343785087, 2215947696335281}",
    "==": "first = rng.integers(0, 2 ** 62)\n    keep = 0 if first == 1605343785087 else 1",
    "in a tuple": "first = rng.integers(0, 2 ** 62)\n    keep = float(first not in (1605343785087, 3))",
    "if on a draw": "keep = 1\n    u = rng.random()\n    if u < 1e-300:\n        keep = 0",
    "and/or": "u = rng.random()\n    keep = (u > 1e-300) or 0",
    "an index by a draw": "table = [1, 0, 1]\n    keep = table[rng.integers(0, 3)]",
    "a draw through a loop": "keep = 1\n    for v in rng.integers(0, 9, 2):\n        keep = keep * (v != 7)",
}


@pytest.mark.parametrize("what", sorted(SEED_TABLES))
def test_a_noise_answer_may_not_test_or_index_by_a_draw(what):
    source = ("def fixed_noise(rng):\n    " + SEED_TABLES[what]
              + "\n    return rng.laplace(0.0, 2 / eps, check.K) * keep")
    why = pure_answer(source, "fixed_noise", LAB05)
    assert why is not None and ("drawn from rng" in why or "a set or dict" in why), (what, why)


#: gamer37c (open, stop 37): a branch on a draw written as arithmetic, wrong on a share of the calls of any generator
#: (fresh ones included): lab 5's noise × 1e-6 on one call in 1,000 (the release is the counts to 1e-6), lab 3's
#: noise × 0 on one in 100 (ε 0.344 instead of 0.1); below the law tests' power at 20,000 / 3,000 calls, and the
#: rule sees no comparison. The fix direction: no non-smooth function of a draw (sign, floor, clip, min, where, int,
#: %, //, a comprehension's if) beyond the inverse-CDF form, or point-mass tests with the power to see it.
ARITHMETIC_BRANCHES = {
    "sign": "noise = rng.laplace(0.0, 2 / eps, size=check.K)\n    u = rng.random()\n"
            "    return noise * ((1 + np.sign(u - 0.001)) / 2 + 1e-6)",
    "where/floor": "noise = rng.laplace(0.0, 2 / eps, size=check.K)\n"
                   "    return np.where(np.floor(rng.random() * 1000), noise, noise * 1e-9)",
    "comprehension if": "return np.array([v for v in rng.laplace(0.0, 2 / eps, size=check.K) if rng.random()])",
    "min/int": "return rng.laplace(0.0, 2 / eps, size=check.K) * min(1, int(rng.random() * 1000))",
    "clip": "return rng.laplace(0.0, 2 / eps, size=check.K) * np.clip(rng.random() * 1000, 0, 1)",
    "logistic step": "u = rng.random()\n    return rng.laplace(0.0, 2 / eps, size=check.K) / (1 + np.exp(-1e7 * (u - 1e-3)))",
    "power step": "t = rng.random() / 0.001\n    return rng.laplace(0.0, 2 / eps, size=check.K) / (1 + t ** -1000)",
    "a product of draws": "return rng.laplace(0.0, 2 / eps, size=check.K) * rng.binomial(1, 0.999)",
    "a draw's scale from a draw": "return rng.laplace(0.0, 2 / eps * rng.binomial(1, 0.999) + 1e-9, size=check.K)",
    "a quotient by a draw": "return rng.laplace(0.0, 2 / eps, size=check.K) / (1 + 1e9 * rng.binomial(1, 0.001))",
    "whole numbers by astype": "return (rng.laplace(0.0, 2 / eps, size=check.K) * 1e-3).astype(int) * 1000.0",
    "whole numbers by dtype": "return np.asarray(rng.laplace(0.0, 2 / eps, size=check.K) * 1e-3, dtype=int) * 1000.0",
    "whole numbers by astype(np.int64)": "return (rng.laplace(0.0, 2 / eps, size=check.K) * 1e-3).astype(np.int64) * 1e3",
    "a remainder": "return rng.laplace(0.0, 2 / eps, size=check.K) % 1e9",
    "text": "return float(f'{rng.laplace(0.0, 2 / eps):.0f}') + np.zeros(check.K)",
    "a table of constants": "return rng.choice([0.0, 1.0, -1.0], size=check.K)",
    "rng to another function": "return np.asarray(rng.laplace(0.0, 2 / eps, size=check.K)) + np.sum(rng, initial=0)",
}


@pytest.mark.parametrize("what", sorted(ARITHMETIC_BRANCHES))
def test_a_branch_on_a_draw_written_as_arithmetic_is_refused(what):
    """gamer37c: a branch on a draw needs no comparison (``np.sign``, a logistic, a power): the rule lets a draw only
    be combined linearly (:mod:`blowfish_nb.labs.linear_noise`), so none of these forms gets through."""
    source = "def fixed_noise(rng):\n    " + ARITHMETIC_BRANCHES[what]
    why = pure_answer(source, "fixed_noise", LAB05)
    assert why is not None, what


def test_the_refusal_says_what_to_write_instead():
    why = pure_answer("def fixed_noise(rng):\n    return rng.laplace(0.0, 2 / eps, size=check.K) * "
                      "np.sign(rng.random() - 1e-3)", "fixed_noise", LAB05)
    assert "rng.exponential" in why and "rng.geometric" in why and "line 2" in why


#: right laws the rule refuses, by design: a nonlinear function of a uniform draw is a step in kind (the message
#: says to use the generator's own samplers; docs/course/teaching.md lists them)
RIGHT_BUT_NONLINEAR = [
    "def fixed_noise(rng):\n    u = rng.random(check.K) - 0.5\n"
    "    return -2 / eps * np.sign(u) * np.log(1 - 2 * np.abs(u))",
    "def fixed_noise(rng):\n    return 2 / eps * np.log(rng.random(check.K) / rng.random(check.K))",
]


@pytest.mark.parametrize("source", RIGHT_BUT_NONLINEAR)
def test_the_inverse_cdf_forms_are_refused_with_the_way_out(source):
    why = pure_answer(source, "fixed_noise", LAB05)
    assert why is not None and "rng.laplace" in why


def test_an_item_store_outside_an_array_the_function_made_is_still_refused():
    for body in ("noise = line\n    noise[0] = 1.0\n    return rng.laplace(0.0, 2 / eps, size=check.K)",
                 "noise = np.zeros(check.K)\n    noise = line\n    noise[0] = 1.0\n    return noise",
                 "noise = np.asarray(line)\n    noise[0] = 1.0\n    return noise"):
        assert pure_answer("def fixed_noise(rng):\n    " + body, "fixed_noise", LAB05) is not None, body


def test_appending_keeps_the_taint_and_a_list_not_made_here_takes_no_append():
    """``out.append(u)`` makes ``out`` a draw (a test of it is refused); ``append`` on a name bound elsewhere is no
    allowed method."""
    tested = ("out = []\n    out.append(rng.random())\n"
              "    return rng.laplace(0.0, 2 / eps, size=check.K) * (out[0] > 0.001)")
    assert pure_answer("def fixed_noise(rng):\n    " + tested, "fixed_noise", LAB05) is not None
    sign = ("out = []\n    out.append(rng.random())\n"
            "    return rng.laplace(0.0, 2 / eps, size=check.K) * np.sign(out[0] - 0.001)")
    assert "np.sign" in pure_answer("def fixed_noise(rng):\n    " + sign, "fixed_noise", LAB05)
    alias = "out = np.zeros(2)\n    out = line\n    out.append(1)\n    return rng.laplace(0.0, 2 / eps, size=check.K)"
    assert pure_answer("def fixed_noise(rng):\n    " + alias, "fixed_noise", LAB05) is not None


def test_an_index_drawn_from_rng_is_refused_in_a_store_too():
    body = ("noise = np.zeros(check.K)\n    noise[rng.integers(0, 1000)] = 1.0\n"
            "    return noise + rng.laplace(0.0, 2 / eps, size=check.K)")
    assert pure_answer("def fixed_noise(rng):\n    " + body, "fixed_noise", LAB05) is not None


def test_the_seed_table_notebooks_lose_the_point_and_tests_of_constants_stay():
    """A test of a constant (``if eps <= 0``) is no test of a draw: RIGHT_05 keeps it."""
    assert any("if eps <= 0" in r for r in RIGHT_05)
    assert all(pure_answer(r, "fixed_noise", LAB05) is None for r in RIGHT_05)


@pytest.mark.parametrize("name", ["x", "where", "domain", "laplace", "counter"])
def test_a_noise_answer_may_not_read_the_data_or_other_handout_names(name):
    source = f"def range_noise(rng):\n    return rng.laplace(0, 1 / eps) * (len([{name}]) > 0)"
    why = pure_answer(source, "range_noise", LAB03)
    assert why is not None and why.startswith(f"reads {name}") and "must not depend on the data" in why
    assert "eps" in why and "ordered" in why  # the hint names what may be read


def test_the_allow_lists_hold_what_the_solutions_read_and_no_data():
    from blowfish_nb.labs import lab03, lab05

    assert set(lab03.NOISE_READS["range_noise"]) >= {"ordered", "R", "line", "eps", "k"}
    assert lab05.NOISE_READS["fixed_noise"] == ("eps",)
    for reads in (*lab03.NOISE_READS.values(), *lab05.NOISE_READS.values()):
        assert not {"x", "counts", "histogram", "buggy_noise", "buggy_draw", "result"} & set(reads)


@pytest.mark.parametrize("path, name", [
    ("gamer37/lab03_out_counter", "range_noise"), ("gamer37/lab03_data_dependent", "range_noise"),
    ("gamer37/lab05_rebind_eps_q4a", "fixed_noise"), ("gamer37/lab05_rebind_eps_after", "fixed_noise"),
    ("gamer37/lab05_idle_clock_rebound", "fixed_noise"),
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


# --- the graded function: the answer's source under the handout's bindings (the child's snapshot) ---------------


def _child_helpers() -> dict:
    """The child's ``_frozen`` and ``_snapshot`` (:data:`blowfish_nb.labs._answers._CHILD_SHELL`), run here."""
    from blowfish_nb.labs import _answers

    ns: dict = {}
    exec(_answers._CHILD_SHELL, ns)
    return ns


def test_the_snapshot_holds_only_the_allowed_names_frozen():
    from blowfish_nb.labs.scan import PURE_BUILTINS

    user = {"eps": 1.0, "w": np.ones(3), "pairs": [1, [2, 3]], "x": np.arange(4), "buggy_noise": print}
    ns = _child_helpers()["_snapshot"](user, ("eps", "w", "pairs"), {"np": "numpy"},
                                       {"check": "blowfish_nb.labs.lab05"}, sorted(PURE_BUILTINS))
    assert set(ns) == {"__name__", "__builtins__", "np", "check", "eps", "w", "pairs"}
    assert set(ns["__builtins__"]) == set(PURE_BUILTINS)  # no open, exec, globals, __import__
    assert ns["pairs"] == (1, (2, 3)) and ns["check"].K == 6 and ns["check"].EPSILON == 1.0
    assert not hasattr(ns["check"], "line_policy")  # the lab's constants, not its functions
    with pytest.raises(ValueError, match="read-only"):
        np.add(ns["w"], 1, ns["w"])
    user["eps"] = 1e300  # a later rebinding in the kernel does not reach the graded function's namespace
    user["w"][0] = 7
    assert ns["eps"] == 1.0 and ns["w"][0] == 1.0


def test_the_child_grades_the_answer_under_the_handouts_bindings():
    """The child compiles the answer in the snapshot: the lab's solution returns what the kernel's function does on
    the same generators; a write into a handout array raises (and ``line``, off the list, is not there either)."""
    from blowfish_nb.labs import _answers
    from blowfish_nb.labs.scan import PURE_BUILTINS

    setup = LAB05 + ["w = np.zeros(3)"]
    snapshot = (("eps", "w"), {"np": "numpy", "math": "math"}, {"check": "blowfish_nb.labs.lab05"},
                sorted(PURE_BUILTINS))
    kernel: dict = {}
    for cell in setup:
        exec(cell, kernel)
    exec(RIGHT_05[0], kernel)
    old = _answers.KERNEL_SHELL
    _answers.KERNEL_SHELL = False
    try:
        proxy = _answers.CodeProxy(setup, RIGHT_05[0], "fixed_noise", snapshot=snapshot)
        try:
            for seed in range(3):
                assert np.array_equal(proxy(np.random.default_rng(seed)),
                                      kernel["fixed_noise"](np.random.default_rng(seed)))
        finally:
            proxy.close()
        for body, error in [("np.add(w, 1, w)\n    return rng.laplace(0, 2 / eps, check.K) * len(line.edges())",
                             "read-only")]:  # the other refusals: test_the_snapshot_holds_only_the_allowed_names
            proxy = _answers.CodeProxy(setup, f"def fixed_noise(rng):\n    {body}", "fixed_noise", snapshot=snapshot)
            try:
                with pytest.raises(RuntimeError, match=error):
                    proxy(np.random.default_rng(0))
            finally:
                proxy.close()
    finally:
        _answers.KERNEL_SHELL = old


def test_asking_for_an_objects_id_in_another_cell_binds_nothing():
    """``id(eps)`` reads an address and changes nothing (it was on the list of calls that bind their argument: an
    over-refusal); reaching the object through ``ctypes`` still binds everything."""
    right = "def fixed_noise(rng):\n    return rng.laplace(0.0, 2 / eps, size=check.K)"
    assert pure_answer(right, "fixed_noise", LAB05, ["print(id(eps))"]) is None
    assert pure_answer(right, "fixed_noise", LAB05, ["import ctypes\nctypes.cast(id(eps), ctypes.py_object)"]) \
        is not None


#: gamer38's answers: linear on paper, a branch in floating point (a huge draw-dependent term absorbs the noise and
#: is taken away again); tests/labs/fixtures/gamer38/ holds the notebooks
ABSORBING_05 = {
    "absorb": "noise = rng.laplace(0.0, 2 / eps, size=check.K)\n    big = rng.binomial(1, 0.05) * 2.0 ** 70\n"
              "    return (noise + big) - big + 1e-9 * rng.laplace(0.0, 2 / eps, size=check.K)",
    "rounding step": "noise = rng.laplace(0.0, 2 / eps, size=check.K)\n"
                     "    step = ((rng.random() + 0.45) + 2.0 ** 52) - 2.0 ** 52\n    big = (1.0 - step) * 2.0 ** 70\n"
                     "    return (noise + big) - big + 1e-9 * rng.laplace(0.0, 2 / eps, size=check.K)",
    "underflow": "noise = rng.laplace(0.0, 2 / eps, size=check.K) * 1e-300\n"
                 "    small = rng.binomial(1, 0.05) * 1e-280\n    return ((noise + small) - small) * 1e300",
    # gamer38b: a draw that is always 1 (or two that cancel) inflated a slack proportional to |f0| + |J|·|d|
    "inflated by normal(1, 0)": "one = rng.normal(1.0, 0.0)\n    noise = rng.laplace(0.0, 2 / eps, size=check.K)\n"
                                "    big = rng.binomial(1, 0.05) * 2.0 ** 70\n"
                                "    return (noise + big) - big + (2.0 ** 70 - 2.0 ** 70 * one)",
    "inflated by integers(1, 2)": "one = rng.integers(1, 2)\n    noise = rng.laplace(0.0, 2 / eps, size=check.K)\n"
                                  "    big = rng.binomial(1, 0.05) * 2.0 ** 70\n"
                                  "    return (noise + big) - big + (2.0 ** 70 - 2.0 ** 70 * one)",
    # gamer38c: whole-number draws scaled by a fraction, a lattice incommensurate with the counts
    "a lattice": "step = 1 / (200 + 0.3819660112501051)\n    p = -np.expm1(-step * eps / 2)\n"
                 "    whole = rng.geometric(p, size=check.K) - rng.geometric(p, size=check.K)\n"
                 "    return step * whole + rng.uniform(-1e-7, 1e-7, size=check.K)",
    "parity": "z = rng.geometric(1 - np.exp(-eps / 4), size=(2, check.K))\n"
              "    return 2 * (z[0] - z[1]) + rng.uniform(-1e-7, 1e-7, size=check.K)",
    # gamer38d: continuous noise rounded onto a grid of 1.5e-11 by a float constant, inside a slack of 2^-20
    "a float grid": "return (rng.laplace(0.0, 2 / eps, size=check.K) * 68719476736.38197 + 6755399441055744.0 "
                    "- 6755399441055744.0) / 68719476736.38197",
    # gamer38e: long-double noise on a grid in the bits a float64 comparison does not see
    "long double": "out = np.zeros(check.K, dtype='g')\n    out[:] = rng.laplace(0.0, 2 / eps, size=check.K)\n"
                   "    return (out * 140737488355328.40625 + 13835058055282163712.0 - 13835058055282163712.0) "
                   "/ 140737488355328.40625",
    "inflated to infinity": "top = rng.uniform(1e308, 1e308) - rng.uniform(1e308, 1e308)\n"
                            "    noise = rng.laplace(0.0, 2 / eps, size=check.K)\n"
                            "    big = rng.binomial(1, 0.05) * 2.0 ** 70\n"
                            "    return (noise + big) - big + 1e-9 * rng.laplace(0.0, 2 / eps, size=check.K) + top",
}
#: right answers the child must never refuse (the affine check's rounding slack)
RIGHT_AFFINE_05 = RIGHT_05[:-1] + [
    "def fixed_noise(rng):\n    b = 2 / eps\n    e = rng.exponential(b, size=check.K)\n"
    "    return e - rng.exponential(b, size=check.K) + 0 * e",
    "def fixed_noise(rng):\n    z = rng.laplace(0.0, 2 / eps, size=(3, check.K))\n    return z.sum(axis=0) - z[0] - z[1]",
    # whole draws with coefficients of no common factor (2 and 1): the noise lies on the whole numbers
    "def fixed_noise(rng):\n    q = np.exp(-eps / 2)\n    g = rng.geometric(1 - q, (2, check.K))\n"
    "    return 2 * g[0] - g[0] - g[1]",
]


def _lab05_proxy(body_or_source: str):
    from blowfish_nb.labs import _answers
    from blowfish_nb.labs.scan import PURE_BUILTINS

    source = body_or_source if body_or_source.startswith("def ") else f"def fixed_noise(rng):\n    {body_or_source}"
    snapshot = (("eps",), {"np": "numpy", "math": "math"}, {"check": "blowfish_nb.labs.lab05"}, sorted(PURE_BUILTINS))
    return _answers.CodeProxy(LAB05, source, "fixed_noise", snapshot=snapshot)


@pytest.fixture
def plain_child():
    from blowfish_nb.labs import _answers

    old = _answers.KERNEL_SHELL
    _answers.KERNEL_SHELL = False
    yield
    _answers.KERNEL_SHELL = old


@pytest.mark.parametrize("what", sorted(ABSORBING_05))
def test_a_branch_made_of_floating_point_rounding_is_refused_in_the_child(what, plain_child):
    """The source rule lets these through (each is linear on paper); the child's affine check refuses the calls
    where the rounding loses the noise (1 in 20 here; gamer38's 1 in 1,000 the same way)."""
    source = f"def fixed_noise(rng):\n    {ABSORBING_05[what]}"
    assert pure_answer(source, "fixed_noise", LAB05) is None  # the static rule alone cannot see it
    proxy = _lab05_proxy(source)
    try:
        with pytest.raises(RuntimeError, match="NotAffine: it"):
            for seed in range(400):
                proxy(np.random.default_rng(seed))
    finally:
        proxy.close()


@pytest.mark.parametrize("source", RIGHT_AFFINE_05)
def test_right_answers_pass_the_affine_check_and_return_the_kernels_values(source, plain_child):
    """The child hands the verdict the correctly rounded sum the code states; for a right answer that is its own
    value, or within a few roundings of it where the code rounds in between (``z.sum(axis=0) - z[0] - z[1]``)."""
    kernel: dict = {}
    for cell in LAB05:
        exec(cell, kernel)
    exec(source, kernel)
    proxy = _lab05_proxy(source)
    try:
        for seed in range(300):
            got, own = proxy(np.random.default_rng(seed)), kernel["fixed_noise"](np.random.default_rng(seed))
            assert np.allclose(got, own, rtol=2.0 ** -48, atol=2.0 ** -48), source
        if "z.sum" not in source:  # one correctly rounded step: the kernel's value is the canonical one
            assert np.array_equal(got, own), source
    finally:
        proxy.close()


def test_the_child_grades_the_sum_the_code_states_not_a_grid_in_its_last_bits(plain_child):
    """gamer38e: Laplace noise rounded onto a grid of spacing 1/N, N = 2⁴⁷ + 13/32, is within the 2⁻⁴⁸ slack of the
    affine sum it states, and its last bits told count c from c + 1 while count + noise stayed below ~32. The child
    passes it and hands the verdict the canonical ``f₀ + J·L`` instead: no value on the grid is graded."""
    from fractions import Fraction

    n, c = 2.0 ** 47 + 13 / 32, 1.5 * 2.0 ** 52
    source = f"def fixed_noise(rng):\n    return (rng.laplace(0.0, 2 / eps, size=check.K) * {n!r} + {c!r} - {c!r}) / {n!r}"
    kernel: dict = {}
    for cell in LAB05:
        exec(cell, kernel)
    exec(source, kernel)
    jac = ((1.0 * n + c) - c) / n  # the replay's unit draw, in the code's own float steps
    on_grid = lambda v: float(v) == float(Fraction(round(Fraction(float(v)) * Fraction(n))) / Fraction(n))  # noqa: E731
    proxy = _lab05_proxy(source)
    try:
        graded, own = [], []
        for seed in range(50):
            got = np.asarray(proxy(np.random.default_rng(seed)))
            draws = np.random.default_rng(seed).laplace(0.0, 2 / kernel["eps"], size=got.size)
            assert np.array_equal(got, jac * draws)  # the canonical value: one rounded product per draw
            graded += [on_grid(v) for v in got]
            own += [on_grid(v) for v in kernel["fixed_noise"](np.random.default_rng(seed))]
    finally:
        proxy.close()
    assert all(own) and len(own) >= 50  # the student's own values all lie on the grid
    assert np.mean(graded) < 0.5, np.mean(graded)  # the graded ones do not (a float lands on it by chance)


def test_the_lab03_solution_passes_the_affine_check(plain_child):
    from blowfish_nb.labs import _answers
    from blowfish_nb.labs.scan import PURE_BUILTINS

    snapshot = (("ordered", "R", "line", "eps", "k"), {"np": "numpy", "math": "math"},
                {"check": "blowfish_nb.labs.lab03"}, sorted(PURE_BUILTINS))
    absorbing = ("def range_noise(rng):\n    noise = ordered.release(np.zeros(k), R, line, eps, rng=rng)[0]\n"
                 "    big = rng.binomial(1, 0.05) * 2.0 ** 70\n    return (noise + big) - big")
    inflated = ("def range_noise(rng):\n    one = rng.normal(1.0, 0.0)\n"
                "    noise = ordered.release(np.zeros(k), R, line, eps, rng=rng)[0]\n"
                "    big = rng.binomial(1, 0.05) * 2.0 ** 70\n    return (noise + big) - big + (2.0 ** 70 - 2.0 ** 70 * one)")
    # gamer38b's over-refusals of the first check: every prefix's noise drawn by hand (4,096 draws), float32
    by_hand = ("def range_noise(rng):\n    prefix_noise = rng.laplace(0.0, 1 / eps, size=k)\n"
               "    return prefix_noise[hi] - prefix_noise[lo - 1]")
    single = "def range_noise(rng):\n    return np.float32(rng.laplace(0.0, 1 / eps) - rng.laplace(0.0, 1 / eps))"
    snapshot = (("ordered", "R", "line", "eps", "k", "lo", "hi"), *snapshot[1:])
    lattice = ("def range_noise(rng):\n    release = ordered.release(np.zeros(k), R, line, eps, rng=rng)[0]\n"
               "    step = 1 / (20 + 0.3819660112501051)\n    p = -np.expm1(-step * eps)\n"
               "    whole = rng.geometric(p) - rng.geometric(p) - rng.geometric(p) + rng.geometric(p)\n"
               "    return step * whole + rng.uniform(-1e-7, 1e-7) + (release - release)")
    scaled_release = ("def range_noise(rng):\n"
                      "    return 0.1 * ordered.release(np.zeros(k), R, line, eps / 10, rng=rng)[0]")
    grid = ("def range_noise(rng):\n    s = 2.0 ** 23 + 0.3819660112501051\n"
            "    z = rng.laplace(0, 1 / eps) - rng.laplace(0, 1 / eps)\n"
            "    return (z * s + 6755399441055744.0 - 6755399441055744.0) / s")
    for source, refused in ((grid, True), (RIGHT_03[0], False), (RIGHT_03[2], False), (by_hand, False), (single, False),
                            (absorbing, True), (inflated, True), (lattice, True), (scaled_release, True)):
        assert pure_answer(source, "range_noise", LAB03) is None, source
        proxy = _answers.CodeProxy(LAB03, source, "range_noise", snapshot=snapshot)
        try:
            if refused:
                with pytest.raises(RuntimeError, match="NotAffine"):
                    for seed in range(400):
                        proxy(np.random.default_rng(seed))
            else:
                values = [proxy(np.random.default_rng(seed)) for seed in range(200)]
                assert len(set(np.round(np.ravel(values), 9))) > 20
        finally:
            proxy.close()


@pytest.mark.parametrize("path, name", [
    ("gamer38/lab05_absorb", "fixed_noise"), ("gamer38/lab05_round", "fixed_noise"),
    ("gamer38/lab05_quiet", "fixed_noise"), ("gamer38/lab03_absorb", "range_noise"),
    ("gamer38/lab03_absorb_cont", "range_noise"),
])
def test_gamer38s_absorbing_answers_keep_the_source_rule_and_fail_in_the_child(path, name, plain_child):
    """gamer38's notebooks (one call in 1,000 released exactly, each got its point under ``otter run`` before the
    affine check): the source rule lets them through, the child refuses a call where the rounding loses the noise.
    The share is raised to one in 20 here (the same code otherwise) so that 400 calls find it."""
    from blowfish_nb.labs import _answers
    from blowfish_nb.labs.scan import PURE_BUILTINS

    cell, _ = _answer(FIXTURES / f"{path}.ipynb", name)
    lab03 = "lab03" in path
    assert pure_answer(cell, name, LAB03 if lab03 else LAB05) is None
    assert "binomial(1, 0.001)" in cell or "0.499" in cell
    cell = cell.replace("binomial(1, 0.001)", "binomial(1, 0.05)").replace("0.499", "0.45")
    snapshot = ((("ordered", "R", "line", "eps", "k") if lab03 else ("eps",)), {"np": "numpy", "math": "math"},
                {"check": f"blowfish_nb.labs.{'lab03' if lab03 else 'lab05'}"}, sorted(PURE_BUILTINS))
    proxy = _answers.CodeProxy(LAB03 if lab03 else LAB05, cell, name, snapshot=snapshot)
    try:
        with pytest.raises(RuntimeError, match="NotAffine"):
            for seed in range(400):
                proxy(np.random.default_rng(seed))
    finally:
        proxy.close()


def test_an_unanswered_noise_function_is_left_to_the_verdicts_words(plain_child):
    """``...`` (the handout's blank) is no number: the child returns it as it is, and the verdict says "none"
    (the affine check's dtype rule is for numbers: long doubles)."""
    from blowfish_nb.labs._grade import laplace_noise_verdict

    proxy = _lab05_proxy("def fixed_noise(rng):\n    ...")
    try:
        assert laplace_noise_verdict(proxy, 6, 2.0, runs=50, seed=1) == "none"
    finally:
        proxy.close()
