"""Projection (BlowfishDB Def. 3.1), composition (Def. 3.2) and JSON / networkx round trips."""

import itertools

import networkx as nx
import numpy as np
import pytest

from blowfish_nb import CategoricalAttribute, Domain, OrderedAttribute, Policy, policy, workload
from tests.policy.test_families import CASES, IDS, edge_set


@pytest.mark.parametrize("seed", range(40))
def test_projection_matches_definition(seed):
    rng = np.random.default_rng(seed)
    pol, _, domain = CASES[seed * 7 % len(CASES)]
    k = domain.size
    block_of = rng.integers(0, max(1, k // 2), size=k)
    pr = policy.project(pol, block_of)
    _, ids = np.unique(block_of, return_inverse=True)
    edges = edge_set(pol)
    want = set()
    for a, b in edges:
        if b == -1:
            want.add((int(ids[a]), -1))
        elif ids[a] != ids[b]:
            want.add((int(min(ids[a], ids[b])), int(max(ids[a], ids[b]))))
    assert edge_set(pr.policy) == want
    # N(G) = N(G*) iff every cell pair of joined blocks is an edge of G (and ⊥ edges are whole)
    full = all(
        all((min(u, v), max(u, v)) in edges for u in np.flatnonzero(ids == a) for v in np.flatnonzero(ids == b))
        if b >= 0 else all((u, -1) in edges for u in np.flatnonzero(ids == a))
        for a, b in want
    )
    assert pr.preserves_neighbours == full
    x = rng.poisson(3, size=k).astype(float)
    np.testing.assert_allclose(pr.data(x), pr.matrix @ x)


def test_projection_keeps_sensitivity_of_supported_strategies():
    """A* = A T⁺ on x* = T x with G* has the same Δ as A on x with G (T supports A)."""
    d = Domain.grid(12)
    blocks = np.repeat(np.arange(4), 3)  # cells 0-2, 3-5, ...
    T = np.zeros((4, 12))
    T[blocks, np.arange(12)] = 1
    coarse = np.tril(np.ones((4, 4)))
    A = coarse @ T  # prefix sums at block granularity: supported by the partition
    for pol in [policy.line(d), policy.threshold(d, 4), policy.dp(d), policy.bounded(d)]:
        pr = policy.project(pol, blocks)
        assert pr.supports(A)
        assert pr.policy.sensitivity(pr.workload(A)) == pytest.approx(pol.sensitivity(A))
    assert not policy.project(policy.line(d), blocks).supports(workload.prefix(12))
    assert policy.project(policy.line(d), blocks).policy.domain.attributes[0].edges.tolist() == [0, 3, 6, 9, 12]


def test_bounded_projection_preserves_neighbours_and_line_does_not():
    blocks = [0, 0, 1, 1, 2]
    assert policy.project(policy.bounded(Domain.grid(5)), blocks).preserves_neighbours
    assert policy.project(policy.dp(Domain.grid(5)), blocks).preserves_neighbours
    assert not policy.project(policy.line(Domain.grid(5)), blocks).preserves_neighbours


@pytest.mark.parametrize("seed", range(20))
def test_compose_equals_the_networkx_cartesian_product(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 5, size=2)
    da, db = Domain.grid(int(sizes[0]), ["a"]), Domain.grid(int(sizes[1]), ["b"])
    pick = lambda d: [policy.line(d), policy.bounded(d), policy.threshold(d, 2),
                      policy.custom(d, [(0, int(d.size) - 1)])][rng.integers(4)]
    pa, pb = pick(da), pick(db)
    comp = policy.compose({"a": pa, "b": pb})
    product = nx.cartesian_product(pa.to_networkx(), pb.to_networkx())
    want = {tuple(sorted((i * sizes[1] + j, k * sizes[1] + l))) for (i, j), (k, l) in product.edges()}
    assert edge_set(comp) == {tuple(map(int, e)) for e in want}
    lengths = dict(nx.all_pairs_shortest_path_length(product))
    for (i, j), (k, l) in itertools.combinations(itertools.product(range(sizes[0]), range(sizes[1])), 2):
        assert comp.distance(int(i * sizes[1] + j), int(k * sizes[1] + l)) == lengths[(i, j)].get((k, l), np.inf)


def test_compose_with_missing_attribute_is_disconnected():
    d = Domain.grid((3, 2), ["a", "b"])
    comp = policy.compose(d, {"a": policy.line(Domain.grid(3, ["a"]))})
    assert len(comp.components()) == 2 and comp.distance(0, 1) == np.inf


@pytest.mark.parametrize("pol,spec,domain", CASES, ids=IDS)
def test_json_and_networkx_round_trips(pol, spec, domain):
    again = Policy.from_json(pol.to_json())
    assert again == pol and type(again) is type(pol) and again.same_graph(pol)
    assert again.summary() == pol.summary()
    back = policy.from_networkx(pol.to_networkx())
    assert back == pol and back.same_graph(pol)


def test_plain_networkx_graph_becomes_a_custom_policy():
    g = nx.path_graph(5)
    g.add_edge(4, "⊥")
    p = policy.from_networkx(g)
    assert p.family == "custom" and p.has_bottom and p.edge_count() == 5 and p.is_tree()


def test_composed_and_mixed_domains_round_trip():
    a = Domain([OrderedAttribute("age", [0, 20, 40, 60])])
    s = Domain([CategoricalAttribute("sex", ("F", "M"))])
    comp = policy.compose({"age": policy.threshold(a, 2), "sex": policy.bounded(s)})
    again = Policy.from_json(comp.to_json())
    assert again == comp and again.same_graph(comp) and again.domain.names == ("age", "sex")


def test_methods_delegate_to_the_module_functions():
    g = policy.threshold(Domain.grid(9), 3)
    t = g.spanning_tree("htheta")
    assert t == policy.spanning_tree(g, "htheta") and g.stretch(t) == 3
    assert g.project([0] * 4 + [1] * 5).policy.edge_count() == 1
    assert Policy.from_networkx(g.to_networkx()) == g
    assert g.transform().is_forest is False


def test_custom_from_an_array_equals_custom_from_pairs():
    import numpy as np
    from blowfish_nb import Domain
    from blowfish_nb.policy.custom import Custom

    rng = np.random.default_rng(0)
    for _ in range(100):
        k = int(rng.integers(2, 12))
        e = rng.integers(-1, k, size=(int(rng.integers(1, 20)), 2))
        e = e[e[:, 0] != e[:, 1]]
        if len(e) == 0:
            continue
        a = Custom(Domain.grid(k), e)
        b = Custom(Domain.grid(k), [tuple(map(int, r)) for r in e])
        assert np.array_equal(a.edges(), b.edges()) and a.has_bottom == b.has_bottom
