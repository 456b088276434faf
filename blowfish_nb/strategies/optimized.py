"""Strategies optimised for a workload under a policy (Blowfish-HDMM).

HDMM (McKenna et al., VLDB 2018) searches for the strategy A that minimises
the matrix mechanism's error Δ(A)²‖W A⁺‖_F² under ε-DP, with one dense
non-negative factor per attribute, Kronecker products for several attributes
and L-BFGS-B. Here Δ is the policy-specific sensitivity (DESIGN §3),
Δ_A(G) = max over edges (u, v) of ‖A(e_u − e_v)‖₁. For A = A₁ ⊗ … ⊗ A_d and
an edge that moves one coordinate, along axis i, from a to b,

    ‖A(e_u − e_v)‖₁ = ‖A_i(e_a − e_b)‖₁ · Π_{j≠i} ‖A_j e_{u_j}‖₁,

so on the grid G¹ (a Cartesian product of lines) Δ(A₁ ⊗ A₂) =
max(‖A₁D‖₁·‖A₂‖₁, ‖A₁‖₁·‖A₂D‖₁) with D the difference operator and ‖·‖₁ the
largest column L1 norm (tested by brute force).

**What is optimised.** One non-negative matrix X_i (m_i × n_i) per axis
(as HDMM), or on one axis under a policy without ⊥ a real one, entries of
either sign (:func:`signed_entries`);
the objective is log of the surrogate Δ̃(X)² · ‖W X⁺‖_F², where Δ̃ replaces
every max by a p-norm and |t| by √(t² + η²) (both smooth upper bounds of the
exact max-of-L1), over the policy's edges grouped by the axis they move
(other edges are bounded by the triangle inequality). Scale does not change
the objective. The error factorises over the axes for boxes, marginals and
Kronecker workloads: with S_i = C G_i⁻¹ Cᵀ (C the prefix-indicator matrix,
G_i = X_iᵀX_i), a range [lo, hi] has variance
S[hi+1, hi+1] + S[lo, lo] − 2 S[lo, hi+1], so one O(n³) step per axis gives
every range's variance and the gradient. Restarts start from the identity,
the prefix sums and seeded random matrices (an explicit ``rng``: the result
is a function of the inputs and the seed).

**Templates** (issue 24, from the ideas of McKenna et al. 2018; no HDMM
code): besides the dense factors above (axes of ≤ :data:`DENSE_AXIS` cells,
started from the best matrix found before them — the identity, the prefix
sums or a p-Identity result, by exact objective — which they keep unless they
beat it, each descent ended once it stalls: :func:`_warm_start`,
:func:`_stalled`), :func:`optimize` fits a Kronecker
product of p-Identity factors (:mod:`.pidentity`: A = [I; Θ]·D, unit
columns, so Δ = 1 exactly under DP; O(k²p) gradients; axes alternately on
their Gram weighted by the other axes' variances, :func:`axis_gram`), on
1-D policies without ⊥ a p-Identity on the line's edge values (the prefix
sums, :func:`edge_pidentity`: Δ = the longest edge's span exactly, the public
total free), and on small grids weighted marginals (:mod:`.marginal_weights`:
Δ linear in the weights; closed forms in the marginals algebra, weights
may be exactly 0). The dense template's smoothing is sharpened by
continuation (:func:`_sharpen`); the ``"flat"`` template
(:func:`flat_refine`) drops the Kronecker restriction: one dense factor over
the grid's cells, started from the best Kronecker candidate, 80 L-BFGS-B
steps by default where a policy edge joins two cells and one dense K × K
step is within :data:`FLAT_DEFAULT_COST` (K ≤ 645; :data:`DEFAULT_TEMPLATES`,
not auto's fit, which names :data:`TEMPLATES`), its full schedule when
``"flat-long"`` is named (grids of ≤ 1,024 cells). Each candidate is charged
its exact Δ and the lowest exact objective wins (the identity and the prefix
sums compete too).

**Privacy never rests on the surrogate.** :func:`optimize` returns the
factors with the **exact** Δ of their Kronecker product under the policy,
computed by the policy's own edge-difference code; that Δ is what a
mechanism charges.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np
import scipy.sparse as sp

from .._validation import as_generator
from ..exceptions import InvalidParameterError
from ..policy import BOTTOM, Constrained, Policy
from ..ranges import Boxes, as_ranges, axis_ranges
from ..operators import DENSE_LIMIT, Kron, Matrix, Stack, Workload
from .pidentity import fit_best_p, prefix_gram, range_gram, strategy_matrix

__all__ = ["optimize", "OptimizedStrategy", "DenseFactor", "AXIS_LIMIT", "EDGE_LIMIT", "TEMPLATES", "DEFAULT_TEMPLATES",
           "signed_entries",
           "OPT_IN", "supports",
           "flat_mean_variance"]

#: the largest axis optimised (a dense n×n inverse per evaluation)
AXIS_LIMIT = 4096
#: the most policy edges scanned to group them by axis
EDGE_LIMIT = 2_000_000
#: p of the p-norms that smooth the maxima (n^(1/p) ≤ 1.04 for 10⁴ edges)
P_NORM = 256
#: √(t² + η²) smooths |t| (entries are O(1): the starts are normalised)
ETA = 1e-4


class DenseFactor(Matrix):
    """One measured axis of an optimised strategy: a dense m×n matrix with its inverse Gram and pseudo-inverse.

    Examples
    --------
    >>> F = DenseFactor(np.array([[1.0, 0.0], [1.0, 1.0]]))
    >>> (F.pinv.round(6) + 0.0).tolist(), (F.inverse_gram.round(6) + 0.0).tolist()  # + 0.0: no negative zeros
    ([[1.0, 0.0], [-1.0, 1.0]], [[1.0, -1.0], [-1.0, 2.0]])
    """

    name = "optimized"

    def __init__(self, X, pinv=None, inverse_gram=None):
        X = np.array(X, dtype=float)
        if not np.isfinite(X).all():  # LAPACK's SVD does not return on inf (a hang, not an error)
            raise InvalidParameterError(f"X: a factor's entries must be finite, got {X[~np.isfinite(X)][0]!r}")
        super().__init__(X)  # self.A, the one copy every sensitivity and every measurement reads
        # a template with a closed form passes its own (weighted marginals: exact, also when X is rank-deficient);
        # otherwise both are computed when first read: optimize() builds a factor for every candidate it scores
        # and only the winner's is ever read (issue 28: two of a cold dp range quote's three SVDs were never used)
        self._pinv = None if pinv is None else _frozen(np.array(pinv, dtype=float))
        self._inverse_gram = None if inverse_gram is None else _frozen(np.array(inverse_gram, dtype=float))
        self._source = X if pinv is None else None  # the array X⁺ is taken from (bit for bit what it always was)

    @property
    def pinv(self) -> np.ndarray:
        """X⁺ (read-only), from the SVD, not from (XᵀX)⁻¹Xᵀ: the normal equations square the condition number
        (weighted marginals reached 1e6, so that form lost ~12 digits and biased noise-free answers by 0.1)."""
        if self._pinv is None:
            with _LAZY:  # one SVD per factor, also when threads read it at once
                if self._pinv is None:
                    self._pinv = _frozen(np.linalg.pinv(self._source))
                    self._source = None
        return self._pinv

    @property
    def inverse_gram(self) -> np.ndarray:
        """(XᵀX)⁻¹ = X⁺X⁺ᵀ (read-only)."""
        if self._inverse_gram is None:
            P = self.pinv
            with _LAZY:
                if self._inverse_gram is None:
                    self._inverse_gram = _frozen(P @ P.T)
        return self._inverse_gram

    @property
    def X(self) -> np.ndarray:
        """The factor as a dense array: a fresh copy of what is measured (editing it changes nothing)."""
        X = self.A.toarray()
        X.setflags(write=False)
        return X

    def dense(self):
        return self.A.toarray()  # never a second copy that could drift from what is measured


@dataclass(frozen=True, eq=False)
class FactoredStrategy:
    """Per-axis dense factors with the exact Δ of their Kronecker product (shared by the optimisers' results)."""

    factors: tuple
    sensitivity: float
    objective: float
    shape: tuple
    info: dict = field(default_factory=dict, repr=False)

    @property
    def kron(self) -> Workload:
        """The factors' Kronecker product (the one factor on one axis)."""
        return self.factors[0] if len(self.factors) == 1 else Kron(self.factors)


@dataclass(frozen=True, eq=False)
class OptimizedStrategy(FactoredStrategy):
    """An optimised strategy: one dense factor per axis (their Kronecker product), with its exact Δ.

    Attributes
    ----------
    factors : tuple of DenseFactor
        The per-axis strategies (C order, as the domain).
    sensitivity : float
        Δ_A(G) of the product under ``policy``, exact (the policy's edge differences).
    objective : float
        Δ² · Σ_queries w (AᵀA)⁻¹ wᵀ with the exact Δ (the expected total squared error at ε = 1
        under continuous Laplace noise, divided by 2).
    shape : tuple of int
        The grid the strategy measures.
    """

    @property
    def operator(self) -> Workload:
        """The strategy as one operator (a factor on one axis, their Kronecker product on a grid)."""
        return self.kron


def supports(workload: Workload, policy: Policy) -> str | None:
    """None when :func:`optimize` can handle (workload, policy), else the reason it cannot.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> supports(workload.identity(4), policy.line(Domain.grid(4))) is None
    True
    """
    if isinstance(policy, Constrained):
        return ("a constrained policy's sensitivity is not the edge differences the optimiser charges "
                "(policy.constrained: use a mechanism that supports it)")
    shape = tuple(policy.domain.shape)
    if max(shape) > AXIS_LIMIT:
        return f"an axis of {max(shape)} cells is above the {AXIS_LIMIT} optimised"
    if policy.edge_count() > EDGE_LIMIT:
        return f"{policy.edge_count():,} policy edges are more than the {EDGE_LIMIT:,} scanned"
    try:
        _terms(workload, shape)
    except InvalidParameterError as exc:
        return str(exc)
    return None


def signed_entries(shape, edges) -> bool:
    """Whether the dense factors are optimised with entries of either sign (no L-BFGS-B bounds): one axis, no ⊥.

    Δ and the error read a factor only through |entries| and XᵀX, so a sign
    is never a privacy or accuracy constraint; what differs is the surrogate.
    On one axis without ⊥ (and so no edge moving several coordinates) it is
    the smoothed max over edges of Σ_rows √((x_ra − x_rb)² + η²) alone, the
    same function of a non-negative X whether signs are allowed or not: lifting
    the bound only widens the search, and spares L-BFGS-B its bound handling
    (about two thirds of each step on the 16,384 entries of a 128-cell axis:
    issue 28's 64-range quotes and the canvas's 50-cell choice take 1.3–1.5×
    less CPU, exact objectives equal or lower, benchmarks/results/fit_latency.md).
    Elsewhere the surrogate also reads column norms (a Kronecker product's
    other axes, an edge to ⊥), where signed entries pay √(x² + η²) ≥ |x| on
    every entry, not only on differences: measured worse on 25 × 25 boxes
    under G¹ (auto's fit 222 against 208), so those keep X ≥ 0.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy
    >>> line, dp = policy.line(Domain.grid(8)), policy.dp(Domain.grid(8))
    >>> signed_entries((8,), _edge_groups(line)), signed_entries((8,), _edge_groups(dp))
    (True, False)
    """
    return len(shape) == 1 and not edges.bottom and not edges.multi


def optimize(workload: Workload, policy: Policy, *, restarts: int = 3, rows: float = 1.0,
             max_iter: int = 300, rng=0, templates=None) -> OptimizedStrategy:
    """A strategy optimised for ``workload`` under ``policy``; its Δ is exact.

    Parameters
    ----------
    workload : Workload
        Ranges or any small matrix on one attribute; boxes, marginals,
        Kronecker products of ranges (and weighted stacks of those) on grids.
    policy : Policy
        The policy whose sensitivity the strategy is charged.
    restarts : int
        Optimisations run: from the identity, from the prefix sums (each
        slightly perturbed), then from seeded random matrices; the lowest exact
        objective among their results and the unperturbed identity and prefix
        strategies wins.
    rows : float
        Rows of each factor per cell (m_i = ceil(rows · n_i)).
    max_iter : int
        L-BFGS-B iterations per start.
    rng : None, int or numpy.random.Generator
        Seeds the random starts (a given seed gives the same strategy).
    templates : None or iterable of str
        The optimised templates to try (default: every one of
        :data:`DEFAULT_TEMPLATES` that applies; ``mechanism="auto"``'s fit
        names :data:`TEMPLATES`, without ``"flat"``): ``"p-identity"`` (Kronecker p-Identity, DP-exact),
        ``"edge-domain p-identity"`` (1-D policies without ⊥), ``"marginals"``
        (weighted marginals, grids of ≤ 1,024 cells), ``"dense"`` (dense
        factors on a smoothed max, axes of ≤ 128 cells), ``"flat"`` (one dense
        factor over the grid on the policy's own edges, started from the best
        Kronecker candidate, :func:`flat_refine`: :data:`FLAT_BUDGET_STAGES`,
        80 steps, on grids where a policy edge joins two cells and
        K³ ≤ :data:`FLAT_DEFAULT_COST`, i.e. K ≤ 645 cells; ≈ 10 CPU s at
        25 × 25) and ``"total"`` (the winner again with the public total as
        one more row, under policies without ⊥ on ≤ 1,024 cells).
        ``"flat-long"`` is tried only when named (:data:`OPT_IN`, a minute
        rather than seconds): the flat factor with its full schedule
        :data:`FLAT_STAGES`, on grids of ≤ 1,024 cells. The identity and the
        prefix sums always compete; ``info["template"]`` names the winner,
        ``info["objectives"]`` every candidate's exact objective and
        ``info["fallback"]`` says when no optimised template beat them.

    Returns
    -------
    OptimizedStrategy

    Raises
    ------
    InvalidParameterError
        For a workload or policy it cannot handle (see :func:`supports`).

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> s = optimize(workload.all_ranges(8), policy.line(Domain.grid(8)), restarts=2, rng=1)
    >>> s.sensitivity == policy.line(Domain.grid(8)).sensitivity(s.operator)
    True
    """
    if not isinstance(workload, Workload):
        raise InvalidParameterError(f"workload must be a blowfish_nb Workload, got {type(workload).__name__}")
    if not isinstance(policy, Policy):
        raise InvalidParameterError(f"policy must be a blowfish_nb Policy, got {type(policy).__name__}")
    if workload.shape[1] != policy.domain.size:
        raise InvalidParameterError(f"workload must have {policy.domain.size} columns, got shape {workload.shape}")
    for name, value, low in (("restarts", restarts, 1), ("max_iter", max_iter, 1)):
        if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
            raise InvalidParameterError(f"{name} must be an integer >= {low}, got {value!r}")
    if not (isinstance(rows, (int, float)) and math.isfinite(rows) and rows >= 1):
        raise InvalidParameterError(f"rows must be a number >= 1, got {rows!r}")
    chosen = DEFAULT_TEMPLATES if templates is None else \
        tuple(templates) if not isinstance(templates, str) else (templates,)
    unknown = [t for t in chosen if t not in DEFAULT_TEMPLATES + OPT_IN]
    if unknown or not chosen:
        raise InvalidParameterError(f"templates must be names among {DEFAULT_TEMPLATES + OPT_IN}, got {templates!r}")
    reason = supports(workload, policy)
    if reason is not None:
        raise InvalidParameterError(f"cannot optimise a strategy here: {reason}")
    rng = as_generator(rng)
    shape = tuple(policy.domain.shape)
    edges = _edge_groups(policy)
    problem = _Problem(_terms(workload, shape), edges, shape, tuple(int(math.ceil(rows * n)) for n in shape),
                       signed=signed_entries(shape, edges))
    # the identity (the Laplace mechanism) and the prefix sums (Ordered) themselves: never done worse than them
    fixed = [[np.eye(n) for n in shape], [np.tril(np.ones((n, n))) for n in shape]]
    candidates = [("identity", fixed[0]), ("prefix", fixed[1])]
    # nothing to trade off when no edge moves a record (every strategy has Δ = 0) or no query has error to lose
    pairs = any(p is not None for p in edges.pairs)
    # the identity's error, computed once: it decides ``active`` and is the identity candidate's error below
    known = {"identity": problem.error(fixed[0])} if (pairs or edges.bottom or edges.multi) else {}
    active = bool(known and known["identity"] > 0)
    if active:
        candidates += _templates(problem, policy, restarts, max_iter, rng, chosen)
    best, scores = None, {}

    def consider(name, X):
        nonlocal best
        factors = tuple(x if isinstance(x, DenseFactor) else DenseFactor(x) for x in X)
        op = factors[0] if len(factors) == 1 else Kron(factors)
        delta = float(policy.sensitivity(op))  # exact: the policy's edge differences, whatever the surrogate was
        error = known.pop(name) if name in known and X is fixed[0] else \
            problem.error([f.dense() for f in factors]) if len(X) == len(shape) else _flat_error(problem, factors[0])
        objective = delta**2 * error
        if not math.isfinite(objective):
            return
        scores[name] = objective
        if best is None or objective < best.objective:
            best = OptimizedStrategy(factors, delta, objective, shape, {"template": name})

    for name, X in candidates:
        if X is not None:
            consider(name, X)
    K = math.prod(shape)
    # the flat template: "flat-long" when named (its full stages), else the budgeted "flat" where a policy edge moves a
    # record between cells (the only edges a flat strategy can charge less than a Kronecker one: under DP every edge
    # goes to ⊥ and the p-Identity's unit columns are already exact) and one dense step is within FLAT_DEFAULT_COST
    flat = "flat-long" if "flat-long" in chosen else "flat" if "flat" in chosen else None
    cell_edges = any(p is not None for p in edges.pairs) or edges.multi
    if flat is not None and active and len(shape) > 1 and K <= FLAT_CELLS and policy.edge_count() <= FLAT_EDGES \
            and (flat == "flat-long" or (cell_edges and K**3 <= FLAT_DEFAULT_COST)):
        start = min((c for c in candidates if c[1] is not None and len(c[1]) == len(shape)),
                    key=lambda c: scores.get(c[0], math.inf))  # a full-rank Kronecker start (the fixed ones too)
        stages = FLAT_STAGES if flat == "flat-long" else FLAT_BUDGET_STAGES
        X = _guard(lambda: flat_refine(problem, policy, start[1], max_iter, stages))
        if X is not None:
            candidates.append((flat, [X]))
            consider(flat, [X])
    # the public total: no edge to ⊥ means no neighbour changes n, so a row w·1ᵀ adds nothing to Δ (the policy's
    # edge differences confirm it) and least squares gets the total almost free. Its weight is w = TOTAL_WEIGHT·Δ,
    # in units of the strategy's own Δ (the noise scale is Δ/ε): the objective does not depend on the scale the
    # optimiser left the factors at, and the row's values stay TOTAL_WEIGHT·n in noise units. (An absolute weight
    # of 8 on a dense factor with Δ = 0.018, as under G² over 4 buckets, measured the total 450 noise scales
    # apart and put 10⁹ records beyond the lattice sampler's float64 grid.)
    if "total" in chosen and len(candidates) > 2 and not edges.bottom and K <= TOTAL_CELLS \
            and best.info["template"] not in ("edge-domain p-identity", "marginals"):  # (they price the total)
        name = best.info["template"]
        weight = TOTAL_WEIGHT * (best.sensitivity if best.sensitivity > 0 else 1.0)
        consider(f"{name} + total", [np.vstack([best.kron.dense(), np.full((1, K), weight)])])
    best.info["objectives"] = scores
    optimised = [n for n, X in candidates[2:] if X is not None]
    if len(candidates) > 2 and best.info["template"] in ("identity", "prefix"):
        best.info["fallback"] = (f"no optimised template ({', '.join(optimised) or 'none converged'}) beat the "
                                 f"fixed {best.info['template']} strategy")
    return best


#: the dense smoothed-max template runs on axes up to this many cells (its steps are O(n³))
DENSE_AXIS = 128
#: the optimised templates :func:`optimize` tries
TEMPLATES = ("p-identity", "edge-domain p-identity", "marginals", "dense", "total")
#: what :func:`optimize` tries when not told (``Optimized.fit`` without ``templates``): :data:`TEMPLATES` and the
#: budgeted flat template, ≈ 10 CPU s at 25 × 25 (auto's fit names its templates from :data:`TEMPLATES`, seconds)
DEFAULT_TEMPLATES = TEMPLATES + ("flat",)
#: templates tried only when named (their optimisation takes a minute, not seconds: not for "auto"'s quotes)
OPT_IN = ("flat-long",)
#: the flat templates run on grids of at most this many cells (O(K³) per step) and policies of at most this many edges
FLAT_CELLS = 1024
FLAT_EDGES = 200_000
#: "flat-long"'s stages: (η, p) of the surrogate and the most L-BFGS-B iterations (also ≤ ``max_iter``)
FLAT_STAGES = (((ETA, P_NORM), 150), ((1e-5, 1024), 100))
#: the default "flat" template's stages: 80 steps, the first 60 on a smoother max (p = 64) that a short budget
#: descends faster (continuation, as :func:`_sharpen`), the last 20 on the sharp one; the exact objective decides
FLAT_BUDGET_STAGES = (((ETA, 64), 60), ((1e-5, 1024), 20))
#: the default "flat" template runs where one dense K × K step costs at most this many multiply-adds (K ≤ 645: the
#: cubic step "auto" already accepts, mechanisms.optimized.AUTO_COST); 80 steps cost ≈ 10 CPU s at K = 625
FLAT_DEFAULT_COST = 2**28
#: the largest grid on which the winner is also tried with the public total (one dense K × K inverse)
TOTAL_CELLS = 1024


def _templates(problem, policy, restarts, max_iter, rng, chosen, fixed=None) -> list:
    """(name, per-axis factors) of every optimised template in ``chosen`` that applies (None where one failed).

    ``fixed``: (name, per-axis factors) that compete anyway (None: the identity and the prefix sums, as in
    :func:`optimize`); with the templates fitted before it, they are the dense template's warm starts
    (:func:`_warm_start`).
    """
    edges, shape = problem.edges, problem.shape
    if fixed is None:
        fixed = [("identity", [np.eye(n) for n in shape]), ("prefix", [np.tril(np.ones((n, n))) for n in shape])]
    kron = None
    if "p-identity" in chosen or "dense" in chosen:  # the dense template starts from it
        kron = _guard(lambda: kron_pidentity(problem.terms, shape, restarts, max_iter, rng))
    out = [("p-identity", kron)] if "p-identity" in chosen else []
    if "edge-domain p-identity" in chosen and len(shape) == 1 and not edges.bottom and not edges.multi \
            and edges.pairs[0] is not None:
        out.append(("edge-domain p-identity", _guard(lambda: edge_pidentity(problem.terms, shape[0], restarts,
                                                                            max_iter, rng))))
    if "marginals" in chosen and len(shape) > 1:
        from .marginal_weights import fit_marginals, marginal_strategy  # noqa: PLC0415  (one module per idea)

        theta = _guard(lambda: fit_marginals(problem.terms, shape, problem.edges, max_iter))
        out.append(("marginals", None if theta is None else [DenseFactor(*marginal_strategy(shape, theta))]))
    cell_edges = any(p is not None for p in edges.pairs) or edges.multi
    if "dense" in chosen and cell_edges and max(shape) <= DENSE_AXIS:
        # the dense factors on the smoothed max: from the best matrix so far (the p-identity's result or a fixed
        # candidate, by exact objective) and from seeded starts; each descent stops when it stalls (_stalled)
        warm = _warm_start(problem, policy, list(fixed) + out)
        starts = [warm[1]] if warm is not None else []
        starts += [problem.start(s, rng) for s in range(max(restarts - len(starts), 0))]
        best = None
        for X0 in starts:
            X = _guard(lambda: problem.optimise([np.array(x, dtype=float) for x in X0], max_iter, stall=True))
            if X is None:
                continue
            f = _guard(lambda: problem.value_and_grad(X)[0])
            if f is not None and math.isfinite(f) and (best is None or f < best[0]):
                best = (f, X)
        # the sharpening stages run their full budget after a descent that beat its warm start (they refine a
        # contender: stopping them on a stall cost 0.13 % at 25 × 25 under G¹), and end on a stall after one that
        # did not (they refine a loser: the quote above, where they were 2.3 of the fit's 3.5 s)
        ended = None if best is None else _guard(lambda: _exact(problem, policy, best[1]))
        lost = warm is not None and best is not None and (ended is None or not ended < warm[0])
        dense = None if best is None else _sharpen(problem, policy, best[1], max_iter, stall=lost)
        if warm is not None and (dense is None or not _exact(problem, policy, dense) < warm[0]):
            dense = [np.array(x, dtype=float) for x in warm[1]]  # the fit did not improve on its warm start: keep it
        out.append(("dense", dense))
    return out


def _warm_start(problem, policy, found) -> tuple | None:
    """(exact objective, factors) of the best of ``found`` that is a full-rank matrix per axis on the same cells.

    Started there, the dense template begins at an objective no template fitted before it and no fixed candidate
    beats, and it keeps that start unless it finds a lower exact objective (:func:`_templates`): it can only improve
    on it. (From the p-identity's result alone, a 1-D path of 128 blocks — the quote of 64 ranges at k = 4,096 under
    ``line`` — ended at 12.5× the prefix sums' objective after 300 steps.)
    """
    best = None
    for _, X in found:
        if X is None or len(X) != len(problem.shape) or any(np.shape(x)[1] != n for x, n in zip(X, problem.shape)):
            continue  # a flat factor over a grid (weighted marginals): not per-axis factors
        X = [np.asarray(x.dense() if isinstance(x, DenseFactor) else x, dtype=float) for x in X]
        f = _guard(lambda: _exact(problem, policy, X))
        if f is not None and math.isfinite(f) and (best is None or f < best[0]):
            best = (f, X)
    return best


def _exact(problem, policy, Xs) -> float:
    """The exact objective Δ² · error of per-axis factors (Δ from the policy's edge differences)."""
    factors = [DenseFactor(x) for x in Xs]
    delta = float(policy.sensitivity(factors[0] if len(factors) == 1 else Kron(factors)))
    return delta**2 * problem.error(Xs)


#: the dense template's stall rule (:func:`_stalled`): a descent ends once its log surrogate fell by less than STALL
#: (a relative 10⁻⁴ of the objective) over the last STALL_WINDOW L-BFGS-B steps
STALL = 1e-4
STALL_WINDOW = 10


def _stalled():
    """An L-BFGS-B callback that stops the descent once the log surrogate fell by < :data:`STALL` in
    :data:`STALL_WINDOW` steps.

    From a warm start at the prefix sums (the quote above) the surrogate fell from 916 to 136.3 in 5 steps and then
    by 0.02 in the next 95, each step ~13 ms: the budget bought nothing. The rule only ends a descent early; what
    is kept is still judged by the exact objective (against the warm start here, against every candidate in
    :func:`optimize`), so no stop can return a strategy worse than the start it was given.
    """
    seen = []

    def callback(intermediate_result):
        seen.append(float(intermediate_result.fun))
        if len(seen) > STALL_WINDOW and seen[-STALL_WINDOW - 1] - seen[-1] < STALL:
            raise StopIteration

    return callback


#: the surrogate's (η, p) after the first fit: each stage restarts L-BFGS-B from the last one's factors
SHARPEN = ((1e-5, 1024), (1e-6, 4096))


def _sharpen(problem, policy, X, max_iter, stall: bool = False) -> list[np.ndarray]:
    """Continue the smoothed fit with a sharper surrogate; keep a stage only when the exact objective drops.

    At an optimum of a max of many terms many terms are equal, and a p-norm of
    r equal terms overstates their max by r^(1/p) (24 adjacent pairs per axis
    of 25 cells, p = 256: 1.2 % on Δ at each of the two nested maxima), so the
    first fit trades accuracy for a Δ it overstates. Continuation on (η, p)
    moves the surrogate towards the exact max-of-L1; each result is judged by
    the exact objective Δ² · error (Δ from the policy's edge differences).
    """
    def exact(Xs):
        return _exact(problem, policy, Xs)

    best, best_f = X, exact(X)
    saved = problem.smoothing
    try:
        for smoothing in SHARPEN:
            problem.smoothing = smoothing
            Y = _guard(lambda: problem.optimise([np.array(x) for x in best], max_iter, stall=stall))
            f = None if Y is None else _guard(lambda: exact(Y))
            if f is not None and math.isfinite(f) and f < best_f:
                best, best_f = Y, f
    finally:
        problem.smoothing = saved
    return best


def flat_refine(problem, policy, X, max_iter, stages=FLAT_STAGES) -> np.ndarray:
    """One dense K × K factor over the whole grid, started from the Kronecker product of ``X``; its exact best stage.

    **Why.** A Kronecker product A₁ ⊗ A₂ is charged products of per-axis norms
    under a policy whose edges move records between cells (the grid:
    Δ = max(a₁c₂, c₁a₂), a_i the largest adjacent-column difference, c_i the
    largest column norm), so no Kronecker strategy can trade the two axes' edges
    against each other cell by cell. The flat template drops the restriction:
    it optimises one dense factor on the flattened domain with the smoothed
    max over the policy's own edges (each a pair of cells, or a cell and ⊥:
    the surrogate is then the exact Δ smoothed, with no triangle-inequality
    bound for edges that move several attributes), started at the best
    Kronecker candidate, so it starts where the Kronecker templates ended.
    Each of ``stages`` (:data:`FLAT_STAGES`, :data:`FLAT_BUDGET_STAGES`:
    sharper smoothing) is kept only when the **exact** objective
    Δ² · tr(WᵀW (AᵀA)⁻¹) drops, Δ from the policy's edge differences.
    O(K³) per step: grids of ≤ :data:`FLAT_CELLS` cells. The entries are
    not bounded below (signed: Δ counts |·| either way), which spares
    L-BFGS-B its bound handling on m·K variables, and where WᵀW is a sum
    of Kronecker products (products of ranges, all boxes) the error's
    gradient applies it one axis at a time (:func:`_kron_gram`).
    """
    from .marginal_weights import workload_gram  # noqa: PLC0415

    shape = problem.shape
    K = math.prod(shape)
    A = np.ones((1, 1))
    for x in X:
        A = np.kron(A, np.asarray(x, dtype=float))
    A = A / np.abs(A).sum(axis=0).max()
    G = workload_gram(problem.terms, shape)
    lo, hi, bottom = [], [], False
    for u, v in policy.edge_chunks():
        u, v = np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64)
        down = v == BOTTOM
        bottom |= bool(down.any())
        lo.append(np.minimum(u[~down], v[~down]))
        hi.append(np.maximum(u[~down], v[~down]))
    a = np.concatenate(lo) if lo else np.zeros(0, dtype=np.int64)
    b = np.concatenate(hi) if hi else np.zeros(0, dtype=np.int64)
    edges = _Edges([(a, b) if a.size else None], bottom, False)
    flat = _Problem([_Term(1.0, [None], True, G)], edges, (K,), (A.shape[0],), signed=True)
    flat.kron_gram, flat.grid = _kron_gram(problem.terms, shape), shape  # WᵀW as Kronecker terms, when it is

    def exact(Y):
        factor = DenseFactor(Y)
        return float(policy.sensitivity(factor)) ** 2 * _gram_error(G, factor)

    best, best_f = A, exact(A)
    for smoothing, iters in stages:
        flat.smoothing = smoothing
        Y = _guard(lambda: flat.optimise([best.copy()], min(max_iter, iters))[0])
        f = None if Y is None else _guard(lambda: exact(Y))
        if f is not None and math.isfinite(f) and f < best_f:
            best, best_f = Y, f
    return best


