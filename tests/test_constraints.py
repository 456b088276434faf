"""Histograms under known count constraints (He et al. §8) against brute force over databases of ≤ 4 tuples."""

import networkx as nx
import numpy as np
import pandas as pd
import pytest

import blowfish_nb as bf
from blowfish_nb import Domain, constraints, policy
from blowfish_nb.exceptions import InvalidParameterError, PolicyError
from blowfish_nb.policy.constrained import longest_marked
from tests.brute_constraints import brute_histogram_sensitivity as brute

EX83 = Domain.grid((2, 2, 3), names=["A1", "A2", "A3"])


@pytest.mark.slow
def test_paper_example_8_3_is_8_by_closed_form_search_and_brute_force():
    q = constraints.marginal(EX83, ["A1", "A2"])
    p = policy.constrained(policy.bounded(EX83), q)
    assert p.histogram_sensitivity() == 8.0  # Thm 8.4: 2·size(C)
    assert p.histogram_sensitivity("exact") == 8.0 == p.histogram_sensitivity("exact", neighbours="edges")
    g = p.constraint_graph()
    cells = [n for n in g if n not in ("v+", "v-")]
    # Example 8.2: a complete digraph on the four counts and the edge v+ → v−: α = 4, ξ = 1
    assert g.subgraph(cells).number_of_edges() == 12 and list(g.successors("v+")) == ["v-"]
    assert not list(g.predecessors("v-")) or list(g.predecessors("v-")) == ["v+"]
    assert brute(policy.bounded(EX83), q, 4) == 8.0  # the paper's D1/D2 with four rows, found by enumeration


@pytest.mark.parametrize("name, pol, q, n", [
    ("line, two boxes", policy.line(Domain.grid(6)), constraints.rectangles(Domain.grid(6), [[(0, 1)], [(4, 5)]]), 4),
    ("attribute, one marginal", policy.attribute(Domain.grid((2, 3), names=["A", "B"])),
     constraints.marginal(Domain.grid((2, 3), names=["A", "B"]), ["A"]), 3),
    ("bounded, one marginal", policy.bounded(Domain.grid((2, 2), names=["A", "B"])),
     constraints.marginal(Domain.grid((2, 2), names=["A", "B"]), ["B"]), 3),
    ("threshold 2, a middle box", policy.threshold(Domain.grid(6), 2),
     constraints.rectangles(Domain.grid(6), [[(2, 3)]]), 3),
])
def test_sensitivity_under_definition_4_1_equals_brute_force(name, pol, q, n):
    assert policy.constrained(pol, q).histogram_sensitivity() == brute(pol, q, n)


@pytest.mark.parametrize("pol, q, n", [
    (policy.attribute(Domain.grid((2, 2, 2), names=["A", "B", "C"])),
     constraints.combine(constraints.marginal(Domain.grid((2, 2, 2), names=["A", "B", "C"]), ["A"]),
                         constraints.marginal(Domain.grid((2, 2, 2), names=["A", "B", "C"]), ["B"])), 4),
    (policy.threshold(Domain.grid(7), 2),
     constraints.rectangles(Domain.grid(7), [[(0, 1)], [(3, 3)], [(5, 6)]]), 4),
    (policy.line(Domain.grid(6)), constraints.rectangles(Domain.grid(6), [[(0, 1)], [(4, 5)]]), 4),
])
def test_paper_model_where_every_change_is_an_edge_bounds_the_brute_force(pol, q, n):
    value = policy.constrained(pol, q).histogram_sensitivity(neighbours="edges")
    assert value >= brute(pol, q, n, along_edges_only=True)


