"""blowfish_nb.labs.scan.compare_notebook: a submission against the built student notebook it came from.

The fixtures (tests/labs/fixtures/gamer33/, outputs stripped) are the student-gamer's notebooks of branch gamer33
(issue 26): they beat the "predict" questions by editing the notebook (a check cell deleted, moved, duplicated,
relabelled, turned raw, its mark dropped or set to ignore; reveal objects deleted after copying a value), and the
syntax scan flagged almost none of them. They were made from cand33's student notebooks, whose reveal cells still
held the withheld code; against the current build those cells also read as changed, which is a deviation too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from blowfish_nb.labs.scan import compare_notebook, find_reference, main

from . import built_labs_fixture, built_versions, lab_number

built_labs = pytest.fixture(scope="session")(built_labs_fixture)
FIXTURES = Path(__file__).parent / "fixtures" / "gamer33"
SLUGS = {"05": "05-break-it", "06": "06-spending-a-budget", "08": "08-strategies-and-lower-bounds",
         "09": "09-a-class-under-one-budget"}

#: each gamer notebook and a deviation the comparison must report for it (the edit the gamer made)
EXPECTED = {
    "V1": "q1 lost or changed its grading mark",
    "V2": "q1 lost or changed its grading mark",
    "V2b": "q1 lost or changed its grading mark",
    "V2c": "q1 lost or changed its grading mark",
    "V3": "the check cell of q1 is missing",
    "V4": "the check cell of q1 appears 2 times",
    "V5": "a cell other than a check cell carries a grading mark",
    "V6": "marked for otter to ignore",
    "V7": "marked for otter to ignore",
    "V8": "the check cell of q1 is a raw cell",
    "V9": "the check cell of q2 appears 2 times",
    "lab05_attack": "missing, changed or moved",
    "lab06_attack": "deletes r_second",
    "lab06_marks": "marked for otter to ignore",
    "lab08_attack": "the check cell of q1 is not right after its answer cell",
    "lab09_attack": "the check cell of q1 is not right after its answer cell",
}


def _lab(path: Path) -> str:
    return lab_number(path, SLUGS)


_versions = built_versions


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_gamer33_notebook_is_flagged_for_its_edit(name, built_labs):
    path = FIXTURES / f"{name}.ipynb"
    student, solution = _versions(built_labs, SLUGS[_lab(path)])
    flags = compare_notebook(path, student, solution)
    assert any(EXPECTED[name] in f.why for f in flags), [f.why for f in flags]


@pytest.mark.parametrize("slug", ["06-spending-a-budget", "08-strategies-and-lower-bounds"])
def test_the_solution_and_a_zeros_notebook_are_clean(slug, built_labs, tmp_path):
    student, solution = _versions(built_labs, slug)
    assert compare_notebook(solution, student, solution) == []
    assert compare_notebook(student, student, solution) == []
    nb = json.loads(student.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if "otter_answer_cell" in cell["metadata"].get("tags", []):
            cell["source"] = "".join(cell["source"]).replace("...", "0")
    zeros = tmp_path / f"{slug}.ipynb"
    zeros.write_text(json.dumps(nb), encoding="utf-8")
    assert compare_notebook(zeros, student, solution) == []


def test_a_deviation_names_the_submission_cell(built_labs, tmp_path):
    """An added cell that deletes a reveal object is reported at its own index; the command line finds the lab's
    build by the set-up cell and exits 1."""
    student, solution = _versions(built_labs, "06-spending-a-budget")
    nb = json.loads(student.read_text(encoding="utf-8"))
    at = next(i for i, c in enumerate(nb["cells"]) if "".join(c["source"]).startswith("r_second = "))
    nb["cells"].insert(at + 1, {"cell_type": "code", "metadata": {}, "source": "x = 1\ndel r_third",
                                "outputs": [], "execution_count": None})
    path = tmp_path / "sub.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    flags = compare_notebook(path, student, solution)
    assert [(f.cell, f.line) for f in flags if "deletes r_third" in f.why] == [(at + 1, 2)]
    assert find_reference(path, built_labs("06-spending-a-budget"))[0] == student
    assert main(["--build", str(built_labs("06-spending-a-budget")), str(path)]) == 1
