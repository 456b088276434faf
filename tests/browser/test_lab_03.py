"""Lab 3 in a real JupyterLab: the solution notebook runs, and one click on the explorer's trade-off plot.

The lab's last part asks the student to click a point of the privacy–utility plot; this test clicks the θ = 1
point of the ε = 0.1 series and checks that the kernel recomputed the release there: the readout names the line
policy and the smaller Δ of the query (1 instead of 2 at θ = 2), as question 1 of the lab teaches.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser.conftest import ARTIFACTS, open_notebook, run_all

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]

SLUG = "03-ranges"
SOURCE = Path(__file__).resolve().parents[2] / "notebooks" / "labs" / "source"
EXPLORER = ".blowfish-explorer"
READOUT = f"document.querySelector('{EXPLORER} .blowfish-readout').innerText"


def _solution_notebook(dest: Path) -> Path:
    """The lab's solution version, from the labs' build (otter assign without running its tests)."""
    try:
        from blowfish_nb.labs.build import build
    except ImportError:  # before the build module landed: otter assign directly
        out = dest / "dist"
        subprocess.run([sys.executable, "-m", "otter", "assign", "--no-run-tests", str(SOURCE / f"{SLUG}.ipynb"),
                        str(out)], check=True, capture_output=True)
        return out / "autograder" / f"{SLUG}.ipynb"
    build(dest, names=[SLUG], run_tests=False)
    return dest / SLUG / "solution" / f"{SLUG}.ipynb"


def test_lab_03_click_on_the_tradeoff_plot_moves_the_release(lab, page, tmp_path):
    solution = _solution_notebook(tmp_path / "built")
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
    assert "ε = 0.1 " in readout.inner_text() and "threshold θ=2" in readout.inner_text()
    explorer.screenshot(path=str(ARTIFACTS / "lab-03-explorer-before-click.png"))

    tradeoff = f"{EXPLORER} .blowfish-tradeoff"
    dots = page.locator(f"{tradeoff} g.object_grp").first.locator("path.dot")  # the ε = 0.1 series
    dots.first.click()  # its first point: θ = 1
    page.wait_for_function(f"() => /Δ of the query = 1 /.test({READOUT}) && /line on salary/.test({READOUT})",
                           timeout=60_000)
    text = readout.inner_text()
    assert "ε = 0.1 " in text, text
    assert page.locator(f"{EXPLORER} .blowfish-theta .widget-readout").inner_text() == "1"
    explorer.screenshot(path=str(ARTIFACTS / "lab-03-explorer-after-click.png"))