def test_theorems_8_5_and_8_6_understate_definition_4_1():
    """Records the policy does not protect may change to restore the counts (Def. 4.1, condition 3 minimality)."""
    d = Domain.grid((2, 2, 2), names=["A", "B", "C"])
    q = constraints.combine(constraints.marginal(d, ["A"]), constraints.marginal(d, ["B"]))
    p = policy.constrained(policy.attribute(d), q)
    assert p.histogram_sensitivity(neighbours="edges") == 4.0  # Thm 8.5: 2·max size(C_i)
    assert brute(policy.attribute(d), q, 4) == 8.0  # Def. 4.1: larger
    with pytest.raises(PolicyError, match="not sparse"):  # one unprotected move changes both marginals
        p.histogram_sensitivity()
    line = policy.line(Domain.grid(6))
    q = constraints.rectangles(Domain.grid(6), [[(0, 1)], [(4, 5)]])
    assert policy.constrained(line, q).histogram_sensitivity(neighbours="edges") == 4.0  # Thm 8.6: 2·(1 + 1)
    assert brute(line, q, 3) == 6.0 == policy.constrained(line, q).histogram_sensitivity()


def test_closed_forms_agree_with_the_exact_search():
    d = Domain.grid((3, 2, 2), names=["A", "B", "C"])
    p = policy.constrained(policy.bounded(d), constraints.marginal(d, ["A", "B"]))
    assert p.histogram_sensitivity() == p.histogram_sensitivity("exact") == 12.0
    d = Domain.grid((3, 2, 2), names=["A", "B", "C"])
    q = constraints.combine(constraints.marginal(d, ["A"]), constraints.marginal(d, ["B"]))
    p = policy.constrained(policy.attribute(d), q)
    assert p.histogram_sensitivity(neighbours="edges") == p.histogram_sensitivity("exact", neighbours="edges") == 6.0
    g = Domain.grid((8, 8))
    boxes = [[(0, 1), (0, 1)], [(0, 1), (3, 4)], [(6, 7), (6, 7)]]
    p = policy.constrained(policy.grid(g, 1), constraints.rectangles(g, boxes))
    # boxes 0 and 1 are 2 apart (> θ = 1): three components of one box each
    assert p.histogram_sensitivity(neighbours="edges") == 4.0 == p.histogram_sensitivity("exact", neighbours="edges")
    p = policy.constrained(policy.grid(g, 2), constraints.rectangles(g, boxes))
    assert p.histogram_sensitivity(neighbours="edges") == 6.0 == p.histogram_sensitivity("exact", neighbours="edges")


def test_longest_marked_cycle_and_path_by_hand():
    g = nx.DiGraph()
    g.add_edge("v+", "a", marked=True)
    g.add_edge("a", "b", marked=False)
    g.add_edge("b", "c", marked=False)
    g.add_edge("c", "a", marked=False)
    g.add_edge("c", "v-", marked=False)
    g.add_edge("v+", "v-", marked=False)
    assert longest_marked(g, "v+", "v-") == 4  # v+ a b c v− (the cycle a b c has no marked edge)
    g["a"]["b"]["marked"] = True
    g.remove_edge("v+", "a")
    assert longest_marked(g, "v+", "v-") == 3  # the cycle a → b → c → a


def test_non_sparse_constraints_say_why():
    d = Domain.grid(5)
    q = constraints.combine(constraints.count(d, [1, 2], "one and two"), constraints.count(d, [1, 3], "one and three"))
    p = policy.constrained(policy.line(d), q)
    with pytest.raises(PolicyError, match=r"not sparse.*Def\. 8\.2.*NP-hard.*Thm 8\.1"):
        p.histogram_sensitivity(neighbours="edges")
    with pytest.raises(PolicyError, match="not sparse"):
        p.constraint_graph()


def test_bound_and_size_limits():
    d = Domain.grid(40)
    boxes = [[(2 * i, 2 * i)] for i in range(20)]
    p = policy.constrained(policy.line(d), constraints.rectangles(d, boxes))
    with pytest.raises(PolicyError, match="method='bound'"):
        p.histogram_sensitivity()
    assert p.histogram_sensitivity("bound") == 2 * 21
    assert p.histogram_sensitivity("bound", neighbours="edges") == 2 * 20


