"""Grading that holds, lab by lab, under ``otter run`` with the autograder zip in a network namespace of its own
(no network): the solution scores full marks, and its executed notebook (otter's, kept with ``--pickle-results``)
raised nowhere (``--debug``) and shows every ``grader.check`` passed, so the solution runs once for both; a notebook
with every answer 0 that also redefines the public check names (and the lab module's checks) and replaces the
installed comparisons of ``blowfish_nb.labs._grade`` scores at most 30 % (each hidden test carries its own copy);
in labs 6 and 9 that notebook also copies each "predict" answer from the objects the cell that runs the prediction
leaves (``total_spent = s.spent``, ``ana_remaining = ana.remaining``: a second student review's 42 % and 71 %),
which scores nothing since otter grades each question right after its check cell. Every answer cell of that
notebook also reads the hidden tests' literals from ``./tests`` and the unpacked zip's ``../source/tests`` and binds
them (``READER`` finds the expected literal of 4 to 10 questions in each lab's tests); the lab's grading
plugin (blowfish_nb/labs/_plugin.py) deletes them before the notebook runs and drops the added cells, so the
notebook scores what its zeros earn.

Each run takes 10–30 s (the notebook is executed); run one lab with ``-k 01-neighbours``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from blowfish_nb.labs._check import NOT_RECOGNISED

from blowfish_nb.labs.build import lab_module, lab_sources
from tests.labs import ROOT, built_labs_fixture, cell_errors, check_outputs

SLUGS = [p.stem for p in lab_sources()]
OTTER = Path(sys.executable).with_name("otter")

REDEFINE = '''\
class _Pass:
    """Anything: every attribute a function that passes, equal to everything."""
    def __getattr__(self, name):
        return lambda *args, **kwargs: None
    def __call__(self, *args, **kwargs):
        return None
    def __eq__(self, other):
        return True

{check}grader = judge = public_check = expect_number = expect_choice = expect_bool = _Pass()
expect_pair = expect_mean = expect_laplace_noise = expect_ledger_edited = test_case = Notebook = _Pass()
import blowfish_nb.labs.{lab} as _lab
import blowfish_nb.labs._grade as _grade  # the comparisons the hidden tests once imported from the package
for _name in _grade.__all__:
    setattr(_grade, _name, lambda *args, **kwargs: None)
for _name in dir(_lab):
    if re.fullmatch(r"q\\d+[a-z]?", _name):
        setattr(_lab, _name, lambda *args, **kwargs: None)
        globals()[_name] = _Pass()
'''


#: appended to every answer cell: bind each answer the hidden tests compare with a literal, read from the test files
READER = r'''
import glob as _glob, re as _re
for _path in _glob.glob("tests/*.py") + _glob.glob("../source/tests/*.py"):
    _text = open(_path).read()
    for _name, _value in _re.findall(r"expect_(?:number|choice|bool)\((\w+), ([^,)]+)", _text):
        try:
            globals()[_name] = eval(_value)
        except Exception:
            pass
'''


#: slug -> (a line of the cell that runs what a predict question asked, the line a student adds below it to copy
#: the answer from what that cell left)
COPIES = {
    "06-spending-a-budget": [("r_third = s.release", "total_spent = s.spent"),
                             ("r_smaller = s.release", "spent_after = s.spent"),
                             ('quote = s.quote("histogram"', "eps_needed = quote.epsilon")],
    "09-a-class-under-one-budget": [("r_ben = ben.release", "ana_remaining = ana.remaining"),
                                    ("r_ben_small = ben.release", "left_after = cleo.remaining"),
                                    ("outcome = dict(", "granted = sum(outcome.values())"),
                                    ("centres = ana2.kmeans", "kmeans_charge = ana2.spent")],
}

built_labs = pytest.fixture(scope="session")(built_labs_fixture)


@pytest.fixture
def built(built_labs):
    return lambda slug: built_labs(slug) / slug


def otter_run(lab_dir: Path, notebook: Path, out: Path, *, debug: bool = False) -> float:
    """``otter run`` of ``notebook`` with the lab's autograder zip, without network; the fraction of points.

    ``debug``: a cell that raises fails the run (``--debug``), and otter's executed notebook is kept in
    ``out/results.pkl`` (``--pickle-results``; see :func:`executed_notebook`).
    """
    (zip_path,) = (lab_dir / "autograder").glob("*.zip")
    out.mkdir(parents=True, exist_ok=True)
    command = [str(OTTER), "run", *(["--debug", "--pickle-results"] if debug else []), "-a", str(zip_path),
               "-o", str(out), str(notebook)]
    if shutil.which("unshare") and shutil.which("ip") and subprocess.run(["unshare", "-n", "true"]).returncode == 0:
        # a network namespace with only the loopback (otter's grader logs to a local socket)
        command = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *command]
    env = {"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(out),
           # one BLAS thread in the grading kernel: without it two tests' kernels ran OpenBLAS's threads on two cores
           # and spun, lab 3's run taking 120-140 s of CPU instead of 20
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd=out)
    results = out / "results.json"
    assert results.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    tests = [t for t in json.loads(results.read_text())["tests"] if t.get("max_score")]
    return sum(t["score"] for t in tests) / sum(t["max_score"] for t in tests)


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.parametrize("slug", SLUGS)
def test_the_solution_scores_full_marks_raises_nowhere_and_gets_no_hint(built, slug, tmp_path):
    lab = built(slug)
    assert otter_run(lab, lab / "solution" / f"{slug}.ipynb", tmp_path / "out", debug=True) == 1.0
    nb = executed_notebook(tmp_path / "out")
    assert not cell_errors(nb), f"{slug}: the solution raised {cell_errors(nb)}"
    checks = check_outputs(nb)
    assert checks, f"{slug}: the solution has no grader.check cell"
    for question, text in checks:  # the solution is no known mistake: no hint, and no verdict either
        assert NOT_RECOGNISED in text and "Hint:" not in text, f"{slug} {question}: {text}"


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.parametrize("slug", SLUGS)
def test_zeros_and_redefined_checks_score_at_most_30_percent(built, slug, tmp_path):
    lab = built(slug)
    nb = nbformat.read(lab / "student" / f"{slug}.ipynb", as_version=4)
    # in the labs that copy answers the lab module keeps its name `check` (the notebook must run on to the copies)
    cheat = nbformat.v4.new_code_cell("import re\n" + REDEFINE.format(lab=lab_module(slug),
                                                                      check="" if slug in COPIES else "check = "))
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = re.sub(r"^(\s*)(\w+) = \.\.\.", r"\1\2 = 0", cell.source, flags=re.M)
            if "otter_answer_cell" in cell.metadata.get("tags", []) and not cell.source.lstrip().startswith("def "):
                cell.source += "\n" + READER
        cells.append(cell)
        if cell.cell_type == "code" and ("Grader(" in cell.source or "as check" in cell.source):
            cells.append(nbformat.v4.new_code_cell(cheat.source))
        for marker, copy in COPIES.get(slug, []):
            if cell.cell_type == "code" and marker in cell.source:
                cells.append(nbformat.v4.new_code_cell(copy))
    assert sum(c.source in {copy for _, copy in COPIES.get(slug, [])} for c in cells) == len(COPIES.get(slug, []))
    nb.cells = cells
    path = tmp_path / f"{slug}.ipynb"
    nbformat.write(nb, path)
    score = otter_run(lab, path, tmp_path / "out")
    print(f"{slug}: every answer 0, checks redefined, tests read: {score:.3f} of the points")  # -s shows the table
    assert score <= 0.3


def executed_notebook(out: Path):
    """The notebook as ``otter run --debug --pickle-results`` executed it (with otter's own cells added)."""
    import dill

    with open(out / "results.pkl", "rb") as f:
        return dill.load(f).notebook
