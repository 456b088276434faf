"""The common interface of mechanisms, and the matrix mechanism under a policy.

Haney et al. 2015, Thm 4.1: for a data-independent strategy A, releasing
A x + Lap(Δ_A(G)/ε) and reconstructing W x̂ by least squares is
(ε, G)-Blowfish private, with expected total squared error
2 (Δ_A(G)/ε)² ‖W A⁻¹‖_F² (for an invertible A).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from .._validation import as_generator, check_epsilon
from ..exceptions import InvalidParameterError
from ..policy import Policy
from ..workload import Workload
from ._frobenius import reconstruction_frobenius_sq

__all__ = ["Mechanism", "MatrixMechanism"]


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
    """Measure an invertible strategy A with Laplace noise scaled to Δ_A(G)/ε, then solve."""

    def strategy(self, k: int) -> Workload:
        """The strategy matrix measured on a k-cell domain."""
        raise NotImplementedError

    def noise_scale(self, policy: Policy, epsilon: float) -> float:
        """Laplace scale b = Δ_A(G)/ε."""
        return policy.sensitivity(self.strategy(policy.domain.size)) / epsilon

    def release(self, x, workload, policy, epsilon, rng=None) -> np.ndarray:
        epsilon = check_epsilon(epsilon)
        rng = as_generator(rng)
        x = _check_histogram(x, policy.domain.size)
        _check_workload(workload, x.size)
        strategy = self.strategy(x.size)
        scale = self.noise_scale(policy, epsilon)
        y = strategy @ x + rng.laplace(0.0, scale, size=strategy.shape[0]) if scale > 0 else strategy @ x
        return np.asarray(workload @ self.reconstruct(strategy, y), dtype=float)

    def reconstruct(self, strategy: Workload, y: np.ndarray) -> np.ndarray:
        """The histogram estimate x̂ from the noisy measurements (post-processing)."""
        return strategy.solve(y)

    def expected_error(self, workload: Workload, policy: Policy, epsilon: float) -> float:
        """Expected squared error per query: 2 (Δ/ε)² ‖W A⁻¹‖_F² / q."""
        epsilon = check_epsilon(epsilon)
        _check_workload(workload, policy.domain.size)
        strategy = self.strategy(policy.domain.size)
        scale = self.noise_scale(policy, epsilon)
        return 2.0 * scale**2 * reconstruction_frobenius_sq(workload, strategy) / workload.shape[0]


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