def test_release_with_constraints_uses_laplace_with_that_sensitivity():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"A": rng.integers(0, 2, 400), "B": rng.integers(0, 3, 400)})
    bins = {"A": [0, 1, 2], "B": [0, 1, 2, 3]}
    r = df.blowfish.release("histogram", ["A", "B"], bins=bins, policy="bounded", epsilon=0.5, rng=0,
                            constraints=lambda d: constraints.marginal(d, ["A"]))
    assert r.mechanism == "Laplace" and r.provenance["sensitivity"] == 4.0  # 2·size(C), Thm 8.4
    t = np.exp(-0.5 / 4.0)  # discrete Laplace of scale Δ/ε = 8: variance 2t/(1 − t)²
    assert r.expected_error == pytest.approx(2 * t / (1 - t) ** 2)
    assert "known counts" in r.policy.summary()
    with pytest.raises(InvalidParameterError, match="query='histogram'"):
        df.blowfish.release("cumulative", ["A", "B"], bins=bins, policy="bounded", epsilon=0.5,
                            constraints=lambda d: constraints.marginal(d, ["A"]))
    with pytest.raises(InvalidParameterError, match="only the Laplace mechanism"):
        df.blowfish.release("histogram", ["A", "B"], bins=bins, policy="bounded", epsilon=0.5, mechanism="hierarchical",
                            constraints=lambda d: constraints.marginal(d, ["A"]))
    with pytest.raises(InvalidParameterError, match="same bins"):
        df.blowfish.release("histogram", ["A", "B"], bins=bins, policy="bounded", epsilon=0.5,
                            constraints=constraints.marginal(Domain.grid((2, 2), names=["A", "B"]), ["A"]))


def test_constraint_builders_validate():
    with pytest.raises(InvalidParameterError, match="histogram itself"):
        constraints.marginal(EX83, ["A1", "A2", "A3"])
    with pytest.raises(InvalidParameterError, match="distinct columns"):
        constraints.marginal(EX83, ["Z"])
    with pytest.raises(InvalidParameterError, match="0 <= lo <= hi"):
        constraints.rectangles(Domain.grid(4), [[(2, 9)]])
    q = constraints.marginal(EX83, ["A3"])
    assert len(q) == 3 and (q.masks.sum(axis=0) == 1).all()
    x = np.arange(12.0)
    assert q.answers(x).tolist() == [x[0::3].sum(), x[1::3].sum(), x[2::3].sum()]
    assert bf.constraints.count(Domain.grid(3), lambda c: c[0] > 0).names == ["count"]


def test_parallel_composition_needs_the_condition_of_theorem_4_3():
    d = Domain.grid(6)
    halves = [[0, 1, 2], [3, 4, 5]]
    G = policy.partition(d, halves)
    own = constraints.combine(constraints.count(d, [0, 1, 2], "left"), constraints.count(d, [3, 4, 5], "right"))
    assert policy.constrained(G, own).parallel_epsilon(halves, [0.2, 0.7]) == 0.7
    # a count that a move inside a group changes: under Def. 4.1 an unprotected record may cross groups to restore it
    # (the attacker's case: counts of cells {0, 1} and {4} used to give 0.7, the loss is 0.9)
    for changed in (constraints.combine(constraints.count(d, [0, 1], "left pair"), constraints.count(d, [4], "cell 4")),
                    constraints.count(d, [0, 3], "zero and three")):
        with pytest.raises(PolicyError, match="restore the count"):
            policy.constrained(G, changed).parallel_epsilon(halves, [0.2, 0.7])
    # an edge between the groups: records can change group
    with pytest.raises(PolicyError, match="different groups"):
        policy.constrained(policy.line(d), own).parallel_epsilon(halves, [0.2, 0.7])
    with pytest.raises(PolicyError, match="⊥"):
        policy.constrained(policy.dp(d), own).parallel_epsilon(halves, [0.2, 0.7])
    with pytest.raises(PolicyError, match="one ε > 0 per block"):
        policy.constrained(G, own).parallel_epsilon(halves, [0.2])
