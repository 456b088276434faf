"""Every policy family against brute force from its definition, over many small random cases."""

import itertools
import math

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from blowfish_nb import CategoricalAttribute, Domain, OrderedAttribute, PolicyError, policy, workload
from tests.brute import brute_edges, brute_graph, brute_sensitivity_edges, secret


def edge_set(p):
    e = p.edges()
    return {(int(a), int(b)) if b == -1 else (int(min(a, b)), int(max(a, b))) for a, b in e}


def random_blocks(k, rng):
    cells = rng.permutation(k)
    cuts = np.sort(rng.choice(np.arange(1, k), size=min(k - 1, rng.integers(1, 4)), replace=False))
    blocks = [sorted(b.tolist()) for b in np.split(cells, cuts)]
    kept = [b for b in blocks if rng.random() < 0.8 or len(blocks) == 1]  # some cells in no block
    if not any(len(b) > 1 for b in kept):  # a partition with no edge warns; those cases are tested on their own
        kept = [sorted(cells[:2].tolist())]
    return kept


def cases(seed=0):
    """(policy, spec, domain) for every family on small 1-D, 2-D and mixed domains."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(2, 13):
        d = Domain.grid(k)
        theta = int(rng.integers(1, k + 2))
        out += [
            (policy.dp(d), ("dp", {}), d),
            (policy.bounded(d), ("bounded", {}), d),
            (policy.line(d), ("threshold", {"theta": 1}), d),
            (policy.threshold(d, theta), ("threshold", {"theta": theta}), d),
        ]
        blocks = random_blocks(k, rng)
        out.append((policy.partition(d, blocks), ("partition", {"blocks": blocks}), d))
        edges = [tuple(e) for e in rng.integers(0, k, size=(k, 2)).tolist() if e[0] != e[1]] or [(0, k - 1)]
        out.append((policy.custom(d, edges), ("custom", {"edges": edges}), d))
    for shape in [(2, 2), (2, 3), (3, 3), (3, 4), (4, 4), (2, 2, 3)]:
        d = Domain.grid(shape)
        for theta in (1, 2, 3):
            out.append((policy.grid(d, theta), ("threshold", {"theta": theta}), d))
            out.append((policy.grid(d, theta, metric="linf"), ("threshold", {"theta": theta, "metric": "linf"}), d))
        out.append((policy.attribute(d), ("attribute", {}), d))
        out.append((policy.sensitive_attributes(d, ["x0"]), ("attribute", {"attributes": [0]}), d))
        out.append((policy.bounded(d), ("bounded", {}), d))
    mixed = Domain([OrderedAttribute("age", [0, 10, 20, 30]), CategoricalAttribute("sex", ("F", "M", "X"))])
    out.append((policy.attribute(mixed), ("attribute", {}), mixed))
    out.append((policy.categorical(mixed, "sex", ["F", "X"]), ("categorical", {"axis": 1, "codes": [0, 2]}), mixed))
    out.append((policy.categorical(mixed, "age", [0, 1]), ("categorical", {"axis": 0, "codes": [0, 1]}), mixed))
    return out


CASES = cases()
IDS = [f"{i}-{c[0].summary()}" for i, c in enumerate(CASES)]


def strategies(k, shape, rng):
    out = {
        "identity": workload.identity(k),
        "prefix": workload.prefix(k),
        "hierarchical2": workload.hierarchical(k, 2),
        "hierarchical3": workload.hierarchical(k, 3),
        "dense": rng.normal(size=(k + 2, k)),
        "sparse": sp.random(2 * k, k, density=0.3, random_state=rng, format="csr"),
    }
    if len(shape) >= 2:
        out["kron-prefix"] = workload.kron(*[workload.prefix(n) for n in shape])
        out["kron-hier"] = workload.kron(*[workload.hierarchical(n, 2) for n in shape])
    return out


@pytest.mark.parametrize("pol,spec,domain", CASES, ids=IDS)
def test_edges_count_and_sensitivity_match_brute_force(pol, spec, domain):
    expected = brute_edges(spec, domain, pol.has_bottom)
    assert edge_set(pol) == expected
    assert pol.edge_count() == len(expected)
    rng = np.random.default_rng(domain.size)
    for name, A in strategies(domain.size, domain.shape, rng).items():
        dense = A.dense() if hasattr(A, "dense") else (A.toarray() if sp.issparse(A) else A)
        assert pol.sensitivity(A) == pytest.approx(brute_sensitivity_edges(dense, expected), abs=1e-9), name


@pytest.mark.parametrize("pol,spec,domain", CASES, ids=IDS)
def test_distance_components_and_tree_match_networkx(pol, spec, domain):
    g = brute_graph(brute_edges(spec, domain, pol.has_bottom), domain.size, pol.has_bottom)
    lengths = dict(nx.all_pairs_shortest_path_length(g))
    for a, b in itertools.combinations(range(domain.size), 2):
        assert pol.distance(a, b) == lengths[a].get(b, math.inf), (a, b)
    comps = {frozenset(c) - {"⊥"} for c in nx.connected_components(g)}
    assert {frozenset(c.tolist()) for c in pol.components()} == comps
    assert pol.is_tree() == nx.is_tree(g)


def test_guarantee_is_exp_epsilon_distance_and_infinite_across_components():
    p = policy.partition(Domain.grid(6), [[0, 1, 2], [3, 4, 5]])
    g = p.guarantee(0, 2, epsilon=0.4)
    assert g.distance == 1 and g.bound == pytest.approx(math.exp(0.4))
    far = p.guarantee(0, 4, epsilon=0.4)
    assert math.isinf(far.bound) and "different components" in far.statement
    assert policy.dp(Domain.grid(3)).guarantee(0, policy.BOTTOM, 1.0).distance == 1
    assert policy.grid((5, 5), 2).guarantee(0, 24, 0.1).bound == pytest.approx(math.exp(0.1 * 4))


def test_threshold_closed_forms_at_scale_without_listing():
    d = Domain.grid(10**6)
    p = policy.threshold(d, 16)
    assert p.edge_count() == sum(10**6 - j for j in range(1, 17))
    assert p.distance(0, 10**6 - 1) == math.ceil((10**6 - 1) / 16)
    assert p.sensitivity(workload.prefix(10**6)) == 16
    assert p.sensitivity(workload.hierarchical(10**6, 2)) == 2 * 20  # 21 levels, root shared
    big = policy.bounded(Domain.grid(10**5))
    assert big.sensitivity(workload.prefix(10**5)) == 10**5 - 1
    with pytest.raises(PolicyError, match="edges, more than"):
        big.edges()


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: policy.partition(Domain.grid(4), [[0, 1], [1, 2]]), "disjoint; cell 1"),
        (lambda: policy.partition(Domain.grid(4), [[0, 9]]), "has 9"),
        (lambda: policy.custom(Domain.grid(4), [(0, 0)]), "self-loops"),
        (lambda: policy.custom(Domain.grid(4), [(0, 7)]), "node 7"),
        (lambda: policy.custom(Domain.grid(4), [(0, "x")]), "unknown node 'x'"),
        (lambda: policy.threshold(Domain.grid(4), 0), "theta"),
        (lambda: policy.threshold(Domain.grid(4), 2, metric="l2"), "metric"),
        (lambda: policy.sensitive_attributes(Domain.grid((2, 2)), ["zz"]), "'zz'"),
        (lambda: policy.categorical(Domain.grid((2, 2)), "x0", [5]), "sensitive"),
        (lambda: policy.compose({"a": policy.dp(Domain.grid(3, ["a"]))}), "has ⊥"),
        (lambda: policy.line(Domain.grid((2, 2))), "one ordered attribute"),
    ],
)
def test_malformed_policies_are_refused(call, message):
    from blowfish_nb import BlowfishError

    with pytest.raises(BlowfishError, match=message):
        call()


@pytest.mark.parametrize("pol,spec,domain", CASES, ids=IDS)
def test_is_forest_matches_networkx(pol, spec, domain):
    g = brute_graph(brute_edges(spec, domain, pol.has_bottom), domain.size, pol.has_bottom)
    assert pol.is_forest() == nx.is_forest(g)


def test_a_custom_graph_summary_counts_its_edges_in_words():
    """Issue 28 (7): privacy statements read "custom graph of 3 edges on x (6 cells)", not "custom edges=3 on …",
    and a graph with ⊥ says so."""
    d = Domain.grid(6)
    plain = policy.custom(d, [(0, 1), (1, 2), (4, 5)])
    assert plain.summary() == "custom graph of 3 edges on x0 (6 cells)", plain.summary()
    with_bottom = policy.custom(d, [(0, 1), (2, policy.BOTTOM)])
    assert with_bottom.has_bottom and with_bottom.summary() == "custom graph of 2 edges and ⊥ on x0 (6 cells)"
    one = policy.custom(d, [(0, 5)])
    assert one.summary() == "custom graph of 1 edge on x0 (6 cells)"
