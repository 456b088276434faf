"""Lab 9's student notebook in a real JupyterLab, renamed as JupyterLab's *Duplicate* names a copy: it runs top to
bottom (the curator's service starts in the kernel, three analysts connect over 127.0.0.1, the service stops and
leaves no folder), and a wrong answer typed into a cell gets its one-line hint, without the value or a traceback.
Screenshot: ``test-artifacts/lab-09-wrong-answer-hint.png``.
"""

from __future__ import annotations

import shutil

import pytest

from tests.browser.conftest import ARTIFACTS, open_notebook, run_all, run_cell
from tests.browser.conftest import ERRORS_JS as _ERRORS
from tests.browser.conftest import output_text as _text
from tests.browser.conftest import wait_for_output_text as _wait_for
from tests.labs import built_lab, value_shown

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]

SLUG = "09-a-class-under-one-budget"
COPY = f"{SLUG}-Copy1.ipynb"

_SET_SOURCE = """([marker, text]) => {
    const cells = window.jupyterapp.shell.currentWidget.content.widgets;
    const cell = cells.find(c => c.model.type === 'code' && c.model.sharedModel.getSource().startsWith(marker));
    cell.model.sharedModel.setSource(text);
}"""


def test_lab_09_renamed_student_notebook_runs_and_a_wrong_answer_shows_its_hint(lab, page, tmp_path):
    built = built_lab(SLUG, tmp_path / "built")
    shutil.copy(built / SLUG / "student" / f"{SLUG}.ipynb", lab.root / COPY)
    open_notebook(page, lab, COPY)
    run_all(page)
    # the last cell ran: the second service stopped and its folder is gone
    last = _wait_for(page, "room2.stop()", r"folder left behind", timeout=240_000)
    assert "serving: False" in last and "folder left behind: False" in last, last
    assert page.evaluate(_ERRORS) == []  # no cell raised, with every answer still `...`
    assert "RemoteSession 'ana' at http://127.0.0.1:" in _text(page, "cleo = bf.connect(")
    assert "replace the `...`" in _text(page, 'grader.check("q1")')

    # the student predicts question 1 as if the curator had split the budget between the three analysts (1/3 − 0.3),
    # and checks (the hint for "a budget of her own", 1 − 0.3, is gone: it is the answer plus ben's 0.25)
    page.evaluate(_SET_SOURCE, ["ana_remaining =", "ana_remaining = 1 / 3 - 0.3"])
    run_cell(page, "ana_remaining = 1 / 3 - 0.3")
    run_cell(page, 'grader.check("q1")')
    out = _wait_for(page, 'grader.check("q1")', "whose releases are charged")
    hint, *rest = out.strip().splitlines()
    assert hint.startswith("q1 results: q1 (what ana has left on the shared account): not yet. Hint: ")
    assert len(rest) == 1 and rest[0].startswith("(first attempt, kept for your teacher: 0.0333"), out  # recorded
    assert "Traceback" not in out and not value_shown(hint, 0.45), out
    assert page.evaluate(_ERRORS) == []
    cell = page.locator(".jp-Cell", has_text='grader.check("q1")')
    cell.scroll_into_view_if_needed()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-OutputArea-output')].some(e => /whose releases are charged/.test("
        "e.innerText))", timeout=30_000)
    ARTIFACTS.mkdir(exist_ok=True)
    cell.screenshot(path=str(ARTIFACTS / "lab-09-wrong-answer-hint.png"))
    shown = page.locator(".jp-OutputArea-output", has_text="whose releases are charged").inner_text()
    assert "Hint:" in shown and "Traceback" not in shown  # what the student sees on the page
    assert (lab.root / "lab09-first-attempts.json").is_file()  # beside the notebook, for the teacher
