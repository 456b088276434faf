"""The grading jail (blowfish_nb.labs._jail): the launcher's decisions, and what a jailed process cannot do.

gamer36's holes: a daemon started by the kernel outlived it; the kernel ran ``gdb -p`` on otter's process; a
``.OTTER_LOG`` pickle in the submission ran code in otter's process. The process tests start a real jailed child
through the launcher (skipped where the host allows no namespace); each takes well under a second.
"""

from __future__ import annotations

import io
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import uuid

import pytest

from blowfish_nb.labs import _jail
from blowfish_nb.labs._jail import (NOBODY, Plan, decide, launch, launcher_argv, prepare, strip_pickles, wrap)

PIDNS = ["--pid", "--fork", "--kill-child", "--mount-proc"]


# --- decisions (no process started) -----------------------------------------------------------------------------


def test_root_plan_drops_to_nobody_in_a_pid_namespace():
    cmd = ["python", "-m", "ipykernel_launcher", "-f", "conn.json"]
    argv = wrap(Plan("root", "", "/usr/bin/unshare", "/usr/bin/setpriv"), cmd)
    assert argv[:6] == ["/usr/bin/unshare", *PIDNS, "--ipc"]
    assert argv[6] == "/usr/bin/setpriv"
    for flag in (f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all",
                 "--bounding-set=-all", "--no-new-privs"):
        assert flag in argv[7:argv.index("--")]
    assert argv[argv.index("--") + 1:] == cmd


def test_userns_plan_maps_the_user_and_none_runs_the_command_as_is():
    assert wrap(Plan("userns", "x"), ["k"]) == ["unshare", "--user", "--map-root-user", *PIDNS, "--ipc", "--", "k"]
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
    lines = _jail.install(str(sub), None, plan=Plan("none", "no namespaces in this test"))
    assert not (sub / ".OTTER_LOG").exists()
    assert any(".OTTER_LOG" in line for line in lines)
    assert lines[-1] == "WARNING: the notebook's kernel was NOT isolated (no namespaces in this test); it ran as the " \
                        "grading user."
    assert python_runner.grade_notebook() == "graded"
    for argv in seen["argv"]:
        assert argv[:4] == [sys.executable, "-I", "-S", "-c"]
        assert argv[-5:] == [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
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


def _cmdline_has(pid: str, token: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return token.encode() in f.read()
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
