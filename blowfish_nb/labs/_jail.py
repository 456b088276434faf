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
* replaces the handler of otter's logging server (``otter.execute.logging``: ``pickle.loads`` of what any local
  process sends to a TCP port the kernel is told about): every record is read (length capped) and dropped, on
  daemon threads (gamer36b: a forged plain-dict record printed "Total Score: 7.000 / 7.000" in otter's output, a
  2**30 length prefix kept a non-daemon thread spinning and ``otter run`` never exited; :func:`_guard_log_server`).

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
output of the dump cells, through jupyter_client's signed messages).

uid 65534 still reads whatever is world-readable (gamer36b: the autograder zip and the solution notebooks of
``build/labs``, found through ``PWD``/``PYTHONPATH`` of otter's environment). So, as root in the jail's own mount
namespace before ``setpriv`` (:func:`isolate_fs`), the file system is an allow-list (:func:`allowed_fs`): the places
a teacher's files can be (:func:`hidden_roots`: every top-level folder but the system's, ``/home``, ``/work``,
``/root``, ``/opt``, ``/tmp`` … and :data:`HIDDEN`: ``/var/tmp``, ``/dev/shm``, ``/run/lock``) and this grading's
folders outside them
(:func:`teacher_folders`) become empty tmpfs, and only what the kernel reads is bound back read-only
(:func:`needed_paths`: ``sys.prefix``, ``sys.base_prefix``, the site-packages folders and the package folders of
:data:`KERNEL_PACKAGES`, so a source tree on ``PYTHONPATH`` shows its ``blowfish_nb/`` and nothing else), plus the
kernel's folder read-write. ``/usr``, ``/etc``, ``/var`` stay as they are (read-only to 65534). The environment is an
allow-list too (:func:`kernel_env`). The jail has its own IPC namespace (``--ipc``: no SysV shared memory or
semaphore of the host) and its own network namespace (``--net``: only ``lo``, down). gamer36c graded two notebooks
at once: one kernel found the other's ports in the host's ``/proc/net/tcp``, subscribed to its iopub ``PUB`` socket
(no key needed to listen) and copied the answers its dump cells printed. Now no TCP crosses the jail: while otter
grades, jupyter_client's ``KernelManager`` is told to use Jupyter's IPC transport (``transport: "ipc"``, ``ip`` = a
path prefix in the connection file), the Unix sockets in ``sock/`` of the jail's folder (:func:`prepare`: 0700,
owned by 65534, under a root-owned ``mkdtemp``), which the jail's mount namespace has at the same path; another
grading's jail has its own empty ``/tmp``. otter's log server is out of the kernel's reach too. The kernel's
``run/`` and ``home/`` are copied into a tmpfs of :data:`WORK_TMPFS_SIZE` in the jail (:func:`_onto_tmpfs`): it
cannot fill the host's disk. The launcher sets ``PR_SET_PDEATHSIG`` (SIGKILL) before exec'ing ``unshare`` and the
jail's PID 1 sets it again as the uid (``setpriv``'s change of uid clears the one ``--kill-child`` set): killing
otter kills ``unshare``, hence every process of the jail. ``unshare``/``setpriv`` come from :data:`TOOL_DIRS` only and the mounts are ``mount(2)``
calls, so nothing of ``PATH`` runs as root.

Not root: an unprivileged user namespace
(``unshare --user --map-root-user``) gives the PID namespace but the same uid on files, so the files the snapshot
of :mod:`~blowfish_nb.labs._integrity` watches stay the defence. :func:`decide` probes what the host allows; when
nothing works the grading goes on unisolated and the report says so and why.

