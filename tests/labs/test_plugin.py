"""Grading outside the student's kernel (blowfish_nb/labs/_plugin.py, _answers.py): the hidden tests leave the disk
before the notebook runs, the notebook that runs is the handout with the submission's answer cells, the answers
cross as plain data printed at each check cell, and the verdicts run in otter's process.

The plugin's three hooks are driven here in-process (an ``exec`` per cell stands in for the kernel: fast); the
otter runs that grade real notebooks with it are in tests/labs/test_grading.py and the slow test at the end.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from blowfish_nb.labs import _plugin
from blowfish_nb.labs._answers import MARKER, CodeProxy, Refused, decode, dump, encode
from blowfish_nb.labs._plugin import RUN_MARK, LabGrader, read_answers, rebuild

otter = pytest.importorskip("otter")


# --- plain data ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, -3, 2.5, float("inf"), "line", True, None, (1, 2), [0.5, (True, "a")],
                                   np.int64(7), np.float64(0.25), np.bool_(False), np.arange(6.0).reshape(2, 3),
                                   np.array([1, 2], dtype=np.int32)])
def test_plain_values_cross_exactly(value):
    got = decode(json.loads(json.dumps(encode(value))))
    assert type(got) is type(value)
    if isinstance(value, np.ndarray):
        assert got.dtype == value.dtype and np.array_equal(got, value)
    else:
        assert repr(got) == repr(value)


class _Float(float):
    def __eq__(self, other):
        return True


@pytest.mark.parametrize("value", [_Float(1.0), object(), {"a": 1}, np.array(["a"]), np.array([None]),
                                   types.SimpleNamespace(x=1), 1j])
def test_anything_else_is_refused(value):
    assert isinstance(decode(encode(value)), Refused)


@pytest.mark.parametrize("data", [{"t": "ndarray", "dtype": "|O", "shape": [1], "v": ""}, {"t": "int", "v": "1"},
                                  {"t": "int", "v": True}, {"t": "eval", "v": "1"}, [], "x",
                                  {"t": "np", "dtype": "<M8[s]", "v": 0}, {"t": "list", "v": 3}])
def test_forged_records_are_refused(data):
    assert isinstance(decode(data), Refused)


# --- the notebook that runs ---------------------------------------------------------------------------------


def _cell(source, cid, kind="code", tags=(), **meta):
    metadata = {"tags": list(tags), **meta} if tags else dict(meta)
    return {"cell_type": kind, "id": cid, "metadata": metadata, "source": source, "outputs": [],
            **({"execution_count": None} if kind == "code" else {})}


HANDOUT = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
    _cell("import numpy as np\nscale = 2.0", "setup"),
    _cell("**Question 1.**", "q1-md", kind="markdown"),
    _cell("answer = ...", "q1-answer", tags=["otter_answer_cell"]),
    _cell('grader.check("q1")', "q1-check", otter={"tests": ["q1"]}),
    _cell("shown = 42  # the cell that shows the result", "reveal"),
    _cell("def noise(shape, rng):\n    ...", "q2-answer", tags=["otter_answer_cell"]),
    _cell('grader.check("q2")', "q2-check", otter={"tests": ["q2"]}),
]}


def _submission(**answers):
    nb = json.loads(json.dumps(HANDOUT))
    for cell in nb["cells"]:
        if cell["id"] in answers:
            cell["source"] = answers[cell["id"]]
    return nb


def test_only_answer_cells_come_from_the_submission_and_added_cells_are_dropped():
    sub = _submission(**{"q1-answer": "answer = 3", "setup": "import builtins; builtins.exec = print",
                         "reveal": "answer = 42"})
    sub["cells"].insert(1, _cell("import configparser  # reads ./tests", "added-1"))
    cells, dropped, answers = rebuild(HANDOUT, sub)
    assert [c["id"] for c in cells] == [c["id"] for c in HANDOUT["cells"]]
    assert cells[0]["source"] == HANDOUT["cells"][0]["source"] and cells[4]["source"] == "shown = 42  # the cell " \
                                                                                          "that shows the result"
    assert cells[2]["source"] == "answer = 3" and answers["q1-answer"] == "answer = 3"
    assert dropped == ["added-1"]


def test_a_submission_without_cell_ids_is_matched_by_its_answer_cells_order():
    sub = _submission(**{"q1-answer": "answer = 5"})
    for cell in sub["cells"]:
        del cell["id"]
    sub["cells"].append({"cell_type": "code", "metadata": {}, "source": "extra = 1", "outputs": []})
    cells, dropped, _ = rebuild(HANDOUT, sub)
    assert cells[2]["source"] == "answer = 5" and dropped == ["cell 7"]


def test_only_the_dump_cells_own_first_record_counts():
    def out(text):
        return [{"output_type": "stream", "name": "stdout", "text": text}]

    record = {"question": "q1", "values": {"answer": encode(3)}}
    forged = {"question": "q1", "values": {"answer": encode(99)}}
    executed = {"cells": [
        {"id": "q1-answer", "cell_type": "code", "outputs": out(MARKER + json.dumps(forged) + "\n")},
        {"id": "blowfish-answers-q1", "cell_type": "code",
         "outputs": out(MARKER + json.dumps(record) + "\n" + MARKER + json.dumps(forged) + "\n")},
        {"id": "blowfish-answers-q2", "cell_type": "code", "outputs": out(MARKER + json.dumps(record) + "\n")},
    ]}
    assert read_answers(executed) == {"q1": {"answer": 3}}


# --- code answers in a child interpreter ----------------------------------------------------------------------


def test_the_proxy_forwards_calls_and_advances_the_callers_generator():
    proxy = CodeProxy(["import numpy as np\nscale = 2.0"],
                      "def noise(shape, rng):\n    return rng.laplace(0.0, scale, size=shape)", "noise")
    try:
        rng, local = np.random.default_rng(5), np.random.default_rng(5)
        got = proxy((3,), rng)
        assert np.array_equal(got, local.laplace(0.0, 2.0, size=(3,)))
        assert rng.random() == local.random()  # the child's draws advanced the caller's generator
        assert proxy.__name__ == "noise"
    finally:
        proxy.close()


def test_the_proxy_refuses_what_is_not_plain_data_and_reports_errors():
    proxy = CodeProxy([], "def f(k):\n    if k:\n        raise ValueError('no')\n    return object()", "f")
    try:
        with pytest.raises(RuntimeError, match="returned"):
            proxy(0)
        with pytest.raises(RuntimeError, match="ValueError"):
            proxy(1)
    finally:
        proxy.close()
    with pytest.raises(RuntimeError, match="NameError"):
        CodeProxy([], "x = undefined_name", "f")


def test_a_code_answer_that_hangs_is_stopped():
    proxy = CodeProxy([], "import time\ndef f():\n    time.sleep(30)", "f", timeout=0.5)
    try:
        with pytest.raises(RuntimeError, match="took longer"):
            proxy()
    finally:
        proxy.close()


# --- the three hooks, with an exec per cell for the kernel ---------------------------------------------------------


@pytest.fixture(autouse=True)
def _environment(tmp_path, monkeypatch):
    """The grading environment the integrity check watches, kept inside ``tmp_path``: an "installed package" (one lab
    module) and the path directories under ``tmp_path`` (the test's grading folder, a folder a test puts on
    ``sys.path``). The real package and path are not watched here: another test process may write them meanwhile."""
    from blowfish_nb.labs import _answers, _integrity

    package = tmp_path / "env" / "installed" / "labpkg"
    package.mkdir(parents=True)
    (package / "lab00.py").write_text("def q1(answer):\n    pass\n")
    real = _integrity._directories
    monkeypatch.setattr(_integrity, "_package_roots", lambda: [package])
    monkeypatch.setattr(_integrity, "_directories",
                        lambda cwd: [d for d in real(cwd) if d.is_relative_to(tmp_path)] + [package.parent])
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)  # before_grading sets it; restored afterwards
    monkeypatch.setenv(RUN_MARK, "")  # before_grading sets it too
    monkeypatch.setattr(_answers, "KERNEL_SHELL", False, raising=False)  # ~2 s a child; on where a test says so
    try:
        yield package
    finally:
        _integrity.remove_guard()  # before_grading leaves its import guard until exit: not across tests

TESTS = {
    "q1": ("from otter.test_files import test_case\nOK_FORMAT = False\nname = 'q1'\npoints = [0, 1.0]\n"
           "@test_case(points=None, hidden=False)\ndef test_q1(answer):\n    pass\n"
           "@test_case(points=None, hidden=True)\ndef test_q1_0(answer):\n"
           "    assert type(answer) is int and answer == 3, 'wrong'\n"),
    "q2": ("from otter.test_files import test_case\nOK_FORMAT = False\nname = 'q2'\npoints = [1.0]\n"
           "@test_case(points=None, hidden=True)\ndef test_q2_0(noise):\n    import numpy as np\n"
           "    z = np.asarray(noise((20000,), np.random.default_rng(1)))\n"
           "    assert z.shape == (20000,) and abs(np.abs(z).mean() - 2.0) < 0.1, 'wrong'\n"),
}


def _grade(tmp_path, submission, *, kernel_extra="", questions=tuple(TESTS), tests=TESTS, lab="lab00",
           after_start=None, handout=HANDOUT, kernel_ns=None):
    """Drive LabGrader as otter's python runner does; the kernel is an exec per cell, its prints the outputs.
    ``after_start()`` runs right after before_grading (before the kernel)."""
    import nbformat
    from otter.test_files import GradingResults

    sub, source = tmp_path / "submission", tmp_path / "source"
    for folder in (sub / "tests", source / "tests"):
        folder.mkdir(parents=True)
        for q in questions:
            (folder / f"{q}.py").write_text(tests[q])
    plugin = LabGrader(str(sub / "lab.ipynb"), {}, {"lab": lab, "handout": handout})
    with contextlib.chdir(sub):
        plugin.before_grading(types.SimpleNamespace(autograder_dir=str(tmp_path)))
        if after_start is not None:
            after_start()
        assert not list(sub.glob("tests/*")) and not (source / "tests").exists()
        import otter.execute

        # the results pickle the kernel writes is never unpickled in otter's process (it could run code there)
        assert otter.execute.pickle.load(io.BytesIO(b"cos\nsystem\n(S'true'\ntR.")).results == {}
        nb = plugin.before_execution(nbformat.reads(json.dumps(submission), as_version=4))
        ns = {"grader": types.SimpleNamespace(check=lambda q: None), **(kernel_ns or {})}
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                try:
                    exec(cell.source + kernel_extra, ns)
                except Exception:
                    pass
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=buf.getvalue())]
        results = GradingResults([], notebook=nb)
        plugin.after_grading(results)
        assert otter.execute.pickle is __import__("pickle")  # otter's loader is back once grading is done
    return results, plugin


def test_the_hooks_grade_the_answers_at_their_check_cells_outside_the_kernel(tmp_path):
    sub = _submission(**{"q1-answer": "answer = 3",
                         "q2-answer": "def noise(shape, rng):\n    return rng.laplace(0.0, scale, size=shape)"})
    results, plugin = _grade(tmp_path, sub)
    assert results.total == 2 and results.possible == 2
    assert plugin.generate_report().startswith("Graded outside")


def test_an_answer_copied_after_its_check_cell_and_added_cells_score_nothing(tmp_path):
    sub = _submission(**{"q1-answer": "answer = 0", "reveal": "answer = 3"})
    sub["cells"].insert(3, _cell("answer = 3", "added"))  # right before the check cell
    results, plugin = _grade(tmp_path, sub, questions=("q1",))
    assert results.total == 0 and plugin.dropped == ["added"]


def test_forged_records_printed_by_the_kernel_change_nothing(tmp_path):
    """The kernel prints a forged record at the end of every cell: only the dump cell's own first record counts,
    and it holds the kernel's real value."""
    forged = MARKER + json.dumps({"question": "q1", "values": {"answer": encode(3)}})
    sub = _submission(**{"q1-answer": "answer = 0"})
    results, _ = _grade(tmp_path, sub, kernel_extra=f"\nprint({forged!r})", questions=("q1",))
    assert results.get_score("q1") == 0


