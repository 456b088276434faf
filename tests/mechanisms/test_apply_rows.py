"""mechanisms.base.apply_rows: ranges answered for every draw by running sums (issue 28: without np.concatenate).

The answers must be the floats the concatenated form gave, bit for bit (the Monte-Carlo ε of a quote sorts them,
so a changed last bit could move a certified ε), and W x for each row.
"""

import numpy as np
import pytest

from blowfish_nb.mechanisms.base import apply_rows
from blowfish_nb.ranges import Ranges


def _concatenated(lo, hi, X):
    C = np.concatenate([np.zeros((X.shape[0], 1)), np.cumsum(X, axis=1)], axis=1)
    return C[:, hi + 1] - C[:, lo]


@pytest.mark.parametrize("seed, k, q, rows", [(0, 128, 64, 800), (1, 17, 5, 3), (2, 300, 40, 64)])
def test_range_answers_are_the_concatenated_forms_floats(seed, k, q, rows):
    rng = np.random.default_rng(seed)
    lo, hi = np.sort(rng.integers(0, k, size=(2, q)), axis=0)
    lo[0] = 1  # not all prefixes (those take the other branch)
    X = rng.standard_normal((rows, k)) * 10 ** rng.uniform(-3, 6, (rows, 1))
    X[0, :3] = -0.0
    got = apply_rows(Ranges(k, lo, hi), X)
    want = _concatenated(lo, hi, X)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))
    assert np.allclose(got, X @ Ranges(k, lo, hi).dense().T)


def test_integer_rows_keep_their_exact_sums():
    X = np.array([[2**53, 1, 1, 0]], dtype=np.int64)
    got = apply_rows(Ranges(4, [1, 0], [2, 3]), X)
    assert got.tolist() == _concatenated(np.array([1, 0]), np.array([2, 3]), X).tolist()
