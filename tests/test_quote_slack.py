"""benchmarks/quote_slack.py's ``certified_slack``: the j/n quantile over the (1 − β)-quantile of the draws."""

import numpy as np
from scipy import stats

from benchmarks.quote_slack import certified_slack
from blowfish_nb.accuracy import binomial_quantile


def test_the_certified_order_statistic_is_775_of_800():
    assert binomial_quantile(0.99, 800, 0.95) + 1 == 775


def test_certified_slack_matches_the_exact_quantile_ratio_of_a_known_law():
    # max |error| of one Gaussian answer: |Z|; quantile p of |Z| is Φ⁻¹((1 + p) / 2)
    z = np.abs(np.random.default_rng(5).standard_normal(400_000))
    exact = stats.norm.ppf((1 + 775 / 800) / 2) / stats.norm.ppf(0.975)
    assert abs(certified_slack(z) - exact) < 0.008  # 3 SE: the two quantiles' SEs ≈ 0.0018 and 0.0015 relative
    # scale-free: the ratio of two quantiles does not move with α or ε
    assert certified_slack(3.0 * z) == certified_slack(z)
