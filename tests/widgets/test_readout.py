"""Readout: the explorer's readout is an anywidget whose front end keeps a ``<details>`` open (or closed) across values.

The front end matches each ``<details>`` to its predecessor by class (the browser side is
tests/browser/test_explorer_views.py::test_opened_details_stay_open_while_epsilon_moves); here, what the kernel
must give it for that: the same strings as the ``HTML`` widget had, a class on the details that every value keeps,
and the ``value`` trait synced under that name.
"""

import re

import anywidget
import pytest

from blowfish_nb import datasets
from blowfish_nb.exceptions import PolicyError
from blowfish_nb.widgets import CuratorExplorer
from blowfish_nb.widgets.readout import ESM, Readout

DETAILS = re.compile(r"<details class='([^']+)'")


@pytest.fixture(autouse=True)
def _no_fits(monkeypatch):
    """"auto" among the fixed candidates only (an Optimized fit per θ of the tradeoff plot took seconds each)."""
    monkeypatch.setattr("blowfish_nb.mechanisms.optimized.AUTO_COST", 0)


@pytest.fixture
def ex():
    return CuratorExplorer(datasets.salaries(n=800, seed=3), column="salary", bins=25, theta=2, rng=0)


def test_the_explorers_readout_is_a_readout_with_its_class_and_a_synced_value(ex):
    assert isinstance(ex.readout, Readout) and isinstance(ex.readout, anywidget.AnyWidget)
    assert "blowfish-readout" in ex.readout._dom_classes  # what the browser tests and the page's selectors find
    state = ex.readout.get_state()
    assert state["value"] == ex.readout.value and ex.readout.trait_metadata("value", "sync")
    assert "change:value" in ESM and "model.get(\"value\")" in ESM  # the front end draws the trait of that name


def test_every_step_keeps_the_details_class_the_front_end_matches_on(ex):
    """ε, θ, the family and the query each give a new value; its details have the one class the last one had, so
    the front end carries the user's open (or closed) state over to the new text."""
    seen = [ex.readout.value]
    ex.epsilon_slider.set_state({"value": 0.1})
    seen.append(ex.readout.value)
    ex.theta_slider.set_state({"value": 4})
    seen.append(ex.readout.value)
    ex.family_dropdown.value = "dp"
    seen.append(ex.readout.value)
    ex.query_dropdown.value = "cumulative"
    seen.append(ex.readout.value)
    assert len(set(seen)) == len(seen)  # every step changed the text
    assert [DETAILS.findall(v) for v in seen] == [["blowfish-readout-details"]] * len(seen)
    assert "ε = 0.1 " in seen[1] and "ε = 1 " in seen[0]


def test_an_error_replaces_the_readout_and_the_next_step_brings_the_details_back(ex):
    ex._show_error(PolicyError("θ must be at least 1"))
    assert ex.readout.value.startswith("<span style='color:#b00020'>✗ θ must be at least 1")
    assert not DETAILS.findall(ex.readout.value)
    ex.epsilon_slider.set_state({"value": 0.5})
    assert DETAILS.findall(ex.readout.value) == ["blowfish-readout-details"] and "ε = 0.5 " in ex.readout.value


def test_a_readout_round_trips_its_value_like_the_html_widget():
    r = Readout("<b>x</b>")
    assert r.value == "<b>x</b>" and Readout().value == ""
    r.set_state({"value": "<i>y</i>"})  # what a front-end update does
    assert r.value == "<i>y</i>"
    r.add_class("a")
    assert r._dom_classes == ("a",)
