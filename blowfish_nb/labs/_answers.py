"""Plain data across the grading boundary: the student's kernel prints its answers, otter's process reads them.

The kernel side (:func:`dump`, run by the cell the grading plugin puts after each check cell) and the teacher side
(:func:`decode`, :class:`CodeProxy`) of :mod:`blowfish_nb.labs._plugin`. Kept apart from the plugin so that the
kernel and a code answer's child interpreter import NumPy and this module only (not otter-grader, whose import
takes seconds).

Only exact ``int``/``float``/``str``/``bool``/``None``, tuples and lists of them, NumPy scalars and numeric arrays
cross; anything else becomes a :class:`Refused`, which every test of a value fails.
"""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import struct
import subprocess
import sys
import types
from typing import Any

import numpy as np

__all__ = ["MARKER", "DUMP_ID", "Refused", "encode", "decode", "dump", "CodeProxy", "CALL_TIMEOUT", "TOTAL_TIMEOUT"]

#: seconds a code answer may take for one call in its child interpreter (and for its set-up)
CALL_TIMEOUT = 120.0
#: seconds all the calls of one question's code answer may take together (a verdict makes a few thousand)
TOTAL_TIMEOUT = 900.0
#: whether a code answer's child runs the cells in ipykernel's shell (as a kernel does; about 2 s to start) rather
#: than plain ``exec`` (the project's tests of other matters turn it off)
KERNEL_SHELL = True
#: seconds the kernel's own sample of a code answer may take (:func:`dump`'s ``sample``: a few thousand calls)
KERNEL_TIMEOUT = 300.0


class Refused:
    """An answer that was not plain data (or was missing): every test of its value fails. A function's carries
    ``kernel``: what it returned in the kernel on the plugin's generators (a list of plain values), or why nothing."""

    def __init__(self, why: str, kernel: Any = None):
        self.why = why
        self.kernel = kernel

    def __repr__(self) -> str:
        return f"<refused: {self.why}>"


# --- plain data, both ways ------------------------------------------------------------------------------------

_SCALARS = {bool: "bool", int: "int", float: "float", str: "str"}
_NP_SCALARS = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
               np.float16, np.float32, np.float64)
#: the marker of the line each answer cell's dump prints (otter's process reads it from the executed notebook)
MARKER = "#blowfish-answers "
#: the id of the cell that prints a question's answers (``blowfish-answers-q3``)
DUMP_ID = "blowfish-answers-"


def encode(value: Any, depth: int = 0) -> dict:
    """``value`` as JSON-able plain data, or ``{"t": "refused", ...}``; exact types only (no subclasses).

    Examples
    --------
    >>> encode((1, 2.5))
    {'t': 'tuple', 'v': [{'t': 'int', 'v': 1}, {'t': 'float', 'v': 2.5}]}
    >>> encode(object())["t"]
    'refused'
    """
    kind = type(value)
    if value is None:
        return {"t": "none"}
    if kind in _SCALARS:
        return {"t": _SCALARS[kind], "v": value}
    if kind in (tuple, list) and depth < 4 and len(value) <= 100_000:
        return {"t": kind.__name__, "v": [encode(v, depth + 1) for v in value]}
    if kind in _NP_SCALARS:
        return {"t": "np", "dtype": np.dtype(kind).str, "v": value.item()}
    if kind is np.ndarray and value.dtype.kind in "biuf" and value.size <= 10_000_000:
        return {"t": "ndarray", "dtype": value.dtype.str, "shape": list(value.shape),
                "v": base64.b64encode(np.ascontiguousarray(value).tobytes()).decode("ascii")}
    if kind is types.FunctionType:
        return {"t": "function", "name": str(getattr(value, "__name__", "?"))}
    if f"{kind.__module__}.{kind.__qualname__}" == "blowfish_nb.labs.lab09.Classroom":
        return _ledger_files(value)
    return {"t": "refused", "type": f"{kind.__module__}.{kind.__qualname__}"[:200]}


