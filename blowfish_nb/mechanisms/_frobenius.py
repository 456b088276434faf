"""‖W A⁻¹‖_F² for structured workload/strategy pairs (closed forms; dense only when tiny)."""

from __future__ import annotations

import numpy as np

from ..exceptions import InvalidParameterError
from ..workload import DENSE_LIMIT, Identity, Prefix, Workload

__all__ = ["reconstruction_frobenius_sq"]


def reconstruction_frobenius_sq(workload: Workload, strategy: Workload) -> float:
    """Squared Frobenius norm of W A⁻¹ (A square and invertible).

    Closed forms: A = I gives ‖W‖_F² (k for the histogram, k(k+1)/2 for
    prefix sums); A = prefix sums gives ‖W D‖_F² with D the difference
    operator (2k − 1 for the histogram, k for prefix sums).
    """
    k = strategy.shape[1]
    pair = (type(workload), type(strategy))
    closed = {
        (Identity, Identity): k,
        (Prefix, Identity): k * (k + 1) / 2,
        (Identity, Prefix): 2 * k - 1,
        (Prefix, Prefix): k,
    }
    if pair in closed:
        return float(closed[pair])
    if k > DENSE_LIMIT:
        raise InvalidParameterError(
            f"no closed form for {type(workload).__name__} over {type(strategy).__name__} "
            f"and the domain ({k} cells) is too large for a dense computation"
        )
    WA = np.linalg.solve(strategy.dense().T, workload.dense().T).T
    return float(np.sum(WA**2))
