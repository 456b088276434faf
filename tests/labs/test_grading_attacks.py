"""Issue 26, holes 1, 5, 6, 7: what otter cannot stop from inside the grading kernel, the teacher's scan flags.

The fixtures (tests/labs/fixtures/gamer31/) are the code cells of the student-gamer's attack notebooks (reading or
rewriting ./tests, brute-forcing the hint tables, replacing numpy names and peeking at the test's frame, patching
the grading module or builtins, redefining the checks). Each must be flagged; no solution notebook may be.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from blowfish_nb.labs.build import SOURCE
from blowfish_nb.labs.scan import main, scan_notebook, scan_source

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "gamer31").glob("*.ipynb"))
SOLUTIONS = sorted(SOURCE.glob("*.ipynb"))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_every_attack_notebook_is_flagged(path):
    assert scan_notebook(path), f"{path.name}: nothing flagged"


@pytest.mark.parametrize("path, why", [
    ("1_read_hidden_tests", "names a file or the tests folder"), ("1b_overwrite_hidden_tests", "calls open"),
    ("2_hash_bruteforce", "imports importlib.resources"), ("6_numpy_frame_peek", "monkeypatches _np.ndarray"),
    ("6_numpy_frame_peek", "uses ._getframe"), ("7_grade_module_patch", "imports blowfish_nb.labs._grade"),
    ("7b_builtins_abs", "monkeypatches builtins.abs"), ("0_baseline_zeros_redefined", "rebinds grader"),
    ("0_baseline_zeros_redefined", "calls setattr"),
])
def test_the_flag_names_the_attack(path, why):
    flags = scan_notebook(Path(__file__).parent / "fixtures" / "gamer31" / f"{path}.ipynb")
    assert any(f.why.startswith(why) for f in flags), [f.why for f in flags]


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_no_solution_notebook_is_flagged(path):
    """The master notebooks hold every cell of the handout and of the solution: the lab's own code is never flagged
    (so a flag is always code a student added)."""
    assert scan_notebook(path) == []


def test_the_built_set_up_cell_is_not_flagged_but_a_second_grader_is():
    setup = 'from blowfish_nb.labs._check import Grader\n\ngrader = Grader("lab02")'
    nb = {"cells": [{"cell_type": "code", "source": setup}, {"cell_type": "code", "source": "grader = None"}]}
    assert [f.why for f in _scan(nb)] == ["rebinds grader"]


def test_ordinary_student_code_is_not_flagged():
    code = ("import numpy as np\nimport blowfish_nb as bf\nx = np.array([1, 2])\nrng = np.random.default_rng(0)\n"
            "def fixed_draw(x, size, rng):\n    return x + rng.laplace(0, 2.0, (size, len(x)))\n"
            "errors = {}\nerrors['a'] = 1\nprint(bf.__name__)")
    assert scan_source(code) == []


#: the second student-gamer's one-line forms that the first scan missed (each was part of a 100 % otter score or a
#: forged record): every one must be flagged, and the lab's own set-up line and namespace tests must not be
SECOND_GAMER = {
    "bare __builtins__": "B = __builtins__\nB.exec = fx",
    "builtins item": "B = __builtins__\nB['abs'] = fx",
    "module alias by assignment": "import numpy as np\nm = np\nm.isclose = fx",
    "vars(module).update": "import math\nvars(math).update(isinf=fx)",
    "module __dict__": "import numpy as np\nnp.__dict__.update(ndarray=list)",
    "globals().update": "globals().update(grader=None, check=None)",
    "for target": "for check in [None]: pass",
    "import alias": "from blowfish_nb.labs._check import Grader as grader",
    "walrus": "(check := None)",
    "a lab module's os": "from blowfish_nb.labs import _check as c\nc.os.listdir('.')",
    "Path.open": "p = q.iterdir()\np.open().read()",
    "np.fromfile": "import numpy as np\nnp.fromfile('te' + 'sts', dtype=np.uint8)",
    "caller's frame": "c.inspect.getargvalues(c.inspect.stack()[1].frame).locals",
    "closure": "d.__closure__[0].cell_contents",
    "recorder override": "grader._record = lambda q, a: '1'",
    "object.__setattr__": "import numpy as np\nobject.__setattr__(np, 'abs', fx)",
    "type.__setattr__": "import math\ntype(math).__setattr__(math, 'isinf', fx)",
    # issue 26's last review: builtins.exec through the bare name (the hidden tests load their copy of _grade with
    # exec: 100 % on all nine labs); otter's own test runner and the pickle that writes its results are as open (one
    # line, 100 % on lab 1), so no other way of loading _grade would close it: the scan is the answer
    "bare __builtins__.exec": "def fx(src, g=None, l=None):\n    pass\n__builtins__.exec = fx",
    "otter's test runner": "import otter.test_files.exception_test as m\nm.test_case.call_func = lambda s, e: None",
    "otter's runner by from-import": "from otter.test_files.exception_test import test_case as T\nT.call_func = print",
    "pickle of the results": "import pickle\npickle.dump = print",
}


@pytest.mark.parametrize("code", SECOND_GAMER.values(), ids=SECOND_GAMER.keys())
def test_the_second_gamers_forms_are_flagged(code):
    assert scan_source(code), code


def test_the_set_up_import_and_namespace_tests_are_not_flagged():
    code = ("from blowfish_nb.labs import lab09 as check\ndf = check.data()\n"
            "if 'errors' in globals():\n    print(len(errors))")
    assert scan_source(code) == []


def test_the_command_prints_one_line_per_flag_and_exits_1(capsys):
    assert main([str(FIXTURES[0]), str(SOLUTIONS[0])]) == 1
    out = capsys.readouterr().out
    assert "nothing flagged" in out and "1 of 2 notebook(s) flagged" in out


def _scan(nb):
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".ipynb", delete=False) as f:
        json.dump(nb, f)
    try:
        return scan_notebook(f.name)
    finally:
        Path(f.name).unlink()


def _built(check_metadata):
    setup = 'from blowfish_nb.labs._check import Grader\n\ngrader = Grader("lab06")'
    return {"cells": [{"cell_type": "code", "source": setup, "metadata": {}},
                      {"cell_type": "code", "source": "total_spent = 0.5", "metadata": {}},
                      {"cell_type": "code", "source": 'grader.check("q1")', "metadata": check_metadata}]}


def test_a_check_cell_that_lost_its_grading_mark_is_flagged():
    # otter grades a question right after the check cell that carries the mark; without it, after the last cell,
    # where an answer copied from a result (total_spent = s.spent) would be the one graded
    assert _scan(_built({"otter": {"tests": ["q1"]}})) == []
    for lost in ({}, {"otter": {}}, {"otter": {"tests": ["q2"]}}):
        assert [f.why.split(" (")[0] for f in _scan(_built(lost))] == ["the check cell of q1 lost its grading mark"]
