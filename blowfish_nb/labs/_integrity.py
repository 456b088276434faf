"""What the grading plugin checks of the grading environment: files the student's kernel could rewrite so that
otter's process (or a later grading) runs code of the student's.

The kernel runs as the same operating-system user as otter (gamer35: a code answer overwrote the installed
``blowfish_nb/labs/lab05.py``, which otter's process imported later, and another planted a ``sitecustomize`` that gave
the next ``otter run`` of a blank notebook full marks). :mod:`blowfish_nb.labs._plugin` takes a :func:`snapshot`
before the kernel starts and compares it (:func:`changes`) before any verdict runs:

* sha256 and size of every file of the installed ``blowfish_nb`` and ``otter`` packages (``__pycache__`` included:
  a forged ``.pyc`` whose header matches its source is loaded instead of the source);
* sha256 and size of every ``.pth``, ``sitecustomize`` and ``usercustomize`` entry of every directory on
  ``sys.path``, the site directories (``site.getsitepackages()``, the user site) and the grading folder;
* the set of importable entry names of each of those directories (a new module, package or extension next to the
  path's others shadows or adds one; the lab's own data files in the grading folder do not count).

:func:`startup_hooks` lists the start-up hooks already active or present when grading starts, with the ones the
environment does not ship (:func:`unexpected_hooks`): those refuse the grading.

Not checked: the other installed packages' files (NumPy, SciPy, pandas, ``_distutils_hack``...; stat-ing all of
site-packages takes seconds), and anything a kernel does outside these directories. A kernel of the same user can
do anything the operating system lets that user do; the real fix is to run it as another user or in a sandbox.

Examples
--------
>>> before = snapshot(".")
>>> changes(before, snapshot("."))
[]
"""

from __future__ import annotations

import hashlib
import os
import re
import site
import sys
import sysconfig
from pathlib import Path

__all__ = ["snapshot", "changes", "startup_hooks", "unexpected_hooks", "PACKAGES", "record_mismatches", "unverified",
           "audit_records", "changed_after_install"]

#: the packages whose every file is hashed (what otter's process imports to grade)
PACKAGES = ("blowfish_nb", "otter")
_HOOKS = ("sitecustomize", "usercustomize")
#: the executable ``.pth`` lines installers write (setuptools' distutils shim, editable finders, virtualenv)
_KNOWN_PTH = (
    re.compile(r"import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os\.environ\.get\(var, '(local|stdlib)'\) "
               r"== 'local'; enabled and __import__\('_distutils_hack'\)\.add_shim\(\); ?"),
    re.compile(r"import (__editable___[A-Za-z0-9_]+_finder); \1\.install\('[^'\\]*'\)"),
    re.compile(r"import _virtualenv"),
)


def _digest(path: Path) -> tuple[int, str]:
    data = path.read_bytes()
    return len(data), hashlib.sha256(data).hexdigest()


def _package_root(name: str) -> Path | None:
    module = sys.modules.get(name)
    if module is None:
        import importlib

        try:
            module = importlib.import_module(name)
        except ImportError:
            return None
    return Path(module.__file__).resolve().parent if getattr(module, "__file__", None) else None


def _package_roots() -> list[Path]:
    return [r for r in map(_package_root, PACKAGES) if r is not None]


def _directories(cwd) -> list[Path]:
    dirs = [Path(p or os.getcwd()) for p in sys.path]
    dirs += [Path(p) for p in site.getsitepackages()] + [Path(site.getusersitepackages()), Path(cwd)]
    out, seen = [], set()
    for d in dirs:
        key = os.path.abspath(d)
        if key not in seen:
            seen.add(key)
            out.append(Path(key))
    return out


def _is_hook(name: str) -> bool:
    return name.endswith(".pth") or name.split(".")[0] in _HOOKS


def _importable(folder: Path, name: str) -> bool:
    """An entry of a path directory that an import or the interpreter's start-up can run: a module file (``.py``,
    ``.pyc``, an extension), a ``.pth``, a directory (a package, or a namespace package), a start-up hook. A data
    file (the lab's ``lab02-first-attempts.json`` in the grading folder) is not one."""
    import importlib.machinery

    if _is_hook(name) or name.endswith(tuple(importlib.machinery.all_suffixes())):
        return True
    return (folder / name).is_dir()


def snapshot(cwd=".", files=()) -> dict[str, object]:
    """The state :func:`changes` compares: ``file:<path>`` -> (size, sha256), ``dir:<path>`` -> its entry names.
    ``files``: more files to hash (those of distributions pip's ``RECORD`` cannot vouch for, :func:`unverified`)."""
    out: dict[str, object] = {}
    for path in files:
        try:
            out[f"file:{path}"] = _digest(Path(path))
        except OSError:
            out[f"file:{path}"] = None
    for root in _package_roots():
        for folder, _, files in os.walk(root):
            out[f"dir:{folder}"] = tuple(sorted(files))
            for f in files:
                path = Path(folder) / f
                try:
                    out[f"file:{path}"] = _digest(path)
                except OSError:
                    out[f"file:{path}"] = None
    for d in _directories(cwd):
        try:
            names = tuple(sorted(n for n in os.listdir(d) if _importable(d, n)))
        except OSError:
            out[f"dir:{d}"] = None
            continue
        out[f"dir:{d}"] = names
        for name in names:
            if _is_hook(name):
                path = d / name
                targets = [path / "__init__.py"] if path.is_dir() else [path]
                for t in targets:
                    try:
                        out[f"file:{t}"] = _digest(t)
                    except OSError:
                        out[f"file:{t}"] = None
    return out


