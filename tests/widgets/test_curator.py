"""CuratorExplorer: kernel-side state and handlers (what front-end updates do, without a browser)."""

import asyncio

import numpy as np
import pytest

from blowfish_nb import datasets, policy, workload
from blowfish_nb.planning import Plan, plan_budget
from blowfish_nb.queries import build_query
from blowfish_nb.widgets import CuratorExplorer, Explorer
from blowfish_nb.widgets.curator import LOG_PAD, flat_note
from blowfish_nb.widgets.ticks import log_ticks, nice_ticks


def dlap_var(b):
    """Variance 2t/(1 − t)² of the discrete Laplace noise of scale b (t = e^{−1/b})."""
    t = np.exp(-1.0 / b)
    return 2 * t / (1 - t) ** 2


@pytest.fixture
def ex():
    return CuratorExplorer(datasets.salaries(n=1500, seed=5), column="salary", bins=25, theta=2, rng=0)


def test_initial_state(ex):
    assert Explorer is CuratorExplorer
    assert ex.release.epsilon == 1.0 and ex.release.policy.family == "threshold"
    np.testing.assert_array_equal(ex.true_bars.y, ex.true_answers.to_numpy())
    np.testing.assert_array_equal(ex.noisy_bars.y, ex.release.answers.to_numpy())
    assert len(ex.canvas.nodes) == 25 and len(ex.canvas.edges) == 24 + 23
    # threshold policy, histogram: Δ = 2, so 2·(Δ/ε)² = 8 per bin at ε = 1
    assert ex.release.expected_error == pytest.approx(dlap_var(2 / 1.0))  # Laplace, Δ = 2, ε = 1
    assert "Laplace" in ex.readout.value and "<b>7.835</b>" in ex.readout.value
    assert ex.canvas.facts["sensitivity"] == 2.0 and ex.recomputations == 1
    se = np.sqrt(dlap_var(2.0))
    np.testing.assert_allclose(ex.band.y, np.vstack([ex.true_bars.y - 2 * se, ex.true_bars.y + 2 * se]))


def test_bars_and_axis_speak_in_the_columns_units(ex):
    edges = ex.domain.attributes[0].edges  # 25 bins of 10,000 on the public bounds 0–250,000
    np.testing.assert_allclose(ex.true_bars.x, (edges[:-1] + edges[1:]) / 2)  # each bar on its bin
    np.testing.assert_allclose(ex.noisy_bars.x, ex.true_bars.x)
    assert ex.x_axis.label == "salary"  # no "bin index"
    ticks = np.asarray(ex.x_axis.tick_values)
    assert ticks.min() >= edges[0] and ticks.max() <= edges[-1] and 3 <= len(ticks) <= 7
    assert ex.x_axis.tick_format == ",.0f"
    # θ in data units, in the readout and on the error–θ plot's axis
    assert "θ = 2 bins = 20,000" in ex.readout.value
    assert ex.tradeoff_x_axis.label == "θ (bins of 10,000)"
    assert not ex.figure.display_toolbar and not ex.tradeoff.display_toolbar


def test_readout_names_the_querys_and_the_strategys_sensitivity(ex):
    ex.query_dropdown.value = "cumulative"
    ex.theta_slider.value = 10
    r, pol = ex.release, ex.release.policy
    query_delta = pol.sensitivity(workload.prefix(25))  # the core's figure, which the canvas shows too
    strategy_delta = r.provenance["sensitivity"]
    assert query_delta == ex.canvas.facts["sensitivity"] == 10.0
    assert strategy_delta < query_delta  # the strategy the chosen mechanism measures is cheaper
    text = ex.readout.value
    assert f"Δ of the query = {query_delta:g}" in text
    assert f"Δ of the strategy {r.mechanism} measures = {strategy_delta:g}" in text
    assert "noise is calibrated to the strategy" in text


