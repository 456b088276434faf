"""Run the student's kernel (and a code answer's child) where it cannot reach otter's process: a jail.

The grading plugin (:mod:`blowfish_nb.labs._plugin`) grades outside the student's kernel, but the kernel is an
operating-system process of the same user as otter (root in otter's containers and on Gradescope). gamer36 showed
what that allows with every answer blank: a daemon started by the kernel that outlives it and rewrites
``results.json``/``results.pkl`` and the next gradings' hidden tests; ``gdb -p <otter's pid>`` running Python in
otter's process; a ``.OTTER_LOG`` pickle in the submission that otter loads with dill in its own process.

:func:`install` (called first in the plugin's ``before_grading``, in otter's process, before any student code runs):

* removes ``.OTTER_LOG`` and every other pickle from the submission (:func:`strip_pickles`);
* makes otter's process non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``: a process of the same uid without
  ``CAP_SYS_PTRACE`` can neither ptrace it nor read its ``/proc/<pid>/{mem,fd,cwd,environ}``);
* while otter's runner grades (its ``grade_notebook``), answers every kernel name otter asks for (the notebook's
  own under ``otter run``, ``python3`` on Gradescope:
  ``otter.execute`` runs nbconvert's ``ExecutePreprocessor``, i.e. nbclient, which asks jupyter_client's
  ``KernelSpecManager.get_kernel_spec(name)``) with a kernelspec whose ``argv`` is this module's launcher
  (:func:`launcher_argv`) in front of ``python -m ipykernel_launcher -f {connection_file}``; a code answer's
  child interpreter (:class:`~blowfish_nb.labs._answers.CodeProxy`) is started through the same launcher;
* refuses anything but plain data in the log records otter's logging server unpickles from a TCP port the kernel
  is told about (``otter.execute.logging``: ``pickle.loads`` of what any local process sends).

The launcher (:func:`launch`, run as ``python -I -S -c <this file's source>`` so that no file of the kernel's
reach — a planted ``.pth``, ``sitecustomize`` or package module — runs in it) puts the command in a new PID
namespace with its own ``/proc`` (``unshare --pid --fork --kill-child --mount-proc``): the kernel is PID 1 there,
every process it starts is killed by the operating system when it exits (no daemon outlives it), and otter's
process has no pid in it (no ``kill``, no ``ptrace``, not in ``/proc``). When otter runs as root the command also
drops to uid/gid 65534 (``nobody``) with no supplementary group, no capability (bounding set cleared) and
``no_new_privs`` (``setpriv``): it cannot write the environment, the extracted zip (``mkdtemp``, mode 0700, root),
otter's results pickle (``mkstemp``, 0600) or ``results/``. It runs in a folder of its own
(:func:`prepare`: a copy of the submission folder's files — the lab's data — owned by 65534 under a root-owned
``mkdtemp``); otter's process never reads, imports or unpickles anything from it (the answers cross as the printed
output of the dump cells, through jupyter_client's signed messages). Not root: an unprivileged user namespace
(``unshare --user --map-root-user``) gives the PID namespace but the same uid on files, so the files the snapshot
of :mod:`~blowfish_nb.labs._integrity` watches stay the defence. :func:`decide` probes what the host allows; when
nothing works the grading goes on unisolated and the report says so and why.

Only the standard library is imported here: the launcher runs this file's source with ``-I -S``.
"""

from __future__ import annotations

import os
import sys

__all__ = ["NOBODY", "Plan", "decide", "wrap", "launcher_argv", "launch", "prepare", "strip_pickles",
           "set_dumpable", "install"]

#: the uid and gid the kernel runs as when otter runs as root (``nobody``/``nogroup``)
NOBODY = 65534
#: file names otter or a lab could unpickle (otter's log is ``.OTTER_LOG``, a dill pickle)
PICKLE_SUFFIXES = (".pkl", ".pickle", ".dill", ".pck")
_PR_SET_DUMPABLE = 4


