"""The builders users call (blowfish_nb.workload): argument checks, marginals, ranges, custom matrices.

The operators they return are checked against their dense forms in
test_operators.py and test_strategies.py.
"""

import numpy as np
import pytest

from blowfish_nb import InvalidParameterError, workload


@pytest.mark.parametrize("make", [workload.identity, workload.prefix, workload.hierarchical, workload.haar])
@pytest.mark.parametrize("k", [0, -3, 2.5, True, "8"])
def test_bad_sizes_are_refused(make, k):
    with pytest.raises(InvalidParameterError, match="k must be a positive integer"):
        make(k)


@pytest.mark.parametrize("branching", [1, 0, 2.0, True, "2"])
def test_bad_branching_is_refused(branching):
    with pytest.raises(InvalidParameterError, match="branching"):
        workload.hierarchical(8, branching)


def test_builders_return_the_structured_operators():
    from blowfish_nb import operators, strategies

    assert isinstance(workload.hierarchical(9, 3), strategies.Tree) and workload.hierarchical(9, 3).shape == (13, 9)
    assert isinstance(workload.kron(workload.prefix(2), workload.identity(3)), operators.Kron)
    with pytest.raises(InvalidParameterError, match="kron needs"):
        workload.kron(np.eye(2))


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


def test_range_builders_are_offered_by_the_workload_module():
    assert workload.all_ranges(3).shape == (6, 3)
    assert workload.random_ranges(10, 4, rng=0).shape == (4, 10)
    assert workload.ranges_2d((3, 3), 4, rng=0).shape == (4, 9)
    with pytest.raises(AttributeError):
        workload.no_such_builder


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
