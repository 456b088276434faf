"""Lab 1's solution notebook in a real JupyterLab and Chromium: the policy canvases are drawn, every check
passes, and the student's edit on the last canvas (add the shortcut 25,000–50,000 — 150,000–175,000 with two
clicks) reaches the kernel, which then measures d_G after the edit. Screenshots: ``test-artifacts/lab-01-*.png``.
"""

from __future__ import annotations

import re
import shutil

import pytest

from tests.browser.conftest import ARTIFACTS, cell_text, open_notebook, run_all, wait_until_settled
from tests.labs import solution_notebook

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

SLUG = "01-neighbours-and-policies"
#: every code cell's outputs, as JSON text, from the notebook's model
OUTPUTS = """() => window.jupyterapp.shell.currentWidget.content.widgets
    .filter(c => c.model.type === 'code').map(c => JSON.stringify(c.model.outputs.toJSON())).join('\\n')"""


def _widget(page):
    """The edit canvas: the lab's last canvas widget."""
    return page.locator(".blowfish-canvas-widget").last


def _point(page, node_id: str) -> tuple[float, float]:
    """Where cytoscape draws a node on screen (its rendered position plus the container's live rectangle)."""
    handle = _widget(page).locator(".blowfish-canvas").element_handle()
    return tuple(page.evaluate(
        """([box, id]) => { const p = box.__cy.getElementById(id).renderedPosition();
                           const r = box.getBoundingClientRect(); return [r.left + p.x, r.top + p.y]; }""",
        [handle, node_id],
    ))


def _settle(page) -> None:
    """The edit canvas is drawn and has not moved for 600 ms (the widgets above it are laid out)."""
    wait_until_settled(page, _widget(page).locator(".blowfish-canvas").element_handle())


def test_lab_01_canvases_checks_and_the_students_edit(lab, page, tmp_path):
    shutil.copy(solution_notebook(SLUG, tmp_path / "labs"), lab.root / f"{SLUG}.ipynb")
    open_notebook(page, lab, f"{SLUG}.ipynb")
    run_all(page)

    # seven canvases: line, dp (10 bins + ⊥), bounded (45 edges), θ = 2, partition, attribute grid, the edit one
    page.wait_for_function("() => document.querySelectorAll('.blowfish-canvas[data-ready=\"1\"]').length >= 7",
                           timeout=180_000)
    drawn = page.eval_on_selector_all(".blowfish-canvas", "els => els.map(e => e.dataset.edges)")
    assert drawn[:3] == ["9", "10", "45"]
    assert drawn[-1] == "9"  # the edit canvas starts as the line policy
    page.wait_for_function(f"() => ({OUTPUTS})().includes('d_G after your edit')", timeout=120_000)
    outputs = page.evaluate(OUTPUTS)  # JupyterLab draws only the cells near the view: read the notebook's model
    title = r"\((?:[^()]|\([^()]*\))*\)"  # a question's title, which may hold one pair of brackets: e^(ε·d)
    quiet = {int(q) for q in re.findall(rf"q(\d+) results: q\d+ {title}: no known mistake recognised", outputs)}
    assert quiet == set(range(1, 9)), f"checks of the solution without a hint: {sorted(quiet)}"
    assert "d_G after your edit = 7" in outputs  # before the student's edit: the line policy
    widget = _widget(page)
    widget.scroll_into_view_if_needed()
    _settle(page)
    ARTIFACTS.mkdir(exist_ok=True)
    widget.screenshot(path=str(ARTIFACTS / "lab-01-edit-canvas-before.png"))

    # the student's edit: "add edge", then the two nodes
    widget.locator("button.mode-add").click()
    _settle(page)
    page.mouse.click(*_point(page, "c1"))
    page.wait_for_timeout(150)
    page.mouse.click(*_point(page, "c6"))
    box = widget.locator(".blowfish-canvas").element_handle()
    page.wait_for_function("(b) => b.dataset.edges === '10' && b.dataset.ready === '1'", arg=box, timeout=30_000)
    message = widget.locator(".blowfish-canvas-message")
    page.wait_for_function("(el) => el.innerText.includes('added an edge')", arg=message.element_handle())
    assert message.inner_text() == "✓ added an edge between salary 25,000–50,000 and salary 150,000–175,000"
    assert widget.locator(".blowfish-canvas-facts").inner_text().startswith("10 edges")
    _settle(page)
    widget.screenshot(path=str(ARTIFACTS / "lab-01-edit-canvas-after.png"))

    # the kernel holds the edited policy: re-running the cell measures the shortcut
    found = cell_text(page, "d_G after your edit", r"(10) edges; d_G after your edit = (\d+)")
    assert found.groups() == ("10", "3")
    page.screenshot(path=str(ARTIFACTS / "lab-01-after-edit.png"))
