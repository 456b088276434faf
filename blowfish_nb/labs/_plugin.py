"""Grade a lab outside the student's kernel: an otter-grader plugin that every autograder zip names.

``otter run`` / ``otter grade`` / Gradescope execute the submitted notebook in a kernel the student's code controls
(it can patch ``builtins``, or read every file of the grading folder). This plugin keeps the points out of it:

* ``before_grading`` (otter's own process, before any student code runs): the tests of ``tests/`` (the grading
  folder's copy and the zip's ``source/tests``) are read into memory and deleted, so no file the kernel can open
  holds an expected value; otter then finds no test to run in the kernel. Every module otter's process imports
  later to grade (the lab's module and every ``blowfish_nb.labs`` module, what the hidden tests' ``_grade``
  imports, otter's test files: :data:`PRELOAD`) is imported now, before the kernel could rewrite a file of the
  installed package. A snapshot of the grading environment is taken (:mod:`blowfish_nb.labs._integrity`: the
  files of the installed ``blowfish_nb`` and ``otter``, the start-up hooks and entries of every path directory and
  of the grading folder), the start-up hooks already active are listed in the report, and one the environment does
  not ship (a ``sitecustomize`` on a site or path folder, an unknown executable ``.pth`` line) refuses the grading.
  ``PYTHONDONTWRITEBYTECODE`` is set for the kernel and the code answers' children (no legitimate new ``.pyc``), and
  :data:`RUN_MARK` (a random value drawn now) marks every process the grading starts. A distribution that pip's
  ``RECORD`` cannot vouch for (no sha256: conda, Linux packages) has its Python files added to the snapshot, is named
  in the report, and one of its files changed after the distribution's metadata was written refuses the grading
  (:func:`~blowfish_nb.labs._integrity.changed_after_install`).
  What otter's process imports only after the kernel started (:data:`LATE`: the kernel client, pandas' table
  formatting that otter's summary print loads at exit, ``pyarrow.pandas_compat``) is imported now and a small table
  rendered; then an import guard (:class:`~blowfish_nb.labs._integrity.ImportGuard`, first on ``sys.meta_path``
  until otter exits) refuses any later import of a file whose change time is after the start (gamer35b: an answer
  rewrote pandas' ``string.py``, imported by otter's summary print after every check, to rewrite ``results.json``).
* ``before_execution``: the notebook executed is the *handout* (the built student notebook, carried in this
  plugin's configuration) with only its answer cells (``otter_answer_cell``) taken from the submission, matched by
  cell id; every other cell is the handout's, cells the student added are dropped and listed in the report. After
  each check cell ``grader.check("qN")`` a cell prints the answer names of ``qN`` (the arguments of its tests) as
  plain data (:mod:`blowfish_nb.labs._answers`): exact ``int``/``float``/``str``/``bool``/``None``, tuples and
  lists of them, NumPy scalars and numeric arrays, lab 9's classroom as its ledger files; anything else is
  refused. otter's process records that output while the cell runs (a later cell cannot change it), so the answer
  graded is the one held at the check cell. For a question whose hidden test runs a noise verdict, the cell also
  calls the student's function in the kernel on the generators of ``noise_plan(KERNEL_RUNS, seed)`` — runs of
  calls on one generator object, as people reuse one (``plan_generators``) — ``seed`` drawn here now (never in the
  notebook or the zip), and prints its draws: the verdict requires the child's function to return the same on the
  same generators, call by call along the same runs, and the kernel's draws to pass the same law
  (:func:`blowfish_nb.labs._grade._kernel_sample`), so a function that tells the child from a kernel loses the point.
* ``after_grading``: first the processes the grading started that still run (marked with :data:`RUN_MARK`, or
  descendants of otter's process: :func:`leftover_processes`) are killed, and any refuses the grading; then the
  snapshot is taken again; any changed or new file or entry (gamer35: a code answer rewrote ``lab05.py``; another
  planted a ``sitecustomize``), or a file of any module loaded in otter's process changed since the start (wherever
  it lies), grades every question 0 with a message naming the paths, and nothing of the submission is run here (no
  child, no verdict). The refusal's test files fix their score at 0 in their own class, so a hook that patched
  otter's ``TestFile.score`` does not reach it. Otherwise
  the hidden tests run in otter's process against those values (never the kernel's objects; the snapshot is
  compared once more after them, for a process the kernel left running),
  and their results replace what the kernel reported (otter's report and Gradescope's JSON show them). The
  results file the kernel writes is never unpickled here (a pickle can run code in the process that loads it).
  An answer that is a function (a code question) is run in a fresh child interpreter that executes the handout's
  set-up cells before the question and the submitted answer cell, in ipykernel's IPython shell as a kernel would
  (a noise answer's cell is not run there: its function is compiled from the cell's source in a namespace holding
  only the handout names its lab allows, ``NOISE_READS``, with the set-up's values, arrays read-only, ``np``/``math``
  and a few builtins — the code under the handout's bindings, which no other cell of the notebook can reach;
  :meth:`LabGrader._snapshot`, :func:`blowfish_nb.labs.scan.pure_answer`);
  the test gets a proxy that forwards each call (arguments pickled to the child; the reply parsed as plain data; a
  ``numpy.random.Generator`` argument has the child's advanced state copied back). The public test cases of 0
  points (hints for ``grader.check``) are not run here: they import the lab's module and grade nothing; their
  result reads "not run when grading".

What this does not protect: the kernel runs as the same operating-system user as otter. Under ``otter run`` on a
teacher's machine it can read the zip wherever it lies; in ``otter grade``'s containers and on Gradescope only the
extracted zip exists, and its tests are gone before the notebook starts. A kernel that rewrites what the snapshot
watches is found and scores 0, but the environment must then be rebuilt (a planted hook is already on disk for the
next process). Files outside the snapshot (NumPy's, SciPy's, the interpreter's) are not watched, and a kernel of the
same user can do whatever the operating system lets that user do (a process started with an emptied environment
under another parent is not found as left running; a kernel that recognises the sampling call itself can report
honest draws): the real fix is running the notebook as another user or in a sandbox (bwrap, otter grade's
containers with a read-only environment).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import secrets
import shutil
import sys
from pathlib import Path
from typing import Any


try:  # otter-grader is the labs extra (the build and the grading environment have it)
    from otter.plugins import AbstractOtterPlugin
except ImportError:  # pragma: no cover - only without otter
    AbstractOtterPlugin = object

from . import _integrity, _jail
from ._answers import DUMP_ID, MARKER, CodeProxy, Refused, decode
# here, not in after_grading: a first import then writes a .pyc the snapshot sees
from .scan import PURE_BUILTINS, handout_names, noise_reads, pure_answer

__all__ = ["LabGrader", "PLUGIN", "rebuild", "read_answers"]

#: the name otter's configuration gives this plugin
PLUGIN = "blowfish_nb.labs._plugin.LabGrader"
ANSWER_TAG = "otter_answer_cell"
_ANSWER_TAGS = {ANSWER_TAG, "otter_assign_solution_cell"}


# --- the notebook that runs -----------------------------------------------------------------------------------


def _source(cell) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else str(s)


def _tags(cell) -> set:
    tags = cell.get("metadata", {}).get("tags", [])
    return set(tags) if isinstance(tags, list) else set()


def _check_question(cell) -> str | None:
    tests = cell.get("metadata", {}).get("otter", {}).get("tests") if cell.get("cell_type") == "code" else None
    return tests[0] if isinstance(tests, list) and len(tests) == 1 and isinstance(tests[0], str) else None


def rebuild(handout: dict, submission: dict) -> tuple[list[dict], list[str], dict[str, str]]:
    """The cells to run: the handout's, with each answer cell's source from the submission.

    Returns the cells (handout order), the ids or positions of the submission's cells that are not in the handout
    (dropped), and the source each answer cell id got. Answer cells are matched by id; a submission without ids
    (an old notebook format) is matched by the order of its answer cells. A cell is listed as dropped when its
    id is not the handout's (or, without ids, it is no answer cell) and its source is no handout cell's: otter
    assign gives the check cells new ids at each build, so a notebook handed out from an earlier build of the
    same lab lists none of them.
    """
    sub_cells = [c for c in submission.get("cells", []) if isinstance(c, dict)]
    by_id = {c.get("id"): c for c in sub_cells if c.get("id")}
    handout_ids = {c.get("id") for c in handout["cells"]}
    sub_answers = [c for c in sub_cells if _tags(c) & _ANSWER_TAGS]
    use_ids = any(c.get("id") in by_id for c in handout["cells"] if ANSWER_TAG in _tags(c))
    handout_sources = {_source(c) for c in handout["cells"]}
    dropped = [str(c.get("id") or f"cell {i}") for i, c in enumerate(sub_cells)
               if (c.get("id") not in handout_ids if use_ids else not (_tags(c) & _ANSWER_TAGS))
               and _source(c) not in handout_sources and _source(c).strip()]
    cells, answers, k = [], {}, 0
    for cell in handout["cells"]:
        cell = json.loads(json.dumps(cell))
        if ANSWER_TAG in _tags(cell) and cell.get("cell_type") == "code":
            got = by_id.get(cell.get("id")) if use_ids else (sub_answers[k] if k < len(sub_answers) else None)
            k += 1
            text = _source(got) if got is not None and got.get("cell_type") == "code" else ""
            cell["source"] = text
            answers[cell.get("id") or f"answer {k}"] = text
        cells.append(cell)
    return cells, dropped, answers


# --- the plugin -----------------------------------------------------------------------------------------------


class LabGrader(AbstractOtterPlugin):
    """otter-grader plugin (see the module's docstring); configuration ``{"lab": "lab03", "handout": <notebook>}``."""

    def __init__(self, submission_path, submission_metadata, plugin_config):
        super().__init__(submission_path, submission_metadata, plugin_config)
        self.tests: dict[str, str] = {}
        self.dropped: list[str] = []
        self.notes: list[str] = []
        self.started = False
        self.cells: list[dict] = []
        self._pickle = None
        self.refused: list[str] = []
        self.snapshot: dict | None = None
        self.cwd = Path(".")
        self.start_ns: int | None = None
        self.samples: dict[str, tuple[int, int]] = {}
        self.token: str | None = None
        self.watched: list[str] = []

    # before the notebook runs: the tests leave the disk
    def before_grading(self, config):
        self.start_ns = _integrity.clock_ns()
        here = Path.cwd()
        # the kernel and the code answers' children run jailed; no pickle of the submission is left (_jail)
        self.notes += _jail.install(str(here), getattr(config, "autograder_dir", None))
        folders = [here / "tests"]
        ag_dir = getattr(config, "autograder_dir", None)
        if ag_dir:
            folders.append(Path(ag_dir) / "source" / "tests")
        for folder in folders:
            if folder.is_dir():
                for path in sorted(folder.glob("*.py")):
                    self.tests.setdefault(path.stem, path.read_text(encoding="utf-8"))
                shutil.rmtree(folder)
        (here / "tests").mkdir()  # otter's kernel expects the folder; it stays empty
        self.started = True
        lab = self.plugin_config.get("lab") if isinstance(self.plugin_config, dict) else None
        # files that differ from what pip installed (planted by an earlier grading) are never imported here, and
        # the grading is refused: check before the preloads below import them
        tops = {m.split(".")[0] for m in (*list(sys.modules), *LATE, *PRELOAD)}
        planted, unverified = _integrity.audit_records(tops)
        # distributions without RECORD hashes: a file changed after their installer wrote the metadata is refused
        # like a planted one, and their files are watched while the notebook runs
        after_install = _integrity.changed_after_install(unverified)
        planted = sorted(set(planted) | set(after_install))
        _integrity.install_guard(self.start_ns, frozenset(planted))
        _preload(lab if isinstance(lab, str) else None)
        if not planted:
            _preload_late()
        self._guard_results()
        # the kernel and the code answers' children inherit this: no .pyc written by a legitimate import (a new one
        # in the packages is then the kernel's own file, and the snapshot finds it)
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        # every process the grading starts inherits this mark (the kernel, what it starts, the answers' children)
        self.token = secrets.token_hex(16)
        os.environ[RUN_MARK] = self.token
        hooks = _integrity.startup_hooks(here)
        self.notes += [f"start-up hook of the grading interpreter: {h}" for h in hooks]
        self.refused = [f"a start-up hook the grading environment does not ship: {b}"
                        for b in _integrity.unexpected_hooks(here)]
        self.refused += [f"a package file differs from what pip installed: {p}" for p in planted
                         if p not in after_install]
        self.refused += [f"a package file changed after its distribution was installed (no RECORD hash to check "
                         f"it by): {p}" for p in after_install]
        self.notes += [f"installed without RECORD hashes, watched during this grading only: {name} "
                       f"({len(files)} files)" for name, files in sorted(unverified.items())]
        self.watched = [f for files in unverified.values() for f in files]
        self.snapshot = _integrity.snapshot(here, self.watched)
        self.cwd = here
        # from now until exit, a module whose file changed since the start is not imported (gamer35b)
        _integrity.install_guard(self.start_ns, frozenset(planted))

    def _guard_results(self):
        """otter unpickles the kernel's results file in this process; a kernel could write a pickle that runs code
        here. The kernel's results are replaced in :meth:`after_grading` anyway: otter reads an empty set."""
        import otter.execute as execute
        from otter.test_files import GradingResults

        self._pickle = execute.pickle

        class _Empty:
            @staticmethod
            def load(f):
                return GradingResults([])

            dump = staticmethod(pickle.dump)

        execute.pickle = _Empty

    def before_execution(self, nb):
        import nbformat

        handout = self.plugin_config.get("handout") if isinstance(self.plugin_config, dict) else None
        if not isinstance(handout, dict) or not self.started:
            raise RuntimeError("blowfish_nb.labs._plugin: no handout in the plugin configuration "
                               "(rebuild the autograder zip with make labs)")
        submission = json.loads(nbformat.writes(nb))
        cells, self.dropped, _ = rebuild(handout, submission)
        self.cells = cells
        out = []
        for cell in cells:
            question = _check_question(cell)
            cell = json.loads(json.dumps(cell))
            cell.get("metadata", {}).pop("otter", None)  # otter adds no in-kernel check of its own
            out.append(cell)
            if question is not None and question in self.tests:
                names = sorted(_test_args(self.tests[question]))
                sample = ""
                if _noise_question(self.tests[question]):  # its function is also sampled in the kernel
                    self.samples[question] = (KERNEL_RUNS, secrets.randbits(128))
                    sample = f", sample={self.samples[question]!r}"
                out.append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                            "id": f"{DUMP_ID}{question}",
                            "source": (f"__import__('blowfish_nb.labs._answers', fromlist=['dump']).dump("
                                       f"{question!r}, {names!r}, globals(){sample})")})
        new = {**submission, "cells": out}
        new.setdefault("metadata", {}).pop("otter", None)
        for i, cell in enumerate(new["cells"]):
            cell.setdefault("id", f"graded-{i}")
        return nbformat.reads(json.dumps(new), as_version=4)

    def after_grading(self, results):
        import otter.execute as execute
        from otter.test_files.exception_test import ExceptionTestFile

        if self._pickle is not None:
            execute.pickle = self._pickle
        self._stop_leftovers()
        if self._environment_changed():
            self._refuse(results, " | ".join(self.refused))
            return
        answers = read_answers(results.notebook)
        files = []
        proxies: list[CodeProxy] = []
        try:
            for question in sorted(self.tests, key=_natural):
                why = self._impure(question)
                if why is not None:  # judged on the source read from the submission; its function is not run
                    files.append(_failed_file(self.tests[question], question,
                                              f"❌ the answer must be one function of rng alone: {why}"))
                    self.notes.append(f"{question}: the answer must be one function of rng alone: {why}")
                    continue
                env = dict(answers.get(question, {}))
                for name, value in list(env.items()):
                    if isinstance(value, Refused) and value.why.startswith("function "):
                        proxy = self._proxy(question, name)
                        if proxy is not None:
                            proxies.append(proxy)
                            env[name] = proxy
                            if question in self.samples:  # what the kernel's function returned on the plan
                                runs, seed = self.samples[question]
                                proxy.kernel_sample = {"runs": runs, "seed": seed, "values": value.kernel}
                tf = ExceptionTestFile.from_string(self.tests[question], path=f"tests/{question}.py")
                _run_graded_cases(tf, env)
                files.append(tf)
        finally:
            for proxy in proxies:
                proxy.close()
        # again once the children ran: a process the kernel left running could rewrite a file after the first check
        self._stop_leftovers()
        if self._environment_changed():
            self._refuse(results, " | ".join(self.refused))
            return
        self._set(results, files)

    def _stop_leftovers(self) -> None:
        """Stop the processes the grading started that are still running (the notebook's kernel has ended): they
        could change files or results after the checks. Any refuses the grading."""
        if self.token is None or self.start_ns is None:
            return
        try:
            found = leftover_processes(self.token, self.start_ns)
        except ImportError:  # pragma: no cover - psutil comes with otter's kernel client
            self.notes.append("processes left running were not looked for (psutil is missing)")
            return
        if found:
            self.refused.append("the notebook left processes running after it ended (stopped now): "
                                + "; ".join(found[:10]) + (f" (and {len(found) - 10} more)" if len(found) > 10 else ""))

    def _environment_changed(self) -> bool:
        """Whether grading is refused: a start-up hook found by before_grading, or the snapshot differs now."""
        changed = (_integrity.changes(self.snapshot, _integrity.snapshot(self.cwd, self.watched)) if self.snapshot
                   else [])
        if self.start_ns is not None:  # any loaded module's file, wherever it lies (outside the snapshot too)
            changed += [f"changed since grading began: {f}" for f in _integrity.loaded_changed(self.start_ns)
                        if f"changed: {f}" not in changed]
        if changed:
            self.refused.append("the notebook changed the grading environment: " + "; ".join(changed[:20])
                                + (f" (and {len(changed) - 20} more)" if len(changed) > 20 else "")
                                + ". Rebuild the grading environment (container / venv) before grading again")
        if self.refused:
            self.notes = [n for n in self.notes if n not in self.refused] + self.refused
        return bool(self.refused)

    def _set(self, results, files):
        for tf in files:  # the hidden test's text holds the expected values: otter's results pickle keeps each file's
            tf.source = ""  # source (leak37); the failure messages were made from it already
        results.results = {tf.name: tf for tf in files}
        results._catastrophic_error = None
        results.set_plugin_data(PLUGIN, {"dropped_cells": list(self.dropped), "notes": list(self.notes)})

    def _refuse(self, results, message: str):
        """Every question 0, every test case failed with ``message``; nothing of the submission is run."""
        files = [_failed_file(self.tests[question], question, f"❌ not graded: {message}")
                 for question in sorted(self.tests, key=_natural)]
        self._set(results, files)

    def generate_report(self):
        lines = ["Graded outside the notebook's kernel (blowfish_nb.labs._plugin)."]
        if self.dropped:
            lines.append(f"Cells not in the handout, not run: {', '.join(self.dropped)}")
        lines += self.notes
        return "\n".join(lines)

    def _impure(self, question: str) -> str | None:
        """Why the answer of a noise question (its hidden test runs a noise verdict) is not one function of ``rng``
        alone (:func:`blowfish_nb.labs.scan.pure_answer`), or None. Read from the cells this process built from the
        submission (:func:`rebuild`), never from what the kernel reports: a behavioural verdict cannot see a
        condition its calls never create (a pause between calls, a run longer than its longest), the source can."""
        if not _noise_question(self.tests[question]):
            return None
        names = sorted(_test_args(self.tests[question]))
        setup, answer, others, seen = [], [], [], False
        for cell in self.cells:
            if cell.get("cell_type") != "code":
                continue
            if _check_question(cell) == question:
                seen = True
                continue
            if _check_question(cell) is not None and not seen:  # an earlier question's: its answers are others
                others += answer
                answer = []
            elif ANSWER_TAG in _tags(cell):
                (others if seen else answer).append(_source(cell))
            elif not seen and not answer:
                setup.append(_source(cell))
        if len(names) != 1:
            return None
        return pure_answer("\n".join(answer), names[0], setup, others)

    def _snapshot(self, question: str, name: str, setup: list[str]) -> tuple | None:
        """For a noise question, what the child compiles the answer with (:class:`CodeProxy`'s ``snapshot``): the
        handout names the lab allows the function ``name`` (``NOISE_READS``), the handout's ``np``/``math`` and lab
        module aliases, the builtins of :data:`~blowfish_nb.labs.scan.PURE_BUILTINS`; None for other questions."""
        if not _noise_question(self.tests.get(question, "")):
            return None
        modules, _ = handout_names(setup)
        return (noise_reads(modules, name), {k: m for k, m in modules.items() if m in ("numpy", "math")},
                {k: m for k, m in modules.items() if re.fullmatch(r"blowfish_nb\.labs\.lab\d+", m)},
                sorted(PURE_BUILTINS))

    def _proxy(self, question: str, name: str) -> CodeProxy | None:
        """A proxy of the function ``name`` that the answer cells of ``question`` define, run in a child; for a noise
        question the function compiled from the answer's source in a namespace of the handout's allowed names alone
        (:class:`~blowfish_nb.labs._answers.CodeProxy`'s ``snapshot``; what :func:`~blowfish_nb.labs.scan.pure_answer`
        guarantees)."""
        setup, answer = [], []
        for cell in self.cells:
            if _check_question(cell) == question:
                break
            if cell.get("cell_type") != "code":
                continue
            if _check_question(cell) is not None:  # an earlier question's check cell: its answers are not set-up
                answer = []
            elif ANSWER_TAG in _tags(cell):
                answer.append(_source(cell))
            elif not answer:  # the handout's cells before this question's answer cells
                setup.append(_source(cell))
        try:
            return CodeProxy(setup, "\n".join(answer), name, snapshot=self._snapshot(question, name, setup))
        except (OSError, RuntimeError) as e:
            self.notes.append(f"{question}: the answer {name} could not run on its own ({e})")
            return None