def test_dump_prints_one_record_of_plain_data(capsys):
    dump("q1", ["a", "b", "gone"], {"a": np.float64(0.5), "b": object()})
    line = capsys.readouterr().out
    assert line.startswith(MARKER)
    values = {k: decode(v) for k, v in json.loads(line[len(MARKER):])["values"].items()}
    assert values["a"] == 0.5 and isinstance(values["b"], Refused) and values["gone"] is None


def test_the_build_names_the_plugin_with_its_handout_in_the_zip(tmp_path):
    """build._grade_outside (run on every lab's zip by make labs): the zip's otter_config.json names the plugin with
    the student notebook; every other member is kept as it was."""
    import zipfile

    from blowfish_nb.labs.build import _grade_outside

    archive, handout = tmp_path / "lab-autograder.zip", tmp_path / "lab.ipynb"
    handout.write_text(json.dumps(HANDOUT))
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("otter_config.json", json.dumps({"lang": "python"}))
        z.writestr("tests/q1.py", TESTS["q1"])
    _grade_outside(archive, handout, "lab00")
    with zipfile.ZipFile(archive) as z:
        config = json.loads(z.read("otter_config.json"))
        assert z.read("tests/q1.py").decode() == TESTS["q1"]
    assert config == {"lang": "python", "plugins": [{"blowfish_nb.labs._plugin.LabGrader":
                                                       {"lab": "lab00", "handout": HANDOUT}}]}


