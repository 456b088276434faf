"""Every measurement strategy (blowfish_nb.strategies) agrees with its dense form, and with the tree it describes."""

import numpy as np
import pytest

from blowfish_nb import InvalidParameterError, mechanisms, strategies, workload
from blowfish_nb.strategies import BlockTrees, Haar, Tree
from tests.test_operators import assert_matches_dense


@pytest.mark.parametrize("k, b", [(1, 2), (2, 2), (7, 2), (16, 2), (16, 4), (27, 3), (10, 3), (20, 8)])
def test_tree_matches_dense(k, b):
    assert_matches_dense(Tree(k, b), np.random.default_rng(100 * k + b))


@pytest.mark.parametrize("k", [1, 2, 8, 32])
def test_haar_matches_dense(k):
    assert_matches_dense(Haar(k), np.random.default_rng(k))


@pytest.mark.parametrize("k, theta, b", [(6, 3, 2), (10, 4, 3), (7, 7, 2), (5, 1, 2), (13, 5, 4)])
def test_block_trees_match_dense(k, theta, b):
    assert_matches_dense(BlockTrees(k, theta, b), np.random.default_rng(k * theta * b))


@pytest.mark.parametrize("k, b", [(9, 3), (16, 2), (11, 2)])
def test_tree_rows_are_the_nodes_of_the_b_ary_tree(k, b):
    """Row r of level l counts cells b^l·j .. b^l·(j+1) − 1: the definition, written out."""
    T = Tree(k, b)
    expected = []
    for level in range(T.levels):
        width = b**level
        for j in range(-(-k // width)):
            row = np.zeros(k)
            row[j * width : (j + 1) * width] = 1.0
            expected.append(row)
    np.testing.assert_array_equal(T.dense(), np.array(expected))
    assert T.level_sizes[-1] == 1


def test_haar_rows_are_orthogonal_and_its_solve_is_the_inverse():
    A = Haar(16).dense()
    G = A @ A.T
    np.testing.assert_allclose(G, np.diag(np.diag(G)))
    np.testing.assert_allclose(np.diag(G), Haar(16).row_norms_sq())


def test_block_trees_are_block_diagonal():
    B = BlockTrees(10, 4, 2)
    D = B.dense()
    tree = Tree(4, 2).dense()
    rows = tree.shape[0]
    for block in range(3):
        cols = slice(4 * block, min(4 * block + 4, 10))
        width = cols.stop - cols.start
        np.testing.assert_array_equal(D[rows * block : rows * (block + 1), cols], tree[:, :width])
        outside = np.delete(D[rows * block : rows * (block + 1)], np.arange(cols.start, cols.stop), axis=1)
        assert not outside.any()


def test_haar_refuses_sizes_that_are_not_powers_of_two():
    with pytest.raises(InvalidParameterError, match="power-of-two"):
        Haar(12)


def test_the_tree_strategy_does_not_share_a_name_with_a_mechanism():
    assert not set(strategies.__all__) & set(mechanisms.__all__)
    assert isinstance(workload.hierarchical(12, 3), Tree)
    assert isinstance(workload.haar(8), Haar)
