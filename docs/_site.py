"""What ``docs/conf.py`` generates at build time (checked by ``tests/test_docs_build.py``).

* The course: the labs' **student** notebooks copied from ``build/labs/<NN-slug>/student/`` (never a solution), and
  the course's toctree over the labs and the teacher's page that exist (labs land one by one).
* The API reference: one page per area of the package; each public class or function is documented once, on the
  first area that lists it, and linked from the others.
* A docstring hook: ``|E|`` in plain text is a size or an absolute value here, never an RST substitution.
"""

from __future__ import annotations

import importlib
import inspect
import re
import shutil
from pathlib import Path

# -- the course -------------------------------------------------------------------------------------------------
def copy_student_labs(built: Path, dest: Path) -> list[str]:
    """Copy each ``built/<NN-slug>/student/*.ipynb`` to ``dest/<NN-slug>.ipynb`` (``dest`` emptied first); the names.

    Only the ``student`` folder is read: solutions and autograders are never copied.
    """
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    names = []
    for lab in sorted(p for p in built.iterdir() if p.is_dir()) if built.is_dir() else []:
        preferred = lab / "student" / f"{lab.name}.ipynb"  # build/labs/NN-slug/student/NN-slug.ipynb
        found = [preferred] if preferred.exists() else sorted((lab / "student").glob("*.ipynb"))
        if found:
            shutil.copyfile(found[0], dest / f"{lab.name}.ipynb")
            names.append(lab.name)
    return names


def write_course_toc(course: Path, labs: list[str]) -> None:
    """Write ``course/_toc.md``: a toctree over the teacher's page (when it exists) and ``labs/<name>`` per lab, and a
    download link to each lab's ``.ipynb``."""
    entries = (["teaching"] if (course / "teaching.md").exists() else []) + [f"labs/{name}" for name in labs]
    toc = ["```{toctree}", ":maxdepth: 1", "", *entries, "```", ""] if entries else ["*No lab has been built yet.*", ""]
    if labs:  # the student notebooks as files to open in JupyterLab (Sphinx copies them into _downloads/)
        toc += ["Download a student notebook:", ""]
        toc += [f"* {{download}}`{name}.ipynb <labs/{name}.ipynb>`" for name in labs] + [""]
    (course / "_toc.md").write_text("\n".join(toc), encoding="utf-8")


# -- API reference: one page per area, each object documented once ----------------------------------------------------
#: (page, title, modules whose ``__all__`` the page lists). An object listed by two areas is documented on the first
#: and linked from the second.
API_AREAS = [
    ("policy", "Policies", ["blowfish_nb.policy"]),
    ("domain", "Domains, bins and units", ["blowfish_nb.domain", "blowfish_nb.units", "blowfish_nb.spec"]),
    ("workload", "Workloads and strategies", [
        "blowfish_nb.workload", "blowfish_nb.operators", "blowfish_nb.strategies", "blowfish_nb.ranges",
        "blowfish_nb.queries",
    ]),
    ("mechanisms", "Mechanisms", ["blowfish_nb.mechanisms", "blowfish_nb.mechanisms.noise"]),
    ("analysis", "Analysis: error, lower bounds, audit", ["blowfish_nb.analysis"]),
    ("accuracy", "Accuracy: (α, β) → ε", ["blowfish_nb.accuracy"]),
    ("accessor", "The df.blowfish accessor", ["blowfish_nb.accessor"]),
    ("session", "Sessions and releases", ["blowfish_nb.accounting", "blowfish_nb.session_file", "blowfish_nb.request",
                                          "blowfish_nb.release", "blowfish_nb.planning"]),
    ("constraints", "Count constraints", ["blowfish_nb.constraints"]),
    ("kmeans", "k-means", ["blowfish_nb.clustering"]),
    ("datasets", "Data sets", ["blowfish_nb.datasets"]),
    ("exceptions", "Exceptions", ["blowfish_nb.exceptions"]),
    ("service", "The analyst service", [
        "blowfish_nb.service.launch", "blowfish_nb.service.client", "blowfish_nb.service.config",
        "blowfish_nb.service.core", "blowfish_nb.service.app", "blowfish_nb.service.ledger",
        "blowfish_nb.service.chain", "blowfish_nb.service.audit", "blowfish_nb.service.migrate",
    ]),
    ("widgets", "Widgets", ["blowfish_nb.widgets"]),
    ("labs", "Labs", ["blowfish_nb.labs.build", "blowfish_nb.labs"]),
    ("toplevel", "The blowfish_nb namespace", ["blowfish_nb"]),
]


