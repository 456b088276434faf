"""blowfish_nb.labs.scan against the third student-gamer's notebooks (branch gamer34, issue 26).

The fixtures (tests/labs/fixtures/gamer34/, outputs stripped) are built student notebooks of labs 2, 3, 5, 6, 8 and 9
with only their answer cells edited; each scored full marks (lab 5's oracle: q4a) under ``otter run`` while
``python -m blowfish_nb.labs.scan --build build/labs`` flagged none of them. Their tricks: IPython shell lines and
``%%writefile`` cells that read or rewrite the hidden tests in ``./tests``, the builtins module as ``abs.__self__``,
``get_ipython().run_cell`` of a hex payload, ``np.fromregex`` of a split path, library calls and scratch runs in the
answer cells of by-hand and predict questions, a made-up simulation, a mechanism that recognises the grader's input
or hides the data in its digits, and the public check used as an oracle. No otter run here: the scan reads files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from blowfish_nb.labs.scan import compare_notebook, scan_notebook, scan_source

from . import built_labs_fixture, built_versions, lab_number

built_labs = pytest.fixture(scope="session")(built_labs_fixture)
FIXTURES = Path(__file__).parent / "fixtures" / "gamer34"
SLUGS = {"01": "01-neighbours-and-policies", "02": "02-sensitivity-by-hand", "03": "03-ranges",
         "04": "04-spanning-trees", "05": "05-break-it", "06": "06-spending-a-budget",
         "07": "07-data-dependent-and-constraints", "08": "08-strategies-and-lower-bounds",
         "09": "09-a-class-under-one-budget"}

#: each gamer34 notebook and the flags (substrings of their reasons) that name its trick
EXPECTED = {
    "lab02_shell_rewrites_tests": ["runs an IPython shell command or magic (!sed -i"],
    "lab02_library_sensitivity": ["the answer cell of q1 computes (calls bf.policy.dp(domain).sensitivity)"],
    "lab03_builtins_via_abs_self": ["uses .__self__ (the builtins module)",
                                    "assigns an attribute of an object the cell did not create (b_.exec"],
    "lab03_library_and_made_up_mc": ["the answer cell of q1 computes (calls bf.mechanisms.Ordered().sensitivity)",
                                     "the answer cell of q3 makes no release where the lab's solution simulates"],
    "lab05_q2_recognises_grader_input": ["compares with the lab's public data check.Q2_DATA inside fixed_draw"],
    "lab05_q2_steganographic_laplace": ["rounds or takes a remainder inside fixed_draw"],
    "lab05_run_cell_hex_payload": ["uses get_ipython", "uses .run_cell", "calls fromhex"],
    "lab05_q4a_public_check_oracle": ["calls the public check check.q4a in a cell the student wrote"],
    "lab06_shell_reads_tests": ["runs an IPython shell command or magic (!sed -n",
                                "the answer cell of q1 computes (a ImportFrom statement)"],
    "lab06_predict_on_scratch_session": ["the answer cell of q1 computes (calls df.blowfish.session)"],
    "lab08_library_in_predict_cells": ["the answer cell of q1 computes (calls bf.workload.identity)",
                                       "the answer cell of q3 computes", "the answer cell of q6 computes"],
    "lab08_writefile_appends_to_tests": ["is an IPython cell magic (%%writefile -a tests/q1.py)"],
    "lab09_predict_on_scratch_classroom": ["the answer cell of q1 computes (a FunctionDef statement)",
                                           "the answer cell of q6 computes (calls check.classroom)"],
    "lab09_fromregex_reads_tests": ["calls fromregex", "names a file or the tests folder ('tests/*.py')"],
}


def _lab(path: Path) -> str:
    return lab_number(path, SLUGS)


_versions = built_versions


def _flags(path, built_labs):
    student, solution = _versions(built_labs, SLUGS[_lab(Path(path))])
    return scan_notebook(path) + compare_notebook(path, student, solution)


def test_the_fixtures_are_the_fourteen_notebooks():
    assert sorted(p.stem for p in FIXTURES.glob("*.ipynb")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_gamer34_notebook_is_flagged_for_its_trick(name, built_labs):
    whys = [f.why for f in _flags(FIXTURES / f"{name}.ipynb", built_labs)]
    for expected in EXPECTED[name]:
        assert any(expected in why for why in whys), (expected, whys)


def _with_answers(student: Path, dest: Path, answer=lambda src: src.replace("...", "0"), extra=None) -> Path:
    nb = json.loads(student.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if "otter_answer_cell" in cell["metadata"].get("tags", []):
            cell["source"] = answer("".join(cell["source"]))
    for at, source in extra or ():
        nb["cells"].insert(at, {"cell_type": "code", "metadata": {}, "source": source, "outputs": [],
                                "execution_count": None})
    dest.write_text(json.dumps(nb), encoding="utf-8")
    return dest


@pytest.mark.parametrize("slug", sorted(SLUGS.values()))
def test_every_built_version_and_a_zeros_notebook_are_clean(slug, built_labs, tmp_path):
    """The lab's own cells use no IPython syntax, no dunder beyond ``__name__``, no file reader, no attribute store;
    the solution's answers pass the by-hand rule; a notebook with every answer 0 is not flagged either."""
    student, solution = _versions(built_labs, slug)
    for path in (student, solution, _with_answers(student, tmp_path / f"{slug}.ipynb")):
        assert scan_notebook(path) + compare_notebook(path, student, solution) == [], path


