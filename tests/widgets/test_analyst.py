"""AnalystPanel: the quoted ε before running, charges, refusals that charge nothing, history and comparison."""

import bqplot
import numpy as np
import pytest

from blowfish_nb import datasets
from blowfish_nb.widgets import AnalystPanel


@pytest.fixture
def session():
    df = datasets.salaries(n=2000, seed=4)
    return df.blowfish.session(1.0, bins={"age": 31, "salary": 50}, policy={"age": "line", "salary": "dp"})


def test_quote_is_shown_before_running_and_charges_nothing(session):
    panel = AnalystPanel(session, alpha=40, beta=0.05)
    q = session.quote("histogram", "age", accuracy=(40, 0.05))
    assert panel.quoted_epsilon == pytest.approx(q.epsilon) and session.spent == 0
    assert f"ε = {q.epsilon:.4g}" in panel.cost.value and q.mechanism.name in panel.cost.value
    panel.alpha_text.value = 10  # tighter accuracy costs more
    assert panel.quoted_epsilon > q.epsilon and session.spent == 0
    panel.beta_text.value = 0.0  # β outside (0, 1): cannot quote, says why
    assert panel.quoted_epsilon is None and "beta" in panel.cost.value


def test_two_runs_charge_the_session_and_fill_history_and_comparison(session):
    panel = AnalystPanel(session, alpha=60, beta=0.05)
    e1 = panel.quoted_epsilon
    r1 = panel.run()
    assert session.spent == pytest.approx(e1) and panel.budget_bar.value == pytest.approx(1 - e1)
    panel.query_dropdown.value = "cumulative"
    e2 = panel.quoted_epsilon
    r2 = panel.run()
    assert session.spent == pytest.approx(e1 + e2) and panel.budget_bar.value == pytest.approx(session.remaining)
    assert len(session.ledger) == 2 and panel.history.value.count("<tr><td>") == 2
    assert (panel.compare_a.value, panel.compare_b.value) == (0, 1)
    # a histogram beside a cumulative count is drawn as its running sum: both series are cumulative counts
    np.testing.assert_array_equal(panel.compare_bars.y, np.vstack([np.cumsum(r1.answers), r2.answers]))
    panel.compare_b.value = 0  # pick another pair: the same release twice is drawn once
    np.testing.assert_array_equal(panel.compare_bars.y, [r1.answers.to_numpy()])
    # every release met its stated accuracy request
    assert r1.accuracy == (60.0, 0.05) and r2.accuracy == (60.0, 0.05)


def test_comparison_shows_one_release_after_the_first_run_then_two_side_by_side(session):
    """Issue 17 item 2: after one Run just that release (no "#1 vs #1"); after two, both series, legend naming each."""
    panel = AnalystPanel(session, alpha=60, beta=0.05)
    assert panel.compare_bars.y.size == 0  # nothing drawn before a release exists
    r1 = panel.run()
    bars = panel.compare_bars
    assert bars.y.shape == (1, 31) and bars.labels == ["#1 histogram of age"]
    assert "#1" in panel.compare_figure.title and "#2" not in panel.compare_figure.title
    r2 = panel.run()
    assert bars.y.shape == (2, 31) and bars.labels == ["#1 histogram of age", "#2 histogram of age"]
    assert bars.type == "grouped" and len(set(bars.colors[:2])) == 2  # side by side, two colours
    np.testing.assert_array_equal(bars.y, np.vstack([r1.answers, r2.answers]))
    # the y limits are set on every draw and hold every bar
    assert panel.compare_y.min <= min(0, bars.y.min()) and panel.compare_y.max >= bars.y.max()
    r3 = panel.run()  # a third: the latest two are compared
    assert bars.labels == ["#2 histogram of age", "#3 histogram of age"]
    np.testing.assert_array_equal(bars.y, np.vstack([r2.answers, r3.answers]))


def test_comparison_axis_speaks_in_data_units(session):
    """Issue 17 item 4: answer labels from the release's index in the column's units, axis named by the column."""
    from blowfish_nb.units import bin_label

    panel = AnalystPanel(session, alpha=60, beta=0.05)
    panel.run()
    age = session.attribute("age")
    assert list(panel.compare_bars.x) == [bin_label(age, i) for i in range(age.size)]  # "18–20", ...
    assert panel.compare_axis.label == "age" and isinstance(panel.compare_x, bqplot.OrdinalScale)
    assert 2 <= panel.compare_axis.num_ticks < age.size  # thinned: 31 bin labels do not fit side by side
    panel.column_dropdown.value = "salary"
    panel.run()
    salary = session.attribute("salary")
    # two columns: their answers on the union of both indexes, each series NaN where the other has answers
    assert list(panel.compare_bars.x) == ([bin_label(age, i) for i in range(age.size)]
                                          + [bin_label(salary, i) for i in range(salary.size)])
    y = np.asarray(panel.compare_bars.y, dtype=float)
    assert np.isnan(y[0, age.size:]).all() and np.isnan(y[1, :age.size]).all()
    assert panel.compare_axis.label == "age / salary"
    assert any("," in label for label in panel.compare_bars.x[age.size:])  # thousands as 70,000, not 7e+04