def _kron_gram(terms, shape):
    """WᵀW = Σ_t w_t ⊗_i G_{t,i} as [(w_t, [G_{t,i}])], or None when a term is not one Kronecker product.

    Products of ranges, marginals and the grid's histogram are (``zip`` False): their
    Gram is the Kronecker product of the per-axis range Grams. A list of boxes is a sum
    of one product per box, so it stays dense (None).
    """
    out = []
    for t in terms:
        if t.zip or t.gram is not None:
            return None
        out.append((t.weight, [range_gram(lo, hi, n) for (lo, hi), n in zip(t.axes, shape)]))
    return out


def _kron_right(M: np.ndarray, kron_gram, shape) -> np.ndarray:
    """M · Σ_t w_t ⊗_i G_{t,i} without the K × K product: each factor acts on its own axis (O(K·Σ n_i) a row)."""
    rows = M.shape[0]
    out = np.zeros_like(M)
    for w, grams in kron_gram:
        T = M.reshape((rows,) + tuple(shape))
        for i, g in enumerate(grams):  # T ×_i gᵀ: the Grams are symmetric
            T = np.moveaxis(np.tensordot(T, g, axes=([i + 1], [0])), -1, i + 1)
        out += w * T.reshape(rows, -1)
    return out


#: guards DenseFactor's first reads of X⁺ and (XᵀX)⁻¹ (computed once, whichever thread asks first)
_LAZY = threading.Lock()


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _guard(fn):
    """fn(), or None when the optimisation failed numerically (a template that fails is skipped)."""
    try:
        out = fn()
    except (np.linalg.LinAlgError, ValueError, FloatingPointError):
        return None
    return out