def test_lab_9s_classroom_crosses_as_its_ledger_and_an_edit_is_found_outside_the_kernel():
    """q5b's verdict (``expect_ledger_edited``) on the classroom as it crosses: its ledger and key files, audited in
    this process. The untouched ledger fails, the lab's edit of the file passes."""
    import sqlite3

    import blowfish_nb as bf
    from blowfish_nb.labs import lab09
    from blowfish_nb.labs._grade import expect_ledger_edited

    with lab09.classroom(lab09.data()) as room:
        ana = bf.connect(room.url, room.tokens["ana"])
        ana.release("histogram", "age", epsilon=0.1)
        untouched = decode(json.loads(json.dumps(encode(room))))
        with sqlite3.connect(room.ledger_file) as db:
            db.execute("UPDATE accounts SET spent = '0'")
        db.close()
        edited = decode(json.loads(json.dumps(encode(room))))
        ana.close()
    with pytest.raises(AssertionError, match="no edit"):
        expect_ledger_edited(untouched)
    expect_ledger_edited(edited)
    assert isinstance(decode({"t": "ledger", "files": {"../escape": ""}}), Refused)


# --- the grading environment: what the kernel writes is found before any verdict runs (gamer35) ------------------

RIGHT = {"q1-answer": "answer = 3",
         "q2-answer": "def noise(shape, rng):\n    return rng.laplace(0.0, scale, size=shape)"}


def _messages(results):
    return [r.message for tf in results.results.values() for r in tf.test_case_results]