Only the standard library is imported here: the launcher runs this file's source with ``-I -S``.
"""

from __future__ import annotations

import os
import sys

__all__ = ["NOBODY", "Plan", "decide", "wrap", "launcher_argv", "launch", "prepare", "strip_pickles", "strip_code",
           "set_dumpable", "install", "allowed_fs", "hidden_roots", "needed_paths", "kernel_env", "kernel_pythonpath",
           "isolate_fs", "teacher_folders"]

#: the uid and gid the kernel runs as when otter runs as root (``nobody``/``nogroup``)
NOBODY = 65534
#: file names otter or a lab could unpickle (otter's log is ``.OTTER_LOG``, a dill pickle)
PICKLE_SUFFIXES = (".pkl", ".pickle", ".dill", ".pck")
#: file names Python imports or runs from a folder on ``sys.path`` (modules, bytecode, extensions, ``.pth``)
CODE_SUFFIXES = (".py", ".pyw", ".pyc", ".pyo", ".so", ".pyd", ".pth")
_PR_SET_DUMPABLE = 4
_PR_SET_PDEATHSIG = 1
#: the size of the tmpfs that holds the kernel's ``run/`` and ``home/`` in the jail (root mode): a cell that writes
#: until the disk is full fills this, not the grading host's disk
WORK_TMPFS_SIZE = "256m"


class Plan:
    """How the kernel is jailed: ``mode`` is ``"root"`` (PID namespace + uid 65534), ``"userns"`` (PID namespace in
    an unprivileged user namespace, same uid on files) or ``"none"``; ``why`` says why for the report."""

    def __init__(self, mode: str, why: str, unshare: str = "unshare", setpriv: str = "setpriv", uid: int = NOBODY,
                 fs: dict | None = None):
        if mode not in ("root", "userns", "none"):
            raise ValueError(f"mode must be 'root', 'userns' or 'none', got {mode!r}")
        self.mode, self.why, self.unshare, self.setpriv, self.uid = mode, why, unshare, setpriv, uid
        #: the jail's file system (:func:`allowed_fs`): ``{"hide": [folders], "keep": [paths]}``: in the jail's mount
        #: namespace every folder of ``hide`` is an empty tmpfs with only the paths of ``keep`` under it bound back,
        #: read-only (plus the kernel's own work folder, read-write)
        self.fs = {"hide": list((fs or {}).get("hide", ())), "keep": list((fs or {}).get("keep", ()))}

    def __repr__(self) -> str:
        return f"Plan({self.mode!r}, {self.why!r})"

    def report(self) -> str:
        """The one line of the grading report that says how the kernel ran."""
        if self.mode == "root":
            return (f"The notebook's kernel ran isolated: its own PID namespace (every process it started died "
                    f"with it; otter's process not visible) and network namespace (no network; Unix sockets to "
                    f"otter), as uid {self.uid} without groups or capabilities, in its own folder (256 MB tmpfs).")
        if self.mode == "userns":
            return ("The notebook's kernel ran in its own PID namespace (unprivileged user namespace: every process it "
                    "started died with it; otter's process not visible) but as the grading user on files: " + self.why)
        return f"WARNING: the notebook's kernel was NOT isolated ({self.why}); it ran as the grading user."


def wrap(plan: Plan, cmd: list[str], work: str | None = None) -> list[str]:
    """The command line that runs ``cmd`` under ``plan`` (pure: decides nothing, runs nothing).

    >>> wrap(Plan("none", "test"), ["python", "-c", "pass"])
    ['python', '-c', 'pass']
    >>> wrap(Plan("userns", "test"), ["true"])[:3]
    ['unshare', '--user', '--map-root-user']

    ``work`` is the kernel's own folder, bound back read-write in the allow-listed file system (``plan.fs``).
    """
    cmd = list(cmd)
    pidns = ["--pid", "--fork", "--kill-child", "--mount-proc"]
    if plan.mode == "root":
        # as root in the new namespaces, before dropping to the uid: the loopback up (lab 9's service talks to
        # itself over 127.0.0.1) and the allow-listed fs
        stage = [sys.executable, "-I", "-S", "-c", _code(), "--lo", "up"]
        if plan.fs["hide"]:
            stage += ["--fs", _spec(plan.fs, work)]
        stage += ["--"]
        # setpriv's change of uid clears the parent-death signal unshare's --kill-child set: a last stage (as the
        # uid) sets it again, so that the namespace's PID 1 dies with unshare
        death = [sys.executable, "-I", "-S", "-c", _code(), "--pdeathsig", "9", "--"]
        return [plan.unshare, *pidns, "--ipc", "--net", *stage, plan.setpriv, f"--reuid={plan.uid}",
                f"--regid={plan.uid}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs",
                "--", *death, *cmd]
    if plan.mode == "userns":
        return [plan.unshare, "--user", "--map-root-user", *pidns, "--ipc", "--net", "--",
                sys.executable, "-I", "-S", "-c", _code(), "--lo", "up", "--", *cmd]
    return cmd


def decide(euid: int | None = None, *, which=None, probe=None) -> Plan:
    """The strongest jail this host allows: ``root`` when running as root and ``unshare``/``setpriv`` work (a probe
    runs the interpreter jailed and finds ``ipykernel`` and ``blowfish_nb``), else ``userns``, else ``none``.

    ``none`` also when the teacher sets :data:`SWITCH` to ``off`` in otter's environment (to debug a grading, or to
    grade with a site-packages the jail cannot see): the report then says the kernel was not isolated. The student's
    kernel starts after this decision and cannot reach otter's environment.

    ``which`` (name -> absolute path or None; by default only the fixed folders of :data:`TOOL_DIRS`, never
    ``PATH``) and ``probe`` (``cmd -> str | None``: ``None`` when ``cmd`` ran and exited 0, else
    why not) are injectable for tests.
    """
    if switched_off():
        return Plan("none", f"switched off by {SWITCH}={os.environ[SWITCH]!r} in the grading's environment")
    euid = os.geteuid() if euid is None else euid
    which = which or _which
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
            plan = Plan("root", "", unshare, setpriv, fs=allowed_fs())
            failed = probe(wrap(plan, check))
            if failed is None:
                return plan
            why_root = f"a PID namespace as uid {NOBODY} did not work: {failed}"
    plan = Plan("userns", why_root, unshare, setpriv or "setpriv")
    failed = probe(wrap(plan, check))
    if failed is None:
        return plan
    return Plan("none", f"{why_root}; an unprivileged user namespace did not work either: {failed}")


def switched_off() -> bool:
    """Whether the teacher set :data:`SWITCH` to ``off`` (``0``, ``no``, ``false``) in otter's environment: the kernel
    is then started by otter as without this module (its environment and folder untouched, not isolated)."""
    return os.environ.get(SWITCH, "").strip().lower() in ("0", "off", "no", "false")


def launcher_argv(plan: Plan, work: str, cmd: list[str], connection: str | None = None) -> list[str]:
    """The command that starts ``cmd`` through :func:`launch`: this file's source run by ``python -I -S`` (no
    ``PYTHONPATH``, no site hook, nothing of the kernel's reach), which then execs :func:`wrap` of ``cmd``."""
    args = ["--mode", plan.mode, "--uid", str(plan.uid), "--unshare", plan.unshare, "--setpriv", plan.setpriv,
            "--work", str(work), "--pythonpath", _hex(os.pathsep.join(kernel_pythonpath()))]
    if plan.fs["hide"]:
        args += ["--plan-fs", _hex(_json(plan.fs))]
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
    if "--pdeathsig" in o:  # last stage, as the kernel's uid: die with unshare
        set_parent_death_signal(int(o["--pdeathsig"]))
        if execute is not None:
            return cmd
        os.execv(cmd[0], cmd)
    if "--fs" in o or "--lo" in o:  # second stage: root, PID 1 of the new namespaces, before setpriv
        if "--lo" in o:
            loopback_up()
        if "--fs" in o:
            isolate_fs(o["--fs"])
        if execute is not None:
            return cmd
        os.execv(cmd[0], cmd)
    import json

    fs = json.loads(_unhex(o["--plan-fs"])) if "--plan-fs" in o else None
    plan = Plan(o["--mode"], "launcher", o.get("--unshare", "unshare"), o.get("--setpriv", "setpriv"),
                int(o.get("--uid", NOBODY)), fs)
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
    env = kernel_env(os.environ, _unhex(o.get("--pythonpath", "")))
    for key, sub in (("HOME", ""), ("IPYTHONDIR", ".ipython"), ("MPLCONFIGDIR", ".matplotlib"), ("TMPDIR", "tmp"),
                     ("XDG_CACHE_HOME", ".cache"), ("JUPYTER_RUNTIME_DIR", "runtime")):
        env[key] = os.path.join(home, sub) if sub else home
    full = wrap(plan, cmd, work)
    if execute is not None:
        return full
    os.chdir(run)
    set_parent_death_signal()  # otter dies -> unshare gets SIGKILL -> --kill-child kills the namespace
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
    os.mkdir(os.path.join(work, "sock"))  # the kernel's Unix sockets (IPC transport), shared with otter's process
    for folder in (run, home, os.path.join(work, "sock")):
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


