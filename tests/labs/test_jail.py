"""The grading jail (blowfish_nb.labs._jail): the launcher's decisions, and what a jailed process cannot do.

gamer36's holes: a daemon started by the kernel outlived it; the kernel ran ``gdb -p`` on otter's process; a
``.OTTER_LOG`` pickle in the submission ran code in otter's process. The process tests start a real jailed child
through the launcher (skipped where the host allows no namespace); each takes well under a second.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid

import pytest

from blowfish_nb.labs import _jail
from blowfish_nb.labs._jail import (NOBODY, Plan, decide, launch, launcher_argv, prepare, strip_code, strip_pickles,
                                    wrap)

PIDNS = ["--pid", "--fork", "--kill-child", "--mount-proc"]


# --- decisions (no process started) -----------------------------------------------------------------------------


def test_root_plan_drops_to_nobody_in_a_pid_namespace():
    cmd = ["python", "-m", "ipykernel_launcher", "-f", "conn.json"]
    argv = wrap(Plan("root", "", "/usr/bin/unshare", "/usr/bin/setpriv"), cmd)
    assert argv[:7] == ["/usr/bin/unshare", *PIDNS, "--ipc", "--net"]
    stage = argv[7:argv.index("--") + 1]  # as root in the new namespaces: the loopback up (no fs plan here)
    assert stage[-3:] == ["--lo", "up", "--"]
    argv = argv[7 + len(stage):]
    assert argv[0] == "/usr/bin/setpriv"
    for flag in (f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all",
                 "--bounding-set=-all", "--no-new-privs"):
        assert flag in argv[1:argv.index("--")]
    death = argv[argv.index("--") + 1:]  # as the uid: the parent-death signal again (setpriv cleared it)
    assert death[death.index("--pdeathsig"):death.index("--") + 1] == ["--pdeathsig", "9", "--"]
    assert death[death.index("--") + 1:] == cmd


def test_userns_plan_maps_the_user_and_none_runs_the_command_as_is():
    argv = wrap(Plan("userns", "x"), ["k"])
    assert argv[:10] == ["unshare", "--user", "--map-root-user", *PIDNS, "--ipc", "--net", "--"]
    assert argv[-4:] == ["--lo", "up", "--", "k"]  # root of the user namespace brings its loopback up
    assert wrap(Plan("none", "x"), ["k", "-f"]) == ["k", "-f"]
    with pytest.raises(ValueError, match="mode"):
        Plan("chroot", "x")


def _which(*missing):
    return lambda name: None if name in missing else f"/usr/bin/{name}"


def test_decide_picks_the_strongest_jail_the_host_allows():
    ok = lambda cmd: None  # noqa: E731 - every probe succeeds
    assert decide(0, which=_which(), probe=ok).mode == "root"
    plan = decide(1000, which=_which(), probe=ok)
    assert plan.mode == "userns" and "not running as root" in plan.why
    # root, but setpriv as nobody fails (e.g. the interpreter is not readable by nobody): the user namespace
    root_fails = lambda cmd: "Permission denied" if "--reuid=65534" in cmd else None  # noqa: E731
    plan = decide(0, which=_which(), probe=root_fails)
    assert plan.mode == "userns" and "Permission denied" in plan.why
    assert decide(0, which=_which("setpriv"), probe=ok).mode == "userns"
    plan = decide(1000, which=_which(), probe=lambda cmd: "Operation not permitted")
    assert plan.mode == "none" and "Operation not permitted" in plan.why
    assert "NOT isolated" in plan.report() and "Operation not permitted" in plan.report()
    plan = decide(0, which=_which("unshare"), probe=ok)
    assert plan.mode == "none" and "unshare" in plan.report()


def test_launcher_runs_this_file_isolated_from_the_kernels_reach():
    argv = launcher_argv(Plan("root", ""), "/w", ["python", "-f", "{connection_file}"], connection="{connection_file}")
    assert argv[:4] == [sys.executable, "-I", "-S", "-c"]  # no PYTHONPATH, no site hooks (.pth, sitecustomize)
    assert "{" not in argv[4]  # jupyter_client formats {fields} in a kernelspec's argv
    assert argv[argv.index("--") + 1:] == ["python", "-f", "{connection_file}"]
    assert argv[argv.index("--connection") + 1] == "{connection_file}"


def test_launch_gives_the_kernel_its_own_copy_of_the_connection_file(tmp_path):
    work = prepare(str(tmp_path), None, uid=None)
    conn = tmp_path / "kernel-1.json"
    conn.write_text('{"key": "k"}')
    args = launcher_argv(Plan("userns", ""), work, ["python", "-f", str(conn)], connection=str(conn))
    full = launch(args[5:], execute=True)
    private = full[-1]
    assert full[:3] == ["unshare", "--user", "--map-root-user"]
    assert private != str(conn) and private.startswith(os.path.join(work, "home"))
    assert open(private).read() == '{"key": "k"}' and os.stat(private).st_mode & 0o077 == 0


def test_pickles_and_the_otter_log_leave_the_submission(tmp_path):
    (tmp_path / ".OTTER_LOG").write_bytes(b"\x80\x04cbuiltins\nexec\n(Vprint(1)\ntR.")
    (tmp_path / "answers.pkl").write_bytes(b"x")
    (tmp_path / "data.bin").write_bytes(pickle.dumps({"a": 1}))  # a pickle under another name
    (tmp_path / "counts.csv").write_text("1,2\n")
    (tmp_path / "teacher.pkl").write_bytes(b"x")  # shipped by the autograder (source/files): kept
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".OTTER_LOG").write_bytes(b"x")
    removed = strip_pickles(str(tmp_path), keep={"teacher.pkl"})
    assert removed == sorted([".OTTER_LOG", "answers.pkl", "data.bin", os.path.join("sub", ".OTTER_LOG")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["counts.csv", "sub", "teacher.pkl"]


def test_files_python_could_import_leave_the_submission(tmp_path):
    """gamer39: a zip submission's ``pandas.py`` ran in the kernel and in the code answer's child (7/7 on a blank
    lab 5). Every module, package file, bytecode, extension and ``.pth`` goes; the notebook, its data, the
    autograder's own files and otter's tests stay."""
    for name in ("pandas.py", "sitecustomize.py", "numpy.pth", "evil.cpython-311-x86_64-linux-gnu.so", "m.pyc",
                 "lab05.ipynb", "counts.csv", "lab05-first-attempts.json", "helper.py"):
        (tmp_path / name).write_text("x")
    (tmp_path / "scipy").mkdir()
    (tmp_path / "scipy" / "__init__.py").write_text("x")
    (tmp_path / "scipy" / "notes.txt").write_text("x")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "q1.py").write_text("x")  # otter's hidden tests: the plugin reads and removes them
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "loader.py").write_text("x")  # under a folder the autograder ships: kept
    (tmp_path / "__init__.py").write_text("")  # otter's own, empty: runs nothing, not reported
    removed = strip_code(str(tmp_path), keep={"data", "helper.py"})
    assert removed == sorted(["pandas.py", "sitecustomize.py", "numpy.pth", "evil.cpython-311-x86_64-linux-gnu.so",
                              "m.pyc", os.path.join("scipy", "__init__.py")])
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == sorted(["lab05.ipynb", "counts.csv", "lab05-first-attempts.json", "helper.py", "__init__.py",
                           os.path.join("scipy", "notes.txt"), os.path.join("tests", "q1.py"),
                           os.path.join("data", "loader.py")])


def test_under_the_autograders_names_only_its_own_files_stay(tmp_path):
    """gamer39b: otter copies a folder of the autograder's only where the submission has none, so a student's
    folder of that name survives: a file there stays only when it is the autograder's own, byte for byte."""
    source, sub = tmp_path / "files", tmp_path / "submission"
    for root in (source, sub):
        (root / "data").mkdir(parents=True)
        (root / "data" / "loader.py").write_text("LOADER = 1\n")
    (sub / "data" / "pandas.py").write_text("import os\n")  # the student's, under the autograder's folder name
    (sub / "wheel.py").write_text("changed\n")  # a top-level name the autograder ships, other bytes
    (source / "wheel.py").write_text("theirs\n")
    (sub / "__init__.py").write_text("import os\n")  # not empty: not otter's
    removed = strip_code(str(sub), keep={"data", "wheel.py"}, source=str(source))
    assert removed == sorted([os.path.join("data", "pandas.py"), "wheel.py", "__init__.py"])
    assert (sub / "data" / "loader.py").exists()