def test_a_lab_module_rewritten_by_the_kernel_scores_zero_on_every_question(tmp_path, _environment):
    """gamer35's lab05_rewrites_lab_module: an answer cell rewrites a file of the installed package (and could put
    it back later): right answers or not, every question scores 0 and the message names the file."""
    target = _environment / "lab00.py"
    sub = _submission(**{**RIGHT, "q1-answer": f"answer = 3\nopen({str(target)!r}, 'a').write('# payload')"})
    results, plugin = _grade(tmp_path, sub)
    assert results.total == 0 and results.possible == 2
    assert all("the notebook changed the grading environment" in m and str(target) in m for m in _messages(results))
    assert "Rebuild the grading environment" in plugin.generate_report()


def test_a_new_sitecustomize_on_the_path_is_detected(tmp_path, monkeypatch):
    """gamer35's lab05_plants_startup_hook: a start-up hook written into a folder on the grading interpreter's path."""
    folder = tmp_path / "on_path"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    sub = _submission(**{**RIGHT, "q1-answer": f"answer = 3\nopen({str(folder / 'sitecustomize.py')!r}, 'w')"
                                               f".write('import os')"})
    results, plugin = _grade(tmp_path, sub)
    assert results.total == 0
    assert f"new: {folder / 'sitecustomize.py'}" in plugin.generate_report()


def test_a_start_up_hook_already_active_refuses_the_grading_even_with_otter_patched(tmp_path, monkeypatch):
    """The next grading after gamer35's hook: ``sitecustomize`` is loaded from a path folder and has patched otter's
    ``TestFile.score`` to the points possible. The grading is refused, the report names the hook's file, and the
    refusal's score is not the patched one."""
    from otter.test_files.abstract_test import TestFile

    folder = tmp_path / "on_path"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text("import os\n")
    monkeypatch.syspath_prepend(str(folder))
    hook = types.ModuleType("sitecustomize")
    hook.__file__ = str(folder / "sitecustomize.py")
    monkeypatch.setitem(__import__("sys").modules, "sitecustomize", hook)
    monkeypatch.setattr(TestFile, "score", property(lambda s: s.possible))
    results, plugin = _grade(tmp_path, _submission())
    assert results.total == 0 and results.possible == 2
    report = plugin.generate_report()
    assert f"loaded sitecustomize: {folder / 'sitecustomize.py'}" in report
    assert "does not ship" in report


def test_an_untouched_environment_grades_normally_with_an_installers_pth(tmp_path, monkeypatch):
    folder = tmp_path / "on_path"
    folder.mkdir()
    (folder / "distutils-precedence.pth").write_text(
        "import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, 'local') == 'local'; "
        "enabled and __import__('_distutils_hack').add_shim(); \n")
    (folder / "planted.pth").write_text(str(folder) + "\n")  # a path line runs nothing
    monkeypatch.syspath_prepend(str(folder))
    results, plugin = _grade(tmp_path, _submission(**RIGHT))
    assert results.total == 2 and not plugin.refused
    assert "executable .pth" in plugin.generate_report()  # listed for the teacher, not refused


def test_an_unknown_executable_pth_refuses_the_grading(tmp_path, monkeypatch):
    folder = tmp_path / "on_path"
    folder.mkdir()
    (folder / "zz.pth").write_text("import os; os.environ.get('x')\n")
    monkeypatch.syspath_prepend(str(folder))
    results, plugin = _grade(tmp_path, _submission(**RIGHT))
    assert results.total == 0 and "zz.pth" in plugin.generate_report()


def test_preloaded_modules_are_not_imported_from_disk_and_public_tests_do_not_run(tmp_path):
    """After before_grading nothing otter's process grades with is read from disk: the public test (which imports
    the lab's module) is not run, the hidden test's imports (the lab module, SciPy, otter) are already loaded."""
    import sys

    tests = {"q1": ("from otter.test_files import test_case\nOK_FORMAT = False\nname = 'q1'\npoints = [0, 1.0]\n"
                    "@test_case(points=None, hidden=False)\ndef test_q1(answer):\n"
                    "    from blowfish_nb.labs import lab05\n    raise AssertionError('the public test ran')\n"
                    "@test_case(points=None, hidden=True)\ndef test_q1_0(answer):\n"
                    "    import scipy.stats\n    from blowfish_nb.labs import _grade, _check, lab05\n"
                    "    _grade.expect_number(answer, 3)\n")}
    seen = []

    class Watch:
        @staticmethod
        def find_spec(name, path=None, target=None):
            seen.append(name)
            return None

    def watch():
        sys.meta_path.insert(0, Watch)

    try:
        results, plugin = _grade(tmp_path, _submission(**{"q1-answer": "answer = 3"}), questions=("q1",),
                                 tests=tests, lab="lab05", after_start=watch)
    finally:
        sys.meta_path.remove(Watch)
    assert results.total == 1
    assert not [n for n in seen if n.split(".")[0] in ("blowfish_nb", "otter", "scipy", "numpy")], seen
    assert any("not run when grading" in m for m in _messages(results))


def test_a_file_changed_while_the_verdicts_run_is_found_by_the_second_check(tmp_path, _environment):
    """A process the kernel left running rewrites the lab module after the first check (while the code answers'
    children run): the check after the verdicts finds it."""
    from blowfish_nb.labs import _integrity

    target = _environment / "lab00.py"
    real, calls = _integrity.snapshot, []

    def snapshot(cwd=".", files=()):
        calls.append(cwd)
        if len(calls) == 3:  # before_grading, the first check, the second check
            target.write_text("# rewritten later\n")
        return real(cwd, files)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_integrity, "snapshot", snapshot)
        results, plugin = _grade(tmp_path, _submission(**RIGHT))
    assert len(calls) == 3 and results.total == 0
    assert f"changed: {target}" in plugin.generate_report()


