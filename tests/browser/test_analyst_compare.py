"""The analyst panel's comparison plot and controls, read in a real JupyterLab (issue 17, items 2, 4 and 7).

Two real clicks on Run, then the comparison must be readable: one release
after the first Run, both side by side after the second, every bar inside the
plot, ticks in data units, a legend naming each release; no control label cut
off and no axis label over its ticks at 1280×800.
"""

import re

import pytest

from tests.browser.conftest import ARTIFACTS, open_notebook, run_all

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

NOTEBOOK = "curator_and_analyst.ipynb"
PANEL = ".blowfish-analyst"
FIGURE = f"{PANEL} .blowfish-compare"
#: "18–20" or "18.0–20.1" or "70,000–75,000": a bin as its value range
BIN_LABEL = re.compile(r"^-?[\d,]+(\.\d+)?–-?[\d,]+(\.\d+)?$")

#: everything the tests read from the comparison figure, in page pixels
GEOMETRY = """(sel) => {
    const fig = document.querySelector(sel);
    const box = e => { const r = e.getBoundingClientRect(); return {l: r.left, r: r.right, t: r.top, b: r.bottom}; };
    const axis = vertical => {
        const label = Array.from(fig.querySelectorAll('text.axislabel'))
            .find(t => (t.getAttribute('transform') || '').includes('rotate') === vertical);
        const ticks = Array.from(label.parentNode.querySelectorAll('.tick text')).filter(t => t.textContent);
        return {label: label.textContent, labelBox: box(label), ticks: ticks.map(t => t.textContent),
                tickBoxes: ticks.map(box)};
    };
    return {
        plot: box(fig.querySelector('rect.plotarea_background')),
        bars: Array.from(fig.querySelectorAll('rect.bar')).map(box),
        legend: Array.from(fig.querySelectorAll('text.legendtext')).map(t => t.textContent),
        title: fig.querySelector('text.mainheading').textContent,
        x: axis(false), y: axis(true),
    };
}"""


def _open(lab, page) -> None:
    open_notebook(page, lab, NOTEBOOK)
    run_all(page)
    page.wait_for_selector(f"{PANEL} .blowfish-cost:has-text('this release will cost')", timeout=120_000)
    page.locator(f"{PANEL} .blowfish-run").scroll_into_view_if_needed()


def _run_and_wait(page, releases: int) -> dict:
    """Click Run (a real click), wait until the history holds ``releases`` rows and the bars stop changing."""
    page.locator(f"{PANEL} .blowfish-run").click()
    page.wait_for_function(f"() => document.querySelectorAll('{PANEL} .blowfish-history tr').length === {releases + 1}")
    before = None
    for _ in range(40):  # settled: two reads 250 ms apart agree
        page.wait_for_timeout(250)
        now = page.evaluate(GEOMETRY, FIGURE)
        if now == before and now["bars"]:
            return now
        before = now
    raise AssertionError(f"the comparison never settled after Run #{releases}: {before}")


def _overlap(a: dict, b: dict) -> bool:
    return a["l"] < b["r"] and b["l"] < a["r"] and a["t"] < b["b"] and b["t"] < a["b"]


def _assert_readable(g: dict, answers: int, series: int) -> None:
    plot = g["plot"]
    slot = (plot["r"] - plot["l"]) / (answers * series)  # the width each bar would have with no padding
    for bar in g["bars"]:
        assert plot["l"] - 1 <= bar["l"] < bar["r"] <= plot["r"] + 1, (bar, plot)  # inside the plot area
        assert bar["r"] - bar["l"] >= 0.4 * slot, (bar, slot)  # a bar, not a sliver
    assert len(g["bars"]) == answers * series
    lefts = sorted({round(b["l"]) for b in g["bars"]})
    assert len(lefts) == answers * series  # side by side: no two bars at one place
    # the x axis speaks in data units, thinned so that its labels do not run together
    assert g["x"]["ticks"] and all(BIN_LABEL.match(t) for t in g["x"]["ticks"]), g["x"]["ticks"]
    boxes = g["x"]["tickBoxes"]
    assert all(not _overlap(p, q) for i, p in enumerate(boxes) for q in boxes[i + 1:]), g["x"]["ticks"]
    assert g["x"]["label"] == "age"


def _age_bins(page) -> int:
    from tests.browser.test_curator_and_analyst import _age_bins as age_bins

    return age_bins(page)


