"""The common interface of mechanisms, and the matrix mechanism under any policy.

Haney et al. 2015, Thm 4.1: for a data-independent strategy A, releasing
A x + Lap(Δ_A(G)/ε) and reconstructing W x̂ by least squares is
(ε, G)-Blowfish private, with expected squared error 2 (Δ_A(G)/ε)² w (AᵀA)⁻¹ wᵀ
for each query w. Δ_A(G) comes from the policy (edge differences), so one
strategy serves every policy: no transform and no spanning tree is needed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from .._validation import as_generator, check_epsilon
from ..exceptions import InvalidParameterError
from ..policy import Policy
from ..ranges import Boxes, as_ranges
from ..workload import DENSE_LIMIT, Kron, Workload
from .factors import Factor

__all__ = ["Mechanism", "MatrixMechanism", "ColumnSlice"]


class Mechanism(ABC):
    """A mechanism: parameters in the constructor, data and privacy inputs in the call."""

    name: str = "mechanism"

    @abstractmethod
    def release(self, x, workload: Workload, policy: Policy, epsilon: float, rng=None) -> np.ndarray:
        """Noisy answers to ``workload @ x`` under (ε, policy)-Blowfish privacy."""

    def privacy(self, policy: Policy, epsilon: float) -> str:
        """The guarantee in words."""
        epsilon = check_epsilon(epsilon)
        return f"({epsilon:g}, G)-Blowfish private for G = {policy.summary()}"


class MatrixMechanism(Mechanism):
    """Measure a strategy (a Kronecker product of 1-D factors on grids) with Laplace noise, then least squares."""

    factor: Factor
    #: answers are a fixed linear map of the noise (no non-linear post-processing)
    linear: bool = True

    # -- the strategy ------------------------------------------------------------------
    def _sizes(self, policy: Policy) -> tuple[tuple[int, ...], tuple[int, ...]]:
        shape = policy.domain.shape
        return shape, tuple(self.factor.padded(k) for k in shape)

    def measured(self, policy: Policy) -> list[Workload]:
        """The per-axis strategies over the padded sizes."""
        return [self.factor.operator(K) for K in self._sizes(policy)[1]]

    def strategy(self, policy: Policy) -> Workload:
        """The strategy restricted to the real cells (what the sensitivity is computed on)."""
        shape, padded = self._sizes(policy)
        parts = [ColumnSlice(self.factor.operator(K), k) if K != k else self.factor.operator(K)
                 for k, K in zip(shape, padded)]
        return parts[0] if len(parts) == 1 else Kron(parts)

    def sensitivity(self, policy: Policy) -> float:
        """Δ_A(G) of this mechanism's strategy under ``policy``."""
        return policy.sensitivity(self.strategy(policy))

    def noise_scale(self, policy: Policy, epsilon: float) -> float:
        """Laplace scale b = Δ_A(G)/ε."""
        return self.sensitivity(policy) / epsilon

    # -- release -----------------------------------------------------------------------
    def release(self, x, workload, policy, epsilon, rng=None) -> np.ndarray:
        epsilon = check_epsilon(epsilon)
        rng = as_generator(rng)
        x = _check_histogram(x, policy.domain.size)
        _check_workload(workload, x.size)
        return np.asarray(workload @ self.estimate(x, policy, epsilon, rng), dtype=float)

    def estimate(self, x: np.ndarray, policy: Policy, epsilon: float, rng: np.random.Generator) -> np.ndarray:
        """The least-squares histogram estimate x̂ (post-processing of the noisy measurements)."""
        shape, padded = self._sizes(policy)
        ops = self.measured(policy)
        X = np.zeros(padded)
        X[tuple(slice(0, k) for k in shape)] = x.reshape(shape)
        A = ops[0] if len(ops) == 1 else Kron(ops)
        scale = self.noise_scale(policy, epsilon)
        y = A @ X.reshape(-1)
        if scale > 0:
            y = y + rng.laplace(0.0, scale, size=y.size)
        y = self._postprocess(y, len(ops))
        X = self._solve_all(ops, y).reshape(padded)
        return X[tuple(slice(0, k) for k in shape)].reshape(-1)

    def sample(self, x, workload, policy, epsilon, size: int, rng=None) -> np.ndarray:
        """``size`` independent releases as rows of an array (vectorised for linear mechanisms).

        For small domains (tests, audits, Monte-Carlo): the least-squares map is
        formed densely once, then every release is one row of a matrix product.
        """
        epsilon = check_epsilon(epsilon)
        rng = as_generator(rng)
        x = _check_histogram(x, policy.domain.size)
        if not self.linear:
            return np.stack([self.release(x, workload, policy, epsilon, rng=rng) for _ in range(size)])
        shape, padded = self._sizes(policy)
        ops = self.measured(policy)
        A = ops[0] if len(ops) == 1 else Kron(ops)
        if A.shape[0] * A.shape[1] > DENSE_LIMIT**2 // 16:
            raise InvalidParameterError(f"sample() is for small domains; {padded} cells is too many")
        X = np.zeros(padded)
        X[tuple(slice(0, k) for k in shape)] = x.reshape(shape)
        keep = np.zeros(padded, dtype=bool)
        keep[tuple(slice(0, k) for k in shape)] = True
        solve = np.stack([self._solve_all(ops, e) for e in np.eye(A.shape[0])], axis=1)[keep.reshape(-1)]
        W = workload.dense() if hasattr(workload, "dense") else np.asarray(workload)
        M = W @ solve  # answers = M y
        noise = rng.laplace(0.0, self.noise_scale(policy, epsilon), size=(size, A.shape[0]))
        return (M @ (A @ X.reshape(-1)))[None, :] + noise @ M.T

    def _solve_all(self, ops, y):
        Y = y.reshape(tuple(op.shape[0] for op in ops))
        for axis, op in enumerate(ops):
            Y = np.apply_along_axis(lambda v: self._solve_axis(op, v), axis, Y)
        return Y.reshape(-1)

    def _postprocess(self, y: np.ndarray, ndim: int) -> np.ndarray:
        """Hook for constraints on the noisy measurements (identity by default)."""
        return y

    def _solve_axis(self, op: Workload, y: np.ndarray) -> np.ndarray:
        return self.factor.lstsq(op, y)

    # -- error -------------------------------------------------------------------------
    def query_variances(self, workload: Workload, policy: Policy) -> np.ndarray:
        """w (AᵀA)⁻¹ wᵀ for every query (ranges and boxes in closed form; dense only when tiny)."""
        ops = self.measured(policy)
        if len(ops) == 1 and (r := as_ranges(workload)) is not None:
            return self.factor.range_variances(ops[0], r.lo, r.hi)
        if isinstance(workload, Boxes) and len(ops) == workload.lo.shape[1]:
            out = np.ones(workload.shape[0])
            for axis, op in enumerate(ops):
                out *= self.factor.range_variances(op, workload.lo[:, axis], workload.hi[:, axis])
            return out
        return self._dense_variances(workload, policy, ops)

    def _dense_variances(self, workload, policy, ops) -> np.ndarray:
        shape, padded = self._sizes(policy)
        if int(np.prod(padded)) > DENSE_LIMIT:
            raise InvalidParameterError(
                f"no closed-form error for {type(workload).__name__} with {self.name} on {padded} cells; "
                "use ranges/boxes workloads or a domain of at most 4096 cells"
            )
        A = ops[0].dense() if len(ops) == 1 else Kron(ops).dense()
        cells = np.zeros(padded, dtype=bool)
        cells[tuple(slice(0, k) for k in shape)] = True
        W = np.zeros((workload.shape[0], cells.size))
        W[:, cells.reshape(-1)] = workload.dense() if hasattr(workload, "dense") else np.asarray(workload)
        Z = np.linalg.lstsq(A.T, W.T, rcond=None)[0]  # rows of W A⁺ as columns
        return np.sum(Z**2, axis=0)

    def expected_error(self, workload: Workload, policy: Policy, epsilon: float) -> float:
        """Expected squared error per query: 2 (Δ/ε)² · mean of w (AᵀA)⁻¹ wᵀ."""
        epsilon = check_epsilon(epsilon)
        _check_workload(workload, policy.domain.size)
        scale = self.noise_scale(policy, epsilon)
        return float(2.0 * scale**2 * np.mean(self.query_variances(workload, policy)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ColumnSlice(Workload):
    """The first k columns of a strategy over K ≥ k cells (the real cells of a padded domain)."""

    def __init__(self, base: Workload, k: int):
        self.base = base
        self.binary = getattr(base, "binary", False)
        self.diameter_at_extremes = getattr(base, "diameter_at_extremes", False)
        super().__init__((base.shape[0], k))

    def _matvec(self, x):
        full = np.zeros(self.base.shape[1])
        full[: self.shape[1]] = np.asarray(x, dtype=float).reshape(-1)
        return self.base.matvec(full)

    def _rmatvec(self, y):
        return self.base.rmatvec(y)[: self.shape[1]]

    def column_differences(self, u, v):
        return self.base.column_differences(u, v)

    def column_norms(self, u):
        return self.base.column_norms(u)

    def column_overlaps(self, u, v):
        return self.base.column_overlaps(u, v)

    def dense(self):
        return self.base.dense()[:, : self.shape[1]]


def _check_histogram(x, k: int) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.shape != (k,):
        raise InvalidParameterError(f"x must be a histogram of {k} cells, got shape {x.shape}")
    if not np.all(np.isfinite(x)) or (x < 0).any():
        raise InvalidParameterError("x must hold finite, non-negative counts")
    return x


def _check_workload(workload, k: int) -> None:
    if not isinstance(workload, Workload):
        raise InvalidParameterError(f"workload must be a blowfish_nb Workload, got {type(workload).__name__}")
    if workload.shape[1] != k:
        raise InvalidParameterError(f"workload must have {k} columns, got shape {workload.shape}")