# --- helpers ----------------------------------------------------------------------------------------------------


def _test_args(source: str) -> set[str]:
    """The argument names of the test functions in one otter test file (the answers its question reads)."""
    import ast

    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            names |= {a.arg for a in node.args.args if a.arg != "env"}
    return names


def read_answers(executed) -> dict[str, dict[str, Any]]:
    """question -> {name: value}, from the output each dump cell printed while it ran (otter's executed notebook):
    the first well-formed record of the cell's own question counts."""
    out: dict[str, dict[str, Any]] = {}
    for cell in (executed or {}).get("cells", []):
        cid = str(cell.get("id", ""))
        if not cid.startswith(DUMP_ID):
            continue
        question = cid[len(DUMP_ID):]
        text = "".join(_source({"source": o.get("text", "")}) for o in cell.get("outputs", [])
                       if o.get("output_type") == "stream" and o.get("name") == "stdout")
        for line in text.split("\n"):
            if not line.startswith(MARKER) or question in out:
                continue
            try:
                record = json.loads(line[len(MARKER):])
                values = record["values"]
                if record["question"] != question or not isinstance(values, dict):
                    continue
                out[question] = {str(k): decode(v) for k, v in values.items()}
            except (ValueError, KeyError, TypeError):
                continue
    return out


#: how many calls of a code answer's noise function the kernel makes on the plugin's generators
KERNEL_RUNS = 2000
#: the environment variable that marks the processes a grading starts (its value is drawn at each grading)
RUN_MARK = "BLOWFISH_NB_GRADING_RUN"
#: the verdicts that run a noise function: their question's function is also sampled in the kernel
NOISE_VERDICTS = ("expect_laplace_noise", "expect_range_noise")


