"""Lab 4 in a real JupyterLab: the solution notebook runs, both canvases draw, and the θ box on the first one.

The lab draws G⁴ (54 edges, cycles) and its spanning tree H^θ (15 edges, a tree) and asks the student to type
another θ in the canvas's box and press *apply θ*, then read the policy back in Python. This test types θ = 1:
the drawing becomes the line (15 edges, a tree), and the kernel's ``canvas.policy`` says the same.
"""

import shutil

import pytest

from tests.browser.conftest import ARTIFACTS, cell_text, open_notebook, run_all
from tests.labs import solution_notebook

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]

SLUG = "04-spanning-trees"
WIDGET = ".blowfish-canvas-widget"
READ_BACK = "# the policy the canvas holds now"


def _drawn(page, index: int, edges: int) -> None:
    page.wait_for_function(
        "([sel, i, n]) => { const b = document.querySelectorAll(sel)[i];"
        " return !!b && b.dataset.ready === '1' && b.dataset.edges === String(n); }",
        arg=[f"{WIDGET} .blowfish-canvas", index, edges], timeout=120_000,
    )


def _facts(page, index: int, text: str) -> None:
    """Wait until the facts line under canvas ``index`` starts with ``text``."""
    page.wait_for_function(
        "([sel, i, t]) => { const f = document.querySelectorAll(sel)[i]; return !!f && f.textContent.startsWith(t); }",
        arg=[f"{WIDGET} .blowfish-canvas-facts", index, text], timeout=60_000,
    )


def test_lab_04_canvases_draw_the_policy_and_its_tree_and_the_theta_box_redraws(lab, page, tmp_path):
    solution = solution_notebook(SLUG, tmp_path / "built")
    shutil.copy(solution, lab.root / f"{SLUG}.ipynb")
    open_notebook(page, lab, f"{SLUG}.ipynb")
    run_all(page)
    page.locator(WIDGET).first.wait_for(timeout=240_000)
    first, tree = page.locator(WIDGET).nth(0), page.locator(WIDGET).nth(1)
    _drawn(page, 0, 54)  # G⁴ on 16 cells: 15 + 14 + 13 + 12 edges
    tree.wait_for(timeout=120_000)
    _drawn(page, 1, 15)  # H^θ: a spanning tree of 16 cells
    _facts(page, 0, "54 edges · 1 component · has cycles")
    _facts(page, 1, "15 edges · 1 component · a tree")
    assert not page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
                            ":has-text('Traceback')").count()
    first.scroll_into_view_if_needed()
    first.screenshot(path=str(ARTIFACTS / "lab-04-policy-g4.png"))
    tree.scroll_into_view_if_needed()
    tree.screenshot(path=str(ARTIFACTS / "lab-04-tree-htheta.png"))

    # the student's interaction: θ = 1 in the first canvas's box, then "apply θ"
    first.scroll_into_view_if_needed()
    first.locator("input.blowfish-canvas-theta").fill("1")
    first.locator(".blowfish-canvas-button.apply-theta").click()
    _drawn(page, 0, 15)
    _facts(page, 0, "15 edges · 1 component · a tree")
    first.screenshot(path=str(ARTIFACTS / "lab-04-policy-theta1.png"))
    m = cell_text(page, READ_BACK, r"— (\d+) edges; a tree\? (True|False)")
    assert m is not None and m.groups() == ("15", "True"), m