def test_theta_moves_do_not_fill_the_canvas_undo_history(ex):
    ex.theta_slider.value = 4
    ex.family_dropdown.value = "line"
    assert ex.canvas.history == [0, 0]  # the controls decided these policies; nothing to undo on the canvas
    ex.canvas.edit({"op": "add", "source": "c0", "target": "c9"})
    assert ex.canvas.history == [1, 0]


def test_epsilon_slider_makes_one_new_release(ex):
    before = ex.noisy_bars.y.copy()
    ex.epsilon_slider.set_state({"value": 0.1})  # what the front end sends
    assert ex.release.epsilon == pytest.approx(0.1) and ex.recomputations == 2
    assert not np.allclose(ex.noisy_bars.y, before)
    assert ex.release.expected_error == pytest.approx(dlap_var(2 / 0.1))
    np.testing.assert_array_equal(ex.true_bars.y, ex.true_answers.to_numpy())  # truth unchanged


def test_theta_moves_canvas_bars_and_tradeoff_marker(ex):
    bars = ex.noisy_bars.y.copy()
    ex.theta_slider.value = 5
    assert len(ex.canvas.edges) == sum(25 - d for d in range(1, 6))
    assert ex.release.policy.params["theta"] == 5 and not np.allclose(ex.noisy_bars.y, bars)
    assert ex.current_point.x == [5.0]
    assert ex.current_point.y[0] == pytest.approx(np.sqrt(ex.release.expected_error))
    ex.family_dropdown.value = "dp"
    assert ex.canvas.nodes[-1]["id"] == "bottom" and ex.theta_slider.disabled
    ex.query_dropdown.value = "cumulative"
    # DP, cumulative: the strategy optimised for the prefixes (auto offers Optimized on 1-D since issue 24)
    assert ex.release.query == "cumulative" and ex.release.mechanism == "Optimized"
    ex.family_dropdown.value = "line"
    # noisy prefix sums with the public total: at most the Ordered mechanism's 2/ε²
    assert ex.release.mechanism == "Transformed+Laplace" and ex.release.expected_error <= 2.0


def test_partition_slider_sets_the_blocks(ex):
    ex.family_dropdown.value = "partition"
    ex.block_slider.value = 5
    comps = ex.release.policy.components()
    assert sorted(len(c) for c in comps) == [5] * 5 and not ex.block_slider.disabled
    assert ex.canvas.facts["components"] == 5


def test_canvas_edit_drives_the_release(ex):
    ex.canvas.edit({"op": "add", "source": "c0", "target": "c20"})
    assert ex.family_dropdown.value == "custom"
    assert (0, 20) in {tuple(e) for e in ex.release.policy.edges().tolist()}
    # the histogram's sensitivity is still 2 (one record moves one unit between two bins)
    assert ex.canvas.facts["sensitivity"] == 2.0
    ex.query_dropdown.value = "cumulative"
    assert ex.canvas.facts["sensitivity"] == ex.release.policy.sensitivity(workload.prefix(25))
    assert ex.canvas.facts["sensitivity"] == 20.0  # the long edge crosses 20 prefixes
    ex.canvas.undo()
    assert ex.release.policy.edge_count() == 24 + 23


def test_tradeoff_points_are_the_auto_mechanisms_errors_and_clicking_one_shows_it(ex):
    k = ex.domain.size
    for i, theta in enumerate(ex._thetas):
        plan = Plan(ex.domain, build_query(ex.domain, "histogram"), policy.threshold(ex.domain, int(theta)), ["salary"])
        b = plan_budget(plan, epsilon=0.5, projection=False)
        expected = b.mechanism.expected_error(b.run.workload, b.run.policy, 0.5)
        assert ex.tradeoff_points[1].y[i] == pytest.approx(np.sqrt(expected))  # the ε = 0.5 series
    assert ex._thetas[0] == 1 and ex._thetas[-1] == k - 1
    # a click on the third point of the ε = 0.1 series
    ex._tradeoff_click(0.1)(ex.tradeoff_points[0], {"data": {"index": 2}})
    assert ex.release.epsilon == pytest.approx(0.1) and ex.release.policy.params["theta"] == ex._thetas[2]
    assert ex.current_point.y[0] == pytest.approx(ex.tradeoff_points[0].y[2])