def strip_code(folder: str, keep: frozenset | set = frozenset(), source: str | None = None) -> list[str]:
    """Remove every file Python could import or run (:data:`CODE_SUFFIXES`) under ``folder``, except the
    autograder's own files (under the top-level names in ``keep``: when ``source``, the autograder's
    ``source/files``, is given, only a file equal byte for byte to its namesake there — otter copies a folder of
    its own only where the submission has none), ``tests/`` (otter's hidden tests, which the plugin reads and
    removes) and an empty top-level ``__init__.py`` (otter's own, it runs nothing). Returns the removed paths,
    relative.

    gamer39 submitted the blank lab 5 handout as a zip with a ``pandas.py``: otter unpacks a zip into the grading
    folder, the handout's own ``import pandas as pd`` ran it in the kernel and in a code answer's child (both start
    in a copy of that folder), and it wrapped the dump and the affine check: 7/7. Only the notebook and its data are
    graded, so nothing of a submission is imported; the kernel and the child also start with ``python -P`` (no
    working folder on ``sys.path``) against a file a cell writes while the notebook runs.

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> for name in ("lab05.ipynb", "pandas.py", "counts.csv"):
    ...     open(os.path.join(d, name), "w").close()
    >>> strip_code(d), sorted(os.listdir(d))
    (['pandas.py'], ['counts.csv', 'lab05.ipynb'])
    """
    import filecmp

    removed = []
    for base, dirs, files in os.walk(folder):
        rel_base = os.path.relpath(base, folder)
        if rel_base == os.curdir:
            dirs[:] = [d for d in dirs if d != "tests"]
        for name in files:
            path = os.path.join(base, name)
            rel = os.path.relpath(path, folder)
            if not (name.lower().endswith(CODE_SUFFIXES) or ".so." in name.lower()):
                continue
            if rel == "__init__.py" and os.path.getsize(path) == 0 and not os.path.islink(path):
                continue
            if rel.split(os.sep)[0] in keep:
                theirs = None if source is None else os.path.join(source, rel)
                if theirs is None or (os.path.isfile(theirs) and not os.path.islink(path)
                                      and filecmp.cmp(path, theirs, shallow=False)):
                    continue
            os.remove(path)
            removed.append(rel)
    return sorted(removed)


