"""blowfish_nb.labs.build: otter assign on a tiny lab made here, the layout it leaves, and its refusals."""

from __future__ import annotations

import json

import nbformat
import pytest

from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.labs.build import ANSWER_REVEAL, SOURCE, LabBuildError, build, lab_sources, main, withhold_reveals

CONFIG = "# ASSIGNMENT CONFIG\ninit_cell: true\ncheck_all_cell: false\nexport_cell: false\nsolutions_pdf: false\n" \
    "generate: true\nrun_tests: true\n"
SOLUTION = "answer = 41 + 1  # SOLUTION"
TEST = "check.q1(answer)"
KEY = """from blowfish_nb.labs._key import Part, Question, Wrong


def questions():
    return {"q1": Question("q1 (the answer)", [Part("answer", 42, mistakes=[Wrong(41, "one more")],
                                                    otherwise="an even number")])}
"""

#: a reveal cell: an action, then the library's value "once you have answered"
REVEAL = ("r = math.sqrt(4)\nif check.unanswered(answer):\n    print('answer question 1 first')\nelse:\n"
          "    print('the library says', math.factorial(4) + 18)")
WITHHELD = "math.factorial(4) + 18"


def _lab(path, *, config=CONFIG):
    cells = [
        nbformat.v4.new_raw_cell(config),
        nbformat.v4.new_markdown_cell("# Lab 99"),
        nbformat.v4.new_code_cell("import math"),
        nbformat.v4.new_raw_cell("# BEGIN QUESTION\nname: q1\npoints: 1"),
        nbformat.v4.new_markdown_cell("**Question 1.** Store it in `answer`."),
        nbformat.v4.new_raw_cell("# BEGIN SOLUTION"),
        nbformat.v4.new_code_cell(SOLUTION),
        nbformat.v4.new_raw_cell("# END SOLUTION"),
        nbformat.v4.new_raw_cell("# BEGIN TESTS"),
        nbformat.v4.new_code_cell(TEST),
        nbformat.v4.new_raw_cell("# END TESTS"),
        nbformat.v4.new_raw_cell("# END QUESTION"),
        nbformat.v4.new_code_cell(REVEAL, metadata={"tags": [ANSWER_REVEAL]}),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    (path.parent / "lab99.py").write_text(KEY)
    for n in range(95, 99):
        (path.parent / f"lab{n}.py").write_text(KEY)
    return path


def _text(path):
    nb = nbformat.read(path, as_version=4)
    return "\n".join(c.source for c in nb.cells) + json.dumps(nb.metadata.get("otter", {}))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    src = tmp_path_factory.mktemp("source")
    _lab(src / "99-tiny.ipynb")
    dest = tmp_path_factory.mktemp("out")
    (dest / "99-tiny" / "student").mkdir(parents=True)
    (dest / "99-tiny" / "student" / "stale.txt").write_text("from an older build")
    (dest / "98-gone" / "student").mkdir(parents=True)
    (dest / "98-gone" / "solution").mkdir()
    (dest / "notes").mkdir()
    folders = build(dest, run_tests=False, source=src, keys=src)
    return src, dest, folders


def test_layout_per_lab(built):
    _, dest, folders = built
    lab = dest / "99-tiny"
    assert folders == [lab]
    assert (lab / "student" / "99-tiny.ipynb").is_file()
    assert (lab / "solution" / "99-tiny.ipynb").is_file()
    zips = list((lab / "autograder").glob("99-tiny-autograder_*.zip"))
    assert len(zips) == 1
    assert not list((lab / "solution").glob("*.zip")) and not list((lab / "student").glob("*.zip"))


def test_stale_output_and_removed_labs_are_cleaned(built):
    _, dest, _ = built
    assert not (dest / "99-tiny" / "student" / "stale.txt").exists()
    assert not (dest / "98-gone").exists()  # a built lab whose source is gone
    assert (dest / "notes").is_dir()  # a folder that is not a built lab is left alone


def test_student_version_has_no_solution_and_no_hidden_test(built):
    _, dest, _ = built
    text = _text(dest / "99-tiny" / "student" / "99-tiny.ipynb")
    assert "answer = ..." in text
    assert "41 + 1" not in text and "42" not in text  # neither the solution nor the hidden test's literal
    assert 'grader.check("q1")' in text and 'Grader("lab99")' in text and "otter.Notebook" not in text


def test_solution_version_has_the_solution_and_every_test(built):
    _, dest, _ = built
    text = _text(dest / "99-tiny" / "solution" / "99-tiny.ipynb")
    assert "41 + 1" in text
    assert "lab99.q1(answer)" in text and "expect_number(answer, 42.0" in text


def test_the_autograder_holds_a_public_test_without_points_and_the_hidden_literal(built):
    import zipfile

    _, dest, _ = built
    (zpath,) = (dest / "99-tiny" / "autograder").glob("*.zip")
    test = zipfile.ZipFile(zpath).read("tests/q1.py").decode()
    assert "points = [0, 1.0]" in test and "OK_FORMAT = False" in test
    assert "hidden=True" in test and "expect_number(answer, 42.0, rtol=1e-06)" in test
    assert "check." not in test  # nothing resolved from the student's namespace but the answer


def test_a_malformed_source_is_refused_naming_the_lab(tmp_path):
    src = tmp_path / "source"
    _lab(src / "97-broken.ipynb", config=CONFIG + "no_such_key: 1\n")
    with pytest.raises(LabBuildError, match="lab 97-broken: otter assign failed .*no_such_key"):
        build(tmp_path / "out", run_tests=False, source=src, keys=src)
    assert not (tmp_path / "out" / "97-broken").exists()


def test_a_notebook_without_the_config_cell_is_refused_before_otter(tmp_path):
    src = tmp_path / "source"
    _lab(src / "96-noconfig.ipynb", config="just a raw cell")
    with pytest.raises(LabBuildError, match="96-noconfig.*ASSIGNMENT CONFIG"):
        build(tmp_path / "out", run_tests=False, source=src, keys=src)
    (src / "95-notjson.ipynb").write_text("{not json")
    with pytest.raises(LabBuildError, match="95-notjson"):
        build(tmp_path / "out", names=["95-notjson"], run_tests=False, source=src, keys=src)


def test_unknown_names_are_refused(tmp_path):
    _lab(tmp_path / "99-tiny.ipynb")
    assert lab_sources(["99-tiny.ipynb"], source=tmp_path) == [tmp_path / "99-tiny.ipynb"]
    with pytest.raises(InvalidParameterError, match="names: no lab source '00-nope'"):
        build(tmp_path / "out", names=["00-nope"], source=tmp_path)


def test_command_line_reports_an_unknown_lab(tmp_path, capsys):
    assert main([str(tmp_path / "out"), "00-no-such-lab", "--no-run-tests"]) == 2
    assert "00-no-such-lab" in capsys.readouterr().err


def test_each_check_cell_is_where_otter_grades_its_question(built):
    # otter run grades a question right after a cell whose metadata names it (otter's add_checks), not after the last
    # cell: an answer copied further down from the result of a "predict" question is not the one graded
    _, dest, _ = built
    for version in ("student", "solution"):
        nb = nbformat.read(dest / "99-tiny" / version / "99-tiny.ipynb", as_version=4)
        marked = [(c.source, c.metadata.get("otter")) for c in nb.cells if "grader.check" in c.source
                  and "Grader(" not in c.source]
        assert marked == [('grader.check("q1")', {"tests": ["q1"]})], (version, marked)


def test_a_predict_questions_hidden_test_fails_once_the_result_exists():
    from blowfish_nb.labs._key import Part, Question, hidden_test

    q = Question("q1 (predict)", [Part("answer", 42, otherwise="")], before=("shown",))
    env = {}
    exec(hidden_test("q1", q, 0, q.parts[0]), env)
    env["test_q1_0"](42, None)  # graded before the cell that shows the result ran: the answer counts
    with pytest.raises(AssertionError, match="after the result was shown"):
        env["test_q1_0"](42, object())  # answered below that cell (or graded after the last one)
    with pytest.raises(AssertionError):
        env["test_q1_0"](41, None)


def test_the_student_version_carries_no_withheld_reveal_code(built):
    """Issue 26 (gamer33): the reveal branch is gone from the student notebook, not switched off (``if True:``);
    the cell's action stays; the solution keeps the branch."""
    _, dest, _ = built
    student = _text(dest / "99-tiny" / "student" / "99-tiny.ipynb")
    assert WITHHELD not in student and "check.unanswered" not in student and "if True" not in student
    assert "r = math.sqrt(4)" in student and "shows the result here, after grading" in student
    assert WITHHELD in _text(dest / "99-tiny" / "solution" / "99-tiny.ipynb")


def _withheld_lines(source: str) -> list[str]:
    """The code lines of a reveal cell that run only once answered: the branch the student version must drop."""
    import ast

    from blowfish_nb.labs.build import _unanswered_test

    tree, lines, out = ast.parse(source), source.splitlines(), []
    for node in ast.walk(tree):
        shown = _unanswered_test(node.test) if isinstance(node, (ast.If, ast.IfExp)) else None
        if shown is None:
            continue
        if isinstance(node, ast.IfExp):
            out.append(ast.get_source_segment(source, node.orelse if shown else node.body))
            continue
        for stmt in node.orelse if shown else node.body:
            out += [line.strip() for line in lines[stmt.lineno - 1:stmt.end_lineno]]
    return [line for line in out if line]


def _reveal_cells():
    for src in lab_sources():
        nb = nbformat.read(src, as_version=4)
        for i, cell in enumerate(nb.cells):
            if ANSWER_REVEAL in cell.metadata.get("tags", []):
                yield pytest.param(cell.source, id=f"{src.stem}-cell{i}")


@pytest.mark.parametrize("source", list(_reveal_cells()))
def test_every_labs_reveal_cell_loses_its_withheld_branch_and_keeps_its_actions(source):
    """Every real lab's reveal cell as the student version gets it: none of the withheld branch's code lines (the
    library call that computes an answer), no ``check.unanswered``, and every other line of the cell kept."""
    withheld = _withheld_lines(source)
    assert withheld, "a reveal cell withholds something"
    out = withhold_reveals(source)
    compile(out, "<cell>", "exec")
    assert "check.unanswered" not in out
    for line in withheld:
        assert len(line) <= 12 or line not in out, line  # (a short line such as `db.close()` may recur)
    kept = [line.strip() for line in source.splitlines()
            if line.strip() and "check.unanswered" not in line and line.strip() != "else:"
            and not any(line.strip() == w or w in line for w in withheld)]
    for line in kept:
        assert line in out, line


def test_the_master_notebooks_have_reveal_cells():
    assert len(list(_reveal_cells())) >= 10 and SOURCE.is_dir()


#: phrases of the lab 7/8 markdown that answer a predict question (gamer33 typed lab 8's q3 and q6 from them)
GIVEAWAYS = {
    "07": ["DAWA wins", "5,000 it loses", "data-independent mechanism wins", "several times less error",
           "error drops several-fold"],
    "08": ["Only Laplace has the same", "floor rises", "lose to plain Laplace", "beats every fixed one",
           "Laplace meets it", "lower bound rise", "raises the floor"],
}


@pytest.mark.parametrize("lab", sorted(GIVEAWAYS))
def test_no_student_markdown_explains_a_predict_answer(lab):
    """Labs 7 and 8: the explanations that give a predict question's answer are solution-only (as labs 6 and 9)."""
    (src,) = [p for p in lab_sources() if p.name.startswith(f"{lab}-")]
    nb = nbformat.read(src, as_version=4)
    student = " ".join(" ".join(c.source.split()) for c in nb.cells
                       if c.cell_type == "markdown" and "solution-only" not in c.metadata.get("tags", []))
    solution = " ".join(" ".join(c.source.split()) for c in nb.cells if c.cell_type == "markdown")
    for phrase in GIVEAWAYS[lab]:
        assert phrase not in student, phrase
    assert sum(phrase in solution for phrase in GIVEAWAYS[lab]) >= 3  # the solution still explains
