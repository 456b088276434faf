"""Expected error and choosing a mechanism by it.

A choice depends on public inputs only — the workload, the policy, the
candidates and ε — never on data, so it is remembered: the analyst service
and a session quote the same query shapes again and again, and each choice
costs an SVD lower bound and every candidate's error (tens of milliseconds on
a few thousand cells). :func:`public_key` turns those inputs into a value key
(``None`` for inputs it cannot describe exactly: those are never remembered)
and :class:`Memo` keeps the most recent results, thread-safe.

Whose memory: a remembered quote answers faster, so a memory shared between
analysts would let one time another's quotes (learn which queries and
accuracies they asked for). Every memory is therefore kept per
:func:`memo_scope` — the analyst service enters one per analyst around its
quotes; in-process callers (one user) share the default one.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_epsilon
from ..exceptions import BlowfishError, InvalidParameterError
from ..mechanisms import MatrixMechanism, Optimized
from ..mechanisms.base import auto_candidates
from ..mechanisms.htheta import AUTO_MAX_THETA
from ..mechanisms.optimized import AUTO, AUTO_COST
from ..strategies.known_total import KnownTotalStrategy
from ..strategies.optimized import OptimizedStrategy
from ..strategies.range_edges import RANGE_EDGE_CELLS, range_edge_strategy
from ..strategies.range_components import TEMPLATE as COMPONENTS, exhaustive, range_component_strategy
from ..strategies.reduction import lift, reduce_workload
from ..domain import CategoricalAttribute, OrderedAttribute
from ..policy import Attribute, Bounded, Categorical, Composed, Custom, Partition, Policy, Threshold
from ..policy.unbounded import UnboundedDP
from ..ranges import Boxes, Ranges
from ..workload import Identity, Kron, Matrix, Prefix, Total, Workload
from . import strategy_cache
from .lower_bound import LOWER_BOUND_LIMIT, lower_bound

__all__ = ["choose_mechanism", "expected_error", "default_candidates", "public_key", "Memo", "memo_scope", "CHOICES",
           "optimized_for", "OPTIMIZED_COST", "fitted", "range_edge_stand_in", "is_stand_in", "STAND_IN_NOTE", "fixed_alternative",
           "component_alternative"]

#: choices remembered (each a candidate's index and its small table), over every scope
CHOICES = 1024
#: the memory scope of the current context (None: the default, shared one); see :func:`memo_scope`
_SCOPE: ContextVar[str | None] = ContextVar("blowfish_nb_memo_scope", default=None)


#: "auto"'s limits, declared by the mechanisms themselves (kept here under their former names)
HTHETA_MAX_THETA = AUTO_MAX_THETA
OPTIMIZED_COST = AUTO_COST
#: optimised strategies remembered (per public inputs, per memo scope)
OPTIMIZED = 64


def default_candidates(policy: Policy, optimized: bool = True) -> tuple[MatrixMechanism, ...]:
    """The data-independent mechanisms considered by ``mechanism="auto"``: the registry's declarations.

    Each registered class says which instances it offers and when
    (:func:`~blowfish_nb.mechanisms.base.auto_candidates`). With ``optimized``
    (default), domains whose fit costs at most :data:`OPTIMIZED_COST`
    (:func:`~blowfish_nb.mechanisms.optimized.fit_cost`) also get ``Optimized()``,
    a strategy fitted to the workload when a choice is made (:func:`optimized_for`)
    and chosen only where its analytic error is the lowest.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> [m.name for m in default_candidates(policy.grid((3, 3)))][-1]
    'Optimized'
    """
    return tuple(m for m in auto_candidates(policy) if optimized or not isinstance(m, Optimized))


def optimized_for(workload: Workload, policy: Policy) -> Optimized:
    """``Optimized`` on the strategy optimised for (workload, policy) with ``AUTO``, remembered per public inputs.

    The explorer and ``mechanism="auto"`` ask for the same shapes again and
    again; the optimisation is seeded, so a remembered strategy is the one a
    new optimisation would return. The key is :func:`public_key`: the
    workload's arrays and the policy's family, domain and a digest of its
    parameters *read at each call* (a policy changed in place, or another θ,
    is another key; never an ``id()``), in the caller's :func:`memo_scope`;
    at most :data:`OPTIMIZED` per scope. Inputs without an exact key are
    fitted every time. Threads asking for the same key wait for one fit. In
    the default scope a fit is also kept on disk and read back by later
    processes (:mod:`.strategy_cache`: exact key, Δ re-verified on reading).
    Bad inputs are refused before any fit (:meth:`Optimized.check_fit`). Cells
    whose workload columns are equal are merged before the fit and the strategy
    lifted back, charged its exact Δ under ``policy``
    (:mod:`blowfish_nb.strategies.reduction`).

    Examples
    --------
    >>> from blowfish_nb import policy, workload
    >>> g = policy.grid((3, 3))
    >>> optimized_for(workload.identity(9), g) is optimized_for(workload.identity(9), g)
    True
    """
    Optimized().check_fit(workload, policy)
    key = public_key(workload, policy, "optimized", AUTO)
    hit = _OPTIMIZED.get(key)
    if hit is not None:
        return hit
    with _fit_lock(key):  # one fit per key: the others wait for it and then find it remembered
        hit = _OPTIMIZED.get(key)
        if hit is None:
            disk = key is not None and _SCOPE.get() is None  # the service's per-analyst scopes never touch disk
            hit = strategy_cache.load(key, policy) if disk else None
            if hit is None:
                hit = _fit(workload, policy)
                if disk:
                    strategy_cache.store(key, hit)
            _OPTIMIZED.put(key, hit)
    return hit


def _fit(workload: Workload, policy: Policy) -> Optimized:
    """Auto's fit, on the classes of cells with equal workload columns when some merge (:mod:`..strategies.reduction`:
    fitted on (W', G'), lifted as A'·S and charged its exact Δ under ``policy``); else on the cells, as before."""
    r = reduce_workload(workload, policy)
    if r is not None and not r.policy.protects_nothing:
        try:
            small = Optimized().for_workload(r.workload, r.policy)
        except BlowfishError:  # the reduced problem is refused: fit the full one as before
            small = None
        if small is not None and small.optimized is not None:
            return Optimized(lift(small.optimized, r, policy))
    return Optimized().for_workload(workload, policy)