def test_a_code_answers_child_imports_nothing_from_its_working_folder(tmp_path, monkeypatch):
    """The child starts with ``python -P``: a module in its working folder (a submission's file, or one a cell
    wrote while the notebook ran) is not what ``import`` finds."""
    from blowfish_nb.labs._answers import CodeProxy

    (tmp_path / "json.py").write_text("raise SystemExit('the working folder was imported')\n")
    (tmp_path / "gamer39_payload.py").write_text("VALUE = 1\n")
    monkeypatch.chdir(tmp_path)
    proxy = CodeProxy(["import json\ntry:\n    import gamer39_payload\n    found = True\n"
                       "except ImportError:\n    found = False"],
                      "def tell(_):\n    import sys\n    return [found, json.__file__, '' in sys.path]", "tell")
    try:
        found, where, cwd_on_path = proxy(0)
    finally:
        proxy.close()
    assert not found and not cwd_on_path and not where.startswith(str(tmp_path))


def test_install_removes_the_log_and_serves_the_jail_for_every_kernel_name(tmp_path, monkeypatch):
    from jupyter_client.kernelspec import KernelSpecManager
    import otter.execute.logging as otter_logging
    from otter.run.run_autograder.runners import python_runner

    from blowfish_nb.labs import _answers

    for cls, name in ((otter_logging.LogRecordStreamHandler, "unpickle"),
                      (otter_logging.LogRecordStreamHandler, "handle"),
                      (otter_logging.LogRecordSocketReceiver, "daemon_threads")):
        monkeypatch.setattr(cls, name, getattr(cls, name))
    monkeypatch.setattr(_jail, "set_dumpable", lambda on=False: True)  # not on pytest's own process
    seen = {}

    def grade_notebook(*args, **kwargs):  # otter's runner's call: the kernel starts and after_grading runs in it
        seen["argv"] = [KernelSpecManager().get_kernel_spec(n).argv for n in ("python3", "a-name-the-student-chose")]
        seen["subprocess"] = _answers.subprocess
        return "graded"

    monkeypatch.setattr(python_runner, "grade_notebook", grade_notebook)
    unjailed, subprocess_module = KernelSpecManager.get_kernel_spec, _answers.subprocess
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "lab02.ipynb").write_text("{}")
    (sub / ".OTTER_LOG").write_bytes(b"\x80\x04N.")
    (sub / "pandas.py").write_text("import numpy\nnumpy.e = 3.718281828459045\n")  # gamer39's zip submission
    lines = _jail.install(str(sub), None, plan=Plan("none", "no namespaces in this test"))
    assert not (sub / ".OTTER_LOG").exists()
    assert any(".OTTER_LOG" in line for line in lines)
    assert not (sub / "pandas.py").exists() and any("pandas.py" in line and "import" in line for line in lines)
    assert lines[-1] == "WARNING: the notebook's kernel was NOT isolated (no namespaces in this test); it ran as the " \
                        "grading user."
    assert python_runner.grade_notebook() == "graded"
    for argv in seen["argv"]:
        assert argv[:4] == [sys.executable, "-I", "-S", "-c"]
        assert argv[-7:] == [sys.executable, "-P", "-m", "ipykernel_launcher", "-f", "{connection_file}",
                             "--IPKernelApp.ignore_cwd=True"]
    assert isinstance(seen["subprocess"], _jail._JailedSubprocess)
    # outside otter's grading call nothing stays patched (a test that calls before_grading leaves no jail behind)
    assert KernelSpecManager.get_kernel_spec is unjailed and _answers.subprocess is subprocess_module
    # otter's logging server: a pickle that calls anything is refused, a plain record is read
    handler = otter_logging.LogRecordStreamHandler.__new__(otter_logging.LogRecordStreamHandler)
    evil = b"\x80\x04cbuiltins\nexec\n(Vraise SystemExit('ran')\ntR."
    assert handler.unpickle(evil)["levelno"] == 0
    assert handler.unpickle(pickle.dumps({"msg": "hi", "levelno": 10}))["msg"] == "hi"


