"""The teacher's scan of submitted lab notebooks: flag code that could cheat the autograder from inside the notebook.

``otter run`` executes the student's notebook in the grading kernel, in the folder where it has copied the hidden
tests, and then runs those tests in the same interpreter (issue 26, holes 1, 5, 6, 7). A notebook can therefore
read or rewrite ``./tests``, replace NumPy or library names the hidden tests use, read a test's frame, or patch
``builtins``; the "predict first" record is a local file the student can edit. None of this can be stopped inside
otter, so the teacher scans what was submitted::

    python -m blowfish_nb.labs.scan submissions/*.ipynb

Each flagged line is printed as ``notebook: cell N, line L: why | code``; the exit status is 1 when anything is
flagged. Flagged means *read this cell*, not *cheated*: the lab's own cells never trip it (a test scans every
solution notebook), so a flag is code the student added. What is flagged (by the syntax tree, not by text search):

* imports of ``os``, ``sys``, ``io``, ``pathlib``, ``glob``, ``shutil``, ``importlib``, ``builtins``, ``inspect``,
  ``ctypes``, ``subprocess``, ``gc``, ``tempfile``, ``runpy``, ``otter`` and of the library's grading internals
  (``blowfish_nb.labs._grade``/``_key``/``build``, and ``_check`` beyond ``Grader``);
  and the library's lab modules themselves (``from blowfish_nb.labs import _check``);
* calls of ``open``, ``exec``, ``eval``, ``compile``, ``__import__``, ``setattr``, ``delattr``; a method of
  ``globals()``/``vars()``/``locals()`` (``.update`` …), ``vars`` of an object, writes into them; file methods (``open``, ``read_text``, ``write_text``, ``iterdir``, ``unlink``,
  ``fromfile`` …); frame and closure access (``_getframe``, ``f_locals``, ``f_back``, ``stack``, ``frame``,
  ``getargvalues``, ``__closure__`` …); the name ``__builtins__``; ``__dict__``, ``__setattr__``;
* strings naming the ``tests`` folder or a ``.py`` file;
* monkeypatching: assigning an attribute or an item of any imported module or name (``numpy``, ``math``,
  ``otter``, ``builtins``, ``pickle`` that writes otter's results …; also through a name assigned from one: ``m = np``),
  assigning an attribute of ``grader``, ``check`` or ``Notebook``, and rebinding those names (by assignment,
  ``for``, ``with``, ``:=``, an import alias, a definition).

* a built notebook's check cell (``grader.check("q1")``) without its grading mark, otter's cell metadata
  ``{"otter": {"tests": ["q1"]}}``: otter grades each question right after its check cell, so that an answer copied
  further down from a result is not the one graded; without the mark the question is graded after the last cell.

It is a syntax scan: code built at run time (``getattr`` with a computed name and the like) can still hide, so
a clean scan is not a proof; the flags are where to read first.

Examples
--------
>>> [f.why for f in scan_source("import numpy as np\\nnp.ndarray = list")]
['monkeypatches np.ndarray']
>>> scan_source("x = np.mean([1, 2])")
[]
"""

from __future__ import annotations

import ast
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Flag", "scan_source", "scan_notebook", "compare_notebook", "find_reference", "main"]

_MODULES = {"os", "sys", "io", "pathlib", "glob", "shutil", "importlib", "builtins", "inspect", "ctypes",
            "subprocess", "gc", "tempfile", "runpy", "otter"}
_INTERNALS = {"blowfish_nb.labs._grade", "blowfish_nb.labs._key", "blowfish_nb.labs.build"}
_CALLS = {"open", "exec", "eval", "compile", "__import__", "setattr", "delattr"}
_NAMESPACES = {"globals", "vars", "locals"}
_ATTRS = {"read_text", "write_text", "read_bytes", "write_bytes", "unlink", "rename", "replace_file", "_getframe",
          "f_locals", "f_globals", "f_back", "f_code", "__builtins__", "__code__", "__globals__", "open", "iterdir",
          "fromfile", "tofile", "stack", "frame", "getargvalues", "currentframe", "__closure__", "cell_contents",
          "__dict__", "__setattr__", "__delattr__", "__getattribute__"}
#: the library's lab modules a notebook has no business importing as modules (its checks come from the set-up cell)
_LAB_MODULES = {"_check", "_grade", "_key", "build", "scan"}
_GUARDED = {"grader", "check", "Notebook"}
#: a built notebook's check cell: its metadata ``{"otter": {"tests": ["q1"]}}`` makes otter grade the question there
_CHECK_CELL = re.compile(r"""grader\.check\(\s*["'](\w+)["']\s*\)""")