_FITTING: dict = {}
_FITTING_GUARD = threading.Lock()


@contextmanager
def _fit_lock(key):
    """A lock per key being fitted (None: no sharing), dropped when no thread holds or waits for it."""
    if key is None:
        yield
        return
    full = (_SCOPE.get(), key)
    with _FITTING_GUARD:
        entry = _FITTING.setdefault(full, [threading.Lock(), 0])
        entry[1] += 1
    try:
        with entry[0]:
            yield
    finally:
        with _FITTING_GUARD:
            entry[1] -= 1
            if entry[1] == 0:
                _FITTING.pop(full, None)


def fitted(mechanism, workload: Workload, policy: Policy):
    """``mechanism``, or for ``Optimized()`` without a strategy the remembered one fitted to (workload, policy).

    A release path calls it before any data are read, so a refusal
    (:meth:`Optimized.check_fit`) comes first and the fitted strategy (and
    its ``fallback``, if any) is what the release's provenance names.

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy, workload
    >>> fitted(mechanisms.Laplace(), workload.identity(4), policy.line(Domain.grid(4))).name
    'Laplace'
    """
    if isinstance(mechanism, Optimized) and mechanism.optimized is None:
        return optimized_for(workload, policy)
    return mechanism


def expected_error(mechanism, workload: Workload, policy: Policy, epsilon: float) -> float:
    """Analytic expected squared error per query of a data-independent mechanism.

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy, workload
    >>> round(expected_error(mechanisms.Ordered(), workload.prefix(64), policy.line(Domain.grid(64)), 1.0), 4)
    1.8413
    """
    if not mechanism.analytic_error:
        raise InvalidParameterError(
            f"{getattr(mechanism, 'name', mechanism)!r} is data-dependent: its error depends on the data "
            "(estimate it empirically with repeated releases)"
        )
    return mechanism.expected_error(workload, policy, epsilon)


