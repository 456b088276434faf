"""Policies that protect nothing (issue 13, §Why 5 / E): they warn when built and say so in every statement."""

import time
import warnings

import numpy as np
import pytest

from blowfish_nb import CategoricalAttribute, Domain, OrderedAttribute, PrivacyLeakWarning, datasets, policy, workload
from blowfish_nb.policy import Custom, Partition
from tests.brute import brute_sensitivity_edges

EMPTY = {
    "partition, no block": lambda: policy.partition(Domain.grid(5), []),
    "partition, all singletons": lambda: policy.partition(Domain.grid(4), [[0], [1], [2], [3]]),
    "Partition class, some singletons": lambda: Partition(Domain.grid(3), [[2]]),
    "custom, no edge": lambda: policy.custom(Domain.grid(4), []),
    "custom, no edge but ⊥": lambda: policy.custom(Domain.grid(4), [], bottom=True),
    "custom from an empty array": lambda: Custom(Domain.grid(4), np.empty((0, 2), dtype=np.int64)),
    "networkx graph with no edge": lambda: policy.from_networkx(__import__("networkx").empty_graph(4)),
    "bounded on one cell": lambda: policy.bounded(Domain.grid(1)),
    "line on one cell": lambda: policy.line(Domain.grid(1)),
    "sensitive attribute with one value": lambda: policy.sensitive_attributes(Domain.grid((1, 3)), ["x0"]),
    "categorical, one sensitive value": lambda: policy.categorical(
        Domain([CategoricalAttribute("c", ("a", "b"))]), "c", ["a"]),
    "compose of nothing": lambda: policy.compose(Domain.grid((2, 2)), {}),
    "compose of empty parts": lambda: policy.compose(
        Domain.grid((2, 2)), {"x0": _quiet(lambda: policy.partition(Domain.grid(2, ["x0"]), []))}),
}


def _quiet(build):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return build()


@pytest.mark.parametrize("label", list(EMPTY))
def test_a_policy_with_no_edge_warns_and_protects_nothing(label):
    with pytest.warns(PrivacyLeakWarning, match="protects no pair of values"):
        p = EMPTY[label]()
    assert p.protects_nothing and p.edge_count() == 0 and len(p.edges()) == 0
    # the closed forms agree with the (empty) edge list: Δ = 0, every cell alone, nothing within reach
    k = p.domain.size
    for W in (workload.identity(k), workload.prefix(k)):
        assert p.sensitivity(W) == brute_sensitivity_edges(W.dense(), p.edges()) == 0
    assert len(p.components()) == k
    if k > 1:
        assert p.distance(0, k - 1) == float("inf")


@pytest.mark.parametrize("build", [
    lambda: policy.partition(Domain.grid(4), [[0, 1], [2], [3]]),
    lambda: policy.custom(Domain.grid(4), [(2, "⊥")]),
    lambda: policy.dp(Domain.grid(1)),
    lambda: policy.line(Domain.grid(2)),
    lambda: policy.categorical(Domain([CategoricalAttribute("c", ("a", "b"))]), "c", ["a", "b"]),
], ids=["one pair", "one ⊥ edge", "dp on one cell", "line on two cells", "categorical pair"])
def test_a_policy_with_one_edge_protects_something_and_does_not_warn(build):
    with warnings.catch_warnings():  # (a partition leaving cells out warns about those cells, not about this)
        warnings.filterwarnings("error", message=".*has no edge", category=PrivacyLeakWarning)
        p = build()
    assert not p.protects_nothing


def test_protects_nothing_is_cheap_on_families_with_closed_forms():
    """Answered from the closed-form edge counts: no edge of a 10¹³-edge graph is listed."""
    d = Domain.grid(5_000_000)
    t = time.perf_counter()
    assert not policy.bounded(d).protects_nothing
    assert not policy.threshold(d, 1000).protects_nothing
    assert not policy.dp(d).protects_nothing
    assert not policy.attribute(Domain.grid((2000, 2000))).protects_nothing
    assert time.perf_counter() - t < 1.0


def test_derived_policies_do_not_warn_again():
    """A projection with no edge left (every edge inside one block) or a spanning forest is not a new policy."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        pr = policy.project(policy.line(Domain.grid(6)), [0, 0, 0, 0, 0, 0])
        assert pr.policy.protects_nothing
    empty = _quiet(lambda: policy.partition(Domain.grid(4), []))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        assert policy.spanning_tree(empty).edge_count() == 0
        pr = policy.project(empty, [0, 0, 1, 1])


def test_loading_an_empty_policy_warns_again():
    empty = _quiet(lambda: policy.partition(Domain.grid(4), [[0], [1]]))
    with pytest.warns(PrivacyLeakWarning):
        back = policy.Policy.from_json(empty.to_json())
    assert back == empty and back.protects_nothing


# -- the exact calls of the issue ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def df():
    return datasets.salaries(n=300, seed=2)


@pytest.mark.parametrize("blocks", [[], [[0], [1], [2], [3]]], ids=["blocks=[]", "all singletons"])
def test_release_under_a_partition_that_protects_nothing_says_so(df, blocks):
    with pytest.warns(PrivacyLeakWarning, match="protects no pair of values"):
        r = df.blowfish.release("histogram", column="age", bins=4, policy="partition", blocks=blocks, epsilon=0.5,
                                mechanism="laplace")
    statement = r.privacy_statement()
    assert statement.startswith("No privacy protection") and "no pair of values" in statement
    assert "may be exact" in statement and "Blowfish private" not in statement
    assert "No privacy protection" in r._repr_html_() and "protects nothing" in repr(r)


def test_release_under_a_policy_that_protects_something_keeps_its_guarantee(df):
    r = df.blowfish.release("histogram", column="age", bins=4, policy="partition", blocks=[[0, 1], [2], [3]],
                            epsilon=0.5, mechanism="laplace")
    assert r.privacy_statement().startswith("(0.5, G)-Blowfish private") and "protects nothing" not in repr(r)


def test_an_empty_partition_of_an_ordered_and_categorical_domain():
    d = Domain([OrderedAttribute("age", [0, 10, 20]), CategoricalAttribute("sex", ("F", "M"))])
    with pytest.warns(PrivacyLeakWarning):
        p = policy.partition(d, [[0], [3]])
    assert p.protects_nothing and p.summary() == "partition blocks=2 on age, sex (4 cells)"
