"""θ stated in the column's units (issue 28, 6): ``("threshold", {"within": 10_000})``, converted exactly to bins."""

import numpy as np
import pandas as pd
import pytest

from blowfish_nb import Domain, InvalidParameterError, datasets
from blowfish_nb.policy.shorthand import from_spec, theta_for


def _salary(bins=50, bounds=(0, 250_000)):
    return Domain.from_column(pd.Series([1.0], name="salary"), bins=bins, bounds=bounds)


def test_within_is_theta_bins_exactly_brute_force():
    """Every whole multiple of the bin width is its θ; every distance between two multiples is refused."""
    rng = np.random.default_rng(28)
    for _ in range(200):
        bins = int(rng.integers(2, 120))
        lo = float(rng.choice([0, 18, -3.5, 1e-3]))
        width = float(rng.choice([1, 0.1, 2.5, 5000, 1 / 3]))
        d = Domain.from_column(pd.Series([lo], name="v"), bins=bins, bounds=(lo, lo + width * bins))
        theta = int(rng.integers(1, bins))
        assert theta_for(d, theta * width) == theta
        assert from_spec("threshold", d, within=theta * width).theta == theta
        with pytest.raises(InvalidParameterError, match="whole"):
            theta_for(d, (theta + 0.5) * width)


def test_within_refusals_name_the_nearest_whole_bin_distances():
    with pytest.raises(InvalidParameterError, match=r"within=10,000 \(θ=2\) or within=15,000 \(θ=3\)"):
        theta_for(_salary(), 12_000)
    with pytest.raises(InvalidParameterError, match="not both"):
        from_spec("threshold", _salary(), theta=2, within=10_000)
    with pytest.raises(InvalidParameterError, match="positive distance"):
        theta_for(_salary(), -5)
    with pytest.raises(InvalidParameterError, match="not of equal width"):
        theta_for(Domain.from_column(pd.Series([1.0], name="v"), bins=[0, 1, 5, 10]), 1)


def test_within_in_a_release_and_a_session_per_column():
    df = datasets.salaries(300, seed=1)
    r = df.blowfish.release("histogram", "salary", bins=50, bounds=(0, 250_000),
                            policy=("threshold", {"within": 10_000}), epsilon=1.0, rng=0)
    assert r.policy.params["theta"] == 2
    s = df.blowfish.session(1.0, bins={"salary": 50, "age": 62},
                            policy={"salary": ("threshold", {"within": 15_000}), "age": "line"})
    assert s.column_policy("salary").params["theta"] == 3
