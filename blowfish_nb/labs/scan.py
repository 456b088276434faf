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

__all__ = ["Flag", "scan_source", "scan_notebook", "main"]

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


def main(argv: list[str] | None = None) -> int:
    """``python -m blowfish_nb.labs.scan NOTEBOOK...``: print every flag; exit status 1 when any."""
    paths = list(sys.argv[1:] if argv is None else argv)
    if not paths:
        print("usage: python -m blowfish_nb.labs.scan SUBMISSION.ipynb ...", file=sys.stderr)
        return 2
    flagged = 0
    for p in paths:
        flags = scan_notebook(p)
        flagged += bool(flags)
        for f in flags:
            print(f"{p}: cell {f.cell}, line {f.line}: {f.why} | {f.code}")
        if not flags:
            print(f"{p}: nothing flagged")
    print(f"{flagged} of {len(paths)} notebook(s) flagged")
    return 1 if flagged else 0


if __name__ == "__main__":
    raise SystemExit(main())