def set_parent_death_signal(sig: int = 9) -> bool:
    """``prctl(PR_SET_PDEATHSIG, sig)`` on this process (kept across ``exec`` of ``unshare``): when the process that
    started it (otter) dies, it gets ``sig`` (SIGKILL) and ``unshare --kill-child`` takes the jail with it. False when
    the call is not available."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


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
    code = strip_code(here, keep, os.path.join(autograder_dir, "source", "files") if keep else None)
    if code:
        lines.append(f"Removed from the submission before grading (Python could import them in the kernel; only the "
                     f"notebook and its data are graded): {', '.join(code)}")
    if not set_dumpable(False):
        lines.append("WARNING: could not make otter's process non-dumpable (prctl unavailable)")
    _guard_log_server()
    plan = plan or _decided()
    if plan.mode == "none" and switched_off():  # the teacher's choice: otter starts the kernel as it would
        lines.append(plan.report())
        return lines
    if plan.mode == "root" and plan.fs["hide"]:  # hide where this grading's teacher files are, too
        plan = Plan(plan.mode, plan.why, plan.unshare, plan.setpriv, plan.uid,
                    allowed_fs(teacher_folders(here, autograder_dir)))
    uid = plan.uid if plan.mode == "root" else None
    root = tempfile.mkdtemp(prefix="blowfish-grading-")
    os.chmod(root, 0o711)
    atexit.register(shutil.rmtree, root, True)
    kernel_work = prepare(root, here, uid)
    child_work = prepare(root, here, uid)
    _during_grading(plan, kernel_work, child_work)
    lines.append(plan.report())
    return lines


def teacher_folders(here: str, autograder_dir: str | None = None) -> list[str]:
    """Folders of this grading that may hold a teacher's files, to hide from the kernel when outside
    :data:`HIDDEN`: otter's working folder and ``here``, the autograder folder, the folder of each ``.zip`` on
    otter's command line, ``PWD``/``OLDPWD``/``HOME`` of its environment."""
    found = [os.getcwd(), here, autograder_dir or ""]
    found += [os.path.dirname(os.path.abspath(a)) for a in sys.argv[1:] if a.endswith(".zip")]
    found += [os.environ.get(k, "") for k in ("PWD", "OLDPWD", "HOME")]
    return [os.path.abspath(f) for f in found if f]


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