def test_a_data_file_in_the_grading_folder_is_not_a_change_but_a_module_is(tmp_path):
    """The lab's Grader writes ``labNN-first-attempts.json`` into the grading folder (on the code answers' path):
    not importable, not a change. A ``numpy.py`` there would shadow NumPy in the children: a change."""
    results, plugin = _grade(tmp_path / "a", _submission(**{**RIGHT, "q1-answer": "answer = 3\nopen('lab00-first-"
                                                                                    "attempts.json', 'w').write('{}')"}))
    assert results.total == 2 and not plugin.refused
    results, plugin = _grade(tmp_path / "b", _submission(**{**RIGHT, "q1-answer": "answer = 3\nopen('numpy.py', "
                                                                                    "'w').write('')"}))
    assert results.total == 0 and "numpy.py" in plugin.generate_report()


# --- gamer35b: a module otter's process imports only after the notebook ran --------------------------------------


def _module(folder, name):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text("VALUE = 1\n")
    return folder / f"{name}.py"


def test_a_module_changed_after_the_start_is_refused_at_import_and_an_unchanged_one_imports(tmp_path, monkeypatch):
    """gamer35b's lab05_pandas_agg_unflagged: an answer cell rewrote a module (outside the snapshot) that otter's
    process imports for the first time when it prints its summary, after every check. The guard refuses it."""
    import importlib
    import sys
    import time

    from blowfish_nb.labs import _integrity

    lib = tmp_path / "lib"
    _module(lib, "g35b_unchanged"), _module(lib, "g35b_planted")
    monkeypatch.syspath_prepend(str(lib))
    time.sleep(0.05)  # file times tick coarsely: the start is after these files
    names = ("g35b_unchanged", "g35b_planted")

    def plant():  # the kernel rewrites a module not yet imported
        (lib / "g35b_planted.py").write_text("VALUE = 'planted'\n")

    try:
        results, plugin = _grade(tmp_path / "g", _submission(**RIGHT), after_start=plant)
        assert results.total == 2 and not plugin.refused  # not loaded: the grading itself is fine
        assert any(isinstance(f, _integrity.ImportGuard) for f in sys.meta_path)  # it stays until otter exits
        importlib.invalidate_caches()
        assert importlib.import_module("g35b_unchanged").VALUE == 1
        with pytest.raises(ImportError, match="changed since grading began: .*g35b_planted.py"):
            importlib.import_module("g35b_planted")
        assert "g35b_planted" not in sys.modules
    finally:
        _integrity.remove_guard()
        for name in names:
            sys.modules.pop(name, None)
    assert not any(isinstance(f, _integrity.ImportGuard) for f in sys.meta_path)


def test_a_loaded_modules_file_touched_after_the_start_scores_zero(tmp_path, monkeypatch):
    """A module already loaded in otter's process whose file (anywhere, outside the snapshot) changed since the start:
    every question scores 0 and the message names the file."""
    import importlib
    import sys
    import time

    lib = tmp_path / "lib"
    target = _module(lib, "g35b_loaded")
    monkeypatch.syspath_prepend(str(lib))
    importlib.invalidate_caches()
    importlib.import_module("g35b_loaded")
    time.sleep(0.05)
    try:
        results, plugin = _grade(tmp_path / "g", _submission(**RIGHT),
                                 after_start=lambda: target.write_text("VALUE = 2\n"))
    finally:
        sys.modules.pop("g35b_loaded", None)
    assert results.total == 0 and results.possible == 2
    assert all(f"changed since grading began: {target}" in m for m in _messages(results))


def test_otters_late_imports_are_loaded_before_the_kernel_starts(tmp_path):
    """What gamer35b saw otter's process import after the kernel started is imported by before_grading."""
    import sys

    _grade(tmp_path, _submission(**RIGHT))
    assert "pandas.io.formats.string" in sys.modules


def _installed(root, text):
    """A distribution ``plantpkg`` installed under ``root`` as pip does: its file and a RECORD with its sha256."""
    import base64
    import hashlib

    pkg, info = root / "plantpkg", root / "plantpkg-1.0.dist-info"
    pkg.mkdir()
    info.mkdir()
    (pkg / "__init__.py").write_text(text)
    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plantpkg\nVersion: 1.0\n")
    (info / "top_level.txt").write_text("plantpkg\n")
    (info / "RECORD").write_text(f"plantpkg/__init__.py,sha256={digest},{len(text)}\nplantpkg-1.0.dist-info/RECORD,,\n")
    return pkg / "__init__.py"


