"""Monte-Carlo per-query MSE of every data-independent mechanism × policy within 3 standard errors.

k = 256 for line, threshold(4) and dp; the 16×16 grid under grid(θ=1) and dp.
R = 600 seeded runs per case: the mean of R per-run MSEs has standard error
sd/√R, and |mean − analytic| ≤ 3 SE is the test.
"""

import zlib

import numpy as np
import pytest

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.ranges import random_ranges, ranges_2d

RUNS = 600
MECHS = [mechanisms.Laplace(), mechanisms.Ordered(), mechanisms.Hierarchical(2), mechanisms.Hierarchical(4),
         mechanisms.Privelet()]

ONE_D = Domain.grid(256)
TWO_D = Domain.grid((16, 16))
POLICIES = {
    "line": policy.line(ONE_D),
    "threshold4": policy.threshold(ONE_D, 4),
    "dp": policy.dp(ONE_D),
    "grid": policy.grid(TWO_D, 1),
    "dp-2d": policy.dp(TWO_D),
}


def workloads(pol):
    k = pol.domain.size
    if len(pol.domain.shape) == 1:
        return {"histogram": workload.identity(k), "cumulative": workload.prefix(k),
                "ranges": random_ranges(k, 500, rng=7)}
    return {"histogram": workload.identity(k), "boxes": ranges_2d(pol.domain.shape, 300, rng=7)}


CASES = [(m, p, w) for m in MECHS for p in POLICIES for w in workloads(POLICIES[p])]


@pytest.mark.parametrize("mech,pol_name,wname", CASES, ids=[f"{m!r}-{p}-{w}" for m, p, w in CASES])
def test_monte_carlo_mse_within_three_standard_errors(mech, pol_name, wname):
    pol = POLICIES[pol_name]
    W = workloads(pol)[wname]
    x = np.random.default_rng(11).poisson(20, size=pol.domain.size).astype(float)
    truth = W @ x
    rng = np.random.default_rng(zlib.crc32(f"{mech!r}/{pol_name}/{wname}".encode()))
    eps = 0.5
    mse = np.array([np.mean((mech.release(x, W, pol, eps, rng=rng) - truth) ** 2) for _ in range(RUNS)])
    expected = mech.expected_error(W, pol, eps)
    se = mse.std(ddof=1) / np.sqrt(RUNS)
    assert abs(mse.mean() - expected) <= 3 * se, (mse.mean(), expected, se)
