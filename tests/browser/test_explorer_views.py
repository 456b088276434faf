"""The curator's explorer in a real JupyterLab and Chromium at 1280×800: data units, a readable error–θ plot.

Overlaps are judged on the bounding boxes the browser laid out (``getBoundingClientRect``).
"""

import re

from playwright.sync_api import TimeoutError as PlaywrightTimeout

import pytest

from tests.browser.conftest import ARTIFACTS, cell_text, open_notebook, run_all, wait_until_still

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

NOTEBOOK = "quickstart.ipynb"
EXPLORER = ".blowfish-explorer"
BARS_FIGURE = f"{EXPLORER} .blowfish-bars"
TRADEOFF = f"{EXPLORER} .blowfish-tradeoff"
BARS = f"{BARS_FIGURE} rect.bar"
#: the ε = 0.1 series' colour (bqplot writes it as the dots' fill)
EPS_01_FILL = "rgb(196, 78, 82)"

#: every axis of a figure: its tick labels' and its label's boxes (visible ones only)
AXES_JS = """(fig) => Array.from(document.querySelector(fig).querySelectorAll('g.axis')).map(a => {
    const box = e => { const r = e.getBoundingClientRect(); return {x: r.left, y: r.top, w: r.width, h: r.height}; };
    const shown = e => e.getBoundingClientRect().width > 0 && getComputedStyle(e).display !== 'none';
    const ticks = Array.from(a.querySelectorAll('.tick text')).filter(shown);
    const label = a.querySelector('text.axislabel');
    return {ticks: ticks.map(t => ({text: t.textContent, ...box(t)})),
            label: label ? {text: label.textContent, ...box(label)} : null};
})"""
BOX_JS = "e => { const r = e.getBoundingClientRect(); return {x: r.left, y: r.top, w: r.width, h: r.height}; }"