def _overlapped(edges, a, b):
    """Brute force: the bins whose interval [edge i, edge i+1] meets [a, b]."""
    return [i for i in range(len(edges) - 1) if edges[i + 1] > a and edges[i] <= b]


def test_brushing_a_range_shows_its_true_and_noisy_answer_in_data_units(ex):
    edges = ex.domain.attributes[0].edges
    ex.brush.selected = [26_000.0, 52_000.0]  # the brush reports data units
    bins = _overlapped(edges, 26_000, 52_000)
    assert bins == [2, 3, 4, 5]
    x = ex._x
    answers = ex.release.answers.to_numpy()
    text = ex.range_readout.value
    assert "salary 20,000–60,000" in text and "bins" not in text
    assert f"true <b>{x[2:6].sum():,.0f}</b>" in text and f"noisy <b>{answers[2:6].sum():,.1f}</b>" in text
    # Laplace with Δ = 2 on four cells: four times the discrete Laplace variance at scale 2/ε, one standard error
    assert f"±{np.sqrt(4 * dlap_var(2.0)):.3g}" in text
    ex.query_dropdown.value = "cumulative"
    answers = ex.release.answers.to_numpy()
    assert f"noisy <b>{answers[5] - answers[1]:,.1f}</b>" in ex.range_readout.value
    assert f"noisy <b>{ex.release.range_answer(2, 5):,.1f}</b>" in ex.range_readout.value
    rng = np.random.default_rng(4)
    for a, b in np.sort(rng.uniform(0, 250_000, size=(20, 2)), axis=1):
        ex.brush.selected = [a, b]
        got = _overlapped(edges, a, b)
        assert f"salary {edges[got[0]]:,.0f}–{edges[got[-1] + 1]:,.0f}" in ex.range_readout.value


def test_tradeoff_plot_keeps_every_point_inside_and_says_why_it_is_flat(ex):
    xs, ys = ex.tradeoff_x_axis.scale, ex.tradeoff_y_axis.scale
    for eps in (1.0, 0.05, 0.001):  # small ε: the current point far above the ε = 0.1 line
        ex.epsilon_slider.value = eps
        points = np.concatenate([np.asarray(d.y) for d in ex.tradeoff_points] + [np.asarray(ex.current_point.y)])
        assert ys.min * LOG_PAD ** 2 <= points.min() * (1 + 1e-9) and points.max() * LOG_PAD ** 2 <= ys.max * (1 + 1e-9)
        ticks = np.asarray(ex.tradeoff_y_axis.tick_values)
        assert 1 <= len(ticks) <= 6 and ticks.min() >= ys.min and ticks.max() <= ys.max
    assert xs.min < ex._thetas[0] and ex._thetas[-1] < xs.max
    assert not any(m.display_legend for m in ex.tradeoff.marks)  # the legend is HTML under the plot
    assert "ε = 0.1" in ex.tradeoff_legend.value
    assert all(d.tooltip.formats == ["d", ",.3~g"] for d in ex.tradeoff_points)
    # histogram: Δ = 2 at every θ (from the core), so the lines are flat from θ = 2 and the note says why
    deltas = {policy.threshold(ex.domain, int(t)).sensitivity(workload.identity(25)) for t in ex._thetas}
    assert deltas == {2.0} and "Flat from θ = 2" in ex.tradeoff_note.value and "Δ = 2" in ex.tradeoff_note.value
    ex.query_dropdown.value = "cumulative"  # θ matters: no note
    assert ex.tradeoff_note.value == ""