def test_a_package_file_planted_before_the_grading_is_found_by_its_record_and_never_imported(tmp_path, monkeypatch):
    """gamer35b's persistent variant: a file rewritten by an earlier grading predates this one's start, so only the
    installer's RECORD tells it apart; the guard then refuses to import it."""
    import importlib
    import sys

    from blowfish_nb.labs import _integrity

    path = _installed(tmp_path, "VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert _integrity.record_mismatches({"plantpkg"}) == []
    path.write_text("VALUE = 'planted'\n")
    assert _integrity.record_mismatches({"plantpkg"}) == [str(path)]
    try:
        _integrity.install_guard(_integrity.clock_ns(), frozenset([str(path)]))
        sys.modules.pop("plantpkg", None)
        with pytest.raises(ImportError, match="differs from what pip installed"):
            importlib.import_module("plantpkg")
    finally:
        _integrity.remove_guard()
        sys.modules.pop("plantpkg", None)


# --- code answers: their draws in the kernel too (gamer35b's display-lambda switch) ------------------------------

GAMER35B = Path(__file__).parent / "fixtures" / "gamer35b"


def _noise_test(question, arg, call):
    """A hidden noise test as the build writes it (the verdict taken from ``_grade``'s namespace by name)."""
    fn = call.split("(", 1)[0]
    return (f"from otter.test_files import test_case\nOK_FORMAT = False\nname = {question!r}\npoints = [1.0]\n"
            f"@test_case(points=None, hidden=True)\ndef test_{question}_0({arg}):\n"
            f"    _grade = dict(vars(__import__('blowfish_nb.labs._grade', fromlist=['x'])))\n"
            f"    {fn} = _grade[{fn!r}]\n    {call}\n")


#: lab 5's cells that q2's answer needs, its answer cell (gamer35b's cell id) and check cell; an honest q3 after it
NOISE_HANDOUT = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
    _cell("import numpy as np\nfrom blowfish_nb.labs import lab05 as check\neps = check.EPSILON", "setup"),
    _cell("def fixed_noise(rng):\n    ...", "a7563202", tags=["otter_answer_cell"]),
    _cell('grader.check("q2")', "q2-check", otter={"tests": ["q2"]}),
    _cell("def honest(rng):\n    ...", "q3-answer", tags=["otter_answer_cell"]),
    _cell('grader.check("q3")', "q3-check", otter={"tests": ["q3"]}),
]}
NOISE_TESTS = {q: _noise_test(q, arg, f"expect_laplace_noise({arg}, 6, 2.0, runs=1000)")
               for q, arg in (("q2", "fixed_noise"), ("q3", "honest"))}


def _gamer_cell(notebook, cell_id):
    cells = json.loads((GAMER35B / f"{notebook}.ipynb").read_text(encoding="utf-8"))["cells"]
    return next("".join(c["source"]) for c in cells if c.get("id") == cell_id)


@pytest.fixture
def _few_kernel_draws(monkeypatch):
    from blowfish_nb.labs import _plugin

    monkeypatch.setattr(_plugin, "KERNEL_RUNS", 300, raising=False)  # runs on main too


def test_gamer35b_display_lambda_noise_loses_the_point_and_honest_noise_keeps_it(tmp_path, _few_kernel_draws,
                                                                                   monkeypatch):
    """gamer35b's lab05_display_lambda, its q2 answer cell as submitted: Laplace noise times ``display.__name__ ==
    "<lambda>"``, zero in a kernel (``display`` is IPython's) and Laplace in a child whose ``display`` was a lambda.
    Its kernel draws (all 0) and the child's (IPython's ``display`` now) both fail; honest Laplace noise passes."""
    from IPython.display import display

    from blowfish_nb.labs import _answers

    monkeypatch.setattr(_answers, "KERNEL_SHELL", True, raising=False)  # the child as it grades
    answer = _gamer_cell("lab05_display_lambda", "a7563202")
    assert 'display.__name__ == "<lambda>"' in answer
    sub = json.loads(json.dumps(NOISE_HANDOUT))
    sub["cells"][1]["source"] = answer
    sub["cells"][3]["source"] = "def honest(rng):\n    return rng.laplace(0.0, 2.0, size=check.K)"
    results, plugin = _grade(tmp_path, sub, handout=NOISE_HANDOUT, tests=NOISE_TESTS, questions=("q2", "q3"),
                             kernel_ns={"display": display})
    assert results.get_score("q2") == 0 and results.get_score("q3") == 1, _messages(results)
    assert set(plugin.samples) == {"q2", "q3"}


