"""The common interface of mechanisms, and the matrix mechanism under any policy.

Haney et al. 2015, Thm 4.1: for a data-independent strategy A, releasing
A x + Lap(Δ_A(G)/ε) and reconstructing W x̂ by least squares is
(ε, G)-Blowfish private, with expected squared error 2 (Δ_A(G)/ε)² w (AᵀA)⁻¹ wᵀ
for each query w. Δ_A(G) comes from the policy (edge differences), so one
strategy serves every policy: no transform and no spanning tree is needed.
(The Laplace noise is the discrete law of :mod:`.noise`, variance
1/(2 sinh²(ε/2Δ)) instead of 2(Δ/ε)².)

**The mechanism contract.** :meth:`Mechanism.release` is the one public
door: it validates ε, the rng, the histogram (whole, non-negative counts) and
the workload once, then calls the subclass's ``_release`` with clean inputs.
Every draw of released noise goes through :func:`.noise.noisy` (whole-valued
measurements) or :func:`.noise.lattice_noisy` (real-valued ones); selection
noise that is only compared goes through :func:`.noise.selection_laplace`.
A class declares ``linear`` (answers are the truth plus a fixed linear map
of the noise: what accuracy targets and confidence intervals need) and the
names under which ``mechanism="..."`` finds it (``registry``). **Adding a
mechanism is one file** — a subclass with ``_release``, ``linear``,
``registry`` and, when it has one, ``expected_error`` — **plus its import in
``mechanisms/__init__.py``**; the accessor's name table, the sessions and the
analyst panel pick it up from the registry.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import ClassVar

import numpy as np

from .._validation import as_generator, check_epsilon
from ..exceptions import InvalidParameterError, PolicyError
from ..operators import DENSE_LIMIT, ColumnSlice, Identity, Kron, Workload
from ..policy import Constrained, Policy
from ..ranges import Boxes, as_ranges
from . import noise
from .factors import Factor, IdentityFactor, PrefixFactor, TreeFactor
from .kron import apply_grid, as_boxes, grid_variances, lstsq_grid

# ColumnSlice lives in blowfish_nb.operators; it is offered here too, where mechanisms/__init__ imports it
__all__ = ["Mechanism", "MatrixMechanism", "ColumnSlice", "REGISTRY", "by_name", "auto_candidates", "apply_rows",
           "sensitivities_remembered"]

#: name → (class, constructor arguments), filled by the classes' ``registry`` declarations
REGISTRY: dict[str, tuple[type, dict]] = {}
#: classes that declare instances for ``mechanism="auto"`` (:attr:`Mechanism.auto`), filled as they are defined
AUTO_CLASSES: list[type] = []


def by_name(name: str) -> "Mechanism":
    """A new mechanism from its registered name (``"laplace"``, ``"ordered"``, ``"dawa"``, ...).

    Examples
    --------
    >>> by_name("ordered-consistent")
    Ordered(consistent=True)
    """
    if not isinstance(name, str) or name.lower() not in REGISTRY:
        raise InvalidParameterError(f"mechanism must be one of {sorted(REGISTRY)}, got {name!r}")
    cls, params = REGISTRY[name.lower()]
    return cls(**params)


def auto_candidates(policy: Policy) -> tuple["Mechanism", ...]:
    """The mechanisms ``mechanism="auto"`` compares under ``policy``, from the registry's declarations.

    Every class declares the instances it offers (:attr:`Mechanism.auto`,
    constructor arguments) and whether it offers them for a policy
    (:meth:`Mechanism.offered`: analytic error, the policy supported, and the
    class's own public conditions); they come in :attr:`Mechanism.auto_rank`
    order, so ties in expected error go to the simpler mechanism.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> [m.name for m in auto_candidates(policy.dp(Domain.grid(8)))]  # doctest: +NORMALIZE_WHITESPACE
    ['Laplace', 'Ordered', 'Hierarchical', 'Hierarchical', 'Privelet', 'Transformed+Laplace',
     'OrderedHierarchical', 'Optimized']
    """
    classes = sorted(AUTO_CLASSES, key=lambda c: (c.auto_rank, c.__name__))
    out = []
    for cls in classes:
        for params in cls.auto:
            mech = cls(**params)
            if mech.offered(policy):
                out.append(mech)
    return tuple(out)


_DELTAS: contextvars.ContextVar[dict | None] = contextvars.ContextVar("blowfish_nb_deltas", default=None)


@contextlib.contextmanager
def sensitivities_remembered(memo: dict | None = None) -> Iterator[dict]:
    """Within the block, each mechanism's Δ under each policy object is computed once and then recalled.

    A release asks its mechanism's Δ several times (the noise scale when it is
    budgeted, the release, its expected error, its provenance); for a fitted
    strategy each ask is an edge-by-edge scan (issue 28: three scans were ~6 of
    the 8 ms of the explorer's ε step). The memo is keyed by the *objects*
    (the ``sensitivity`` method of each class in the chain, the mechanism, the
    policy) and holds references to them, so an id is never reused while its
    entry lives; mechanisms and policies are immutable values, so Δ is a
    function of them. ``memo``: a dict to keep across blocks (the explorer's,
    one per widget); None keeps the enclosing block's memo, or starts an empty
    one that ends with the block. Exceptions are not remembered (asked again,
    they are raised again). Nothing here reads data: Δ is a public quantity.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> from blowfish_nb.mechanisms import Laplace
    >>> m, p = Laplace(), policy.line(Domain.grid(8))
    >>> with sensitivities_remembered() as memo:
    ...     first, again = m.sensitivity(p), m.sensitivity(p)
    >>> first == again == 2.0, len(memo)
    (True, 1)
    """
    active = _DELTAS.get()
    memo = memo if memo is not None else (active if active is not None else {})
    token = _DELTAS.set(memo)
    try:
        yield memo
    finally:
        _DELTAS.reset(token)


def _remembered(fn):
    """``fn(self, policy)`` (a class's own ``sensitivity``), recalled inside :func:`sensitivities_remembered`."""
    @functools.wraps(fn)
    def sensitivity(self, policy):
        memo = _DELTAS.get()
        if memo is None:
            return fn(self, policy)
        key = (fn, id(self), id(policy))
        hit = memo.get(key)
        if hit is not None and hit[0] is self and hit[1] is policy and unchanged(hit[3], self, policy):
            return hit[2]
        value = fn(self, policy)
        memo[key] = (self, policy, value, attribute_state(self, policy))
        return value

    return sensitivity


_MISSING = object()


def attribute_state(*objects) -> tuple:
    """The attributes of ``objects`` as they are now (shallow: the attribute values themselves, held).

    A remembered Δ is served only while every attribute of its mechanism and policy is still the *same object*
    (:func:`unchanged`): a public attribute reassigned in place (``Threshold.theta = 9``, a refit strategy) is
    another Δ (attack35b: the explorer's memo kept across ε steps served θ = 5's Δ after ``theta`` became 9,
    so ε 0.9 was spent against 0.5 claimed). An array changed element by element inside an attribute is not
    seen; only code in the curator's own process can do that, which can read the data anyway.
    """
    return tuple(_attributes(o) for o in objects)


def unchanged(state: tuple, *objects) -> bool:
    """True when every attribute of ``objects`` is the same object as in ``state`` (:func:`attribute_state`)."""
    for before, obj in zip(state, objects):
        now = _attributes(obj)
        if len(now) != len(before) or any(now.get(k, _MISSING) is not v for k, v in before.items()):
            return False
    return True


def _attributes(obj) -> dict:
    found = dict(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if name not in ("__dict__", "__weakref__"):
                found[name] = getattr(obj, name, _MISSING)
    return found


class Mechanism(ABC):
    """A mechanism: parameters in the constructor, data and privacy inputs in the call (see the module notes).

    Every ability a caller may need is declared here, so no caller probes
    with ``hasattr``: :meth:`supports` (which policies the mechanism can
    protect), :meth:`expected_error` (data-independent mechanisms only; see
    :attr:`analytic_error`), :meth:`sensitivity` and :meth:`noise_scale`
    (None when no single Laplace scale describes the mechanism),
    :meth:`single_terms`, :meth:`difference_chain`, :meth:`answer_variances` (for
    :mod:`blowfish_nb.accuracy`), :meth:`partitions` (data-dependent partitions,
    for audits), :meth:`check_release` (a data-independent mechanism's refusals,
    without data) and :meth:`_sample`.
    """

    name: str = "mechanism"
    #: answers are the true answers plus a fixed linear map of the noise
    linear: bool = False
    #: :meth:`expected_error` is an analytic figure (the mechanism does not depend on the data)
    analytic_error: ClassVar[bool] = False
    #: registered names → constructor arguments (read once, when the class is defined)
    registry: ClassVar[dict[str, dict]] = {}
    #: the instances ``mechanism="auto"`` compares, as constructor arguments (empty: never offered by "auto")
    auto: ClassVar[tuple[dict, ...]] = ()
    #: "auto"'s order of comparison (ties in expected error go to the lower rank)
    auto_rank: ClassVar[int] = 100

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for key, params in cls.__dict__.get("registry", {}).items():
            REGISTRY[key] = (cls, dict(params))
        if "sensitivity" in cls.__dict__:  # every Δ a class computes may be remembered (sensitivities_remembered)
            cls.sensitivity = _remembered(cls.__dict__["sensitivity"])
        if cls.__dict__.get("auto"):
            AUTO_CLASSES.append(cls)

    # -- what the mechanism protects ---------------------------------------------------
    def refusal(self, policy: Policy) -> str | None:
        """Why this mechanism cannot protect ``policy`` (None when it can).

        Read from the policy alone, never from data. By default every policy
        but a constrained one (He et al. §8: under known counts only the
        histogram's sensitivity is established, so only the Laplace mechanism
        on the histogram is private; the transforms and partitions of other
        mechanisms assume the unconstrained neighbours and would lose up to 3ε).
        """
        if not isinstance(policy, Policy):
            return f"policy must be a blowfish_nb Policy, got {type(policy).__name__}"
        if isinstance(policy, Constrained):
            return (f"{self.name} cannot protect a policy with known counts ({policy.summary()}): under count "
                    "constraints only the histogram's sensitivity is established (He et al. §8), so only the "
                    "Laplace mechanism on the histogram is private; use mechanism='laplace' (or the "
                    "constraints= argument of a release)")
        return None

    def supports(self, policy: Policy) -> bool:
        """Whether this mechanism can protect ``policy`` (see :meth:`refusal`).

        Examples
        --------
        >>> from blowfish_nb import Domain, constraints, mechanisms, policy
        >>> d = Domain.grid(6)
        >>> p = policy.constrained(policy.line(d), constraints.rectangles(d, [[(0, 1)], [(4, 5)]]))
        >>> mechanisms.Laplace().supports(p), mechanisms.DAWA().supports(p), mechanisms.DAWA().supports(policy.line(d))
        (True, False, True)
        """
        return self.refusal(policy) is None

    def offered(self, policy: Policy) -> bool:
        """Whether ``mechanism="auto"`` compares this instance under ``policy`` (public facts only).

        By default: an analytic error (auto compares figures, not data) and
        the policy supported; classes add their own conditions (a θ or an
        axis size beyond which they are not worth the wait).
        """
        return bool(self.analytic_error) and self.supports(policy)

    def require(self, policy: Policy) -> Policy:
        """``policy`` when this mechanism supports it, else :class:`PolicyError` with the reason."""
        reason = self.refusal(policy)
        if reason is not None:
            raise PolicyError(reason)
        return policy

    # -- the checked door ----------------------------------------------------------------
    def release(self, x, workload: Workload, policy: Policy, epsilon: float, rng=None) -> np.ndarray:
        """Noisy answers to ``workload @ x`` under (ε, policy)-Blowfish privacy.

        Parameters
        ----------
        x : array of k whole, non-negative counts
        workload : Workload with k columns
        policy : Policy over the k cells
        epsilon : float
        rng : None, int or numpy.random.Generator
            None draws from OS entropy; a seed makes the noise replayable by
            anyone who knows it (tests and teaching only).

        Raises
        ------
        PolicyError
            When the mechanism cannot protect ``policy`` (:meth:`refusal`),
            before ``x`` is looked at.
        """
        x, epsilon, rng = self._checked(x, workload, policy, epsilon, rng)
        return np.asarray(self._release(x, workload, policy, epsilon, rng), dtype=float)

    def _checked(self, x, workload, policy, epsilon, rng):
        self.require(policy)  # before anything about the data is read
        return _checked(x, workload, policy, epsilon, rng)

    def check_release(self, workload: Workload, policy: Policy, epsilon: float) -> None:
        """Raise what :meth:`release` would raise at ``epsilon`` on every histogram over the policy's domain.

        For data-independent mechanisms, whose refusals (the policy, ε, the workload's shape, a noise scale too
        large to draw) read k, the workload, the policy and ε, never the counts. By default a release of the
        all-zero histogram with a generator of its own (a caller's generator is never touched); mechanisms with
        a cheaper equivalent override it.

        Examples
        --------
        >>> from blowfish_nb import Domain, policy, workload
        >>> from blowfish_nb.mechanisms import Laplace
        >>> Laplace().check_release(workload.identity(4), policy.dp(Domain.grid(4)), 1e-15)
        Traceback (most recent call last):
        ...
        blowfish_nb.exceptions.InvalidParameterError: epsilon=1e-15 gives a noise scale of 1e+15, above the largest drawn (1.1e+12): the answers would carry no information; use a larger epsilon
        """
        self.release(np.zeros(policy.domain.size), workload, policy, epsilon, rng=np.random.default_rng(0))

    @abstractmethod
    def _release(self, x: np.ndarray, workload: Workload, policy: Policy, epsilon: float,
                 rng: np.random.Generator) -> np.ndarray:
        """The mechanism itself, on validated inputs."""

    def sample(self, x, workload: Workload, policy: Policy, epsilon: float, size: int, rng=None) -> np.ndarray:
        """``size`` independent releases as rows of an array (audits, Monte Carlo, tests).

        Linear mechanisms override :meth:`_sample` with a vectorised form; the
        default runs :meth:`_release` ``size`` times.
        """
        x, epsilon, rng = self._checked(x, workload, policy, epsilon, rng)
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise InvalidParameterError(f"size must be a positive integer, got {size!r}")
        return self._sample(x, workload, policy, epsilon, int(size), rng)

    def _sample(self, x, workload, policy, epsilon, size, rng) -> np.ndarray:
        return np.stack([np.asarray(self._release(x, workload, policy, epsilon, rng), dtype=float)
                         for _ in range(size)])

    # -- optional abilities (declared here; subclasses override what they have) -----------
    def expected_error(self, workload: Workload, policy: Policy, epsilon: float) -> float:
        """Expected squared error per query (data-independent mechanisms; see :attr:`analytic_error`).

        Raises
        ------
        InvalidParameterError
            For a data-dependent mechanism, whose error depends on the data.
        """
        raise InvalidParameterError(f"{self.name} is data-dependent: it has no analytic expected error; measure it")

    def release_error(self, workload: Workload, policy: Policy, epsilon: float) -> float:
        """Expected squared error per query of the release itself (default: :meth:`expected_error`).

        A mechanism whose release spends ε differently from the figure ``"auto"`` compares at (Adaptive
        releases its fallback at (1 − ρ)ε) overrides it; :func:`blowfish_nb.planning.execute` reports it.
        """
        return self.expected_error(workload, policy, epsilon)

    def sensitivity(self, policy: Policy) -> float | None:
        """Δ of what the mechanism measures under ``policy`` (None: no single Δ describes it)."""
        return None

    def noise_scale(self, policy: Policy, epsilon: float) -> float | None:
        """The Laplace scale of its measurements (None: no single scale describes it)."""
        return None

    def single_terms(self, workload: Workload, policy: Policy) -> tuple[int, float] | None:
        """(q, Δ) when each of q distinct noise terms alone decides an answer's error (None by default)."""
        return None

    def difference_chain(self, workload: Workload, policy: Policy) -> tuple[int, float] | None:
        """(n, Δ) when the answers' errors are, up to sign, the first differences of (0, Z₁, …, Z_n, 0) (None).

        Z_j independent discrete Laplace of scale Δ/ε; :mod:`blowfish_nb.analysis.chain_tail` then gives the
        exact (α, β) → ε (issue 28: the histogram under the line policy).
        """
        return None

    def answer_variances(self, workload: Workload, policy: Policy, epsilon: float) -> np.ndarray | None:
        """Each answer's exact error variance at ``epsilon`` when every error is a sum of many noise terms (None).

        :mod:`blowfish_nb.accuracy` starts its Monte Carlo from a Gaussian guess built on them (a guess only:
        the ε it returns is still certified by draws); None keeps the guessing round of draws at ε = 1.
        """
        return None

    def partitions(self, x, policy: Policy, epsilon: float, size: int, rng=None, workload=None) -> np.ndarray:
        """``size`` draws of the released partition (data-dependent mechanisms; see :meth:`partition_epsilon`).

        ``workload`` selects the partition law a release of that workload uses; a mechanism with one law
        accepts and ignores it.
        """
        raise InvalidParameterError(f"{self.name} releases no data-dependent partition")

    def partition_epsilon(self, epsilon: float) -> float | None:
        """The ε the partition step spends (None: no partition step)."""
        return None

    def budget_split(self, epsilon: float, workload: Workload | None = None) -> dict | None:
        """How ε is split between the mechanism's steps, for the release's provenance (None: one step)."""
        return None

    def privacy(self, policy: Policy, epsilon: float) -> str:
        """The guarantee in words (none for a policy with no edge)."""
        epsilon = check_epsilon(epsilon)
        if policy.protects_nothing:
            return f"no privacy: G = {policy.summary()} has no edge, so ε = {epsilon:g} protects no pair of values"
        return f"({epsilon:g}, G)-Blowfish private for G = {policy.summary()}"


class MatrixMechanism(Mechanism):
    """Measure a strategy (a Kronecker product of 1-D factors on grids) with Laplace noise, then least squares."""

    factor: Factor
    linear = True
    analytic_error = True

    def refusal(self, policy: Policy) -> str | None:
        """Constrained policies only for the identity strategy (He et al. §8 gives the histogram's Δ alone)."""
        if isinstance(policy, Constrained) and isinstance(self.factor, IdentityFactor):
            return None
        return super().refusal(policy)

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
        return policy.sensitivity(self.strategy(self.require(policy)))

    def noise_scale(self, policy: Policy, epsilon: float) -> float:
        """Laplace scale b = Δ_A(G)/ε."""
        return self.sensitivity(policy) / epsilon

    # -- release -----------------------------------------------------------------------
    def _release(self, x, workload, policy, epsilon, rng) -> np.ndarray:
        estimate = self.estimate(x, policy, epsilon, rng)
        if type(workload) is Identity and self._measures_cells():  # I @ x̂ is a copy of x̂, and x̂ is fresh here
            return estimate  # (the noisy counts of noise.noisy): the same values without the operator's dispatch
        return workload @ estimate

    def estimate(self, x: np.ndarray, policy: Policy, epsilon: float, rng: np.random.Generator) -> np.ndarray:
        """The least-squares histogram estimate x̂ (post-processing of the noisy measurements)."""
        if self._measures_cells():  # the identity strategy: x̂ is the noisy counts themselves (the same bits, below)
            return noise.noisy(x, self.noise_scale(policy, epsilon), rng, epsilon=epsilon)
        shape, padded = self._sizes(policy)
        ops = self.measured(policy)
        X = np.zeros(padded)
        X[tuple(slice(0, k) for k in shape)] = x.reshape(shape)
        A = ops[0] if len(ops) == 1 else Kron(ops)
        y = noise.noisy(A @ X.reshape(-1), self.noise_scale(policy, epsilon), rng, epsilon=epsilon)
        y = self._postprocess(y, len(ops))
        X = self._solve_all(ops, y).reshape(padded)
        return X[tuple(slice(0, k) for k in shape)].reshape(-1)

    def _sample(self, x, workload, policy, epsilon, size, rng) -> np.ndarray:
        """Vectorised releases: answers = W x + M η with M the public least-squares map.

        Least squares runs on all releases at once, in O(K) per release on
        one attribute and axis by axis on grids (:func:`.kron.lstsq_grid`);
        nothing is formed densely.
        """
        if not self.linear:
            return super()._sample(x, workload, policy, epsilon, size, rng)
        scale = self.noise_scale(policy, epsilon)
        noise.check_scale(scale, value=epsilon)
        truth = np.asarray(workload @ x, dtype=float)
        shape = policy.domain.shape
        ops = self.measured(policy)
        k = x.size
        if len(ops) == 1:
            eta = noise.discrete_laplace(rng, scale, (size, ops[0].shape[0]))
            est = self.factor.lstsq_rows(ops[0], eta, overwrite=True)
            return truth[None, :] + apply_rows(workload, est[:, :k], scratch=isinstance(self.factor, TreeFactor))
        eta = noise.discrete_laplace(rng, scale, (size,) + tuple(op.shape[0] for op in ops))
        est = lstsq_grid(self.factor, ops, eta)[(slice(None),) + tuple(slice(0, n) for n in shape)]
        return truth[None, :] + apply_grid(workload, est.reshape(size, k), shape)

    def single_terms(self, workload: Workload, policy: Policy) -> tuple[int, float] | None:
        """(q, Δ) when each of the q answers carries one noise term of its own, else None.

        The identity strategy on distinct single cells, and the prefix
        strategy (unprojected) on distinct prefixes (boxes from the first
        cell, on a grid): the error of each answer is then ±Z, Z discrete
        Laplace of scale Δ/ε.
        """
        if not self.linear:
            return None
        shape = policy.domain.shape
        if len(shape) == 1:
            r = as_ranges(workload)
            boxes = None if r is None else (r.lo[:, None], r.hi[:, None])
        else:
            boxes = as_boxes(workload, shape)
        if boxes is None:
            return None
        lo, hi = boxes
        distinct = np.unique(hi, axis=0).shape[0] == hi.shape[0]
        if isinstance(self.factor, IdentityFactor) and np.array_equal(lo, hi) and distinct:
            return hi.shape[0], self.sensitivity(policy)
        if isinstance(self.factor, PrefixFactor) and not lo.any() and distinct:
            return hi.shape[0], self.sensitivity(policy)
        return None

    def check_release(self, workload: Workload, policy: Policy, epsilon: float) -> None:
        """:meth:`Mechanism.check_release`; for the identity strategy on the histogram, its checks without the draw.

        A release of zeros then runs :meth:`Mechanism.release`'s checks (policy, ε, a generator, the zeros,
        the workload), then :func:`.noise.noisy` on the zeros at Δ/ε, whose only refusal is the scale's
        (:func:`.noise.check_scale`; the zeros are whole and the draw cannot fail), then ``I @ x̂``: so the
        same checks in the same order, without 4,096 draws from a fresh generator (issue 28: 0.11 → 0.02 ms of
        a dp histogram release, where Adaptive probes its Laplace fallback). Any other class, strategy or
        workload: the release of zeros.
        """
        cls = type(self)
        if not (self._measures_cells() and type(workload) is Identity and cls.release is Mechanism.release
                and cls._checked is Mechanism._checked and cls._release is MatrixMechanism._release
                and cls.estimate is MatrixMechanism.estimate and cls.noise_scale is MatrixMechanism.noise_scale):
            return super().check_release(workload, policy, epsilon)
        self.require(policy)
        epsilon = check_epsilon(epsilon)
        _check_workload(workload, policy.domain.size)
        noise.check_scale(self.noise_scale(policy, epsilon), value=epsilon)

    def _measures_cells(self) -> bool:
        """Whether the strategy is the identity on the cells with no post-processing (Laplace's).

        Then :meth:`estimate`'s general path — pad (nothing to pad: K = k), measure ``I @ x`` (a copy), draw
        ``noise.noisy`` on it, least squares (``IdentityFactor.lstsq_rows``: a copy) — returns exactly
        ``noise.noisy(x, b, rng)``: the same draws from ``rng`` and the same bits, without the operators, copies
        and axis moves (issue 28: a 4,096-cell Laplace release 0.195 → 0.154 ms by the median, twice per dp
        histogram release with the Adaptive fallback's probe).
        """
        return type(self.factor) is IdentityFactor and type(self)._postprocess is MatrixMechanism._postprocess

    def _solve_all(self, ops, y):
        """A⁺ y for A = ⊗ ops, axis by axis over every line of the grid at once."""
        return lstsq_grid(self.factor, ops, y.reshape(tuple(op.shape[0] for op in ops))).reshape(-1)

    def _postprocess(self, y: np.ndarray, ndim: int) -> np.ndarray:
        """Hook for constraints on the noisy measurements (identity by default)."""
        return y

    # -- error -------------------------------------------------------------------------
    def query_variances(self, workload: Workload, policy: Policy) -> np.ndarray:
        """w (AᵀA)⁻¹ wᵀ for every query.

        One attribute: ranges in closed form, other workloads by dense least
        squares (at most 4096 cells). Several attributes: the Kronecker forms
        of :func:`.kron.grid_variances` — never a dense k×k solve; a workload
        whose exact error is unaffordable raises :class:`.kron.Unaffordable`.
        """
        if self._measures_cells() and isinstance(workload, Identity) and len(policy.domain.shape) == 1:
            return np.ones(workload.shape[0])  # range_variances of the k single cells (hi − lo + 1), without them
        ops = self.measured(policy)
        if len(ops) == 1 and (r := as_ranges(workload)) is not None:
            return self.factor.range_variances(ops[0], r.lo, r.hi)
        if len(ops) > 1 or isinstance(workload, (Boxes, Kron)):
            return grid_variances(self.factor, ops, workload, policy.domain.shape)
        return self._dense_variances(workload, policy, ops)

    def _dense_variances(self, workload, policy, ops) -> np.ndarray:
        """Dense least squares for one attribute (tests compare the structured forms with it on any domain)."""
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
        """Expected squared error per query: Var(noise of scale Δ/ε) · mean of w (AᵀA)⁻¹ wᵀ."""
        epsilon = check_epsilon(epsilon)
        _check_workload(workload, policy.domain.size)
        scale = self.noise_scale(policy, epsilon)
        if (type(self).query_variances is MatrixMechanism.query_variances and self._measures_cells()
                and isinstance(workload, Identity) and len(policy.domain.shape) == 1):
            # query_variances' ones, whose mean is exactly 1.0 (k ones sum to k exactly): the same float, without
            # them (twice per dp histogram release: Adaptive's threshold and the error it reports; issue 28)
            return float(noise.variance(scale))
        return float(noise.variance(scale) * np.mean(self.query_variances(workload, policy)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _checked(x, workload, policy: Policy, epsilon, rng):
    """The public door's checks, once: (histogram, ε, generator)."""
    epsilon = check_epsilon(epsilon)
    rng = as_generator(rng)
    x = _check_histogram(x, policy.domain.size)
    _check_workload(workload, x.size)
    return x, epsilon, rng


def _check_histogram(x, k: int) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.shape != (k,):
        raise InvalidParameterError(f"x must be a histogram of {k} cells, got shape {x.shape}")
    if not np.all(np.isfinite(x)) or (x < 0).any() or not np.all(x == np.round(x)):
        raise InvalidParameterError("x must hold whole, non-negative counts (a histogram of records)")
    return x


def apply_rows(workload: Workload, X: np.ndarray, scratch: bool = False) -> np.ndarray:
    """W applied to every row of X (ranges by prefix sums, others row by row).

    ``scratch=True`` lets prefix workloads overwrite X (no fresh array: on
    these machines a new large temporary costs more than the sum itself).
    """
    if isinstance(workload, Identity):
        return X
    r = as_ranges(workload)
    if r is not None:
        if not r.lo.any():  # prefixes: one running sum, no leading zero column to copy in
            C = np.cumsum(X, axis=1, out=X) if scratch else np.cumsum(X, axis=1)
            return C if np.array_equal(r.hi, np.arange(X.shape[1])) else C[:, r.hi]
        if X.dtype == np.float64:
            # the running sums written after a zero column (np.concatenate of the two cost 3× the sums here: 1 ms
            # of each Monte-Carlo round of a 64-range quote on 128 classes, issue 28); the same additions and floats
            C = np.empty((X.shape[0], X.shape[1] + 1))
            C[:, 0] = 0.0
            np.cumsum(X, axis=1, out=C[:, 1:])
        else:
            C = np.concatenate([np.zeros((X.shape[0], 1)), np.cumsum(X, axis=1)], axis=1)
        return C[:, r.hi + 1] - C[:, r.lo]
    return np.stack([workload @ row for row in X])


def _check_workload(workload, k: int) -> None:
    if not isinstance(workload, Workload):
        raise InvalidParameterError(f"workload must be a blowfish_nb Workload, got {type(workload).__name__}")
    if workload.shape[1] != k:
        raise InvalidParameterError(f"workload must have {k} columns, got shape {workload.shape}")
