"""What the documentation build generates, checked without building it (docs/_site.py; the built site is
checked in a browser by tests/browser/test_docs_site.py)."""

from __future__ import annotations

import importlib
import inspect
import math
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


figures = importlib.import_module("_figures")


def test_tables_and_numbers_are_read_as_the_results_files_write_them():
    text = ("# Title\n\n## Exact\n\n| θ | ε=0.1 | ε=1.0 |\n|---|---|---|\n| full | 1.567e+05 | 1,565 |\n"
            "| 1 | 399.5 (3.1–7.0) | **VIOLATION** |\n\nprose | not a table\n\n| a | b |\n|:--|--:|\n| x | 2 |\n")
    first, second = figures.read_tables(text)
    assert first.heading == "Exact" and first.header == ["θ", "ε=0.1", "ε=1.0"]
    assert first.rows == [["full", "1.567e+05", "1,565"], ["1", "399.5 (3.1–7.0)", "**VIOLATION**"]]
    assert [figures.number(c) for c in first.rows[0][1:]] == [1.567e5, 1565.0]
    assert figures.number(first.rows[1][1]) == 399.5 and math.isnan(figures.number(first.rows[1][2]))
    assert second.rows == [["x", "2"]] and second.column("b") == 1
    with pytest.raises(KeyError, match="no column 'c'"):
        second.column("c")


def test_every_reproduction_page_shows_the_figure_drawn_from_its_own_results(tmp_path):
    written = figures.write_figures(ROOT / "benchmarks" / "results", tmp_path)
    assert sorted(p.name for p in written) == sorted(f"{name}.png" for name in figures.FIGURES)
    for path in written:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
        page = (DOCS / "reproductions" / path.name.replace(".png", ".md")).read_text()
        assert f"```{{figure}} _figures/{path.name}" in page
        alt = re.search(r"^:alt: (.*)$", page, re.M)
        assert alt and alt.group(1).strip() and "\n:" not in alt.group(1)  # one line (a multi-line alt broke a caption)
