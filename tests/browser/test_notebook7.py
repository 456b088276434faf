"""Both notebooks in Notebook 7 (the JupyterLab-based classic UI) and Chromium: cells run, widgets draw and talk.

The same helpers drive JupyterLab and Notebook 7 (both expose ``window.jupyterapp``); these tests only start the
other server (fixture ``notebook7``) and check what a user of the classic UI sees.
"""

import re

import pytest

from tests.browser.conftest import ARTIFACTS, cell_text, drag, open_notebook, run_all

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

BARS = ".blowfish-explorer .blowfish-bars rect.bar"
HEIGHTS = "els => els.map(e => e.getAttribute('height')).join(',')"
#: every code cell has run (an execution count) and the kernel is idle again
ALL_RAN = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const code = panel.content.widgets.filter(c => c.model.type === 'code');
    const kernel = panel.sessionContext.session.kernel;
    return code.length > 0 && code.every(c => c.model.executionCount !== null) && kernel.status === 'idle';
}"""
#: the error outputs (traceback) of every code cell: ename and evalue
ERRORS = """() => window.jupyterapp.shell.currentWidget.content.widgets
    .filter(c => c.model.type === 'code')
    .flatMap(c => c.model.outputs.toJSON().filter(o => o.output_type === 'error'))
    .map(o => o.ename + ': ' + o.evalue)"""


def _run_all_without_errors(page) -> None:
    run_all(page)
    page.wait_for_function(ALL_RAN, timeout=180_000)
    assert page.evaluate(ERRORS) == []


def test_quickstart_runs_and_the_explorer_draws_and_talks(notebook7, page):
    open_notebook(page, notebook7, "quickstart.ipynb")
    assert page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"  # not JupyterLab
    assert "/notebooks/quickstart.ipynb" in page.url
    _run_all_without_errors(page)

    # the explorer's bars (50 true + 50 noisy) and the cytoscape canvas (threshold θ = 3 on 50 bins) are drawn
    page.wait_for_function(f"() => document.querySelectorAll('{BARS}').length >= 100", timeout=60_000)
    canvas = page.wait_for_selector(".blowfish-explorer .blowfish-canvas[data-ready='1']")
    assert canvas.get_attribute("data-nodes") == "50"
    assert canvas.get_attribute("data-edges") == str(49 + 48 + 47)
    assert canvas.query_selector("canvas") is not None
    heights = page.eval_on_selector_all(BARS, HEIGHTS).split(",")
    assert sum(float(h) > 0 for h in heights) > 50  # bars with a real height, not an empty frame
    page.wait_for_selector("text=kernel sees epsilon = 1,")
    page.screenshot(path=str(ARTIFACTS / "notebook7-quickstart.png"), full_page=True)

    # drag the ε handle to the left (smaller ε, more noise): new bars, and the kernel sees the slider's value
    before = page.eval_on_selector_all(BARS, HEIGHTS)
    drag(page, ".blowfish-epsilon .noUi-handle", -35)
    page.wait_for_function(
        f"before => Array.from(document.querySelectorAll('{BARS}'))"
        ".map(e => e.getAttribute('height')).join(',') !== before",
        arg=before, timeout=30_000,
    )
    slider_eps = float(page.locator(".blowfish-epsilon .widget-readout").inner_text())
    assert 0.001 < slider_eps < 1.0
    m = cell_text(page, "# What the kernel holds now", r"kernel sees epsilon = (?!1,)([0-9.e+-]+),")
    assert float(m.group(1)) == pytest.approx(slider_eps, rel=5e-3)  # the readout shows 3 significant digits
    page.screenshot(path=str(ARTIFACTS / "notebook7-quickstart-slider.png"), full_page=True)


def test_keyboard_moves_the_epsilon_slider(notebook7, page):
    """Issue 28 (7): Notebook 7 reads keydowns in the capture phase (its app starts without bubblingKeydown), so
    ArrowLeft on a focused handle ran notebook:move-cursor-heading-above-or-collapse and never reached the slider.
    The canvas's front end prevents the default of slider keys aimed at a handle inside the explorer from a
    window-level capture listener, which Lumino respects and noUiSlider ignores (js/canvas.js keepSliderKeys)."""
    open_notebook(page, notebook7, "quickstart.ipynb")
    _run_all_without_errors(page)
    page.wait_for_selector("text=kernel sees epsilon = 1,")
    handle = page.locator(".blowfish-epsilon .noUi-handle")
    handle.scroll_into_view_if_needed()
    handle.focus()
    handle.press("ArrowLeft")
    page.wait_for_function("() => document.querySelector('.blowfish-epsilon .widget-readout').innerText !== '1.00'",
                           timeout=10_000)
    slider_eps = float(page.locator(".blowfish-epsilon .widget-readout").inner_text())
    assert slider_eps < 1.0  # one step down the log scale
    m = cell_text(page, "# What the kernel holds now", r"kernel sees epsilon = (?!1,)([0-9.e+-]+),")
    assert float(m.group(1)) == pytest.approx(slider_eps, rel=5e-3)  # the kernel got the key's move


def test_opened_readout_details_stay_open_while_epsilon_moves(notebook7, page):
    """Issue 28 (6) in Notebook 7: the readout (an anywidget, tests/widgets/test_readout.py) keeps the details the
    user opened open across ε steps, and closed ones closed (the JupyterLab side is in test_explorer_views.py)."""
    from tests.browser.test_explorer_views import details_survive_epsilon_steps

    open_notebook(page, notebook7, "quickstart.ipynb")
    _run_all_without_errors(page)
    page.wait_for_selector("text=kernel sees epsilon = 1,")
    details_survive_epsilon_steps(page)


def test_curator_and_analyst_runs_and_one_run_charges_the_session(notebook7, page):
    open_notebook(page, notebook7, "curator_and_analyst.ipynb")
    _run_all_without_errors(page)
    panel = ".blowfish-analyst"
    page.wait_for_selector(f"{panel} .blowfish-cost:has-text('this release will cost')")
    cost = float(re.search(r"this release will cost ε ?= ?([0-9.e+-]+)",
                           page.locator(f"{panel} .blowfish-cost").inner_text()).group(1))
    label = page.locator(f"{panel} .blowfish-budget-label")
    assert "ε left 1 of 1" in label.inner_text()

    run = page.locator(f"{panel} .blowfish-run")
    run.scroll_into_view_if_needed()
    run.click()
    page.wait_for_selector(f"{panel} .blowfish-message:has-text('released')")
    page.wait_for_function(f"() => !/ε left 1 of/.test(document.querySelector('{panel} .blowfish-budget-label')"
                           ".innerText)", timeout=30_000)
    left = float(re.search(r"ε left ([0-9.e+-]+)", label.inner_text()).group(1))
    assert left == pytest.approx(1 - cost, rel=1e-2)  # charged what the panel quoted before the click
    page.screenshot(path=str(ARTIFACTS / "notebook7-analyst.png"), full_page=True)

    m = cell_text(page, "# The session's books", r"spent = ([0-9.e+-]+), remaining = ([0-9.e+-]+), releases = 1")
    assert float(m.group(2)) == pytest.approx(left, rel=1e-3)
    assert float(m.group(1)) == pytest.approx(cost, rel=1e-2)
