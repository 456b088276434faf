"""The widgets' text views: what a notebook shows where a widget cannot be drawn (saved, static, offline).

ipywidgets and anywidget put ``repr(widget)`` in the ``text/plain`` of a widget's output (ipywidgets cuts it
at 110 characters). The text names the widget's state in words, lets a student count a distance on a small
policy without the drawing, and never shows a count, true or noisy.
"""

from __future__ import annotations

import re
from collections import deque

import pytest

from blowfish_nb import Domain, datasets, policy
from blowfish_nb.labs import lab01
from blowfish_nb.widgets import AnalystPanel, CuratorExplorer, Explorer, PolicyCanvas
from blowfish_nb.widgets.canvas import LISTED_EDGES


def _text_plain(widget) -> str:
    bundle = widget._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    return data["text/plain"]


def _numbers(text: str) -> set[float]:
    return {float(t.replace(",", "")) for t in re.findall(r"\d[\d,]*(?:\.\d+)?", text)}


def _distance_from_text(text: str, u: str, v: str) -> float:
    """A shortest path counted on the edges the text lists, the way a student reading it would."""
    listed = text.split("edges: ", 1)[1]
    pairs = re.findall(r"(\d+|⊥)–(\d+|⊥)", listed)
    nbrs: dict[str, set[str]] = {}
    for a, b in pairs:
        nbrs.setdefault(a, set()).add(b)
        nbrs.setdefault(b, set()).add(a)
    seen, todo = {u: 0}, deque([u])
    while todo:
        a = todo.popleft()
        for b in nbrs.get(a, ()):
            if b not in seen:
                seen[b] = seen[a] + 1
                todo.append(b)
    return seen.get(v, float("inf"))


DOMAIN = lab01.salary_domain()
SMALL = {
    "line": policy.line(DOMAIN), "dp": policy.dp(DOMAIN), "threshold": policy.threshold(DOMAIN, 2),
    "partition": policy.partition(DOMAIN, [list(b) for b in lab01.PARTITION_BLOCKS]),
}


@pytest.mark.parametrize("name", SMALL)
def test_a_small_policy_can_be_counted_from_the_text(name):
    pol = SMALL[name]
    text = _text_plain(PolicyCanvas(pol))
    assert text == repr(PolicyCanvas(pol))
    assert text.startswith(f"PolicyCanvas({pol.summary()}, {pol.edge_count()} edges)")
    assert "object at 0x" not in text
    for u, v in [(1, 4), (1, 8), (0, 9), (1, 6)]:  # lab 1's questions count these
        assert _distance_from_text(text, str(u), str(v)) == pol.distance(u, v), (u, v)


def test_lab_one_question_one_is_answerable_from_the_text():
    text = repr(PolicyCanvas(policy.line(DOMAIN)))
    assert _distance_from_text(text, "1", "4") == policy.line(DOMAIN).distance(1, 4)
    assert "salary 0–25,000" in text and "salary 225,000–250,000" in text  # the cells in data units


def test_a_large_graph_is_summarised_not_listed():
    pol = policy.bounded(DOMAIN)
    assert pol.edge_count() > LISTED_EDGES
    text = repr(PolicyCanvas(pol))
    assert f"{pol.edge_count()} edges" in text and "not listed" in text
    assert "0–1," not in text


def test_the_text_follows_edits_and_names_grid_cells():
    c = PolicyCanvas(policy.line(Domain.grid(5)))
    assert _distance_from_text(repr(c), "0", "4") == 4
    c.edit({"op": "add", "source": "c0", "target": "c4"})
    assert _distance_from_text(repr(c), "0", "4") == 1 and "5 edges" in repr(c)
    grid = repr(PolicyCanvas(policy.attribute(Domain.grid((2, 2)))))
    assert "(0, 0)–(1, 0)" in grid and "4 edges" in grid


def test_an_empty_canvas_says_so():
    assert repr(PolicyCanvas()) == "PolicyCanvas(no policy drawn)"


def test_the_explorer_text_names_the_controls_and_no_count():
    df = datasets.salaries(n=500, seed=0)
    ex = CuratorExplorer(df, column="age", bins=31, theta=3, epsilon=0.5, rng=0)
    text = _text_plain(ex)
    assert text == repr(ex) and Explorer is CuratorExplorer  # not cut at 110 characters
    assert text == f"CuratorExplorer(histogram, {ex.policy.summary()}, ε = 0.5)"
    # the only numbers: θ, the number of cells, ε — no true or noisy count
    assert _numbers(text) == {3.0, 31.0, 0.5}
    ex.epsilon_slider.value = 2.0
    ex.family_dropdown.value = "line"
    assert repr(ex) == f"CuratorExplorer(histogram, {ex.policy.summary()}, ε = 2)"


def test_the_analyst_text_names_the_request_and_the_budget_but_no_answer():
    s = datasets.salaries(n=800, seed=1).blowfish.session(1.0, bins={"age": 31}, reproducible=True)
    panel = AnalystPanel(s, alpha=25, beta=0.05, rng=0)
    assert _text_plain(panel) == repr(panel) == (
        "AnalystPanel(histogram of age, α = 25, β = 0.05; 0 releases, ε left 1 of 1)")
    release = panel.run()
    text = _text_plain(panel)
    assert text == repr(panel) and "1 release," in text
    assert _numbers(text) == {25.0, 0.05, 1.0, float(f"{s.remaining:.3g}")}
    assert not {float(a) for a in release.answers} & _numbers(text) - {1.0, 25.0}