def _overlap(a, b) -> bool:
    return (a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
            and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"])


def _number(text: str) -> float:
    return float(text.replace(",", "").replace("−", "-"))


def _ready(page, lab) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    open_notebook(page, lab, NOTEBOOK)
    run_all(page)
    page.wait_for_function(f"() => document.querySelectorAll('{BARS}').length >= 100", timeout=120_000)
    page.wait_for_selector(f"{EXPLORER} .blowfish-canvas[data-ready='1']")
    page.wait_for_function(f"() => document.querySelectorAll('{TRADEOFF} path.dot').length >= 10")
    page.locator(BARS_FIGURE).scroll_into_view_if_needed()
    page.wait_for_timeout(500)  # bqplot's axes transition
    wait_until_still(page, BARS_FIGURE)  # and nothing above it (a readout) still reflows the page


def _x_axis(page) -> dict:
    """The bars' horizontal axis: the one whose ticks share one row."""
    axes = page.evaluate(AXES_JS, BARS_FIGURE)
    return next(a for a in axes if a["ticks"] and len({round(t["y"]) for t in a["ticks"]}) == 1)


def test_histogram_axis_and_brush_speak_in_data_units(lab, page):
    _ready(page, lab)
    axis = _x_axis(page)
    texts = [t["text"] for t in axis["ticks"]]
    assert axis["label"]["text"] == "salary", axis["label"]  # not "salary (bin index; bin 0 starts at 0)"
    values = [_number(t) for t in texts]
    assert len(values) >= 3 and min(values) >= 0 and max(values) <= 250_000, texts  # no tick at −1
    assert any("," in t for t in texts), texts  # salaries, with thousands separators, not bin numbers

    # brush with the mouse from the middle of the bin 65,000–70,000 to the middle of 130,000–135,000
    # (pixels ↔ salary from the first and the last tick's positions)
    ticks = sorted(axis["ticks"], key=lambda t: t["x"])
    (x0, v0), (x1, v1) = [(t["x"] + t["w"] / 2, _number(t["text"])) for t in (ticks[0], ticks[-1])]
    to_pixel = lambda v: x0 + (v - v0) * (x1 - x0) / (v1 - v0)  # noqa: E731
    px_lo, px_hi = to_pixel(67_500), to_pixel(132_500)
    plot = page.eval_on_selector(f"{BARS_FIGURE} rect.plotarea_events", BOX_JS)
    y = plot["y"] + plot["h"] / 2
    page.mouse.move(px_lo, y)
    page.mouse.down()
    page.mouse.move(px_hi, y, steps=10)
    page.mouse.up()
    readout = page.locator(f"{EXPLORER} .blowfish-range")
    page.wait_for_function(f"() => /true/.test(document.querySelector('{EXPLORER} .blowfish-range').innerText)")
    # the brush reports while it is dragged too: give the last selection (mouse up) time to arrive before reading
    try:
        page.wait_for_function(f"() => /–135,000/.test(document.querySelector('{EXPLORER} .blowfish-range').innerText)",
                               timeout=15_000)
    except PlaywrightTimeout:
        pass  # the assertion below says what the readout shows
    text = readout.inner_text()
    page.screenshot(path=str(ARTIFACTS / "explorer-axis-brush.png"))
    assert "bins" not in text, text
    m = re.search(r"salary ([\d,]+)–([\d,]+)", text)
    assert m is not None, text
    assert m.groups() == ("65,000", "135,000"), text  # the bins the brush overlaps, in salary


def _assert_fits_in_view(page) -> None:
    """Issue 28 (2), on a page made :func:`_ready`: scrolled to its controls, the whole explorer is in the notebook's
    view at 1280×800 — sliders, both plots and the canvas's graph — so a θ move and what it did to the graph are seen
    without scrolling."""
    page.locator(f"{EXPLORER} .blowfish-theta").scroll_into_view_if_needed()
    page.evaluate(f"() => document.querySelector('{EXPLORER}').scrollIntoView({{block: 'start'}})")
    page.wait_for_timeout(500)
    page.screenshot(path=str(ARTIFACTS / "explorer-fits-1280x800.png"))
    view = page.evaluate(f"""() => {{
        let e = document.querySelector('{EXPLORER}');
        while (e && !(e.scrollHeight > e.clientHeight + 1 && /(auto|scroll)/.test(getComputedStyle(e).overflowY)))
            e = e.parentElement;
        const r = (e || document.documentElement).getBoundingClientRect();
        return {{top: Math.max(r.top, 0), bottom: Math.min(r.bottom, window.innerHeight)}};
    }}""")
    for part in (".blowfish-theta", ".blowfish-epsilon", ".blowfish-bars", ".blowfish-tradeoff", ".blowfish-canvas"):
        box = page.eval_on_selector(f"{EXPLORER} {part}", BOX_JS)
        assert view["top"] - 1 <= box["y"] and box["y"] + box["h"] <= view["bottom"] + 1, (part, box, view)


def test_error_theta_plot_and_readouts_read_cleanly_at_1280x800(lab, page):
    """Both plots' axes, legend, tooltip and readouts read cleanly; and the whole explorer fits the view (issue 28 (2):
    one notebook run serves both checks, which only read the page)."""
    _ready(page, lab)
    _assert_fits_in_view(page)
    page.locator(TRADEOFF).scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "explorer-1280x800.png"))

    # no two tick labels overlap, and no axis label overlaps its ticks, in either plot
    for fig in (BARS_FIGURE, TRADEOFF):
        svg = page.eval_on_selector(f"{fig} svg.svg-figure", BOX_JS)
        for axis in page.evaluate(AXES_JS, fig):
            ticks = axis["ticks"]
            for i, a in enumerate(ticks):
                for b in ticks[i + 1:]:
                    assert not _overlap(a, b), (fig, a, b)
                assert svg["x"] - 1 <= a["x"] and a["x"] + a["w"] <= svg["x"] + svg["w"] + 1, (fig, "cut off", a)
            if axis["label"]:
                assert not [t for t in ticks if _overlap(axis["label"], t)], (fig, axis["label"])

    # the legend covers neither the current point nor the ε = 0.1 series
    legends = page.eval_on_selector_all(f"{TRADEOFF} g.g_legend, {EXPLORER} .blowfish-tradeoff-legend",
                                        f"els => els.map({BOX_JS}).filter(b => b.w > 0)")
    assert legends, "no legend"
    dots = page.eval_on_selector_all(
        f"{TRADEOFF} path.dot", f"els => els.map(e => ({{fill: getComputedStyle(e).fill, ...({BOX_JS})(e)}}))")
    eps01 = [d for d in dots if d["fill"] == EPS_01_FILL]
    current = [d for d in dots if d["fill"] == "rgb(0, 0, 0)"]
    assert len(eps01) >= 5 and len(current) == 1, dots
    for legend in legends:
        assert not [d for d in eps01 + current if _overlap(legend, d)], (legend, current)

    # the tooltip shows rounded numbers
    page.locator(TRADEOFF).first.scroll_into_view_if_needed()  # a hover off screen reaches nothing
    wait_until_still(page, TRADEOFF)
    dot = page.locator(f"{TRADEOFF} path.dot").nth(4).bounding_box()
    page.mouse.move(dot["x"] + dot["width"] / 2, dot["y"] + dot["height"] / 2)
    shown = ("() => Array.from(document.querySelectorAll('.bqplot_mark_tooltip'))"
             ".filter(e => getComputedStyle(e).display !== 'none' && /\\d/.test(e.innerText))")
    page.wait_for_function(f"({shown})().length > 0")
    tip_text = page.evaluate(f"({shown})()[0].innerText")
    assert "rms error" in tip_text and not re.search(r"\d\.\d{4,}", tip_text), tip_text

    # the readout names both sensitivities; the query's is the one the canvas shows
    shown = page.locator(f"{EXPLORER} .blowfish-readout").inner_text()  # what reads without a click
    assert shown.startswith("Each answer is typically within ±") and "Δ" not in shown, shown
    readout = page.locator(f"{EXPLORER} .blowfish-readout").text_content()  # with the details behind the click
    query_delta = re.search(r"Δ of the query = ([\d.]+)", readout)
    assert query_delta and re.search(r"Δ of the strategy .+ measures = [\d.]+", readout), readout
    facts = page.locator(f"{EXPLORER} .blowfish-canvas-facts").inner_text()
    assert re.search(rf"Δ = {re.escape(query_delta.group(1))}\b", facts), (readout, facts)
    assert re.search(r"θ = 3 bins = 15,000", readout), readout

    # nothing cut off: the explorer fits, no control's label is truncated
    widths = page.eval_on_selector(EXPLORER, "e => [e.scrollWidth, e.clientWidth]")
    assert widths[0] <= widths[1], widths
    cut = page.eval_on_selector_all(f"{EXPLORER} .widget-label",
                                    "els => els.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText)")
    assert not cut, cut

    # bqplot's hover toolbar does not cover the histogram's title
    page.locator(BARS_FIGURE).hover()
    page.wait_for_timeout(300)
    title = page.eval_on_selector(f"{BARS_FIGURE} text.mainheading", BOX_JS)
    toolbars = page.eval_on_selector_all(
        f"{BARS_FIGURE} .toolbar_div", f"els => els.filter(e => getComputedStyle(e).display !== 'none').map({BOX_JS})")
    assert not [t for t in toolbars if t["w"] > 0 and _overlap(t, title)], (toolbars, title)