def choose_mechanism(
    workload: Workload,
    policy: Policy,
    epsilon: float,
    candidates: Sequence[MatrixMechanism] | None = None,
) -> tuple[MatrixMechanism, pd.DataFrame]:
    """The candidate with the lowest analytic per-query error, and the table it was chosen from.

    The table lists each candidate's sensitivity under the policy, its expected
    error and (for domains of at most ``LOWER_BOUND_LIMIT // 4`` = 512 cells)
    its ratio to the SVD lower bound; candidates that cannot answer the
    workload say why. On larger domains (no bound) it gives the chosen
    candidate's Δ alone: the others' edge scans were about 0.3 of the 0.68 CPU
    seconds of a threshold release at 10⁶ cells (benchmarks/checkout_ab.py);
    the choice reads the errors only, and each mechanism's error computes its
    own exact Δ.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> best, table = choose_mechanism(workload.prefix(64), policy.line(Domain.grid(64)), 1.0)
    >>> best.name, round(float(table.loc["Laplace", "expected_error"] / table.loc["Ordered", "expected_error"]), 1)
    ('Transformed+Laplace', 138.3)
    """
    epsilon = check_epsilon(epsilon)
    candidates = tuple(candidates) if candidates is not None else default_candidates(policy)
    key = public_key(workload, policy, epsilon, *candidates)
    hit = _CHOICES.get(key)
    if hit is not None:
        chosen, table = hit
        return chosen, table.copy()
    best, table, candidates = _choose(workload, policy, epsilon, candidates)
    _CHOICES.put(key, (candidates[best], table.copy()))
    return candidates[best], table


class _NotOffered(MatrixMechanism):
    """Stands for an ``Optimized()`` candidate that cannot serve this workload (its row says why)."""

    name = "Optimized"

    def __init__(self, reason: str):
        self.reason = reason

    def expected_error(self, workload, policy, epsilon):
        raise InvalidParameterError(f"skipped: {self.reason}")


def _fitted(mech, workload: Workload, policy: Policy):
    """A candidate ready to quote: ``Optimized()`` without a strategy gets the (remembered) optimised one."""
    if not isinstance(mech, Optimized) or mech.optimized is not None:
        return mech
    if getattr(workload, "is_identity", False):
        return _NotOffered("not optimised for the histogram (fixed strategies serve it; a quote would wait seconds)")
    try:
        return optimized_for(workload, policy)
    except BlowfishError as exc:  # refused by check_fit (before any fit): its row says why
        return _NotOffered(str(exc))