# --- real jailed processes --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def jail_root():
    root = tempfile.mkdtemp(prefix="test-jail-")  # under /tmp, traversable by nobody (pytest's tmp_path is not)
    os.chmod(root, 0o711)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _plan(mode: str) -> Plan:
    plan = decide()
    if mode == "root" and plan.mode != "root":
        pytest.skip(f"no root jail here: {plan.why}")
    if mode == "userns":
        probe = _jail._probe(wrap(Plan("userns", ""), ["true"]))
        if probe is not None:
            pytest.skip(f"no unprivileged user namespace here: {probe}")
        plan = Plan("userns", "test")
    return plan


_CHILD = r"""
import os, subprocess, sys
parent, target, token = int(sys.argv[1]), sys.argv[2], sys.argv[3]
try:
    os.kill(parent, 0); killable = True
except OSError:
    killable = False
try:
    open(target, "a").close(); wrote = True
except OSError:
    wrote = False
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", token], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(os.getpid(), os.getuid(), os.path.exists(f"/proc/{parent}"), killable, wrote)
"""


def _run_jailed(plan: Plan, root: str):
    """Start the child through the launcher; return its report and the pids still running its grandchild."""
    work = prepare(root, None, NOBODY if plan.mode == "root" else None)
    target = os.path.join(root, f"root-owned-{uuid.uuid4().hex}")
    open(target, "w").close()
    os.chmod(target, 0o644)
    token = f"jail-test-{uuid.uuid4().hex}"
    done = subprocess.run(launcher_argv(plan, work, [sys.executable, "-c", _CHILD, str(os.getpid()), target, token]),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    left = [int(p) for p in os.listdir("/proc") if p.isdigit() and _cmdline_has(p, token)]
    pid, uid, sees_parent, killable, wrote = done.stdout.split()
    return {"pid": int(pid), "uid": int(uid), "sees_parent": sees_parent == "True", "killable": killable == "True",
            "wrote": wrote == "True"}, left


def _cmdline_has(pid: str, token: str, start: list[str] | None = None) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            line = f.read()
        return token.encode() in line and (start is None or line.startswith("\0".join(start).encode() + b"\0"))
    except OSError:
        return False


def test_a_jailed_child_cannot_reach_its_parent_write_root_files_or_leave_a_daemon(jail_root):
    got, left = _run_jailed(_plan("root"), jail_root)
    assert got == {"pid": 1, "uid": NOBODY, "sees_parent": False, "killable": False, "wrote": False}
    assert left == []  # the grandchild (own session) died with the jailed process


def test_in_a_user_namespace_the_pid_jail_holds_but_files_are_the_users(jail_root):
    got, left = _run_jailed(_plan("userns"), jail_root)
    assert (got["pid"], got["sees_parent"], got["killable"], left) == (1, False, False, [])
    assert got["wrote"] == (os.geteuid() == 0)  # the same uid on files: what the snapshot of _integrity watches


def test_without_the_jail_the_grandchild_outlives_its_parent(jail_root):
    """The control: the same child unjailed sees its parent and leaves its grandchild running (killed here)."""
    got, left = _run_jailed(Plan("none", "control"), jail_root)
    try:
        assert got["sees_parent"] and got["killable"] and len(left) == 1
    finally:
        for pid in left:
            os.kill(pid, 9)


def test_a_jailed_kernel_runs_cells_as_nobody(jail_root):
    """The kernelspec install() serves starts a working kernel: it runs a cell, as nobody, in its own folder."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import start_new_kernel

    plan = _plan("root")
    work = prepare(jail_root, None, NOBODY)
    undo = _jail._activate(plan, work, work)
    try:
        km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60)
    finally:
        undo()
    try:
        out = io.StringIO()
        kc.execute_interactive("import os; print(os.getuid(), os.getpid(), os.getcwd(), os.__file__)", timeout=60,
                               output_hook=lambda m: out.write(m["content"].get("text", "")))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    # the same interpreter and standard library as otter's (a folder nobody cannot traverse is bound into the jail)
    assert out.getvalue().split() == [str(NOBODY), "1", os.path.join(work, "run"), os.__file__]
    # gamer36c: no TCP (its own network namespace): Jupyter's IPC transport, Unix sockets in the jail's own folder,
    # 0700 and nobody's, which no other grading's jail has in its mount namespace
    sock = os.path.join(work, "sock")
    assert km.transport == "ipc" and km.ip == os.path.join(sock, "kernel")
    st = os.stat(sock)
    assert (st.st_mode & 0o777, st.st_uid) == (0o700, NOBODY)


def test_killing_the_grader_kills_the_jailed_kernel(jail_root):
    """gamer36c: SIGTERM/SIGKILL to otter left unshare and the kernel running. The launcher asks for SIGKILL when
    its parent dies (PR_SET_PDEATHSIG); unshare's --kill-child then takes the namespace."""
    import time

    work = prepare(jail_root, None, NOBODY)
    token = f"jail-test-{uuid.uuid4().hex}"
    sleeper = [sys.executable, "-c", "import time; time.sleep(120)"]
    argv = launcher_argv(_plan("root"), work, [*sleeper, token])
    grader = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; subprocess.Popen(sys.argv[1:]); "
                               "time.sleep(120)", *argv], stdin=subprocess.DEVNULL)
    try:
        for _ in range(200):  # the jailed process is up (its command line starts with the sleeper's)
            if [p for p in os.listdir("/proc") if p.isdigit() and _cmdline_has(p, token, sleeper)]:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the jailed process did not start")
    finally:
        grader.kill()
        grader.wait()
    for _ in range(100):
        left = [int(p) for p in os.listdir("/proc") if p.isdigit() and _cmdline_has(p, token)]
        if not left:
            break
        time.sleep(0.1)
    for pid in left:
        os.kill(pid, 9)
    assert left == []