def decode(data: Any, depth: int = 0) -> Any:
    """The value :func:`encode` wrote, checked field by field (a :class:`Refused` for anything else).

    Examples
    --------
    >>> decode(encode([np.float64(0.5), "line", None, (True, 3)]))
    [np.float64(0.5), 'line', None, (True, 3)]
    """
    try:
        return _decode(data, depth)
    except (KeyError, TypeError, ValueError, OverflowError) as e:
        return Refused(f"malformed ({type(e).__name__})")


def _decode(data: Any, depth: int) -> Any:
    t = data["t"]
    if t == "none":
        return None
    if t in ("bool", "int", "float", "str"):
        v = data["v"]
        want = {"bool": bool, "int": int, "float": (float, int), "str": str}[t]
        if not isinstance(v, want) or (t != "bool" and type(v) is bool):
            raise TypeError(t)
        return float(v) if t == "float" else v
    if t in ("tuple", "list") and depth < 4:
        items = [_decode(v, depth + 1) for v in data["v"]]
        return tuple(items) if t == "tuple" else items
    if t == "np":
        dtype = np.dtype(str(data["dtype"]))
        if dtype.kind not in "biuf":
            raise TypeError("dtype")
        v = data["v"]
        if type(v) not in (bool, int, float):
            raise TypeError("np")
        return dtype.type(v)
    if t == "ndarray":
        dtype = np.dtype(str(data["dtype"]))
        shape = tuple(int(s) for s in data["shape"])
        if dtype.kind not in "biuf" or any(s < 0 for s in shape):
            raise TypeError("ndarray")
        return np.frombuffer(base64.b64decode(data["v"]), dtype=dtype).reshape(shape).copy()
    if t == "function":  # replaced by a proxy for a code question; its draws in the kernel, when it made some
        sample = data.get("sample")
        kernel = decode(sample, depth) if sample is not None else "no draws"
        kernel = kernel.why if isinstance(kernel, Refused) else kernel
        if not isinstance(kernel, (list, str)):
            kernel = "malformed draws"
        return Refused(f"function {str(data['name'])[:80]}", kernel)
    if t == "ledger":
        return _ledger_room(data["files"])
    if t == "refused":
        return Refused(f"not plain data: {str(data.get('type'))[:200]}")
    raise TypeError(t)


#: the most a classroom's ledger and key may weigh to be graded (lab 9's is a few kB)
LEDGER_BYTES = 16 * 1024 * 1024


def _ledger_files(room) -> dict:
    """Lab 9's classroom as the files its answer is about: its ledger folder and key folder, read now (the service
    is serving; the SQLite write-ahead log comes with the database)."""
    from pathlib import Path

    root = Path(str(getattr(room, "folder", "")))
    files, size = {}, 0
    for part in ("ledger", "key"):
        for path in sorted((root / part).glob("*")) if root.name else []:
            if path.is_file():
                data = path.read_bytes()
                size += len(data)
                if size > LEDGER_BYTES:
                    return {"t": "refused", "type": "classroom (ledger too large)"}
                files[f"{part}/{path.name}"] = base64.b64encode(data).decode("ascii")
    return {"t": "ledger", "files": files}


