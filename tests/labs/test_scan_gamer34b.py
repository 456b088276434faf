"""blowfish_nb.labs.scan against the fourth student-gamer's notebooks (branch gamer34b, issue 26).

The fixtures (tests/labs/fixtures/gamer34b/, outputs stripped) are built student notebooks of labs 2, 3, 5, 6, 8 and
9 (cand34's build) with their answer cells edited and, in most, one code cell added after a lab cell; each scored
full marks (lab 3's stego notebook 80 %) under ``otter run`` while ``python -m blowfish_nb.labs.scan --build
build/labs`` flagged none of them. Their tricks: the builtins namespace reached by ``operator.attrgetter`` of a
name built with ``chr`` and changed by ``dict.update``; payloads run by ``timeit.timeit``/``cProfile.run`` of
``bytes([...]).decode()``; the by-hand and predict answers computed in an added cell and the answer cells emptied;
``configparser`` reading ``tests/qN.py`` into ``check``'s own namespace, answered as ``x = check.k_x``; answers bound
through ``global`` and answered as ``x = x``; a mechanism that returns the true counts when ``size == 1`` or hides
bits of the counts in its last digits (``(v + C) - C``, ``&``, ``>>``); a dead ``if x is None: ….release(…)``.

The built student and solution notebooks of all nine labs and a notebook with every answer 0 stay clean, and
gamer34's fourteen notebooks stay flagged: tests/labs/test_scan_gamer34.py checks both against the same build.
No otter run here: the scan reads files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from blowfish_nb.labs.scan import allowed_import, compare_notebook, main, scan_notebook, scan_source

from . import built_labs_fixture, built_versions, lab_number

built_labs = pytest.fixture(scope="session")(built_labs_fixture)
FIXTURES = Path(__file__).parent / "fixtures" / "gamer34b"
SLUGS = {"02": "02-sensitivity-by-hand", "03": "03-ranges", "05": "05-break-it", "06": "06-spending-a-budget",
         "08": "08-strategies-and-lower-bounds", "09": "09-a-class-under-one-budget"}
ADDED = "is a code cell the handout does not have"

#: each gamer34b notebook and the flags (substrings of their reasons) that name its trick
EXPECTED = {
    "lab02_attrgetter_update": [ADDED, "imports operator.attrgetter", "uses chr"],
    "lab02_library_in_added_cell": [ADDED, "the answer cell of q1 does not assign delta_hist_dp",
                                    "the answer cell of q10 does not assign delta_cum_partition"],
    "lab03_timeit_payload": [ADDED, "imports timeit", "calls bytes of list", "decodes bytes("],
    "lab03_range_stego_added_cell": [ADDED, "the answer cell of q1 does not assign delta_prefix",
                                     "the answer cell of q3 makes no release where the lab's solution simulates",
                                     "rounds by adding and taking away c inside release_range",
                                     "takes bits (int(x[j]) >> 2 * s & 3) inside release_range"],
    "lab05_q2_exact_when_size1": [ADDED, "imports configparser",
                                  "reads check.k_true_loss, not a constant the lab module declares"],
    "lab05_stego_ulps_and_config_reader": [ADDED, "rounds by adding and taking away 192.0 inside fixed_draw",
                                           "takes bits (np.arange(size) & 3) inside fixed_draw",
                                           "imports configparser", "uses chr",
                                           "reads check.k_true_loss, not a constant the lab module declares"],
    "lab06_added_cell_binds_answers": [ADDED, "the answer cell of q1 does not assign total_spent",
                                       "the answer cell of q3 does not assign delta, eps_needed"],
    "lab08_cprofile_payload": [ADDED, "imports cProfile", "calls bytes of list", "decodes bytes("],
    "lab09_attrgetter_fromregex_globals": [ADDED, "declares ana_remaining, left_after", "uses chr",
                                           "imports operator.attrgetter",
                                           "the answer cell of q1 computes (uses ana_remaining, a name no lab cell"],
}


def _flags(path, built_labs):
    student, solution = built_versions(built_labs, SLUGS[lab_number(Path(path), SLUGS)])
    return scan_notebook(path) + compare_notebook(path, student, solution)


def test_the_fixtures_are_the_nine_notebooks():
    assert sorted(p.stem for p in FIXTURES.glob("*.ipynb")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_gamer34b_notebook_is_flagged_for_its_trick(name, built_labs):
    whys = [f.why for f in _flags(FIXTURES / f"{name}.ipynb", built_labs)]
    for expected in EXPECTED[name]:
        assert any(expected in why for why in whys), (expected, whys)


def test_the_command_flags_each(built_labs, capsys):
    for path in sorted(FIXTURES.glob("*.ipynb")):
        assert main(["--build", str(built_labs(SLUGS[lab_number(path, SLUGS)])), str(path)]) == 1
        assert "1 of 1 notebook(s) flagged" in capsys.readouterr().out


def _edited(student: Path, dest: Path, answers=None, extra=(), drop_ids=False) -> Path:
    """``student`` with every answer ``...`` made 0, ``answers`` {handout source: new source} applied, ``extra``
    code cells (index, source) inserted, and (``drop_ids``) every cell id removed (nbformat 4.4)."""
    nb = json.loads(student.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if "otter_answer_cell" in cell["metadata"].get("tags", []):
            src = "".join(cell["source"])
            cell["source"] = (answers or {}).get(src, src.replace("...", "0"))
        if drop_ids:
            cell.pop("id", None)
    for at, source in extra:
        nb["cells"].insert(at, {"cell_type": "code", "metadata": {}, "source": source, "outputs": [],
                                "execution_count": None})
    dest.write_text(json.dumps(nb), encoding="utf-8")
    return dest


def _whys(path, student, solution):
    return [f.why for f in compare_notebook(path, student, solution)]


def test_an_added_cell_is_flagged_but_an_empty_one_or_a_help_line_is_not(built_labs, tmp_path):
    student, solution = built_versions(built_labs, SLUGS["05"])
    quiet = _edited(student, tmp_path / "quiet.ipynb", extra=[(5, ""), (6, "# a note\n"), (7, "check.variant??")])
    assert _whys(quiet, student, solution) == []
    added = _edited(student, tmp_path / "added.ipynb", extra=[(5, "y = 1 + 1")])
    assert [w for w in _whys(added, student, solution) if ADDED in w] != []


def test_answer_cells_are_found_without_cell_ids(built_labs, tmp_path):
    """A notebook saved without cell ids (nbformat 4.4): each answer cell is the code cell in its place."""
    student, solution = built_versions(built_labs, SLUGS["06"])
    assert _whys(_edited(student, tmp_path / "zeros.ipynb", drop_ids=True), student, solution) == []
    added = _edited(student, tmp_path / "added.ipynb", extra=[(5, "y = 2")], drop_ids=True)
    assert any(ADDED in w for w in _whys(added, student, solution))


def test_a_changed_lab_cell_is_named(built_labs, tmp_path):
    student, solution = built_versions(built_labs, SLUGS["02"])
    nb = json.loads(student.read_text(encoding="utf-8"))
    at = next(i for i, c in enumerate(nb["cells"]) if "".join(c["source"]).startswith("def change("))
    nb["cells"][at]["source"] = "".join(nb["cells"][at]["source"]) + "\nprint('hi')"
    path = tmp_path / "changed.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert any(w.startswith(f"changes the lab's code cell {at}") for w in _whys(path, student, solution))


def test_an_answer_is_worked_out_in_its_own_cell_from_the_labs_names(built_labs, tmp_path):
    """``x = x`` and ``check.k_x`` (an attribute a student stored) are flagged; a declared constant
    (``check.THETA``) and arithmetic are not."""
    student, solution = built_versions(built_labs, SLUGS["02"])
    fine = _edited(student, tmp_path / "fine.ipynb", answers={"delta_cum_threshold = ...": "delta_cum_threshold = "
                                                              "check.THETA + 1 - 1"})
    assert _whys(fine, student, solution) == []
    for source, why in [("delta_cum_threshold = delta_cum_threshold", "uses delta_cum_threshold, a name no lab cell"),
                        ("delta_cum_threshold = check.k_x", "reads check.k_x, not a constant the lab module declares"),
                        ("# answered above", "the answer cell of q7 does not assign delta_cum_threshold")]:
        path = _edited(student, tmp_path / "bad.ipynb", answers={"delta_cum_threshold = ...": source})
        assert any(why in w for w in _whys(path, student, solution)), (source, _whys(path, student, solution))


def test_the_simulation_must_release_on_a_path_that_runs(built_labs, tmp_path):
    student, solution = built_versions(built_labs, SLUGS["03"])
    handout = next("".join(c["source"]) for c in json.loads(student.read_text(encoding="utf-8"))["cells"]
                   if "".join(c["source"]).startswith("def range_noise"))
    head = handout.split("    ...")[0] if "    ..." in handout else handout.rsplit("\n", 1)[0] + "\n"
    zero = "np.zeros(k, dtype=np.int64)"
    live = head + f"    return ordered.release({zero}, R, line, eps, rng=rng)[0]\n"
    assert _whys(_edited(student, tmp_path / "live.ipynb", answers={handout: live}), student, solution) == []
    for dead in (f"    if False:\n        ordered.release({zero}, R, line, eps, rng=rng)\n",
                 f"    return 1.0\n    ordered.release({zero}, R, line, eps, rng=rng)\n",
                 f"    def unused():\n        return ordered.release({zero}, R, line, eps, rng=rng)\n"):
        body = dead if "return 1.0" in dead else dead + "    return float(rng.laplace(0.0, 1 / eps))\n"
        path = _edited(student, tmp_path / "dead.ipynb", answers={handout: head + body})
        assert any("makes no release where the lab's solution simulates" in w
                   for w in _whys(path, student, solution)), body


def test_imports_are_allowed_by_what_the_lab_itself_imports(built_labs, tmp_path):
    """Lab 9's cells import sqlite3, so its answers may; lab 2's do not. Anything off the list is named."""
    assert allowed_import("numpy") and allowed_import("pandas") and allowed_import("blowfish_nb.mechanisms")
    assert not allowed_import("blowfish_nb.labs._grade", {"blowfish_nb.labs"}) and not allowed_import("functools")
    nine, nine_sol = built_versions(built_labs, SLUGS["09"])
    path = _edited(nine, tmp_path / "nine.ipynb", answers={"ana_remaining = ...": "import sqlite3\nana_remaining = 0"})
    assert not any("imports" in w for w in _whys(path, nine, nine_sol))
    two, two_sol = built_versions(built_labs, SLUGS["02"])
    for module in ("sqlite3", "functools", "pdb", "doctest"):
        path = _edited(two, tmp_path / "two.ipynb",
                       answers={"delta_hist_dp = ...": f"import {module}\ndelta_hist_dp = 0"})
        assert any(w.startswith(f"imports {module}, which is not") for w in _whys(path, two, two_sol)), module


#: one-line forms of gamer34b's tricks, flagged without the lab build (the allow-list needs it; these do not)
FORMS = {
    "map(chr, …)": 'n = "".join(map(chr, (95, 95, 115)))',
    "ord": "k = ord('a')",
    "bytes of a list, decoded": "s = bytes([116, 101]).decode()",
    "bytes of a generator": "s = bytes(c for c in (116, 101))",
    "bytearray": "s = bytearray(b'te')",
    "%c": "s = '%c%c' % (116, 101)",
    "{:c}": "s = f'{116:c}'",
    "format(…, 'c')": "s = format(116, 'c')",
    "global": "def load():\n    global answer\n    answer = 1",
    "nonlocal": "def outer():\n    a = 0\n    def inner():\n        nonlocal a\n        a = 1",
    "timeit": "import timeit",
    "cProfile": "import cProfile",
    "pdb": "import pdb",
    "doctest": "from doctest import run_docstring_examples",
    "configparser": "import configparser",
    "operator": "from operator import attrgetter",
    "functools": "from functools import reduce",
    "exec as a value": "list(map(exec, ['x = 1']))",
    "eval bound to a name": "f = eval",
    "getattr as a value": "list(map(getattr, [abs], [name]))",
    "breakpoint": "breakpoint()",
    "a reversed path": "p = 'yp.1q/stset'[::-1]",
    "a repeated dunder": "n = '_' * 2 + 'self' + '_' * 2",
    "pandas' eval of a string": "pd.eval(expr, engine='python')",
    "numpy's compiler": "np.f2py.compile(src, 'm')",
    "numpy's compiler imported": "from numpy import f2py",
    "pandas' os": "from pandas.io.common import os",
}


@pytest.mark.parametrize("code", FORMS.values(), ids=FORMS.keys())
def test_gamer34b_forms_are_flagged_without_the_build(code):
    assert scan_source(code), code