def public_names(module) -> list[str]:
    """The public classes, functions and constants of ``module`` (its ``__all__``, or what it defines), no modules."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items()
                 if not n.startswith("_") and getattr(v, "__module__", "").startswith(module.__name__)
                 and (inspect.isclass(v) or inspect.isfunction(v))]
    return [n for n in names if not inspect.ismodule(getattr(module, n))]


def api_pages() -> dict[str, tuple[str, list[str], list[str], str | None]]:
    """page → (title, objects documented there, objects documented elsewhere, the module whose docstring heads it).

    Names are relative to ``blowfish_nb`` (``policy.Policy``). A module that does not exist (yet) is skipped.
    """
    pages = {}
    seen: dict[int, str] = {}
    for page, title, modules in API_AREAS:
        new, old, intro = [], [], None
        for module_name in modules:
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue
            if intro is None and module.__doc__:
                intro = module_name
            for name in public_names(module):
                obj = getattr(module, name)
                if not (inspect.isclass(obj) or inspect.isroutine(obj)):
                    continue  # constants are described in their module's docstring
                dotted = f"{module_name}.{name}".removeprefix("blowfish_nb.")
                if id(obj) in seen:
                    if seen[id(obj)] not in old:
                        old.append(seen[id(obj)])
                else:
                    seen[id(obj)] = dotted
                    new.append(dotted)
        if new or old:
            pages[page] = (title, new, old, intro)
    return pages


def write_api_pages(dest: Path) -> None:
    """Write one reST page per area into ``dest`` (emptied first); autosummary writes the stubs beside them."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for page, (title, new, old, intro) in api_pages().items():
        lines = [title, "=" * (2 * len(title)), ""]
        if intro:
            lines += [f".. automodule:: {intro}", "   :no-members:", "   :no-index:", ""]
        # every entry below is a dotted name relative to the package, not to the module above
        lines += [".. currentmodule:: blowfish_nb", ""]
        if new:
            lines += [".. autosummary::", "   :toctree: .", "   :nosignatures:", ""] + [f"   {n}" for n in new] + [""]
        if old:
            lines += ["Documented elsewhere in this reference:", "", ".. autosummary::", "   :nosignatures:", ""]
            lines += [f"   {n}" for n in old] + [""]
        (dest / f"{page}.rst").write_text("\n".join(lines), encoding="utf-8")


# -- docstrings: |x| is an absolute value or a size in this package, never an RST substitution ------------------------
_BARS = re.compile(r"(?<![\w`\\|])\|(?=\S)([^|`]*?\S)\|(?![\w`|])")
_LITERAL = re.compile(r"(``.*?``|:\w+:`[^`]*`|`[^`]*`)")


def escape_bars(app, what, name, obj, options, lines: list[str]) -> None:
    """``autodoc-process-docstring``: render ``|E|`` in plain docstring text as bars, not as an undefined substitution.

    Literals (``code``, roles), doctest lines and table rows are left alone.
    """
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if "|" not in line or stripped.startswith((">>>", "...", "|", "+")):
            continue
        parts = _LITERAL.split(line)
        lines[i] = "".join(p if j % 2 else _BARS.sub(r"\\|\1\\|", p) for j, p in enumerate(parts))
