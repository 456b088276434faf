"""The curator and analyst notebook in a real JupyterLab and Chromium: mouse edits, θ, tradeoff clicks, budget."""

import re

import pytest

from tests.browser.conftest import cell_text, drag, open_notebook, run_all, wait_until_settled

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

NOTEBOOK = "curator_and_analyst.ipynb"
EXPLORER = ".blowfish-explorer"
BARS = f"{EXPLORER} .blowfish-bars rect.bar"
HEIGHTS = "els => els.map(e => e.getAttribute('height')).join(',')"
#: the standalone canvas is the one not inside the explorer
CANVAS = ".jp-Cell:has(.blowfish-canvas):not(:has(.blowfish-explorer)) .blowfish-canvas"


def _ready(page) -> None:
    open_notebook(page, lab_holder["lab"], NOTEBOOK)
    run_all(page)
    page.wait_for_function(f"() => document.querySelectorAll('{BARS}').length >= 60", timeout=120_000)
    page.wait_for_selector(f"{CANVAS}[data-ready='1']")
    page.wait_for_selector(".blowfish-analyst .blowfish-cost:has-text('this release will cost')")


lab_holder = {}


#: the printed output of the code cell whose source holds the marker, from the notebook's model (a cell scrolled
#: out of view has no innerText in JupyterLab 4's windowed notebook)
CELL_OUTPUT_JS = """(m) => { const cells = window.jupyterapp.shell.currentWidget.content.widgets;
    const c = cells.find(c => c.model.sharedModel.getSource().includes(m));
    return c ? c.model.outputs.toJSON().map(o => [].concat(o.text || []).join('')).join('') : ''; }"""


def _age_bins(page) -> int:
    """How many age bins the notebook made (two-year bins between the data set's public bounds), from its output."""
    marker = "# ages in whole years"
    page.wait_for_function(f"m => /age in \\d+ two-year bins/.test(({CELL_OUTPUT_JS})(m))", arg=marker)
    return int(re.search(r"age in (\d+) two-year bins", page.evaluate(CELL_OUTPUT_JS, marker)).group(1))


def _node_point(page, selector: str, node_id: str) -> tuple[float, float]:
    return tuple(page.evaluate(
        """([sel, id]) => { const box = document.querySelector(sel); const cy = box.__cy;
             const p = cy.getElementById(id).renderedPosition(); const r = box.getBoundingClientRect();
             return [r.left + p.x, r.top + p.y]; }""",
        [selector, node_id],
    ))


def test_mouse_edits_on_the_canvas_reach_the_python_policy(lab, page):
    lab_holder["lab"] = lab
    _ready(page)
    facts = page.locator(".jp-Cell:has(.blowfish-canvas):not(:has(.blowfish-explorer)) .blowfish-canvas-facts")
    assert "Δ = 1" in facts.inner_text()  # line policy, cumulative histogram

    # drag from cell 2 to cell 12 (edgehandles' draw mode is on in the "add edge" mode)
    page.locator(CANVAS).scroll_into_view_if_needed()
    wait_until_settled(page, page.locator(CANVAS).first.element_handle())  # drawn, still, the kernel idle
    x0, y0 = _node_point(page, CANVAS, "c2")
    x1, y1 = _node_point(page, CANVAS, "c12")
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move((x0 + x1) / 2, y0 - 30, steps=6)
    page.mouse.move(x1, y1, steps=6)
    page.wait_for_timeout(200)  # edgehandles' hover delay
    page.mouse.up()
    page.wait_for_function(
        "() => /Δ = 10\\b/.test(document.querySelector(arguments[0]).innerText)".replace(
            "arguments[0]", repr(".jp-Cell:has(.blowfish-canvas):not(:has(.blowfish-explorer)) .blowfish-canvas-facts")),
        timeout=30_000,
    )
    m = cell_text(page, "# The Policy object the canvas holds", r"added edges: \[\(2, 12\)\]")
    assert m is not None
    text = page.locator(".jp-Notebook .jp-Cell", has_text="# The Policy object the canvas holds").first.inner_text()
    assert "sensitivity = 10" in text and "tree = False" in text

    # a self-loop by clicking one node twice is refused in the canvas, and Python keeps its policy
    wait_until_settled(page, page.locator(CANVAS).first.element_handle())
    x, y = _node_point(page, CANVAS, "c20")
    page.mouse.click(x, y)
    page.wait_for_timeout(300)
    page.mouse.click(x, y)
    page.wait_for_selector(".blowfish-canvas-message:has-text('self-loops are not edges')")
    m = cell_text(page, "# The Policy object the canvas holds", r"canvas: edges = (\d+)")
    assert int(m.group(1)) == _age_bins(page)  # k − 1 line edges + the one added by mouse