def test_tick_helpers():
    assert nice_ticks(0, 250_000).tolist() == [0, 50_000, 100_000, 150_000, 200_000, 250_000]
    assert nice_ticks(18, 80).tolist() == [20, 40, 60, 80]
    assert log_ticks(1, 49).tolist() == [1, 2, 5, 10, 20]
    assert log_ticks(0.5, 3000).tolist() == [1, 10, 100, 1000]
    assert flat_note("histogram", np.array([1, 2, 4]), {1.0: np.array([1.0, 2.0, 3.0])}, [2.0] * 3) == ""


def test_a_slider_step_is_answered_at_once_and_a_burst_costs_one_more_recomputation():
    """Issue 28: no debounce delay before a single step; a burst's later steps coalesce into one trailing call."""
    async def burst():
        ex = CuratorExplorer(datasets.salaries(n=500, seed=1), column="age", bins=20, theta=2, rng=0, debounce=0.05)
        await asyncio.sleep(0.1)  # quiet
        start = ex.recomputations
        ex.epsilon_slider.value = 0.2
        assert ex.recomputations == start + 1 and ex.release.epsilon == pytest.approx(0.2)  # at once
        for eps in (0.3, 0.4, 0.5, 0.6):
            ex.epsilon_slider.value = eps
        ex.theta_slider.value = 4
        assert ex.recomputations == start + 1 and ex._debouncer.pending
        await asyncio.sleep(0.2)
        assert ex.recomputations == start + 2  # the whole rest of the burst: one
        await asyncio.sleep(0.1)
        ex.theta_slider.value = 3  # quiet again: at once
        assert ex.recomputations == start + 3 and ex.release.policy.params["theta"] == 3
        return ex, start

    ex, start = asyncio.run(burst())
    assert ex.release.epsilon == pytest.approx(0.6)


def test_column_picker_rebins_and_bad_family_is_refused():
    df = datasets.salaries(n=800, seed=3)
    ex = CuratorExplorer(df, column="salary", bins=30, columns=["salary", "age"], rng=0)
    ex.column_dropdown.value = "age"
    assert ex.release.columns == ("age",) and ex.domain.names == ("age",) and len(ex.true_bars.y) == 30
    assert ex.true_answers.sum() == len(df)
    from blowfish_nb.exceptions import PolicyError
    with pytest.raises(PolicyError, match="policy must be one of"):
        CuratorExplorer(df, column="salary", bins=30, policy="lenient")


def test_a_new_graph_is_answered_at_once_then_by_the_best_mechanism():
    """Inside a kernel: the last mechanism answers a never-seen graph at once; the full choice follows."""
    async def scenario():
        ex = CuratorExplorer(datasets.salaries(n=500, seed=1), column="age", bins=40, theta=2, rng=0, debounce=0.02)
        ex.query_dropdown.value = "cumulative"
        await asyncio.sleep(0.3)
        # θ = 2, cumulative: the optimised strategy (lower analytic error than Ordered's noisy prefixes, issue 24)
        assert ex.release.mechanism == "Optimized"
        ex.canvas.edit({"op": "remove", "source": "c10", "target": "c12"})
        await asyncio.sleep(0.05)  # the debounced recomputation ran; the refinement is pending
        provisional = ex.release
        assert provisional.mechanism == "Optimized" and "choosing the best mechanism" in ex.readout.value
        # its noise is calibrated to the edited graph itself (the exact Δ of the last chosen strategy under it)
        last = ex._last_choice["cumulative"]
        assert provisional.provenance["sensitivity"] == ex.canvas.policy.sensitivity(last.strategy(ex.canvas.policy))
        await asyncio.sleep(0.6)
        return ex

    ex = asyncio.run(scenario())
    plan = Plan(ex.domain, build_query(ex.domain, "cumulative"), ex.canvas.policy, ["age"])
    best = plan_budget(plan, epsilon=1.0, projection=False).mechanism
    assert ex.release.mechanism == best.name and "choosing" not in ex.readout.value