class Plan:
    """How the kernel is jailed: ``mode`` is ``"root"`` (PID namespace + uid 65534), ``"userns"`` (PID namespace in
    an unprivileged user namespace, same uid on files) or ``"none"``; ``why`` says why for the report."""

    def __init__(self, mode: str, why: str, unshare: str = "unshare", setpriv: str = "setpriv", uid: int = NOBODY,
                 expose: dict | None = None):
        if mode not in ("root", "userns", "none"):
            raise ValueError(f"mode must be 'root', 'userns' or 'none', got {mode!r}")
        self.mode, self.why, self.unshare, self.setpriv, self.uid = mode, why, unshare, setpriv, uid
        #: folder the jailed uid cannot traverse -> the entries of it the interpreter needs (``/root`` ->
        #: ``[".pyenv"]``): in the jail's mount namespace the folder becomes an empty tmpfs with only those entries
        #: bound back, read-only (:func:`unreachable`)
        self.expose = dict(expose or {})

    def __repr__(self) -> str:
        return f"Plan({self.mode!r}, {self.why!r})"

    def report(self) -> str:
        """The one line of the grading report that says how the kernel ran."""
        if self.mode == "root":
            return (f"The notebook's kernel ran isolated: its own PID namespace (every process it started died "
                    f"with it; otter's process not visible), as uid {self.uid} without groups or capabilities, "
                    f"in its own folder.")
        if self.mode == "userns":
            return ("The notebook's kernel ran in its own PID namespace (unprivileged user namespace: every process it "
                    "started died with it; otter's process not visible) but as the grading user on files: " + self.why)
        return f"WARNING: the notebook's kernel was NOT isolated ({self.why}); it ran as the grading user."


def wrap(plan: Plan, cmd: list[str]) -> list[str]:
    """The command line that runs ``cmd`` under ``plan`` (pure: decides nothing, runs nothing).

    >>> wrap(Plan("none", "test"), ["python", "-c", "pass"])
    ['python', '-c', 'pass']
    >>> wrap(Plan("userns", "test"), ["true"])[:3]
    ['unshare', '--user', '--map-root-user']
    """
    cmd = list(cmd)
    pidns = ["--pid", "--fork", "--kill-child", "--mount-proc"]
    if plan.mode == "root":
        stage = []
        if plan.expose:  # as root in the new mount namespace, before dropping to the uid: bind what it needs
            stage = [sys.executable, "-I", "-S", "-c", _code(), "--expose", _spec(plan.expose), "--"]
        return [plan.unshare, *pidns, *stage, plan.setpriv, f"--reuid={plan.uid}", f"--regid={plan.uid}",
                "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--", *cmd]
    if plan.mode == "userns":
        return [plan.unshare, "--user", "--map-root-user", *pidns, "--", *cmd]
    return cmd


def decide(euid: int | None = None, *, which=None, probe=None) -> Plan:
    """The strongest jail this host allows: ``root`` when running as root and ``unshare``/``setpriv`` work (a probe
    runs the interpreter jailed and finds ``ipykernel`` and ``blowfish_nb``), else ``userns``, else ``none``.

    ``which`` (``shutil.which``) and ``probe`` (``cmd -> str | None``: ``None`` when ``cmd`` ran and exited 0, else
    why not) are injectable for tests.
    """
    import shutil

    euid = os.geteuid() if euid is None else euid
    which = which or shutil.which
    probe = probe or _probe
    unshare, setpriv = which("unshare"), which("setpriv")
    if unshare is None:
        return Plan("none", "no `unshare` command on this host")
    check = [sys.executable, "-I", "-c", _PROBE_CODE, os.path.realpath(os.__file__), *_search_path()]
    why_root = "not running as root"
    if euid == 0:
        if setpriv is None:
            why_root = "no `setpriv` command on this host"
        else:
            plan = Plan("root", "", unshare, setpriv, expose=unreachable(_needed_paths()))
            failed = probe(wrap(plan, check))
            if failed is None:
                return plan
            why_root = f"a PID namespace as uid {NOBODY} did not work: {failed}"
    plan = Plan("userns", why_root, unshare, setpriv or "setpriv")
    failed = probe(wrap(plan, check))
    if failed is None:
        return plan
    return Plan("none", f"{why_root}; an unprivileged user namespace did not work either: {failed}")


def launcher_argv(plan: Plan, work: str, cmd: list[str], connection: str | None = None) -> list[str]:
    """The command that starts ``cmd`` through :func:`launch`: this file's source run by ``python -I -S`` (no
    ``PYTHONPATH``, no site hook, nothing of the kernel's reach), which then execs :func:`wrap` of ``cmd``."""
    args = ["--mode", plan.mode, "--uid", str(plan.uid), "--unshare", plan.unshare, "--setpriv", plan.setpriv,
            "--work", str(work)]
    if plan.expose:
        args += ["--plan-expose", _spec(plan.expose)]
    if connection is not None:
        args += ["--connection", connection]
    return [sys.executable, "-I", "-S", "-c", _code(), *args, "--", *cmd]