def _noise_question(test_source: str) -> bool:
    """Whether a hidden test (as the build writes it: ``fn = _grade['expect_laplace_noise']``) runs a noise verdict."""
    return any(f"_grade[{v!r}]" in test_source for v in NOISE_VERDICTS)


def leftover_processes(token: str, start_ns: int) -> list[str]:
    """Stop, and name, the processes still running that this grading started: created after ``start_ns``, of this
    user, and either carrying ``RUN_MARK=token`` in their environment (inherited from otter's process by the kernel
    and whatever it starts, daemons included) or descendants of this process. This process's own children that the
    plugin is still using are not among them (none are open when it is called)."""
    import psutil

    me = psutil.Process()
    uid = os.getuid() if hasattr(os, "getuid") else None
    mine = {p.pid for p in me.children(recursive=True)}
    found, killed = [], []
    for proc in psutil.process_iter(["pid", "uids", "create_time", "status", "cmdline"]):
        info = proc.info
        if info["pid"] == me.pid or info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if uid is not None and (info["uids"] is None or info["uids"].real != uid):
            continue
        if info["create_time"] is None or info["create_time"] * 1e9 < start_ns - 1e9:
            continue
        marked = info["pid"] in mine
        if not marked:
            try:
                marked = proc.environ().get(RUN_MARK) == token
            except (psutil.Error, OSError):
                continue
        if marked:
            try:
                proc.kill()
                killed.append(proc)
                found.append(f"pid {info['pid']} ({' '.join(info['cmdline'] or [])[:80]})")
            except psutil.Error:
                pass
    psutil.wait_procs(killed, timeout=5)
    return found