def _which(name: str) -> str | None:
    """``name`` in the fixed folders of :data:`TOOL_DIRS` (not through ``PATH``: a folder of ``PATH`` may be one a
    user can write)."""
    for folder in TOOL_DIRS:
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def allowed_fs(extra=()) -> dict:
    """The jail's allow-listed file system: ``{"hide": folders, "keep": paths}``.

    ``hide``: the top-level folders of :func:`hidden_roots`, those of :data:`HIDDEN` that exist, and each folder of
    ``extra`` (otter's working folder, the zip's folder, ``PWD``/``OLDPWD``/``HOME`` of otter's environment) that is
    not ``/`` nor holds a system folder of :data:`SYSTEM`; none under another. ``keep``: what the kernel must read (:func:`needed_paths`), none under
    another. Real paths throughout (a symbolic link cannot lead around the rule).
    """
    hide = []
    for folder in (*hidden_roots(), *HIDDEN, *extra):
        real = os.path.realpath(folder)
        if not os.path.isdir(real) or real == os.sep:
            continue
        if folder in extra and any(_under(system, real) for system in SYSTEM):
            continue  # ``/``-like: hiding it would hide the system
        hide.append(real)
    return {"hide": sorted(_outermost(hide), key=lambda f: f.count(os.sep)), "keep": _outermost(needed_paths())}


def hidden_roots(root: str = os.sep) -> list[str]:
    """Every folder at the top of ``root`` (``/``) but the system's (:data:`SYSTEM`), by its real path: ``/home``,
    ``/work``, ``/tmp``, ``/opt`` … and whatever a host adds (CI checks the project out under ``/check``: a fixed
    list of the usual places missed it and the jailed kernel read a course folder there). Symbolic links at the top
    (``/bin`` → ``usr/bin``) are not folders of their own; files at the top stay (none belongs to a course)."""
    out = []
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if os.path.islink(path) or not os.path.isdir(path) or os.sep + name in SYSTEM:
            continue
        out.append(path)
    return out


def needed_paths() -> list[str]:
    """What the jailed kernel reads, by one rule wherever the venv lives: ``sys.prefix``, ``sys.base_prefix`` (and
    the exec prefixes), the interpreter, the site-packages folders, and the package folder of each module the grading
    imports in the kernel (:data:`KERNEL_PACKAGES`, found where this process imports it: for a source tree on
    ``PYTHONPATH`` or an editable install, its package folder ``…/blowfish_nb``, never the tree that holds it)."""
    import importlib.util
    import site

    found = [sys.executable, os.path.realpath(sys.executable), sys.prefix, sys.base_prefix, sys.exec_prefix,
             sys.base_exec_prefix, *site.getsitepackages()]
    for name in KERNEL_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.origin or spec.origin in ("built-in", "frozen"):
            continue
        found.append(os.path.dirname(spec.origin) if spec.submodule_search_locations else spec.origin)
    return sorted({os.path.realpath(p) for p in found if p and os.path.exists(p)})


