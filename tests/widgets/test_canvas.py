"""PolicyCanvas: drawing, every edit against the policy it must produce, refusals, undo/redo, facts, data-unit
labels, show() vs assigning, the θ box, the stylesheet, the JS contract."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import Domain, policy, workload
from blowfish_nb.policy import BOTTOM
from blowfish_nb.widgets import PolicyCanvas
from blowfish_nb.widgets.canvas import BLOCKS, EDIT_OPS, MAX_DRAWN_NODES

ROOT = Path(__file__).resolve().parents[2]


def domain(k):
    return Domain.from_column(pd.Series([0.0], name="v"), bins=k, bounds=(0, k))


def edge_set(pol):
    return {tuple(e) for e in pol.edges().tolist()}


def test_threshold_policy_is_drawn_edge_for_edge():
    c = PolicyCanvas(policy.threshold(domain(10), 3))
    assert [n["id"] for n in c.nodes] == [f"c{i}" for i in range(10)]
    drawn = {(int(a[1:]), int(b[1:])) for a, b in c.edges}
    assert drawn == {(a, b) for a in range(10) for b in range(a + 1, 10) if b - a <= 3}
    assert c.nodes[0]["label"] == "0–1" and c.nodes[9]["label"] == "9–10" and "threshold θ=3" in c.title
    assert c.editable and c.arrangement == "line" and c.window == [0, 10]


def test_dp_policy_draws_bottom_as_its_own_node():
    c = PolicyCanvas(policy.dp(domain(5)))
    assert c.nodes[-1] == {"id": "bottom", "label": "⊥", "bottom": True}
    assert sorted(c.edges) == sorted([f"c{i}", "bottom"] for i in range(5))


def test_two_attributes_are_a_grid_and_categories_a_circle():
    c = PolicyCanvas(policy.grid(Domain.grid((3, 4)), 1))
    assert c.arrangement == "grid" and len(c.nodes) == 12 and len(c.edges) == 17
    assert {(n["row"], n["col"]) for n in c.nodes} == {(r, q) for r in range(3) for q in range(4)}
    cat = Domain.from_frame(pd.DataFrame({"c": list("abcd")}), bins={"c": list("abcd")})
    assert PolicyCanvas(policy.attribute(cat)).arrangement == "circle"


def test_large_domain_is_drawn_as_blocks_and_zoom_gives_cells():
    pol = policy.threshold(domain(1000), 40)
    c = PolicyCanvas(pol)
    assert len(c.nodes) == BLOCKS and not c.editable
    # blocks hold 15–16 cells, so θ = 40 joins each block to the next 2 or 3 blocks
    assert {int(b[1:]) - int(a[1:]) for a, b in c.edges} == {1, 2, 3}
    c.edit({"op": "add", "source": "b0", "target": "b9"})
    assert c.message.startswith("✗") and "zoom in" in c.message and c.policy is pol
    c.zoom(300, 300 + MAX_DRAWN_NODES)
    assert c.editable and len(c.nodes) == MAX_DRAWN_NODES and c.window == [300, 500]
    drawn = {(int(a[1:]), int(b[1:])) for a, b in c.edges}
    assert drawn == {(a, b) for a, b in edge_set(pol) if 300 <= a < 500 and 300 <= b < 500}
    assert "edges leave the view" in c.title
    c.zoom(-50, 10**6)  # clamped to the domain
    assert c.window == [0, 1000] and not c.editable


def test_add_remove_block_bottom_theta_make_the_expected_policy():
    d = domain(8)
    c = PolicyCanvas(policy.line(d))
    seen = []
    c.observe(lambda ch: seen.append(ch["new"]), names="policy")
    expected = edge_set(policy.line(d))

    c.edit({"op": "add", "source": "c0", "target": "c5"})
    expected |= {(0, 5)}
    assert edge_set(c.policy) == expected and c.message.startswith("✓")
    c.edit({"op": "remove", "source": "c3", "target": "c2"})  # either direction names the edge
    expected -= {(2, 3)}
    assert edge_set(c.policy) == expected
    c.edit({"op": "block", "nodes": ["c1", "c4", "c6"]})
    expected |= {(1, 4), (1, 6), (4, 6)}
    assert edge_set(c.policy) == expected
    c.edit({"op": "bottom", "nodes": ["c7", "c2"]})
    expected |= {(2, BOTTOM), (7, BOTTOM)}
    assert edge_set(c.policy) == expected and c.policy.has_bottom and c.nodes[-1]["id"] == "bottom"
    c.edit({"op": "add", "source": "bottom", "target": "c3"})
    expected |= {(3, BOTTOM)}
    assert edge_set(c.policy) == expected
    c.edit({"op": "bottom", "nodes": ["c7", "c2", "c3"]})  # all have ⊥ edges: removed
    expected -= {(2, BOTTOM), (3, BOTTOM), (7, BOTTOM)}
    assert edge_set(c.policy) == expected and not c.policy.has_bottom
    assert len(seen) == 6  # observers fire on every edit

    c.edit({"op": "theta", "theta": 3})
    assert edge_set(c.policy) == edge_set(policy.threshold(d, 3))


def test_undo_redo_walk_back_and_forth():
    d = domain(6)
    c = PolicyCanvas(policy.line(d))
    states = [edge_set(c.policy)]
    for req in ({"op": "add", "source": "c0", "target": "c2"}, {"op": "remove", "source": "c4", "target": "c5"},
                {"op": "theta", "theta": 2}):
        c.edit(req)
        states.append(edge_set(c.policy))
    assert c.history == [3, 0]
    for back in (2, 1, 0):
        c.undo()
        assert edge_set(c.policy) == states[back]
    assert c.history == [0, 3]
    c.redo()
    assert edge_set(c.policy) == states[1] and c.history == [1, 2]
    c.edit({"op": "add", "source": "c1", "target": "c5"})  # a new edit drops the redo steps
    assert c.history == [2, 0]
    c.redo()
    assert c.message == "✗ nothing to redo"


@pytest.mark.parametrize("request_, why", [
    ({"op": "add", "source": "c1", "target": "c1"}, "self-loop"),
    ({"op": "add", "source": "c1", "target": "c99"}, "unknown node 'c99'"),
    ({"op": "add", "source": "x", "target": "c2"}, "unknown node 'x'"),
    ({"op": "add", "source": "c0", "target": "c1"}, "already in the graph"),
    ({"op": "add", "source": "c0", "target": "bottom"}, "no ⊥ node"),
    ({"op": "remove", "source": "c0", "target": "c3"}, "not an edge"),
    ({"op": "block", "nodes": ["c2"]}, "at least two cells"),
    ({"op": "block", "nodes": "c2"}, "must be a list"),
    ({"op": "theta", "theta": 0}, "θ must be a whole number"),
    ({"op": "theta", "theta": 1.5}, "θ must be a whole number"),
    ({"op": "zoom", "start": 3, "stop": 3}, "holds no cells"),
    ({"op": "explode"}, "unknown edit 'explode'"),
])
def test_invalid_edits_are_refused_with_a_message_and_change_nothing(request_, why):
    c = PolicyCanvas(policy.line(domain(6)))
    before, history, nodes = c.policy, list(c.history), list(c.nodes)
    c.edit(request_)
    assert c.message.startswith("✗") and why in c.message
    assert c.policy is before and c.history == history and c.nodes == nodes


def test_facts_follow_the_policy_and_the_query():
    d = domain(16)
    c = PolicyCanvas(policy.line(d))
    assert c.facts == {"edges": 15, "components": 1, "tree": True, "forest": True, "bottom": False,
                       "sensitivity": 2.0, "query": "histogram"}
    c.workload = workload.prefix(16)
    assert c.facts["query"] == "cumulative histogram"
    assert c.facts["sensitivity"] == policy.line(d).sensitivity(workload.prefix(16)) == 1.0
    c.edit({"op": "add", "source": "c0", "target": "c15"})
    assert c.facts["tree"] is False and c.facts["sensitivity"] == c.policy.sensitivity(workload.prefix(16)) == 15.0
    c.edit({"op": "remove", "source": "c7", "target": "c8"})
    c.edit({"op": "remove", "source": "c0", "target": "c15"})
    assert c.facts["components"] == 2 and c.facts["forest"] and not c.facts["tree"]


def test_front_end_messages_take_the_same_path_and_state_round_trips():
    c = PolicyCanvas(policy.line(domain(5)))
    c._on_msg(c, {"op": "add", "source": "c0", "target": "c4"}, [])  # what model.send delivers
    assert (0, 4) in edge_set(c.policy)
    c.set_state({"mode": "remove"})  # the toolbar sets the mode
    assert c.mode == "remove"
    state = c.get_state()
    other = PolicyCanvas()
    other.set_state({k: state[k] for k in ("nodes", "edges", "arrangement", "title", "height", "mode", "facts",
                                           "editable", "window", "history", "message")})
    assert other.nodes == c.nodes and other.edges == c.edges and other.facts == c.facts and other.mode == "remove"
    with pytest.raises(Exception):
        c.set_state({"mode": "paint everything"})


def test_whole_list_updates_notify():
    c = PolicyCanvas(policy.line(domain(6)))
    seen = []
    c.observe(lambda ch: seen.append(ch["name"]), names=["edges", "nodes"])
    before = c.edges
    c.show(policy.threshold(domain(6), 2))
    assert "edges" in seen and c.edges is not before and len(c.edges) == 9


def test_js_reads_exactly_the_python_traits_and_sends_only_known_ops():
    source = (ROOT / "js" / "canvas.js").read_text()

    def names(array_text):
        return re.findall(r'"(\w+)"', array_text)

    declared = names(re.search(r"export const TRAITS = \[(.*?)\];", source, re.S).group(1))
    used = set(re.findall(r'model\.(?:get|set)\("(\w+)"', source)) | set(re.findall(r"change:(\w+)", source))
    for loop in re.findall(r"for \(const name of \[(.*?)\]\)", source, re.S):
        used |= set(names(loop))
    assert used <= set(declared), used - set(declared)
    base = set(PolicyCanvas.__mro__[1]().trait_names(sync=True))
    ours = {n for n in set(PolicyCanvas().trait_names(sync=True)) - base if not n.startswith("_")}  # not _esm/_css
    assert ours == set(declared)
    ops = names(re.search(r"export const OPS = \[(.*?)\];", source, re.S).group(1))
    assert ops == list(EDIT_OPS)
    sent = set(re.findall(r'op: "(\w+)"', source))
    assert sent == set(EDIT_OPS)


def test_bundle_is_built_and_holds_cytoscape_and_edgehandles():
    text = (ROOT / "blowfish_nb" / "widgets" / "static" / "canvas.js").read_text()
    assert "cytoscape" in text.lower() and len(text) > 100_000  # the real library, bundled
    assert "ehcomplete" in text and "enableDrawMode" in text


@pytest.mark.parametrize("theta, window", [(40, (0, 1000)), (7, (130, 870)), (300, (0, 1000))])
def test_threshold_block_view_equals_the_generic_projection(theta, window):
    """The block view of a threshold policy (drawn through its projection hook) against the edge walk of a Custom copy."""
    from blowfish_nb.policy import project

    pol = policy.threshold(domain(1000), theta)
    c = PolicyCanvas(pol)
    c.zoom(*window)
    start, stop = window
    idx = np.arange(1000)
    block_of = np.where(idx < start, BLOCKS, np.where(idx >= stop, BLOCKS + 1, (idx - start) * BLOCKS // (stop - start)))
    used = np.unique(block_of)
    walked = project(policy.custom(pol.domain, pol.edges()), np.searchsorted(used, block_of)).policy
    expected = {(int(u), int(v)) for u, v in walked.edges().tolist() if used[u] < BLOCKS and used[v] < BLOCKS}
    assert {(int(a[1:]), int(b[1:])) for a, b in c.edges} == expected


def age_domain(k=30):
    return Domain.from_column(pd.Series([17.0], name="age"), bins=k, bounds=(17, 91))


def test_labels_and_messages_speak_in_data_units():
    d = age_domain()  # bins of 74/30 ≈ 2.467 years: one decimal
    c = PolicyCanvas(policy.line(d))
    assert [n["label"] for n in c.nodes[:2]] == ["17.0–19.5", "19.5–21.9"] and c.nodes[-1]["label"] == "88.5–91.0"
    c.edit({"op": "add", "source": "c3", "target": "c20"})
    assert c.message == "✓ added an edge between age 24.4–26.9 and age 66.3–68.8"
    assert not re.search(r"\d\.\d{3}", c.message)  # no float noise such as 26.866666666666667
    c.edit({"op": "remove", "source": "c20", "target": "c3"})
    assert c.message == "✓ removed the edge between age 24.4–26.9 and age 66.3–68.8"
    c.edit({"op": "block", "nodes": ["c2", "c1", "c0"]})
    assert c.message == "✓ joined 3 cells into one block: age 17.0–19.5, age 19.5–21.9, age 21.9–24.4"
    c.edit({"op": "theta", "theta": 2})
    assert c.message == "✓ θ preset: every pair of cells within 2 bins (age 4.9) joined"
    salary = Domain.from_column(pd.Series([0.0], name="salary"), bins=50, bounds=(0, 250_000))
    s = PolicyCanvas(policy.threshold(salary, 3))
    assert s.nodes[5]["label"] == "25,000–30,000"  # not "2.5e+04"


def test_block_views_and_zoom_show_value_ranges():
    d = Domain.from_column(pd.Series([0.0], name="salary"), bins=1000, bounds=(0, 250_000))
    c = PolicyCanvas(policy.threshold(d, 40))
    assert [n["label"] for n in c.nodes[:2]] == ["0–4,000", "4,000–8,000"]  # blocks of 15–16 bins of 250
    assert c.nodes[-1]["label"] == "246,250–250,000" and "salary 0–250,000 drawn as 64 blocks" in c.title
    c.zoom(300, 500)
    assert c.message == "✓ showing salary 75,000–125,000 (200 of 1000 bins)".replace("✓ ", "")
    assert c.nodes[0]["label"] == "75,000–75,250" and "salary 75,000–125,000 (200 of 1000 bins)" in c.title
    grid = Domain.from_frame(pd.DataFrame({"age": [20.0], "hours": [40.0]}), bins={"age": 40, "hours": 20},
                             bounds={"age": (10, 90), "hours": (0, 100)})
    g = PolicyCanvas(policy.grid(grid, 1))
    assert not g.editable and g.nodes[0]["label"] == "10–16 · 0–10"  # 14 runs: 3 age bins of 2 years, 2 hour bins of 5
    assert g.nodes[0]["row_label"] == "10–16" and g.nodes[0]["col_label"] == "0–10"


def test_show_clears_history_and_assignment_is_an_edit():
    d = domain(8)
    c = PolicyCanvas(policy.line(d))
    c.edit({"op": "add", "source": "c0", "target": "c5"})
    c.undo()
    assert c.history == [0, 1]
    c.edit({"op": "add", "source": "c1", "target": "c6"})
    assert c.history == [1, 0] and c.message.startswith("✓")
    seen = []
    c.observe(lambda ch: seen.append(ch["new"]), names="policy")
    c.show(policy.threshold(d, 3))  # a control chose this policy: not a step to undo
    assert c.history == [0, 0] and c.message == "" and len(seen) == 1
    assert edge_set(c.policy) == edge_set(policy.threshold(d, 3))
    c.undo()
    assert c.message == "✗ nothing to undo" and edge_set(c.policy) == edge_set(policy.threshold(d, 3))
    c.edit({"op": "remove", "source": "c0", "target": "c3"})  # edits after show() are undoable again
    c.undo()
    assert edge_set(c.policy) == edge_set(policy.threshold(d, 3)) and c.history == [0, 1]
    c.policy = policy.line(d)  # assigning keeps today's behaviour: an undoable change
    assert c.history == [1, 0]
    c.undo()
    assert edge_set(c.policy) == edge_set(policy.threshold(d, 3))


def test_theta_box_follows_the_shown_threshold_policy():
    d = domain(12)
    c = PolicyCanvas(policy.threshold(d, 3))
    assert c.theta == 3 and c.get_state()["theta"] == 3
    c.show(policy.threshold(d, 7))
    assert c.theta == 7
    c.show(policy.dp(d))  # no θ: the box keeps the last one
    assert c.theta == 7
    c.edit({"op": "theta", "theta": 2})
    assert c.theta == 2 and edge_set(c.policy) == edge_set(policy.threshold(d, 2))
    c.undo()
    assert c.theta == 2 and c.policy.summary() == policy.dp(d).summary()
    c.redo()
    assert c.theta == 2
    assert PolicyCanvas(policy.grid(Domain.grid((3, 3)), 2)).theta == 2


def test_stylesheet_ships_with_the_widget_and_js_sets_no_inline_style():
    css = (ROOT / "blowfish_nb" / "widgets" / "canvas.css").read_text()
    assert PolicyCanvas().get_state()["_css"] == css  # anywidget sends the file's text to the front end
    for cls in ("blowfish-canvas-title", "blowfish-canvas-facts", "blowfish-canvas-message", "blowfish-canvas-toolbar"):
        assert f".{cls}" in css
    lines = re.search(r"\.blowfish-canvas-title,\s*\.blowfish-canvas-facts,\s*\.blowfish-canvas-message \{(.*?)\}", css,
                      re.S).group(1)
    for rule in ("height: 16px", "line-height: 16px", "white-space: nowrap", "text-overflow: ellipsis"):
        assert rule in lines  # the lines around the graph never change its position
    source = (ROOT / "js" / "canvas.js").read_text()
    inline = re.findall(r"\.style\.(\w+)", source)
    assert inline == ["setProperty"], inline  # only the height, as a CSS variable


def test_the_canvas_takes_a_drag_target_at_once_and_answers_a_drag_to_nowhere():
    """Issue 28 (1), the source side (the browser test drives it): no hover delay before a drag's target counts, a
    release edgehandles cancels is settled by where it happened, and nodes are sized by their spacing."""
    source = (ROOT / "js" / "canvas.js").read_text()
    assert "hoverDelay: 0" in source and 'cy.on("ehcancel"' in source
    assert "✗ release on a node to add an edge" in source
    assert 'width: "data(size)"' in source and "export function nodeSize" in source


def test_a_custom_graph_title_counts_its_edges_once():
    """Issue 28 (7): not "custom edges=145 on salary (50 cells): 145 edges"."""
    c = PolicyCanvas(policy.threshold(Domain.grid(10), 2))
    c.edit({"op": "add", "source": "c0", "target": "c9"})
    assert c.policy.family == "custom" and c.title.count("edges") == 1, c.title
    assert c.title.startswith("custom graph on ") and c.title.endswith(f": {c.policy.edge_count():,} edges")


def test_a_new_policy_on_the_same_domain_relabels_no_cell(monkeypatch):
    """A θ step or policy switch keeps the domain: its cells' nodes are reused (labelling 50 cells in data units was
    half the canvas's kernel time of a θ step, issue 28); another domain object gets its own labels, and the nodes a
    view hands out are copies (a grid's drawing adds keys to them)."""
    import blowfish_nb.widgets.canvas as canvas

    d = domain(12)
    c = PolicyCanvas(policy.threshold(d, 2))
    first = [dict(n) for n in c.nodes]
    labelled = []
    real = canvas._node_label
    monkeypatch.setattr(canvas, "_node_label", lambda dd, i: labelled.append(i) or real(dd, i))
    for pol in (policy.threshold(d, 3), policy.line(d), policy.threshold(d, 2)):
        c.show(pol)
        assert [n for n in c.nodes if not n.get("bottom")] == first
    assert labelled == []
    c.nodes[0]["label"] = "changed"  # a copy: the next drawing is unaffected
    c.show(policy.threshold(d, 4))
    assert c.nodes[0]["label"] == "0–1"
    other = Domain.from_column(pd.Series([0.0], name="v"), bins=12, bounds=(0, 24))  # the same size, other units
    c.show(policy.threshold(other, 2))
    assert len(labelled) == 12 and c.nodes[0]["label"] == "0–2"
