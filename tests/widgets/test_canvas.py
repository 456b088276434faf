"""PolicyCanvas: state from a Policy, aggregation of large domains, and the JS/Python trait contract."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from blowfish_nb import Domain, policy
from blowfish_nb.widgets import PolicyCanvas
from blowfish_nb.widgets.canvas import MAX_DRAWN_NODES

ROOT = Path(__file__).resolve().parents[2]


def domain(k):
    return Domain.from_column(pd.Series([0.0], name="v"), bins=k, bounds=(0, k))


def test_threshold_policy_is_drawn_edge_for_edge():
    c = PolicyCanvas(policy.threshold(domain(10), 3))
    ids = [n["id"] for n in c.nodes]
    assert ids == [f"c{i}" for i in range(10)]
    drawn = {(int(a[1:]), int(b[1:])) for a, b in c.edges}
    assert drawn == {(a, b) for a in range(10) for b in range(a + 1, 10) if b - a <= 3}
    assert c.nodes[0]["label"] == "0" and c.nodes[9]["label"] == "9" and "threshold θ=3" in c.title


def test_dp_policy_draws_bottom_as_its_own_node():
    c = PolicyCanvas(policy.dp(domain(5)))
    assert c.nodes[-1] == {"id": "bottom", "label": "⊥", "bottom": True}
    assert sorted(c.edges) == sorted([f"c{i}", "bottom"] for i in range(5))


def test_large_domain_is_drawn_as_blocks():
    c = PolicyCanvas(policy.threshold(domain(1000), 40))
    assert len(c.nodes) == MAX_DRAWN_NODES
    # blocks hold ~15.6 cells, so θ=40 joins each block to the next 2 or 3 blocks
    spans = {int(b[1:]) - int(a[1:]) for a, b in c.edges}
    assert spans == {1, 2, 3}
    assert "projected onto 64 blocks" in c.title


def test_show_replaces_whole_lists_and_notifies():
    c = PolicyCanvas(policy.line(domain(6)))
    seen = []
    c.observe(lambda ch: seen.append(ch["name"]), names=["edges", "nodes"])
    before = c.edges
    c.show(policy.threshold(domain(6), 2))
    assert "edges" in seen and c.edges is not before and len(c.edges) == 9
    assert c.policy.params["theta"] == 2


def test_state_round_trip():
    c = PolicyCanvas(policy.threshold(domain(4), 2))
    state = c.get_state()
    other = PolicyCanvas()
    other.set_state({k: state[k] for k in ("nodes", "edges", "arrangement", "title", "height")})
    assert other.nodes == c.nodes and other.edges == c.edges and other.title == c.title


def test_js_reads_exactly_the_python_traits():
    source = (ROOT / "js" / "canvas.js").read_text()
    declared = json.loads(re.search(r"export const TRAITS = (\[.*?\]);", source).group(1))
    used = set(re.findall(r'model\.(?:get|set)\("(\w+)"', source))
    assert used <= set(declared), used - set(declared)
    base = set(PolicyCanvas.__mro__[1]().trait_names(sync=True))
    ours = set(PolicyCanvas().trait_names(sync=True)) - base
    assert ours == set(declared)


def test_bundle_is_built_and_holds_cytoscape():
    bundle = ROOT / "blowfish_nb" / "widgets" / "static" / "canvas.js"
    text = bundle.read_text()
    assert "cytoscape" in text.lower() and len(text) > 100_000  # the real library, bundled