def changes(before: dict, after: dict) -> list[str]:
    """What differs between two snapshots, one line a path (new entries of a directory named one by one)."""
    lines = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        kind, path = key.split(":", 1)
        if kind == "dir" and old is not None and new is not None:
            lines += [f"new: {os.path.join(path, n)}" for n in sorted(set(new) - set(old))]
            lines += [f"removed: {os.path.join(path, n)}" for n in sorted(set(old) - set(new))]
        elif kind == "dir" or (kind == "file" and old is not None and new is not None):
            lines.append(f"changed: {path}")
        elif kind == "file" and old is None:
            lines.append(f"new: {path}")
        else:
            lines.append(f"removed: {path}")
    return list(dict.fromkeys(lines))


def _shipped(path: str) -> bool:
    """A start-up module the Python installation itself ships (a distribution's ``sitecustomize`` in the standard
    library or ``/etc``), not one in a site directory, on ``PYTHONPATH`` or in the grading folder."""
    real = os.path.realpath(path)
    stdlib = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")}
    return os.path.dirname(real) in stdlib or real.startswith("/etc/")


def startup_hooks(cwd=".") -> list[str]:
    """The start-up hooks of this interpreter, one line each: loaded ``sitecustomize``/``usercustomize`` modules (with
    their files) and ``.pth`` files with executable lines in the site directories and on the path."""
    lines = []
    for name in _HOOKS:
        module = sys.modules.get(name)
        if module is not None:
            lines.append(f"loaded {name}: {getattr(module, '__file__', None) or '(no file)'}")
    for path, code in _hook_files(cwd):
        if code is None:
            lines.append(f"present {path.name}: {path}")
        elif code:
            lines.append(f"executable .pth: {path}")
    return lines


def _hook_files(cwd="."):
    """(path, None) for each ``sitecustomize``/``usercustomize`` file in the site directories and on the path, and
    (path, its executable lines) for each ``.pth`` file there."""
    for d in _directories(cwd):
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for n in names:
            if n.split(".")[0] in _HOOKS:
                yield d / n, None
            elif n.endswith(".pth"):
                try:
                    text = (d / n).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                yield d / n, [ln for ln in text.splitlines() if ln.startswith(("import ", "import\t"))]


def unexpected_hooks(cwd=".") -> list[str]:
    """The start-up hooks the grading environment does not ship: a ``sitecustomize``/``usercustomize`` outside the
    Python installation's own folders (loaded or present on the path), a ``.pth`` line that runs code other than an
    installer's known lines. Any of them refuses the grading."""
    bad = []
    for name in _HOOKS:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None) if module is not None else None
        if module is not None and not (path and _shipped(path)):
            bad.append(f"{name} loaded from {path or '(no file)'}")
    for path, code in _hook_files(cwd):
        if code is None:
            if not _shipped(str(path)):
                bad.append(f"{path}")
            continue
        unknown = [ln for ln in code if not any(p.fullmatch(ln.rstrip("\n")) for p in _KNOWN_PTH)]
        if unknown:
            bad.append(f"{path} (runs: {unknown[0][:80]})")
    return list(dict.fromkeys(bad))


# --- files changed after grading began (gamer35b: a module otter's process imports only at exit) ------------------


def clock_ns() -> int:
    """The grading start on the file system's clock: the earlier of ``time.time_ns()`` and the change time of a file
    written now (file times come from a coarse clock that lags ``time_ns`` by up to a tick). A file changed later has
    ``st_ctime_ns`` at least this; a process of the user cannot set a change time back."""
    import tempfile
    import time

    now = time.time_ns()
    with tempfile.TemporaryFile() as f:
        return min(now, os.fstat(f.fileno()).st_ctime_ns)


def _changed_since(path, start_ns: int) -> bool:
    try:
        return os.stat(path).st_ctime_ns >= start_ns
    except (OSError, TypeError, ValueError):
        return False


