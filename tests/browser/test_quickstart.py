"""The quickstart in a real JupyterLab and Chromium: bars and canvas drawn, the ε slider reaches the kernel."""

import re

import pytest

from tests.browser.conftest import open_notebook, run_all, run_last_cell, wait_until_still

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

BARS = ".blowfish-explorer .blowfish-bars rect.bar"
HEIGHTS = "els => els.map(e => e.getAttribute('height')).join(',')"


def test_quickstart_explorer_epsilon_slider(lab, page):
    open_notebook(page, lab, "quickstart.ipynb")
    run_all(page)

    # the explorer's bars (50 true + 50 noisy) and the real cytoscape canvas are drawn
    page.wait_for_function(f"() => document.querySelectorAll('{BARS}').length >= 100", timeout=120_000)
    canvas = page.wait_for_selector(".blowfish-canvas[data-ready='1']")
    assert canvas.get_attribute("data-nodes") == "50"
    assert canvas.get_attribute("data-edges") == str(49 + 48 + 47)  # threshold θ=3 on 50 bins
    assert canvas.query_selector("canvas") is not None  # cytoscape renders to <canvas> layers

    # the kernel starts at ε = 1
    page.wait_for_selector("text=kernel sees epsilon = 1,")
    before = page.eval_on_selector_all(BARS, HEIGHTS)

    # drag the ε handle to the left (smaller ε, more noise); the slider reports on release
    handle = page.locator(".blowfish-epsilon .noUi-handle")
    # Run All leaves the notebook scrolled to its last cell: the slider can be above the fold, where a press at its
    # coordinates hits nothing (stop 34's first CI: the bars never changed). Bring it into view first.
    handle.scroll_into_view_if_needed()
    wait_until_still(page, ".blowfish-epsilon .noUi-handle")  # the page has stopped reflowing: the press hits it
    box = handle.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] - 35, box["y"] + box["height"] / 2, steps=8)
    page.mouse.up()

    page.wait_for_function(
        f"before => Array.from(document.querySelectorAll('{BARS}'))"
        ".map(e => e.getAttribute('height')).join(',') !== before",
        arg=before,
    )
    readout = page.locator(".blowfish-epsilon .widget-readout").inner_text()
    slider_eps = float(readout)
    assert 0.001 < slider_eps < 1.0  # a value inside the range, not the end stop

    # the kernel saw the new ε: re-run the cell that prints the kernel's state
    run_last_cell(page)
    page.wait_for_function(
        "() => /kernel sees epsilon = (?!1,)/.test(document.body.innerText)", timeout=60_000
    )
    text = page.locator(".jp-Notebook").inner_text()
    kernel_eps = float(re.search(r"kernel sees epsilon = ([0-9.e+-]+),", text).group(1))
    assert kernel_eps == pytest.approx(slider_eps, rel=5e-3)  # readout shows 3 significant digits
    # and the explorer's readout (written by Python) agrees
    assert f"ε = {kernel_eps:.3g}" in page.locator(".blowfish-readout").inner_text()