def kron_pidentity(terms, shape, restarts, max_iter, rng) -> list[np.ndarray]:
    """One p-Identity factor per axis, each fitted to its axis's Gram given the others (alternating).

    For a fixed set of other axes the error is linear in axis i's (AᵢᵀAᵢ)⁻¹, with
    Gram Σ_terms weight · (other axes' variances) · 1_r 1_rᵀ (:func:`axis_gram`),
    so each step is one p-Identity fit; under DP the product has Δ = 1.
    """
    d = len(shape)
    inverse = [np.eye(n) for n in shape]
    theta = [None] * d
    # one Kronecker term: each axis's Gram only scales with the others, so one round is the optimum
    rounds = 1 if d == 1 or (len(terms) == 1 and not terms[0].zip) else 3
    for _ in range(rounds):
        seen = []  # (Gram / its trace, Θ) of this round: an axis whose Gram is a multiple of an earlier one's
        for i, n in enumerate(shape):  # gets that axis's Θ (the fit is the same for c·G)
            G = axis_gram(terms, shape, inverse, i)
            Gn = G / (np.trace(G) or 1.0)
            same = next((T for H, T in seen if H.shape == Gn.shape and np.allclose(H, Gn, rtol=1e-12, atol=0)), None)
            if same is not None:
                T = same
            else:
                T, _ = fit_best_p(G, restarts=restarts, max_iter=max_iter, rng=rng, start=theta[i])
                seen.append((Gn, T))
            theta[i] = T
            if d > 1:  # the other axes' Grams read it (one axis: nothing does, so no 128 × 128 inverse for nothing)
                A = strategy_matrix(T)
                inverse[i] = np.linalg.inv(A.T @ A)
    return [strategy_matrix(T) for T in theta]