# --- gamer36b: reading the teacher's files, otter's log server, hygiene -----------------------------------------

_READER = r"""
import json, os, socket, sys
out = {"env": {k: os.environ.get(k) for k in ("PWD", "OLDPWD", "HOME", "PYTHONPATH", "VIRTUAL_ENV", "MARK")}}
for name in sys.argv[1:]:
    try:
        with open(name) as f:
            out[name] = f.read()
    except OSError as e:
        out[name] = type(e).__name__
try:
    import blowfish_nb, numpy
    out["imports"] = blowfish_nb.__file__
except ImportError as e:
    out["imports"] = repr(e)
try:
    open(os.path.join(sys.prefix, "jail-test-write"), "w").close(); out["venv_writable"] = True
except OSError:
    out["venv_writable"] = False
open("mine.txt", "w").write("x")
out["cwd"], out["ipc"] = os.getcwd(), os.readlink("/proc/self/ns/ipc")
out["net"], out["ifaces"] = os.readlink("/proc/self/ns/net"), [n for _, n in socket.if_nameindex()]
out["tcp"] = open("/proc/net/tcp").read()
try:
    socket.create_connection(("127.0.0.1", int(os.environ.get("JPY_TEST_PORT", "1"))), timeout=2).close()
    out["connected"] = True
except OSError:
    out["connected"] = False
out["sizes"] = [os.statvfs(f).f_blocks * os.statvfs(f).f_frsize for f in (".", os.environ["HOME"])]
print(json.dumps(out))
"""