@pytest.mark.parametrize("server", ["lab", "notebook7"])
def test_two_runs_draw_both_releases_side_by_side_in_data_units(server, request, page):
    """The issue saw the collapsed plot in JupyterLab and in Notebook 7: both are driven."""
    _open(request.getfixturevalue(server), page)
    # the notebook's session bins age into two-year bins (it prints how many); histogram of age, one bin per answer
    answers = _age_bins(page)
    tag = "" if server == "lab" else f"-{server}"

    g = _run_and_wait(page, releases=1)
    page.locator(FIGURE).screenshot(path=str(ARTIFACTS / f"analyst-compare-after-run-1{tag}.png"))
    _assert_readable(g, answers, series=1)
    assert g["legend"] == ["#1 histogram of age"]  # just that release: no "#1 vs #1"
    assert "#1" in g["title"] and "#2" not in g["title"]

    g = _run_and_wait(page, releases=2)
    page.locator(FIGURE).screenshot(path=str(ARTIFACTS / f"analyst-compare-after-run-2{tag}.png"))
    _assert_readable(g, answers, series=2)
    assert g["legend"] == ["#1 histogram of age", "#2 histogram of age"]
    # the legend sits above the bars it names
    legend = page.evaluate(f"() => {{ const r = document.querySelector('{FIGURE} .g_legend').getBoundingClientRect();"
                           " return {l: r.left, r: r.right, t: r.top, b: r.bottom}; }")
    assert not any(_overlap(legend, bar) for bar in g["bars"])


def test_controls_and_axis_labels_are_not_cut_off_at_1280_by_800(lab, page):
    page.set_viewport_size({"width": 1280, "height": 800})
    _open(lab, page)
    g = _run_and_wait(page, releases=1)
    page.locator(PANEL).screenshot(path=str(ARTIFACTS / "analyst-panel-1280x800.png"))

    problems = []  # every layout defect at once, so a failure names them all
    clipped = page.evaluate(
        """(sel) => Array.from(document.querySelector(sel).querySelectorAll('button, .widget-label'))
              .filter(e => e.offsetParent !== null && e.textContent.trim())
              .filter(e => e.scrollWidth > e.clientWidth).map(e => e.textContent.trim())""",
        PANEL,
    )
    problems += [f"label cut off: {text!r}" for text in clipped]
    run = page.locator(f"{PANEL} .blowfish-run")
    if not run.evaluate("e => e.scrollWidth <= e.clientWidth"):
        problems.append("the Run button's label is cut off")
    granularity = page.locator(f"{PANEL} .blowfish-granularity .widget-label")
    if not granularity.evaluate("e => e.scrollWidth <= e.clientWidth"):
        problems.append("the granularity label is cut off")
    # every control lies inside the panel (nothing pushed past its right edge)
    outside = page.evaluate(
        """(sel) => { const p = document.querySelector(sel).getBoundingClientRect();
              return Array.from(document.querySelector(sel).querySelectorAll('.widget-inline-hbox, button'))
                  .filter(e => e.getBoundingClientRect().right > p.right + 1).map(e => e.className); }""",
        PANEL,
    )
    problems += [f"past the panel's right edge: {cls}" for cls in outside]
    # the axis labels clear their tick labels
    for axis in ("x", "y"):
        if not g[axis]["tickBoxes"]:
            problems.append(f"{axis} axis has no tick labels")
        hits = [t for t, b in zip(g[axis]["ticks"], g[axis]["tickBoxes"]) if _overlap(g[axis]["labelBox"], b)]
        if hits:
            problems.append(f"{axis} axis label {g[axis]['label']!r} overlaps its ticks {hits}")
    assert not problems, "layout defects:\n" + "\n".join(problems)
    assert run.inner_text().strip() == "Run (charge the session)"
    assert granularity.inner_text().strip() == "bins / answer"
    assert g["y"]["label"] == "noisy answer"


HISTORY_CELLS = [
    "import blowfish_nb as bf\n"
    "from blowfish_nb.widgets import AnalystPanel\n"
    "session = bf.datasets.salaries(n=2000, seed=0).blowfish.session(1.0, bins={'age': 31, 'salary': 50})\n"
    "r = session.release('histogram', 'salary', epsilon=0.3)  # in code, before the panel exists",
    "AnalystPanel(session, alpha=60, beta=0.05)",
]


def test_the_panel_history_lists_releases_made_in_code_before_it(lab, page):
    """Issue 28 (3): opened after a release made in code, the panel's history shows it (the budget bar already
    counted it), and a Run through the panel joins it as #2."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in HISTORY_CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, lab.root / "panel_history.ipynb")
    open_notebook(page, lab, "panel_history.ipynb")
    run_all(page)
    page.wait_for_selector(f"{PANEL} .blowfish-cost:has-text('this release will cost')", timeout=120_000)
    rows = f"{PANEL} .blowfish-history tr"
    page.wait_for_function(f"() => document.querySelectorAll('{rows}').length === 2")  # header + the code's release
    history = page.locator(f"{PANEL} .blowfish-history").inner_text()
    assert "histogram of salary" in history and "elsewhere in the session" in history, history
    assert "spent 0.3" in page.locator(f"{PANEL} .blowfish-budget-label").inner_text()
    page.locator(f"{PANEL} .blowfish-run").click()
    page.wait_for_function(f"() => document.querySelectorAll('{rows}').length === 3")
    history = page.locator(f"{PANEL} .blowfish-history").inner_text()
    page.locator(PANEL).screenshot(path=str(ARTIFACTS / "analyst-history-with-code-release.png"))
    assert "this panel" in history and history.count("elsewhere in the session") == 1, history
    assert page.evaluate(f"() => Array.from(document.querySelectorAll('{FIGURE} text.legendtext'))"
                         ".map(t => t.textContent)") == ["#2 histogram of age"]