@dataclass(frozen=True)
class Flag:
    """One flagged line: the code cell's index among the notebook's cells, the line in the cell, why, the code."""

    cell: int
    line: int
    why: str
    code: str


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node: ast.AST) -> str:
    return ast.unparse(node) if isinstance(node, (ast.Attribute, ast.Name)) else "?"


def scan_source(source: str, cell: int = 0, aliases: set[str] | None = None,
                defines_grader: bool = False) -> list[Flag]:
    """The flags of one cell's code. ``aliases`` collects the names bound to patchable modules (shared across a
    notebook's cells); ``defines_grader`` is True for the lab's own set-up cell (it binds ``grader``)."""
    aliases = set() if aliases is None else aliases
    lines = source.splitlines()
    try:
        tree = ast.parse("\n".join(line for line in lines if not line.lstrip().startswith(("%", "!"))))
    except SyntaxError as e:
        return [Flag(cell, e.lineno or 0, "does not parse as Python", "")]
    flags: list[Flag] = []

    def flag(node: ast.AST, why: str) -> None:
        n = getattr(node, "lineno", 0)
        flags.append(Flag(cell, n, why, lines[n - 1].strip() if 0 < n <= len(lines) else ""))

    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            base = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            for a in node.names:
                full = f"{base}.{a.name}" if base else a.name
                top = (base or a.name).split(".")[0]
                if top in _MODULES or any(full.startswith(m) or base.startswith(m) for m in _INTERNALS):
                    flag(node, f"imports {full}")
                elif base == "blowfish_nb.labs._check" and a.name not in ("Grader", "LabCheckFailed"):
                    flag(node, f"imports {full}")
                elif base == "blowfish_nb.labs" and a.name in _LAB_MODULES:
                    flag(node, f"imports {full}")
                aliases.add((a.asname or a.name).split(".")[0])  # any module: otter's results go through pickle
                bound = (a.asname or a.name).split(".")[0]
                own = base == "blowfish_nb.labs" and a.name.startswith("lab") and bound == "check"  # the set-up
                if bound in _GUARDED and not own and not defines_grader:
                    flag(node, f"rebinds {bound}")
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if isinstance(f, ast.Name) and name in _CALLS:
                flag(node, f"calls {name}")
            elif isinstance(f, ast.Name) and name == "vars" and node.args:
                flag(node, "calls vars of an object")
            elif (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Call)
                  and isinstance(f.value.func, ast.Name) and f.value.func.id in _NAMESPACES):
                flag(node, f"calls {f.value.func.id}().{f.attr}")
        elif isinstance(node, ast.Attribute) and node.attr in _ATTRS:
            flag(node, f"uses .{node.attr}")
        elif isinstance(node, ast.Name) and node.id == "__builtins__":
            flag(node, "uses __builtins__")
        elif isinstance(node, ast.NamedExpr) and node.target.id in _GUARDED:
            flag(node, f"rebinds {node.target.id}")
        elif isinstance(node, (ast.For, ast.comprehension, ast.withitem)):
            target = node.optional_vars if isinstance(node, ast.withitem) else node.target
            for leaf in ast.walk(target) if target is not None else ():
                if isinstance(leaf, ast.Name) and leaf.id in _GUARDED:
                    flag(target, f"rebinds {leaf.id}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            v = node.value.replace("\\", "/")
            if v.rstrip("/") == "tests" or "tests/" in v or v.endswith(".py"):
                flag(node, f"names a file or the tests folder ({v[:40]!r})")
        if isinstance(node, ast.Assign) and _root(node.value) in aliases | {"__builtins__"}:
            for t in node.targets:  # m = np: m's attributes are np's
                aliases.update(leaf.id for leaf in ast.walk(t) if isinstance(leaf, ast.Name))
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                for leaf in ast.walk(t):
                    if isinstance(leaf, (ast.Attribute, ast.Subscript)) and _root(leaf) in aliases:
                        flag(node, f"monkeypatches {_dotted(leaf) if isinstance(leaf, ast.Attribute) else ast.unparse(leaf)}")
                    elif isinstance(leaf, ast.Attribute) and _root(leaf) in _GUARDED:
                        flag(node, f"patches {_dotted(leaf)}")
                    elif (isinstance(leaf, ast.Subscript) and isinstance(leaf.value, ast.Call)
                          and isinstance(leaf.value.func, ast.Name) and leaf.value.func.id in _NAMESPACES):
                        flag(node, f"writes into {leaf.value.func.id}()")
                    elif (isinstance(leaf, ast.Name) and leaf.id in _GUARDED and not defines_grader
                          and isinstance(leaf.ctx, ast.Store)):
                        flag(node, f"rebinds {leaf.id}")
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in _GUARDED:
            flag(node, f"rebinds {node.name}")
    return sorted(set(flags), key=lambda f: (f.line, f.why))


def scan_notebook(path: str | Path) -> list[Flag]:
    """The flags of every code cell of the notebook at ``path`` (cells numbered from 0 among all cells)."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    aliases: set[str] = set()
    flags = []
    built = False
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        src = "".join(cell.get("source", ""))
        setup = "Grader(" in src and "import Grader" in src  # the lab's own set-up cell
        built = built or setup
        flags += scan_source(src, i, aliases, defines_grader=setup)
        checked = _CHECK_CELL.fullmatch(src.strip())
        marked = (cell.get("metadata", {}).get("otter") or {}).get("tests")
        if built and checked and marked != [checked.group(1)]:
            flags.append(Flag(i, 1, f"the check cell of {checked.group(1)} lost its grading mark (the question is "
                                    "then graded after the last cell)", src.strip()))
    return flags


#: the tag otter gives a built notebook's answer cells; the tag of the lab's reveal cells (see build.ANSWER_REVEAL)
_ANSWER_TAG = "otter_answer_cell"
_REVEAL_TAG = "answer-reveal"
_ANY_CHECK = re.compile(r"""grader\s*\.\s*check\s*\(\s*["'](\w+)["']""")
_LAB = re.compile(r"""Grader\(\s*["']lab(\d+)["']\s*\)""")


def _cells(path: str | Path) -> list[dict]:
    return json.loads(Path(path).read_text(encoding="utf-8")).get("cells", [])


def _key(cell: dict) -> tuple[str, str]:
    return cell.get("cell_type", ""), "".join(cell.get("source", "")).strip()


def find_reference(submission: str | Path, build: str | Path) -> tuple[Path, Path | None]:
    """The built student notebook (and solution, when present) of the lab ``submission`` belongs to, in the lab
    build folder ``build`` (``build/labs``): the lab is read from the set-up cell's ``Grader("labNN")``."""
    from blowfish_nb.exceptions import InvalidParameterError

    for cell in _cells(submission):
        m = _LAB.search("".join(cell.get("source", "")))
        if m:
            for folder in sorted(Path(build).glob(f"{int(m.group(1)):02d}-*")):
                student = folder / "student" / f"{folder.name}.ipynb"
                solution = folder / "solution" / f"{folder.name}.ipynb"
                if student.is_file():
                    return student, solution if solution.is_file() else None
            raise InvalidParameterError(f"build: no built lab {int(m.group(1)):02d} in {build}")
    raise InvalidParameterError(f"submission: {submission} has no lab set-up cell (Grader(\"labNN\"))")


def _bound(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} | {
        n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def compare_notebook(submission: str | Path, student: str | Path, solution: str | Path | None = None) -> list[Flag]:
    """The structural deviations of ``submission`` from the built student notebook ``student`` it came from.

    Checked (issue 26, gamer33: a "predict" question is beaten by editing the notebook, not the code):

    * every lab-authored cell (all but the answer cells) is present with unchanged source, in order (a cell of the
      built ``solution``, matched by cell id, counts as the same cell: the solution notebook scans clean);
    * each check cell ``grader.check("qN")`` is there exactly once, as a code cell, with its grading mark
      ``{"otter": {"tests": ["qN"]}}``, right after its question's answer cell; no other cell carries a mark;
    * no cell has the ``otter_ignore`` tag or an ``ignore`` key in its metadata;
    * no cell the student wrote deletes (``del``) or assigns a name the lab's reveal cells bind (the objects the
      hidden tests of a predict question look for).

    Each deviation is a :class:`Flag` whose ``cell`` is the submission's cell index (where a lab cell is missing:
    where it was expected).
    """
    import difflib

    ref, sub = _cells(student), _cells(submission)
    alt: dict[tuple[str, str], tuple[str, str]] = {}
    if solution is not None:
        by_id = {c.get("id"): c for c in ref if c.get("id")}
        for c in _cells(solution):
            if c.get("id") in by_id:
                alt[_key(c)] = _key(by_id[c["id"]])
    lab = [i for i, c in enumerate(ref) if _ANSWER_TAG not in c.get("metadata", {}).get("tags", [])]
    ref_keys = [_key(ref[i]) for i in lab]
    sub_keys = [alt.get(_key(c), _key(c)) for c in sub]
    flags: list[Flag] = []
    matched: dict[int, int] = {}  # reference cell index -> submission cell index
    blocks = difflib.SequenceMatcher(None, ref_keys, sub_keys, autojunk=False).get_matching_blocks()
    for a, b, n in blocks:
        for k in range(n):
            matched[lab[a + k]] = b + k
    pos = 0
    for i in lab:
        if i in matched:
            pos = matched[i] + 1
            continue
        kind, text = _key(ref[i])
        flags.append(Flag(pos, 0, f"the lab's {kind} cell {i} of the student version is missing, changed or moved",
                          (text.splitlines() or [""])[0][:80]))
    lab_at = set(matched.values())
    questions = {}
    for i, c in enumerate(ref):
        m = _CHECK_CELL.fullmatch(_key(c)[1]) if c.get("cell_type") == "code" else None
        if m:
            questions[m.group(1)] = i
    for q, i in questions.items():
        where = [j for j, c in enumerate(sub) if (_ANY_CHECK.search(_key(c)[1]) or [None, None])[1] == q]
        if not where:
            flags.append(Flag(matched.get(i - 1, pos), 0, f"the check cell of {q} is missing", ""))
        for j in where if len(where) > 1 else ():
            flags.append(Flag(j, 1, f"the check cell of {q} appears {len(where)} times", _key(sub[j])[1][:80]))
        for j in where:
            c = sub[j]
            if c.get("cell_type") != "code":
                flags.append(Flag(j, 1, f"the check cell of {q} is a {c.get('cell_type')} cell (it never runs)",
                                  _key(c)[1][:80]))
            if (c.get("metadata", {}).get("otter") or {}) != {"tests": [q]}:
                flags.append(Flag(j, 1, f"the check cell of {q} lost or changed its grading mark", _key(c)[1][:80]))
            before = i - 2  # the lab cell before the answer cell, then the answer cell, then the check cell
            if not (j >= 2 and j - 1 not in lab_at and matched.get(before) == j - 2):
                flags.append(Flag(j, 1, f"the check cell of {q} is not right after its answer cell", _key(c)[1][:80]))
    checks = set(j for j, c in enumerate(sub) if _ANY_CHECK.search(_key(c)[1]))
    for j, c in enumerate(sub):
        meta = c.get("metadata", {})
        if "otter_ignore" in meta.get("tags", []) or '"ignore"' in json.dumps(meta):
            flags.append(Flag(j, 0, "the cell is marked for otter to ignore", _key(c)[1][:80]))
        if (meta.get("otter") or {}).get("tests") and j not in checks:
            flags.append(Flag(j, 0, "a cell other than a check cell carries a grading mark", _key(c)[1][:80]))
    reveal = set().union(*[_bound(_key(c)[1]) for c in ref if _REVEAL_TAG in c.get("metadata", {}).get("tags", [])
                           and c.get("cell_type") == "code"])
    for j, c in enumerate(sub):
        if j in lab_at or c.get("cell_type") != "code":
            continue
        try:
            tree = ast.parse("\n".join(x for x in _key(c)[1].splitlines() if not x.lstrip().startswith(("%", "!"))))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in reveal and isinstance(node.ctx, (ast.Del, ast.Store)):
                verb = "deletes" if isinstance(node.ctx, ast.Del) else "assigns"
                flags.append(Flag(j, node.lineno, f"{verb} {node.id}, an object of the lab's reveal cells",
                                  _key(c)[1].splitlines()[node.lineno - 1].strip()))
    return sorted(set(flags), key=lambda f: (f.cell, f.line, f.why))


def main(argv: list[str] | None = None) -> int:
    """``python -m blowfish_nb.labs.scan [--build build/labs | --reference STUDENT.ipynb] NOTEBOOK...``: print every
    flag (with ``--build`` or ``--reference`` also the structural comparison, :func:`compare_notebook`); exit status
    1 when any."""
    args = list(sys.argv[1:] if argv is None else argv)
    build = reference = None
    while args and args[0] in ("--build", "--reference") and len(args) > 1:
        if args[0] == "--build":
            build = args[1]
        else:
            reference = args[1]
        args = args[2:]
    paths = args
    if not paths:
        print("usage: python -m blowfish_nb.labs.scan [--build BUILD | --reference STUDENT.ipynb] "
              "SUBMISSION.ipynb ...", file=sys.stderr)
        return 2
    flagged = 0
    for p in paths:
        flags = scan_notebook(p)
        if build is not None:
            flags += compare_notebook(p, *find_reference(p, build))
        elif reference is not None:
            flags += compare_notebook(p, reference)
        flagged += bool(flags)
        for f in flags:
            print(f"{p}: cell {f.cell}, line {f.line}: {f.why} | {f.code}")
        if not flags:
            print(f"{p}: nothing flagged")
    print(f"{flagged} of {len(paths)} notebook(s) flagged")
    return 1 if flagged else 0


if __name__ == "__main__":
    raise SystemExit(main())