def test_the_help_line_lab_5_asks_for_is_not_flagged(built_labs, tmp_path):
    student, solution = _versions(built_labs, SLUGS["05"])
    path = _with_answers(student, tmp_path / "help.ipynb", extra=[(5, "check.variant??"), (6, "?check.variant")])
    assert scan_notebook(path) + compare_notebook(path, student, solution) == []


def test_a_local_named_like_a_reveal_object_is_not_flagged_but_a_module_level_one_is(built_labs, tmp_path):
    """gamer34's first lab 9 version was flagged for ``c`` and ``pool`` inside its own helper function."""
    student, solution = _versions(built_labs, SLUGS["09"])
    helper = "def helper(xs):\n    c = len(xs)\n    pool = [x for x in xs]\n    return c, pool\n"
    path = _with_answers(student, tmp_path / "local.ipynb", extra=[(5, helper)])
    assert [f for f in compare_notebook(path, student, solution) if "reveal" in f.why] == []
    path = _with_answers(student, tmp_path / "global.ipynb", extra=[(5, helper + "c = helper([1])\n")])
    assert any("assigns c, an object of the lab's reveal cells" in f.why
               for f in compare_notebook(path, student, solution))


def test_a_predict_answer_must_be_a_value(built_labs, tmp_path):
    """Arithmetic of numbers, and the lab's names and constants, are a value worked out by hand; a read of a
    session's state is not."""
    student, solution = _versions(built_labs, SLUGS["06"])
    fine = _with_answers(student, tmp_path / "fine.ipynb",
                         answer=lambda s: s.replace("...", "0.1 + 0.25 + max(0.2, 0)"))
    assert compare_notebook(fine, student, solution) == []
    read = _with_answers(student, tmp_path / "read.ipynb",
                         answer=lambda s: s.replace("total_spent = ...", "total_spent = s.spent"))
    assert [f.why.split(" (")[0] for f in compare_notebook(read, student, solution)] == [
        "the answer cell of q1 computes"]
    at = next(i for i, c in enumerate(json.loads(student.read_text(encoding="utf-8"))["cells"])
              if "".join(c["source"]) == "total_spent = ...")
    passed = _with_answers(student, tmp_path / "passed.ipynb", extra=[(at, "r = s.spent")],
                           answer=lambda s: s.replace("total_spent = ...", "total_spent = r"))
    assert any("the answer cell of q1 computes (uses r," in f.why for f in compare_notebook(passed, student, solution))


#: kernel patching and file reading in forms the earlier scan did not track (each one line or two)
FORMS = {
    "for target": "for m in [np]:\n    m.mean = len",
    "parameter": "def f(m):\n    m.mean = len",
    "subscript": "[np][0].mean = len",
    "call result": "g = (lambda: np)()\ng.mean = len",
    "__import__ as an attribute": "o = b.__import__('o' + 's')",
    "run_line_magic": "ip = get_ipython\nip().run_line_magic('ls', '')",
    "globals() bound to a name": "g = globals()\ng['x'] = 1",
    "np.load": "np.load('x.npy')",
    "np.loadtxt": "np.loadtxt('x')",
    "np.genfromtxt": "np.genfromtxt('x')",
    "pandas read_*": "pd.read_table('x')",
    "f-string path": "p = f\"te{'sts'}/{q}.py\"",
    "str.join path": "p = '/'.join(['te' + 'sts', q])",
    "hex path": "p = bytes.fromhex('74657374732f').decode()",
    "format path": "p = '{}sts/{}'.format('te', q)",
    "getattr of a built name": "getattr(abs, '__se' + 'lf__')",
    "shell output bound": "x = !ls tests",
    "indented shell line": "if True:\n    !ls",
    "line magic": "%run -i notes",
    "a dunder spelled as a string": "from operator import attrgetter\nb = attrgetter('__se' + 'lf__')(abs)",
}


@pytest.mark.parametrize("code", FORMS.values(), ids=FORMS.keys())
def test_the_forms_the_earlier_scan_missed_are_flagged(code):
    assert scan_source(code), code


def test_a_students_own_objects_may_be_assigned():
    code = ("class Box:\n    def __init__(self):\n        self.x = 1\nb = Box()\nb.y = 2\nxs = [1]\nxs[0] = 3\n"
            "d = {}\nd['a'] = 1\nprint('%d%%' % 5, type(d).__name__)\nif 'd' in globals():\n    pass")
    assert scan_source(code) == []


def test_the_public_check_taken_as_a_value_is_an_oracle_too(built_labs, tmp_path):
    student, solution = _versions(built_labs, SLUGS["05"])
    for code in ("f = check.q4a\n", "f = getattr(check, 'q' + '4a')\n"):
        path = _with_answers(student, tmp_path / "oracle.ipynb", extra=[(5, code)])
        assert any("check.q4a in a cell the student wrote" in f.why for f in compare_notebook(path, student, solution))