def launch(argv: list[str], *, execute=None) -> list[str]:
    """The launcher: prepare the connection file, the folder and the environment, then exec the jailed command.

    ``argv`` is what :func:`launcher_argv` put after the code. Returns the command it would exec when ``execute``
    is given (tests); otherwise replaces this process by it.
    """
    i = argv.index("--")
    opts, cmd = argv[:i], argv[i + 1:]
    o = dict(zip(opts[::2], opts[1::2]))
    if "--expose" in o:  # second stage: root, PID 1 of the new namespaces, before setpriv
        _expose(o["--expose"])
        if execute is not None:
            return cmd
        os.execvp(cmd[0], cmd)
    plan = Plan(o["--mode"], "launcher", o.get("--unshare", "unshare"), o.get("--setpriv", "setpriv"),
                int(o.get("--uid", NOBODY)), _parse(o.get("--plan-expose", "")))
    work = o["--work"]
    home, run = os.path.join(work, "home"), os.path.join(work, "run")
    uid = plan.uid if plan.mode == "root" else None
    connection = o.get("--connection")
    if connection:  # the kernel's copy of the connection file (jupyter_client writes it 0600 for the grader)
        private = os.path.join(home, "connection-" + os.path.basename(connection))
        with open(connection, "rb") as f:
            data = f.read()
        fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if uid is not None:
            os.chown(private, uid, uid)
        cmd = [private if a == connection else a for a in cmd]
    env = dict(os.environ)
    for key, sub in (("HOME", ""), ("IPYTHONDIR", ".ipython"), ("MPLCONFIGDIR", ".matplotlib"), ("TMPDIR", "tmp"),
                     ("XDG_CACHE_HOME", ".cache"), ("JUPYTER_RUNTIME_DIR", "runtime")):
        env[key] = os.path.join(home, sub) if sub else home
    full = wrap(plan, cmd)
    if execute is not None:
        return full
    os.chdir(run)
    os.execvpe(full[0], full, env)
    return full  # pragma: no cover - execvpe does not return


def prepare(root: str, submission: str | None = None, uid: int | None = NOBODY) -> str:
    """A jail folder under ``root`` (a fresh ``mkdtemp``, made traversable): ``run/`` holds a copy of the files of
    ``submission`` (the lab's data; no pickle, ``tests/`` empty) and ``home/`` the kernel's home; both owned by
    ``uid`` (not changed when ``uid`` is None). Returns the folder."""
    import shutil
    import tempfile

    work = tempfile.mkdtemp(prefix="blowfish-jail-", dir=root)
    os.chmod(work, 0o711)
    run, home = os.path.join(work, "run"), os.path.join(work, "home")
    if submission is not None:
        top = os.path.abspath(submission)
        shutil.copytree(submission, run, symlinks=False,
                        ignore=lambda d, names: [n for n in names if n == "__pycache__"
                                                 or (n == "tests" and os.path.abspath(d) == top)])
    else:
        os.mkdir(run)
    strip_pickles(run)
    os.makedirs(os.path.join(run, "tests"), exist_ok=True)
    for sub in ("", "tmp", ".ipython", ".matplotlib", ".cache", "runtime"):
        os.makedirs(os.path.join(home, sub), exist_ok=True)
    for folder in (run, home):
        os.chmod(folder, 0o700)
        if uid is not None:
            for base, dirs, files in os.walk(folder):
                for name in (base, *[os.path.join(base, n) for n in dirs + files]):
                    os.lchown(name, uid, uid)
    return work


def strip_pickles(folder: str, keep: frozenset | set = frozenset()) -> list[str]:
    """Remove ``.OTTER_LOG`` and every pickle (by suffix, or a file that starts as one) under ``folder``, except
    the top-level names in ``keep`` (the autograder's own files). Returns the removed paths, relative."""
    removed = []
    for base, dirs, files in os.walk(folder):
        for name in files:
            path = os.path.join(base, name)
            rel = os.path.relpath(path, folder)
            if rel in keep or os.path.islink(path):
                continue
            if name == ".OTTER_LOG" or name.lower().endswith(PICKLE_SUFFIXES) or _starts_as_pickle(path):
                os.remove(path)
                removed.append(rel)
    return sorted(removed)