def _natural(name: str) -> tuple:
    import re

    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


#: what the verdicts, the report and the refusal import in otter's process (the hidden tests carry ``_grade``'s
#: source; it imports NumPy, SciPy's stats and, for lab 9, the service)
PRELOAD = ("blowfish_nb.labs", "blowfish_nb.labs._grade", "blowfish_nb.labs._check", "blowfish_nb.labs._answers",
           "blowfish_nb.labs._integrity", "scipy.stats", "otter.test_files", "otter.test_files.abstract_test",
           "otter.test_files.exception_test", "select", "json", "math", "ast", "re", "sqlite3",
           "blowfish_nb.service.chain", "blowfish_nb.service.ledger")


def _preload(lab: str | None = None) -> None:
    """Import now, before the kernel runs, every module otter's process imports later to grade: the lab's module
    and every ``blowfish_nb.labs`` module, what the hidden tests' ``_grade`` imports, otter's test files. A module
    imported after the kernel ran would be read from a disk the kernel can write (gamer35's rewritten lab05.py)."""
    import importlib
    import pkgutil

    import blowfish_nb.labs as labs

    names = list(PRELOAD) + [f"blowfish_nb.labs.{m.name}" for m in pkgutil.iter_modules(labs.__path__)
                             if m.name not in ("scan", "build")]
    if lab and re.fullmatch(r"lab\d\d", lab):
        names.append(f"blowfish_nb.labs.{lab}")
    for module in names:
        try:
            importlib.import_module(module)
        except ImportError:
            pass