def _choose(workload: Workload, policy: Policy, epsilon: float,
            candidates: tuple[MatrixMechanism, ...]) -> tuple[int, pd.DataFrame, tuple]:
    """The index of the best candidate, the comparison table and the candidates as quoted (computed, never
    remembered): ``Optimized()`` is fitted only when :func:`fit_can_win` says its fit could win."""
    try:
        bound = lower_bound(workload, policy, epsilon) if policy.domain.size <= LOWER_BOUND_LIMIT // 4 else np.nan
    except BlowfishError:
        bound = np.nan
    fixed = [m for m in candidates if not _unfitted(m)]
    errors = {id(m): _error_row(m, workload, policy, epsilon, bound, candidates) for m in fixed}
    best_fixed = min((r["expected_error"] for r in errors.values()), default=np.inf)
    quoted = []
    for mech in candidates:
        if _unfitted(mech):
            reason = fit_can_win(bound, best_fixed)
            stand_in = None if reason is not None else range_edge_stand_in(workload, policy)
            row = None if stand_in is None else _error_row(stand_in, workload, policy, epsilon, bound, candidates)
            if row is not None and row["expected_error"] < best_fixed * (1 - GAIN):  # it beats every fixed one
                mech, row["note"] = stand_in, STAND_IN_NOTE
            else:  # no stand-in, or one no better than a fixed mechanism: the fit as before
                mech = _fitted(mech, workload, policy) if reason is None else _NotOffered(reason)
                row = _error_row(mech, workload, policy, epsilon, bound, candidates)
            errors[id(mech)] = row
        quoted.append(mech)
    rows = [errors[id(m)] for m in quoted]
    while True:
        best = int(np.argmin([r["expected_error"] for r in rows]))
        if not np.isfinite(rows[best]["expected_error"]):
            raise InvalidParameterError(f"no candidate mechanism can answer this workload: {rows[0]['note']}")
        if not np.isnan(rows[best]["sensitivity"]):
            break
        # no bound, so no Δ scans for the table: the chosen one's, exact. A Δ that cannot be computed refuses that
        # candidate as an error would have (its row says why) and the next best is taken: a release would need it
        try:
            rows[best]["sensitivity"] = quoted[best].sensitivity(policy)
            break
        except BlowfishError as exc:
            rows[best].update(sensitivity=np.nan, expected_error=np.inf, ratio_to_lower_bound=np.nan, note=str(exc))
    table = pd.DataFrame(rows).set_index("mechanism")
    return best, table, tuple(quoted)


#: a fit is skipped when even the lower bound on its error is within this fraction of the best fixed error (it could
#: improve on it by less than one part in 10⁶); 100× the bound's own rounding (√(machine ε) per null eigenvalue)
GAIN = 1e-6


def fit_can_win(bound: float, best_fixed: float) -> str | None:
    """None when fitting ``Optimized()`` could lower the best error, else why it cannot (the fit is skipped).

    ``bound`` is the SVD lower bound (:func:`~blowfish_nb.analysis.lower_bound.lower_bound`,
    ``delta=None``): v(1/ε)·(Σλ)²/(|E|·q), λ the singular values of W_G = W P_G (P_G the k × |E| edge
    incidence: column e is e_u − e_v, or e_u for an edge to ⊥), v(b) = 1/(2 sinh²(1/(2b))) the discrete
    Laplace variance at scale b. It bounds every strategy ``Optimized`` can be charged for, *as this code
    computes its error* (:meth:`Optimized.expected_error` = the lattice noise's variance · mean of w (AᵀA)⁺ wᵀ):

    1. *Noise.* Each measurement's noise has variance γ²·v(b) with b = (Δ/γ + m)/ε (:func:`.noise.lattice_noisy`,
       Δ = Δ₁ the exact L1 sensitivity under the policy). v(b)/b² grows with b and b ≥ m/ε ≥ 1/ε, so
       γ²·v(b) ≥ γ²b²·ε²·v(1/ε) ≥ Δ²·v(1/ε).
    2. *Sensitivity.* Δ₁ = max_e ‖A P_G e‖₁ ≥ max_e ‖A P_G e‖₂ ≥ ‖A P_G‖_F / √|E| (a max is at least the root
       mean square), for any real A — the fitted strategies' entries may have either sign.
    3. *Error.* For A of full column rank (A⁺A = I), Hölder for Schatten norms gives
       ‖W P_G‖_* = ‖(W A⁺)(A P_G)‖_* ≤ ‖W A⁺‖_F · ‖A P_G‖_F, so
       Δ₁² · ‖W A⁺‖²_F ≥ (‖A P_G‖²_F/|E|) · (Σλ)² / ‖A P_G‖²_F = (Σλ)²/|E|. A rank-deficient flat factor
       (weighted marginals) is quoted only when W lies in its row space (W A⁺A = W), where the same lines hold.
       A strategy with the public total (no edge to ⊥, so 1ᵀP_G = 0) is the limit c → ∞ of [A; c·1ᵀ], whose
       Δ and A P_G are A's and whose plain error decreases to the constrained one: the bound holds in the limit.

    Multiplying, the mean squared error per query is ≥ v(1/ε)·(Σλ)²/(|E|·q) = ``bound``, whatever the optimiser
    finds (tests/analysis/test_lower_bound_optimized.py checks it on small domains for every template, several
    seeds and random signed strategies). So when ``bound`` is at least the best fixed candidate's exact error
    (less a relative :data:`GAIN` for rounding), the fit cannot win — a tie would not win either (ties go to the
    earlier candidate) — and is not run: the choice is provably the one the fit would have given. The test is
    conservative, reads public inputs only and does not depend on timing. No bound (NaN: large domains): always
    fit. The bound is not tight (Δ₁ ≥ Δ₂ and the root-mean-square step lose up to √|E| together), so a fit the
    optimiser then loses may still run: the 64-range quote under the line policy (its bound below Ordered's
    error, benchmarks/results/quote_cold.md) cannot be skipped by this argument.

    Examples
    --------
    >>> fit_can_win(float("nan"), 3.0) is None, fit_can_win(2.0, 3.0) is None
    (True, True)
    >>> fit_can_win(3.0, 3.0)[:38]
    'not fitted: no strategy can beat 3 her'
    """
    if not (np.isfinite(bound) and np.isfinite(best_fixed)) or bound < best_fixed * (1 - GAIN):
        return None
    return (f"not fitted: no strategy can beat {best_fixed:.4g} here (the SVD lower bound on any strategy's error "
            f"is {bound:.4g})")


