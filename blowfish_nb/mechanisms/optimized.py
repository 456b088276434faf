"""The matrix mechanism on a strategy optimised for the workload under the policy (Blowfish-HDMM).

:func:`blowfish_nb.strategies.optimized.optimize` finds the strategy (one
dense factor per axis, their Kronecker product on grids) and its exact
Δ_A(G); this module measures it. The strategy's entries are real numbers,
so the measurements go through :func:`.noise.lattice_noisy` (rounded from the
exact A x, :mod:`.exact_measure`, to a
public power-of-two grid γ ≈ 2^-12·Δ/m, discrete Laplace in grid units with
the sensitivity raised by the rounding: Δ/γ + m for m measured rows), then
least squares axis by axis. Haney et al. 2015, Thm 4.1 makes it
(ε, G)-Blowfish private with the exact Δ; the expected squared error of a
query w is Var(noise) · w (AᵀA)⁻¹ wᵀ with Var the lattice noise's variance
γ² / (2 sinh²(ε / (2(Δ/γ + m)))) ≈ 2(Δ/ε)².

**The public total** (:mod:`blowfish_nb.strategies.known_total`). Under a
policy with no edge to ⊥ every pair of neighbours differs by one record
*moved* between two cells (x' = x − e_u + e_v), so n = 1ᵀx is the same for
both: releasing it exactly costs nothing, and the output (Ax + noise, n) has
the same privacy loss on every neighbouring pair as Ax + noise alone. With an
edge to ⊥ (a record may appear or vanish) n changes by one between
neighbours and an exact n would be an infinite loss, so a strategy that uses
it is refused under such a policy (:meth:`Optimized.refusal`). That is the
only condition: constrained policies are refused by every mechanism but
Laplace, and any other graph without ⊥ only moves records.

**Bad input** is refused before any data are read (:meth:`Optimized.check_fit`):
an axis whose dense Gram is larger than :data:`~blowfish_nb.strategies.optimized.AXIS_LIMIT`
cells square, a 1-D workload that is not ranges and whose dense Gram WᵀW would
exceed :data:`GRAM_LIMIT` entries, a policy with no edge (nothing to optimise)
and a constrained policy. An optimisation whose templates all fail or lose
falls back to the best fixed strategy (the identity or the prefix sums) and
``info["fallback"]`` says so; the mechanism's repr, which is a release's
``provenance["mechanism"]``, carries it.
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_epsilon
from ..exceptions import InvalidParameterError
from ..policy import Policy
from ..exceptions import PolicyError
from ..operators import DENSE_LIMIT, Matrix, Stack, Workload
from ..ranges import as_ranges
from ..strategies import known_total as total_strategies
from ..strategies.known_total import KnownTotalStrategy
from ..strategies.optimized import (AXIS_LIMIT, TEMPLATES, TOTAL_CELLS, DenseFactor, OptimizedStrategy,
                                    flat_mean_variance, optimize, supports)
from . import noise
from .base import MatrixMechanism, Mechanism, _check_workload, apply_rows
from .factors import Factor
from .kron import apply_grid, lstsq_grid

__all__ = ["Optimized", "DenseLeastSquares", "AUTO", "AUTO_COST", "AUTO_TOTAL_COST", "AUTO_CELLS", "GRAM_LIMIT", "fit_cost",
           "auto_templates"]

#: the optimisation ``mechanism="auto"`` runs (bounded: about a second on a 32×32 grid on an idle core); seeded, so repeatable
AUTO = {"restarts": 1, "max_iter": 100, "rng": 0}


#: "auto" offers ``Optimized()`` when :func:`fit_cost` of the grid is at most this: 2²⁸ ≈ 2.7·10⁸, i.e. one
#: attribute of ≤ 645 cells or a grid of per-axis dense steps up to that sum (64 × 64 is 5.2·10⁵), and its fit
#: tries the flat templates (dense K × K solves) only on grids of K ≤ 645 cells (:func:`auto_templates`), so no
#: dense cubic step of auto's fit, per optimiser step or once, exceeds it. Measured with :data:`AUTO` on 2,000
#: random ranges or boxes (Optimized.fit(W, p, **AUTO) timed once per case, one BLAS thread, shared machine, issue
#: 24 session; ``benchmarks/optimized_cache.py`` times the fits of its cases): 1-D k = 512 fits in 1.1–1.3 s,
#: 64 × 64 in 0.9–2.4 s, 32 × 32 with the flat templates (1024³ ≈ 2³⁰) in 3.7–4.5 s, which is why they are left
#: out there; a fit is paid once per (workload, policy) and remembered, on disk too
#: (:func:`blowfish_nb.analysis.selection.optimized_for`), and only where the SVD bound leaves room for it to win
#: (:func:`blowfish_nb.analysis.selection.fit_can_win`).
AUTO_COST = 2**28
#: ... and the domain has at most this many cells: the exact Δ of the fitted dense strategy is read edge by edge
#: over columns of K entries (64 × 64 measured above; a 200 × 200 grid's 80,000 edges × 40,000 would not be)
AUTO_CELLS = 4096
#: the strategies with the public total (:mod:`~blowfish_nb.strategies.known_total`: dense per-axis steps in
#: Python loops over the queries) compete when Σ nᵢ³ is at most this (1-D ≤ 64 cells, 2-D ≤ 50 × 50; measured
#: 0.4–0.9 s on 1-D 64, 25 × 25 and 32 × 32 with :data:`AUTO`; 3.9 s at 1-D 128, so not there)
AUTO_TOTAL_COST = 2**18
#: the most entries of a dense Gram WᵀW formed for a 1-D workload that is not a list of ranges (k ≤ DENSE_LIMIT
#: and q·k ≤ this; as :func:`blowfish_nb.strategies.optimized._gram` reads it)
GRAM_LIMIT = 4 * 10**7


def fit_cost(shape) -> int:
    """The cost of one objective evaluation of auto's fit on ``shape``: its largest dense cubic step.

    Σᵢ nᵢ³ for the per-axis (Kronecker) templates, which every fit runs at
    each optimiser step. The flat templates (weighted marginals, the winner
    with the total row) solve dense K × K systems over the K cells of a grid;
    auto's fit tries them only where that K³ is within :data:`AUTO_COST`
    too (:func:`auto_templates`), so they never raise the cost: a 32 × 32
    grid costs 2 · 32³ (its flat K³ = 2³⁰ is not paid), a 1-D domain k³.

    Examples
    --------
    >>> fit_cost((512,)) == 512**3, fit_cost((64, 64)) == 2 * 64**3, fit_cost((32, 32)) == 2 * 32**3
    (True, True, True)
    """
    return sum(int(n) ** 3 for n in shape)


def auto_templates(shape) -> tuple:
    """The templates auto's fit tries on ``shape``: all of them, but the flat ones only where K³ ≤ AUTO_COST.

    Examples
    --------
    >>> "total" in auto_templates((25, 25)), "total" in auto_templates((32, 32)), "p-identity" in auto_templates((32, 32))
    (True, False, True)
    """
    K = math.prod(int(n) for n in shape)
    return tuple(t for t in TEMPLATES if t not in FLAT_TEMPLATES or len(shape) == 1 or K**3 <= AUTO_COST)


#: the templates that solve dense systems over all K cells of a grid (once per fit, K × K)
FLAT_TEMPLATES = ("marginals", "total")


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
    strategy : OptimizedStrategy or KnownTotalStrategy
        From :func:`blowfish_nb.strategies.optimized.optimize` or
        :func:`blowfish_nb.strategies.known_total.optimize` (or :meth:`fit`).
        The mechanism serves any policy over the strategy's grid: Δ is
        recomputed exactly for the policy it is called with (a strategy that
        uses the public total only policies without ⊥). None: fitted to the
        workload of each call (:meth:`for_workload`).

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
        if strategy is not None and not isinstance(strategy, (OptimizedStrategy, KnownTotalStrategy)):
            raise InvalidParameterError(
                "strategy must be an OptimizedStrategy or a KnownTotalStrategy (from strategies.optimized.optimize "
                f"or strategies.known_total.optimize), got {strategy!r}")
        self.optimized = strategy

    @property
    def uses_total(self) -> bool:
        """Whether the strategy answers with the exact public total (policies without ⊥ only)."""
        return isinstance(self.optimized, KnownTotalStrategy)

    def refusal(self, policy: Policy) -> str | None:
        """Why it cannot protect ``policy``: a constrained policy (as every mechanism but Laplace), a strategy that
        uses the public total under a policy with edges to ⊥, or (to fit one) a policy with no edge."""
        reason = super().refusal(policy)
        if reason is not None:
            return reason
        if self.uses_total and policy.has_bottom:
            return (f"this Optimized strategy releases the total n exactly, which is public only when no edge goes "
                    f"to ⊥ (neighbours then move a record and keep n); {policy.summary()} has edges to ⊥")
        if self.optimized is None and policy.protects_nothing:
            return (f"nothing to optimise: {policy.summary()} has no edge, so every strategy has Δ = 0 "
                    "(Optimized needs a policy with at least 1 edge)")
        return None

    def offered(self, policy: Policy) -> bool:
        """"auto" offers it when the fit's cost :func:`fit_cost` is at most :data:`AUTO_COST` on at most
        :data:`AUTO_CELLS` cells (any policy it supports; the workload is checked when a choice is made)."""
        shape = policy.domain.shape
        return super().offered(policy) and fit_cost(shape) <= AUTO_COST and math.prod(shape) <= AUTO_CELLS

    def check_fit(self, workload: Workload, policy: Policy) -> None:
        """Refuse, before any data are read, what the optimiser cannot fit (the limit and the value named).

        Raises
        ------
        PolicyError
            A constrained policy, or a policy with no edge.
        InvalidParameterError
            An axis above :data:`~blowfish_nb.strategies.optimized.AXIS_LIMIT` cells (a dense n × n Gram per
            axis per step), a 1-D workload whose dense Gram is above :data:`GRAM_LIMIT` entries, or another
            workload the optimiser cannot read (:func:`~blowfish_nb.strategies.optimized.supports`).

        Examples
        --------
        >>> from blowfish_nb import Domain, policy, workload
        >>> Optimized().check_fit(workload.prefix(8), policy.line(Domain.grid(8))) is None
        True
        """
        self.require(policy)
        _check_workload(workload, policy.domain.size)
        shape = tuple(policy.domain.shape)
        for i, n in enumerate(shape):
            if n > AXIS_LIMIT:
                raise InvalidParameterError(
                    f"axis {i} has {n} cells: the optimiser inverts a dense {n}×{n} Gram per step, and the limit "
                    f"is AXIS_LIMIT = {AXIS_LIMIT} cells per axis")
        if len(shape) == 1:
            parts = workload.parts if isinstance(workload, Stack) else [workload]
            for part in parts:
                if as_ranges(part) is None and not isinstance(part, Matrix) and (
                        part.shape[1] > DENSE_LIMIT or part.shape[0] * part.shape[1] > GRAM_LIMIT):
                    raise InvalidParameterError(
                        f"the dense Gram of a {type(part).__name__} workload of shape {part.shape} is too large: "
                        f"the limit is {DENSE_LIMIT} columns and GRAM_LIMIT = {GRAM_LIMIT:,} entries (use ranges)")
        reason = supports(workload, policy)
        if reason is not None:
            raise InvalidParameterError(f"cannot optimise a strategy here: {reason}")

    def for_workload(self, workload: Workload, policy: Policy) -> "Optimized":
        """This mechanism, or (without a strategy yet) one on a strategy optimised now with :data:`AUTO`."""
        if self.optimized is not None:
            return self
        return Optimized.fit(workload, policy, known_total=None, templates=auto_templates(policy.domain.shape), **AUTO)

    @classmethod
    def fit(cls, workload: Workload, policy: Policy, *, known_total: bool | None = False,
            **options) -> "Optimized":
        """The mechanism on a strategy optimised now for (workload, policy); refused inputs before any data.

        Parameters
        ----------
        workload, policy
            What to optimise for (checked by :meth:`check_fit`).
        known_total : None or bool
            Also fit the strategy that answers with the exact public total
            (:func:`blowfish_nb.strategies.known_total.optimize`) and keep it
            when its exact expected error is lower. None (what :meth:`for_workload`
            and ``mechanism="auto"`` use): when the policy has no edge to ⊥, the
            workload is ranges or boxes and Σ nᵢ³ ≤ :data:`AUTO_TOTAL_COST`;
            True: always (refused under a policy with ⊥ or another workload);
            False (default): never, so the strategy may serve any policy on its grid.
        **options
            ``restarts``, ``max_iter``, ``rows``, ``rng`` (both optimisers) and
            ``templates`` (:func:`~blowfish_nb.strategies.optimized.optimize`'s only).
        """
        cls().check_fit(workload, policy)
        if known_total not in (None, True, False):
            raise InvalidParameterError(f"known_total must be None, True or False, got {known_total!r}")
        plain = cls(optimize(workload, policy, **options))
        shape = tuple(policy.domain.shape)
        if known_total is True and policy.has_bottom:
            raise PolicyError(f"known_total=True: {policy.summary()} has edges to ⊥, so the total is not public")
        applies = not policy.has_bottom and _total_workload(workload, shape)
        if known_total is True and not applies:
            raise InvalidParameterError(
                f"known_total=True needs ranges, boxes or Kronecker products of ranges, got {type(workload).__name__}")
        if not (known_total is True or (known_total is None and applies
                                        and sum(n**3 for n in shape) <= AUTO_TOTAL_COST)):
            return plain
        kw = {k: v for k, v in options.items() if k in ("restarts", "max_iter", "rows", "rng")}
        total = cls(total_strategies.optimize(workload, policy, **kw))
        errors = {"optimized": plain.expected_error(workload, policy, 1.0),
                  "known total": total.expected_error(workload, policy, 1.0)}
        best = total if errors["known total"] < errors["optimized"] else plain
        if best is total:
            best.optimized.info.update(template="known total", compared=errors)
        else:
            best.optimized.info["compared"] = errors
        return best

    # -- without a strategy: fitted to the workload of the call ------------------------------
    def release(self, x, workload, policy, epsilon, rng=None):
        return Mechanism.release(self.for_workload(workload, policy), x, workload, policy, epsilon, rng)

    def sample(self, x, workload, policy, epsilon, size, rng=None):
        return Mechanism.sample(self.for_workload(workload, policy), x, workload, policy, epsilon, size, rng)

    def _release(self, x, workload, policy, epsilon, rng):
        return workload @ self.estimate(x, policy, epsilon, rng)

    # -- the strategy ----------------------------------------------------------------------
    def _sizes(self, policy: Policy):
        if self.uses_total:
            self.require(policy)  # the exact total under a policy with ⊥: never quoted, never measured
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
        """What is measured (with the public total as one more row of Δ 0 when the strategy uses it)."""
        self._sizes(policy)
        return self.optimized.operator

    def query_variances(self, workload: Workload, policy: Policy) -> np.ndarray:
        """w (AᵀA)⁻¹ wᵀ; one flat factor on a grid (the weighted marginals) by dense least squares; with the
        public total, the constrained least squares' w N wᵀ − (w N 1)² / (1ᵀ N 1) (N = (AᵀA)⁻¹)."""
        if self._flat():
            return self._dense_variances(workload, policy, self.measured(policy))
        v = super().query_variances(workload, policy)
        if self.uses_total:
            n1 = self._n1()
            v = v - np.asarray(workload @ n1, dtype=float) ** 2 / n1.sum()
        return v

    def answer_variances(self, workload: Workload, policy: Policy, epsilon: float) -> np.ndarray | None:
        """Each range's exact error variance at ``epsilon``: the lattice noise's variance · w (AᵀA)⁻¹ wᵀ (None for a
        workload that is not ranges, or without a strategy).

        A range's error is w A⁺ η, a weighted sum of every measurement's noise (the p-identity's k + p rows):
        the many-term sums :mod:`blowfish_nb.accuracy` starts its Monte Carlo from with a Gaussian guess instead of
        a round of draws at ε = 1 (issue 28: one round of the cold dp range quote). The ε returned is still one a
        round of draws certified.

        Examples
        --------
        >>> from blowfish_nb import Domain, policy
        >>> from blowfish_nb.ranges import Ranges
        >>> W, g = Ranges(16, [0, 3, 5], [9, 12, 5]), policy.dp(Domain.grid(16))
        >>> m = Optimized.fit(W, g, restarts=1, max_iter=30)
        >>> v = m.answer_variances(W, g, 0.5)
        >>> v.shape, bool(np.isclose(v.mean(), m.expected_error(W, g, 0.5)))
        ((3,), True)
        """
        if self.optimized is None or as_ranges(workload) is None:
            return None
        epsilon = check_epsilon(epsilon)
        _check_workload(workload, policy.domain.size)
        return self.noise_variance(policy, epsilon) * np.asarray(self.query_variances(workload, policy), dtype=float)

    def _n1(self) -> np.ndarray:
        """N 1 = (A₁ᵀA₁)⁻¹1 ⊗ … ⊗ (A_dᵀA_d)⁻¹1 (C order)."""
        out = np.ones(1)
        for f in self.optimized.factors:
            out = np.kron(out, f.inverse_gram.sum(axis=1))
        return out

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
        if self.uses_total:  # the total exact (public: no edge to ⊥, checked by _sizes), the rest with noise
            x = np.asarray(x, dtype=float)
            y = self._measure(self.optimized.kron, x, policy, delta, epsilon, m, rng)
            return self.optimized.estimate(y, float(x.sum()))
        y = self._measure(A, np.asarray(x, dtype=float), policy, delta, epsilon, m, rng)
        return lstsq_grid(self.factor, ops, y.reshape(tuple(op.shape[0] for op in ops))).reshape(-1)

    @staticmethod
    def _measure(A, x, policy, delta, epsilon, m, rng) -> np.ndarray:
        """A x through the lattice sampler; at Δ = 0 (no noise) from the policy-invariant class sums instead
        (:func:`.noise.invariant_values`: fl(A x) itself may differ in its last bit between neighbours)."""
        if delta == 0:
            return noise.invariant_values(A, x, policy, "Optimized")
        return noise.lattice_noisy(noise.product(A, x), delta, epsilon, m, rng)  # rounded from the exact A x

    def _sample(self, x, workload, policy, epsilon, size, rng) -> np.ndarray:
        """Vectorised releases: answers = W A⁺(γ·round(Ax/γ) + γ·η) (A x exact), η discrete Laplace in grid units (at Δ = 0,
        A x from :func:`.noise.invariant_values`, no noise)."""
        shape, _ = self._sizes(policy)
        ops = self.measured(policy)
        A = self.optimized.kron if self.uses_total else self.optimized.operator
        delta, gamma, m = self._lattice(policy, epsilon)
        if delta == 0:
            values = noise.invariant_values(A, np.asarray(x, dtype=float), policy, "Optimized")
            rounded, eta = values, np.zeros((size, values.size))
        else:  # the lattice sampler's draws, rounded from the exact A x (attack 36b), refused on the noisy output only
            noise.check_scale((delta / gamma + m) / epsilon * gamma, value=epsilon)
            rounded = noise.lattice_draws(noise.product(A, np.asarray(x, dtype=float)), delta, epsilon, m, rng, size)
            eta = 0.0
        Y = (rounded + eta).reshape((size,) + tuple(op.shape[0] for op in ops))
        est = lstsq_grid(self.factor, ops, Y).reshape(size, -1)
        if self.uses_total:  # the least squares constrained to the exact total, draw by draw
            n1 = self._n1()
            est = est + np.outer(float(np.sum(x)) - est.sum(axis=1), n1 / n1.sum())
        return _answers(workload, est, shape)

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
        if self.uses_total:
            extra += ", total=exact"
        if "fallback" in s.info:  # the release's provenance (repr of its mechanism) says so
            extra += f", fallback={s.info['fallback']!r}"
        return f"Optimized(shape={tuple(s.shape)}, rows={tuple(f.shape[0] for f in s.factors)}{extra})"


def _total_workload(workload: Workload, shape) -> bool:
    """Whether the known-total optimiser reads ``workload`` (ranges, boxes, Kronecker products of ranges)."""
    from ..strategies.optimized import _terms  # noqa: PLC0415  (the one reader of workloads into axis ranges)

    try:
        return all(t.gram is None for t in _terms(workload, shape))
    except InvalidParameterError:
        return False


def _answers(workload: Workload, est: np.ndarray, shape: tuple) -> np.ndarray:
    """``workload`` applied to every estimated histogram (row of ``est``), vectorised over the draws.

    A Stack part by part (weighted marginals' workloads stack marginals and boxes), each part by prefix sums
    (1-D) or axis by axis on the grid, so a flat factor's draws never go through the workload one row at a time.
    """
    if isinstance(workload, Stack):
        return np.concatenate([w * _answers(p, est, shape) for p, w in zip(workload.parts, workload.weights)],
                              axis=1)
    return apply_rows(workload, est) if len(shape) == 1 else apply_grid(workload, est, shape)