#: what otter's process imports for the first time after the kernel started (gamer35b's otter_late_imports.txt:
#: the kernel's client, and at exit the summary table otter prints with pandas)
LATE = ("ipykernel", "ipykernel.connect", "ipykernel.kernelspec", "psutil", "pandas", "pyarrow.pandas_compat",
        "pyarrow.vendored.version", "pandas.io.formats.string", "pandas.io.formats.format")


def _preload_late() -> None:
    """Import now what otter's process would import after the notebook ran, and render a small table as otter's
    summary does (``pd.DataFrame(output["tests"])`` and its printing), so that its formatting modules are loaded
    before the kernel could rewrite them (gamer35b rewrote ``pandas/io/formats/string.py``, imported at exit)."""
    import importlib

    for module in LATE:
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    try:
        import pandas as pd

        df = pd.DataFrame([{"name": "q1", "score": 1.0, "max_score": 1.0, "visibility": "visible"}])
        df = df.drop(columns=["visibility"])
        df.to_string(), str(df), repr(df), df["score"].sum()
    except ImportError:  # pragma: no cover - pandas is otter's requirement
        pass


def _failed_file(test_source: str, question: str, message: str):
    """The test file of ``question`` with every case failed with ``message`` (score 0), none of it run."""
    from otter.test_files.abstract_test import TestCaseResult

    tf = _not_graded_class().from_string(test_source, path=f"tests/{question}.py")
    tf.test_case_results = [TestCaseResult(test_case=tc, message=message, passed=False) for tc in tf.test_cases]
    tf.update_score(0)
    return tf


