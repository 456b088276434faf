"""blowfish_nb.labs.scan against the fifth student-gamer's notebooks (branch gamer35, issue 26).

The fixtures (tests/labs/fixtures/gamer35/, outputs stripped) are cand35's built student notebooks of labs 2, 3, 5
and 8 with only their answer cells edited; ``python -m blowfish_nb.labs.scan --build build/labs`` flagged none. Their
tricks: a code answer that finds the course folder through ``/proc/<pid>/cwd`` (a ``Path`` from the public
``reference_data_dir("/")``, ``resolve``, ``rglob``), reads the autograder zip with ``np.lib.npyio.NpzFile``, and
rewrites the installed lab module or plants a start-up hook with ``DataFrame.to_string(buf=…)``; hidden values
carried into the by-hand cells through NumPy's print options (``set_printoptions(nanstr=…)`` read back by
``array2string``/``fromstring``); lab 2's by-hand Δs computed with ``np.expand_dims``/``np.diff`` over the lab's
workloads; noise multiplied by ``rng.bit_generator.seed_seq.entropy > 2**64`` (the verdict side of that one:
tests/labs/test_lab05_q2.py and test_lab03_q3.py). ``lab02_blank`` is the victim of the start-up hook, every answer
``...``: it has no trick of its own and scans clean (the hook is flagged in ``lab05_plants_startup_hook``).
No otter run here: the scan reads files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from blowfish_nb.labs.scan import compare_notebook, main, scan_notebook, scan_source

from . import built_labs_fixture, built_versions, lab_number

built_labs = pytest.fixture(scope="session")(built_labs_fixture)
FIXTURES = Path(__file__).parent / "fixtures" / "gamer35"
SLUGS = {"02": "02-sensitivity-by-hand", "03": "03-ranges", "05": "05-break-it",
         "08": "08-strategies-and-lower-bounds"}
PROC = ["uses reference_data_dir", "uses resolve", "uses rglob", "names /proc"]
WRITER = ["calls to_string: a writer", "passes buf= to"]
NPZ = ["reaches NumPy's internals through np.lib", "uses NpzFile"]
SEED = ["reads the generator's seed or state (.bit_generator)", "(.seed_seq)", "(.entropy)"]

#: each gamer35 notebook and the flags (substrings of their reasons) that name its trick
EXPECTED = {
    "lab02_blank": [],
    "lab02_numpy_in_by_hand_cells": [f"the answer cell of q{i} computes (calls np.max, not a scalar function"
                                     for i in range(1, 11)],
    "lab03_seeded_rng_exact": SEED,
    "lab03_zip_via_proc_fromstring": PROC + NPZ + ["uses NumPy's global state (set_printoptions)",
                                                   "uses NumPy's global state (fromstring)",
                                                   "uses array2string as a value"],
    "lab05_plants_startup_hook": PROC + WRITER,
    "lab05_rewrites_lab_module": PROC + WRITER,
    "lab05_seeded_rng_exact": SEED,
    "lab05_zip_via_proc_printoptions": PROC + NPZ + ["uses NumPy's global state (set_printoptions)",
                                                     "uses array2string as a value"],
    "lab08_rewrites_lab_module": PROC + WRITER,
}


def _flags(path, built_labs):
    student, solution = built_versions(built_labs, SLUGS[lab_number(Path(path), SLUGS)])
    return scan_notebook(path) + compare_notebook(path, student, solution)


def test_the_fixtures_are_the_nine_notebooks():
    assert sorted(p.stem for p in FIXTURES.glob("*.ipynb")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_gamer35_notebook_is_flagged_for_its_trick(name, built_labs):
    whys = [f.why for f in _flags(FIXTURES / f"{name}.ipynb", built_labs)]
    for expected in EXPECTED[name]:
        assert any(expected in why for why in whys), (expected, whys)
    assert bool(whys) == bool(EXPECTED[name]), whys  # the blank lab 2 notebook: nothing of its own to flag


def test_the_command_flags_each_trick(built_labs, capsys):
    for path in sorted(FIXTURES.glob("*.ipynb")):
        if not EXPECTED[path.stem]:
            continue
        assert main(["--build", str(built_labs(SLUGS[lab_number(path, SLUGS)])), str(path)]) == 1
        assert "1 of 1 notebook(s) flagged" in capsys.readouterr().out


#: one-line forms flagged in any cell (no lab cell has one; the solution scans of test_scan_gamer34.py check that)
FORMS = {
    "a Path walked": "z = sorted(top.rglob('*.zip'))",
    "a Path resolved": "p = (top / 'x').resolve()",
    "/proc folded through Path division": "me = top / 'pro' 'c' / 'self'",
    "/proc in a string": "p = '/pr' + 'oc/self/cwd'",
    "the public helper's Path": "from blowfish_nb.datasets.reference import reference_data_dir\nt = "
                                "reference_data_dir('/')",
    "NumPy's zip reader": "box = np.lib.npyio.NpzFile('a.zip')",
    "a generator's seed": "f = lambda rng: rng.bit_generator.seed_seq.entropy",
    "a generator's state": "s = rng.bit_generator.state",
    "a spawn key": "k = rng.bit_generator.seed_seq.spawn_key",
    "getattr of the seed": "s = getattr(rng, 'bit_generator')",
    "__getstate__": "s = rng.__getstate__()",
}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_each_form_is_flagged_in_any_cell(name):
    assert scan_source(FORMS[name]) != [], name


def _edited(student: Path, dest: Path, answers: dict) -> Path:
    nb = json.loads(student.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if "otter_answer_cell" in cell["metadata"].get("tags", []):
            src = "".join(cell["source"])
            cell["source"] = answers.get(src, src.replace("...", "0"))
    dest.write_text(json.dumps(nb), encoding="utf-8")
    return dest


#: forms flagged in a cell the student wrote (with the lab build): writers, NumPy's global state, array text as a value
STUDENT_FORMS = {
    "to_string(buf=…)": ("pd.DataFrame([[1]]).to_string(buf='x')", "passes buf= to"),
    "to_csv": ("pd.DataFrame([[1]]).to_csv('x')", "calls to_csv"),
    "to_json": ("pd.DataFrame([[1]]).to_json('x')", "calls to_json"),
    "json-like dump": ("pickle_like.dump(obj, fh)", "calls dump"),
    "savetxt": ("np.savetxt('x', a)", "calls savetxt"),
    "tofile": ("a.tofile('x')", "tofile"),
    "np.save": ("np.save('x', a)", "calls save"),
    "print(file=…)": ("print(1, file=fh)", "passes file= to print"),
    "set_printoptions": ("np.set_printoptions(nanstr='3')", "global state (set_printoptions)"),
    "printoptions as a context": ("with np.printoptions(precision=2):\n    pass", "global state (printoptions)"),
    "get_printoptions": ("v = np.get_printoptions()['nanstr']", "global state (get_printoptions)"),
    "setbufsize": ("np.setbufsize(8192 * 3)", "global state (setbufsize)"),
    "getbufsize": ("v = np.getbufsize()", "global state (getbufsize)"),
    "seterr": ("np.seterr(over='ignore')", "global state (seterr)"),
    "geterr": ("v = np.geterr()", "global state (geterr)"),
    "seterrcall": ("np.seterrcall(f)", "global state (seterrcall)"),
    "fromstring": ("v = np.fromstring('1|2', sep='|')", "global state (fromstring)"),
    "array2string as a value": ("v = float(np.array2string(np.array(np.nan)))", "uses array2string as a value"),
    "array_repr as a value": ("v = np.array_repr(a)[3:]", "uses array_repr as a value"),
}


def test_student_cells_are_flagged_for_writers_and_numpy_state(built_labs, tmp_path):
    """In lab 5's free-form q2 cell (a code answer): each form is flagged; printing an array's text is not."""
    student, solution = built_versions(built_labs, SLUGS["05"])
    cells = json.loads(student.read_text(encoding="utf-8"))["cells"]
    handout = next("".join(c["source"]) for c in cells if "def fixed_noise" in "".join(c["source"])
                   and "otter_answer_cell" in c["metadata"].get("tags", []))
    for name, (line, why) in STUDENT_FORMS.items():
        path = _edited(student, tmp_path / "form.ipynb", {handout: handout + "\n" + line + "\n"})
        whys = [f.why for f in compare_notebook(path, student, solution)]
        assert any(why in w for w in whys), (name, whys)
    for fine in ("print(np.array2string(np.arange(3)))", "np.array_str(np.arange(3))"):
        path = _edited(student, tmp_path / "fine.ipynb", {handout: handout + "\n" + fine + "\n"})
        assert not [f.why for f in compare_notebook(path, student, solution) if "array" in f.why], fine


def test_by_hand_cells_take_only_arithmetic_of_numbers(built_labs, tmp_path):
    """Lab 2's by-hand cells: numbers, arithmetic, math and np.sqrt/np.log/np.exp, the lab's numeric constants and
    max/min/sum of literal tuples pass; NumPy array functions, the lab's workloads, ``@`` and max of an array do not."""
    student, solution = built_versions(built_labs, SLUGS["02"])
    for fine in ("delta_cum_threshold = check.THETA + 1 - 1", "delta_cum_threshold = max(2, 3) + math.log(1)",
                 "delta_cum_threshold = int(np.sqrt(16)) + sum((1, 0)) + 0 * np.pi",
                 "delta_cum_threshold = 2 * (5 - 1)"):
        path = _edited(student, tmp_path / "fine.ipynb", {"delta_cum_threshold = ...": fine})
        assert [f.why for f in compare_notebook(path, student, solution)] == [], fine
    for bad, why in [("delta_cum_threshold = np.max(np.abs(cumulative))", "calls np.max, not a scalar function"),
                     ("delta_cum_threshold = sum(sum(abs(cumulative)))", "calls sum of sum(abs(cumulative)"),
                     ("delta_cum_threshold = max(np.diff(np.arange(3)))", "np.diff"),
                     ("delta_cum_threshold = float(abs(ranges @ ranges.T))", "ranges"),
                     ("delta_cum_threshold = max([1, 2], key=abs)", "computes")]:
        path = _edited(student, tmp_path / "bad.ipynb", {"delta_cum_threshold = ...": bad})
        whys = [f.why for f in compare_notebook(path, student, solution)]
        assert any("the answer cell of q7 computes" in w and why in w for w in whys), (bad, whys)