def set_dumpable(on: bool = False) -> bool:
    """``prctl(PR_SET_DUMPABLE, on)`` on this process; False when the call is not available (not Linux)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_DUMPABLE, int(on), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def install(here: str, autograder_dir: str | None = None, *, plan: Plan | None = None) -> list[str]:
    """Everything of the jail that happens in otter's process before the kernel starts (see the module's
    docstring); ``here`` is the submission folder (otter's working folder). Returns the report lines."""
    import atexit
    import shutil
    import tempfile

    lines = []
    keep = set()
    if autograder_dir and os.path.isdir(os.path.join(autograder_dir, "source", "files")):
        keep = set(os.listdir(os.path.join(autograder_dir, "source", "files")))
    removed = strip_pickles(here, keep)
    if removed:
        lines.append(f"Removed from the submission before grading (otter would unpickle them in its own process): "
                     f"{', '.join(removed)}")
    if not set_dumpable(False):
        lines.append("WARNING: could not make otter's process non-dumpable (prctl unavailable)")
    _guard_log_server()
    plan = plan or _decided()
    uid = plan.uid if plan.mode == "root" else None
    root = tempfile.mkdtemp(prefix="blowfish-grading-")
    os.chmod(root, 0o711)
    atexit.register(shutil.rmtree, root, True)
    kernel_work = prepare(root, here, uid)
    child_work = prepare(root, here, uid)
    _during_grading(plan, kernel_work, child_work)
    lines.append(plan.report())
    return lines


# --- helpers ----------------------------------------------------------------------------------------------------

_PROBE_CODE = ("import os, sys, importlib.util as u; sys.path[:0] = sys.argv[2:]; "
               "sys.exit('the jailed interpreter found another standard library: ' + os.__file__ "
               "if os.path.realpath(os.__file__) != sys.argv[1] else "
               "0 if u.find_spec('ipykernel') and u.find_spec('blowfish_nb') else "
               "'ipykernel or blowfish_nb not found')")


def _search_path() -> list[str]:
    """Where the probe looks for ``ipykernel`` and ``blowfish_nb``: this interpreter's path (the kernel's too)."""
    return [p for p in sys.path if p and os.path.isdir(p)]


_DECIDED: list = []


def _decided() -> Plan:
    """:func:`decide` once per process (the host does not change between two gradings of one process)."""
    if not _DECIDED:
        _DECIDED.append(decide())
    return _DECIDED[0]


def _probe(cmd: list[str]) -> str | None:
    import subprocess

    try:
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=60, cwd="/")
    except (OSError, subprocess.SubprocessError) as e:
        return str(e)
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip().splitlines()
        return (err[-1] if err else f"exit status {done.returncode}")[:200]
    return None


def unreachable(paths) -> dict:
    """folder -> sorted entry names: each folder on the way to one of ``paths`` that others cannot traverse (no
    ``o+x``), with the entry of it that leads there (``/root`` -> ``[".pyenv"]`` for an interpreter under
    ``/root/.pyenv``, ``/root`` being mode 0700)."""
    out: dict = {}
    for path in paths:
        parts = os.path.realpath(path).split(os.sep)[1:]
        for k in range(len(parts) - 1):
            folder = os.sep + os.path.join(*parts[:k]) if k else os.sep
            try:
                mode = os.stat(folder).st_mode
            except OSError:
                break
            if not mode & 0o001:
                out.setdefault(folder, set()).add(parts[k])
    return {d: sorted(n) for d, n in out.items()}