def kernel_pythonpath() -> list[str]:
    """The entries of ``PYTHONPATH`` the kernel keeps: those that hold a package of :data:`KERNEL_PACKAGES` as this
    process imports it (a course folder on ``PYTHONPATH`` for nothing else is dropped)."""
    needed = set(needed_paths())
    return [e for e in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if e and any(os.path.dirname(p) == os.path.realpath(e) for p in needed)]


def kernel_env(environ, pythonpath: str = "") -> dict:
    """The kernel's environment: an allow-list of otter's (:data:`ENV_KEEP`, :data:`ENV_PREFIXES`), ``PATH`` of the
    interpreter's folder and the system's, and ``pythonpath`` (:func:`kernel_pythonpath`). ``PWD``, ``OLDPWD``,
    ``HOME``, ``VIRTUAL_ENV``, the rest of ``PYTHONPATH``… do not cross (the launcher sets ``HOME`` and the other
    per-user folders to the jail's)."""
    env = {k: v for k, v in environ.items() if k in ENV_KEEP or k.startswith(ENV_PREFIXES)}
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"])
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return env


#: the variable of otter's environment that switches the jail off (``off``, ``0``, ``no``, ``false``)
SWITCH = "BLOWFISH_NB_JAIL"
#: where a teacher's files can be below a system folder: an empty tmpfs in the jail (the world-writable ones a fresh
#: one, mode 1777); every top-level folder of ``/`` that is not in :data:`SYSTEM` is hidden too (:func:`hidden_roots`)
HIDDEN = ("/var/tmp", "/dev/shm", "/run/lock")
#: folders a hidden ``extra`` folder may not hold (the kernel needs them; nothing of a course is there by default)
SYSTEM = ("/usr", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/proc", "/sys", "/dev", "/boot",
          "/run", "/var")
#: the only folders ``unshare``/``setpriv`` are taken from
TOOL_DIRS = ("/usr/bin", "/bin", "/usr/sbin", "/sbin")
#: what the grading imports in the kernel (and the code answer's child)
KERNEL_PACKAGES = ("blowfish_nb", "ipykernel", "ipykernel_launcher", "IPython", "jupyter_client", "otter", "numpy")
#: the variables of otter's environment the kernel keeps (Jupyter's ``JPY_*``, locale, the grading's run mark …)
ENV_KEEP = ("LANG", "LANGUAGE", "TZ", "TERM", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED",
            "PYTHONIOENCODING", "PYTHONUTF8", "MPLBACKEND", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
            "MKL_NUM_THREADS", "BLOWFISH_NB_GRADING_RUN")
ENV_PREFIXES = ("LC_", "JPY_", "PYDEVD_")

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REMOUNT, _MS_BIND, _MS_REC = 1, 2, 4, 32, 4096, 16384


def loopback_up() -> None:
    """Bring the new network namespace's ``lo`` up (SIOCSIFFLAGS | IFF_UP): the namespace holds nothing else, so
    127.0.0.1 reaches only processes of this jail (lab 9's analyst service and its clients)."""
    import fcntl
    import socket
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, struct.pack("16sH", b"lo", 0)))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", flags | 0x1))  # SIOCSIFFLAGS, IFF_UP