class ImportGuard:
    """A ``sys.meta_path`` finder that refuses to import a module whose file (or cached ``.pyc``) changed since
    ``start_ns``: otter's process imports some modules for the first time after the notebook ran (pandas' table
    formatting when it prints the summary), and a kernel of the same user can have rewritten them."""

    def __init__(self, start_ns: int, deny: frozenset = frozenset()):
        self.start_ns = start_ns
        self.deny = frozenset(os.path.realpath(p) for p in deny)
        self._busy = False

    def find_spec(self, name, path=None, target=None):
        import importlib.machinery

        if self._busy:
            return None
        self._busy = True
        try:
            spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        finally:
            self._busy = False
        if spec is None or not spec.has_location:
            return None
        if spec.origin and os.path.realpath(spec.origin) in self.deny:
            raise ImportError(f"blowfish_nb.labs: refused: {name} differs from what pip installed: {spec.origin}",
                              name=name, path=spec.origin)
        for file in (spec.origin, spec.cached):
            if file and _changed_since(file, self.start_ns):
                raise ImportError(f"blowfish_nb.labs: refused: {name} was imported after the notebook ran and "
                                  f"changed since grading began: {file}", name=name, path=file)
        return None


def install_guard(start_ns: int, deny: frozenset = frozenset()) -> ImportGuard:
    """Put an :class:`ImportGuard` first on ``sys.meta_path`` (replacing an earlier one); it stays until exit."""
    remove_guard()
    guard = ImportGuard(start_ns, deny)
    sys.meta_path.insert(0, guard)
    return guard


def remove_guard() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, ImportGuard)]


def loaded_changed(start_ns: int) -> list[str]:
    """The files of the modules loaded in this process that changed since ``start_ns``."""
    files = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
    return sorted(f for f in files if isinstance(f, str) and _changed_since(f, start_ns))


def record_mismatches(tops) -> list[str]:
    """Python files (``.py``, ``.pth``) of the installed distributions providing the top-level packages ``tops``
    whose sha256 differs from their distribution's ``RECORD`` (written by pip at install time).

    A file planted by an earlier grading predates this one, so neither the snapshot nor the import guard (both
    relative to this grading's start) sees it (gamer35b's "persistent" variant: pandas' table formatter rewritten
    by one notebook, imported by otter's process while grading the next). Files a distribution lists without a
    sha256 (editable installs, conda or Debian packages) are not checked here: see :func:`unverified`.
    """
    return audit_records(tops)[0]


def unverified(tops) -> dict[str, list[str]]:
    """The distributions providing the top-level packages ``tops`` that list Python files (``.py``, ``.pth``) without
    a sha256 (installed by conda, a Linux distribution's package manager, an old ``setup.py install``), with those
    files: name -> paths. :func:`record_mismatches` cannot vouch for them.

    The grading plugin watches their files for the grading (:func:`snapshot`'s ``files``: a change made while the
    notebook runs refuses the grade), refuses one :func:`changed_after_install`, and names them in its report: a file
    rewritten by an earlier grading *and* given back a change time no later than the distribution's metadata cannot
    be found without a hash.
    """
    return audit_records(tops)[1]


def audit_records(tops) -> tuple[list[str], dict[str, list[str]]]:
    """:func:`record_mismatches` and :func:`unverified` in one pass over the distributions' records."""
    import base64
    import importlib.metadata as metadata

    owners = metadata.packages_distributions()
    bad, unhashed = [], {}
    for name in sorted({d for top in tops for d in owners.get(top, ())}):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for f in dist.files or ():
            if f.suffix not in (".py", ".pth"):
                continue
            path = Path(dist.locate_file(f))
            if f.hash is None or f.hash.mode != "sha256":
                unhashed.setdefault(dist.metadata["Name"] or name, []).append(str(path))
                continue
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode() != f.hash.value:
                bad.append(str(path))
    return sorted(bad), {k: sorted(v) for k, v in unhashed.items()}


#: a file of an unverified distribution changed this long after its metadata was written counts as changed since
#: it was installed (an installer writes a package's files and its metadata within seconds; pip's RECORD last)
INSTALL_WINDOW_NS = 600 * 10**9


def changed_after_install(found: dict[str, list[str]], window_ns: int = INSTALL_WINDOW_NS) -> list[str]:
    """The files of ``found`` (:func:`unverified`'s: distribution name -> its unhashed Python files) whose change time
    is more than ``window_ns`` after the newest change time of the distribution's own metadata files (``METADATA``/
    ``PKG-INFO``, ``RECORD``/``installed-files.txt``...): rewritten after the installer wrote them. A process cannot
    set a change time back; it can only rewrite the metadata too (then nothing here finds it: the report says so)."""
    import importlib.metadata as metadata

    bad = []
    for name, files in found.items():
        try:
            meta = getattr(metadata.distribution(name), "_path", None)  # the .dist-info / .egg-info
            folder = Path(str(meta)) if meta else None
            stamp = (max(os.stat(m).st_ctime_ns for m in (folder.iterdir() if folder.is_dir() else [folder]))
                     if folder else None)
        except (OSError, ValueError, metadata.PackageNotFoundError):
            stamp = None
        if stamp is None:
            continue
        for path in files:
            try:
                if os.stat(path).st_ctime_ns > stamp + window_ns:
                    bad.append(str(path))
            except OSError:
                continue
    return sorted(bad)
