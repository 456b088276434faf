"""Lab 8 in a real JupyterLab and Chromium, as a student works on it: the student version, renamed as a browser
download names it (``… (1).ipynb``), with a wrong answer for question 2 (``7.2``, one singular value per bin): its check cell shows
the one-line hint for that mistake (and the kept first attempt), no traceback and no value; every other check asks for an
answer. Screenshot: ``test-artifacts/lab-08-wrong-answer-hint.png``.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from tests.browser.conftest import ARTIFACTS, open_notebook, run_all
from tests.labs import built_lab

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]

SLUG = "08-strategies-and-lower-bounds"
RENAMED = f"{SLUG} (1).ipynb"
WRONG = "7.2"  # (Σλ)² over one column per bin (36/5), a mistake the hint table keeps (the choice hints of q3 are
# gone: a choice keeps at least three options unrecognised)

# Outputs of the notebook *model* (what the kernel sent): JupyterLab renders only the cells near the view.
_OUTPUTS = """(marker) => {
    const cells = window.jupyterapp.shell.currentWidget.content.widgets;
    const cell = cells.find(c => c.model.type === 'code' && c.model.sharedModel.getSource().includes(marker));
    if (!cell || cell.model.executionCount === null) return null;
    return JSON.stringify(cell.model.outputs.toJSON());
}"""
_SHOW = """async (marker) => {
    const panel = window.jupyterapp.shell.currentWidget;
    const i = panel.content.widgets.findIndex(c => c.model.sharedModel.getSource().includes(marker));
    panel.content.activeCellIndex = i;
    await panel.content.scrollToItem(i, 'center');
}"""


def _student_notebook(tmp_path, root):
    """The built student version with question 3 answered wrongly, saved under a renamed file name."""
    folder = built_lab(SLUG, tmp_path / "built")
    nb = json.loads((folder / SLUG / "student" / f"{SLUG}.ipynb").read_text(encoding="utf-8"))
    edited = 0
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and re.search(r"^sv_term = \.\.\.", source, re.M):
            cell["source"] = re.sub(r"^sv_term = \.\.\.", f"sv_term = {WRONG}", source, flags=re.M)
            edited += 1
    assert edited == 1
    (root / RENAMED).write_text(json.dumps(nb), encoding="utf-8")


def test_lab_08_a_wrong_answer_shows_its_one_line_hint(lab, page, tmp_path):
    _student_notebook(tmp_path, lab.root)
    open_notebook(page, lab, RENAMED)
    run_all(page)
    marker = 'grader.check("q2")'
    page.wait_for_function(f"(m) => {{ const o = ({_OUTPUTS})(m); return o !== null && /q2 results/.test(o); }}",
                           arg=marker, timeout=180_000)
    model = json.loads(page.evaluate(_OUTPUTS, marker))
    text = "".join(o.get("data", {}).get("text/plain", "") + o.get("text", "") for o in model)
    assert "not yet. Hint:" in text and "its columns are the policy's edges" in text, text
    assert "kept for your teacher: 7.2" in text  # the first attempt, kept for the teacher
    assert "Traceback" not in text and len(text.strip().splitlines()) == 2, text
    assert not any(o.get("output_type") == "error" for o in model)

    # what the student sees: the rendered output of that cell
    page.evaluate(_SHOW, marker)
    cell = page.locator(".jp-Notebook .jp-CodeCell", has_text=marker).first
    output = cell.locator(".jp-OutputArea-output").first
    output.wait_for(timeout=30_000)
    shown = output.inner_text()
    assert re.search(r"q2 results: q2 \(.*\): not yet\. Hint: .*its columns are the policy.s edges", shown), shown
    assert "Traceback" not in shown and "Error" not in shown
    assert not re.search(r"\d+\.\d{2,}", shown)  # no value: the hint holds words only
    cell.screenshot(path=str(ARTIFACTS / "lab-08-wrong-answer-hint.png"))

    # an unanswered question asks for an answer, in one line; no cell of the renamed notebook raised
    other = json.loads(page.evaluate(_OUTPUTS, 'grader.check("q4")') or "[]")
    other_text = "".join(o.get("data", {}).get("text/plain", "") for o in other)
    assert "replace the `...`" in other_text, other_text
    errors = page.evaluate("""() => window.jupyterapp.shell.currentWidget.content.widgets
        .filter(c => c.model.type === 'code').flatMap(c => c.model.outputs.toJSON())
        .filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue)""")
    assert errors == []
