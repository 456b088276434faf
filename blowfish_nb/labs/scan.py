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

* IPython's own syntax: every ``!`` shell line, ``%`` line magic (also ``x = !ls``) and ``%%`` cell magic (no lab
  cell has one; ``!sed -i … tests/*.py`` and ``%%writefile -a tests/q1.py`` beat labs 2, 6 and 8, gamer34), except a
  help line (``check.variant??``, which lab 5 asks for); ``get_ipython``, ``run_cell``, ``run_line_magic`` …;
* imports of ``os``, ``sys``, ``io``, ``pathlib``, ``glob``, ``shutil``, ``importlib``, ``builtins``, ``inspect``,
  ``ctypes``, ``subprocess``, ``gc``, ``tempfile``, ``runpy``, ``otter``, ``IPython``, ``pickle``, ``types``,
  ``codecs`` … (:data:`_MODULES`; also reached as an attribute: ``pd.io.common.os``) and of the library's grading
  internals (``blowfish_nb.labs._grade``/``_key``/``build``, and ``_check`` beyond ``Grader``); and the library's
  lab modules themselves (``from blowfish_nb.labs import _check``);
* calls of ``open``, ``exec``, ``eval``, ``compile``, ``__import__``, ``setattr``, ``delattr``, ``getattr`` with a
  computed or dunder name; ``globals()``/``vars()``/``locals()`` except to test a name (``"x" in globals()``);
  file readers and writers by name, as a function or a method (``np.fromregex``, ``np.load``, ``np.loadtxt``,
  ``np.genfromtxt``, ``pd.read_*``, ``to_csv``, ``read_text``, ``unlink``, ``system``, ``bytes.fromhex`` …:
  :data:`_FILE_CALLS`, :data:`_ATTRS`); frame and closure access (``_getframe``, ``f_locals``, ``f_back``,
  ``stack``, ``frame``, ``getargvalues``, ``__closure__`` …); every dunder name or attribute but ``__name__``,
  ``__init__`` and a few more (``abs.__self__`` is the builtins module, ``b.__import__``, ``__builtins__``,
  ``__dict__``, ``__subclasses__`` …);
* strings naming the ``tests`` folder or a ``.py`` file, after folding ``+``, f-strings, ``str.join``,
  ``.format``, ``%``, ``*``, slices (``"yp.1q/stset"[::-1]``) and ``bytes.fromhex`` of constants (``"te" + "sts/"
  + q + ".p" + "y"`` reads ``tests/*.py``);
* monkeypatching: assigning an attribute or an item of any imported module or name (``numpy``, ``math``,
  ``otter``, ``builtins``, ``pickle`` that writes otter's results …; also through a name assigned from one: ``m = np``),
  and assigning an attribute of *anything* but a class the cell defines, an instance of one, or ``self`` in its
  methods (a module reached through a ``for`` target, a parameter, ``[np][0]`` or a call result is not tracked, so
  every such store is flagged); assigning an attribute of ``grader``, ``check`` or ``Notebook``, and rebinding
  those names (by assignment, ``for``, ``with``, ``:=``, an import alias, a definition).

* imports of modules that run a string as code or reach a namespace by another way (``timeit``, ``cProfile``,
  ``profile``, ``trace``, ``pdb``, ``doctest``, ``unittest``, ``operator``, ``functools``, ``configparser``, ``ast``,
  ``re`` …: :data:`_RUNS_CODE`, gamer34b); ``exec``, ``eval``, ``getattr`` … used as a value (``map(exec, …)``,
  ``f = eval``) and ``breakpoint()``; ``global``/``nonlocal`` (no lab cell has one: gamer34b bound the answers
  through ``global`` in a function); text built from numbers at run time, which no lab cell does (``chr``,
  ``ord``, ``map(chr, …)``, ``bytes(<list or generator>)``, ``bytearray``, ``.decode()`` of anything but a bytes
  literal, ``%c``, ``{:c}``, ``format(n, "c")``): ``"".join(map(chr, (95, 95, …)))`` is ``"__self__"`` and
  ``timeit.timeit(bytes([…]).decode())`` ran a payload the scan never read;

* the file system without ``os`` or ``pathlib`` in the source, and a generator's seed (gamer35): ``Path`` methods
  that walk or locate (``rglob``, ``glob``, ``resolve``, ``is_dir`` …) and the public helpers that return a ``Path``
  (``reference_data_dir``, ``cache_dir``: :data:`_PATH_ATTRS`), strings naming ``/proc`` after folding (also
  ``top / "proc" / "self"``), ``np.lib`` attribute chains and ``NpzFile`` (it reads any member of the autograder
  zip); ``bit_generator``, ``seed_seq``, ``entropy``, ``spawn_key``, ``.state``, ``__getstate__`` …
  (:data:`_RNG_ATTRS`: noise that tells the grader's generators from a person's);

* a built notebook's check cell (``grader.check("q1")``) without its grading mark, otter's cell metadata
  ``{"otter": {"tests": ["q1"]}}``: otter grades each question right after its check cell, so that an answer copied
  further down from a result is not the one graded; without the mark the question is graded after the last cell.

With the lab build (``--build``), :func:`compare_notebook` also compares the notebook with the handout: every
code cell that is not an answer cell (an added cell, or a lab cell the student changed), every import outside
:func:`allowed_import` (numpy, pandas, math, public blowfish_nb, and what the lab's own cells import), and the
answer cells against the solution's. In the cells the student wrote it also flags writers (:data:`_WRITERS`:
``to_string``, ``to_csv``, ``to_json``, ``.dump``, ``savetxt``, ``tofile``, ``np.save*`` …, and any ``buf=``/
``path_or_buf=``/``file=`` keyword; a writer the handout's own cells call is allowed), NumPy's global state
(:data:`_NUMPY_STATE`: ``set_printoptions``, ``printoptions``, ``setbufsize``, ``seterr``, their readers,
``fromstring`` …) and NumPy's array-to-text functions (``array2string``, ``array_repr``, ``array_str``) anywhere
but as the argument of ``print`` or a statement of their own; in a by-hand answer cell only numbers, arithmetic,
names the lab binds to numbers, ``math``, ``np.sqrt``/``np.log``/``np.exp`` (and a few more scalar functions),
``np.pi``/``np.e``/``np.inf`` and ``max``/``min``/``sum`` of literal tuples (gamer35 computed lab 2's Δs with
``np.expand_dims`` over the lab's workloads).

It is a syntax scan: code built at run time can still hide (a name made by ``chr`` arithmetic, a library function
that reads a file, a kernel patched through an object the scan does not know), so a clean scan is not a proof; the
flags are where to read first. Grading outside the student's kernel is the real fix.

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

from .linear_noise import fresh_containers, nonlinear_use

__all__ = ["Flag", "scan_source", "scan_notebook", "compare_notebook", "find_reference", "allowed_import",
           "pure_answer", "noise_reads", "main"]

_MODULES = {"os", "sys", "io", "pathlib", "glob", "shutil", "importlib", "builtins", "inspect", "ctypes",
            "subprocess", "gc", "tempfile", "runpy", "otter", "IPython", "ipykernel", "pickle", "marshal", "types",
            "code", "codeop", "codecs", "base64", "zlib", "fileinput", "linecache", "mmap", "pkgutil", "site",
            "atexit", "posix", "nt", "_io", "zipimport", "traceback", "f2py", "distutils", "ctypeslib"}
#: modules that run a string as code (``timeit.timeit``, ``cProfile.run``, ``pdb.run``, ``doctest``, ``trace``), reach
#: an object's namespace without a dunder in the source (``operator.attrgetter``, ``functools.reduce(getattr, …)``),
#: read the hidden tests by another name (``configparser``) or take code apart (``ast``, ``dis``): gamer34b. Flagged
#: even without the lab build; with it (:func:`compare_notebook`) every import outside :func:`allowed_import` is too
_RUNS_CODE = {"operator", "timeit", "cProfile", "profile", "pstats", "trace", "pdb", "bdb", "doctest", "unittest",
              "configparser", "ast", "dis", "re", "functools", "struct", "array", "string", "shlex", "tokenize",
              "threading", "multiprocessing", "asyncio", "signal", "weakref", "copyreg", "sched", "cmd", "dbm",
              "shelve", "csv", "json", "tomllib", "plistlib", "xml", "html", "zipfile", "tarfile",
              "gzip", "bz2", "lzma", "urllib", "http", "socket", "webbrowser", "platform", "sysconfig"}
_INTERNALS = {"blowfish_nb.labs._grade", "blowfish_nb.labs._key", "blowfish_nb.labs.build"}
_CALLS = {"open", "exec", "eval", "compile", "__import__", "setattr", "delattr"}
_NAMESPACES = {"globals", "vars", "locals"}
#: file readers and writers (a call of any of these names, as a function or a method: ``np.fromregex``, ``pd.read_csv``)
_FILE_CALLS = {"fromregex", "loadtxt", "genfromtxt", "load", "loads", "save", "savez",
               "savez_compressed", "savetxt", "memmap", "to_csv", "to_pickle", "to_json", "to_parquet",
               "to_excel", "to_hdf", "to_feather", "to_sql", "to_latex", "to_html", "to_markdown", "copyfile",
               "listdir", "scandir", "walk", "system", "popen", "getoutput", "getstatusoutput", "check_output",
               "run_cell", "run_line_magic", "run_cell_magic", "fromhex", "remove", "rmdir", "removedirs", "chdir",
               "mkdir", "makedirs", "symlink", "link", "truncate", "execv", "execve", "execl", "execlp", "spawnl",
               "spawnv", "fork", "kill", "putenv", "open_memmap", "getsource", "getsourcelines", "getfile",
               "getline", "getlines", "ZipFile", "TarFile", "enable_load_extension", "load_extension", "copy2",
               "copytree", "rmtree", "move", "Popen", "urlopen",
               "eval", "query"}  # pandas' python engine evaluates "(1).__class__"
#: IPython's handles on the kernel: a name or an attribute that runs code the scan never reads
_KERNEL = {"get_ipython", "run_cell", "run_line_magic", "run_cell_magic", "user_ns", "user_global_ns",
           "input_transformers_post", "input_transformers_cleanup", "ast_transformers", "transform_cell", "getoutput",
           "system_piped", "system_raw"}
#: dunder names the lab's own cells use (``type(e).__name__``) or a student's class needs; any other is flagged
_DUNDER_OK = {"__name__", "__init__", "__doc__", "__qualname__", "__version__", "__len__", "__repr__", "__str__"}
#: an IPython help line, ``check.variant??`` (lab 5 asks for it): shows a docstring or source, runs nothing
_HELP = re.compile(r"\s*(\?\??[\w.]+|[\w.]+\?\??)\s*")
_ATTRS = {"read_text", "write_text", "read_bytes", "write_bytes", "unlink", "rename", "replace_file", "_getframe",
          "f_locals", "f_globals", "f_back", "f_code", "__builtins__", "__code__", "__globals__", "open", "iterdir",
          "fromfile", "tofile", "stack", "frame", "getargvalues", "currentframe", "__closure__", "cell_contents",
          "__dict__", "__setattr__", "__delattr__", "__getattribute__"}
#: the file system without os or pathlib in the source (gamer35): Path methods that walk or locate (a ``Path`` came from
#: the public ``reference_data_dir("/")``), NumPy's zip reader (``np.lib.npyio.NpzFile`` returns any member of the
#: autograder zip as bytes) and the public helpers that return a ``Path``; no lab cell uses any
_PATH_ATTRS = {"rglob", "glob", "resolve", "absolute", "cwd", "home", "expanduser", "is_dir", "is_file", "joinpath",
               "parent", "parents", "readlink", "samefile", "owner", "lstat", "is_symlink", "NpzFile", "npyio",
               "DataSource", "reference_data_dir", "cache_dir",
               # where the installed packages live (gamer35b: ``np.get_include()`` cut at "numpy" is site-packages)
               "get_include", "getsitepackages", "getusersitepackages", "get_python_lib", "get_paths", "get_path",
               "as_file"}
#: modules whose ``__name__`` :func:`fold` knows (gamer35b spelled ".py" as ``np.__name__[3:]``)
_MODULE_NAMES = {"np": "numpy", "numpy": "numpy", "pd": "pandas", "pandas": "pandas", "math": "math"}
#: a generator's seed and state (gamer35's ``rng.bit_generator.seed_seq.entropy > 2**64``: Laplace on the grader's
#: 128-bit seeds, zero noise on ``default_rng(2026)``); lab noise needs only the draw methods. Flagged in every cell
_RNG_ATTRS = {"bit_generator", "seed_seq", "_seed_seq", "entropy", "spawn_key", "n_children_spawned", "pool",
              "pool_size", "state", "generate_state", "__getstate__", "__setstate__", "__reduce__", "__reduce_ex__",
              "jumped", "advance", "_bit_generator"}
#: NumPy's global state, the same in every cell: set in one cell, read in another (gamer35 carried the hidden values
#: from a free-form cell into by-hand cells in ``np.set_printoptions(nanstr=…)``, read back by ``np.array2string`` /
#: ``np.fromstring``). Flagged in every cell the student wrote (with the lab build), setters and readers alike
_NUMPY_STATE = {"set_printoptions", "get_printoptions", "printoptions", "setbufsize", "getbufsize", "seterr",
                "geterr", "seterrcall", "geterrcall", "errstate", "fromstring", "set_string_function",
                "seterrobj", "geterrobj", "_set_promotion_state", "set_promotion_state"}
#: NumPy's array-to-text functions: their text follows the print options. In a student's cell only as what a cell
#: shows (``print(np.array2string(a))`` or the cell's last expression), never as a value that flows on
_ARRAY_TEXT = {"array2string", "array_repr", "array_str", "format_float_positional", "format_float_scientific"}
#: writers the scan's name list missed (gamer35: ``pd.DataFrame([[t]]).to_string(buf=path)`` rewrote the installed
#: lab module); flagged in the student's cells unless the handout's own cells call the same (derived per lab)
_WRITERS = {"dump", "to_string", "to_xml", "to_stata", "to_clipboard", "to_orc", "write", "writelines",
            "savetxt", "tofile", "save", "savez", "savez_compressed", "to_csv", "to_json", "to_pickle", "to_parquet",
            "to_excel", "to_hdf", "to_feather", "to_sql", "to_latex", "to_html", "to_markdown", "dump_stats",
            "write_text", "write_bytes", "touch", "to_typst", "to_iceberg"}
#: every ``to_*`` method of pandas' DataFrame, Series, Index and Styler that takes a path or a buffer (pandas 2.x
#: ``dir()``; gamer35b). Left out, as they write nothing: to_numpy, to_list, to_dict, to_frame, to_flat_index,
#: to_period, to_timestamp, to_series, to_records, to_xarray
_PANDAS_WRITERS = {"to_clipboard", "to_csv", "to_excel", "to_feather", "to_hdf", "to_html", "to_iceberg", "to_json",
                   "to_latex", "to_markdown", "to_orc", "to_parquet", "to_pickle", "to_sql", "to_stata", "to_string",
                   "to_typst", "to_xml"}
#: keywords that name a file or a buffer to write to (``to_string(buf=…)``, ``to_csv(path_or_buf=…)``,
#: ``print(…, file=…)``)
_WRITER_KEYWORDS = {"buf", "path_or_buf", "path_or_buffer", "file", "fname", "filepath_or_buffer", "fh", "fid"}
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


def ipython_lines(source: str) -> tuple[str, list[tuple[int, str]]]:
    """``source`` as the Python the scan parses, and the IPython syntax in it as ``(line, why)`` pairs.

    IPython runs a ``!`` line in the shell and a ``%`` line or a ``%%`` cell as a magic before Python sees the cell
    (``!sed -i … tests/*.py`` rewrites the hidden tests; ``%%writefile -a tests/q1.py`` appends to one: gamer34).
    No lab cell has one, so each is reported; it is replaced by ``pass`` (a ``%%`` cell's body by nothing: it is
    not Python), which keeps the line numbers. A help line (``check.variant??``, which lab 5 asks for) runs nothing
    and is neither reported nor parsed.

    >>> ipython_lines("x = 1\\n!ls tests\\ncheck.variant??")
    ('x = 1\\npass\\npass', [(2, 'runs an IPython shell command or magic (!ls tests)')])
    """
    lines = source.splitlines()
    found: list[tuple[int, str]] = []
    first = next((i for i, line in enumerate(lines) if line.strip()), None)  # IPython drops leading blank lines
    if first is not None and lines[first].lstrip().startswith("%%"):
        found.append((first + 1, f"is an IPython cell magic ({lines[first].strip()[:40]}): the cell is not Python"))
        return "\n".join("pass" if i == first else "" for i in range(len(lines))), found
    out = []
    for n, line in enumerate(lines, 1):
        bare = line.lstrip()
        indent = line[: len(line) - len(bare)]
        if _HELP.fullmatch(line) and "?" in line:
            out.append(indent + "pass")
        elif bare.startswith(("!", "%")) or re.match(r"[\w.,\s]+=\s*[!%]", bare):
            found.append((n, f"runs an IPython shell command or magic ({bare[:40]})"))
            out.append(indent + "pass")
        else:
            out.append(line)
    return "\n".join(out), found


def fold(node: ast.AST) -> str | None:
    """The string an expression builds from constants, with ``*`` for each part that is not constant (``"te" +
    "sts/" + q + ".p" + "y"`` is ``tests/*.py``); also f-strings, ``str.join``, ``bytes.fromhex(…).decode()`` and
    ``.format`` of constants. None when nothing of it is a string constant."""
    if isinstance(node, ast.Attribute) and node.attr == "__name__":  # np.__name__ is "numpy"
        return _MODULE_NAMES.get(node.value.id, "*") if isinstance(node.value, ast.Name) else "*"
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        v = node.value
        return v.decode("latin-1") if isinstance(v, bytes) else v
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = fold(node.left), fold(node.right)
        return None if a is None and b is None else (a if a is not None else "*") + (b if b is not None else "*")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and (base := fold(node.left)) is not None:
        parts = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        try:
            return base % tuple(x if (x := fold(a)) is not None else "*" for a in parts)
        except (TypeError, ValueError):
            return base
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # a Path: top / "proc" / "self"
        a, b = fold(node.left), fold(node.right)
        return None if a is None and b is None else f"{a if a is not None else '*'}/{b if b is not None else '*'}"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):  # "_" * 2
        text, times = (node.left, node.right) if isinstance(node.right, ast.Constant) else (node.right, node.left)
        base = fold(text)
        if base is not None and isinstance(times, ast.Constant) and isinstance(times.value, int):
            return base * max(0, min(times.value, 64))
        return None if base is None else "*"
    if isinstance(node, ast.Subscript) and (base := fold(node.value)) is not None:  # "stset"[::-1]
        try:
            return base[ast.literal_eval(node.slice)] if not isinstance(node.slice, ast.Slice) else base[slice(
                *(None if p is None else ast.literal_eval(p) for p in (node.slice.lower, node.slice.upper,
                                                                       node.slice.step)))]
        except (ValueError, TypeError, IndexError, SyntaxError):
            return "*"
    if isinstance(node, ast.JoinedStr):
        parts = [fold(v.value if isinstance(v, ast.FormattedValue) else v) for v in node.values]
        return "".join(x if x is not None else "*" for x in parts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        f, base = node.func, fold(node.func.value)
        if f.attr == "join" and base is not None and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
            return base.join(x if (x := fold(e)) is not None else "*" for e in node.args[0].elts)
        if f.attr in ("decode", "encode", "strip", "lower", "upper") and base is not None:
            return base.lower() if f.attr == "lower" else base
        if f.attr == "format" and base is not None:
            args = [x if (x := fold(a)) is not None else "*" for a in node.args]
            try:
                return base.format(*args)
            except (IndexError, KeyError, ValueError):
                return re.sub(r"\{[^}]*\}", "*", base)
        if f.attr == "fromhex" and node.args and isinstance(node.args[0], ast.Constant):
            try:
                return bytes.fromhex(str(node.args[0].value)).decode("latin-1")
            except ValueError:
                return None
    return None


def _walk_values(node: ast.AST):
    """``ast.walk`` without the insides of subscripts' keys (``t[["analyst", "query"]]`` picks columns by name)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        todo.extend(c for c in ast.iter_child_nodes(n) if not (isinstance(n, ast.Subscript) and c is n.slice))


def _names_flagged(v: str) -> bool:
    """True when ``v`` is a name the scan flags as a call or an attribute (a writer, a reader, the kernel …)."""
    return v in (_CALLS | _FILE_CALLS | _WRITERS | _PANDAS_WRITERS | _ATTRS | _KERNEL | _PATH_ATTRS | _RNG_ATTRS
                 | _NUMPY_STATE | _NAMESPACES | {"getattr", "hasattr", "breakpoint"}) or (
        v.startswith("read_") and v[5:].isidentifier())


def _names_a_file(v: str) -> bool:
    v = v.replace("\\", "/")
    return v.rstrip("/") == "tests" or "tests/" in v or v.endswith((".py", ".py*")) or ".py/" in v or ".py*" in v


def _store_roots_ok(tree: ast.AST) -> set[str]:
    """Names an attribute may be assigned on: classes the cell defines and names bound to an instance of one."""
    classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    ok = set(classes)
    for n in ast.walk(tree):
        if (isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Name)
                and n.value.func.id in classes):
            ok.update(t.id for t in n.targets if isinstance(t, ast.Name))
    return ok


def scan_source(source: str, cell: int = 0, aliases: set[str] | None = None,
                defines_grader: bool = False) -> list[Flag]:
    """The flags of one cell's code. ``aliases`` collects the names bound to patchable modules (shared across a
    notebook's cells); ``defines_grader`` is True for the lab's own set-up cell (it binds ``grader``)."""
    aliases = set() if aliases is None else aliases
    lines = source.splitlines()
    python, magics = ipython_lines(source)
    flags: list[Flag] = [Flag(cell, n, why, lines[n - 1].strip()) for n, why in magics]
    try:
        tree = ast.parse(python)
    except SyntaxError as e:
        return flags + [Flag(cell, e.lineno or 0, "does not parse as Python", "")]

    def flag(node: ast.AST, why: str) -> None:
        n = getattr(node, "lineno", 0)
        flags.append(Flag(cell, n, why, lines[n - 1].strip() if 0 < n <= len(lines) else ""))

    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    own = _store_roots_ok(tree)
    methods = {id(f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body
               if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def in_method(node: ast.AST) -> bool:
        while node in parents:
            node = parents[node]
            if id(node) in methods:
                return True
        return False

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):  # pandas calls a method by its name: df.agg("to_string", 0, path)
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                for sub in _walk_values(arg):
                    if isinstance(sub, (ast.Constant, ast.BinOp, ast.JoinedStr, ast.Call, ast.Subscript)) and (
                            (v := fold(sub)) is not None and _names_flagged(v)):
                        flag(sub, f"passes the string {v[:40]!r} to a call: a method called by name "
                                  "(DataFrame.agg/apply/pipe, methodcaller) that the scan flags")
        if isinstance(node, ast.Subscript) and (
                (isinstance(node.value, ast.Attribute) and node.value.attr in ("__name__", "__file__"))
                or (isinstance(node.value, ast.Name) and node.value.id in ("__name__", "__file__"))):
            flag(node, f"cuts {ast.unparse(node)[:40]}: text taken from a name at run time (\".py\" from "
                       "np.__name__[3:])")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            base = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            for a in node.names:
                full = f"{base}.{a.name}" if base else a.name
                top = (base or a.name).split(".")[0]
                if top in _MODULES or any(full.startswith(m) or base.startswith(m) for m in _INTERNALS) or (
                        top in ("numpy", "pandas") and set(full.split(".")) & _MODULES):  # numpy.f2py, pandas.io
                    flag(node, f"imports {full}")
                elif top in _RUNS_CODE:
                    flag(node, f"imports {full} (runs a string as code, reaches a namespace or reads a file by "
                               "another name: no lab cell imports it)")
                elif base == "blowfish_nb.labs._check" and a.name not in ("Grader", "LabCheckFailed"):
                    flag(node, f"imports {full}")
                elif base == "blowfish_nb.labs" and a.name in _LAB_MODULES:
                    flag(node, f"imports {full}")
                aliases.add((a.asname or a.name).split(".")[0])  # any module: otter's results go through pickle
                bound = (a.asname or a.name).split(".")[0]
                own_check = base == "blowfish_nb.labs" and a.name.startswith("lab") and bound == "check"  # set-up
                if bound in _GUARDED and not own_check and not defines_grader:
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
            if name in _FILE_CALLS or (name or "").startswith("read_"):
                flag(node, f"calls {name}: reads or writes a file or runs code the scan does not see")
            if name in ("getattr", "hasattr") and len(node.args) > 1:
                attr = fold(node.args[1])
                if attr is None or "*" in attr or attr.startswith("__") or attr in (
                        _ATTRS | _KERNEL | _FILE_CALLS | _PATH_ATTRS | _RNG_ATTRS | _NUMPY_STATE | _WRITERS):
                    flag(node, f"calls {name} with a computed or hidden name ({ast.unparse(node.args[1])[:40]})")
        elif isinstance(node, ast.Name) and node.id in _CALLS | {"getattr", "hasattr", "breakpoint"} and not (
                isinstance(parents.get(node), ast.Call) and parents[node].func is node and node.id != "breakpoint"):
            flag(node, f"uses {node.id} as a value or calls it (map({node.id}, …), f = {node.id}: a call the scan "
                       "cannot read)")
        elif isinstance(node, ast.Attribute) and node.attr in _ATTRS:
            flag(node, f"uses .{node.attr}")
        elif isinstance(node, (ast.Attribute, ast.Name)) and (node.attr if isinstance(node, ast.Attribute)
                                                              else node.id) in _PATH_ATTRS:
            what = node.attr if isinstance(node, ast.Attribute) else node.id
            flag(node, f"uses {what}: the file system without os or pathlib (a Path from a public helper, NumPy's "
                       "zip reader)?")
        elif isinstance(node, ast.Attribute) and node.attr in _RNG_ATTRS:
            flag(node, f"reads the generator's seed or state (.{node.attr}): noise that tells the grader's "
                       "generators from a person's?")
        elif isinstance(node, ast.Attribute) and node.attr == "lib" and _root(node) in ("np", "numpy"):
            flag(node, f"reaches NumPy's internals through {ast.unparse(node)[:40]} (np.lib.npyio reads files)")
        elif isinstance(node, ast.Attribute) and node.attr in _MODULES:
            flag(node, f"reaches the module {node.attr} through an attribute ({ast.unparse(node)[:40]})")
        elif isinstance(node, ast.Attribute) and node.attr in _KERNEL:
            flag(node, f"uses .{node.attr} (IPython runs code the scan does not see)")
        elif (isinstance(node, ast.Attribute) and node.attr.startswith("__") and node.attr.endswith("__")
              and node.attr not in _DUNDER_OK):
            flag(node, f"uses .{node.attr}" + (" (the builtins module)" if node.attr == "__self__" else ""))
        elif isinstance(node, ast.Name) and node.id == "__builtins__":
            flag(node, "uses __builtins__")
        elif isinstance(node, ast.Name) and node.id in _KERNEL:
            flag(node, f"uses {node.id} (IPython runs code the scan does not see)")
        elif (isinstance(node, ast.Name) and node.id.startswith("__") and node.id.endswith("__")
              and node.id not in _DUNDER_OK):
            flag(node, f"uses {node.id}")
        elif isinstance(node, ast.Name) and node.id in _NAMESPACES and not (
                isinstance(parents.get(node), ast.Call) and parents[node].func is node
                and isinstance(parents.get(parents[node]), ast.Compare)
                and all(isinstance(o, (ast.In, ast.NotIn)) for o in parents[parents[node]].ops)):
            flag(node, f"uses {node.id}() other than to test a name (`\"x\" in {node.id}()`)")
        elif isinstance(node, ast.NamedExpr) and node.target.id in _GUARDED:
            flag(node, f"rebinds {node.target.id}")
        elif isinstance(node, (ast.For, ast.comprehension, ast.withitem)):
            target = node.optional_vars if isinstance(node, ast.withitem) else node.target
            for leaf in ast.walk(target) if target is not None else ():
                if isinstance(leaf, ast.Name) and leaf.id in _GUARDED:
                    flag(target, f"rebinds {leaf.id}")
        elif isinstance(node, (ast.Constant, ast.BinOp, ast.JoinedStr, ast.Call, ast.Subscript)) and not isinstance(
                parents.get(node), (ast.BinOp, ast.JoinedStr, ast.FormattedValue)):
            v = fold(node)
            if v is not None and _names_a_file(v):
                flag(node, f"names a file or the tests folder ({v[:40]!r})")
            elif v is not None and "/proc" in v.replace("\\", "/"):
                flag(node, f"names /proc ({v[:40]!r}: other processes' folders and files)")
            elif v is not None and re.fullmatch(r"__\w+__", v) and v not in _DUNDER_OK:
                flag(node, f"spells the dunder name {v!r} (attrgetter, getattr …)")
        if isinstance(node, ast.Call):  # a call is folded too (str.join, bytes.fromhex)
            v = fold(node)
            if v is not None and _names_a_file(v) and not isinstance(parents.get(node), (ast.BinOp, ast.JoinedStr)):
                flag(node, f"names a file or the tests folder ({v[:40]!r})")
        if isinstance(node, ast.Assign) and _root(node.value) in aliases | {"__builtins__"}:
            for t in node.targets:  # m = np: m's attributes are np's
                aliases.update(leaf.id for leaf in ast.walk(t) if isinstance(leaf, ast.Name))
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                for leaf in ast.walk(t):
                    root = _root(leaf)
                    if isinstance(leaf, (ast.Attribute, ast.Subscript)) and root in aliases:
                        what = _dotted(leaf) if isinstance(leaf, ast.Attribute) else ast.unparse(leaf)
                        flag(node, f"monkeypatches {what}")
                    elif isinstance(leaf, ast.Attribute) and root in _GUARDED:
                        flag(node, f"patches {_dotted(leaf)}")
                    elif (isinstance(leaf, ast.Subscript) and isinstance(leaf.value, ast.Call)
                          and isinstance(leaf.value.func, ast.Name) and leaf.value.func.id in _NAMESPACES):
                        flag(node, f"writes into {leaf.value.func.id}()")
                    elif (isinstance(leaf, ast.Name) and leaf.id in _GUARDED and not defines_grader
                          and isinstance(leaf.ctx, ast.Store)):
                        flag(node, f"rebinds {leaf.id}")
                    elif (isinstance(leaf, ast.Attribute) and not isinstance(leaf.ctx, ast.Load)
                          and root not in own and not (root == "self" and in_method(node))):
                        # a module reached through a for target, a parameter, [np][0] or a call result
                        flag(node, f"assigns an attribute of an object the cell did not create "
                                   f"({ast.unparse(leaf)[:40]}: a module or the kernel?)")
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in _GUARDED:
            flag(node, f"rebinds {node.name}")
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            word = "global" if isinstance(node, ast.Global) else "nonlocal"
            flag(node, f"declares {', '.join(node.names)} {word} (a function that binds the notebook's names: no "
                       "lab cell does)")
        why = _builds_text(node)
        if why:
            flag(node, f"{why}: text built at run time (no lab cell builds any)")
    return sorted(set(flags), key=lambda f: (f.line, f.why))


def _builds_text(node: ast.AST) -> str | None:
    """Why ``node`` makes text from numbers at run time, or None: ``chr``/``ord`` (also ``map(chr, …)``),
    ``bytes(<list>)``, ``bytearray(…)``, ``.decode()`` of anything but a bytes literal, a ``%c`` or ``{:c}`` format.
    Text built so is a name or a path the scan cannot fold (gamer34b: ``"".join(map(chr, (95, 95, …)))`` is
    ``"__self__"``, ``timeit.timeit(bytes([…]).decode())`` runs a payload)."""
    if isinstance(node, ast.Name) and node.id in ("chr", "ord", "bytearray"):
        return f"uses {node.id}"
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Name) and f.id == "bytes" and node.args and not isinstance(node.args[0], ast.Constant):
            return f"calls bytes of {type(node.args[0]).__name__.lower()} {ast.unparse(node.args[0])[:30]}"
        if (isinstance(f, ast.Attribute) and f.attr == "decode"
                and not (isinstance(f.value, ast.Constant) and isinstance(f.value.value, bytes))):
            return f"decodes {ast.unparse(f.value)[:30]}"
        if (isinstance(f, ast.Attribute) and f.attr == "format" and isinstance(f.value, ast.Constant)
                and isinstance(f.value.value, str) and re.search(r"\{[^{}]*:[^{}]*c\}", f.value.value)):
            return "formats a number as a character ({:c})"
        if isinstance(f, ast.Name) and f.id == "format" and len(node.args) > 1:
            spec = fold(node.args[1])
            if spec is None or spec.endswith("c"):
                return "formats a number as a character"
    if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str) and re.search(r"%[-+ #0-9.*]*c", node.left.value.replace("%%", ""))):
        return "formats a number as a character (%c)"
    if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
        spec = fold(node.format_spec)
        if spec is None or "*" in spec or spec.endswith("c"):
            return f"formats with the spec {spec!r} (a number as a character?)"
    return None


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


#: functions of literals a value worked out by hand may use (``math.exp(0.5 * 3)``, ``max(0.3, 0.5)``)
_PURE = {"max", "min", "abs", "round", "float", "int", "bool", "str", "sum", "pow", "len"}
_PURE_MODULES = {"math", "np", "numpy", "check"}


def _module_level(tree: ast.AST):
    """The nodes of ``tree`` outside function, lambda and class bodies and comprehensions (their names are local);
    ``global`` statements from anywhere."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
                                  ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                yield from (n for n in ast.walk(child) if isinstance(n, ast.Global))
            else:
                todo.append(child)


#: the by-hand rule's calls (gamer35 computed every Δ of lab 2 with np.expand_dims/np.diff over the lab's workloads in
#: the by-hand cells): ``math`` functions, these scalar NumPy functions and constants, and the builtins below;
#: ``max``/``min``/``sum`` of one argument only over a literal tuple or list
_NP_SCALAR = {"sqrt", "log", "exp", "log2", "log10", "log1p", "expm1", "abs"}
_NP_CONSTANTS = {"pi", "e", "inf"}
_HAND_CALLS = {"max", "min", "abs", "round", "float", "int", "sum", "pow"}


def _numeric(e: ast.AST, numbers: set[str], constants: frozenset[str] = frozenset()) -> bool:
    """Whether the expression ``e`` is a number by its syntax (or a word or a tuple of them: a choice, a pair of
    numbers): constants (the handout's ``...`` among them), tuples and lists of numbers, names
    in ``numbers``, arithmetic, ``math``/scalar NumPy functions and constants, :data:`_HAND_CALLS` of numbers, and
    the lab module's numeric ``constants`` (``check.THETA``)."""
    if isinstance(e, ast.Constant):  # a number, the handout's ``...``, or a choice's word ("threshold")
        return True
    if isinstance(e, (ast.Tuple, ast.List)):  # (30, 0.05, 31)
        return all(_numeric(x, numbers, constants) for x in e.elts)
    if isinstance(e, ast.Name):
        return e.id in numbers
    if isinstance(e, ast.UnaryOp):
        return _numeric(e.operand, numbers, constants)
    if isinstance(e, ast.BinOp):
        return not isinstance(e.op, ast.MatMult) and all(_numeric(x, numbers, constants) for x in (e.left, e.right))
    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name):
        return (e.value.id == "math" or e.value.id in ("np", "numpy") and e.attr in _NP_CONSTANTS
                or e.value.id == "check" and e.attr in constants)
    if isinstance(e, ast.Call) and not e.keywords:
        f = e.func
        if isinstance(f, ast.Name) and f.id in _HAND_CALLS:
            args = e.args[0].elts if (len(e.args) == 1 and f.id in ("max", "min", "sum")
                                      and isinstance(e.args[0], (ast.Tuple, ast.List))) else e.args
            if len(e.args) == 1 and f.id in ("max", "min", "sum") and not isinstance(e.args[0], (ast.Tuple, ast.List)):
                return False
            return all(_numeric(a, numbers, constants) for a in args)
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and (
                f.value.id == "math" or f.value.id in ("np", "numpy") and f.attr in _NP_SCALAR):
            return all(_numeric(a, numbers, constants) for a in e.args)
    return False


def _numbers(cells: list[str], constants: frozenset[str] = frozenset()) -> set[str]:
    """The names the code ``cells`` bind, at module level and only ever, to numbers (:func:`_numeric`), in order."""
    numbers: set[str] = set()
    other: set[str] = set()
    for source in cells:
        try:
            tree = ast.parse(ipython_lines(source)[0])
        except SyntaxError:
            continue
        for st in tree.body:
            if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and st.value is not None:
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                pairs = []
                for t in targets:
                    if isinstance(t, ast.Name):
                        pairs.append((t.id, st.value))
                    elif isinstance(t, ast.Tuple) and isinstance(st.value, ast.Tuple) and len(t.elts) == len(
                            st.value.elts):
                        pairs += [(x.id, v) for x, v in zip(t.elts, st.value.elts) if isinstance(x, ast.Name)]
                    elif isinstance(t, ast.Tuple):  # lo, hi = check.RANGE: numbers when the whole is
                        pairs += [(x.id, st.value) for x in t.elts if isinstance(x, ast.Name)]
                for name, value in pairs:
                    if name not in other and _numeric(value, numbers, constants) and not (
                            isinstance(st, ast.AugAssign) and name not in numbers):
                        numbers.add(name)
                    else:
                        numbers.discard(name)
                        other.add(name)
            names = {n.id for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            names |= {st.name} if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else set()
            names |= {(a.asname or a.name).split(".")[0] for a in getattr(st, "names", [])
                      if isinstance(st, (ast.Import, ast.ImportFrom))}
            if not isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                numbers -= names
                other |= names
    return numbers


def _by_hand(tree: ast.Module, known: set[str], why: bool = False, constants: frozenset[str] = frozenset(),
             numbers: set[str] | None = None):
    """Whether the cell ``tree`` only assigns values worked out by hand: names bound to constants, arithmetic,
    names of the lab's cells, ``math``/``np`` constants, the lab module's declared ``constants`` (``check.THETA``, not
    an attribute a student stored on ``check``) and :data:`_PURE` functions of those. With ``why``: ``(line, what)``
    of the first thing that is not, or None."""
    local = set(known)
    strict = None if numbers is None else set(numbers)

    def expr_ok(e: ast.AST) -> str | None:
        bad = loose(e)
        if bad is None and strict is not None and not _numeric(e, strict, constants):
            return _not_numeric(e, strict, constants)
        return bad

    def loose(e: ast.AST) -> str | None:
        for n in ast.walk(e):
            if isinstance(n, ast.Call):
                f = n.func
                if not ((isinstance(f, ast.Name) and f.id in _PURE) or
                        (isinstance(f, ast.Attribute) and _root(f) in _PURE_MODULES - {"check"}
                         and isinstance(f.value, ast.Name))):
                    return f"calls {ast.unparse(f)[:40]}"
            elif isinstance(n, ast.Attribute):
                if not (isinstance(n.value, ast.Name) and n.value.id in _PURE_MODULES):
                    return f"reads {ast.unparse(n)[:40]}"
                if n.value.id == "check" and n.attr not in constants:
                    return f"reads check.{n.attr}, not a constant the lab module declares"
            elif isinstance(n, ast.Name):
                if n.id not in local and n.id not in _PURE and n.id not in _PURE_MODULES:
                    return f"uses {n.id}, a name no lab cell binds"
            elif not isinstance(n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Tuple,
                                    ast.List, ast.Set, ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
                                    ast.expr_context, ast.keyword)):
                return f"uses {type(n).__name__}"
        return None

    for st in tree.body:
        if isinstance(st, ast.Pass) or (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)):
            continue
        if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and st.value is not None:
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            if all(isinstance(n, (ast.Name, ast.Tuple, ast.Store)) for t in targets for n in ast.walk(t)):
                bad = expr_ok(st.value)
                if bad is None:
                    local.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
                    if strict is not None:
                        strict.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
                    continue
                return (st.lineno, bad) if why else False
        if why:
            return st.lineno, f"a {type(st).__name__} statement"
        return False
    return None if why else True


def _not_numeric(e: ast.AST, numbers: set[str], constants: frozenset[str]) -> str:
    """Why the expression ``e`` is not a number worked out by hand (see :func:`_numeric`): its first part that is
    not."""
    for n in ast.walk(e):
        if isinstance(n, ast.Name) and n.id not in numbers and n.id not in _HAND_CALLS | {"math", "np", "numpy",
                                                                                          "check"}:
            return f"uses {n.id}, which is not a number the lab binds"
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
            return f"multiplies matrices ({ast.unparse(n)[:40]})"
        if isinstance(n, ast.Call) and not _numeric(n, numbers, constants):
            f = n.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("np", "numpy") and (
                    f.attr not in _NP_SCALAR):
                return f"calls {ast.unparse(f)}, not a scalar function (np.sqrt, np.log, np.exp)"
            if isinstance(f, ast.Name) and f.id in ("max", "min", "sum") and len(n.args) == 1 and not isinstance(
                    n.args[0], (ast.Tuple, ast.List)):
                return f"calls {f.id} of {ast.unparse(n.args[0])[:30]}, not of a literal tuple of numbers"
    return f"computes {ast.unparse(e)[:40]}, not arithmetic of numbers"


def _blank(tree: ast.Module, handout: dict) -> bool:
    """Whether the answer cell ``tree`` is its ``handout`` cell with constants for the answers (``x = ...``, ``x = 0``):
    not answered, nothing to read."""
    try:
        given = {ast.dump(st) for st in ast.parse(_key(handout)[1]).body}
    except SyntaxError:
        given = set()
    return all(_constant_statement(st) for st in tree.body if ast.dump(st) not in given)


def _constant_statement(st: ast.stmt) -> bool:
    """``pass``, ``x = <constant>``, ``<constant>``, ``return <constant>``, or a function whose body is only these
    (``def release_range(x, rng): ...`` with its ``...`` replaced by 0: a question asking for code, unanswered)."""
    if isinstance(st, ast.Pass):
        return True
    if isinstance(st, (ast.Assign, ast.Expr)):
        return isinstance(st.value, ast.Constant)
    if isinstance(st, ast.Return):
        return st.value is None or isinstance(st.value, ast.Constant)
    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return not st.decorator_list and all(_constant_statement(b) for b in st.body)
    return False


def _calls(tree: ast.AST, attr: str) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == attr
               for n in ast.walk(tree))


#: what a mechanism the student writes has no need of: rounding and remainders (a release that carries the data in
#: its digits, gamer34's steganographic Laplace)
_ROUNDING = {"floor", "ceil", "round", "rint", "around", "trunc", "fix", "mod", "fmod", "remainder", "divmod",
             "modf", "frexp", "ldexp", "nextafter", "tobytes", "hex", "view", "float_power"}


def _mechanism(tree: ast.AST, entry: frozenset[str] = frozenset()) -> list[tuple[int, str]]:
    """In a function the student defines: rounding or remainders, bit operations, and comparisons with the lab's
    public constants (``np.array_equal(x, check.Q2_DATA)``: a mechanism that recognises the grader's input); in one of
    the ``entry`` functions the handout asks for (``fixed_draw``, ``release_range``), any branch (gamer34b's
    ``if size == 1:`` returned the true counts on the call the grader never makes)."""
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        fname, bits = getattr(fn, "name", "a lambda"), set()
        for n in ast.walk(fn):
            if (isinstance(n, ast.BinOp) and isinstance(n.op, (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift,
                                                               ast.RShift))
                    or isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Invert)) and n.lineno not in bits:
                bits.add(n.lineno)
                found.append((n.lineno, f"takes bits ({ast.unparse(n)[:30]}) inside {fname} (a release that hides "
                                        "the data in its digits?)"))
            if (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) and isinstance(n.left, ast.BinOp)
                    and isinstance(n.left.op, ast.Add) and isinstance(n.right, (ast.Constant, ast.Name))
                    and ast.dump(n.left.right) == ast.dump(n.right)):
                found.append((n.lineno, f"rounds by adding and taking away {ast.unparse(n.right)[:20]} inside {fname} "
                                        "((v + C) - C puts v on a grid: a release that hides the data in its digits?)"))
            if fname in entry and isinstance(n, (ast.If, ast.IfExp, ast.While, ast.Match)):
                test = ast.unparse(n.subject if isinstance(n, ast.Match) else n.test)[:30]
                found.append((n.lineno, f"branches ({test}) inside {fname}: the lab's mechanism treats every call "
                                        "alike (one that differs on calls the grader does not make?)"))
            f = n.func if isinstance(n, ast.Call) else None
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in _ROUNDING or (isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Mod, ast.FloorDiv))):
                found.append((n.lineno, f"rounds or takes a remainder inside {getattr(fn, 'name', 'a lambda')} "
                                        "(a release that hides the data in its digits?)"))
            constants = [a for a in ast.walk(n) if isinstance(a, ast.Attribute) and _root(a) == "check"
                         and a.attr.isupper()] if isinstance(n, (ast.Compare, ast.Call)) else []
            if constants and (isinstance(n, ast.Compare) or name in ("array_equal", "array_equiv", "allclose",
                                                                     "isclose", "equal", "hash", "all", "any")):
                found.append((n.lineno, f"compares with the lab's public data {ast.unparse(constants[0])} inside "
                                        f"{getattr(fn, 'name', 'a lambda')} (does it recognise the grader's input?)"))
    return found



def _handout_writers(ref: list[dict]) -> frozenset[str]:
    """The writers of :data:`_WRITERS` the handout's own cells call (none today): a lab cell that needs one lets the
    student's cells call it too."""
    found = set()
    for c in ref:
        if c.get("cell_type") != "code" or _ANSWER_TAG in c.get("metadata", {}).get("tags", []):
            continue
        try:
            tree = ast.parse(ipython_lines(_key(c)[1])[0])
        except SyntaxError:
            continue
        found.update(n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
                     for n in ast.walk(tree) if isinstance(n, ast.Call))
    return frozenset(found & _WRITERS)


def _channels(tree: ast.AST, writers: frozenset[str] = frozenset()) -> list[tuple[int, str]]:
    """In a cell the student wrote: a writer (:data:`_WRITERS` not in ``writers``, or a call with a file or buffer
    keyword, :data:`_WRITER_KEYWORDS`), NumPy's global state (:data:`_NUMPY_STATE`, named or called), and NumPy's
    array-to-text functions (:data:`_ARRAY_TEXT`) anywhere but as the argument of ``print`` or a statement of their
    own (text that flows into a value carries what the print options hold); ``(line, why)`` pairs."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in _WRITERS and name not in writers:
                found.append((n.lineno, f"calls {name}: a writer (a file the grader's process reads later?)"))
            for kw in n.keywords:
                if kw.arg in _WRITER_KEYWORDS:
                    found.append((n.lineno, f"passes {kw.arg}= to {ast.unparse(f)[:30]}: writes to a file or buffer"))
            if name in _ARRAY_TEXT:
                up = parents.get(n)
                shown = isinstance(up, ast.Expr) or (isinstance(up, ast.Call) and isinstance(up.func, ast.Name)
                                                     and up.func.id == "print" and n in up.args)
                if not shown:
                    found.append((n.lineno, f"uses {name} as a value (its text follows NumPy's global print "
                                            "options: a channel between cells)"))
        if isinstance(n, (ast.Attribute, ast.Name)):
            name = n.attr if isinstance(n, ast.Attribute) else n.id
            if name in _NUMPY_STATE:
                found.append((n.lineno, f"uses NumPy's global state ({name}): set in one cell, read in another"))
    return found


def compare_notebook(submission: str | Path, student: str | Path, solution: str | Path | None = None) -> list[Flag]:
    """The structural deviations of ``submission`` from the built student notebook ``student`` it came from.

    Checked (issue 26, gamer33: a "predict" question is beaten by editing the notebook, not the code):

    * every lab-authored cell (all but the answer cells) is present with unchanged source, in order (a cell of the
      built ``solution``, matched by cell id, counts as the same cell: the solution notebook scans clean);
    * each check cell ``grader.check("qN")`` is there exactly once, as a code cell, with its grading mark
      ``{"otter": {"tests": ["qN"]}}``, right after its question's answer cell; no other cell carries a mark;
    * no cell has the ``otter_ignore`` tag or an ``ignore`` key in its metadata;
    * no cell the student wrote deletes (``del``) or assigns, at module level, a name the lab's reveal cells bind
      (the objects the hidden tests of a predict question look for; a local of the student's function is not one);
    * every code cell that is not one of the handout's answer cells (gamer34b: found by its cell id between the lab
      cells around it, or, saved without ids, as the code cell in its place): an added cell, or a lab cell whose
      source the student changed; a cell that is empty, only comments or only help lines is not counted;
    * in every cell the student wrote: an import outside :func:`allowed_import` and the lab's own imports, and a
      ``check.NAME`` the lab module does not declare (gamer34b stored the hidden tests' values on ``check``);
    * the answer cells (gamer34, gamer34b): where the solution's answer is a value worked out by hand or predicted
      (constants, arithmetic, names the lab's cells bind *before* it, ``math`` constants, the lab module's declared
      constants ``check.UPPER``, ``max``/``min``/``abs`` …), the student's must be one too, assign every name the
      handout's cell binds, and may not read its own answers' names before it assigns them (``x = x``): a library
      call, a scratch session or classroom, an import, a read of another object, or a name the student's code binds
      elsewhere (also through ``global``) is flagged; where the solution simulates (calls ``.release``) and the
      answer cell, answered, does not on a path that can run (:func:`_live_call`: a release under ``if x is None``,
      ``if False``, after a ``return`` or in a function never called does not count); a function the student wrote
      that rounds, takes remainders or bits, or adds and takes away a constant (a release hiding the data in its
      digits), or compares with a public constant ``check.NAME`` (recognising the grader's input); a branch inside
      the function the handout asks for (``if size == 1:``); a call of a public check ``check.qN`` in a cell the
      student wrote (an oracle search).

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
    sol_cells = _cells(solution) if solution is not None else []
    ref_ids = {c.get("id") for c in ref if c.get("id")}
    solution_only = {(c.get("id"), _key(c)) for c in sol_cells if c.get("id") and c.get("id") not in ref_ids}
    lab_at |= {j for j, c in enumerate(sub) if (c.get("id"), _key(c)) in solution_only}
    answer_at = _answer_cells(ref, sub, matched, lab_at)
    lab_ids = {ref[i].get("id"): i for i in lab if ref[i].get("id")}
    for j, c in enumerate(sub):
        if j in lab_at or j in answer_at or c.get("cell_type") != "code" or _runs_nothing(_key(c)[1]):
            continue
        text = (_key(c)[1].splitlines() or [""])[0][:80]
        if c.get("id") in lab_ids:
            i = lab_ids[c["id"]]
            flags.append(Flag(j, 1, f"changes the lab's {ref[i].get('cell_type')} cell {i} (id {c['id']}) into this "
                                    "code: students write only in answer cells", text))
        else:
            flags.append(Flag(j, 1, "is a code cell the handout does not have (an added cell: students write only in "
                                    "answer cells)", text))
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
    allowed = _handout_imports(ref)
    entry = frozenset(name for c in ref if _ANSWER_TAG in c.get("metadata", {}).get("tags", [])
                      for name in _defined(_key(c)[1]))
    public = _lab_names(ref)
    constants = frozenset(n for n in public if n.isupper())
    numeric = _lab_numbers(ref, constants)
    writers = _handout_writers(ref)
    trees: dict[int, ast.Module] = {}
    for j, c in enumerate(sub):
        if j in lab_at or c.get("cell_type") != "code":
            continue
        try:
            trees[j] = tree = ast.parse(ipython_lines(_key(c)[1])[0])
        except SyntaxError:
            continue
        text = _key(c)[1].splitlines()
        for node in ast.walk(tree):
            for module in _imported(node):
                if not allowed_import(module, allowed):
                    flags.append(Flag(j, node.lineno, f"imports {module}, which is not numpy, pandas, math, a public "
                                                      "blowfish_nb module or a module the lab's own cells import",
                                      text[node.lineno - 1].strip()))
        for node in _module_level(tree):
            if isinstance(node, ast.Name) and node.id in reveal and isinstance(node.ctx, (ast.Del, ast.Store)):
                verb = "deletes" if isinstance(node.ctx, ast.Del) else "assigns"
                flags.append(Flag(j, node.lineno, f"{verb} {node.id}, an object of the lab's reveal cells",
                                  text[node.lineno - 1].strip()))
            elif isinstance(node, ast.Global) and reveal & set(node.names):
                flags.append(Flag(j, node.lineno, f"declares {', '.join(sorted(reveal & set(node.names)))} global, "
                                                  "an object of the lab's reveal cells", text[node.lineno - 1].strip()))
        for node in ast.walk(tree):  # an attribute a student stored on the lab module (gamer34b: check.k_true_loss)
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "check"
                    and public and node.attr not in public and node.attr not in _DUNDER_OK):
                flags.append(Flag(j, node.lineno, f"reads check.{node.attr}, which the lab module does not declare "
                                                  "(a value stored on it?)", text[node.lineno - 1].strip()))
        for node in ast.walk(tree):  # the master notebook's check cells call check.qN; a student's cell has no need
            name = (node.attr if isinstance(node, ast.Attribute) and _root(node) == "check" else
                    fold(node.args[1]) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "getattr" and len(node.args) > 1 and _root(node.args[0]) == "check" else None)
            if name and re.fullmatch(r"q\d+\w*", name):
                flags.append(Flag(j, node.lineno, f"calls the public check check.{name} in a cell the student wrote "
                                                  "(an oracle search?)", text[node.lineno - 1].strip()))
        flags += [Flag(j, ln, why, text[ln - 1].strip() if 0 < ln <= len(text) else "")
                  for ln, why in _mechanism(tree, entry) + _channels(tree, writers)]
    sol = {c.get("id"): c for c in (_cells(solution) if solution is not None else []) if c.get("id")}
    # a name the student's code binds beyond an answer cell's own answers does not count as the lab's: a value computed
    # in an added cell and passed through ``eps = scratch.spent`` is not worked out by hand
    handout = {q: _bound(_key(ref[i - 1])[1]) for q, i in questions.items() if i >= 1}
    tainted: set[str] = set()
    for j, tree in trees.items():
        after = _CHECK_CELL.fullmatch(_key(sub[j + 1])[1]) if j + 1 < len(sub) else None
        own = handout.get(after.group(1), set()) if after else set()
        tainted |= {n.id for n in _module_level(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} - own
        tainted |= {name for n in ast.walk(tree) if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
    for q, i in questions.items():
        answer = ref[i - 1] if i >= 1 and _ANSWER_TAG in ref[i - 1].get("metadata", {}).get("tags", []) else None
        given = [j - 1 for j, c in enumerate(sub) if j >= 1 and _CHECK_CELL.fullmatch(_key(c)[1]) and
                 _CHECK_CELL.fullmatch(_key(c)[1]).group(1) == q and j - 1 in trees]
        if answer is None or answer.get("id") not in sol or not given:
            continue
        try:
            model = ast.parse(_key(sol[answer["id"]])[1])
        except SyntaxError:
            continue
        at = i - 1
        mine = _bound(_key(answer)[1])  # the cell's own answers: not known before the cell assigns them (x = x)
        known = set().union(*[_bound(_key(c)[1]) for c in ref[:at] if c.get("cell_type") == "code"]) - mine
        by_hand = _by_hand(model, known, constants=constants)
        for j in given:
            tree, text = trees[j], _key(sub[j])[1].splitlines()
            missing = sorted(mine - _bound_at_top(tree))
            if missing and by_hand:
                flags.append(Flag(j, 1, f"the answer cell of {q} does not assign {', '.join(missing)} (answered in "
                                        "another cell? each answer is worked out in its own cell)",
                                  (text or [""])[0].strip()))
            if by_hand:
                bad = _by_hand(tree, known - tainted, why=True, constants=constants,
                               numbers=_numbers([_key(c)[1] for c in ref[:at] if c.get("cell_type") == "code"],
                                                numeric) - tainted)
                if bad:
                    flags.append(Flag(j, bad[0], f"the answer cell of {q} computes ({bad[1]}) where the lab's answer "
                                                 "is worked out by hand or predicted (library call, scratch run, "
                                                 "copied value?)", text[bad[0] - 1].strip()))
            if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in model.body):
                earlier = set().union(*[_binds(ast.parse(ipython_lines(_key(c)[1])[0])) for c in ref[:at]
                                        if c.get("cell_type") == "code" and _parses(ipython_lines(_key(c)[1])[0])])
                for ln, name in _foreign_reads(tree, earlier - mine):
                    flags.append(Flag(j, ln, f"the answer cell of {q} (a function the handout asks for) reads "
                                             f"{name}: the function may depend only on its arguments and the lab's "
                                             "names (display/print/In/__name__ tell a kernel from the grader)",
                                      text[ln - 1].strip() if 0 < ln <= len(text) else ""))
                noise = [n.name for n in model.body if isinstance(n, ast.FunctionDef)
                         and [a.arg for a in n.args.args] == ["rng"]]
                if noise:  # a noise answer: the rule the plugin grades by (one function of rng alone)
                    why = pure_answer(_key(sub[j])[1], noise[0],
                                      [_key(c)[1] for c in ref[:at] if c.get("cell_type") == "code"
                                       and _ANSWER_TAG not in c.get("metadata", {}).get("tags", [])],
                                      [_key(c)[1] for k, c in enumerate(sub) if k != j and c.get("cell_type") == "code"
                                       and _ANSWER_TAG in c.get("metadata", {}).get("tags", [])])
                    if why:
                        flags.append(Flag(j, 1, f"the answer cell of {q} must be one function of rng alone: {why} "
                                                "(graded 0)", (text or [""])[0].strip()))
                for ln, what in _kept_state(tree):
                    flags.append(Flag(j, ln, f"the answer cell of {q} (a function the handout asks for) {what}: "
                                             "state kept between calls (noise that tells a reused generator from a "
                                             "new one?)", text[ln - 1].strip() if 0 < ln <= len(text) else ""))
            if _calls(model, "release") and not _live_call(tree, "release", mine) and not _blank(tree, answer):
                flags.append(Flag(j, 1, f"the answer cell of {q} makes no release where the lab's solution "
                                        "simulates (a made-up simulation?)", (text or [""])[0].strip()))
    return sorted(set(flags), key=lambda f: (f.cell, f.line, f.why))


#: a generator's marks that tell a reused generator from a new one (gamer36b: ``r is rng`` against a kept list)
_GENERATOR_MARKS = {"state", "seed_seq", "_seed_seq", "n_children_spawned", "spawn_key", "bit_generator"}
_MUTABLE = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)


def _kept_state(tree: ast.AST) -> list[tuple[int, str]]:
    """Where the functions of ``tree`` keep state between calls or test a generator's identity: (line, what).

    A noise function needs none of these (gamer36b's ``fixed_noise(rng, _seen=[])`` returned zero on a generator it
    had seen). Mutable default arguments, ``global``/``nonlocal``, attributes stored on a function, ``is``/``is not``
    against a parameter, and reads of a generator's state or seed sequence are flagged: a hint for the teacher; the
    defence is the verdict's runs of calls on one generator (``blowfish_nb.labs._grade``).
    """
    out = []
    for f in ast.walk(tree):
        if not isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        params = {a.arg for a in f.args.posonlyargs + f.args.args + f.args.kwonlyargs}
        for d in list(f.args.defaults) + [d for d in f.args.kw_defaults if d is not None]:
            if isinstance(d, _MUTABLE) or (isinstance(d, ast.Call) and _dotted(d.func).split(".")[-1] in
                                           {"list", "dict", "set", "bytearray", "deque", "defaultdict", "Counter"}):
                out.append((d.lineno, "has a mutable default argument"))
        for n in ast.walk(f):
            if isinstance(n, (ast.Global, ast.Nonlocal)):
                out.append((n.lineno, f"declares {type(n).__name__.lower()} {', '.join(n.names)}"))
            elif isinstance(n, ast.Compare) and any(isinstance(o, (ast.Is, ast.IsNot)) for o in n.ops):
                sides = [n.left] + list(n.comparators)
                if any(isinstance(e, ast.Name) and e.id in params for e in sides) and not any(
                        isinstance(e, ast.Constant) for e in sides):
                    out.append((n.lineno, "tests a parameter's identity (is)"))
            elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name) \
                    and not isinstance(f, ast.Lambda) and n.value.id == f.name:
                out.append((n.lineno, f"stores {f.name}.{n.attr}"))
            elif isinstance(n, ast.Attribute) and n.attr in _GENERATOR_MARKS - {"bit_generator"}:
                out.append((n.lineno, f"reads .{n.attr} (a generator's state or seed sequence)"))
    return sorted(set(out))


def _defined(source: str) -> set[str]:
    """The functions a cell defines at its top level (an answer cell's ``def fixed_draw(x, size, rng): ...``)."""
    try:
        return {n.name for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    except SyntaxError:
        return set()


#: names a code answer reads that tell a kernel from the grader's child or reach the kernel (gamer35b:
#: ``noise * (display.__name__ == "<lambda>")`` is zero noise in a kernel, Laplace in the grader)
_TELLS = {"display", "print", "In", "Out", "get_ipython", "globals", "locals", "vars", "dir", "__name__",
          "__file__", "__builtins__", "sys", "os", "inspect", "exit", "quit", "help", "input", "id", "hash",
          "open", "type", "_", "__", "___", "_ih", "_oh", "_dh"}


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


def _binds(tree: ast.AST) -> set[str]:
    """Every name ``tree`` binds anywhere: assignments, parameters, functions, classes, imports, handlers."""
    out = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        if isinstance(n, ast.arg):
            out.add(n.arg)
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in n.names}
        if isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
    return out


def _foreign_reads(tree: ast.AST, known: set[str]) -> list[tuple[int, str]]:
    """In the answer cell of a code question (the function the handout asks for): each read of a name in
    :data:`_TELLS`, or of a name neither the cell nor the lab's earlier cells bind and not a harmless builtin."""
    import builtins

    ok = (set(dir(builtins)) - _TELLS) | known | _binds(tree)
    return [(n.lineno, n.id) for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and (n.id in _TELLS or n.id not in ok)]


def _runs_nothing(source: str) -> bool:
    """Whether a code cell is empty, only comments or only help lines (``check.variant??``, which lab 5 asks for;
    JupyterLab leaves an empty cell at the end of a notebook)."""
    python, magics = ipython_lines(source)
    try:
        body = ast.parse(python).body
    except SyntaxError:
        return False
    return not magics and all(isinstance(st, ast.Pass) for st in body)


def _answer_cells(ref: list[dict], sub: list[dict], matched: dict[int, int], lab_at: set[int]) -> dict[int, int]:
    """The submission's answer cells, ``{submission index: reference index}``: each answer cell of the handout ``ref``
    is found between the submission cells its neighbouring lab cells matched, by its cell id, else (a notebook saved
    without ids, or the cell re-created) as the last code cell there that carries no id of the handout."""
    answers = [i for i, c in enumerate(ref) if _ANSWER_TAG in c.get("metadata", {}).get("tags", [])]
    ids = {c.get("id") for c in ref if c.get("id")}
    found: dict[int, int] = {}
    slots = {}
    for a in answers:
        lower = max((j for i, j in matched.items() if i < a), default=-1)
        upper = min((j for i, j in matched.items() if i > a), default=len(sub))
        slots[a] = [j for j in range(lower + 1, upper) if j not in lab_at and sub[j].get("cell_type") == "code"]
        by_id = [j for j in slots[a] if ref[a].get("id") and sub[j].get("id") == ref[a].get("id") and j not in found]
        if by_id:
            found[by_id[0]] = a
    for a in answers:
        if a in found.values():
            continue
        free = [j for j in slots[a] if j not in found and sub[j].get("id") not in ids]
        if free:
            found[free[-1]] = a
    return found


def _imported(node: ast.AST) -> list[str]:
    """The modules an import statement imports (``from a.b import c``: ``a.b``, and ``a.b.c`` when that names a
    module the statement could load; ``import a.b``: ``a.b``); relative imports as ``.name``."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = "." * node.level + (node.module or "")
        return [base] + [f"{base}.{a.name}" for a in node.names if base.startswith("blowfish_nb")]
    return []


def _handout_imports(ref: list[dict]) -> frozenset[str]:
    """Every module the built handout's code cells import (its set-up cell's ``blowfish_nb.labs``, lab 9's ``sqlite3``
    and ``concurrent.futures``, lab 8's ``bqplot`` …): the lab's own allow-list on top of :func:`allowed_import`'s."""
    found = set()
    for c in ref:
        if c.get("cell_type") != "code":
            continue
        try:
            tree = ast.parse(ipython_lines(_key(c)[1])[0])
        except SyntaxError:
            continue
        found.update(m for n in ast.walk(tree) for m in _imported(n))
    return frozenset(found)


def allowed_import(module: str, lab: frozenset[str] | set[str] = frozenset()) -> bool:
    """Whether a student may import ``module``: numpy, pandas and math (and their public submodules), a public
    module of blowfish_nb outside ``blowfish_nb.labs``, or a module the lab's own cells import (``lab``, see
    :func:`_handout_imports`). Everything else (``operator``, ``timeit``, ``cProfile``, ``configparser``, ``ast``,
    ``re``, ``functools`` …) is flagged with the lab build: an allow-list cannot miss a module the way gamer34b's
    ``timeit.timeit`` and ``operator.attrgetter`` went past the deny-list.

    >>> allowed_import("numpy.linalg"), allowed_import("blowfish_nb.policy"), allowed_import("operator")
    (True, True, False)
    >>> allowed_import("numpy.f2py"), allowed_import("pandas.io.common")
    (False, False)
    >>> allowed_import("blowfish_nb.labs._grade", {"blowfish_nb.labs"}), allowed_import("sqlite3", {"sqlite3"})
    (False, True)
    """
    parts = module.split(".")
    if module in lab and not any(p.startswith("_") for p in parts[1:]):
        return True
    if any(p.startswith("_") for p in parts) or module.startswith("."):
        return False
    if parts[0] in ("numpy", "pandas", "math"):
        return not any(p in _MODULES or p in _RUNS_CODE for p in parts[1:])  # numpy.f2py, pandas.io
    return parts[0] == "blowfish_nb" and parts[1:2] != ["labs"]


def _lab_names(ref: list[dict]) -> frozenset[str]:
    """The names the lab module of the handout ``ref`` declares public (its ``__all__``, read from its source, not
    imported); its UPPER names are its constants, the only ``check.NAME`` a by-hand answer may use."""
    for c in ref:
        m = _LAB.search("".join(c.get("source", "")))
        if m:
            path = Path(__file__).resolve().parent / f"lab{int(m.group(1)):02d}.py"
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (OSError, SyntaxError):
                return frozenset()
            for st in tree.body:
                if (isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                       for t in st.targets)
                        and isinstance(st.value, (ast.List, ast.Tuple))):
                    return frozenset(e.value for e in st.value.elts if isinstance(e, ast.Constant)
                                     and isinstance(e.value, str))
    return frozenset()


def _lab_numbers(ref: list[dict], constants: frozenset[str]) -> frozenset[str]:
    """The lab module's declared ``constants`` that its source binds to numbers (``THETA = 4``; not ``Q2_DATA``, an
    array): the only ``check.NAME`` a by-hand answer may use."""
    for c in ref:
        m = _LAB.search("".join(c.get("source", "")))
        if m:
            path = Path(__file__).resolve().parent / f"lab{int(m.group(1)):02d}.py"
            try:
                source = path.read_text(encoding="utf-8")
            except OSError:
                return frozenset()
            return frozenset(_numbers([source]) & constants)
    return frozenset()


def _bound_at_top(tree: ast.Module) -> set[str]:
    """The names a cell binds at module level (assignments, definitions, imports), not inside its functions."""
    names = set()
    for n in _module_level(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in n.names)
    names.update(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
    return names


def _truth(test: ast.AST) -> bool | None:
    """A test's value when the syntax fixes it (constants, ``not``, ``and``/``or``, comparisons of constants), else
    None; an ``x is None``/``x == None`` test counts as false (gamer34b's dead ``if x is None: ….release(…)``: the
    answer is never called with None)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.Eq)) and (
            isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None):
        return False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _truth(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        values = [_truth(v) for v in test.values]
        if isinstance(test.op, ast.And):
            return False if False in values else True if all(v is True for v in values) else None
        return True if True in values else False if all(v is False for v in values) else None
    if isinstance(test, ast.Constant):
        return bool(test.value)
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Constant)
            and isinstance(test.comparators[0], ast.Constant)):
        import operator

        compare = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.Gt: operator.gt,
                   ast.LtE: operator.le, ast.GtE: operator.ge}.get(type(test.ops[0]))
        try:
            return None if compare is None else bool(compare(test.left.value, test.comparators[0].value))
        except TypeError:  # 'a' < 1
            return None
    return None


def _live_call(tree: ast.Module, attr: str, entry: set[str]) -> bool:
    """Whether the cell ``tree`` calls ``.attr`` on a path that can run: not under an ``if``/``while``/conditional
    expression whose test :func:`_truth` fixes against it, not after a ``return``/``raise``/``break``/``continue`` of
    its block, not in a loop over an empty literal, and, inside a function or lambda the cell defines, only when that
    function is called in the cell or is one of ``entry`` (the answer's names: the grader calls it).

    Still syntax, not a run: a release whose result is thrown away (``_ = o.release(…)``), one on a path that depends
    on the data (``if x.sum() < 0:``) or one in a function called only from dead code meets it. Counting the library
    releases of a run of the answer cell would need the kernel the scan stays out of; the rule is a place to read."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} | set(entry)

    def dead(node: ast.AST) -> bool:
        while node in parents:
            up = parents[node]
            if isinstance(up, (ast.If, ast.While, ast.IfExp)) and node is not up.test:
                t = _truth(up.test)
                in_body = node in (up.body if isinstance(up.body, list) else [up.body])
                if t is not None and t != in_body:
                    return True
            if isinstance(up, (ast.For, ast.AsyncFor)) and node in up.body and (
                    isinstance(up.iter, (ast.List, ast.Tuple, ast.Set)) and not up.iter.elts
                    or isinstance(up.iter, ast.Call) and ast.unparse(up.iter) in ("range(0)", "range()")):
                return True
            if isinstance(up, ast.BoolOp) and node is not up.values[0]:
                first = _truth(up.values[0])
                if first is not None and first == isinstance(up.op, ast.Or):
                    return True
            for field in ("body", "orelse", "finalbody", "handlers"):
                block = getattr(up, field, None)
                if isinstance(block, list) and node in block:
                    before = block[: block.index(node)]
                    if any(isinstance(s, (ast.Return, ast.Raise, ast.Break, ast.Continue)) for s in before):
                        return True
            if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)) and up.name not in used:
                return True
            if isinstance(up, ast.Lambda):
                holder = parents.get(up)
                names = [t.id for t in getattr(holder, "targets", []) if isinstance(t, ast.Name)]
                if names and not set(names) & used:
                    return True
            node = up
        return False

    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == attr and not dead(n)
               for n in ast.walk(tree))


# --- the structural rule of a noise answer (shared by the scan and the plugin) ----------------------------------

#: the draws a noise answer may call on its generator (the labs' solutions use ``laplace``; the others build the
#: right laws too, or wrong ones the verdict rejects by their law)
PURE_DRAWS = frozenset({"laplace", "exponential", "standard_exponential", "random", "integers", "geometric",
                        "uniform", "normal", "standard_normal", "binomial", "poisson"})
#: ``np.NAME`` a noise answer may use: arithmetic on numbers and arrays; nothing that reads a clock, a file or the
#: global random state (``np.random``, ``np.datetime64``), nothing that writes into an array (``np.copyto``,
#: ``np.put``, ``out=``)
PURE_NP = frozenset({"sqrt", "log", "exp", "log2", "log10", "log1p", "expm1", "abs", "absolute", "sign", "floor",
                     "ceil", "round", "rint", "around", "trunc", "minimum", "maximum", "clip", "sum", "cumsum",
                     "diff", "prod", "mean", "where", "zeros", "ones", "full", "zeros_like", "ones_like",
                     "full_like", "array", "asarray", "arange", "concatenate", "stack", "repeat", "tile", "dot",
                     "matmul", "float64", "float32", "int64", "int32", "intp", "pi", "e", "inf", "isfinite",
                     "log1p", "square", "negative", "subtract", "add", "multiply", "divide", "power", "squeeze"})
PURE_MATH = frozenset({"sqrt", "log", "exp", "log1p", "expm1", "floor", "ceil", "fabs", "pi", "e", "inf", "pow",
                       "log2", "log10", "copysign"})
#: builtins a noise answer may call
PURE_BUILTINS = frozenset({"abs", "min", "max", "float", "int", "round", "len", "range", "sum", "bool", "pow"})
#: methods of the handout's objects a noise answer may call (lab 3: ``ordered.release``)
PURE_LAB_ATTRS = frozenset({"release", "noise_scale", "sensitivity", "expected_error", "shape"})
#: attributes of a value the answer computed (an array's)
PURE_VALUE_ATTRS = frozenset({"sum", "mean", "astype", "item", "copy", "shape", "size", "T", "reshape", "ravel",
                              "dtype", "ndim", "cumsum", "round", "clip", "tolist", "squeeze", "flatten"})
_PURE_FORBIDDEN = {ast.Yield: "yield", ast.YieldFrom: "yield from", ast.Await: "await", ast.Global: "global",
                   ast.Nonlocal: "nonlocal", ast.Lambda: "a lambda", ast.FunctionDef: "a nested def",
                   ast.AsyncFunctionDef: "a nested def", ast.ClassDef: "a class", ast.Import: "an import",
                   ast.ImportFrom: "an import", ast.With: "with", ast.AsyncWith: "with", ast.Try: "try",
                   ast.While: "while", ast.Delete: "del", ast.AugAssign: "an augmented assignment (+=)",
                   ast.Assert: "assert", ast.Match: "match", ast.GeneratorExp: "a generator expression"}
_PURE_NP_MODULES = {"numpy": PURE_NP, "math": PURE_MATH}


def handout_names(setup: list[str]) -> tuple[dict[str, str], set[str]]:
    """The modules (alias -> module) and the other names the handout's cells ``setup`` bind at their top level."""
    modules: dict[str, str] = {}
    values: set[str] = set()
    for source in setup:
        try:
            tree = ast.parse(ipython_lines(source)[0])
        except SyntaxError:
            continue
        for n in _module_level(tree):
            if isinstance(n, ast.Import):
                for a in n.names:
                    modules[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(n, ast.ImportFrom):
                for a in n.names:
                    modules[a.asname or a.name] = f"{n.module}.{a.name}"
        values |= _bound_at_top(tree) - set(modules)
    return modules, values


#: positional arguments of the allowed NumPy functions and array methods that take an ``out`` after them: more would
#: pass ``out`` by position (``np.add(seen, 1, seen)`` writes into ``seen``: gamer37's counter). A ufunc's is its
#: number of inputs (``np.add.nin``), read from NumPy itself
_NP_POSITIONAL = {"sum": 3, "mean": 3, "prod": 3, "cumsum": 3, "clip": 3, "round": 2, "around": 2, "dot": 2,
                  "concatenate": 2, "stack": 2}
_VALUE_POSITIONAL = {"sum": 2, "mean": 2, "cumsum": 2, "round": 1, "clip": 2}


def noise_reads(modules: dict[str, str], name: str) -> tuple[str, ...]:
    """The handout names the noise answer ``name`` may read: ``NOISE_READS[name]`` of the lab module the handout
    imports (``modules``: alias -> module, :func:`handout_names`), or none.

    >>> noise_reads({"check": "blowfish_nb.labs.lab05"}, "fixed_noise")
    ('eps',)
    """
    import importlib

    for module in modules.values():
        if re.fullmatch(r"blowfish_nb\.labs\.lab\d+", module):
            try:
                reads = getattr(importlib.import_module(module), "NOISE_READS", {})
            except ImportError:
                return ()
            return tuple(reads.get(name, ())) if isinstance(reads, dict) else ()
    return ()


def _binds_anywhere(tree: ast.AST) -> set[str]:
    """Every name a cell can bind by its syntax, at any depth: stores and ``del`` (``:=`` in a comprehension binds
    the cell's scope, PEP 572), ``for``/``with``/``except … as`` targets, ``match`` captures, ``def``/``class``/
    ``import`` names, ``global``/``nonlocal`` names, and the root of a stored attribute or item (``check.K = 7``).
    A name bound inside a function counts too (conservative: it may be ``global`` there)."""
    names: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
        elif isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)) and _root(n):
            names.add(_root(n))
        elif isinstance(n, ast.ExceptHandler) and n.name:
            names.add(n.name)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            names.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            names.add(n.rest)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            names.update(n.names)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            if n.func.id in _BINDS_EVERYTHING:
                names.add(ANY_NAME)
            elif n.func.id in _BINDS_ITS_ARGUMENT and n.args and _root(n.args[0]):
                names.add(_root(n.args[0]))  # ``vars(ordered).update(release=…)`` (gamer37b), ``setattr(eps, …)``
        elif isinstance(n, ast.Attribute) and n.attr.startswith("__") and _root(n):
            names.add(_root(n))  # ``ordered.__dict__``, ``ordered.__setattr__``
        elif (isinstance(n, ast.Name) and n.id in _NAMESPACE_WORDS
              or isinstance(n, ast.Constant) and n.value in _NAMESPACE_WORDS
              or isinstance(n, ast.Attribute) and n.attr in ("modules", "f_globals", "f_locals")):
            names.add(ANY_NAME)  # the notebook's namespace reached as an object: ``sys.modules['__main__']``
        if isinstance(n, (ast.Import, ast.ImportFrom)) and any(
                a.name.split(".")[0] in _NAMESPACE_WORDS for a in n.names) or (
                isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] in _NAMESPACE_WORDS):
            names.add(ANY_NAME)
    return names


_NAMESPACE_WORDS = frozenset({"__main__", "__builtins__", "builtins", "inspect", "gc", "ctypes"})


#: what :func:`_binds_anywhere` returns for a cell that can bind any name (``globals()``, ``exec``, ``vars()``…)
ANY_NAME = "*"
_BINDS_EVERYTHING = frozenset({"globals", "locals", "exec", "eval", "compile", "__import__", "breakpoint"})
_BINDS_ITS_ARGUMENT = frozenset({"vars", "setattr", "delattr", "getattr"})


def _tested_part(node: ast.AST) -> ast.AST | None:
    """The part of ``node`` that decides between values: a comparison or ``and``/``or`` itself, an ``if``'s test,
    a subscript's index; None for any other node."""
    if isinstance(node, (ast.Compare, ast.BoolOp)):
        return node
    if isinstance(node, (ast.If, ast.IfExp)):
        return node.test
    if isinstance(node, ast.Subscript):
        return node.slice
    if isinstance(node, ast.comprehension) and node.ifs:  # [v for v in noise if u > 0.001]
        return ast.Tuple(elts=list(node.ifs), ctx=ast.Load())
    return None


def _draw_tainted(fn: ast.FunctionDef) -> set[str]:
    """The local names of ``fn`` whose value can come from a draw of ``rng`` (assigned from an expression that holds
    ``rng`` or such a name, by ``=``, ``:=``, a ``for`` or comprehension target), to a fixed point."""
    tainted = {"rng"}

    def holds(expr) -> bool:
        return expr is not None and any(isinstance(n, ast.Name) and n.id in tainted for n in ast.walk(expr))

    pairs = []
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign):
            pairs += [(t, n.value) for t in n.targets]
        elif isinstance(n, (ast.AnnAssign, ast.NamedExpr)):
            pairs.append((n.target, n.value))
        elif isinstance(n, (ast.For, ast.comprehension)):
            pairs.append((n.target, n.iter))
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "append"
              and isinstance(n.func.value, ast.Name)):  # out.append(draw): out holds a draw
            pairs += [(n.func.value, a) for a in n.args]
    grew = True
    while grew:
        grew = False
        for target, value in pairs:
            if holds(value):
                while isinstance(target, (ast.Subscript, ast.Attribute, ast.Starred)):  # noise[i] = draw: noise
                    target = target.value
                for t in ast.walk(target):
                    if isinstance(t, ast.Name) and t.id not in tainted:
                        tainted.add(t.id)
                        grew = True
    return tainted


def pure_answer(source: str, name: str, setup: list[str], others: list[str] = ()) -> str | None:
    """Why the answer cell ``source`` is not one function ``def name(rng):`` of ``rng`` and the lab's constants
    alone, or None.

    **What is graded.** The grading plugin does not grade the function object of the student's kernel: in the child
    that runs the answer (:class:`blowfish_nb.labs._answers.CodeProxy`) the function is compiled from this cell's
    source in a namespace of its own that holds only the names this rule lets it read, with their values as the
    handout's cells bind them before the answer (arrays as read-only copies, lists as tuples, objects as deep
    copies), ``np``/``math`` and a few builtins. So the graded function is this code under the handout's bindings at
    answer time: no other cell can rebind what it reads, and a write into a handout array raises. What a student's
    later cell does to their own kernel (rebinding ``eps`` there, ``globals()``, ``exec``) releases nothing and is
    not graded; the kernel's own function is still sampled after the check and must return what the graded one does
    on the same generators, call by call (:func:`blowfish_nb.labs._grade._kernel_sample`).

    **The rule** (structural, so it holds where the grader's calls never reach: gamer36c's noise exact after a 90 s
    pause read from ``pd.Timestamp.now()``, or after more calls in a row than the grader's longest run; gamer37's
    counter kept in a view of the data array ``x`` through ``np.add(seen, 1, seen)``, and noise exact on any
    histogram but the graded ones, read from ``x``). The cell holds only the ``def``: one positional parameter
    ``rng``, no default, no decorator, no annotation. Its body uses the draws of ``rng`` (:data:`PURE_DRAWS`;
    ``rng`` itself only as an argument), its own local names, literals, arithmetic, comparisons, ``if``/``for``/
    ``return``, the allow-listed ``np.``/``math.`` names (never with more positional arguments than their inputs:
    the next one is ``out``) and builtins, the lab module's UPPER constants, and, of the names the handout's cells
    ``setup`` bind, only those the lab module lists for this function (``NOISE_READS``: lab 3's ``ordered``, ``R``,
    ``line``, ``eps``, ``k``, ``lo``, ``hi``; lab 5's ``eps``), and only while no student cell in ``others`` binds
    them by any syntax (:func:`_binds_anywhere`; so that the kernel's function is the graded one in any notebook a
    reader can check; a cell that calls ``vars``/``setattr``/``globals``/``exec`` … on them binds them too). Never the data (``x``): a noise function that reads it can be exact on every histogram but the
    graded one. No ``yield``, ``global``, ``lambda``, nested ``def``, import, store into an attribute or item, ``+=``,
    ``out``, private or dunder name, comparison of ``rng``: nothing a value can outlive one call in, and no clock.
    No set or dict, and no comparison, ``and``/``or``, ``if`` test or index that holds a value drawn from ``rng``
    (:func:`_draw_tainted`): gamer37b's ``noise * (first not in {…4,030 first draws…})`` was exact on the first
    release of popular seeds (``default_rng(12345)``, ``MT19937(42)``) that the grader's plan never makes. And a
    draw enters the noise **linearly** (:mod:`blowfish_nb.labs.linear_noise`): added, subtracted, scaled by a number
    that is no draw, summed, stacked, indexed, stored into an array the function made (``noise[i] = …``); never
    through another function (``np.sign``, ``np.floor``, ``np.where``, ``np.exp``, ``min``, ``int``), a power, a
    product or quotient of two draws, or as a draw's parameter. gamer37c's branch written as arithmetic (``noise *
    ((1 + np.sign(u - 0.001)) / 2 + 1e-6)``: the exact counts on one call in 1,000, below any law test's power) has
    no linear form: a mixture needs a draw to decide. ``rng.choice`` (a table of constants is any law, a point mass
    included) is no allowed draw. The inverse-CDF form of a uniform draw is refused with the rest (the message names
    ``rng.laplace``, a difference of ``rng.exponential`` or ``rng.geometric`` draws).

    >>> pure_answer("def f(rng):\\n    return rng.laplace(0.0, 2 / x.sum())", "f", ["x = load()"])[:16]
    'reads x (line 2)'
    >>> setup = ["import numpy as np\\nfrom blowfish_nb.labs import lab05 as check", "eps = check.EPSILON"]
    >>> pure_answer("def fixed_noise(rng):\\n    return rng.laplace(0.0, 2 / eps, size=check.K)", "fixed_noise", setup)
    >>> pure_answer("def fixed_noise(rng):\\n    return rng.laplace(0.0, 2 / eps) * (np.datetime64('now') > 0)",
    ...             "fixed_noise", setup)
    'uses np.datetime64 (line 2)'
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return f"does not parse ({e.msg})"
    body = [st for st in tree.body if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.FunctionDef) or body[0].name != name:
        return f"the cell must hold only `def {name}(rng):`"
    fn = body[0]
    a = fn.args
    if (fn.decorator_list or fn.returns or a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults
            or [p.arg for p in a.args] != ["rng"] or a.args[0].annotation is not None):
        return f"the definition must read `def {name}(rng):` (one parameter rng, no default, no decorator)"
    modules, values = handout_names(setup)
    allowed = set(noise_reads(modules, name))
    rebound: set[str] = set()
    for other in others:
        try:
            t = ast.parse(ipython_lines(other)[0])
        except SyntaxError:
            continue
        rebound |= _binds_anywhere(t)
    rebound.discard(name)
    if ANY_NAME in rebound:  # a cell that can bind any name binds every name the answer may read
        rebound |= allowed | values | set(modules)
    local = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} - {"rng"}
    tainted = _draw_tainted(fn)
    lab = {k for k, m in modules.items() if re.fullmatch(r"blowfish_nb\.labs\.lab\d+", m) and k not in rebound}
    mods = {k: _PURE_NP_MODULES[m] for k, m in modules.items() if m in _PURE_NP_MODULES and k not in rebound}
    numpy_aliases = {k for k, m in modules.items() if m == "numpy"}
    readable = (values & allowed) - rebound
    hint = (f"a noise function may read only {', '.join(['rng', *sorted(mods)])}, the lab's constants "
            f"({'/'.join(sorted(lab)) or 'check'}.NAME){' and ' + ', '.join(sorted(allowed)) if allowed else ''}")
    parents = {c: p for p in ast.walk(fn) for c in ast.iter_child_nodes(p)}
    fresh = fresh_containers(fn, numpy_aliases & set(mods))
    for node in ast.walk(fn):
        if node is fn:
            continue
        line = f"line {getattr(node, 'lineno', fn.lineno)}"
        for kind, what in _PURE_FORBIDDEN.items():
            if isinstance(node, kind):
                return f"uses {what} ({line})"
        if isinstance(node, ast.keyword) and node.arg in (None, "out"):
            return f"passes {'**' if node.arg is None else 'out='} ({line})"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            most = _positional_most(node.func, numpy_aliases & set(mods), local)
            if most is not None and len(node.args) > most:
                return (f"calls {_dotted(node.func)} with {len(node.args)} positional arguments ({line}): the one "
                        f"after its {most} input(s) is `out`, a write into an array")
        if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load) and (
                isinstance(node.value, ast.Name) and node.value.id in fresh):
            pass  # a draw stored into an item of an array the call made: nothing outlives the call
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
            return (f"stores into {_dotted(node) if isinstance(node, ast.Attribute) else 'an item'} ({line})"
                    + ("" if isinstance(node, ast.Attribute) else ": only into an array the function makes itself "
                       "(noise = np.zeros(k); noise[i] = …)"))
        if isinstance(node, ast.Compare) and any(isinstance(o, ast.Name) and o.id == "rng"
                                                 for o in [node.left, *node.comparators]):
            return f"compares rng ({line})"
        if isinstance(node, (ast.Set, ast.Dict, ast.SetComp, ast.DictComp)):
            return f"uses a set or dict ({line})"
        tested = _tested_part(node)
        if tested is not None and any(isinstance(n, ast.Name) and n.id in tainted for n in ast.walk(tested)):
            return (f"tests or indexes by a value drawn from rng ({line}): noise is arithmetic on the draws; a test "
                    "of a draw can pick out single generator states (gamer37b: exact noise on the first draw of "
                    "popular seeds)")
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                return f"uses .{node.attr} ({line})"
            base = node.value
            if isinstance(base, ast.Name) and base.id not in local:
                if base.id == "rng":
                    ok = node.attr in PURE_DRAWS
                elif base.id in mods:
                    ok = node.attr in mods[base.id]
                    parent = parents.get(node)
                    if ok and base.id in numpy_aliases and _np_function(node.attr) and not (
                            isinstance(parent, ast.Call) and parent.func is node):
                        return f"uses {base.id}.{node.attr} other than by calling it ({line})"
                elif base.id in lab:
                    ok = node.attr.isupper()
                elif base.id in readable:
                    ok = node.attr in PURE_LAB_ATTRS
                else:
                    ok = True  # the name itself is judged below
                if not ok:
                    return f"uses {base.id}.{node.attr} ({line})"
            elif not isinstance(base, ast.Name) and node.attr not in PURE_VALUE_ATTRS:
                return f"uses .{node.attr} ({line})"
            if isinstance(base, ast.Name) and base.id in local and node.attr not in PURE_VALUE_ATTRS and not (
                    node.attr == "append" and base.id in fresh):  # out = []; out.append(a draw)
                return f"uses {base.id}.{node.attr} ({line})"
        if isinstance(node, ast.Name) and node.id == "rng" and not isinstance(node.ctx, ast.Load):
            return f"rebinds rng ({line})"
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            n = node.id
            parent = parents.get(node)
            as_base = isinstance(parent, ast.Attribute) and parent.value is node
            if n.startswith("_"):
                return f"uses {n} ({line})"
            if n == "rng":
                if not (as_base or isinstance(parent, (ast.Call, ast.keyword)) and node is not getattr(parent,
                                                                                                      "func", None)):
                    return f"uses rng other than by its draws or as an argument ({line})"
            elif n in local:
                pass
            elif n in mods or n in lab:
                if not as_base:
                    return f"uses the module {n} itself ({line})"
            elif n in readable:
                pass
            elif n in allowed and n in values:  # allowed, but a student cell binds it too
                return (f"reads {n} ({line}), which another answer cell binds: the noise function may read only "
                        "the handout's value of it")
            elif n in PURE_BUILTINS and n not in modules and n not in values and n not in rebound:
                as_dtype = n in ("int", "float", "bool") and (  # np.zeros(k, dtype=int), z.astype(float)
                    isinstance(parent, ast.keyword) and parent.arg == "dtype" or isinstance(parent, ast.Call)
                    and isinstance(parent.func, ast.Attribute) and parent.func.attr == "astype" and parent.args
                    and parent.args[0] is node)
                if not (isinstance(parent, ast.Call) and parent.func is node or as_dtype):  # np.zeros(k, dtype=int)
                    return f"uses {n} other than by calling it ({line})"
            else:
                return (f"reads {n} ({line}): {hint}; not {n}: the noise must not depend on the data (nor on a name "
                        "another cell can change)")
    return nonlinear_use(fn, tainted, numpy_aliases & set(mods), readable)


def _np_function(name: str) -> bool:
    """Whether ``np.name`` is a function or ufunc (not a constant or a type): used only by calling it, so that the
    positional ``out`` rule sees every call (``f = np.add; f(a, 1, a)`` would hide one)."""
    import numpy as np

    target = getattr(np, name, None)
    return callable(target) and not isinstance(target, type)


def _positional_most(func: ast.Attribute, numpy_aliases: set[str], local: set[str]) -> int | None:
    """How many positional arguments the call of ``func`` may take before its ``out`` (None: no ``out``)."""
    base = func.value
    if isinstance(base, ast.Name) and base.id in numpy_aliases:
        import numpy as np

        target = getattr(np, func.attr, None)
        if isinstance(target, np.ufunc):
            return target.nin
        return _NP_POSITIONAL.get(func.attr)
    if not (isinstance(base, ast.Name) and base.id == "rng"):  # a value's method (an array's)
        return _VALUE_POSITIONAL.get(func.attr)
    return None


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
    if not paths or any(a in ("-h", "--help") for a in paths):
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
