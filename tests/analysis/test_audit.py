"""The privacy audit passes every shipped mechanism and catches a mis-calibrated one."""

import numpy as np
import pytest

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.analysis import audit, log_ratio_lower_bound
from tests.fixtures import HalfNoiseLaplace

POLICIES = {
    "line": policy.line(Domain.grid(8)),
    "threshold4": policy.threshold(Domain.grid(8), 4),
    "dp": policy.dp(Domain.grid(8)),
    "grid": policy.grid((4, 4), 1),
}
LINEAR = [mechanisms.Laplace(), mechanisms.Ordered(), mechanisms.Hierarchical(2), mechanisms.Privelet()]


@pytest.mark.parametrize("mech", LINEAR, ids=repr)
@pytest.mark.parametrize("pol_name", list(POLICIES))
def test_shipped_mechanisms_show_no_violation(mech, pol_name):
    pol = POLICIES[pol_name]
    W = workload.prefix(pol.domain.size) if len(pol.domain.shape) == 1 else workload.identity(pol.domain.size)
    result = audit(mech, pol, 1.0, workload=W, samples=100_000, rng=1)
    assert not result.violation, str(result)
    assert 0 <= result.lower_bound <= 1.0 and len(result.edges) == 2


def test_consistent_ordered_shows_no_violation():
    pol = POLICIES["threshold4"]
    result = audit(mechanisms.Ordered(consistent=True), pol, 1.0, workload=workload.prefix(8), samples=1_000, rng=2)
    assert not result.violation, str(result)


@pytest.mark.parametrize("pol_name", list(POLICIES))
def test_half_noise_laplace_is_flagged(pol_name):
    result = audit(HalfNoiseLaplace(), POLICIES[pol_name], 1.0, samples=200_000, rng=3)
    assert result.violation, str(result)
    assert "VIOLATION" in str(result) and result.lower_bound > 1.0


def test_worst_edges_are_the_strategy_maxima():
    # the prefix strategy under G^4: moves of exactly 4 bins change the most prefix sums
    result = audit(mechanisms.Ordered(), POLICIES["threshold4"], 1.0, workload=workload.prefix(8), samples=2_000, rng=0)
    assert all(abs(int(r.v) - int(r.u)) == 4 for r in result.edges.itertuples())


def test_sample_matches_release_distribution():
    pol, W = POLICIES["line"], workload.prefix(8)
    x = np.arange(8.0)
    m = mechanisms.Hierarchical(2)
    draws = m.sample(x, W, pol, 0.5, 20_000, rng=0)
    mse = np.mean((draws - W @ x) ** 2, axis=1)
    se = mse.std(ddof=1) / np.sqrt(len(mse))
    assert abs(mse.mean() - m.expected_error(W, pol, 0.5)) <= 3 * se


def test_clopper_pearson_log_ratio_matches_its_definition():
    from scipy.stats import beta

    a = 0.01
    for k_num, k_den, n in ((900, 100, 1000), (5, 0, 50), (50, 50, 50), (1, 7, 20)):
        lo = beta.ppf(a, k_num, n - k_num + 1)
        hi = beta.ppf(1 - a, k_den + 1, n - k_den) if k_den < n else 1.0
        assert log_ratio_lower_bound(k_num, n, k_den, n, a) == pytest.approx(np.log(lo / hi))
    assert log_ratio_lower_bound(0, 10, 0, 10, a) == -np.inf
    vec = log_ratio_lower_bound(np.array([900, 5]), np.array([1000, 50]), np.array([100, 0]), np.array([1000, 50]), a)
    assert vec.shape == (2,) and vec[0] == pytest.approx(log_ratio_lower_bound(900, 1000, 100, 1000, a))