#: the weight of the total's row in units of the strategy's Δ (edge-domain: Δ = the longest edge's span ≥ 1; the
#: "total" template: TOTAL_WEIGHT·Δ), so its noise variance is at most 1/64 of a unit-Δ row's; a policy without ⊥
#: charges it nothing
TOTAL_WEIGHT = 8.0


def edge_pidentity(terms, k, restarts, max_iter, rng) -> list[np.ndarray]:
    """A p-Identity strategy on the line tree's edge values (the prefix sums), as a cell-domain matrix.

    Haney et al. 2015, Thm 4.3: moving a record from cell u to v (u < v) changes
    the prefix sums P_u … P_{v−1} by one each, so for B ≥ 0 with unit columns the
    strategy A = B·C (C the prefix-sum matrix) has ‖A(e_u − e_v)‖₁ = v − u exactly
    on the line (Δ = θ under G^θ): the DP normalisation again, no smoothed max.
    Without ⊥ the total P_{k−1} is public, so it is measured with weight
    :data:`TOTAL_WEIGHT` at no cost and the fit covers P_0 … P_{k−2}.
    """
    G = prefix_gram(axis_gram(terms, (k,), [np.eye(k)], 0))[:-1, :-1]
    T, _ = fit_best_p(G, restarts=restarts, max_iter=max_iter, rng=rng)
    B = strategy_matrix(T)
    full = np.zeros((B.shape[0] + 1, k))
    full[:-1, :-1] = B
    full[-1, -1] = TOTAL_WEIGHT
    return [np.cumsum(full[:, ::-1], axis=1)[:, ::-1]]  # column i = Σ_{j ≥ i} B e_j: A = B·C