def test_the_readout_leads_with_a_plain_sentence_and_keeps_the_details_one_click_away():
    """Issue 28 (6): no Δ, ⊥ or mechanism names before the user asks for them."""
    import re

    df = datasets.salaries(n=800, seed=3)
    ex = CuratorExplorer(df, column="salary", bins=50, policy="threshold", theta=3, rng=0)
    plain, details = re.match(r"<span class='blowfish-readout-plain'>(.*?)</span> <details.*?>(.*)</details>",
                              ex.readout.value).groups()
    assert "values within 15,000 of each other cannot be told apart" in plain
    assert "Δ" not in plain and ex.release.mechanism not in plain
    assert "Δ of the query" in details and ex.release.mechanism in details
    ex.family_dropdown.value = "dp"
    assert "whether any one person is in the data cannot be told" in ex.readout.value


def test_unequal_bins_are_drawn_at_their_true_widths():
    """Issue 28 (7): bqplot's Bars give every bar one width, so unequal bins are drawn as outlines at their widths."""
    from blowfish_nb.widgets.curator import NOISY_WIDTH, TRUE_WIDTH

    df = datasets.salaries(n=800, seed=3)
    edges = np.array([0, 20_000, 40_000, 100_000, 250_000], dtype=float)
    ex = CuratorExplorer(df, column="salary", bins={"salary": edges.tolist(), "age": 31}, columns=["salary", "age"],
                         theta=1, rng=0)
    assert ex.true_areas.visible and ex.noisy_areas.visible
    assert not ex.true_bars.visible and not ex.noisy_bars.visible
    for mark, values, share in ((ex.true_areas, ex.true_answers.to_numpy(), TRUE_WIDTH),
                                (ex.noisy_areas, ex.release.answers.to_numpy(), NOISY_WIDTH)):
        x, y = np.asarray(mark.x).reshape(-1, 4), np.asarray(mark.y).reshape(-1, 4)
        np.testing.assert_allclose(x[:, 2] - x[:, 0], share * np.diff(edges))  # each bar as wide as its bin's share
        np.testing.assert_allclose((x[:, 0] + x[:, 2]) / 2, (edges[:-1] + edges[1:]) / 2)  # centred on its bin
        assert (x[:, 0] >= edges[:-1]).all() and (x[:, 2] <= edges[1:]).all()  # inside its bin
        np.testing.assert_array_equal(y[:, 1], values)
        np.testing.assert_array_equal(y[:, [0, 3]], 0)  # the outline runs along 0 between bars
    before = np.asarray(ex.noisy_areas.y).copy()
    ex.epsilon_slider.value = 0.05
    assert not np.array_equal(ex.noisy_areas.y, before)  # a new release redraws the outline
    # equal bins: the Bars show them again
    ex.column_dropdown.value = "age"
    assert ex.true_bars.visible and not ex.true_areas.visible


def test_answers_carry_the_labels_the_widgets_show():
    """Issue 28 (7): a histogram release is indexed by the bins in data units ('5,000–10,000'), as views print them."""
    from blowfish_nb.units import bin_label
    from blowfish_nb.widgets import AnalystPanel

    df = datasets.salaries(n=800, seed=3)
    ex = CuratorExplorer(df, column="salary", bins=50, rng=0)
    attr = ex.domain.attributes[0]
    shown = [bin_label(attr, i) for i in range(attr.size)]
    assert ex.release.answers.index.tolist() == shown and ex.true_answers.index.tolist() == shown
    assert shown[1] == "5,000–10,000" and ex.release.answers.index.name == "salary"
    assert ex.release.answers.iloc[1] == ex.release.answers["5,000–10,000"]  # positions and labels both work
    s = df.blowfish.session(1.0, bins={"salary": 50, "age": 31})
    r = s.release("histogram", "salary", epsilon=0.1)
    assert r.answers.index.tolist() == shown
    assert AnalystPanel(s)._answer_labels(r) == shown