def _not_graded_class():
    """otter's test file with its score fixed at 0 by its own class: a hook already active in otter's process that
    patched ``TestFile.score`` (gamer35's ``sitecustomize``) does not reach it."""
    global _NotGraded
    if _NotGraded is None:
        from otter.test_files.exception_test import ExceptionTestFile

        class NotGraded(ExceptionTestFile):
            score = property(lambda self: 0)
            grade = property(lambda self: 0)
            passed_all = property(lambda self: False)

        NotGraded.__module__, NotGraded.__qualname__ = __name__, "_NotGraded"
        _NotGraded = NotGraded
    return _NotGraded


_NotGraded = None


def _run_graded_cases(tf, env) -> None:
    """``tf.run(env)`` for the test cases that give points (and hidden reports); a public test case of 0 points (a
    hint the student's ``grader.check`` shows) is not run in otter's process: it imports the lab's module, and it
    grades nothing."""
    from otter.test_files.abstract_test import TestCaseResult

    public = [tc for tc in tf.test_cases if not tc.hidden and not tc.points]
    graded = [tc for tc in tf.test_cases if tc not in public]
    tf.test_cases = graded
    try:
        tf.run(env)
    finally:
        tf.test_cases = public + graded
    tf.test_case_results = [TestCaseResult(test_case=tc, message="public test (0 points): not run when grading",
                                           passed=True) for tc in public] + list(tf.test_case_results)