def axis_gram(terms, shape, inverse, i) -> np.ndarray:
    """The Gram of axis i's workload weighted by the other axes' variances under their (AⱼᵀAⱼ)⁻¹."""
    n = shape[i]
    G = np.zeros((n, n))
    S = [_prefix2(N) for N in inverse]
    for t in terms:
        if t.gram is not None:
            G += t.weight * t.gram
            continue
        v = [_Problem._variances(S[j], *t.axes[j]) for j in range(len(shape))]
        lo, hi = t.axes[i]
        if t.zip:
            others = np.prod([v[j] for j in range(len(shape)) if j != i], axis=0) if len(shape) > 1 else None
            G += t.weight * range_gram(lo, hi, n, others)
        else:
            others = math.prod(float(v[j].sum()) for j in range(len(shape)) if j != i)
            G += t.weight * others * range_gram(lo, hi, n)
    return G


def _prefix2(N):
    n = N.shape[0]
    S = np.zeros((n + 1, n + 1))
    S[1:, 1:] = np.cumsum(np.cumsum(N, axis=0), axis=1)
    return S


def flat_mean_variance(strategy: OptimizedStrategy, workload: Workload) -> float:
    """mean over queries of w (AᵀA)⁺ wᵀ for a strategy of one flat factor on a grid: tr(WᵀW (AᵀA)⁺)/q.

    inf when the workload is not in the strategy's row space (a rank-deficient
    strategy, e.g. weighted marginals without the identity, cannot answer a
    query outside it without bias: no finite error is claimed for it).
    """
    from .marginal_weights import workload_gram  # noqa: PLC0415

    shape = tuple(strategy.shape)
    G = workload_gram(_terms(workload, shape), shape)
    return _gram_error(G, strategy.factors[0]) / workload.shape[0]