#: the table's note on an ``Optimized`` row answered by the range–edge strategy instead of a fit
STAND_IN_NOTE = ("range-edge (tree policy) or range-component strategy, not fitted (mechanism=Optimized() fits one; "
                 "a fit could lower the error at most to the SVD bound)")


def range_edge_stand_in(workload: Workload, policy: Policy) -> Optimized | None:
    """``Optimized`` on the range–edge strategy where it stands in for auto's fit, else None (fit as before).

    Where: 1-D ranges (not the histogram: auto never fits it) under a *tree* policy without ⊥ (the line, a
    projected line, a path-like custom graph) on at most
    :data:`~blowfish_nb.strategies.range_edges.RANGE_EDGE_CELLS` cells. Why there: under a tree
    policy (ε, G)-Blowfish privacy on x is ε-DP on the edge values x_G (Haney et al. 2017, Thm 4.3), in which a
    range is one or two coordinates (the suffix counts at its two boundaries) and one record's move changes
    one coordinate by 1. :func:`~blowfish_nb.strategies.range_edges.range_edge_strategy` measures each range
    once where its boundaries are not shared and the edge values with what each edge's budget has left, in
    O(q·n) with no optimiser. Where its exact error is below every fixed candidate's, :func:`choose_mechanism`
    quotes it instead of fitting (issue 28: the fit cost 1.3–3.2 s cold on the 64-range quote and lost to
    Ordered there); where it is not (ranges sharing many boundaries: each is then measured at a fraction of the
    budget), the fit runs as before. It is charged its exact Δ; the table says a fit was not run, and the
    release uses what was quoted. Off a tree (1-D G^θ with θ ≥ 2, other graphs without ⊥) the range-component
    strategy (:func:`component_alternative`) stands in the same way where its components are small enough for
    an exhaustive grouping search; elsewhere (grids, ⊥, a component of more ranges) the fit runs as before.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> from blowfish_nb.ranges import Ranges
    >>> m = range_edge_stand_in(Ranges(8, [1, 4], [3, 6]), policy.line(Domain.grid(8)))
    >>> m.name, m.optimized.info["template"]
    ('Optimized', 'range-edge')
    >>> range_edge_stand_in(Ranges(8, [1], [3]), policy.threshold(Domain.grid(8), 2)).optimized.info["template"]
    'range-components'
    >>> range_edge_stand_in(Ranges(8, [1], [3]), policy.dp(Domain.grid(8))) is None
    True
    """
    if getattr(workload, "is_identity", False) or policy.has_bottom or len(policy.domain.shape) != 1:
        return None
    if not 2 <= policy.domain.size <= RANGE_EDGE_CELLS:
        return None
    if not policy.is_tree():  # off a tree: the component strategy, where its blocks were searched exhaustively
        alt = component_alternative(workload, policy)
        return alt if alt is not None and exhaustive(alt.optimized) else None
    strategy = range_edge_strategy(workload, policy)
    return None if strategy is None else Optimized(strategy)


