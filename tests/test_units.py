"""Data-unit labels: rounding keeps every edge within a twentieth of the narrowest bin, and labels are exact."""

import numpy as np
import pytest

from blowfish_nb import Domain
from blowfish_nb.domain import CategoricalAttribute, OrderedAttribute
from blowfish_nb.units import bin_label, cell_label, decimals, format_edge, range_label, span_label


@pytest.mark.parametrize("edges", [
    np.linspace(17, 93, 32),          # the quickstart's 31 age bins: 2.45 years each
    np.arange(0, 250_001, 5_000),     # salary bins of 5,000
    np.linspace(0, 1, 11),
    [0.001, 0.0015, 0.002],
    [-3, -1, 0, 2.5],
])
def test_rounding_is_the_fewest_decimals_within_a_twentieth_of_a_bin(edges):
    attr = OrderedAttribute("v", edges)
    d = decimals(attr)
    e = np.asarray(attr.edges, dtype=float)
    tol = np.min(np.diff(e)) / 20
    printed = np.array([float(format_edge(attr, v).replace(",", "")) for v in e])
    assert np.max(np.abs(printed - e)) <= tol + 1e-12
    if d > 0:  # one decimal fewer breaks the tolerance somewhere (brute force over the edges)
        assert np.max(np.abs(np.round(e, d - 1) - e)) > tol
    assert np.all(np.diff(printed) > 0)  # distinct edges stay distinct


def test_labels_in_data_units():
    salary = OrderedAttribute("salary", np.arange(0, 250_001, 5_000))
    assert range_label(salary, 14, 26) == "70,000–135,000"
    assert bin_label(salary, 0) == "0–5,000"
    assert span_label(salary, 2) == "10,000"
    age = OrderedAttribute("age", np.linspace(17, 93, 32))  # edges 24.35…, 26.81…
    assert bin_label(age, 3) == "24.4–26.8"
    assert format_edge(OrderedAttribute("x", [-1, 0, 1]), -0.0) == "0"
    colour = CategoricalAttribute("colour", ("red", "green", "blue"))
    assert bin_label(colour, 1) == "green" and range_label(colour, 0, 2) == "red … blue"
    d = Domain([OrderedAttribute("age", [20, 30, 40]), salary])
    assert cell_label(d, d.index((1, 14))) == "age 30–40 · salary 70,000–75,000"


def test_format_edges_matches_format_edge_one_by_one():
    """The one-pass formatter gives exactly the per-value labels, "-0" cases and separators included."""
    import numpy as np

    from blowfish_nb.domain import OrderedAttribute
    from blowfish_nb.units import format_edge, format_edges

    rng = np.random.default_rng(7)
    for edges in ([-1.0, 0.0, 0.5], np.linspace(0, 250_000, 65), np.linspace(-3, 3, 41), [17, 19.5, 22, 1e6]):
        attr = OrderedAttribute("v", edges)
        values = np.concatenate([np.asarray(edges, dtype=float), rng.uniform(-5, 5, 50), [-1e-9, -0.004, 0.0, -0.0]])
        assert format_edges(attr, values) == [format_edge(attr, v) for v in values]
