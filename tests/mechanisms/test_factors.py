"""Least squares and per-query variances of every strategy against dense linear algebra."""

import numpy as np
import pytest

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.mechanisms.factors import block_inverse
from blowfish_nb.ranges import Boxes, Ranges, all_ranges, random_ranges, ranges_2d

MECHS = [mechanisms.Laplace(), mechanisms.Ordered(), mechanisms.Hierarchical(2), mechanisms.Hierarchical(3),
         mechanisms.Hierarchical(4), mechanisms.Privelet()]


def dense_variances(mech, pol, W):
    """w A⁺ A⁺ᵀ wᵀ with A the dense padded strategy (tests only)."""
    shape, padded = mech._sizes(pol)
    ops = mech.measured(pol)
    A = ops[0].dense() if len(ops) == 1 else workload.kron(*ops).dense()
    cells = np.zeros(padded, dtype=bool)
    cells[tuple(slice(0, k) for k in shape)] = True
    Wp = np.zeros((W.shape[0], cells.size))
    Wp[:, cells.reshape(-1)] = W.dense()
    Ap = np.linalg.pinv(A)
    return np.sum((Wp @ Ap) ** 2, axis=1)


@pytest.mark.parametrize("mech", MECHS, ids=repr)
@pytest.mark.parametrize("k", [1, 2, 5, 8, 13, 16, 27])
@pytest.mark.filterwarnings("ignore::blowfish_nb.exceptions.PrivacyLeakWarning")  # k = 1: a line with no edge
def test_range_variances_and_least_squares_match_dense(mech, k):
    pol = policy.line(Domain.grid(k))
    for W in [workload.identity(k), workload.prefix(k), all_ranges(k)]:
        np.testing.assert_allclose(mech.query_variances(W, pol), dense_variances(mech, pol, W), rtol=1e-9, atol=1e-12)
    # with no noise (ε huge), least squares returns the data exactly
    x = np.random.default_rng(k).poisson(4, size=k).astype(float)
    ops = mech.measured(pol)
    A = ops[0].dense()
    rng = np.random.default_rng(0)
    y = A @ np.r_[x, np.zeros(A.shape[1] - k)] + rng.normal(size=A.shape[0])
    np.testing.assert_allclose(mech.factor.lstsq(ops[0], y), np.linalg.lstsq(A, y, rcond=None)[0], atol=1e-9)


@pytest.mark.parametrize("mech", MECHS, ids=repr)
def test_box_variances_factorise_on_grids(mech):
    pol = policy.grid((5, 6), 1)
    W = ranges_2d((5, 6), 40, rng=1)
    np.testing.assert_allclose(mech.query_variances(W, pol), dense_variances(mech, pol, W), rtol=1e-9)


def test_block_inverse_is_an_inverse():
    for b, L in [(2, 4), (3, 3), (4, 2)]:
        K = b**L
        blocks = [(np.arange(K)[:, None] // b**l == np.arange(K)[None, :] // b**l).astype(float) for l in range(L + 1)]
        a = np.arange(1, L + 2, dtype=float)
        c = block_inverse(a, b)
        np.testing.assert_allclose(sum(ai * B for ai, B in zip(a, blocks)) @ sum(ci * B for ci, B in zip(c, blocks)),
                                   np.eye(K), atol=1e-12)


def test_range_workloads_match_their_dense_forms():
    for W in [random_ranges(37, 200, rng=3), all_ranges(9), Ranges(4, [0, 3], [3, 3])]:
        M = W.dense()
        x = np.random.default_rng(1).normal(size=W.shape[1])
        y = np.random.default_rng(2).normal(size=W.shape[0])
        np.testing.assert_allclose(W @ x, M @ x)
        np.testing.assert_allclose(W.rmatvec(y), M.T @ y)
    B = Boxes((3, 4, 5), [[0, 1, 2], [2, 0, 0]], [[1, 3, 4], [2, 3, 0]])
    x = np.random.default_rng(4).normal(size=60)
    y = np.array([1.0, -2.0])
    np.testing.assert_allclose(B @ x, B.dense() @ x)
    np.testing.assert_allclose(B.rmatvec(y), B.dense().T @ y)


@pytest.mark.parametrize("b,K", [(2, 16), (4, 64), (2, 1), (16, 256), (3, 27)])
def test_tree_least_squares_rows_equal_dense_least_squares(b, K):
    from blowfish_nb.mechanisms.factors import TreeFactor
    from blowfish_nb.strategies import Tree as Hierarchical

    f, A = TreeFactor(b), Hierarchical(K, b)
    D = A.dense()
    Y = np.random.default_rng(K).normal(size=(5, D.shape[0]))
    kept = Y.copy()
    expected = np.linalg.lstsq(D, Y.T, rcond=None)[0].T
    np.testing.assert_allclose(f.lstsq_rows(A, Y), expected, atol=1e-9)
    assert np.array_equal(Y, kept)  # the default never writes into the measurements
    np.testing.assert_allclose(f.lstsq_rows(A, Y, overwrite=True), expected, atol=1e-9)


@pytest.mark.parametrize("shape", [(5, 6), (4, 3, 2)])
def test_histogram_and_marginal_variances_factorise_on_grids(shape):
    """Multi-column histograms and marginals use per-axis closed forms (no dense k×k solve on the release path:
    a 20×10 histogram took a minute in choose_mechanism), equal to the dense least squares."""
    from blowfish_nb import workload as wl

    d = Domain.grid(shape)
    pol = policy.dp(d)
    k = int(np.prod(shape))
    for mech in MECHS:
        for W in [wl.identity(k), wl.marginal(shape, [0]), wl.marginal(shape, [len(shape) - 1]),
                  wl.kron(*[wl.prefix(s) for s in shape])]:
            np.testing.assert_allclose(mech.query_variances(W, pol), mech._dense_variances(W, pol, mech.measured(pol)),
                                       rtol=1e-9)
