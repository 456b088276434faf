"""What the documentation build generates, checked without building it (docs/_site.py; the built site is
checked in a browser by tests/browser/test_docs_site.py)."""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS))
site = importlib.import_module("_site")

#: the public API the reference must cover (the docs issue's list)
COVERED = [
    "blowfish_nb", "blowfish_nb.policy", "blowfish_nb.mechanisms", "blowfish_nb.analysis", "blowfish_nb.accessor",
    "blowfish_nb.accounting", "blowfish_nb.release", "blowfish_nb.widgets", "blowfish_nb.service.launch",
    "blowfish_nb.service.client", "blowfish_nb.accuracy",
]


def test_every_public_class_and_function_is_documented_once():
    pages = site.api_pages()
    documented = [name for _, new, _, _ in pages.values() for name in new]
    assert len(documented) == len(set(documented))
    objects = {}
    for name in documented:
        module, _, attr = f"blowfish_nb.{name}".rpartition(".")
        objects[id(getattr(importlib.import_module(module), attr))] = name
    for module_name in COVERED:
        module = importlib.import_module(module_name)
        for name in site.public_names(module):
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isroutine(obj):
                assert id(obj) in objects, f"{module_name}.{name} is in no page of the API reference"
    # links to objects documented on another page name the page they are documented on
    for _, _, old, _ in pages.values():
        assert set(old) <= set(documented)


@pytest.mark.parametrize("line, expected", [
    ("the number of edges |E| of G", r"the number of edges \|E\| of G"),
    ("max |error| over ``|x|`` and :math:`|y|`", r"max \|error\| over ``|x|`` and :math:`|y|`"),
    (">>> abs(|x|)", ">>> abs(|x|)"),
    ("| a | b |", "| a | b |"),
    ("a || b, x | y", "a || b, x | y"),
])
def test_bars_in_docstrings_are_escaped_outside_literals(line, expected):
    lines = [line]
    site.escape_bars(None, "function", "f", None, {}, lines)
    assert lines == [expected]


def test_course_copies_student_notebooks_only(tmp_path):
    built = tmp_path / "labs"
    for lab in ("01-neighbours", "02-sensitivity"):
        for version in ("student", "solution", "autograder"):
            folder = built / lab / version
            folder.mkdir(parents=True)
            nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"{lab} {version}")])
            nbformat.write(nb, folder / f"{lab}.ipynb")
    (built / "03-empty" / "student").mkdir(parents=True)
    course = tmp_path / "course"
    course.mkdir()
    names = site.copy_student_labs(built, course / "labs")
    assert names == ["01-neighbours", "02-sensitivity"]
    for name in names:
        text = nbformat.read(course / "labs" / f"{name}.ipynb", as_version=4).cells[0].source
        assert text == f"{name} student"
    site.write_course_toc(course, names)
    assert "labs/01-neighbours" in (course / "_toc.md").read_text() and "teaching" not in (course / "_toc.md").read_text()
    (course / "teaching.md").write_text("# Teaching\n")
    site.write_course_toc(course, [])
    assert re.search(r"^teaching$", (course / "_toc.md").read_text(), re.M)


def test_every_paper_reproduction_has_a_page_that_includes_its_results():
    pages = {p.stem: p.read_text() for p in (DOCS / "reproductions").glob("*.md") if p.stem != "index"}
    for script in (ROOT / "benchmarks").glob("reproduce_*.py"):
        name = script.stem.removeprefix("reproduce_")
        assert name in pages, f"{script.name} has no page in docs/reproductions/"
    index = (DOCS / "reproductions" / "index.md").read_text()
    for name, text in pages.items():
        included = re.findall(r"```\{include\} \.\./\.\./benchmarks/results/(\S+)\.md", text)
        assert included == [name], name
        assert (ROOT / "benchmarks" / "results" / f"{name}.md").exists()
        assert re.search(rf"^{name}$", index, re.M), f"{name} is not in the reproductions toctree"