def _ledger_room(files: Any) -> Any:
    """Teacher side of a classroom: its ledger files copied into a folder of this process's own, opened with their
    key, and handed to the verdict as the one thing it reads (``room.server.service.ledger``).

    Opening audits the chain: a ledger edited behind the service's back raises ``LedgerIntegrityError`` there, and
    the verdict then gets a ``Ledger`` whose ``verify()`` raises what the audit found; an unedited copy opens and
    verifies, as the classroom's own ledger would.
    """
    import re
    import tempfile
    from pathlib import Path

    from blowfish_nb.service.chain import LedgerIntegrityError
    from blowfish_nb.service.ledger import Ledger

    if not isinstance(files, dict) or not files:
        return Refused("classroom without its ledger")
    root = Path(tempfile.mkdtemp(prefix="blowfish-graded-ledger-"))
    (root / "ledger").mkdir(mode=0o700)
    (root / "key").mkdir(mode=0o700)
    for name, data in files.items():
        if not (isinstance(name, str) and re.fullmatch(r"(ledger|key)/[\w.-]+", name) and isinstance(data, str)):
            return Refused("classroom with a malformed file")
        (root / name).write_bytes(base64.b64decode(data))
        (root / name).chmod(0o600)  # the service refuses a key others may read
    dbs = sorted(p for p in (root / "ledger").glob("*.db"))
    keys = sorted(p for p in (root / "key").glob("*.key"))
    if len(dbs) != 1 or len(keys) != 1:
        return Refused("classroom without one ledger and one key")
    try:
        ledger = Ledger(dbs[0], key_file=keys[0], anchor=False)
    except LedgerIntegrityError as error:
        ledger = Ledger.__new__(Ledger)  # verify() first raises what the audit found (Ledger._usable)
        ledger._broken = str(error)
    except Exception as e:  # not a ledger at all: nothing was edited that the service would notice
        return Refused(f"classroom whose ledger does not open ({type(e).__name__})")
    return types.SimpleNamespace(server=types.SimpleNamespace(service=types.SimpleNamespace(ledger=ledger)))


def dump(question: str, names: list[str], namespace: dict, sample: tuple[int, int] | None = None) -> None:
    """Kernel side: print the answers ``names`` of ``question`` as they are now, one line of plain data.

    The line goes out as the dump cell's output, which otter's process records while the cell runs (a later cell
    cannot change it); the kernel is the student's, so what it prints is only ever read by :func:`decode`.

    ``sample = (runs, seed)``: each answer that is a function (a code question's noise) is also called here, in the
    kernel, on the generators of ``blowfish_nb.labs._grade.noise_plan(runs, seed)`` (the seed drawn by the grading
    plugin at grading time), and what it returns is recorded with it (``_grade._kernel_sample`` compares it with the
    same function run outside the kernel).
    """
    values = {}
    for n in names:  # a name not defined (yet) is None, as otter passes it to a test
        value = namespace.get(n)
        values[n] = encode(value)
        if sample is not None and values[n]["t"] == "function":
            values[n]["sample"] = _kernel_draws(value, *sample)
    print(MARKER + json.dumps({"question": question, "values": values}))


def _kernel_draws(fn, runs: int, seed: int) -> dict:
    """``fn`` called on each generator of the plan in order (a run's calls on one object), its results as one encoded
    list (refused when a call raises)."""
    import time

    from blowfish_nb.labs._grade import noise_plan, plan_generators

    gens = plan_generators(noise_plan(runs, seed))  # runs of calls on one generator object, as the verdict's
    out, stop = [], time.monotonic() + KERNEL_TIMEOUT
    for i in range(runs):
        try:
            out.append(encode(fn(gens[i])))
        except Exception as e:
            return {"t": "refused", "type": f"a call raised {type(e).__name__}"}
        if time.monotonic() > stop:
            return {"t": "refused", "type": f"calls took longer than {KERNEL_TIMEOUT:.0f} s"}
    return {"t": "list", "v": out}


# --- code answers in a child interpreter ------------------------------------------------------------------------

#: ``python -P`` (3.11+): the working folder is not put on ``sys.path`` (gamer39's ``pandas.py``); the kernel's and
#: the child's command lines carry it (:mod:`._jail`)
SAFE_PATH = ["-P"] if sys.version_info >= (3, 11) else []
#: the child's first lines: the working folder off ``sys.path`` also where ``-P`` does not exist (Python 3.10)
_NO_WORKING_FOLDER = "import sys\nsys.path[:] = [p for p in sys.path if p not in ('', '.')]\n"


