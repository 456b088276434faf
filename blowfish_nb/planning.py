"""The release engine every front end calls: spec → domain + policy → plan → budget → execute.

``df.blowfish`` (:mod:`blowfish_nb.accessor`), the in-process
:class:`~blowfish_nb.accounting.Session`, the analyst service and k-means all
go through here, in the same steps:

1. a :class:`Request` (query, columns, template parameters, ε or (α, β),
   mechanism, projection) is validated once (:meth:`Request.validated`);
   :func:`prepare` (or a :class:`Catalog` of curator-fixed columns) builds the
   :class:`Plan` from it: domain, query, policy;
2. :func:`plan_budget` fixes the mechanism and the ε (from ``epsilon=`` or
   from an accuracy request) from public facts only — what a quote shows and
   what a session charges;
3. :func:`histogram` reads the rows once; :func:`execute` draws the noise and
   returns the :class:`~blowfish_nb.release.Release`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from . import policy as policies
from ._validation import as_generator, check_epsilon
from .accuracy import check_accuracy, epsilon_below, epsilon_for_accuracy, error_draws
from .analysis import choose_mechanism
from .analysis.selection import component_alternative, default_candidates, fitted, fixed_alternative, is_stand_in
from .domain import CELL_LIMIT, Domain
from .exceptions import DomainError, InvalidParameterError, PolicyError
from .mechanisms import REGISTRY, Laplace, Mechanism, Optimized, by_name
from .mechanisms.base import sensitivities_remembered
from .mechanisms.noise import check_scale
from .mechanisms.sulq import SuLQ
from .policy import Policy, project
from .queries import Query, build_query
from .release import Release
from .request import Request
from .spec import check_policy_params, columns_of, domain_for, frame_schema, resolve_policy
from .operators import Identity

__all__ = ["Request", "Plan", "Budgeted", "Catalog", "prepare", "plan_budget", "execute", "histogram", "release_counts",
           "pick_mechanism", "resolve_budget", "noise_source", "MECHANISMS", "SEEDED", "CALLER_GENERATOR",
           "OS_ENTROPY"]

#: the vetted mechanism names (the registry of :mod:`blowfish_nb.mechanisms`)
MECHANISMS = REGISTRY


def histogram(data, domain: Domain) -> np.ndarray:
    """The counts of ``data`` over ``domain``: the one pass over the rows (pandas, or Dask per partition)."""
    if isinstance(data, pd.DataFrame):
        return domain.histogram(data)
    from .dask import dask_histogram

    return dask_histogram(data, domain)


class Plan:
    """Everything a release needs before the data are counted: domain, query, policy."""

    def __init__(self, domain: Domain, query: Query, policy: Policy, columns: list[str]):
        self.domain, self.query, self.policy, self.columns = domain, query, policy, columns


def prepare(df, query="histogram", columns=None, *, column=None, bins=None, width=None, bounds=None, policy="dp",
            theta=None, blocks=None, attributes=None, constraints=None, **params) -> Plan:
    """Check every argument and build the domain, query and policy (no pass over the rows).

    ``params`` are the query template's parameters (``ranges``, ``keep``, ...: :data:`blowfish_nb.queries.TEMPLATES`).
    """
    frame, lazy = frame_schema(df)
    cols = columns_of(frame, columns, column)
    check_policy_params(policy, theta=theta, blocks=blocks, attributes=attributes)
    domain = domain_for(frame, cols, bins, width, bounds, lazy=lazy)
    q = build_query(domain, query, **params)
    pol = resolve_policy(policy, domain, theta=theta, blocks=blocks, attributes=attributes)
    if constraints is not None:
        pol = _constrained(pol, domain, q, constraints)
    return Plan(domain, q, pol, cols)


def _constrained(pol: Policy, domain: Domain, q, constraints) -> Policy:
    """The policy with known counts (He et al. §8): histogram only, Δ checked now (sparsity, size)."""
    from .constraints import Constraints

    if q.name != "histogram":
        raise InvalidParameterError(
            f"constraints= is for query='histogram' (only the histogram's sensitivity under known counts is "
            f"established, He et al. §8), got query={q.name!r}; derive other answers from the histogram")
    made = constraints(domain) if callable(constraints) else constraints
    if not isinstance(made, Constraints):
        raise InvalidParameterError(
            "constraints must be blowfish_nb.constraints objects (marginal, rectangles, count) or a function of "
            f"the domain returning one, got {constraints!r}")
    if made.domain != domain:
        raise InvalidParameterError(
            f"constraints are over {made.domain.size} cells {made.domain.shape}, the query's domain has "
            f"{domain.size} {domain.shape}; build them from the same bins (or pass a function of the domain)")
    out = policies.constrained(pol, made)
    out.sensitivity(Identity(domain.size))  # refuse non-sparse constraints before any data are read
    return out


def release_counts(x: np.ndarray, plan: Plan, *, epsilon=None, accuracy=None, mechanism="auto",
                   projection: bool = True, rng=None) -> Release:
    """Release ``plan``'s query from a histogram ``x`` already counted over ``plan.domain``.

    Everything :func:`release` does after its one pass over the rows.

    Examples
    --------
    >>> df = pd.DataFrame({"v": [0.5, 1.5, 1.7, 3.2]})
    >>> p = prepare(df, "histogram", "v", bins=4, bounds=(0, 4))
    >>> r = release_counts(p.domain.histogram(df), p, epsilon=1.0, rng=0)
    >>> r.mechanism, round(r.expected_error, 4), len(r.answers)  # discrete Laplace of scale 1: 2t/(1 − t)²
    ('Laplace', 1.8413, 4)
    """
    return execute(x, plan_budget(plan, epsilon=epsilon, accuracy=accuracy, mechanism=mechanism,
                                  projection=projection), rng=rng)


class Budgeted:
    """A plan with its mechanism and ε fixed, before any data are read (what a session charges)."""

    def __init__(self, plan: Plan, run: "Run", mechanism, table, epsilon: float, accuracy):
        self.plan, self.run, self.mechanism, self.table = plan, run, mechanism, table
        self.epsilon, self.accuracy = epsilon, accuracy


def plan_budget(plan: Plan, request: Request | None = None, *, epsilon=None, accuracy=None, mechanism="auto",
                projection: bool = True) -> Budgeted:
    """Choose the mechanism and the ε (from ``epsilon`` or from ``accuracy``) without touching the data.

    ``request`` (a :class:`Request`, validated) gives the budget, the mechanism and the projection instead of the
    keywords.
    """
    if request is not None:
        r = request.validated()
        eps, acc, mechanism, projection = r.epsilon, r.accuracy, r.mechanism, r.projection
    else:
        eps, acc = resolve_budget(epsilon, accuracy)
        if not isinstance(projection, (bool, np.bool_)):
            raise InvalidParameterError(f"projection must be True or False, got {projection!r}")
    if isinstance(plan.policy, policies.Constrained):
        if not (mechanism == "auto" or isinstance(mechanism, Laplace)
                or (isinstance(mechanism, str) and mechanism.lower() == "laplace")):
            raise InvalidParameterError(
                f"under count constraints only the Laplace mechanism on the histogram is private (its Δ is the one "
                f"He et al. §8 establishes), got mechanism={mechanism!r}")
        mechanism, projection = Laplace(), False
    run = Run(plan, projection)
    with sensitivities_remembered():  # each candidate's Δ scanned once for its error, the choice and the ε
        return _plan_budget(plan, run, mechanism, eps, acc)


def _plan_budget(plan: Plan, run: Run, mechanism, eps, acc) -> Budgeted:
    m, table = pick_mechanism(mechanism, run, accuracy=acc is not None)
    if plan.query.name == "workload":
        with np.errstate(invalid="ignore", over="ignore"):
            delta = plan.policy.sensitivity(plan.query.workload)
        if not np.isfinite(delta):
            raise PolicyError(
                f"the query's sensitivity is unbounded under {plan.policy.summary()} (Δ = {delta}): one record's move "
                "would change its answers without limit, so no finite noise can protect them; "
                "check the workload for infinite or NaN weights"
            )
    if acc is not None:
        eps = epsilon_for_accuracy(m, run.workload, run.policy, *acc)
        # auto chose the range-edge stand-in by squared error; the best fixed mechanism may quote less for (α, β)
        if isinstance(mechanism, str) and mechanism == "auto" and is_stand_in(m):
            alt = fixed_alternative(table, run.policy)
            alt_eps = None if alt is None else epsilon_below(alt, run.workload, run.policy, *acc, eps)
            if alt_eps is not None:
                m, eps = alt, alt_eps
        elif isinstance(mechanism, str) and mechanism == "auto" and isinstance(m, Optimized) and not is_stand_in(m):
            # the fit was chosen: off a tree the range-component strategy's exact quote may still be lower
            alt = component_alternative(run.workload, run.policy)
            alt_eps = None if alt is None else epsilon_for_accuracy(alt, run.workload, run.policy, *acc)
            if alt_eps is not None and alt_eps < eps:
                m, eps = alt, alt_eps
    # an ε too small to draw noise for is refused here, from public facts, before any row is read
    m.require(run.policy)  # a mechanism that cannot protect the policy is refused before any row is read
    scale = m.noise_scale(run.policy, eps)
    if scale is None:
        scale = DATA_DEPENDENT_SCALE / eps
    check_scale(scale, value=eps)
    return Budgeted(plan, run, m, table, eps, acc)


#: the largest noise scale per unit of 1/ε a data-dependent mechanism draws (DAWA's partition at ratio 1/4 under a
#: policy that moves records: (2 + 2)/(ε/8)), used to refuse a hopeless ε before the rows are read
DATA_DEPENDENT_SCALE = 32.0


def execute(x: np.ndarray, b: Budgeted, rng=None) -> Release:
    """Run a budgeted plan on the counts ``x`` (the mechanism's Δ computed once: :func:`sensitivities_remembered`)."""
    with sensitivities_remembered():
        return _execute(x, b, rng)


def _execute(x: np.ndarray, b: Budgeted, rng) -> Release:
    generator = as_generator(rng)
    m, run, eps = b.mechanism, b.run, b.epsilon
    answers = m.release(run.data(x), run.workload, run.policy, eps, rng=generator)
    try:
        # a mechanism whose released budget differs from the one "auto" compares at (Adaptive) reports its own
        expected = m.release_error(run.workload, run.policy, eps)
    except InvalidParameterError:  # data-dependent mechanisms have no analytic figure
        expected = None
    workload, pol = run.workload, run.policy
    return Release(
        answers=pd.Series(answers, index=b.plan.query.labels, name=f"noisy {b.plan.query.name}"),
        query=b.plan.query.name,
        epsilon=eps,
        policy=b.plan.policy,
        mechanism=m.name,
        expected_error=expected,
        columns=tuple(b.plan.columns),
        accuracy=b.accuracy,
        provenance={
            "noise": noise_source(rng),
            "mechanism": repr(m),
            "projected cells": run.cells if run.projected else None,
            "sensitivity": m.sensitivity(run.policy),
            "candidates": b.table,
            "budget split": m.budget_split(eps, workload),
        },
        error_sampler=(lambda n, seed=0: error_draws(m, workload, pol, eps, n, seed)) if m.linear else None,
    )


#: what ``provenance["noise"]`` says of a release whose caller chose the randomness
SEEDED = "seeded — anyone with the seed can remove the noise"
CALLER_GENERATOR = "drawn from the caller's generator — anyone with a copy of it can remove the noise"
OS_ENTROPY = "OS entropy"


def noise_source(rng) -> str:
    """How a release's noise was drawn, for its provenance (never the seed itself)."""
    if rng is None:
        return OS_ENTROPY
    return CALLER_GENERATOR if isinstance(rng, np.random.Generator) else SEEDED


def resolve_budget(epsilon, accuracy) -> tuple[float | None, tuple[float, float] | None]:
    """Exactly one of ε and (α, β), validated."""
    if (epsilon is None) == (accuracy is None):
        raise InvalidParameterError(
            f"give exactly one of epsilon= and accuracy=(alpha, beta); got epsilon={epsilon!r}, accuracy={accuracy!r}"
        )
    if epsilon is not None:
        return check_epsilon(epsilon), None
    return None, check_accuracy(accuracy)


class Run:
    """The computation actually run: full domain, or the projected one."""

    def __init__(self, plan: Plan, projection: bool):
        q = self.query = plan.query
        self.projected = bool(projection and q.blocks is not None and int(q.blocks.max()) + 1 < plan.domain.size)
        if self.projected:
            self._proj = project(plan.policy, q.blocks)
            self.policy = self._proj.policy
            self.workload = q.projected()
        else:
            self.policy, self.workload = plan.policy, q.workload
        self.cells = self.policy.domain.size

    def data(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return self._proj.data(x) if self.projected else x


def pick_mechanism(mechanism, run: Run, accuracy: bool = False):
    """(mechanism, comparison table or None) for ``"auto"``, a name, or an instance."""
    if run.query.name == "kmeans" or isinstance(mechanism, SuLQ):
        return _kmeans_mechanism(mechanism, run, accuracy), None
    if isinstance(mechanism, Mechanism):
        if accuracy and not mechanism.linear:
            raise InvalidParameterError(
                f"accuracy= needs a linear mechanism; {mechanism.name} post-processes or adapts to the data "
                "(use epsilon= instead, or mechanism='auto')"
            )
        return fitted(mechanism, run.workload, run.policy), None  # Optimized() fitted (and checked) before the data
    if mechanism == "auto":
        candidates = default_candidates(run.policy)
        if accuracy:
            candidates = tuple(c for c in candidates if c.linear)
        return choose_mechanism(run.workload, run.policy, 1.0, candidates=candidates)
    if isinstance(mechanism, str) and mechanism.lower() in MECHANISMS:
        return pick_mechanism(by_name(mechanism), run, accuracy)
    raise InvalidParameterError(
        f"mechanism must be 'auto', one of {sorted(MECHANISMS)} or a mechanism object, got {mechanism!r}"
    )


def _kmeans_mechanism(mechanism, run: Run, accuracy: bool) -> SuLQ:
    """SuLQ for a k-means query (its k and iterations from the query); nothing else answers one, nor it another."""
    params = run.query.params
    if run.query.name != "kmeans":
        raise InvalidParameterError(
            f"mechanism {mechanism!r} answers query='kmeans' only, got query={run.query.name!r}")
    if accuracy:
        raise InvalidParameterError("accuracy= is not available for query='kmeans'; give epsilon=")
    if isinstance(mechanism, SuLQ):
        if mechanism.k != params["k"]:
            raise InvalidParameterError(f"mechanism has k={mechanism.k}, the query k={params['k']}")
        return mechanism
    if not (isinstance(mechanism, str) and mechanism.lower() in ("auto", "sulq")):
        raise InvalidParameterError(f"mechanism must be 'auto' or 'sulq' for query='kmeans', got {mechanism!r}")
    return SuLQ(k=params["k"], iterations=params["iterations"])


class Catalog:
    """The curator's fixed columns: their bins (one attribute each) and one policy per column.

    What a session and the analyst service serve. A query names some of the
    columns and runs under the composition of their policies (BlowfishDB
    Def. 3.2); everything here is public (bins and policies, no data).

    Examples
    --------
    >>> from blowfish_nb import datasets
    >>> c = Catalog.from_data(datasets.salaries(n=200, seed=1), {"age": 31}, policy="line")
    >>> b = c.quote("histogram", "age", accuracy=(20, 0.05))
    >>> b.mechanism.name, c.columns
    ('Transformed+Laplace', ['age'])
    >>> Catalog.from_dict(c.to_dict()).column_policy("age").summary() == c.column_policy("age").summary()
    True
    """

    def __init__(self, attributes: Mapping, policies_: Mapping[str, Policy]):
        self._attributes = dict(attributes)
        self._policies = dict(policies_)

    @classmethod
    def from_data(cls, data, bins: Mapping, policy="dp", bounds: Mapping | None = None) -> "Catalog":
        """Bins checked against ``data``'s columns (bounds public: given or from ``attrs``), policies parsed."""
        from .spec import column_policy

        if not isinstance(bins, Mapping) or not bins:
            raise InvalidParameterError(f"bins must be a dict column -> binning naming the queryable columns, got {bins!r}")
        if bounds is not None and not isinstance(bounds, Mapping):
            raise InvalidParameterError(f"bounds must be a dict column -> (lo, hi), got {bounds!r}")
        bounds = dict(bounds or {})
        frame, lazy = frame_schema(data)
        attributes = {}
        for c, spec in bins.items():
            if not isinstance(c, str) or c not in frame.columns:
                raise InvalidParameterError(f"bins names column {c!r}, which is not in the data {list(frame.columns)}")
            attr = domain_for(frame, [c], spec, bounds=bounds.get(c), lazy=lazy).attributes[0]
            if attr.size > CELL_LIMIT:
                raise DomainError(too_many_cells([c], attr.size))
            attributes[c] = attr
        return cls(attributes, {c: column_policy(policy, attributes[c]) for c in attributes})

    @property
    def columns(self) -> list[str]:
        """The columns queries may use."""
        return list(self._attributes)

    def attribute(self, column: str):
        """The binned attribute (domain) of ``column``."""
        return self._attributes[self.check_columns(column)[0]]

    def column_policy(self, column: str) -> Policy:
        """The curator's policy for ``column`` alone."""
        return self._policies[self.check_columns(column)[0]]

    def policy_for(self, cols: Sequence[str]) -> Policy:
        """The composition of the policies of ``cols`` (the projection of the catalog's G onto them)."""
        if len(cols) == 1:
            return self._policies[cols[0]]
        domain = Domain([self._attributes[c] for c in cols])
        return policies.compose(domain, {c: self._policies[c] for c in cols})

    def check_columns(self, columns) -> list[str]:
        """``columns`` as a list of distinct columns of the catalog, or InvalidParameterError."""
        if columns is None:
            raise InvalidParameterError(f"columns= is required; this session's columns are {self.columns}")
        cols = [columns] if isinstance(columns, str) else list(columns) if isinstance(columns, (list, tuple)) else None
        unknown = [] if cols is None else [c for c in cols if not isinstance(c, str) or c not in self._attributes]
        if cols is None or unknown or not cols or len(set(cols)) != len(cols):
            raise InvalidParameterError(
                f"columns must be distinct columns of this session {self.columns}, got {columns!r}")
        return cols

    def plan(self, query="histogram", columns=None, **params) -> Plan:
        """The Plan of a query over some of the columns (the cell limit checked from the bins first).

        ``params`` are the query template's parameters (``ranges``, ``keep``, ``k``, ...: see
        :data:`blowfish_nb.queries.TEMPLATES`).
        """
        cols = self.check_columns(columns)
        cells = math.prod(self._attributes[c].size for c in cols)
        if cells > CELL_LIMIT:
            raise DomainError(too_many_cells(cols, cells))
        domain = Domain([self._attributes[c] for c in cols])
        return Plan(domain, build_query(domain, query, **params), self.policy_for(cols), cols)

    def quote(self, query: "str | Request" = "histogram", columns=None, **fields) -> "Budgeted":
        """The budgeted plan (mechanism and ε) of a request, from public facts only.

        ``query`` is a :class:`Request`, or the request's query with ``columns`` and its other fields by name.
        """
        r = Request.of(query, columns, **fields)
        return plan_budget(self.plan(r.query, r.columns, **r.template_parameters()), r)

    def to_dict(self) -> dict:
        """The public description: bins and policies per column (JSON-ready)."""
        return {"domain": Domain(list(self._attributes.values())).to_dict(),
                "policies": {c: p.to_dict() for c, p in self._policies.items()}}

    @classmethod
    def from_dict(cls, data: Mapping) -> "Catalog":
        """The catalog :meth:`to_dict` described (policies rebuilt from their descriptions)."""
        domain = Domain.from_dict(data["domain"])
        attributes = {a.name: a for a in domain.attributes}
        return cls(attributes, {c: Policy.from_dict(data["policies"][c]) for c in attributes})


def too_many_cells(cols: list[str], cells: int) -> str:
    """The refusal of a domain above the cell limit (from the bins, never the data)."""
    limit = CELL_LIMIT
    return (f"the domain over {cols} has {cells:,} cells (the product of their bin counts); at most {limit:,} "
            "can be materialised: query fewer columns, or ask the curator for coarser bins")