#: the relative size of the workload's part outside a strategy's row space above which it is not answered
ROW_SPACE_TOL = 1e-8


def _gram_error(G: np.ndarray, factor: DenseFactor) -> float:
    """tr(G (AᵀA)⁺), or inf when G = WᵀW has a part outside A's row space (‖G(I − A⁺A)‖ > tol·‖G‖)."""
    A = factor.A.toarray()
    outside = G - (G @ factor.pinv) @ A
    if np.abs(outside).max(initial=0.0) > ROW_SPACE_TOL * max(np.abs(G).max(initial=0.0), 1e-300):
        return math.inf
    return float(np.sum(G * factor.inverse_gram))


def _flat_error(problem, factor: DenseFactor) -> float:
    """Σ_queries w (AᵀA)⁺ wᵀ for one flat factor on a grid (the marginals template; ≤ DENSE_LIMIT cells)."""
    from .marginal_weights import workload_gram  # noqa: PLC0415

    return _gram_error(workload_gram(problem.terms, problem.shape), factor)


# -- the workload, as per-axis ranges -------------------------------------------------------------
@dataclass
class _Term:
    """weight · (Σ_b Π_i v_i[b] when ``zip`` else Π_i Σ_r v_i[r]); per-axis ranges (lo, hi) or a dense Gram."""

    weight: float
    axes: list  # per axis: (lo, hi) int arrays
    zip: bool
    gram: np.ndarray | None = None  # 1-D only: WᵀW


