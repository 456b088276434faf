"""Probes: what the privacy hunter (:mod:`.hunt`) runs — a mechanism's answers or released partition, drawn in batches.

A :class:`Probe` is a function ``draw(x, size, rng)`` plus the ε its outputs
claim. Probes are built from the mechanisms' declared API
(:class:`~blowfish_nb.mechanisms.Mechanism`): :func:`answer_probe`
(``sample``, vectorised for linear mechanisms that override ``_sample``),
:func:`partition_probe` (``partitions`` with ``partition_epsilon`` as the
claim) and :func:`l1_partition_probe` (DAWA's step 1 called directly). An
object that is not a Mechanism (code the hunter audits without having
written it) is duck-typed: ``release`` in a loop, or ``partition`` with
``split``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_epsilon
from ..exceptions import InvalidParameterError
from ..operators import Workload
from ..policy import Policy
from ..workload import identity

__all__ = ["Probe", "answer_probe", "partition_probe", "l1_partition_probe", "as_probe", "MAX_CELLS", "OUTPUTS"]

#: the largest domain the hunter searches (partitions are keyed with 4 bits per cell)
MAX_CELLS = 16
OUTPUTS = ("answers", "partition")

@dataclass(frozen=True)
class Probe:
    """What the hunter runs: ``draw(x, size, rng)`` → ``size`` outputs as rows, and the ε they claim.

    Parameters
    ----------
    name : str
        Shown in results.
    draw : callable
        ``draw(x, size, rng)`` returns an array with ``size`` rows: real
        answers, or (``output="partition"``) block labels per cell (ints) or
        bucket-start masks (bools) — two rows are the same output when they
        put the same cells together.
    epsilon : float
        The privacy loss the outputs claim for one step along a policy edge.
    output : {"answers", "partition"}
    batched : bool
        Whether ``draw`` is vectorised (the default run counts are larger).
    views : tuple of (name, matrix) pairs
        Public linear maps M of the answers y (rows): the hunter builds its
        statistics on every view y Mᵀ as well as on y — e.g. the histogram
        estimate W⁺y and a matrix mechanism's measurements A W⁺y, where
        the noise is independent per coordinate.

    Examples
    --------
    >>> p = Probe("coin", lambda x, n, rng: rng.random((n, 1)) < 0.5, 1.0, "answers")
    >>> p.draw(np.zeros(2), 3, np.random.default_rng(0)).shape
    (3, 1)
    """

    name: str
    draw: Callable[[np.ndarray, int, np.random.Generator], np.ndarray]
    epsilon: float
    output: str = "answers"
    batched: bool = True
    views: tuple = field(default=(), repr=False)

    def __post_init__(self):
        check_epsilon(self.epsilon)
        if self.output not in OUTPUTS:
            raise InvalidParameterError(f"output must be one of {OUTPUTS}, got {self.output!r}")


def answer_probe(mechanism, policy: Policy, epsilon: float, workload: Workload | None = None) -> Probe:
    """Probe a mechanism's released answers (claimed ε = ``epsilon``).

    Uses ``mechanism.sample(x, workload, policy, epsilon, size, rng=...)``
    when the mechanism has it (vectorised for linear mechanisms), else a
    loop over ``mechanism.release``.

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy
    >>> p = answer_probe(mechanisms.Laplace(), policy.line(Domain.grid(4)), 1.0)
    >>> p.draw(np.zeros(4), 5, np.random.default_rng(0)).shape, p.batched
    ((5, 4), True)
    """
    epsilon = check_epsilon(epsilon)
    W = identity(policy.domain.size) if workload is None else workload
    from ..mechanisms import Mechanism

    name = getattr(mechanism, "name", type(mechanism).__name__)
    if isinstance(mechanism, Mechanism):
        mechanism.require(policy)
        def draw(x, size, rng):
            return np.asarray(mechanism.sample(x, W, policy, epsilon, size, rng=rng), dtype=float)

        batched = _vectorised(mechanism)
    else:
        def draw(x, size, rng):
            return np.stack([np.asarray(mechanism.release(x, W, policy, epsilon, rng=rng), dtype=float)
                             for _ in range(size)])

        batched = False
    return Probe(str(name), draw, epsilon, "answers", batched, _views(mechanism, policy, W))


def partition_probe(mechanism, policy: Policy, epsilon: float, workload=None) -> Probe:
    """Probe the partition a data-dependent mechanism releases (its bucket structure shows in its answers).

    With ``mechanism.partitions(x, policy, epsilon, size, rng)`` (a
    ``(size, k)`` array of block labels) the draws are batched and the claim
    is ``mechanism.partition_epsilon(epsilon)``; otherwise a loop over
    ``mechanism.partition(x, policy, epsilon, rng)`` with the claim
    ``mechanism.split · epsilon`` (:class:`~blowfish_nb.mechanisms.PartitionFirst`).
    ``workload``, when given, is passed to ``partitions`` so that the draws
    follow the law a release of that workload uses (DAWA's histogram starts
    PrivTree's bias at a deeper level than its range workloads; a mechanism
    with one partition law accepts and ignores it).

    Raises
    ------
    InvalidParameterError
        When the mechanism releases no partition this probe can draw.

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy
    >>> p = partition_probe(mechanisms.PartitionFirst("dawa"), policy.dp(Domain.grid(4)), 1.0)
    >>> p.epsilon, p.output
    (0.25, 'partition')
    """
    from ..mechanisms import Mechanism

    epsilon = check_epsilon(epsilon)
    name = f"{getattr(mechanism, 'name', type(mechanism).__name__)} partition"
    if isinstance(mechanism, Mechanism) and mechanism.partition_epsilon(epsilon) is not None:
        mechanism.require(policy)
        claim = float(mechanism.partition_epsilon(epsilon))

        def draw(x, size, rng):
            return np.asarray(mechanism.partitions(x, policy, epsilon, size, rng, workload=workload))

        return Probe(name, draw, claim, "partition", True)
    # a user's own object (not a Mechanism): duck-typed, as the hunter audits code it did not write
    if hasattr(mechanism, "partition") and hasattr(mechanism, "split"):
        claim = float(mechanism.split) * epsilon

        def draw(x, size, rng):
            return np.stack([np.asarray(mechanism.partition(x, policy, epsilon, rng)) for _ in range(size)])

        return Probe(name, draw, claim, "partition", False)
    raise InvalidParameterError(
        f"mechanism {mechanism!r} releases no partition the hunter can draw "
        "(it has neither partitions(x, policy, epsilon, size, rng) nor partition(x, policy, epsilon, rng))")


def l1_partition_probe(partition=None, epsilon: float = 1.0, bucket_cost: float | None = None,
                       name: str | None = None) -> Probe:
    """Probe DAWA's step 1 called directly: ``partition(x, epsilon, bucket_cost, rng, size=n)``, batched.

    The claim is ``epsilon`` for one record added or removed (one count
    changed by 1): hunt it under :func:`~blowfish_nb.policy.dp`.

    Parameters
    ----------
    partition : callable, optional
        Default :func:`blowfish_nb.mechanisms.dawa.l1_partition`; any
        function with its signature returning a (n, k) bucket-start mask.
    epsilon : float
        ε₁, the partition's budget (and its claim).
    bucket_cost : float, optional
        Default 1/ε₂ as DAWA sets it for its default ratio r = 0.25 of the
        budget: ε₂ = ε₁(1 − r)/r, so 1/3 at ε₁ = 1.

    Examples
    --------
    >>> p = l1_partition_probe(epsilon=1.0)
    >>> p.draw(np.zeros(4), 3, np.random.default_rng(0)).shape
    (3, 4)
    """
    if partition is None:
        from ..mechanisms.dawa import l1_partition as partition
    epsilon = check_epsilon(epsilon)
    if bucket_cost is None:
        from ..mechanisms import DAWA

        ratio = DAWA().ratio
        bucket_cost = ratio / ((1 - ratio) * epsilon)
    bucket_cost = check_epsilon(bucket_cost, "bucket_cost")

    def draw(x, size, rng):
        return np.asarray(partition(x, epsilon, bucket_cost, rng, size=size))

    return Probe(name or getattr(partition, "__name__", "l1_partition"), draw, epsilon, "partition", True)


def _vectorised(mechanism) -> bool:
    """Whether ``sample`` is vectorised: a linear mechanism whose class overrides the default loop of ``Mechanism``."""
    from ..mechanisms import Mechanism

    overridden = [getattr(type(mechanism), name, None) is not getattr(Mechanism, name, None)
                  for name in ("sample", "_sample")]
    return bool(getattr(mechanism, "linear", False)) and any(overridden)


def _views(mechanism, policy: Policy, W: Workload) -> tuple:
    """("x̂", W⁺) when W has full column rank and is not the identity; ("A x̂", A W⁺) for a matrix mechanism."""
    k = policy.domain.size
    if k > MAX_CELLS or W.shape[0] > 64 * MAX_CELLS:
        return ()
    D = W.dense() if hasattr(W, "dense") else np.asarray(W)
    if np.linalg.matrix_rank(D) < k:
        return ()
    pinv = np.linalg.pinv(D)
    views = [] if D.shape == (k, k) and np.allclose(D, np.eye(k)) else [("x̂", pinv)]
    strategy = getattr(mechanism, "strategy", None)
    if callable(strategy):
        try:
            A = strategy(policy)
            A = A.dense() if hasattr(A, "dense") else np.asarray(A)
        except Exception:  # noqa: BLE001 — a view is a help, never a requirement
            A = None
        if A is not None and A.ndim == 2 and A.shape[1] == k and not (A.shape[0] == k and np.allclose(A, np.eye(k))):
            views.append(("A x̂", A @ pinv))
    return tuple(views)


def as_probe(target, policy, epsilon, output, workload) -> Probe:
    """``target`` as a probe: itself when it is one, else the mechanism's answers or partition (``output``)."""
    if not isinstance(policy, Policy):
        raise InvalidParameterError(f"policy must be a blowfish_nb Policy, got {type(policy).__name__}")
    if isinstance(target, Probe):
        return target
    if epsilon is None:
        raise InvalidParameterError(f"epsilon is required to hunt a mechanism ({target!r}), got None")
    if output == "answers":
        return answer_probe(target, policy, epsilon, workload)
    if output == "partition":
        return partition_probe(target, policy, epsilon)
    raise InvalidParameterError(f"output must be one of {OUTPUTS}, got {output!r}")