_CHILD = r'''
import base64, json, os, pickle, struct, sys
import numpy as np
from blowfish_nb.labs._answers import encode
from blowfish_nb.labs.linear_noise import AffineCheck, DrawTape, taped_source
inp, out = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)                                # the student's prints (and the shell's) go to stderr, never the replies
def read():
    head = inp.read(4)
    if len(head) < 4:
        sys.exit(0)
    return pickle.loads(inp.read(struct.unpack(">I", head)[0]))
def reply(obj):
    data = json.dumps(obj).encode()
    out.write(struct.pack(">I", len(data)) + data)
    out.flush()
setup, answer, name, argv, shell, GEN_MARK, snapshot = read()
sys.argv = list(argv)
run = _kernel_like(shell)
for src in setup:
    ok = run(src)
    if ok is not True:
        print("set-up cell failed:", ok, file=sys.stderr)
if snapshot is None:
    ok = run(answer)
    ns = _namespace()
else:                                        # the answer's source under the handout's bindings, nothing else
    try:
        ns = _snapshot(_namespace(), *snapshot)
        tape = ns["__tape__"] = DrawTape()  # each draw recorded: the value must be the affine sum its code states
        exec(compile(taped_source(answer, set(snapshot[0])), "<answer>", "exec"), ns)
        ok = True
    except Exception as e:
        ok = f"{type(e).__name__}: {e}"
if ok is not True or name not in ns:
    reply({"ok": False, "error": str(ok if ok is not True else f"NameError: name {name!r} is not defined")[:300]})
    sys.exit(0)
fn = ns[name] if snapshot is None else AffineCheck(ns[name], tape)
reply({"ok": True})
gens = {}                                    # token -> the one Generator object that stands for the parent's
def arg(a):
    if type(a) is tuple and len(a) == 3 and a[0] == GEN_MARK:
        _, token, payload = a
        if isinstance(payload, np.random.Generator):
            gens[token] = payload
        else:                                # the same generator again: the same object, at the parent's state
            gens[token].bit_generator.state = payload
        return gens[token]
    return a
while True:
    args, kwargs, dropped = read()
    for token in dropped:
        gens.pop(token, None)
    args, kwargs = [arg(a) for a in args], {k: arg(a) for k, a in kwargs.items()}
    try:
        value = fn(*args, **kwargs)
        states = [a.bit_generator.state if isinstance(a, np.random.Generator) else None
                  for a in list(args) + list(kwargs.values())]
        reply({"ok": True, "value": encode(value), "states": states})
    except Exception as e:
        reply({"ok": False, "error": f"{type(e).__name__}: {e}"[:300]})
'''

#: how the child runs the cells: as a Jupyter kernel would, in ipykernel's IPython shell (``In``, ``Out``,
#: ``get_ipython``, IPython's own ``display`` with its output discarded, magics), or plain ``exec`` without IPython
_CHILD_SHELL = r'''
def _frozen(value, depth=0):
    """A value of the handout as the graded function gets it: arrays read-only copies, lists and tuples tuples of
    frozen items, numbers and strings as they are, any other object a deep copy (no cell reaches it)."""
    import copy
    import numpy as np
    if isinstance(value, np.ndarray):
        value = value.copy()
        value.flags.writeable = False
        return value
    if isinstance(value, (list, tuple)) and depth < 4:
        return tuple(_frozen(v, depth + 1) for v in value)
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes, np.generic)):
        return value
    return copy.deepcopy(value)

def _snapshot(user_ns, reads, modules, lab, builtin_names):
    """The namespace the graded function is compiled in: the allowed handout names' values (frozen), the allowed
    modules, the lab module's UPPER constants (a namespace of frozen values) and restricted builtins."""
    import builtins, importlib, types
    ns = {"__name__": "__graded__", "__builtins__": {n: getattr(builtins, n) for n in builtin_names}}
    for alias, module in modules.items():
        ns[alias] = importlib.import_module(module)
    for alias, module in lab.items():
        m = importlib.import_module(module)
        ns[alias] = types.SimpleNamespace(**{k: _frozen(v) for k, v in vars(m).items() if k.isupper()
                                             and not k.startswith("_")
                                             and isinstance(v, (bool, int, float, str, tuple))})
    for n in reads:
        if n in user_ns:
            ns[n] = _frozen(user_ns[n])
    return ns

def _kernel_like(shell=True):
    global _namespace
    try:
        if not shell:
            raise ImportError("plain exec asked for")
        from IPython.core.interactiveshell import InteractiveShell
    except ImportError:  # no IPython: plain exec, magics dropped
        ns = {"__name__": "__main__", "display": lambda *a, **k: None}
        _namespace = lambda: ns
        def run(src):
            code = "\n".join(l for l in src.splitlines() if not l.lstrip().startswith(("%", "!")))
            try:
                exec(compile(code, "<cell>", "exec"), ns)
                return True
            except BaseException as e:
                return f"{type(e).__name__}: {e}"
        return run
    try:  # the class a Jupyter kernel's shell has; its messages to the (absent) front end are dropped
        from ipykernel.zmqshell import ZMQInteractiveShell
        from jupyter_client.session import Session

        class _Quiet(Session):
            def send(self, *a, **k):
                return None

        shell = ZMQInteractiveShell.instance()
        shell.display_pub.session = _Quiet()
        shell.displayhook.session = _Quiet()
    except ImportError:
        shell = InteractiveShell.instance()
        shell.display_pub.publish = lambda *a, **k: None  # display() as IPython's, its output discarded
    _namespace = lambda: shell.user_ns
    def run(src):
        result = shell.run_cell(src, store_history=True, silent=False)
        error = result.error_before_exec or result.error_in_exec
        return True if error is None else f"{type(error).__name__}: {error}"
    return run
'''