def _terms(W: Workload, shape) -> list[_Term]:
    d = len(shape)
    if isinstance(W, Stack):
        out = []
        for part, w in zip(W.parts, W.weights):
            for t in _terms(part, shape):
                out.append(_Term(t.weight * w * w, t.axes, t.zip, t.gram))
        return out
    if d == 1:
        r = as_ranges(W)
        if r is not None:
            return [_Term(1.0, [(r.lo, r.hi)], True)]
        return [_Term(1.0, [None], True, _gram(W))]
    if isinstance(W, Boxes) and tuple(W.cell_shape) == tuple(shape):
        return [_Term(1.0, [(W.lo[:, i], W.hi[:, i]) for i in range(d)], True)]
    axes = axis_ranges(W, shape)  # the grid's histogram, marginals, Kronecker products of ranges and totals
    if axes is not None:
        return [_Term(1.0, axes, False)]
    raise InvalidParameterError(
        f"{type(W).__name__} on a grid: use boxes, marginals, Kronecker products of ranges or a Stack of them")


def _gram(W: Workload) -> np.ndarray:
    """WᵀW of a 1-D workload that is not a list of ranges (a sparse matrix, or a small dense one)."""
    if isinstance(W, Matrix):
        return np.asarray((W.A.T @ W.A).todense())
    if W.shape[1] > DENSE_LIMIT or W.shape[0] * W.shape[1] > 4 * 10**7 or not hasattr(W, "dense"):
        raise InvalidParameterError(f"a {type(W).__name__} workload of shape {W.shape} has no Gram form here")
    D = W.dense()
    return D.T @ D


# -- the policy's edges, grouped by the axis they move -------------------------------------------
@dataclass
class _Edges:
    pairs: list  # per axis: (a, b) distinct coordinate pairs moved along that axis (None: no such edge)
    bottom: bool  # some edge to ⊥: Π_i ‖A_i e‖₁ counts
    multi: bool  # some edge moves several coordinates: bounded by 2 Π_i ‖A_i‖₁


def _edge_groups(policy: Policy) -> _Edges:
    shape = tuple(policy.domain.shape)
    d = len(shape)
    found = [set() for _ in range(d)]
    bottom = multi = False
    for u, v in policy.edge_chunks():
        u, v = np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64)
        if u.size == 0:
            continue
        down = v == BOTTOM
        bottom |= bool(down.any())
        u, v = u[~down], v[~down]
        if u.size == 0:
            continue
        cu, cv = np.unravel_index(u, shape), np.unravel_index(v, shape)
        moved = np.stack([a != b for a, b in zip(cu, cv)])
        count = moved.sum(axis=0)
        multi |= bool((count > 1).any())
        for i in range(d):
            sel = moved[i] & (count == 1)
            if sel.any():
                a, b = np.minimum(cu[i][sel], cv[i][sel]), np.maximum(cu[i][sel], cv[i][sel])
                found[i].update(zip(a.tolist(), b.tolist()))
    pairs = []
    for s in found:
        if not s:
            pairs.append(None)
            continue
        ab = np.array(sorted(s), dtype=np.int64)
        pairs.append((ab[:, 0], ab[:, 1]))
    return _Edges(pairs, bottom, multi)


