"""Every teaching lab, built by otter assign: the student version fails each check with a one-line hint, crashes
nowhere and shows no answer, and runs as well under another file name. (That the solution passes every check and
raises nowhere is asserted on otter's own run of it, in tests/labs/test_grading.py: the solution runs once.)

Notebooks run from a copy in a temporary folder (nothing is left beside the built labs: no first-attempts file,
no otter log). The student version runs renamed as a browser download or JupyterLab's Duplicate names it
(``… (1).ipynb``). Each lab is built once per session (``--no-run-tests``) into a temporary folder, when a test
first needs it; ``build/labs`` (``make labs``) is reused when it is newer than every source and than
``blowfish_nb/labs/*.py``. Run one lab with ``-k 01-neighbours``.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from blowfish_nb.labs.build import lab_module, lab_sources
from tests.labs import answers, built_labs_fixture, cell_errors, check_outputs, distinctive, shown_precisely

SLUGS = [p.stem for p in lab_sources()]
CHECK = re.compile(r"""grader\.check\(\s*["']([^"']+)["']\s*\)""")

built_labs = pytest.fixture(scope="session")(built_labs_fixture)


@pytest.fixture(autouse=True)
def _one_blas_thread(monkeypatch):
    """The kernels inherit one BLAS thread, as the otter runs of tests/labs/test_grading.py do: on the shared 2-core
    machine OpenBLAS's own threads made lab 3's student run time out at 180 s (it takes 39 s with one thread)."""
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "1")


@pytest.mark.notebook
@pytest.mark.parametrize("slug", SLUGS)
def test_student_version_renamed_runs_each_check_gives_a_hint_and_no_answer_shows(built_labs, slug, tmp_path):
    path = built_labs(slug) / slug / "student" / f"{slug}.ipynb"
    source_text = path.read_text(encoding="utf-8")
    assert "# SOLUTION" not in source_text and "# HIDDEN" not in source_text and "expect_" not in source_text
    renamed = _copy(path, tmp_path / f"{slug} (1).ipynb")
    nb = _execute(renamed)
    assert not cell_errors(nb), f"{slug}: the student version raised {cell_errors(nb)}"
    checks = check_outputs(nb)
    assert checks, f"{slug}: the student version has no grader.check cell"
    for question, text in checks:
        assert "All test cases passed" not in text, f"{slug} {question} passes with the placeholder"
        assert question in text and ("Hint:" in text or "replace the `...`" in text
                                     or "no known mistake" in text), f"{slug} {question}: {text}"
        assert "Traceback" not in text and len(text.strip().splitlines()) <= 2, text
    outputs = "\n".join(_text(o) for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs)
    for value in answers(lab_module(slug)):
        if distinctive(value):
            assert not shown_precisely(outputs, value), f"{slug}: an output shows the answer {value!r}"
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # nothing left beside the built notebook


REVEALING = [s for s in SLUGS if s[:2] in ("03", "05", "06", "09")]  # labs with "once you have answered" cells


@pytest.mark.notebook
@pytest.mark.parametrize("slug", REVEALING)
def test_student_version_with_wrong_answers_shows_no_answer(built_labs, slug, tmp_path):
    """Issue 26, hole 3: every ``name = ...`` of the student version set to a wrong guess (0) and the notebook run
    without its checks: no output shows an answer, and no cell is left that reacts to an answer being filled in."""
    path = built_labs(slug) / slug / "student" / f"{slug}.ipynb"
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not [c.source for c in code if "unanswered(" in c.source], f"{slug}: a cell still reacts to answers"
    for cell in code:
        cell.source = re.sub(r"^(\w+) = \.\.\.$", r"\1 = 0", cell.source, flags=re.M)
    nb.cells = [c for c in nb.cells if not (c.cell_type == "code" and CHECK.search(c.source))]
    guessed = tmp_path / f"{slug}.ipynb"
    nbformat.write(nb, guessed)
    nb = nbformat.read(guessed, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = "\n".join(_text(o) for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs)
    for value in answers(lab_module(slug)):
        if distinctive(value):
            assert not shown_precisely(outputs, value), f"{slug}: an output shows the answer {value!r}"


# --- helpers ---------------------------------------------------------------------------------------------


def _copy(path: Path, to: Path) -> Path:
    shutil.copyfile(path, to)
    return to


def _text(output) -> str:
    data = output.get("data", {})
    return str(output.get("text", "")) + str(data.get("text/plain", "")) + str(data.get("text/html", ""))


def _execute(path: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    return nb
