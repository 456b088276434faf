"""Lab 3 in a real JupyterLab: the solution notebook runs, and one click on the explorer's trade-off plot.

The lab's last part asks the student to click a point of the privacy–utility plot; this test clicks the θ = 1
point of the ε = 0.1 series and checks that the kernel recomputed the release there: the readout names the line
policy and the smaller Δ of the query (1 instead of 2 at θ = 2), as question 1 of the lab teaches.
"""

import shutil

import pytest

from tests.browser.conftest import ARTIFACTS, open_notebook, run_all
from tests.labs import solution_notebook

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]

SLUG = "03-ranges"
EXPLORER = ".blowfish-explorer"
READOUT = f"document.querySelector('{EXPLORER} .blowfish-readout').textContent"  # details included


def test_lab_03_click_on_the_tradeoff_plot_moves_the_release(lab, page, tmp_path):
    solution = solution_notebook(SLUG, tmp_path / "built")
    shutil.copy(solution, lab.root / f"{SLUG}.ipynb")
    open_notebook(page, lab, f"{SLUG}.ipynb")
    run_all(page)
    page.locator(f"{EXPLORER} .blowfish-readout").wait_for(timeout=240_000)
    page.wait_for_function(f"() => /θ = 2 bins/.test({READOUT}) && /Δ of the query = 2/.test({READOUT})",
                           timeout=120_000)
    # (the checks' results are asserted by tests/notebooks/test_labs.py; here: nothing the browser shows raised)
    assert not page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
                            ":has-text('Traceback')").count()
    explorer = page.locator(EXPLORER)
    explorer.scroll_into_view_if_needed()
    readout = page.locator(f"{EXPLORER} .blowfish-readout")
    assert "ε = 0.1 " in readout.text_content() and "threshold θ=2" in readout.text_content()
    explorer.screenshot(path=str(ARTIFACTS / "lab-03-explorer-before-click.png"))

    tradeoff = f"{EXPLORER} .blowfish-tradeoff"
    # the ε = 0.1 series' first point (θ = 1): each point is a g.object_grp, a series their parent; the current
    # point (a series of one, drawn first, under the others) is skipped
    page.evaluate_handle(
        """(sel) => [...new Set(Array.from(document.querySelectorAll(sel + ' g.object_grp')).map(g => g.parentElement))]
             .filter(g => g.children.length > 1)[0].children[0].querySelector('path.dot')""", tradeoff,
    ).as_element().click()
    page.wait_for_function(f"() => /Δ of the query = 1 /.test({READOUT}) && /line on salary/.test({READOUT})",
                           timeout=60_000)
    text = readout.text_content()
    assert "ε = 0.1 " in text, text
    assert page.locator(f"{EXPLORER} .blowfish-theta .widget-readout").inner_text() == "1"
    explorer.screenshot(path=str(ARTIFACTS / "lab-03-explorer-after-click.png"))