# -- the objective --------------------------------------------------------------------------------
class _Problem:
    def __init__(self, terms, edges: _Edges, shape, rows, signed: bool = False):
        self.terms, self.edges, self.shape, self.rows = terms, edges, shape, rows
        self.signed = signed
        self.smoothing = (ETA, P_NORM)  # (η, p) of the surrogate; :func:`_sharpen` tightens them
        self.kron_gram = None  # flat problems on a grid: WᵀW as Kronecker terms of this grid (:func:`_kron_gram`)
        self.grid = None
        self.incidence = []
        for n, pr in zip(shape, edges.pairs):
            if pr is None:
                self.incidence.append(None)
                continue
            a, b = pr
            m = a.size
            self.incidence.append(sp.csr_array(
                (np.r_[np.ones(m), -np.ones(m)], (np.r_[a, b], np.r_[np.arange(m), np.arange(m)])), shape=(n, m)))

    # starts
    def start(self, index: int, rng: np.random.Generator) -> list[np.ndarray]:
        out = []
        for n, m in zip(self.shape, self.rows):
            X = np.zeros((m, n))
            if index == 0:
                X[:n] = np.eye(n)
            elif index == 1:
                X[:n] = np.tril(np.ones((n, n))) / math.sqrt(n)
            else:
                X[:n] = np.eye(n)
            X += 0.05 * rng.random((m, n)) if index < 2 else 0.5 * rng.random((m, n))
            if self.signed and index >= 2:
                X -= 0.25 * rng.random((m, n))
            out.append(X / np.abs(X).sum(axis=0).max())
        return out

    def optimise(self, X0: list[np.ndarray], max_iter: int, stall: bool = False) -> list[np.ndarray]:
        """L-BFGS-B on the surrogate from ``X0``, at most ``max_iter`` steps; with ``stall``, also stopped once the
        log surrogate fell by less than :data:`STALL` over the last :data:`STALL_WINDOW` steps (:func:`_stalled`)."""
        sizes = [x.size for x in X0]
        cuts = np.cumsum(sizes)[:-1]

        def unpack(z):
            return [p.reshape(x.shape) for p, x in zip(np.split(z, cuts), X0)]

        def fun(z):
            X = unpack(z)
            try:
                f, grads = self.value_and_grad(X)
            except np.linalg.LinAlgError:
                return np.inf, np.zeros_like(z)
            if not np.isfinite(f):
                return np.inf, np.zeros_like(z)
            return f, np.concatenate([g.reshape(-1) for g in grads])

        z0 = np.concatenate([x.reshape(-1) for x in X0])
        from scipy.optimize import Bounds, minimize  # lazy (import time)

        # one Bounds object, not a list of z0.size pairs: SciPy converts such a list pair by pair in Python
        # (seconds per call for a flat factor of 4.6·10⁵ entries, more than the optimisation steps themselves)
        bounds = None if self.signed else Bounds(np.zeros(z0.size), np.full(z0.size, np.inf))

        res = minimize(fun, z0, jac=True, method="L-BFGS-B", bounds=bounds,
                       options={"maxiter": max_iter, "maxcor": 20}, callback=_stalled() if stall else None)
        X = unpack(res.x)
        return [x / max(np.abs(x).sum(axis=0).max(), 1e-300) for x in X]

    # error
    def _axis(self, X, i):
        """(G⁻¹, S = C G⁻¹ Cᵀ) of axis i."""
        Ginv = np.linalg.inv(X.T @ X)
        n = Ginv.shape[0]
        S = np.zeros((n + 1, n + 1))
        S[1:, 1:] = np.cumsum(np.cumsum(Ginv, axis=0), axis=1)
        return Ginv, S

    @staticmethod
    def _variances(S, lo, hi):
        h = hi + 1
        return S[h, h] + S[lo, lo] - 2.0 * S[lo, h]

    def error(self, X) -> float:
        return self._error(X, grad=False)[0]

    def _error(self, X, grad: bool):
        if grad and self.kron_gram is not None:
            return self._flat_kron_error(X[0])
        d = len(self.shape)
        axes = [self._axis(x, i) for i, x in enumerate(X)]
        total = 0.0
        Z = [np.zeros((n + 1, n + 1)) for n in self.shape]  # ∂E/∂S_i
        Qd = [np.zeros((n, n)) for n in self.shape]  # ∂E/∂G_i⁻¹ from dense Grams
        for t in self.terms:
            if t.gram is not None:
                total += t.weight * float(np.sum(axes[0][0] * t.gram))
                Qd[0] += t.weight * t.gram
                continue
            v = [self._variances(axes[i][1], *t.axes[i]) for i in range(d)]
            if t.zip:
                prod = np.prod(v, axis=0)
                total += t.weight * float(prod.sum())
                for i in range(d):
                    others = np.prod([v[j] for j in range(d) if j != i], axis=0) if d > 1 else np.ones_like(v[i])
                    _scatter(Z[i], *t.axes[i], t.weight * others)
            else:
                sums = [float(x.sum()) for x in v]
                total += t.weight * math.prod(sums)
                for i in range(d):
                    others = math.prod(sums[j] for j in range(d) if j != i)
                    _scatter(Z[i], *t.axes[i], np.full(v[i].size, t.weight * others))
        if not grad:
            return total, None
        grads = []
        for i, x in enumerate(X):
            Ginv = axes[i][0]
            R = np.cumsum(np.cumsum(Z[i][::-1, ::-1], axis=0), axis=1)[::-1, ::-1]
            Q = R[1:, 1:] + Qd[i]
            grads.append(-2.0 * x @ (Ginv @ Q @ Ginv))
        return total, grads

    def _flat_kron_error(self, x):
        """(tr(WᵀW G⁻¹), [−2 x G⁻¹ WᵀW G⁻¹]) for one flat factor, G = xᵀx, WᵀW a sum of Kronecker products.

        The dense path's values, with G⁻¹·WᵀW applied one axis at a time
        (O(K²·Σ n_i) instead of a 2K³ product with the dense K × K WᵀW).
        """
        Ginv = np.linalg.inv(x.T @ x)
        GQ = _kron_right(Ginv, self.kron_gram, self.grid)  # G⁻¹ WᵀW
        return float(np.trace(GQ)), [-2.0 * (x @ (GQ @ Ginv))]

    # sensitivity surrogate
    def _delta(self, X):
        """log Δ̃ and its gradient per factor."""
        d = len(self.shape)
        eta, pn = self.smoothing
        mags = [np.sqrt(x * x + eta * eta) for x in X] if self.signed else [None] * d
        col = [x.sum(axis=0) if r is None else r.sum(axis=0) for x, r in zip(X, mags)]
        c = [_pnorm(s, pn) for s in col]
        a, diffs = [], []
        for i, x in enumerate(X):
            inc = self.incidence[i]
            if inc is None:
                a.append(None)
                diffs.append(None)
                continue
            T = (inc.T @ x.T).T  # m × pairs: x[:, a] − x[:, b]
            R = np.sqrt(T * T + eta * eta)
            dist = R.sum(axis=0)
            a.append(_pnorm(dist, pn))
            diffs.append((T, R, dist))
        terms, members = [], []  # each term: value, and the (kind, axis) factors it multiplies
        for i in range(d):
            if a[i] is not None:
                terms.append(a[i][0] * math.prod(c[j][0] for j in range(d) if j != i))
                members.append([("a", i)] + [("c", j) for j in range(d) if j != i])
        if self.edges.bottom:
            terms.append(math.prod(cj[0] for cj in c))
            members.append([("c", j) for j in range(d)])
        if self.edges.multi:
            terms.append(2.0 * math.prod(cj[0] for cj in c))
            members.append([("c", j) for j in range(d)])
        value, g = _pnorm(np.array(terms), pn)
        dlog_a = [0.0] * d
        dlog_c = [0.0] * d
        for t, m, gt in zip(terms, members, g):
            w = gt * t / value  # ∂ log Δ̃ / ∂ log term
            for kind, j in m:
                if kind == "a":
                    dlog_a[j] += w
                else:
                    dlog_c[j] += w
        grads = []
        for i, x in enumerate(X):
            gx = np.zeros_like(x)
            if dlog_c[i]:
                cval, cg = c[i]
                slope = 1.0 if mags[i] is None else x / mags[i]
                gx += (dlog_c[i] / cval) * cg[None, :] * slope
            if a[i] is not None and dlog_a[i]:
                aval, ag = a[i]
                T, R, _ = diffs[i]
                wT = (T / R) * ag[None, :] * (dlog_a[i] / aval)
                gx += (self.incidence[i] @ wT.T).T
            grads.append(gx)
        return math.log(value), grads

    def value_and_grad(self, X):
        logd, gd = self._delta(X)
        E, ge = self._error(X, grad=True)
        if not (math.isfinite(E) and E > 0):  # a numerically singular step (the inverse lost its sign)
            return math.inf, ge
        f = 2.0 * logd + math.log(E)
        return f, [2.0 * a + b / E for a, b in zip(gd, ge)]


def _pnorm(x: np.ndarray, p: int = P_NORM):
    """(‖x‖_p, ∂‖x‖_p/∂x) for x ≥ 0, stable for large p."""
    x = np.asarray(x, dtype=float)
    M = float(x.max())
    if M <= 0:
        return 0.0, np.zeros_like(x)
    r = x / M
    s = float(np.sum(r**p))
    value = M * s ** (1.0 / p)
    return value, (x / value) ** (p - 1)


def _scatter(Z, lo, hi, w):
    """Z += Σ_r w_r (e_{hi+1} − e_lo)(e_{hi+1} − e_lo)ᵀ."""
    n = Z.shape[0]
    h = hi + 1
    flat = np.r_[h * n + h, lo * n + lo, lo * n + h, h * n + lo]
    Z += np.bincount(flat, np.r_[w, w, -w, -w], minlength=n * n).reshape(n, n)
