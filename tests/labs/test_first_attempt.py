"""Issue 26: "the first attempt at each 'predict' question recorded for the teacher".

The student's ``grader.check`` keeps the first attempt (``labNN-first-attempts.json`` and the check cell's output
metadata, which the saved notebook carries). The build gives every predict question a report test without points
(:func:`blowfish_nb.labs._key.first_attempt_test`): in the grading folder, where otter and Gradescope put the submitted
notebook, it reads that record and passes when it is the answer graded, else fails with both — the teacher reads
them in otter's results, the score does not move. The record is the student's own (their kernel writes it into their
file); these tests check the plumbing, not that it is tamper-proof (docs/course/teaching.md says it is not).
"""

from __future__ import annotations

import json

import nbformat
import pytest

from blowfish_nb.labs._check import Grader
from blowfish_nb.labs._grade import expect_first_attempt, first_attempt_record
from blowfish_nb.labs._key import first_attempt_test
from blowfish_nb.labs.build import SOURCE, _prepare, lab_module, predict_questions

#: the predict questions of each lab, by their titles (tests/labs/test_build.py checks the lab texts)
PREDICTS = {"03-ranges": {"q2"}, "04-spanning-trees": {"q2b"}, "05-break-it": {"q5"},
            "06-spending-a-budget": {"q1", "q2"}, "07-data-dependent-and-constraints": {"q1", "q2", "q2b", "q5"},
            "08-strategies-and-lower-bounds": {"q1", "q3", "q6"},
            "09-a-class-under-one-budget": {"q1", "q2", "q3", "q5", "q6"}}


def _submitted(folder, outputs):
    """A submitted notebook whose check cells carry the saved outputs ``{question: first attempt}``."""
    cells = []
    for question, first in outputs.items():
        cell = nbformat.v4.new_code_cell(f'grader.check("{question}")')
        cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "..."}, execution_count=1,
                                               metadata={"blowfish_nb": {"question": question,
                                                                         "first_attempt": first}})]
        cells.append(cell)
    nbformat.write(nbformat.v4.new_notebook(cells=cells), folder / "06-spending-a-budget (1).ipynb")


def test_the_predict_questions_are_found_by_their_titles():
    for path in sorted(SOURCE.glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        assert predict_questions(cells) == PREDICTS.get(path.stem, set()), path.stem


def test_the_check_writes_the_record_the_report_test_reads(tmp_path, monkeypatch):
    """The Grader's output metadata, saved in the notebook, is what the report test reads: the first attempt, kept
    while the answer changes."""
    grader = Grader("lab06", attempts_dir=tmp_path)
    total_spent = 0.4
    first = grader.check("q1", {"total_spent": total_spent})
    later = grader.check("q1", {"total_spent": 0.95})
    _, meta = later._repr_mimebundle_()
    assert meta["blowfish_nb"]["first_attempt"] == first.first_attempt == "0.4"
    _submitted(tmp_path, {"q1": meta["blowfish_nb"]["first_attempt"]})
    assert first_attempt_record("q1", tmp_path) == "0.4"
    expect_first_attempt("q1", [0.4], tmp_path)
    with pytest.raises(AssertionError, match=r"first attempt of q1 \(the student's own record\): 0.4; graded: 0.95"):
        expect_first_attempt("q1", [0.95], tmp_path)


def test_the_report_test_runs_in_the_grading_folder(tmp_path, monkeypatch):
    """The built test (its source, with its own copy of _grade) reads the submitted notebook of the folder it runs in:
    a record that is not the graded answer, or none (outputs cleared), fails with a message for the teacher."""
    env = {}
    exec(first_attempt_test("q2", ["spent_after"]), env)
    test = env["test_q2_first_attempt"]
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AssertionError, match="no first attempt of q2 in the submitted notebook"):
        test(0.7)
    _submitted(tmp_path, {"q1": "0.4", "q2": "0.45"})
    test(0.45)
    with pytest.raises(AssertionError, match="0.45; graded: 0.7"):
        test(0.7)


def test_a_predict_question_gets_a_report_test_without_points(tmp_path):
    src = SOURCE / "03-ranges.ipynb"
    out = tmp_path / src.name
    _prepare(src, out, lab_module(src))
    cells = json.loads(out.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]) for c in cells]
    reports = [s for s in sources if s.startswith("# HIDDEN\n") and "_first_attempt(" in s.splitlines()[1]]
    assert len(reports) == 1 and reports[0].startswith("# HIDDEN\ndef test_q2_first_attempt(predicted):")
    configs = {s.split("name: ")[1].split()[0]: s for s in sources if s.startswith("# BEGIN QUESTION")}
    assert "- 0\n- 1.0\n- 0\n" in configs["q2"]  # public test, hidden test, report: only the hidden test scores
    assert "- 0\n- 1.0\n" in configs["q1"] and "- 0\n- 1.0\n- 0" not in configs["q1"]
