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


def test_marginal_equals_dense_sums():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 9, size=(3, 4, 5)).astype(float)
    for keep, axes_out in (([0], (1, 2)), ([1, 2], (0,)), ([], (0, 1, 2)), ([0, 1, 2], ())):
        M = workload.marginal((3, 4, 5), keep)
        assert np.allclose(M @ x.reshape(-1), x.sum(axis=axes_out).reshape(-1))
        assert np.allclose(M.dense() @ x.reshape(-1), M @ x.reshape(-1))


def test_marginal_by_attribute_name_and_its_sensitivity():
    from blowfish_nb import Domain, policy

    d = Domain.grid((4, 6), names=["age", "income"])
    M = workload.marginal(d, "age")
    assert M.shape == (4, 24)
    # moving a record along income leaves the age marginal unchanged; along age it moves one count
    cells = np.arange(24).reshape(4, 6)
    along_income = policy.custom(d, np.column_stack([cells[:, :-1].ravel(), cells[:, 1:].ravel()]))
    along_age = policy.custom(d, np.column_stack([cells[:-1, :].ravel(), cells[1:, :].ravel()]))
    assert along_income.sensitivity(M) == 0.0
    assert along_age.sensitivity(M) == 2.0
    assert policy.dp(d).sensitivity(M) == 1.0
    with pytest.raises(InvalidParameterError, match="unknown attribute"):
        workload.marginal(d, "zip")
    with pytest.raises(InvalidParameterError, match="keep"):
        workload.marginal((3, 4), [2])


def test_total_matches_dense():
    T = workload.Total(5)
    u, v = np.array([0, 1, 4]), np.array([3, 1, 0])
    D = T.dense()
    assert np.allclose(T.column_differences(u, v), np.abs(D[:, u] - D[:, v]).sum(axis=0))
    assert np.allclose(T.column_norms(u), np.abs(D[:, u]).sum(axis=0))
    assert np.allclose(T.rmatvec(np.array([2.0])), D.T @ [2.0])


def test_range_builders_are_offered_by_the_workload_module():
    assert workload.all_ranges(3).shape == (6, 3)
    assert workload.random_ranges(10, 4, rng=0).shape == (4, 10)
    assert workload.ranges_2d((3, 3), 4, rng=0).shape == (4, 9)
    with pytest.raises(AttributeError):
        workload.no_such_builder


def test_kron_of_non_binary_factors_differs_exactly_across_several_axes():
    K = workload.kron(workload.haar(4), workload.haar(8))
    D = K.dense()
    rng = np.random.default_rng(1)
    u, v = rng.integers(0, 32, size=200), rng.integers(0, 32, size=200)
    np.testing.assert_allclose(K.column_differences(u, v), np.abs(D[:, u] - D[:, v]).sum(axis=0))


def test_custom_matrix_workload_matches_dense_and_releases():
    from blowfish_nb import Domain, mechanisms, policy

    rng = np.random.default_rng(3)
    A = rng.integers(0, 3, size=(7, 10)).astype(float)
    M = workload.matrix(A)
    u, v = rng.integers(0, 10, size=40), rng.integers(0, 10, size=40)
    np.testing.assert_allclose(M.column_differences(u, v), np.abs(A[:, u] - A[:, v]).sum(axis=0))
    np.testing.assert_allclose(M.column_norms(u), np.abs(A[:, u]).sum(axis=0))
    np.testing.assert_allclose(M @ np.arange(10.0), A @ np.arange(10.0))
    assert policy.line(Domain.grid(10)).sensitivity(M) == max(np.abs(A[:, i] - A[:, i + 1]).sum() for i in range(9))
    out = mechanisms.Laplace().release(np.ones(10), M, policy.dp(Domain.grid(10)), 1e9, rng=0)
    np.testing.assert_allclose(out, A @ np.ones(10), atol=1e-6)
    with pytest.raises(InvalidParameterError, match="finite"):
        workload.matrix([[1.0, np.inf]])
    with pytest.raises(InvalidParameterError, match="2-D"):
        workload.matrix([1.0, 2.0])