def component_alternative(workload: Workload, policy: Policy) -> Optimized | None:
    """``Optimized`` on the range-component strategy (:mod:`~blowfish_nb.strategies.range_components`) of 1-D
    ranges under a policy without ⊥ that is not a tree, else None.

    Where every component has at most :data:`~blowfish_nb.strategies.range_components.PARTITION_RANGES` ranges
    (:func:`~blowfish_nb.strategies.range_components.exhaustive`: each component's blocks are the best of every
    grouping of its ranges) it stands in for auto's fit (:func:`range_edge_stand_in`): over the 40 such range
    sets of the sweep at k = 4,096 (q = 32 and 64, seeds 0–7, θ = 2, 4, 8) its exact (α, β) quote was 4–30 %
    below the fit's, never above (benchmarks/results/quote_cold.md); the three sets it lost all had a component
    of 6–8 ranges (greedy grouping). Elsewhere the fit runs as before and an accuracy quote also asks this
    strategy's exact ε and keeps the lower (:func:`blowfish_nb.planning.plan_budget`).

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> from blowfish_nb.ranges import Ranges
    >>> component_alternative(Ranges(12, [0, 5], [3, 9]), policy.threshold(Domain.grid(12), 2)).name
    'Optimized'
    >>> component_alternative(Ranges(12, [0], [3]), policy.line(Domain.grid(12))) is None  # a tree: range-edge
    True
    """
    if getattr(workload, "is_identity", False) or policy.has_bottom or len(policy.domain.shape) != 1:
        return None
    if not 2 <= policy.domain.size <= RANGE_EDGE_CELLS or policy.is_tree():
        return None
    strategy = range_component_strategy(workload, policy)
    return None if strategy is None else Optimized(strategy)


def is_stand_in(mech) -> bool:
    """Whether ``mech`` is the range–edge strategy standing in for auto's fit."""
    return (isinstance(mech, Optimized) and mech.optimized is not None
            and mech.optimized.info.get("template") in ("range-edge", COMPONENTS))


def fixed_alternative(table: pd.DataFrame, policy: Policy, linear: bool = True) -> MatrixMechanism | None:
    """The candidate of ``table`` with the lowest finite error among those that are not ``Optimized``, or None.

    An accuracy quote that chose the range–edge stand-in (by expected squared error, :func:`choose_mechanism`)
    also asks this one's ε and keeps the lower (the ℓ∞ target ranks them differently now and then), so the
    stand-in never quotes more than the best fixed mechanism would. ``linear``: among the linear candidates
    only (an accuracy quote's).

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> g = policy.line(Domain.grid(16))
    >>> _, table = choose_mechanism(workload.prefix(16), g, 1.0)
    >>> fixed_alternative(table, g).name
    'Transformed+Laplace'
    """
    candidates = [m for m in default_candidates(policy, optimized=False) if m.linear or not linear]
    labels = {(repr(m) if sum(type(o) is type(m) for o in candidates) > 1 else m.name): m for m in candidates}
    errors = table["expected_error"]
    rows = [(float(errors[label]), i, label) for i, label in enumerate(table.index)
            if label in labels and label != "Optimized" and np.isfinite(errors[label])]
    return labels[min(rows)[2]] if rows else None


def _unfitted(mech) -> bool:
    return isinstance(mech, Optimized) and mech.optimized is None