def test_small_epsilon_keeps_the_current_point_off_the_title_and_the_histogram_note(lab, page):
    _ready(page, lab)
    # drag the ε handle to the left end (ε = 0.001): the current point far above every line
    handle = page.locator(f"{EXPLORER} .blowfish-epsilon .noUi-handle")
    handle.scroll_into_view_if_needed()
    wait_until_still(page, f"{EXPLORER} .blowfish-epsilon .noUi-handle")
    box = handle.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] - 400, box["y"] + box["height"] / 2, steps=8)
    page.mouse.up()
    readout = f"document.querySelector('{EXPLORER} .blowfish-readout').textContent"  # details included
    page.wait_for_function(f"() => /ε = 0\\.001 /.test({readout})")
    page.wait_for_timeout(500)
    page.locator(TRADEOFF).scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "explorer-small-epsilon.png"))
    title = page.eval_on_selector(f"{TRADEOFF} text.mainheading", BOX_JS)
    plot = page.eval_on_selector(f"{TRADEOFF} rect.plotarea_events", BOX_JS)
    black = "e => getComputedStyle(e).fill === 'rgb(0, 0, 0)'"
    point = page.eval_on_selector_all(f"{TRADEOFF} path.dot", f"els => els.filter({black}).map({BOX_JS})")
    assert len(point) == 1
    p = point[0]
    assert p["y"] >= title["y"] + title["h"] + 8, (p, title)  # clear of the title
    # inside the plot area with room above it (the y range is padded beyond the highest point)
    assert p["y"] >= plot["y"] + p["h"] / 2 and p["y"] + p["h"] <= plot["y"] + plot["h"], (p, plot)

    # the histogram query: flat lines for θ ≥ 2, and the view says why
    page.locator(f"{EXPLORER} .blowfish-query select").select_option("histogram")
    note = page.locator(f"{EXPLORER} .blowfish-tradeoff-note")
    note.wait_for()
    page.wait_for_function(f"() => /Flat from θ = 2/.test(document.querySelector('{EXPLORER} .blowfish-tradeoff-note')"
                           ".innerText)")
    assert "Δ = 2 at every θ" in note.inner_text()
    page.screenshot(path=str(ARTIFACTS / "explorer-histogram-note.png"))


