"""Explorer: kernel-side state and handlers (what a front-end update does, without a browser)."""

import numpy as np
import pytest

from blowfish_nb import datasets
from blowfish_nb.widgets import Explorer


@pytest.fixture
def ex():
    return Explorer(datasets.salaries(n=1500, seed=5), column="salary", bins=25, theta=2, rng=0)


def test_initial_state(ex):
    assert ex.release.epsilon == 1.0 and ex.release.policy.family == "threshold"
    np.testing.assert_array_equal(ex.true_bars.y, ex.true_answers.to_numpy())
    np.testing.assert_array_equal(ex.noisy_bars.y, ex.release.answers.to_numpy())
    assert len(ex.canvas.nodes) == 25 and len(ex.canvas.edges) == 24 + 23
    # threshold policy, histogram: Δ = 2, so 2·(Δ/ε)² = 8 per bin at ε = 1
    assert ex.release.expected_error == pytest.approx(8.0)
    assert "Laplace" in ex.readout.value and "<b>8</b>" in ex.readout.value


def test_epsilon_slider_makes_a_new_release(ex):
    before = ex.noisy_bars.y.copy()
    ex.epsilon_slider.set_state({"value": 0.1})  # what the front end sends
    assert ex.release.epsilon == pytest.approx(0.1)
    assert not np.allclose(ex.noisy_bars.y, before)
    assert ex.release.expected_error == pytest.approx(2 * (2 / 0.1) ** 2)
    np.testing.assert_array_equal(ex.true_bars.y, ex.true_answers.to_numpy())  # truth unchanged


def test_theta_and_family_redraw_the_canvas(ex):
    ex.theta_slider.value = 5
    assert len(ex.canvas.edges) == sum(25 - d for d in range(1, 6))
    ex.family_dropdown.value = "dp"
    assert ex.canvas.nodes[-1]["id"] == "bottom" and ex.theta_slider.disabled
    ex.query_dropdown.value = "cumulative"
    assert ex.release.query == "cumulative" and ex.release.mechanism == "Laplace"
    ex.family_dropdown.value = "line"
    # noisy prefix sums with the public total: at most the Ordered mechanism's 2/ε²
    assert ex.release.mechanism == "Transformed+Laplace" and ex.release.expected_error <= 2.0
