"""Lab 6 in a real JupyterLab: the solution notebook runs, and one real click on the panel's Run spends budget.

The lab's last part asks the student to press Run on the analyst panel and watch the budget bar move; this test
does exactly that, then checks that the kernel's session charged the quoted ε (the label reads the session) and
that the bar drew the new balance.
"""

import re
import shutil

import pytest

from tests.browser.conftest import ARTIFACTS, open_notebook, run_all
from tests.browser.conftest import ERRORS_JS as _ERRORS
from tests.browser.conftest import wait_for_outputs as _wait_for_output
from tests.labs import solution_notebook

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]

SLUG = "06-spending-a-budget"
PANEL = ".blowfish-analyst"
COST = re.compile(r"this release will cost ε = ([0-9.]+)")
LEFT = re.compile(r"ε left ([0-9.]+) of ([0-9.]+) \(spent ([0-9.]+)\)")


def _bar_width(page) -> float:
    """The drawn width of the budget bar's filled part, as a fraction of the whole bar."""
    return page.evaluate(
        """(sel) => {
            const bar = document.querySelector(sel + ' .blowfish-budget .progress-bar');
            const track = bar.parentElement.getBoundingClientRect();
            return bar.getBoundingClientRect().width / track.width;
        }""",
        PANEL,
    )


def test_lab_06_run_from_the_panel_moves_the_budget_bar(lab, page, tmp_path):
    solution = solution_notebook(SLUG, tmp_path / "built")
    shutil.copy(solution, lab.root / f"{SLUG}.ipynb")
    open_notebook(page, lab, f"{SLUG}.ipynb")
    run_all(page)
    cost = page.locator(f"{PANEL} .blowfish-cost")
    cost.wait_for(timeout=180_000)
    page.wait_for_function(f"() => /this release will cost/.test(document.querySelector('{PANEL} .blowfish-cost')"
                           ".innerText)", timeout=60_000)
    # the whole notebook ran: the last check (question 5, after the panel) returned its result to the notebook
    # (read from the notebook model, so it does not matter whether that cell is scrolled into view)
    out = _wait_for_output(page, 'grader.check("q5")', r"q5 results: .*no known mistake recognised")  # the solution: no hint, no verdict
    assert "not yet" not in out
    assert page.evaluate(_ERRORS) == []  # no cell raised
    label = page.locator(f"{PANEL} .blowfish-budget-label")
    label.scroll_into_view_if_needed()
    left, budget, spent = map(float, LEFT.search(label.inner_text()).groups())
    assert (left, budget, spent) == (1.0, 1.0, 0.0)
    assert _bar_width(page) == pytest.approx(1.0, abs=0.02)
    quoted = float(COST.search(cost.inner_text()).group(1))
    assert 0 < quoted < 1
    page.locator(PANEL).screenshot(path=str(ARTIFACTS / "lab-06-panel-before-run.png"))

    page.locator(f"{PANEL} .blowfish-run").click()  # the student's click
    page.wait_for_function(f"() => document.querySelectorAll('{PANEL} .blowfish-history tr').length === 2")
    page.wait_for_function(f"() => /spent 0\\.[0-9]/.test(document.querySelector('{PANEL} .blowfish-budget-label')"
                           ".innerText)")
    left, budget, spent = map(float, LEFT.search(label.inner_text()).groups())
    # the kernel's session charged what the panel quoted (4 significant digits shown), no more, no less
    assert spent == pytest.approx(quoted, rel=1e-3)
    assert left == pytest.approx(budget - quoted, rel=1e-3)
    page.wait_for_timeout(500)  # the bar's width is animated by CSS
    assert _bar_width(page) == pytest.approx(left / budget, abs=0.02)
    assert "released histogram of age" in page.locator(f"{PANEL} .blowfish-message").inner_text()
    page.locator(PANEL).screenshot(path=str(ARTIFACTS / "lab-06-panel-after-run.png"))