def test_theta_slider_and_tradeoff_click(lab, page):
    lab_holder["lab"] = lab
    _ready(page)
    explorer_canvas = f"{EXPLORER} .blowfish-canvas"
    edges_before = page.get_attribute(explorer_canvas, "data-edges")
    bars_before = page.eval_on_selector_all(BARS, HEIGHTS)
    marker = f"{EXPLORER} .blowfish-tradeoff"
    tradeoff_before = page.inner_html(marker)

    drag(page, f"{EXPLORER} .blowfish-theta .noUi-handle", 60)
    page.wait_for_function(
        "([sel, n]) => { const b = document.querySelector(sel); return b.dataset.ready === '1' && b.dataset.edges !== n; }",
        arg=[explorer_canvas, edges_before], timeout=30_000,
    )
    page.wait_for_function(
        f"before => Array.from(document.querySelectorAll('{BARS}')).map(e => e.getAttribute('height')).join(',') "
        "!== before", arg=bars_before)
    page.wait_for_function("([sel, b]) => document.querySelector(sel).innerHTML !== b", arg=[marker, tradeoff_before])
    theta = int(page.locator(f"{EXPLORER} .blowfish-theta .widget-readout").inner_text())
    m = cell_text(page, "# What the kernel holds now", rf"explorer: theta = {theta}, epsilon = 0\.5,")
    assert m is not None and theta > 3
    edges = int(page.get_attribute(explorer_canvas, "data-edges"))
    k = _age_bins(page)
    assert edges == sum(k - d for d in range(1, theta + 1))  # G^θ on k bins, edge for edge

    # click the first point of the ε = 0.1 series: θ = 1, ε = 0.1
    bars_before = page.eval_on_selector_all(BARS, HEIGHTS)
    # each point is a g.object_grp, a series their parent; the current point (a series of one, drawn first, under
    # the others) is skipped
    page.evaluate_handle(
        """(sel) => [...new Set(Array.from(document.querySelectorAll(sel + ' g.object_grp')).map(g => g.parentElement))]
             .filter(g => g.children.length > 1)[0].children[0].querySelector('path.dot')""", marker,
    ).as_element().click()
    page.wait_for_function(
        f"before => Array.from(document.querySelectorAll('{BARS}')).map(e => e.getAttribute('height')).join(',') "
        "!== before", arg=bars_before, timeout=30_000)
    m = cell_text(page, "# What the kernel holds now", r"explorer: theta = 1, epsilon = 0\.1,")
    assert m is not None
    assert page.locator(f"{EXPLORER} .blowfish-theta .widget-readout").inner_text() == "1"
    assert "ε = 0.1 " in page.locator(f"{EXPLORER} .blowfish-readout").text_content()  # details included


def test_analyst_two_queries_then_refused(lab, page):
    lab_holder["lab"] = lab
    _ready(page)
    panel = ".blowfish-analyst"
    run = page.locator(f"{panel} .blowfish-run")
    run.scroll_into_view_if_needed()
    label = page.locator(f"{panel} .blowfish-budget-label")
    assert "ε left 1 of 1" in label.inner_text()

    run.click()
    page.wait_for_selector(f"{panel} .blowfish-message:has-text('released')")
    page.locator(f"{panel} .blowfish-query select").select_option("cumulative")
    page.wait_for_selector(f"{panel} .blowfish-cost:has-text('cumulative of age')")
    run.click()
    page.wait_for_function(f"() => document.querySelectorAll('{panel} .blowfish-history tr').length === 3")
    # the comparison plot draws both releases (one answer per age bin each)
    page.wait_for_function(f"() => document.querySelectorAll('{panel} .blowfish-compare rect.bar').length === "
                           f"{2 * _age_bins(page)}")
    # whole-year bins read as ages (issue 28, 7: not "18.0–20.1")
    ticks = page.eval_on_selector_all(f"{panel} .blowfish-compare .tick text", "els => els.map(e => e.textContent)")
    ages = [t for t in ticks if re.search(r"–|<|≤", t)]  # "17–19" or, beside a cumulative one, "< 19"
    assert ages and all(re.fullmatch(r"\d+–\d+|[<≤] \d+", t) for t in ages), ticks
    left = float(re.search(r"ε left ([0-9.e+-]+)", label.inner_text()).group(1))
    assert 0 < left < 1
    bar = page.eval_on_selector(f"{panel} .blowfish-budget .progress-bar", "e => parseFloat(e.style.width)")
    assert bar == pytest.approx(100 * left, abs=1.0)  # the bar shows what is left

    # a third query, far too accurate for what is left: refused, nothing charged
    alpha = page.locator(f"{panel} .blowfish-alpha input")
    alpha.fill("0.5")
    alpha.press("Enter")
    page.wait_for_selector(f"{panel} .blowfish-cost:has-text('more than the')")
    run.click()
    page.wait_for_selector(f"{panel} .blowfish-message:has-text('refused')")
    assert "nothing was computed or charged" in page.locator(f"{panel} .blowfish-message").inner_text()
    assert page.locator(f"{panel} .blowfish-history tr").count() == 3
    m = cell_text(page, "# The session's books", r"session: spent = ([0-9.e+-]+), remaining = ([0-9.e+-]+), "
                                                     r"releases = 2")
    assert float(m.group(2)) == pytest.approx(left, rel=1e-3)
