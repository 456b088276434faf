"""The float-porosity benchmark's reimplementation of NumPy's Laplace draw and its exact distinguisher.

benchmarks/float_porosity.py measures how often one release of ``c + rng.laplace(0, b)`` rules out c + 1
(Mironov 2012). Its figures rest on two things tested here: ``numpy_laplace`` is ``rng.laplace`` bit for bit, and
``possible`` agrees with a closed form where one exists.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.float_porosity import check_bit_identical, grid, numpy_laplace, possible, releases


@pytest.mark.parametrize("scale", [2.0, 10.0, 0.37])
@pytest.mark.parametrize("seed", [0, 1, 20261127])
def test_reimplementation_is_numpy_bit_for_bit(seed, scale):
    # random_laplace reads next_double, the stream random() returns: same seed, same uniforms, same bits
    assert check_bit_identical(seed, scale, 10_000) == 10_000


def test_branches_and_ends():
    assert numpy_laplace(2**52, 2.0) == 0.0  # U = 1/2: 2 - U - U = 1
    assert numpy_laplace(1, 1.0) == math.log(2.0**-52)  # the smallest uniform, 2^-53
    # the largest uniform 1 - 2^-53: 2.0 - U rounds to 1.0 (a tie, to even), and 1.0 - U = 2^-53
    assert numpy_laplace(2**53 - 1, 1.0) == -math.log(2.0**-53)


def test_true_count_always_possible():
    counts = np.random.default_rng(5).integers(0, 40, size=300)
    for answer in ("right", "grid"):
        ys = releases(answer, counts, 2.0, 6)
        assert all(possible(y, c, 2.0, answer) for c, y in zip(counts.tolist(), ys.tolist()))


def test_odd_last_bit_rules_out_the_next_count():
    # c = 0 and y in [-1, -0.5): y's ulp is 2^-53, but fl(1 + n) there is 1 + n exactly with n in [-2, -1.5),
    # a multiple of 2^-52. A release from 0 whose last bit is odd cannot come from 1 (Mironov's porosity)
    ys = releases("right", np.zeros(20_000, dtype=np.int64), 2.0, 8)
    odd = [y for y in ys.tolist() if -1 <= y < -0.5 and (y * 2.0**53) % 2 == 1]
    assert len(odd) > 100
    assert not any(possible(y, 1, 2.0, "right") for y in odd[:200])
    assert all(possible(y, 0, 2.0, "right") for y in odd[:200])


def test_grid_noise_is_on_its_grid():
    n = grid(numpy_laplace(12345678901234, 2.0))
    assert abs(n * (2.0**47 + 13 / 32) - round(n * (2.0**47 + 13 / 32))) < 1e-3
