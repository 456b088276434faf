"""A dense factor with a non-finite entry is refused at once (LAPACK's SVD did not return on inf)."""

import numpy as np
import pytest

from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.strategies.optimized import DenseFactor


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_factor_refused(bad):
    X = np.eye(3)
    X[1, 2] = bad
    with pytest.raises(InvalidParameterError, match="X: a factor's entries must be finite"):
        DenseFactor(X)


def test_finite_factor_still_built():
    F = DenseFactor(np.array([[1.0, 0.0], [1.0, 1.0]]))
    assert np.allclose(F.pinv @ F.X, np.eye(2))