UNEQUAL_CELLS = [
    "import blowfish_nb as bf\n"
    "from blowfish_nb.widgets import Explorer\n"
    "df = bf.datasets.salaries(n=2000, seed=0)\n"
    "Explorer(df, column='salary', bins={'salary': [0, 20_000, 40_000, 100_000, 250_000], 'age': 31},\n"
    "         columns=['salary', 'age'], theta=1, rng=0)",
]
#: the x pixel of every point of the filled bar outlines, per fill colour (bqplot writes the outline as one path)
OUTLINES_JS = """(fig) => Array.from(document.querySelector(fig).querySelectorAll('path.line'))
    .filter(p => getComputedStyle(p).fill !== 'none' && (p.getAttribute('d') || '').length > 0)
    .map(p => ({fill: getComputedStyle(p).fill, visible: getComputedStyle(p).visibility !== 'hidden' &&
                getComputedStyle(p.closest('g.mark') || p).visibility !== 'hidden',
                xs: (p.getAttribute('d').match(/[ML][^ML]+/g) || []).map(s => parseFloat(s.slice(1).split(',')[0]))}))"""


def test_unequal_bins_are_drawn_at_their_true_widths(lab, page):
    """Issue 28 (7): bins of 20,000, 20,000, 60,000 and 150,000 are drawn 1 : 1 : 3 : 7.5 wide, not all alike."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in UNEQUAL_CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, lab.root / "unequal_bins.ipynb")
    page.set_viewport_size({"width": 1280, "height": 800})
    open_notebook(page, lab, "unequal_bins.ipynb")
    run_all(page)
    page.wait_for_selector(f"{EXPLORER} .blowfish-canvas[data-ready='1']", timeout=120_000)
    page.locator(BARS_FIGURE).scroll_into_view_if_needed()
    page.wait_for_function(f"fig => ({OUTLINES_JS})(fig).filter(o => o.xs.length === 16).length === 2",
                           arg=BARS_FIGURE, timeout=60_000)
    page.wait_for_timeout(500)  # bqplot's transition
    outlines = [o for o in page.evaluate(OUTLINES_JS, BARS_FIGURE) if len(o["xs"]) == 16]
    page.locator(EXPLORER).screenshot(path=str(ARTIFACTS / "explorer-unequal-bins.png"))
    widths = {0.95: None, 0.55: None}
    for o in outlines:
        xs = [o["xs"][i:i + 4] for i in range(0, 16, 4)]
        w = [b[2] - b[0] for b in xs]
        ratios = [v / w[0] for v in w]
        assert ratios == pytest.approx([1, 1, 3, 7.5], rel=0.03), (o["fill"], w)
        assert all(xs[i][2] < xs[i + 1][0] for i in range(3)), xs  # side by side, in order, not overlapping
        widths[0.95 if o["fill"] == "rgb(176, 176, 176)" else 0.55] = w
    assert widths[0.95] and widths[0.55]  # the grey (true) and the blue (noisy) outlines are both drawn
    assert [n / t for n, t in zip(widths[0.55], widths[0.95])] == pytest.approx([0.55 / 0.95] * 4, rel=0.05)
    # the uniform Bars are hidden (none drawn with a width)
    shown = page.eval_on_selector_all(BARS, "els => els.filter(e => e.getBoundingClientRect().width > 0 && "
                                            "getComputedStyle(e).visibility !== 'hidden').length")
    assert shown == 0


def test_arrow_keys_move_a_focused_slider_in_jupyterlab_too(lab, page):
    """Issue 28 (7): the listener that keeps slider keys from Notebook 7's shortcuts leaves JupyterLab's sliders
    working as before (the Notebook 7 side is tests/browser/test_notebook7.py)."""
    _ready(page, lab)
    handle = page.locator(f"{EXPLORER} .blowfish-epsilon .noUi-handle")
    handle.scroll_into_view_if_needed()
    handle.focus()
    handle.press("ArrowRight")  # from ε = 1 one step up the log scale
    page.wait_for_function(f"() => document.querySelector('{EXPLORER} .blowfish-epsilon .widget-readout')"
                           ".innerText !== '1.00'", timeout=10_000)
    slider_eps = float(page.locator(f"{EXPLORER} .blowfish-epsilon .widget-readout").inner_text())
    assert slider_eps > 1.0
    m = cell_text(page, "# What the kernel holds now", r"kernel sees epsilon = (?!1,)([0-9.e+-]+),")
    assert float(m.group(1)) == pytest.approx(slider_eps, rel=5e-3)


#: the readout's details (the figures behind the plain sentence) and their summary, the click that opens them
DETAILS = f"{EXPLORER} .blowfish-readout details.blowfish-readout-details"
IS_OPEN = f"() => document.querySelector('{DETAILS}').open"


def _epsilon_step(page, key: str = "ArrowLeft") -> str:
    """One keyboard step of the ε slider; waits until the readout's details name the slider's new ε; that ε as the
    readout writes it (3 significant digits, Python's ``g``: "0.891", where the slider shows "0.891" or "1.00")."""
    slider = page.locator(f"{EXPLORER} .blowfish-epsilon .widget-readout")
    before = slider.inner_text()
    handle = page.locator(f"{EXPLORER} .blowfish-epsilon .noUi-handle")
    handle.scroll_into_view_if_needed()
    handle.focus()
    handle.press(key)
    page.wait_for_function("([s, b]) => document.querySelector(s).innerText !== b",
                           arg=[f"{EXPLORER} .blowfish-epsilon .widget-readout", before], timeout=10_000)
    eps = f"{float(slider.inner_text()):.3g}"
    page.wait_for_function("([d, e]) => document.querySelector(d).textContent.includes(e)",
                           arg=[DETAILS, f"ε = {eps} "], timeout=30_000)
    return eps


def details_survive_epsilon_steps(page) -> None:
    """Issue 28 (6), on a page whose explorer is drawn at ε = 1: details the user opened stay open while ε moves, and
    show the new ε; closed again, they stay closed (the readout's new value must not reset what the user chose)."""
    details = page.locator(DETAILS)
    assert page.locator(f"{EXPLORER} .blowfish-readout details").count() == 1
    assert not page.evaluate(IS_OPEN)  # closed at first: the plain sentence leads
    assert "ε = 1 " in details.text_content()
    details.locator("summary").click()
    page.wait_for_function(IS_OPEN)
    assert "ε = 1 " in details.inner_text()  # open: the figures are on screen

    eps = _epsilon_step(page)  # the kernel sends the readout's new HTML
    assert eps != "1"
    assert page.evaluate(IS_OPEN), "the details snapped shut on an ε step"
    shown = details.inner_text()  # what is on screen, not only in the DOM
    assert f"ε = {eps} " in shown and "ε = 1 " not in shown and "Δ of the query" in shown, shown
    page.locator(EXPLORER).screenshot(path=str(ARTIFACTS / "explorer-details-open-after-epsilon-step.png"))

    details.locator("summary").click()  # closed by the user
    page.wait_for_function(f"() => !({IS_OPEN})()")
    again = _epsilon_step(page)
    assert again != eps and f"ε = {again} " in details.text_content()
    assert not page.evaluate(IS_OPEN), "the closed details opened on an ε step"
    assert "Δ of the query" not in page.locator(f"{EXPLORER} .blowfish-readout").inner_text()  # behind the click


def test_opened_details_stay_open_while_epsilon_moves(lab, page):
    _ready(page, lab)
    details_survive_epsilon_steps(page)
