"""Δ remembered within a release (mechanisms.base.sensitivities_remembered; issue 28, speed35).

A release asked its mechanism's Δ three or four times (noise scale, release, expected error, provenance), each an
edge scan for a fitted strategy. Inside the scope each (class's ``sensitivity``, mechanism, policy) is computed once:
the value must be the one computed afresh, a different policy object is computed anew, an exception is raised again
every time, and outside any scope nothing is remembered.
"""

import numpy as np
import pytest

from blowfish_nb import Domain, policy, workload
from blowfish_nb.exceptions import PolicyError
from blowfish_nb.mechanisms import Laplace, Ordered
from blowfish_nb.mechanisms.base import sensitivities_remembered
from blowfish_nb.planning import Plan, execute, plan_budget
from blowfish_nb.queries import build_query


class _Counted(Ordered):
    calls = 0

    def sensitivity(self, policy):
        type(self).calls += 1
        return super().sensitivity(policy)


class _Refusing(Laplace):
    calls = 0

    def sensitivity(self, policy):
        type(self).calls += 1
        raise PolicyError("no Δ (a test mechanism)")


def test_inside_the_scope_each_mechanism_and_policy_is_computed_once_and_equals_a_fresh_computation():
    d = Domain.grid(16)
    line, theta = policy.line(d), policy.threshold(d, 3)
    m = _Counted()
    fresh = {p: Ordered().sensitivity(p) for p in (line, theta)}
    _Counted.calls = 0
    with sensitivities_remembered():
        for _ in range(3):
            assert m.sensitivity(line) == fresh[line] and m.sensitivity(theta) == fresh[theta]
        assert _Counted.calls == 2
        assert _Counted().sensitivity(line) == fresh[line] and _Counted.calls == 3  # another object: computed
        assert m.sensitivity(policy.line(d)) == fresh[line] and _Counted.calls == 4  # an equal policy, new object
    m.sensitivity(line)
    m.sensitivity(line)
    assert _Counted.calls == 6  # outside the scope: nothing remembered


def test_a_raising_sensitivity_is_raised_again_every_time():
    p = policy.dp(Domain.grid(8))
    _Refusing.calls = 0
    with sensitivities_remembered():
        for _ in range(2):
            with pytest.raises(PolicyError):
                _Refusing().sensitivity(p)
    assert _Refusing.calls == 2


def test_scopes_nest_into_the_enclosing_memo_and_a_given_memo_is_kept():
    p = policy.line(Domain.grid(8))
    m = _Counted()
    _Counted.calls = 0
    kept = {}
    with sensitivities_remembered(kept):
        m.sensitivity(p)
        with sensitivities_remembered() as inner:
            assert inner is kept
            m.sensitivity(p)
    with sensitivities_remembered(kept):
        m.sensitivity(p)
    assert _Counted.calls == 1 and len(kept) == 2  # Ordered's own entry and the subclass's, each once


def test_a_release_scans_its_strategys_delta_once_and_charges_it_exactly():
    d = Domain.grid(32)
    p = policy.threshold(d, 4)
    plan = Plan(d, build_query(d, "cumulative"), p, ["x"])
    m = _Counted()
    b = plan_budget(plan, epsilon=1.0, mechanism=m, projection=False)
    _Counted.calls = 0
    r = execute(np.arange(32.0), b, rng=0)
    assert _Counted.calls == 1
    assert r.provenance["sensitivity"] == Ordered().sensitivity(p)
    assert r.expected_error == Ordered().expected_error(workload.prefix(32), p, 1.0)