def _error_row(mech, workload, policy, epsilon, bound, candidates) -> dict:
    """One row of the comparison table (an error that cannot be computed: infinite, with the reason)."""
    label = repr(mech) if sum(type(m) is type(mech) for m in candidates) > 1 else mech.name
    try:
        err = mech.expected_error(workload, policy, epsilon)
        # Δ is scanned edge by edge: where the table has no bound (large domains) only the chosen one's is (_choose)
        delta = mech.sensitivity(policy) if np.isfinite(bound) else np.nan
        return {"mechanism": label, "sensitivity": delta, "expected_error": err,
                "ratio_to_lower_bound": err / bound if bound and bound > 0 else np.nan, "note": ""}
    except BlowfishError as exc:
        return {"mechanism": label, "sensitivity": np.nan, "expected_error": np.inf,
                "ratio_to_lower_bound": np.nan, "note": str(exc)}


@contextmanager
def memo_scope(name: str | None) -> Iterator[None]:
    """Remember and recall quotes in the memory of ``name`` within the block (None: the shared default).

    Results remembered in one scope are never seen from another, so the time
    a quote takes says nothing about the quotes of other scopes.

    Examples
    --------
    >>> m = Memo(4)
    >>> with memo_scope("ana"):
    ...     m.put("q", 1)
    >>> with memo_scope("bob"):
    ...     m.get("q")
    >>> with memo_scope("ana"):
    ...     m.get("q")
    1
    """
    token = _SCOPE.set(name)
    try:
        yield
    finally:
        _SCOPE.reset(token)


class Memo:
    """The ``size`` most recently used results by key, per scope (:func:`memo_scope`), safe to share between threads.

    Each scope has its own ``size`` bound: one analyst's quotes never push
    another's out, so the time of a re-quote says nothing about how many
    quotes other scopes made. A key of ``None`` (inputs :func:`public_key`
    cannot describe exactly) is never stored, so ``get(None)`` is always a miss.

    Examples
    --------
    >>> m = Memo(2)
    >>> m.put("a", 1); m.put("b", 2); m.put("c", 3)
    >>> m.get("a"), m.get("c"), len(m)
    (None, 3, 2)
    """

    def __init__(self, size: int):
        self.size = size
        self._scopes: dict[str | None, OrderedDict] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable | None) -> Any:
        """The value stored under ``key`` in the current scope (now its most recent), or None."""
        if key is None:
            return None
        with self._lock:
            items = self._scopes.get(_SCOPE.get())
            value = None if items is None else items.get(key)
            if value is not None:
                items.move_to_end(key)
            return value

    def put(self, key: Hashable | None, value: Any) -> None:
        """Store ``value`` under ``key`` (nothing for a None key), dropping the scope's least recently used
        beyond ``size``."""
        if key is None:
            return
        with self._lock:
            items = self._scopes.setdefault(_SCOPE.get(), OrderedDict())
            items[key] = value
            items.move_to_end(key)
            while len(items) > self.size:
                items.popitem(last=False)

    def clear(self) -> None:
        """Forget everything, in every scope."""
        with self._lock:
            self._scopes.clear()

    def __len__(self) -> int:
        return sum(len(items) for items in self._scopes.values())


_CHOICES = Memo(CHOICES)
_OPTIMIZED = Memo(OPTIMIZED)


def public_key(workload: Workload, policy: Policy, *params) -> tuple | None:
    """A hashable value key for (workload, policy, params), or None when one of them cannot be described exactly.

    Equal keys mean equal inputs: the workload's type and every array that
    defines it, the policy's family, domain and parameters, and each
    parameter by value (a mechanism by its class and attributes). Inputs of
    other types (a user's own operator, a constrained policy, whose
    description names its constraints but not their counts) give None.

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy, workload
    >>> d = Domain.grid(8)
    >>> a = public_key(workload.identity(8), policy.line(d), mechanisms.Laplace())
    >>> a == public_key(workload.identity(8), policy.line(d), mechanisms.Laplace())
    True
    >>> public_key(workload.identity(8), policy.line(d)) == public_key(workload.identity(8), policy.threshold(d, 2))
    False
    """
    try:
        return (_workload_key(workload), _policy_key(policy), tuple(_value_key(p) for p in params))
    except _Unkeyable:
        return None


