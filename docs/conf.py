"""Sphinx configuration for the blowfish_nb documentation site (``make docs``: warnings are errors).

Generated at build time, never committed (all git-ignored):

* ``docs/course/labs/``: the labs' **student** notebooks, copied from ``build/labs/<NN-slug>/student/`` (built with
  :func:`blowfish_nb.labs.build.build` when ``build/labs`` is missing); shown unexecuted, solutions never published.
* ``docs/api/generated/``: one page per API area and autosummary's stub per object.
* ``docs/reproductions/_figures/``: the reproduction pages' figures, drawn with matplotlib from the results files the
  pages include (``docs/_figures.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path[:0] = [str(ROOT), str(DOCS)]  # the package, and _site.py beside this file

import blowfish_nb  # noqa: E402
from _figures import write_figures  # noqa: E402
from _site import copy_student_labs, escape_bars, write_api_pages, write_course_toc  # noqa: E402

project = "blowfish_nb"
author = "the blowfish_nb authors"
copyright = "the blowfish_nb authors"
release = version = blowfish_nb.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
]

exclude_patterns = ["_build", "**.ipynb_checkpoints", "_templates", "images", "course/_toc.md"]
templates_path = ["_templates"]

# -- MyST and MyST-NB -------------------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "cache"
nb_execution_cache_path = str(ROOT / "build" / "docs" / "jupyter_cache")
nb_execution_timeout = 60
nb_execution_raise_on_error = True
nb_execution_show_tb = True
# Labs are shown as handed out (unexecuted, no solutions); the course section is for reading, not running.
nb_execution_excludepatterns = ["course/labs/*"]
nb_merge_streams = True

# -- API reference ----------------------------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types; signatures stay short
numpydoc_show_class_members = False  # the class template documents members itself (no dangling stub links)
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()
intersphinx_mapping: dict = {}  # no internet in CI

# -- HTML -------------------------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "blowfish_nb"
html_static_path: list[str] = []

# -- Math: MathJax 2 served from the build (no CDN). jupyter-server-mathjax (the docs extra) ships MathJax with the
# TeX-AMS-MML_HTMLorMML-full configuration; its static folder is copied into _static/mathjax when the site is built.
try:
    import jupyter_server_mathjax
except ImportError as e:  # the docs extra is not installed: say so rather than fall back to a CDN
    raise ImportError('the docs need MathJax served locally: pip install "blowfish_nb[docs]" '
                      "(jupyter-server-mathjax)") from e
MATHJAX = Path(jupyter_server_mathjax.__file__).resolve().parent / "static"
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
# MyST marks each section tex2jax_ignore and each formula class "math" (MathJax 3's processHtmlClass); MathJax 2 is
# told the same, and to use the STIX-Web fonts, the only ones the package ships.
mathjax2_config = {
    "tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]], "processEscapes": True,
                "processClass": "math|output_area", "ignoreClass": "tex2jax_ignore|mathjax_ignore"},
    "HTML-CSS": {"availableFonts": [], "webFont": "STIX-Web", "imageFont": None, "preferredFont": None},
    "showMathMenu": False,
}
html_show_sourcelink = False
html_theme_options = {
    "navbar_start": ["navbar-logo"],
    "navbar_center": ["navbar-nav"],
    "navbar_end": ["search-button", "theme-switcher"],
    "navbar_persistent": [],
    "header_links_before_dropdown": 7,
    "icon_links": [],
    "secondary_sidebar_items": ["page-toc"],
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_context = {"default_mode": "light"}
html_sidebars = {"index": []}


def setup(app):
    # run before numpydoc (priority 500) so that its sections see the escaped text
    app.connect("autodoc-process-docstring", escape_bars, priority=400)
    app.connect("autodoc-process-docstring", _no_builtin_docstring, priority=300)
    app.connect("build-finished", _copy_mathjax)


_BUILTIN_DOCS = {" ".join((t.__doc__ or "").split()) for t in (bool, int, float, str, dict, list, tuple, type(None))}


def _no_builtin_docstring(app, what, name, obj, options, lines):
    """Drop the docstring of a built-in type that autodoc inherits for an undocumented property or attribute (a
    property ``linear`` overriding a class attribute ``linear: bool = False`` showed ``bool``'s docstring)."""
    if lines and " ".join(" ".join(lines).split()) in _BUILTIN_DOCS:
        lines.clear()


def _copy_mathjax(app, exception):
    """MathJax into ``_static/mathjax`` of an HTML build (``mathjax_path`` is relative to ``_static``)."""
    if exception is None and app.builder.format == "html":
        import shutil

        shutil.copytree(MATHJAX, Path(app.outdir) / "_static" / "mathjax", dirs_exist_ok=True)


# -- generated pages: the course (student notebooks only, a toctree over what exists) and the API reference ------
_built = Path(os.environ.get("BLOWFISH_DOCS_LABS", ROOT / "build" / "labs"))  # where `make labs` writes them
if not _built.is_dir():
    try:
        from blowfish_nb.labs.build import build as _build_labs
    except ImportError:  # the lab builder has not landed yet: the course lists the teacher's page only
        _build_labs = None
    if _build_labs is not None:
        _build_labs(_built, run_tests=False)
write_course_toc(DOCS / "course", copy_student_labs(_built, DOCS / "course" / "labs"))
write_api_pages(DOCS / "api" / "generated")
write_figures(ROOT / "benchmarks" / "results", DOCS / "reproductions" / "_figures")