def test_the_jailed_kernel_reads_no_teacher_file_and_gets_an_allow_listed_environment(jail_root):
    """gamer36b: uid 65534 read the autograder zip and the solution notebooks (world-readable, found through PWD,
    OLDPWD, PYTHONPATH or by walking). In the jail only the interpreter, the venv and the package folder remain."""
    plan = _plan("root")
    course = tempfile.mkdtemp(prefix=".jail-test-course-", dir=os.getcwd())  # under /work, like a course folder
    shared = tempfile.mkdtemp(dir=jail_root)  # under /tmp
    try:
        files = []
        for folder in (course, shared):
            os.chmod(folder, 0o755)
            name = os.path.join(folder, "05-autograder.zip")
            with open(name, "w") as f:
                f.write("expect_total(7)")
            os.chmod(name, 0o644)
            files.append(name)
        work = prepare(jail_root, None, NOBODY)
        listener = socket.create_server(("127.0.0.1", 0))  # a service on the host's loopback (another kernel's port)
        port = listener.getsockname()[1]
        env = {**os.environ, "JPY_TEST_PORT": str(port), "PWD": course, "OLDPWD": course, "VIRTUAL_ENV": course, "MARK": "x",
               "PYTHONPATH": os.pathsep.join([course, os.getcwd()])}
        try:
            done = subprocess.run(launcher_argv(plan, work, [sys.executable, "-c", _READER, *files]), env=env,
                                  capture_output=True, text=True, timeout=60)
        finally:
            listener.close()
        assert done.returncode == 0, done.stderr[-2000:]
        got = json.loads(done.stdout)
        assert [got[f] for f in files] == ["FileNotFoundError"] * 2  # the folders are not there at all
        # the kernel keeps the entries of this process's PYTHONPATH that hold a package it imports (none when the
        # package is installed, as in CI's editable install); never the course folder
        kept = os.pathsep.join(_jail.kernel_pythonpath()) or None
        assert course not in (kept or "")
        assert got["env"] == {"PWD": None, "OLDPWD": None, "HOME": os.path.join(work, "home"),
                              "PYTHONPATH": kept, "VIRTUAL_ENV": None, "MARK": None}
        assert got["imports"] == os.path.join(os.getcwd(), "blowfish_nb", "__init__.py")  # the package, read-only
        assert not got["venv_writable"] and got["cwd"] == os.path.join(work, "run")
        # its own folder, read-write, on a size-limited tmpfs (gamer36c: on the host's disk, no limit): what it
        # writes stays in the jail
        assert got["sizes"] == [256 << 20] * 2 and not os.path.exists(os.path.join(work, "run", "mine.txt"))
        assert got["ipc"] != os.readlink("/proc/self/ns/ipc")  # its own IPC namespace
        # gamer36c: its own network namespace, only lo: the host's loopback listeners (another grading's kernel)
        # are neither listed nor reachable
        assert got["net"] != os.readlink("/proc/self/ns/net") and got["ifaces"] == ["lo"]
        assert not got["connected"] and f":{port:04X} " not in got["tcp"]
        assert sorted(os.listdir(work)) == ["home", "run", "sock"]  # nothing held beside it (jail36's held-XXXX)
    finally:
        shutil.rmtree(course, ignore_errors=True)
        shutil.rmtree(shared, ignore_errors=True)


