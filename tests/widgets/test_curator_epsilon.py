"""The explorer's ε slider (issue 28: ε → settled view ≤ 100 ms): what a step recomputes, shows and sends.

A change of ε alone keeps the mechanism chosen for (column, query, policy), draws one new release at the new ε and
redraws only the marks whose values changed; what it shows must equal a fresh computation at that ε.
"""

import copy

import numpy as np
import pytest
from ipywidgets import Widget

from blowfish_nb import datasets
from blowfish_nb.planning import Plan, execute, plan_budget
from blowfish_nb.queries import build_query
from blowfish_nb.widgets import CuratorExplorer

DF = datasets.salaries(n=1500, seed=5)
KW = dict(column="salary", bins=25, theta=2)


@pytest.fixture(autouse=True)
def _no_fits(monkeypatch):
    """"auto" among the fixed candidates only: an Optimized fit per θ of the tradeoff plot took 5–7 s each here
    (the ε path is the same whichever mechanism wins)."""
    monkeypatch.setattr("blowfish_nb.mechanisms.optimized.AUTO_COST", 0)


def _explorer(query: str, epsilon: float = 1.0) -> CuratorExplorer:
    return CuratorExplorer(DF, query=query, epsilon=epsilon, rng=0, **KW)


@pytest.mark.parametrize("query", ["histogram", "cumulative"])
def test_an_epsilon_step_shows_what_a_fresh_computation_at_that_epsilon_shows(query):
    ex = _explorer(query)
    for eps in (0.3, 0.3 * 10**0.05, 2.0):
        state = copy.deepcopy(ex._rng)  # the generator as the step finds it
        ex.epsilon_slider.set_state({"value": eps})  # what the front end sends
        eps = ex.epsilon  # the slider's own float
        fresh = _explorer(query, epsilon=eps)  # a new explorer built at this ε (its own mechanism choice)
        assert ex.release.mechanism == fresh.release.mechanism and ex.release.epsilon == fresh.release.epsilon
        assert ex.release.expected_error == fresh.release.expected_error  # the same figure, exactly
        assert ex.readout.value == fresh.readout.value  # sentence, Δs, error: character for character
        np.testing.assert_array_equal(ex.band.y, fresh.band.y)
        np.testing.assert_array_equal(ex.true_bars.y, fresh.true_bars.y)
        np.testing.assert_array_equal(ex.current_point.y, fresh.current_point.y)
        for line, other in zip(ex.tradeoff_lines, fresh.tradeoff_lines):
            np.testing.assert_array_equal(line.y, other.y)
        # the noisy bars: exactly the release a fresh plan at this ε draws from the same generator state
        plan = Plan(ex.domain, build_query(ex.domain, query), ex.policy, [KW["column"]])
        b = plan_budget(plan, epsilon=eps, mechanism=fresh._budget.mechanism, projection=False)
        again = execute(ex._x, b, rng=state)
        np.testing.assert_array_equal(ex.noisy_bars.y, again.answers.to_numpy())
        assert again.expected_error == ex.release.expected_error
        # the pinned y scale holds every value drawn
        ys = ex.true_bars.scales["y"]
        shown = np.concatenate([ex.true_bars.y, ex.noisy_bars.y, ex.band.y.ravel()])
        assert ys.min <= min(0.0, shown.min()) and shown.max() <= ys.max


def test_an_epsilon_step_sends_one_message_per_changed_mark(monkeypatch):
    ex = _explorer("cumulative")
    sent = []
    real = Widget.send_state

    def spy(self, key=None):
        if self.get_state(key=key):  # an empty update sends nothing
            sent.append((self, tuple(sorted(self.get_state(key=key)))))
        return real(self, key)

    monkeypatch.setattr(Widget, "send_state", spy)
    mechanism = ex.release.mechanism
    ex.epsilon_slider.set_state({"value": 10**-0.05})  # the first visit may move the pinned y scale (once)
    assert sum(w is ex.true_bars.scales["y"] for w, _ in sent) <= 1
    steps = [1.0, 10**-0.05] * 3
    for eps in steps:
        sent.clear()
        ex.epsilon_slider.set_state({"value": eps})
        assert ex.release.mechanism == mechanism  # ε alone never re-chooses the mechanism
        widgets = [w for w, _ in sent]
        assert len(widgets) == len(set(map(id, widgets))), "a widget was sent more than one message"
        # the changed marks and the readout, one message each; nothing else (no scale, axis, true bars, canvas)
        expected = {id(ex.noisy_bars): ("y",), id(ex.band): ("y",), id(ex.readout): ("value",),
                    id(ex.current_point): ("y",)}
        assert {id(w): keys for w, keys in sent} == expected
    assert ex.recomputations == 2 + len(steps)


@pytest.mark.parametrize("query", ["histogram", "cumulative"])
def test_an_epsilon_step_computes_no_sensitivity_again(query, monkeypatch):
    """Δ of the strategy and of the query depend on the policy, not on ε: after the first release under a policy, an
    ε step recalls them (issue 28: three strategy scans were ~6 of an ε step's 8 ms); what it shows is checked
    against a fresh explorer above."""
    ex = _explorer(query)
    ex.epsilon_slider.set_state({"value": 0.5})
    cls = type(ex._budget.run.policy)
    scans = []
    original = cls.sensitivity

    def counted(self, strategy):
        scans.append(type(strategy).__name__)
        return original(self, strategy)

    monkeypatch.setattr(cls, "sensitivity", counted)
    for eps in (0.3, 2.0, 0.7):
        ex.epsilon_slider.set_state({"value": eps})
    assert scans == []
    ex.theta_slider.value = 3  # a new policy: its Δs are computed (and then remembered)
    assert scans