def test_a_histogram_beside_a_cumulative_count_is_drawn_as_its_running_sum(session):
    """Issue 28 (3): never a histogram and a cumulative count on one axis under mixed labels ("18–20 / ≤ 20")."""
    panel = AnalystPanel(session, alpha=60, beta=0.05)
    r1 = panel.run()
    panel.query_dropdown.value = "cumulative"
    r2 = panel.run()
    x = list(panel.compare_bars.x)
    assert x == [str(label) for label in r2.answers.index]  # the cumulative's own labels, no joint "a / b"
    assert not any(" / " in label for label in x)
    np.testing.assert_array_equal(panel.compare_bars.y, np.vstack([np.cumsum(r1.answers), r2.answers]))
    assert panel.compare_bars.labels == ["#1 histogram of age (running sum)", "#2 cumulative of age"]


def test_history_lists_every_release_of_the_session_not_only_the_panels(session):
    """Issue 28 (3): releases made in code before (and beside) the panel are in its history, numbered as in the
    ledger; the budget bar and the history tell the same story."""
    session.release("histogram", "salary", epsilon=0.1)
    session.release("cumulative", "age", accuracy=(80, 0.05))
    panel = AnalystPanel(session, alpha=60, beta=0.05)
    assert panel.history.value.count("<tr><td>") == 2 and "elsewhere in the session" in panel.history.value
    assert "histogram of salary" in panel.history.value and "cumulative of age" in panel.history.value
    assert panel.budget_bar.value == pytest.approx(session.remaining)
    panel.run()
    assert panel.history.value.count("<tr><td>") == 3 and panel.history.value.count("this panel") == 1
    assert panel.compare_bars.labels == ["#3 histogram of age"] and "#3" in panel.compare_figure.title
    session.release("histogram", "age", epsilon=0.05)  # in code, while the panel is open
    panel.run()
    assert panel.history.value.count("<tr><td>") == 5
    assert panel.compare_bars.labels == ["#3 histogram of age", "#5 histogram of age"]


def test_the_empty_chart_shows_no_axes_and_a_drawn_one_ticks_whole_counts(session):
    """Issue 28 (3): no "800m, 600m…" ticks on the chart before any release."""
    panel = AnalystPanel(session, alpha=60, beta=0.05)
    assert panel.compare_bars.y.size == 0 and not panel.compare_y_axis.visible and not panel.compare_axis.visible
    panel.run()
    assert panel.compare_y_axis.visible and panel.compare_axis.visible
    assert panel.compare_y.max - panel.compare_y.min >= 10  # ticks on whole counts
    assert "s" in panel.compare_y_axis.tick_format and "." not in panel.compare_y_axis.tick_format


def test_over_budget_is_refused_in_the_panel_and_nothing_is_charged(session):
    panel = AnalystPanel(session, alpha=2, beta=0.01)  # a very tight request: ε above the budget
    assert panel.quoted_epsilon > 1 and "more than the 1 left" in panel.cost.value
    assert panel.run() is None
    assert "refused" in panel.message.value and "nothing was computed or charged" in panel.message.value
    assert session.spent == 0 and len(session.ledger) == 0 and panel.releases == []


def test_granularity_answers_sums_of_bins(session):
    panel = AnalystPanel(session, alpha=60, beta=0.05)
    assert "line on age (31 cells); differential privacy (unbounded) on salary" in panel.children[0].value
    panel.granularity_slider.value = 4
    r = panel.run()
    # age bins of 2 years from 18: groups of 4 bins are 8 years, the last group 3 bins (ending at 80, closed)
    starts = list(range(18, 80, 8))
    expected = [f"[{a}, {a + 8})" for a in starts[:-1]] + ["[74, 80]"]
    assert r.query == "range" and list(r.answers.index) == expected
    panel.query_dropdown.value = "cumulative"
    r = panel.run()
    assert list(r.answers.index) == [f"[18, {a + 8})" for a in starts[:-1]] + ["[18, 80]"]
    panel.column_dropdown.value = "salary"
    assert not panel.granularity_slider.disabled and panel.granularity_slider.max == 25
    assert session.spent == pytest.approx(sum(x.epsilon for x in panel.releases))


def test_panel_holds_no_replayable_generator_unless_the_session_is_reproducible(session):
    """Issue 13 §2: a panel's generator could be deep-copied before Run and replayed to subtract the noise."""
    from blowfish_nb.exceptions import InvalidParameterError

    panel = AnalystPanel(session, alpha=60, beta=0.05)
    assert panel._rng is None  # every Run draws from OS entropy: nothing to copy
    with pytest.raises(InvalidParameterError, match="reproducible=True"):
        AnalystPanel(session, alpha=60, beta=0.05, rng=0)
    df = datasets.salaries(n=500, seed=4)
    teaching = df.blowfish.session(1.0, bins={"age": 31}, policy="line", reproducible=True)
    assert AnalystPanel(teaching, alpha=60, beta=0.05, rng=0).run() is not None