def test_the_file_system_rule_holds_wherever_the_venv_lives(monkeypatch, tmp_path):
    """Hidden: the places a teacher's files can be, and this grading's folders outside them (not ``/`` nor a system
    folder); kept: the prefixes, site-packages and the package folders, never the tree on PYTHONPATH."""
    fs = _jail.allowed_fs([str(tmp_path), "/", "/usr", "/work/main/build/labs"])
    assert {"/work", "/home", "/root", "/tmp", "/opt"} <= set(fs["hide"]) and "/" not in fs["hide"]
    assert "/usr" not in fs["hide"] and "/work/main/build/labs" not in fs["hide"]  # under /work already
    assert os.path.realpath(sys.prefix) in fs["keep"] and os.path.realpath(sys.base_prefix) in fs["keep"]
    import blowfish_nb
    assert os.path.dirname(os.path.realpath(blowfish_nb.__file__)) in fs["keep"]
    assert os.path.realpath(os.getcwd()) not in fs["keep"]  # the worktree itself (it holds build/labs)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/work/course", os.getcwd()]))
    assert _jail.kernel_pythonpath() == [os.getcwd()]
    env = _jail.kernel_env({"PWD": "/c", "OLDPWD": "/c", "HOME": "/root", "JPY_SESSION_NAME": "n", "LANG": "C",
                            "BLOWFISH_NB_GRADING_RUN": "t", "VIRTUAL_ENV": "/c/.venv", "PYTHONPATH": "/c"}, "/p")
    assert env == {"JPY_SESSION_NAME": "n", "LANG": "C", "BLOWFISH_NB_GRADING_RUN": "t", "PYTHONPATH": "/p",
                   "PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"])}


def test_every_top_level_folder_but_the_system_is_hidden(tmp_path):
    """CI checks the project out under ``/check``: the fixed list of usual places (``/home``, ``/work`` …) missed it,
    and the jailed kernel read a course folder beside the checkout. Every top-level folder is hidden but the
    system's; a top-level link (``/bin`` → ``usr/bin``) is not a folder of its own."""
    for name in ("usr", "etc", "proc", "check", "work", "data", "lost+found"):
        (tmp_path / name).mkdir()
    (tmp_path / "bin").symlink_to("usr")
    (tmp_path / "notes.txt").write_text("x")
    assert _jail.hidden_roots(str(tmp_path)) == [str(tmp_path / n) for n in ("check", "data", "lost+found", "work")]
    top = [os.path.join(os.sep, n) for n in os.listdir(os.sep)]
    others = {p for p in top if os.path.isdir(p) and not os.path.islink(p) and p not in _jail.SYSTEM}
    assert others <= set(_jail.allowed_fs()["hide"])  # this host's, whatever they are
    here = os.path.realpath(os.getcwd())
    assert any(_jail._under(h, here) for h in _jail.allowed_fs()["hide"])  # the checkout, wherever it is