class _Unkeyable(Exception):
    """An input with no exact value key."""


#: policy families fully described by their domain and ``params`` (exact types only: a subclass may add state)
_DESCRIBED = (Threshold, UnboundedDP, Bounded, Partition, Attribute, Categorical)


def _workload_key(w) -> tuple:
    t = type(w)
    if t in (Identity, Prefix, Total):
        return (t.__name__, w.shape)
    if t is Ranges:
        return ("Ranges", w.k, _digest(w.lo), _digest(w.hi))
    if t is Boxes:
        return ("Boxes", w.cell_shape, _digest(w.lo), _digest(w.hi))
    if t is Kron:
        return ("Kron", tuple(_workload_key(f) for f in w.factors))
    if t is Matrix:
        A = w.A
        return ("Matrix", A.shape, _digest(A.indptr), _digest(A.indices), _digest(A.data))
    raise _Unkeyable


def _policy_key(p) -> tuple:
    t = type(p)
    if t is Custom:
        return ("Custom", _domain_key(p.domain), p.has_bottom, _digest(p.edges()))
    if t is Composed:
        return ("Composed", _domain_key(p.domain), tuple((n, _policy_key(q)) for n, q in p.parts.items()))
    if t in _DESCRIBED:  # parameters may be long (a partition's blocks): kept as a digest of their canonical form
        return (t.__name__, _domain_key(p.domain), _digest_of(_value_key(p.params)))
    raise _Unkeyable


def _domain_key(domain) -> tuple:
    out = []
    for a in domain.attributes:
        if type(a) is OrderedAttribute:
            out.append(("ordered", a.name, _edges_digest(a)))
        elif type(a) is CategoricalAttribute:
            out.append(("categorical", a.name, _digest_of(_value_key(list(a.categories)))))
        else:
            raise _Unkeyable
    return tuple(out)


def _edges_digest(a: OrderedAttribute) -> tuple:
    """The digest of an attribute's edges; remembered for attributes whose edges are read-only (the shared
    equal-bins attributes every release over public bounds gets: 32 KB hashed per quote was 86 of the 158 µs of a
    4,096-bin release's key, issue 28), computed afresh for edges that may still change."""
    if a.edges.flags.writeable:
        return _digest(np.asarray(a.edges, dtype=float))
    return _read_only_edges_digest(a)


@functools.lru_cache(maxsize=64)
def _read_only_edges_digest(a: OrderedAttribute) -> tuple:  # keyed by the attribute object (eq=False: identity)
    return _digest(np.asarray(a.edges, dtype=float))


def _value_key(v) -> Hashable:
    """Plain values as themselves; containers and arrays by content; a mechanism by its class and attributes."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return (type(v).__name__, v)
    if isinstance(v, np.generic):
        return _value_key(v.item())
    if isinstance(v, np.ndarray):
        return _digest(v)
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_value_key(x) for x in v))
    if isinstance(v, dict):
        return ("dict", tuple(sorted((str(k), _value_key(x)) for k, x in v.items())))
    if isinstance(v, (OptimizedStrategy, KnownTotalStrategy)):  # by its exact content: kind, factors and Δ
        return ("optimized", type(v).__name__, tuple(_digest(f.X) for f in v.factors), v.sensitivity)
    if hasattr(v, "release") and hasattr(v, "__dict__"):
        return ("mechanism", type(v), _value_key(vars(v)))
    raise _Unkeyable


def _digest_of(value: Hashable) -> bytes:
    """A digest of a canonical value (nested tuples of plain values and digests: its repr is exact)."""
    return hashlib.blake2b(repr(value).encode(), digest_size=20).digest()


def _digest(a) -> tuple:
    a = np.ascontiguousarray(a)
    if a.dtype == object:
        raise _Unkeyable
    return (a.dtype.str, a.shape, hashlib.blake2b(a.tobytes(), digest_size=20).digest())
