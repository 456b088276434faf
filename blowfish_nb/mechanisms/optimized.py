"""The matrix mechanism on a strategy optimised for the workload under the policy (Blowfish-HDMM).

:func:`blowfish_nb.strategies.optimized.optimize` finds the strategy (one
dense factor per axis, their Kronecker product on grids) and its exact
Δ_A(G); this module measures it. The strategy's entries are real numbers,
so the measurements go through :func:`.noise.lattice_noisy` (rounded to a
public power-of-two grid γ ≈ 2^-12·Δ/m, discrete Laplace in grid units with
the sensitivity raised by the rounding: Δ/γ + m for m measured rows), then
least squares axis by axis. Haney et al. 2015, Thm 4.1 makes it
(ε, G)-Blowfish private with the exact Δ; the expected squared error of a
query w is Var(noise) · w (AᵀA)⁻¹ wᵀ with Var the lattice noise's variance
γ² / (2 sinh²(ε / (2(Δ/γ + m)))) ≈ 2(Δ/ε)².
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_epsilon
from ..exceptions import InvalidParameterError
from ..policy import Policy
from ..strategies.optimized import DenseFactor, OptimizedStrategy, flat_mean_variance, optimize
from ..operators import Workload
from . import noise
from .base import MatrixMechanism, Mechanism, _check_workload, apply_rows
from .factors import Factor
from .kron import apply_grid, lstsq_grid

__all__ = ["Optimized", "DenseLeastSquares", "AUTO"]

#: the optimisation ``mechanism="auto"`` runs (bounded: about a second on a 32×32 grid on an idle core); seeded, so repeatable
AUTO = {"restarts": 1, "max_iter": 100, "rng": 0}


#: "auto" offers ``Optimized()`` on grids of two or more attributes whose every axis has at most this many cells
#: (its optimisation, bounded by :data:`AUTO`, takes seconds there; on one attribute the fixed strategies are near
#: the bound)
AUTO_AXIS = 32

class DenseLeastSquares(Factor):
    """Least squares and exact variances for :class:`~blowfish_nb.strategies.optimized.DenseFactor` axes."""

    def lstsq(self, A: DenseFactor, y):
        return A.pinv @ np.asarray(y, dtype=float)

    def lstsq_rows(self, A: DenseFactor, Y, overwrite=False):
        return np.asarray(Y, dtype=float) @ A.pinv.T

    def inverse_gram(self, A: DenseFactor):
        return np.array(A.inverse_gram)

    def range_variances(self, A: DenseFactor, lo, hi):
        """w G⁻¹ wᵀ for ranges, from the 2-D prefix sums of G⁻¹ (O(n²) once, O(1) per range)."""
        n = A.shape[1]
        S = np.zeros((n + 1, n + 1))
        S[1:, 1:] = np.cumsum(np.cumsum(A.inverse_gram, axis=0), axis=1)
        lo, h = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64) + 1
        return S[h, h] + S[lo, lo] - 2.0 * S[lo, h]


class Optimized(MatrixMechanism):
    """Measure an optimised strategy with (lattice) discrete Laplace noise of scale Δ_A(G)/ε, then least squares.

    Parameters
    ----------
    strategy : OptimizedStrategy
        From :func:`blowfish_nb.strategies.optimized.optimize` (or :meth:`fit`).
        The mechanism serves any policy over the strategy's grid: Δ is
        recomputed exactly for the policy it is called with.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> g = policy.grid((3, 3))
    >>> W = workload.identity(9)
    >>> m = Optimized.fit(W, g, restarts=1, max_iter=20)
    >>> m.sensitivity(g) == g.sensitivity(m.strategy(g))
    True
    >>> bool(m.expected_error(W, g, 1.0) > 0)
    True
    """

    name = "Optimized"
    auto = ({},)
    auto_rank = 70
    factor = DenseLeastSquares()

    def __init__(self, strategy: OptimizedStrategy | None = None):
        if strategy is not None and not isinstance(strategy, OptimizedStrategy):
            raise InvalidParameterError(
                f"strategy must be an OptimizedStrategy (from strategies.optimized.optimize), got {strategy!r}")
        self.optimized = strategy

    def offered(self, policy: Policy) -> bool:
        """"auto" offers it on grids of two or more attributes of at most :data:`AUTO_AXIS` cells per axis."""
        shape = policy.domain.shape
        return super().offered(policy) and len(shape) > 1 and max(shape) <= AUTO_AXIS

    def for_workload(self, workload: Workload, policy: Policy) -> "Optimized":
        """This mechanism, or (without a strategy yet) one on a strategy optimised now with :data:`AUTO`."""
        return self if self.optimized is not None else Optimized.fit(workload, policy, **AUTO)

    @classmethod
    def fit(cls, workload: Workload, policy: Policy, **options) -> "Optimized":
        """The mechanism on a strategy optimised now for (workload, policy) (``options`` go to ``optimize``)."""
        return cls(optimize(workload, policy, **options))

    # -- without a strategy: fitted to the workload of the call ------------------------------
    def release(self, x, workload, policy, epsilon, rng=None):
        return Mechanism.release(self.for_workload(workload, policy), x, workload, policy, epsilon, rng)

    def sample(self, x, workload, policy, epsilon, size, rng=None):
        return Mechanism.sample(self.for_workload(workload, policy), x, workload, policy, epsilon, size, rng)

    def _release(self, x, workload, policy, epsilon, rng):
        return workload @ self.estimate(x, policy, epsilon, rng)

    # -- the strategy ----------------------------------------------------------------------
    def _sizes(self, policy: Policy):
        if self.optimized is None:
            raise InvalidParameterError(
                "this Optimized mechanism has no strategy yet: its strategy depends on the workload "
                "(use Optimized.fit(workload, policy) or for_workload)")
        shape = tuple(policy.domain.shape)
        if shape != tuple(self.optimized.shape):
            raise InvalidParameterError(
                f"this Optimized strategy measures a grid of shape {self.optimized.shape}; the policy's domain "
                f"has shape {shape}")
        return shape, shape

    def measured(self, policy: Policy) -> list:
        self._sizes(policy)
        return list(self.optimized.factors)

    def strategy(self, policy: Policy) -> Workload:
        self._sizes(policy)
        return self.optimized.operator

    def query_variances(self, workload: Workload, policy: Policy) -> np.ndarray:
        """w (AᵀA)⁻¹ wᵀ; one flat factor on a grid (the weighted marginals) by dense least squares."""
        if self._flat():
            return self._dense_variances(workload, policy, self.measured(policy))
        return super().query_variances(workload, policy)

    # -- noise on real-valued measurements ----------------------------------------------
    def _lattice(self, policy: Policy, epsilon: float) -> tuple[float, float, int]:
        """(Δ, γ, m): the exact sensitivity, the public grid step and the rows one neighbour may change."""
        delta = self.sensitivity(policy)
        m = math.prod(f.shape[0] for f in self.optimized.factors)
        gamma = noise.lattice_step(delta, m)
        return delta, gamma, m

    def noise_variance(self, policy: Policy, epsilon: float) -> float:
        """Variance of each measurement's noise: γ² · Var(discrete Laplace of scale (Δ/γ + m)/ε)."""
        delta, gamma, m = self._lattice(policy, epsilon)
        if delta == 0:
            return 0.0
        return float(gamma**2 * noise.variance((delta / gamma + m) / epsilon))

    def estimate(self, x, policy, epsilon, rng):
        shape, _ = self._sizes(policy)
        ops = self.measured(policy)
        A = self.optimized.operator
        delta, _, m = self._lattice(policy, epsilon)
        y = noise.lattice_noisy(A @ np.asarray(x, dtype=float), delta, epsilon, m, rng)
        return lstsq_grid(self.factor, ops, y.reshape(tuple(op.shape[0] for op in ops))).reshape(-1)

    def _sample(self, x, workload, policy, epsilon, size, rng) -> np.ndarray:
        """Vectorised releases: answers = W A⁺(γ·round(Ax/γ) + γ·η), η discrete Laplace in grid units."""
        shape, _ = self._sizes(policy)
        ops = self.measured(policy)
        A = self.optimized.operator
        delta, gamma, m = self._lattice(policy, epsilon)
        values = A @ np.asarray(x, dtype=float)
        if delta == 0:
            rounded, eta = values, np.zeros((size, values.size))
        else:
            scale = (delta / gamma + m) / epsilon
            noise.check_scale(scale * gamma, value=epsilon)
            units = np.round(values / gamma)[None, :] + noise.discrete_laplace(rng, scale, (size, values.size))
            if np.abs(units).max(initial=0.0) >= 2.0**53:  # as lattice_noisy: refused on the noisy output only
                raise InvalidParameterError("the measured values are too large for the lattice sampler's grid")
            rounded, eta = units * gamma, 0.0
        Y = (rounded + eta).reshape((size,) + tuple(op.shape[0] for op in ops))
        est = lstsq_grid(self.factor, ops, Y).reshape(size, -1)
        if len(ops) == 1:
            return apply_rows(workload, est)
        return apply_grid(workload, est, shape)

    def expected_error(self, workload: Workload, policy: Policy, epsilon: float) -> float:
        """Expected squared error per query: the lattice noise's variance · mean of w (AᵀA)⁻¹ wᵀ (exact Δ)."""
        epsilon = check_epsilon(epsilon)
        _check_workload(workload, policy.domain.size)
        if self.optimized is None:
            return self.for_workload(workload, policy).expected_error(workload, policy, epsilon)
        if self._flat():
            self._sizes(policy)
            return float(self.noise_variance(policy, epsilon) * flat_mean_variance(self.optimized, workload))
        return float(self.noise_variance(policy, epsilon) * np.mean(self.query_variances(workload, policy)))

    def _flat(self) -> bool:
        """One dense factor over a whole grid (weighted marginals, or a strategy with the public total)."""
        return self.optimized is not None and len(self.optimized.factors) == 1 and len(self.optimized.shape) > 1

    def __repr__(self) -> str:
        s = self.optimized
        if s is None:
            return "Optimized()"
        extra = f", template={s.info['template']!r}" if "template" in s.info else ""
        if "fallback" in s.info:  # the release's provenance (repr of its mechanism) says so
            extra += f", fallback={s.info['fallback']!r}"
        return f"Optimized(shape={tuple(s.shape)}, rows={tuple(f.shape[0] for f in s.factors)}{extra})"
