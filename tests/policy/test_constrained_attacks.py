"""An independent attacker's findings against the constrained-policy refusal (issue 27 item 1), each fixed.

F1: a constrained column policy inside ``compose`` (a policy dict) lost its
counts: every mechanism accepted the product, Laplace charged Δ = 2 where
S(h, P) on the product domain is 6 (loss 3ε). F2: projecting, transforming or
taking a spanning tree of a constrained policy returned an unconstrained
graph, so ``expand``/``measure_buckets`` released with ℓ = 1 (loss 3ε). F3:
constraints, constrained policies and the Transformed plan cache could be
changed after Δ was computed (losses 1.5ε–3ε, 4ε/3). F4: the closed forms of
§8 trusted a caller's ``kind``/``spec`` (a mislabelled marginal gave Δ = 2
where the search gives 8). F5: ``parallel_epsilon`` returned max εᵢ where a
record the policy does not protect may cross groups to restore a count
(loss Σ εᵢ).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import blowfish_nb as bf
from blowfish_nb import Domain, constraints, mechanisms, policy, workload
from blowfish_nb.exceptions import BlowfishError, InvalidParameterError, PolicyError
from blowfish_nb.mechanisms.partition_first import expand, measure_buckets

D6 = Domain.grid(6)


def _issue_policy():
    return policy.constrained(policy.line(D6), constraints.rectangles(D6, [[(0, 1)], [(4, 5)]]))


# -- F1 ------------------------------------------------------------------------------------------
def test_compose_refuses_a_constrained_part():
    a, b = Domain.grid(6, ["a"]), Domain.grid(2, ["b"])
    ca = policy.constrained(policy.line(a), constraints.rectangles(a, [[(0, 1)], [(4, 5)]]))
    with pytest.raises(PolicyError, match="known counts on one attribute"):
        policy.compose({"a": ca, "b": policy.bounded(b)})


def test_front_ends_refuse_a_constrained_column_in_a_policy_dict():
    a = Domain.grid(6, ["a"])
    ca = policy.constrained(policy.line(a), constraints.rectangles(a, [[(0, 1)], [(4, 5)]]))
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.integers(0, 6, 50) + 0.5, "b": rng.integers(0, 2, 50) + 0.5})
    with pytest.raises(BlowfishError):
        df.blowfish.release("histogram", ["a", "b"], bins={"a": 6, "b": 2}, bounds={"a": (0, 6), "b": (0, 2)},
                            policy={"a": ca, "b": "bounded"}, mechanism="transformed", epsilon=1.0)


def test_constrained_refuses_a_base_with_a_constrained_part():
    with pytest.raises(PolicyError):
        policy.constrained(_issue_policy(), constraints.count(D6, [0], "zero"))


# -- F2 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("derive", [lambda p: p.project(np.arange(6)), lambda p: p.transform(),
                                    lambda p: p.spanning_tree(), lambda p: policy.transform(p)])
def test_derived_graphs_of_a_constrained_policy_are_refused(derive):
    with pytest.raises(PolicyError, match="known counts"):
        derive(_issue_policy())


def test_partition_first_helpers_refuse_a_constrained_policy():
    x = np.array([1, 0, 1, 0, 0, 1.0])
    with pytest.raises(PolicyError):
        expand(x, np.arange(6), _issue_policy(), 1.0, np.random.default_rng(0))
    with pytest.raises(PolicyError):
        measure_buckets(x, np.arange(6), workload.prefix(6), _issue_policy(), 1.0, np.random.default_rng(0))


# -- F3 ------------------------------------------------------------------------------------------
def test_constraints_and_constrained_policies_cannot_change_after_delta():
    P = _issue_policy()
    assert mechanisms.Laplace().sensitivity(P) == 6.0
    with pytest.raises(PolicyError, match="cannot be changed"):
        P.constraints = constraints.count(D6, [0], "zero")
    with pytest.raises(PolicyError, match="cannot be changed"):
        P.base = policy.dp(D6)
    q = P.constraints
    with pytest.raises((AttributeError, TypeError)):
        q.items.append(q.items[0])
    with pytest.raises(ValueError):  # read-only mask
        q.items[0].cells[:] = True
    with pytest.raises(InvalidParameterError, match="cannot be changed"):
        q.items = ()
    assert mechanisms.Laplace().sensitivity(P) == 6.0


def test_a_policy_changed_in_place_gets_a_new_transformed_plan():
    G = policy.threshold(Domain.grid(12), 2)
    m = mechanisms.Transformed()
    tree, _ = m.plan(G)
    G.theta = 5  # the attacker's move: the old tree's stretch under θ = 5 is 4, the cached ℓ was 3
    tree2, ell = m.plan(G)
    assert tree2 is not tree
    assert ell == bf.policy.stretch(G, tree2)


# -- F4 ------------------------------------------------------------------------------------------
def test_a_mislabelled_marginal_does_not_reach_the_closed_form():
    d = Domain.grid(6)
    items = [constraints.CountConstraint(f"c{i}", np.eye(6, dtype=bool)[i]) for i in range(3)]
    lying = constraints.Constraints(d, items, kind="marginal", spec={"size": 1, "attributes": ["x0"]})
    honest = constraints.Constraints(d, items, kind="counts")
    delta = policy.constrained(policy.bounded(d), lying).histogram_sensitivity()
    assert delta == policy.constrained(policy.bounded(d), honest).histogram_sensitivity() > 2.0


def test_a_true_marginal_still_gets_theorem_8_4():
    d = Domain.grid((2, 3))
    q = constraints.marginal(d, [d.names[0]])
    assert policy.constrained(policy.bounded(d), q).histogram_sensitivity() == 2.0 * len(q)


# -- F5 ------------------------------------------------------------------------------------------
def test_parallel_composition_is_refused_when_a_move_changes_a_known_count():
    G = policy.partition(D6, [[0, 1, 2], [3, 4, 5]])
    with pytest.raises(PolicyError, match="restore the count"):
        policy.constrained(G, constraints.count(D6, [0], "cell 0")).parallel_epsilon(
            [[0, 1, 2], [3, 4, 5]], [1.0, 1.0])
    # the attacker's pair: records at cells (5, 5, 0) and (5, 0, 2) satisfy the count of cell 0 (one record) and are
    # Def. 4.1 neighbours (0 → 2 along an edge, one unprotected record 5 → 0 restores it): both groups change
    a, b = np.bincount([5, 5, 0], minlength=6), np.bincount([5, 0, 2], minlength=6)
    assert a[0] == b[0] == 1 and a[:3].sum() != b[:3].sum() and a[3:].sum() != b[3:].sum()
    # known group totals are kept by every move inside a group: parallel composition holds
    totals = constraints.combine(constraints.count(D6, [0, 1, 2], "left"), constraints.count(D6, [3, 4, 5], "right"))
    assert policy.constrained(G, totals).parallel_epsilon([[0, 1, 2], [3, 4, 5]], [0.5, 0.3]) == 0.5
