"""Attack 33b: the default flat template's released strategies are charged their brute-force Δ, also when the
strategy (signed, possibly with the public-total row) is re-used under another policy on its grid; and a
fail-open found on the way: a NaN entry makes the edge-difference Δ 0 (Python's max(0.0, nan) is 0.0).
"""

import itertools

import numpy as np
import pytest

from blowfish_nb import Domain, mechanisms, policy
from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.operators import Matrix
from blowfish_nb.ranges import ranges_2d


def _brute(A, pairs, bottom):
    d = max((np.abs(A[:, u] - A[:, v]).sum() for u, v in pairs), default=0.0)
    return max([d] + [np.abs(A[:, u]).sum() for u in bottom])


def test_default_flat_fit_and_its_total_row_are_charged_the_brute_force_delta_under_other_policies():
    shape = (3, 3)
    cells = list(itertools.product(range(3), range(3)))
    g1 = [(i, j) for i, j in itertools.combinations(range(9), 2)
          if sum(abs(a - b) for a, b in zip(cells[i], cells[j])) == 1]
    m = mechanisms.Optimized.fit(ranges_2d(shape, 12, rng=1), policy.grid(shape, 1), rng=0, restarts=1, max_iter=60)
    assert "flat" in m.optimized.info["template"]
    A = m.optimized.operator.dense()
    for pol, pairs, bottom in [(policy.grid(shape, 1), g1, []), (policy.dp(Domain.grid(shape)), [], range(9)),
                               (policy.custom(Domain.grid(shape), [(0, 8), (4, "⊥")]), [(0, 8)], [4])]:
        assert float(m.sensitivity(pol)) >= _brute(A, pairs, bottom) * (1 - 1e-12)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("pol", [policy.grid((2, 2), 1), policy.dp(Domain.grid((2, 2))),
                                 policy.attribute(Domain.grid((2, 2)))], ids=["grid", "dp", "attribute"])
def test_a_strategy_with_a_non_finite_entry_is_refused_not_charged_zero(pol, bad):
    """edge_sensitivity swallowed NaN (max(0.0, nan) is 0.0), so Δ = 0 and the lattice sampler added no noise."""
    A = np.eye(4)
    A[0, 0] = bad
    with pytest.raises(InvalidParameterError, match="finite"):
        pol.sensitivity(Matrix(A))
    with pytest.raises(InvalidParameterError, match="finite"):
        pol.sensitivity(A)