def isolate_fs(spec: str) -> None:
    """In the jail's own mount namespace (as root, before ``setpriv``): every ``hide`` folder of ``spec``
    (:func:`_spec`) becomes an empty tmpfs, then each ``keep`` path under one is bound back read-only and the
    kernel's work folder read-write; the working folder becomes ``work/run``. ``mount(2)`` is called directly (no
    ``mount`` program, nothing through ``PATH``); the originals are reached through ``O_PATH`` descriptors opened
    before the tmpfs covers them (no folder is made to hold them)."""
    import ctypes
    import json

    s = json.loads(_unhex(spec))
    libc = ctypes.CDLL(None, use_errno=True)

    def mount(src, target, fstype, flags, data=None):
        enc = [None if a is None else a.encode() for a in (src, target, fstype, data)]
        if libc.mount(enc[0], enc[1], enc[2], flags, enc[3]) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"mount {src} on {target}: {os.strerror(err)}")

    held = {}
    try:
        for folder in s["hide"]:
            if not os.path.isdir(folder):
                continue
            held[folder] = os.open(folder, os.O_PATH | os.O_DIRECTORY)
            writable = os.stat(folder).st_mode & 0o002
            opts = "mode=1777,size=256m" if writable else "mode=0755,size=1m"
            mount("tmpfs", folder, "tmpfs", _MS_NOSUID | _MS_NODEV, opts)
        keep = [(p, False) for p in s["keep"]] + ([(s["work"], True)] if s.get("work") else [])
        for path, rw in sorted(keep, key=lambda t: t[0].count(os.sep)):
            root = next((f for f in held if _under(f, path)), None)
            if root is None:
                continue  # not in a hidden folder: there as it is
            rel = os.path.relpath(path, root)
            src = f"/proc/self/fd/{held[root]}" + ("" if rel == "." else os.sep + rel)
            if not os.path.lexists(src):
                continue
            if not os.path.lexists(path):
                _skeleton(path, os.path.isdir(src))
            mount(src, path, None, _MS_BIND | _MS_REC)
            if not rw:
                mount(None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    finally:
        for fd in held.values():
            os.close(fd)
    if s.get("work"):
        for sub in ("run", "home"):  # size-limited: the kernel cannot fill the host's disk
            _onto_tmpfs(os.path.join(s["work"], sub), mount)
        os.chdir(os.path.join(s["work"], "run"))


def _onto_tmpfs(folder: str, mount) -> None:
    """Cover ``folder`` with a tmpfs of :data:`WORK_TMPFS_SIZE` (mode 0700, its owner's) holding a copy of its
    files (the kernel's writes stay in memory, capped; the host's copy is left as it was)."""
    import shutil

    if not os.path.isdir(folder):
        return
    st = os.stat(folder)
    fd = os.open(folder, os.O_PATH | os.O_DIRECTORY)
    try:
        mount("tmpfs", folder, "tmpfs", _MS_NOSUID | _MS_NODEV,
              f"mode=0700,uid={st.st_uid},gid={st.st_gid},size={WORK_TMPFS_SIZE}")
        src = f"/proc/self/fd/{fd}"
        for name in os.listdir(src):
            a, b = os.path.join(src, name), os.path.join(folder, name)
            if os.path.isdir(a) and not os.path.islink(a):
                shutil.copytree(a, b, symlinks=True)
            else:
                shutil.copy2(a, b, follow_symlinks=False)
        for base, dirs, files in os.walk(folder):
            for name in (*dirs, *files):
                os.lchown(os.path.join(base, name), st.st_uid, st.st_gid)
    finally:
        os.close(fd)


def _skeleton(path: str, is_dir: bool) -> None:
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        os.makedirs(parent, mode=0o755)
    if is_dir:
        os.mkdir(path, 0o755)
    else:
        open(path, "w").close()


def _under(folder: str, path: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _outermost(paths) -> list[str]:
    out = []
    for p in sorted(set(paths), key=len):
        if not any(_under(q, p) for q in out):
            out.append(p)
    return sorted(out)


def _spec(fs: dict, work: str | None) -> str:
    return _hex(_json({**fs, "work": os.path.realpath(work) if work else None}))


def _json(obj) -> str:
    import json

    return json.dumps(obj, sort_keys=True)


def _hex(text: str) -> str:
    # hex: jupyter_client formats ``{name}`` fields in a kernelspec's argv; a path may hold any character
    return text.encode().hex()


def _unhex(text: str) -> str:
    return bytes.fromhex(text).decode()


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

    # no working folder on sys.path (gamer39's pandas.py): -P where Python has it (IPython ≥ 9.7 honours it too),
    # and IPython told so itself (older IPython puts '' back; on Python 3.10 it is the only guard)
    kernel = [sys.executable, *_answers.SAFE_PATH, "-m", "ipykernel_launcher", "-f", "{connection_file}",
              "--IPKernelApp.ignore_cwd=True"]
    argv = launcher_argv(plan, kernel_work, kernel, connection="{connection_file}")

    def get_kernel_spec(self, kernel_name, *args, **kwargs):
        # every name: otter asks for the notebook's own name under ``otter run``, ``python3`` on Gradescope; a
        # name the student chose must not pick an unjailed kernel
        return KernelSpec(argv=list(argv), display_name="Python 3 (graded, jailed)", language="python",
                          resource_dir=kernel_work, env={}, metadata={}, interrupt_mode="signal")

    from jupyter_client.manager import KernelManager

    sockets = os.path.join(kernel_work, "sock", "kernel")
    original_pre_start = KernelManager.__dict__["_async_pre_start_kernel"]

    async def pre_start(self, *args, **kwargs):
        # the jail has its own network namespace (no TCP to otter): Unix sockets in the jail's 0700 folder, which
        # only uid 65534 (and root) can enter and which no other grading's jail has in its mount namespace
        if plan.mode != "none":
            self.transport, self.ip = "ipc", sockets
        return await original_pre_start(self, *args, **kwargs)

    saved = KernelSpecManager.__dict__["get_kernel_spec"], _answers.subprocess
    KernelSpecManager.get_kernel_spec = get_kernel_spec
    KernelManager._async_pre_start_kernel = pre_start
    _answers.subprocess = _JailedSubprocess(plan, child_work)

    def undo():
        KernelSpecManager.get_kernel_spec, _answers.subprocess = saved
        KernelManager._async_pre_start_kernel = original_pre_start

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


#: the largest log record otter's server reads from a connection (a length prefix above it ends the connection)
LOG_RECORD_CAP = 1 << 16


def _guard_log_server() -> None:
    """otter's logging server reads whatever a local process sends to a port the kernel is told about. otter uses
    those records only to pass the notebook's own otter log lines to its loggers (its ``INIT_CELL_SOURCE``:
    ``logging.send_logs``); the grade never reads them. So its handler is replaced by one that reads each record
    (length prefix capped at :data:`LOG_RECORD_CAP`; stops at end of stream, a short read, an error or 10 s of
    silence) and drops it: no kernel text reaches otter's output (no forged "Total Score" line), nothing is
    unpickled, and a bogus length cannot keep a thread spinning. Its threads are daemon threads (a connection left
    open cannot keep ``otter run`` from exiting); ``unpickle`` still refuses anything but plain data."""
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

    def handle(self):
        drain_log_records(self.connection)

    otter_logging.LogRecordStreamHandler.unpickle = unpickle
    otter_logging.LogRecordStreamHandler.handle = handle
    otter_logging.LogRecordSocketReceiver.daemon_threads = True


def drain_log_records(conn, timeout: float = 10.0) -> int:
    """Read length-prefixed records from ``conn`` until end of stream, a short read, a length above
    :data:`LOG_RECORD_CAP`, an error or ``timeout`` seconds of silence; drop them. Returns how many were read."""
    import struct

    def exactly(n):
        buf = b""
        while len(buf) < n:
            chunk = conn.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    count = 0
    try:
        conn.settimeout(timeout)
        while True:
            head = exactly(4)
            if head is None or struct.unpack(">L", head)[0] > LOG_RECORD_CAP:
                return count
            if exactly(struct.unpack(">L", head)[0]) is None:
                return count
            count += 1
    except OSError:
        return count


if __name__ == "__main__":
    launch(sys.argv[1:])