def test_the_jail_tools_come_from_fixed_folders(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent-writable-folder")
    plan = decide(0, probe=lambda cmd: None)
    assert plan.mode == "root" and plan.unshare.startswith("/") and plan.setpriv.startswith("/")
    assert os.path.dirname(plan.unshare) in _jail.TOOL_DIRS


def _log_handler(data: bytes):
    """Run otter's (guarded) log handler on ``data`` sent then closed; returns the records otter's loggers saw and
    whether the handler returned."""
    import logging
    import socket
    import threading

    import otter.execute.logging as otter_logging

    seen = []

    class Catch(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    a, b = socket.socketpair()
    a.sendall(data)
    a.close()
    catch, loggers = Catch(), [logging.getLogger(), logging.getLogger("otter")]  # otter's does not propagate
    for logger in loggers:
        logger.addHandler(catch)
    try:
        t = threading.Thread(target=otter_logging.LogRecordStreamHandler, args=(b, ("jail", 0), None), daemon=True)
        t.start()
        t.join(30)  # a liveness bound, not a timing: the unguarded handler never returns (gamer36b: 240 s, killed)
        return seen, not t.is_alive()
    finally:
        for logger in loggers:
            logger.removeHandler(catch)


def test_otter_log_server_prints_nothing_of_the_kernel_and_cannot_be_hung(monkeypatch):
    """gamer36b: a plain-dict record printed "Total Score: 7.000 / 7.000" in otter's output; a 2**30 length prefix
    kept otter's handler thread looping (``otter run`` never exited)."""
    import struct

    import otter.execute.logging as otter_logging

    for cls, name in ((otter_logging.LogRecordStreamHandler, "unpickle"),
                      (otter_logging.LogRecordStreamHandler, "handle"),
                      (otter_logging.LogRecordSocketReceiver, "daemon_threads")):
        monkeypatch.setattr(cls, name, getattr(cls, name))
    _jail._guard_log_server()
    forged = pickle.dumps({"name": "otter", "levelno": 50, "levelname": "CRITICAL", "msg": "Total Score: 7.000 / 7.000",
                           "args": None})
    seen, returned = _log_handler(struct.pack(">L", len(forged)) + forged)
    assert seen == [] and returned  # nothing of the kernel reaches otter's loggers
    seen, returned = _log_handler(struct.pack(">L", 1 << 30) + b"x")
    assert returned and seen == []  # the handler ends at the short read
    assert otter_logging.LogRecordSocketReceiver.daemon_threads


def test_make_labs_writes_the_answers_for_the_teacher_only(tmp_path):
    """gamer36b: ``make labs`` wrote the zips and solution notebooks 0644 under a 0755 tree."""
    from blowfish_nb.labs.build import teacher_only

    lab = tmp_path / "05-break-it"
    for kind, name in (("student", "05-break-it.ipynb"), ("solution", "05-break-it.ipynb"),
                       ("autograder", "05-break-it-autograder.zip")):
        (lab / kind).mkdir(parents=True)
        (lab / kind / name).write_text("x")
        os.chmod(lab / kind, 0o755)
        os.chmod(lab / kind / name, 0o644)
    teacher_only(lab)
    modes = {p.relative_to(lab).as_posix(): p.stat().st_mode & 0o777 for p in lab.rglob("*")}
    assert modes == {"student": 0o755, "student/05-break-it.ipynb": 0o644, "solution": 0o700,
                     "solution/05-break-it.ipynb": 0o600, "autograder": 0o700,
                     "autograder/05-break-it-autograder.zip": 0o600}


def test_the_teacher_can_switch_the_jail_off_in_otters_environment(monkeypatch):
    from blowfish_nb.labs import _jail

    monkeypatch.setenv(_jail.SWITCH, "off")
    plan = _jail.decide(0, which=lambda name: f"/usr/bin/{name}", probe=lambda cmd: None)
    assert plan.mode == "none" and _jail.SWITCH in plan.why
    monkeypatch.setenv(_jail.SWITCH, "")
    assert _jail.decide(0, which=lambda name: f"/usr/bin/{name}", probe=lambda cmd: None).mode == "root"
