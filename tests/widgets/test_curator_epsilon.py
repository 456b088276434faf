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


def _spy_sends(monkeypatch, log: list) -> None:
    """Record every widget update sent (an empty update sends nothing) in ``log`` as ("send", widget, keys)."""
    real = Widget.send_state

    def spy(self, key=None):
        state = self.get_state(key=key)
        if state:
            log.append(("send", self, tuple(sorted(state))))
        return real(self, key)

    monkeypatch.setattr(Widget, "send_state", spy)


def test_an_epsilon_step_redoes_no_choice_no_truth_no_canvas_and_no_tradeoff_line(monkeypatch):
    """What depends on the policy alone is kept while only ε moves: the mechanism choice (and the plan), the true
    answers, the readout's policy words, the canvas and the error–θ lines are not computed again (issue 28)."""
    import blowfish_nb.widgets.curator as curator
    from blowfish_nb.widgets.canvas import PolicyCanvas

    ex = _explorer("cumulative")
    ex.epsilon_slider.set_state({"value": 0.5})
    calls = []
    for name in ("plan_budget", "flat_note", "resolve_policy"):
        real = getattr(curator, name)
        monkeypatch.setattr(curator, name, lambda *a, _real=real, _n=name, **k: calls.append(_n) or _real(*a, **k))
    for cls, name in ((PolicyCanvas, "show"), (CuratorExplorer, "_readout_parts")):
        real = getattr(cls, name)
        monkeypatch.setattr(cls, name, lambda *a, _real=real, _n=name, **k: calls.append(_n) or _real(*a, **k))
    truth, lines = ex.true_bars.y, [line.y for line in ex.tradeoff_lines]
    skipped = ex.skipped_redraws
    for eps in (0.3, 2.0, 0.7):
        ex.epsilon_slider.set_state({"value": eps})
    # the controls' policy is rebuilt from the sliders (one resolve_policy a step), nothing else is
    assert calls == ["resolve_policy"] * 3
    assert ex.true_bars.y is truth and all(line.y is old for line, old in zip(ex.tradeoff_lines, lines))
    assert ex.skipped_redraws == skipped + 3
    ex.theta_slider.value = 5  # a policy not plotted on the error–θ lines: everything that depends on it is redone
    assert "plan_budget" in calls and "show" in calls and "_readout_parts" in calls and ex.skipped_redraws == 0


@pytest.mark.parametrize("control, values", [("epsilon_slider", [0.5, 0.7]), ("theta_slider", [3, 2]),
                                             ("family_dropdown", ["line", "threshold"])])
def test_a_step_computes_its_whole_view_before_it_sends_the_first_update(control, values, monkeypatch):
    """The updates of one step leave the kernel back to back: no release, readout, error–θ point or range readout is
    computed after the first of them was sent (on a loaded page they arrived ~20 ms apart, each drawn on its own).
    A θ step or policy switch sends the canvas first (the page's longest redraw)."""
    import blowfish_nb.widgets.curator as curator

    ex = _explorer("histogram")
    ex.brush.selected = [30_000.0, 90_000.0]
    ctl = getattr(ex, control)
    for v in values:  # first visits: the plans are chosen and cached
        ctl.value = v
    log = []
    real_execute = curator.execute
    monkeypatch.setattr(curator, "execute", lambda *a, **k: log.append(("compute", "execute")) or real_execute(*a, **k))
    for name in ("_readout_html", "_tradeoff_view", "_range_html"):
        real = getattr(CuratorExplorer, name)
        monkeypatch.setattr(CuratorExplorer, name,
                            lambda *a, _real=real, _n=name, **k: log.append(("compute", _n)) or _real(*a, **k))
    _spy_sends(monkeypatch, log)
    for v in values:
        log.clear()
        ctl.value = v
        view = [e for e in log if e[0] == "compute" or e[1] not in (ctl, ex.theta_slider, ex.block_slider)]
        kinds = [e[0] for e in view]
        assert kinds.count("compute") == 4, kinds  # execute, readout, error–θ view, range readout: once each
        assert "send" in kinds and kinds.index("send") == 4, kinds  # every computation before the first send
        sent = [e[1] for e in view if e[0] == "send"]
        assert ex.range_readout in sent and ex.readout in sent and ex.noisy_bars in sent
        assert len(sent) == len(set(map(id, sent))), "a widget was sent more than one update in one step"
        if control == "epsilon_slider":
            assert ex.canvas not in sent
        else:
            assert sent[0] is ex.canvas


def test_an_epsilon_step_with_unequal_bins_or_a_brushed_range_redraws_them():
    """The ε fast path keeps the outline of unequal bins and the brushed range's readout in step with the release."""
    from blowfish_nb.widgets.curator import NOISY_WIDTH, bar_outline

    edges = np.array([0, 20_000, 40_000, 100_000, 250_000], dtype=float)
    ex = CuratorExplorer(DF, column="salary", bins=edges.tolist(), theta=1, rng=0)
    ex.brush.selected = [10_000.0, 50_000.0]
    for eps in (0.4, 3.0):
        skipped = ex.skipped_redraws
        ex.epsilon_slider.value = eps
        assert ex.skipped_redraws == skipped + 1  # the fast path ran
        x, y = bar_outline(ex._edges, ex.release.answers.to_numpy(), NOISY_WIDTH)
        np.testing.assert_array_equal(ex.noisy_areas.x, x)
        np.testing.assert_array_equal(ex.noisy_areas.y, y)
        assert f"noisy <b>{ex.release.range_answer(0, 2):,.1f}</b>" in ex.range_readout.value