#: how many of the generators a :class:`CodeProxy` was passed keep their identity in the child (the most recent)
KEPT_GENERATORS = 256
#: the tag of a generator argument sent to the child (a random string: a student's value cannot guess it)
GEN_MARK = "blowfish-generator-" + os.urandom(8).hex()


class CodeProxy:
    """A callable that runs the function ``name`` of ``answer`` (after ``setup``) in a child interpreter.

    Arguments go to the child pickled (the child trusts the teacher); the reply is JSON read by :func:`decode`
    (the teacher trusts nothing of the child's). A :class:`numpy.random.Generator` argument is advanced as the
    child advanced its copy. A call that raises in the child raises ``RuntimeError`` here.

    The child runs the cells as a Jupyter kernel does, in ipykernel's IPython shell: ``In``, ``Out``,
    ``get_ipython()`` of the kernel's shell class, IPython's own ``display`` (its output discarded), magics,
    ``__name__ == "__main__"`` and a kernel's ``sys.argv``. Differences remain (no front end: ``%matplotlib inline``
    fails; ``sys.stdout``'s type, the parent process, the connection file that does not exist): a function that
    tells the child from the kernel is found by its draws in the kernel (:func:`dump`'s ``sample``, compared by the
    verdict), not by this likeness.

    ``snapshot = (reads, modules, lab, builtins)`` (a noise answer, :func:`blowfish_nb.labs.scan.pure_answer`): the
    set-up cells run in the shell as above, but the answer cell does not; the function is compiled from ``answer``'s
    source in a namespace of its own holding only the handout names ``reads`` with the values the set-up gave them
    (arrays read-only copies, lists tuples, other objects deep copies), the modules ``modules`` (alias -> module),
    the UPPER constants of the lab modules ``lab`` (alias -> module) and the builtins named in ``builtins``. So the
    graded function is the answer's code under the handout's bindings: nothing the notebook's other cells bind can
    reach it, and a write into a handout array raises.
    """

    def __init__(self, setup: list[str], answer: str, name: str, timeout: float = CALL_TIMEOUT,
                 total: float = TOTAL_TIMEOUT, snapshot: tuple | None = None):
        import time

        self.__name__ = name
        self.timeout = timeout
        self._gens: dict[int, tuple[int, np.random.Generator]] = {}  # id -> (number, the generator: keeps the id)
        self._next_token = 0
        self._deadline = time.monotonic() + total
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        # -P: no working folder on sys.path, so no file of the submission or written by a cell is imported (gamer39)
        command = [sys.executable, *SAFE_PATH, "-c", _NO_WORKING_FOLDER + _CHILD_SHELL + _CHILD]
        self._child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, env=env)
        self._send((list(setup), answer, name, _kernel_argv(), bool(KERNEL_SHELL), GEN_MARK, snapshot))
        first = self._receive(CALL_TIMEOUT)  # the set-up: the interpreter starts and runs the lab's cells
        if not first.get("ok"):
            self.close()
            raise RuntimeError(str(first.get("error"))[:300])

    def __call__(self, *args, **kwargs):
        gens = [a for a in list(args) + list(kwargs.values())]
        dropped: list[int] = []
        self._send(([self._generator(a, dropped) for a in args],
                    {k: self._generator(a, dropped) for k, a in kwargs.items()}, dropped))
        got = self._receive()
        if not got.get("ok"):
            raise RuntimeError(f"the answer raised {str(got.get('error'))[:300]}")
        states = got.get("states")
        if not isinstance(states, list) or len(states) != len(gens):
            raise RuntimeError("malformed reply")
        for a, state in zip(gens, states):
            if isinstance(a, np.random.Generator):
                if not (isinstance(state, dict) and state.get("bit_generator") == a.bit_generator.state[
                        "bit_generator"]):
                    raise RuntimeError("malformed generator state")
                a.bit_generator.state = state
        value = decode(got.get("value"))
        if isinstance(value, Refused):
            raise RuntimeError(f"the answer returned {value.why}")
        return value

    def _generator(self, a, dropped: list[int]):
        """``a`` as sent: a generator as (mark, its number, itself the first time, its state after)."""
        if not isinstance(a, np.random.Generator):
            return a
        key = id(a)
        if key in self._gens:
            token, _ = self._gens.pop(key)
            self._gens[key] = (token, a)  # most recent last
            return (GEN_MARK, token, a.bit_generator.state)
        self._next_token += 1
        self._gens[key] = (self._next_token, a)
        while len(self._gens) > KEPT_GENERATORS:
            dropped.append(self._gens.pop(next(iter(self._gens)))[0])
        return (GEN_MARK, self._next_token, a)

    def _send(self, obj) -> None:
        data = pickle.dumps(obj)
        try:
            self._child.stdin.write(struct.pack(">I", len(data)) + data)
            self._child.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise RuntimeError("the answer's interpreter stopped") from e

    def _receive(self, limit: float | None = None) -> dict:
        import select

        import time

        stream = self._child.stdout
        wait = max(0.0, min(self.timeout if limit is None else limit, self._deadline - time.monotonic()))
        head = _read_exactly(stream, 4, wait, select)
        size = struct.unpack(">I", head)[0]
        if size > 512 * 1024 * 1024:
            raise RuntimeError("reply too large")
        got = json.loads(_read_exactly(stream, size, max(wait, 1.0), select))
        if not isinstance(got, dict):
            raise RuntimeError("malformed reply")
        return got

    def close(self) -> None:
        if self._child.poll() is None:
            self._child.kill()
        self._child.wait()
        for stream in (self._child.stdin, self._child.stdout):
            try:
                stream.close()
            except OSError:
                pass


def _kernel_argv() -> list[str]:
    """``sys.argv`` as a Jupyter kernel has it: its launcher and a connection file in the runtime folder."""
    import importlib.util
    import uuid

    spec = importlib.util.find_spec("ipykernel_launcher")
    try:
        from jupyter_core.paths import jupyter_runtime_dir

        runtime = jupyter_runtime_dir()
    except ImportError:
        runtime = os.path.expanduser("~/.local/share/jupyter/runtime")
    return [spec.origin if spec and spec.origin else "-c", "-f", os.path.join(runtime, f"kernel-{uuid.uuid4()}.json")]


def _read_exactly(stream, n: int, timeout: float, select) -> bytes:
    buf = io.BytesIO()
    fd = stream.fileno()
    while buf.tell() < n:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            raise RuntimeError(f"the answer took longer than {timeout:.0f} s")
        chunk = os.read(fd, min(n - buf.tell(), 1 << 20))
        if not chunk:
            raise RuntimeError("the answer's interpreter stopped")
        buf.write(chunk)
    return buf.getvalue()