def test_gamer36b_reused_rng_noise_loses_the_point_and_honest_noise_keeps_it(tmp_path, _few_kernel_draws,
                                                                             monkeypatch):
    """gamer36b's lab05_reused_rng, its q2 answer cell as submitted: Laplace noise on a generator object it has not
    seen, zero on one it has (``fixed_noise(rng, _seen=[])``). The grader's calls now come in runs on one generator
    object, kept as one object by the child and by the kernel's sample: the answer loses the point; honest Laplace
    noise keeps it."""
    cells = json.loads((Path(__file__).parent / "fixtures" / "gamer36b" / "lab05_reused_rng.ipynb").read_text(
        encoding="utf-8"))["cells"]
    answer = next("".join(c["source"]) for c in cells if c.get("id") == "a7563202")
    assert "_seen=[]" in answer
    sub = json.loads(json.dumps(NOISE_HANDOUT))
    sub["cells"][1]["source"] = answer
    sub["cells"][3]["source"] = "def honest(rng):\n    return rng.laplace(0.0, 2.0, size=check.K)"
    results, _ = _grade(tmp_path, sub, handout=NOISE_HANDOUT, tests=NOISE_TESTS, questions=("q2", "q3"))
    assert results.get_score("q2") == 0 and results.get_score("q3") == 1, _messages(results)
    # the source rule (gamer36c) refuses it first: a default argument
    assert any("one function of rng alone" in m for m in _messages(results)), _messages(results)
    # beneath the rule (and the child's snapshot of the handout's names) the behavioural verdict still finds it
    monkeypatch.setattr(_plugin, "pure_answer", lambda *a, **k: None)
    monkeypatch.setattr(_plugin.LabGrader, "_snapshot", lambda *a, **k: None)
    results, _ = _grade(tmp_path / "no-rule", sub, handout=NOISE_HANDOUT, tests=NOISE_TESTS, questions=("q2", "q3"))
    assert results.get_score("q2") == 0 and results.get_score("q3") == 1, _messages(results)
    assert any("exact release" in m for m in _messages(results)), _messages(results)


def test_noise_that_tells_the_kernel_from_the_grader_by_anything_loses_the_point(tmp_path, _few_kernel_draws,
                                                                                 monkeypatch):
    """A difference the child does not remove (here the type of ``sys.stdout``: ``StringIO`` in this test's stand-in
    kernel, ``OutStream`` in a Jupyter kernel): the child's noise is right Laplace, the kernel's is 0 on the same
    generators, so the verdict finds the two differ. (The source rule refuses this cell first, ``import sys``; it is
    switched off here to test the layer beneath it, and so is the child's snapshot of the handout's names, in which
    ``sys`` is not.)"""
    monkeypatch.setattr(_plugin, "pure_answer", lambda *a, **k: None)
    monkeypatch.setattr(_plugin.LabGrader, "_snapshot", lambda *a, **k: None)
    sub = json.loads(json.dumps(NOISE_HANDOUT))
    sub["cells"][1]["source"] = ("import sys\ndef fixed_noise(rng):\n    return rng.laplace(0.0, 2.0, size=check.K)"
                                 " * (type(sys.stdout).__name__ != 'StringIO')")
    results, _ = _grade(tmp_path, sub, handout=NOISE_HANDOUT, tests=NOISE_TESTS, questions=("q2",))
    assert results.get_score("q2") == 0
    assert any("kernel and grader differ" in m for m in _messages(results)), _messages(results)


def test_right_noise_keeps_the_point_through_the_childs_snapshot(tmp_path, _few_kernel_draws):
    """gamer37's fix: the child compiles a noise answer with the handout's allowed names alone (lab 5: ``eps``,
    ``check.K``, ``np``). Right continuous Laplace read through ``eps`` and right whole-number Laplace (the library's
    law, by hand) keep their points: the snapshot's function and the kernel's agree call by call."""
    sub = json.loads(json.dumps(NOISE_HANDOUT))
    sub["cells"][1]["source"] = "def fixed_noise(rng):\n    return rng.laplace(0, 2 / eps, check.K)"
    sub["cells"][3]["source"] = ("def honest(rng):\n    q = np.exp(-1 / 2.0)\n"
                                 "    return rng.geometric(1 - q, check.K) - rng.geometric(1 - q, check.K)")
    results, _ = _grade(tmp_path, sub, handout=NOISE_HANDOUT, tests=NOISE_TESTS, questions=("q2", "q3"))
    assert results.get_score("q2") == 1 and results.get_score("q3") == 1, _messages(results)


class _Noise:
    """A noise function with a kernel sample attached, as the plugin attaches one to its proxy."""

    def __init__(self, fn, kernel=None):
        self.fn, self.kernel_sample = fn, kernel

    def __call__(self, rng):
        return self.fn(rng)


def test_the_verdicts_compare_the_kernels_draws_with_the_functions():
    from blowfish_nb.labs._grade import laplace_noise_verdict, noise_plan, plan_generators, range_noise_verdict

    def laplace(rng):
        return rng.laplace(0.0, 2.0, size=6)

    def diff(rng):
        return rng.laplace(0.0, 2.0) - rng.laplace(0.0, 2.0)

    plan = noise_plan(300, seed=7)
    honest = [laplace(g) for g in plan_generators(plan)]
    sample = {"runs": 300, "seed": 7}
    assert laplace_noise_verdict(_Noise(laplace, {**sample, "values": honest}), 6, 2.0, runs=300, seed=1) is None
    zero = [np.zeros(6)] * 300
    assert laplace_noise_verdict(_Noise(laplace, {**sample, "values": zero}), 6, 2.0, runs=300, seed=1) \
        == "kernel and grader differ"
    # the kernel's draws are right Laplace, but not this function's on the same generators
    other = [laplace(np.random.default_rng(10_000 + i)) for i in range(300)]
    assert laplace_noise_verdict(_Noise(laplace, {**sample, "values": other}), 6, 2.0, runs=300, seed=1) \
        == "kernel and grader differ"
    assert laplace_noise_verdict(_Noise(laplace, {**sample, "values": "no draws"}), 6, 2.0, runs=300, seed=1) \
        == "in the kernel: no draws"
    assert laplace_noise_verdict(_Noise(laplace, {**sample, "values": honest[:10]}), 6, 2.0, runs=300, seed=1) \
        == "in the kernel: no draws"
    kept = [diff(g) for g in plan_generators(plan)]
    assert range_noise_verdict(_Noise(diff, {**sample, "values": kept}), 2.0, runs=300, seed=1) is None
    assert range_noise_verdict(_Noise(diff, {**sample, "values": [0.0] * 300}), 2.0, runs=300, seed=1) \
        == "kernel and grader differ"