def _needed_paths() -> list[str]:
    """What the jailed interpreter must reach: the interpreter, its prefixes, this process's import path."""
    found = [os.path.realpath(sys.executable), sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    return found + _search_path()


def _expose(spec: str) -> None:
    """In the jail's own mount namespace (as root): each folder of ``spec`` (``dir:name,name;…``) is replaced by an
    empty tmpfs in which only the named entries are bound back, read-only. The rest of the folder stays hidden."""
    import subprocess
    import tempfile

    for folder, names in sorted(_parse(spec).items(), key=lambda t: t[0].count(os.sep)):
        # root 0700 in the jail's own (root-owned) folder: the original folder, out of the jail's reach
        held = tempfile.mkdtemp(prefix="held-", dir=os.path.dirname(os.getcwd()))
        subprocess.run(["mount", "--bind", folder, held], check=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=1m", "tmpfs", folder], check=True)
        for name in names:
            src, dst = os.path.join(held, name), os.path.join(folder, name)
            if os.path.isdir(src):
                os.mkdir(dst)
            else:
                open(dst, "w").close()
            subprocess.run(["mount", "--bind", src, dst], check=True)
            subprocess.run(["mount", "-o", "remount,bind,ro", dst], check=True)


def _spec(expose: dict) -> str:
    return ";".join(f"{d}:{','.join(names)}" for d, names in sorted(expose.items()))


def _parse(spec: str) -> dict:
    return {d: n.split(",") for d, n in (item.rsplit(":", 1) for item in spec.split(";") if item)}


def _code() -> str:
    # hex: jupyter_client formats ``{name}`` fields in a kernelspec's argv, the source must hold none
    return f"_JAIL_SOURCE = bytes.fromhex({_source().encode().hex()!r}).decode(); exec(_JAIL_SOURCE)"


def _source() -> str:
    if "_JAIL_SOURCE" in globals():  # the launcher (``-c``): no file
        return globals()["_JAIL_SOURCE"]
    with open(__file__, encoding="utf-8") as f:
        return f.read()


def _starts_as_pickle(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(2)
    except OSError:
        return False
    return len(head) == 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def _during_grading(plan: Plan, kernel_work: str, child_work: str) -> None:
    """While otter's runner grades the notebook (``grade_notebook``: the kernel, then the plugin's
    ``after_grading`` with the code answers' children), every kernel is the jailed one and every code answer's
    child starts through the launcher; before and after it, nothing in this process is changed (a test that
    calls ``before_grading`` leaves no kernelspec patched behind). Without otter's runner, for good."""
    try:
        from otter.run.run_autograder.runners import python_runner
    except ImportError:  # pragma: no cover - otter is the labs extra
        python_runner = None
    original = getattr(python_runner, "grade_notebook", None)
    original = getattr(original, "_jail_original", original)
    if original is None:  # pragma: no cover - an otter without the runner's name
        _activate(plan, kernel_work, child_work)
        return

    def grade_notebook(*args, **kwargs):
        undo = _activate(plan, kernel_work, child_work)
        try:
            return original(*args, **kwargs)
        finally:
            undo()

    grade_notebook._jail_original = original
    python_runner.grade_notebook = grade_notebook


def _activate(plan: Plan, kernel_work: str, child_work: str):
    """Jail every kernel name and every code answer's child; returns the function that undoes it."""
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager

    from . import _answers

    kernel = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    argv = launcher_argv(plan, kernel_work, kernel, connection="{connection_file}")

    def get_kernel_spec(self, kernel_name, *args, **kwargs):
        # every name: otter asks for the notebook's own name under ``otter run``, ``python3`` on Gradescope; a
        # name the student chose must not pick an unjailed kernel
        return KernelSpec(argv=list(argv), display_name="Python 3 (graded, jailed)", language="python",
                          resource_dir=kernel_work, env={}, metadata={}, interrupt_mode="signal")

    saved = KernelSpecManager.__dict__["get_kernel_spec"], _answers.subprocess
    KernelSpecManager.get_kernel_spec = get_kernel_spec
    _answers.subprocess = _JailedSubprocess(plan, child_work)

    def undo():
        KernelSpecManager.get_kernel_spec, _answers.subprocess = saved

    return undo


class _JailedSubprocess:
    """``subprocess`` for :mod:`~blowfish_nb.labs._answers`: ``Popen`` starts the command through the launcher."""

    def __init__(self, plan: Plan, work: str):
        self._plan, self._work = plan, work

    def Popen(self, cmd, *args, **kwargs):  # noqa: N802 - subprocess's name
        import subprocess

        return subprocess.Popen(launcher_argv(self._plan, self._work, list(cmd)), *args, **kwargs)

    def __getattr__(self, name):
        import subprocess

        return getattr(subprocess, name)


def _guard_log_server() -> None:
    """otter's logging server ``pickle.loads`` whatever a local process sends to its port (the kernel is told the
    port): only plain data (no class, no function) is unpickled here."""
    try:
        import io
        import pickle

        import otter.execute.logging as otter_logging
    except ImportError:  # pragma: no cover - otter is the labs extra
        return

    class Plain(pickle.Unpickler):
        def find_class(self, module, name):
            raise pickle.UnpicklingError(f"refused {module}.{name}")

    def unpickle(self, data):
        try:
            obj = Plain(io.BytesIO(data)).load()
        except Exception:  # noqa: BLE001 - anything a sender made up
            return {"msg": "a log record that was not plain data was refused", "levelno": 0}
        return obj if isinstance(obj, dict) else {"msg": "refused", "levelno": 0}

    otter_logging.LogRecordStreamHandler.unpickle = unpickle


if __name__ == "__main__":
    launch(sys.argv[1:])
