"""Every structured operator agrees with its dense form."""

import numpy as np
import pytest

from blowfish_nb import InvalidParameterError, workload


@pytest.mark.parametrize("make", [workload.identity, workload.prefix])
@pytest.mark.parametrize("k", [1, 2, 7, 33])
def test_operator_matches_dense(make, k):
    rng = np.random.default_rng(k)
    W = make(k)
    M = W.dense()
    x, y = rng.normal(size=k), rng.normal(size=k)
    np.testing.assert_allclose(W @ x, M @ x)
    np.testing.assert_allclose(W.rmatvec(y), M.T @ y)
    np.testing.assert_allclose(W.solve(M @ x), x, atol=1e-9)
    u, v = rng.integers(0, k, size=50), rng.integers(0, k, size=50)
    np.testing.assert_allclose(W.column_differences(u, v), np.abs(M[:, u] - M[:, v]).sum(axis=0))
    np.testing.assert_allclose(W.column_norms(u), np.abs(M[:, u]).sum(axis=0))


@pytest.mark.parametrize("k", [0, -3, 2.5, True, "8"])
def test_bad_sizes_are_refused(k):
    with pytest.raises(InvalidParameterError, match="k must be a positive integer"):
        workload.prefix(k)