def test_the_kernels_draws_cross_with_the_function_and_a_raising_call_is_refused(capsys):
    def noise(rng):
        return rng.laplace(0.0, 1.0, size=2)

    dump("q2", ["noise", "broken"], {"noise": noise, "broken": lambda rng: 1 / 0}, sample=(5, 3))
    line = capsys.readouterr().out
    got = read_answers({"cells": [{"id": "blowfish-answers-q2", "outputs": [
        {"output_type": "stream", "name": "stdout", "text": line}]}]})["q2"]
    from blowfish_nb.labs._grade import noise_plan, plan_generators

    gens = plan_generators(noise_plan(5, 3))
    assert [np.array_equal(a, noise(gens[i])) for i, a in enumerate(got["noise"].kernel)] == [True] * 5
    assert got["broken"].kernel == "not plain data: a call raised ZeroDivisionError"


def test_the_child_runs_the_cells_in_a_kernels_shell(monkeypatch):
    from blowfish_nb.labs import _answers

    monkeypatch.setattr(_answers, "KERNEL_SHELL", True)
    proxy = CodeProxy(["import sys\nx = 1"], "def tell(_):\n    return [type(get_ipython()).__name__, "
                      "display.__module__, 'In' in globals(), __name__, sys.argv[0].endswith('ipykernel_launcher.py')]",
                      "tell")
    try:
        assert proxy(0) == ["ZMQInteractiveShell", "IPython.core.display_functions", True, "__main__", True]
    finally:
        proxy.close()


# --- processes the notebook leaves running ---------------------------------------------------------------------


def test_a_process_left_running_by_the_notebook_is_stopped_and_refuses_the_grade(tmp_path):
    """A right answer, and a process started in the background that outlives the kernel (``sh`` exits at once: the
    ``sleep`` is reparented, as a daemon is); the grading stops it and scores every question 0."""
    import psutil

    pid_file = tmp_path / "pid"
    sub = _submission(**{**RIGHT, "q1-answer": (f"answer = 3\nimport subprocess\nsubprocess.run(['sh', '-c', "
                                                f"'sleep 60 > /dev/null 2>&1 & echo $! > {pid_file}'])")})
    results, plugin = _grade(tmp_path, sub, questions=("q1",))
    pid = int(pid_file.read_text())
    assert results.total == 0
    assert any("left processes running" in m and f"pid {pid}" in m for m in _messages(results))
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


# --- distributions pip's RECORD cannot vouch for -----------------------------------------------------------------


def _installed_unhashed(root, text):
    """``plainpkg`` installed as a package manager without hashes does: its RECORD lists the file, no sha256."""
    pkg, info = root / "plainpkg", root / "plainpkg-1.0.dist-info"
    pkg.mkdir()
    info.mkdir()
    (pkg / "__init__.py").write_text(text)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plainpkg\nVersion: 1.0\n")
    (info / "top_level.txt").write_text("plainpkg\n")
    (info / "RECORD").write_text("plainpkg/__init__.py,,\nplainpkg-1.0.dist-info/RECORD,,\n")
    return pkg / "__init__.py"


def test_a_distribution_without_record_hashes_is_watched_and_a_file_changed_after_install_is_refused(
        tmp_path, monkeypatch):
    import importlib

    from blowfish_nb.labs import _integrity

    path = _installed_unhashed(tmp_path, "VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    found = _integrity.unverified({"plainpkg"})
    assert found == {"plainpkg": [str(path)]}  # no hash: RECORD cannot say
    assert _integrity.changed_after_install(found, window_ns=0) == []  # as installed: metadata written last
    before = _integrity.snapshot(tmp_path / "elsewhere", [str(path)])
    path.write_text("VALUE = 'planted'\n")
    assert f"changed: {path}" in _integrity.changes(before, _integrity.snapshot(tmp_path / "elsewhere", [str(path)]))
    assert _integrity.changed_after_install(found, window_ns=0) == [str(path)]


def test_the_plugin_watches_an_unhashed_distributions_files_while_the_notebook_runs(tmp_path, monkeypatch):
    import importlib

    (tmp_path / "site").mkdir()
    path = _installed_unhashed(tmp_path / "site", "VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    __import__("plainpkg")
    try:
        sub = _submission(**{**RIGHT, "q1-answer": f"answer = 3\nopen({str(path)!r}, 'a').write('# planted')"})
        results, plugin = _grade(tmp_path, sub, questions=("q1",))
        assert results.total == 0
        assert any(f"changed: {path}" in m for m in _messages(results))
        assert "installed without RECORD hashes, watched during this grading only: plainpkg" in plugin.generate_report()
    finally:
        sys.modules.pop("plainpkg", None)
