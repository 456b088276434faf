"""``df.blowfish``: one-call private releases and budgeted sessions from a DataFrame.

The accessor keeps no state (pandas 3 makes a new accessor object on every
attribute access); every call goes through :func:`release` or
:func:`blowfish_nb.accounting.session`. The rows are read once, to count the
histogram; everything after works on the counts (:func:`release_counts`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from . import policy as policies
from ._validation import as_generator, check_epsilon, check_theta
from .accuracy import check_accuracy, epsilon_for_accuracy, error_draws
from .analysis import choose_mechanism
from .analysis.selection import default_candidates
from .domain import CELL_LIMIT, Domain, is_categorical_spec
from .exceptions import DomainError, InvalidParameterError, PolicyError
from .mechanisms import REGISTRY, Laplace, Mechanism, by_name
from .mechanisms.noise import check_scale
from .policy import Policy, project
from .queries import QUERIES, Query, build_query
from .release import Release
from .workload import Identity

__all__ = ["BlowfishAccessor", "release", "release_counts", "prepare", "domain_for", "resolve_policy",
           "check_policy_params", "QUERIES", "POLICIES", "POLICY_PARAMS", "MECHANISMS", "CELL_LIMIT"]

POLICIES = ("dp", "bounded", "line", "threshold", "grid", "partition", "attribute", "sensitive_attributes")
#: the parameters each policy name takes; any other one given with it is refused, never ignored
POLICY_PARAMS = {"threshold": ("theta",), "grid": ("theta",), "partition": ("blocks",),
                 "sensitive_attributes": ("attributes",)}
#: the vetted mechanism names (the registry of :mod:`blowfish_nb.mechanisms`)
MECHANISMS = REGISTRY
# CELL_LIMIT (from blowfish_nb.domain): domains larger than this are refused (the counts and the policy graph are
# materialised); one attribute's bins are checked against it from the numbers, before anything is allocated


def release(
    df: pd.DataFrame,
    query: str = "histogram",
    columns: str | Sequence[str] | None = None,
    *,
    column: str | None = None,
    bins=None,
    width: float | None = None,
    bounds=None,
    ranges=None,
    keep=None,
    policy="dp",
    theta: int | None = None,
    blocks=None,
    attributes=None,
    constraints=None,
    epsilon: float | None = None,
    accuracy: tuple[float, float] | None = None,
    mechanism: str | Mechanism = "auto",
    projection: bool = True,
    rng: None | int | np.random.Generator = None,
) -> Release:
    """Release a query over one or more columns under a Blowfish policy.

    Parameters
    ----------
    df : pandas.DataFrame
        Row-level data.
    query : {"histogram", "cumulative", "range", "marginal"} or Workload
        The query template (see :mod:`blowfish_nb.queries`).
    columns : str or list of str
        The columns binned into the domain (``column=`` is an alias for one).
    bins, width, bounds
        Binning: a count, a width, explicit edges, ``"categorical"`` or a
        list of categories; per column as a dict when there are several; or a
        ready :class:`Domain`. ``bounds`` are public (lo, hi) per column (a dict
        for several); ``df.attrs["public_bounds"]`` is used when not given;
        bounds taken from the data warn with :class:`PrivacyLeakWarning`.
    ranges : list
        For ``query="range"``: ``(lo, hi)`` per range in data units (one pair
        per column on several columns). Ranges are half-open, ``[lo, hi)``, so
        ``[(0, 40_000), (40_000, 250_000)]`` share no bin; a range covers every
        bin that meets ``[lo, hi)`` (ends inside a bin round outward), and
        ``hi`` at the upper bound takes the last bin (see :mod:`blowfish_nb.queries`).
    keep : str or list of str
        For ``query="marginal"``: the columns kept.
    policy : str, Policy or dict
        ``"dp"``, ``"bounded"``, ``"line"``, ``"threshold"`` (+ ``theta``),
        ``"grid"`` (+ ``theta``, default 1), ``"partition"`` (+ ``blocks``: lists
        of bin indices), ``"attribute"``, ``"sensitive_attributes"`` (+
        ``attributes``), a Policy over the domain, or a dict column → policy
        (a name, ``(name, params)`` or a one-column Policy) composed as in
        BlowfishDB Def. 3.2.
    epsilon : float
        The budget spent. Give exactly one of ``epsilon`` and ``accuracy``.
    accuracy : (alpha, beta)
        Spend the least ε such that, with probability ≥ 1 − β, *all* answers
        are within α of the truth at once (see :mod:`blowfish_nb.accuracy`).
    mechanism : "auto", a name of ``MECHANISMS`` or a Mechanism
        ``"auto"`` picks the lowest analytic expected error (linear ones only
        when ``accuracy`` is given).
    projection : bool
        Answer on the coarsest partition supporting the query (BlowfishDB §3).
    rng : None, int or numpy.random.Generator
        None (the default) draws the noise from OS entropy. An int seed or a
        Generator makes the noise replayable by anyone who holds it: the
        release is then marked so (``provenance["noise"]``), and the seed
        itself is never recorded.

    Returns
    -------
    Release

    Raises
    ------
    InvalidParameterError, DomainError, PolicyError
        Each naming the parameter and the value at fault; nothing is released.

    Examples
    --------
    >>> from blowfish_nb import datasets
    >>> df = datasets.salaries(n=1000, seed=1)
    >>> r = df.blowfish.release("cumulative", "age", bins=62, policy="line", epsilon=1.0, rng=0)
    >>> r.mechanism, round(r.expected_error, 4)  # noisy prefix sums; n is public under G^1 (no ⊥)
    ('Transformed+Laplace', 1.8116)
    """
    plan = prepare(df, query, columns, column=column, bins=bins, width=width, bounds=bounds, ranges=ranges,
                   keep=keep, policy=policy, theta=theta, blocks=blocks, attributes=attributes, constraints=constraints)
    budgeted = plan_budget(plan, epsilon=epsilon, accuracy=accuracy, mechanism=mechanism, projection=projection)
    as_generator(rng)  # a bad rng is refused before the pass over the rows
    return execute(histogram(df, plan.domain), budgeted, rng=rng)


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


def prepare(df, query="histogram", columns=None, *, column=None, bins=None, width=None, bounds=None, ranges=None,
            keep=None, policy="dp", theta=None, blocks=None, attributes=None, constraints=None) -> Plan:
    """Check every argument and build the domain, query and policy (no pass over the rows)."""
    frame, lazy = _schema(df)
    cols = _columns(frame, columns, column)
    check_policy_params(policy, theta=theta, blocks=blocks, attributes=attributes)
    domain = domain_for(frame, cols, bins, width, bounds, lazy=lazy)
    q = build_query(domain, query, ranges=ranges, keep=keep)
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

    def __init__(self, plan: Plan, run: "_Run", mechanism, table, epsilon: float, accuracy):
        self.plan, self.run, self.mechanism, self.table = plan, run, mechanism, table
        self.epsilon, self.accuracy = epsilon, accuracy


def plan_budget(plan: Plan, *, epsilon=None, accuracy=None, mechanism="auto", projection: bool = True) -> Budgeted:
    """Choose the mechanism and the ε (from ``epsilon`` or from ``accuracy``) without touching the data."""
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
    run = _Run(plan, projection)
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
    # an ε too small to draw noise for is refused here, from public facts, before any row is read
    scale = m.noise_scale(run.policy, eps) if hasattr(m, "noise_scale") else DATA_DEPENDENT_SCALE / eps
    check_scale(scale, value=eps)
    return Budgeted(plan, run, m, table, eps, acc)


#: the largest noise scale per unit of 1/ε a data-dependent mechanism draws (DAWA's partition at ratio 1/4 under a
#: policy that moves records: (2 + 2)/(ε/8)), used to refuse a hopeless ε before the rows are read
DATA_DEPENDENT_SCALE = 32.0


def execute(x: np.ndarray, b: Budgeted, rng=None) -> Release:
    """Run a budgeted plan on the counts ``x``."""
    generator = as_generator(rng)
    m, run, eps = b.mechanism, b.run, b.epsilon
    answers = m.release(run.data(x), run.workload, run.policy, eps, rng=generator)
    try:
        expected = m.expected_error(run.workload, run.policy, eps)
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
            "sensitivity": m.sensitivity(run.policy) if hasattr(m, "sensitivity") else None,
            "candidates": b.table,
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


class _Run:
    """The computation actually run: full domain, or the projected one."""

    def __init__(self, plan: Plan, projection: bool):
        q = plan.query
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


def pick_mechanism(mechanism, run: _Run, accuracy: bool = False):
    """(mechanism, comparison table or None) for ``"auto"``, a name, or an instance."""
    if isinstance(mechanism, Mechanism):
        if accuracy and not mechanism.linear:
            raise InvalidParameterError(
                f"accuracy= needs a linear mechanism; {mechanism.name} post-processes or adapts to the data "
                "(use epsilon= instead, or mechanism='auto')"
            )
        return mechanism, None
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


def check_policy_params(policy, *, theta=None, blocks=None, attributes=None) -> None:
    """Refuse a policy parameter that ``policy`` does not take: given, it is never silently ignored.

    ``theta`` goes with ``"threshold"`` and ``"grid"``, ``blocks`` with
    ``"partition"``, ``attributes`` with ``"sensitive_attributes"``; a Policy
    object or a dict of per-column policies takes none of them (an unknown
    name is left to :func:`resolve_policy`, which names it).

    Raises
    ------
    InvalidParameterError
        Naming the parameter, its value and the policy.

    Examples
    --------
    >>> check_policy_params("threshold", theta=3)
    >>> check_policy_params("dp", theta=3)
    Traceback (most recent call last):
    ...
    blowfish_nb.exceptions.InvalidParameterError: theta=3 is not a parameter of policy='dp' (only threshold and grid take theta); drop it or choose a policy that uses it
    """
    if isinstance(policy, str) and policy not in POLICIES:
        return
    takes = POLICY_PARAMS.get(policy, ()) if isinstance(policy, str) else ()
    for name, value in (("theta", theta), ("blocks", blocks), ("attributes", attributes)):
        if value is not None and name not in takes:
            users = " and ".join(p for p, params in POLICY_PARAMS.items() if name in params)
            what = (f"policy={policy!r}" if isinstance(policy, str)
                    else "a dict of per-column policies (give it per column, as (name, {...}))"
                    if isinstance(policy, Mapping) else "a Policy object (its parameters are already fixed)")
            raise InvalidParameterError(
                f"{name}={value!r} is not a parameter of {what} (only {users} take{'s' if ' and ' not in users else ''} "
                f"{name}); drop it or choose a policy that uses it")


def resolve_policy(policy, domain: Domain, *, theta=None, blocks=None, attributes=None) -> Policy:
    """A Policy from a shorthand name, a dict column → policy, or a Policy.

    Parameters the named family does not take are not looked at here (front
    ends pass their controls' values along); :func:`prepare` and the per-column
    specs of a dict refuse them with :func:`check_policy_params`. A policy that
    protects no pair of values warns with :class:`PrivacyLeakWarning` when built.

    Examples
    --------
    >>> d = Domain.from_column(pd.Series([1.0], name="v"), bins=10, bounds=(0, 10))
    >>> resolve_policy("threshold", d, theta=3).summary()
    'threshold θ=3 on v (10 cells)'
    """
    if isinstance(policy, Policy):
        if policy.domain.shape != domain.shape:
            raise PolicyError(
                f"policy is over {policy.domain.size} cells {policy.domain.shape} but the query's domain has "
                f"{domain.size} {domain.shape}"
            )
        return policy
    if isinstance(policy, Mapping):
        if set(policy) != set(domain.names):
            raise PolicyError(f"a policy dict needs one entry per column {list(domain.names)}, got {list(policy)}")
        parts = {}
        for attr in domain.attributes:
            spec = policy[attr.name]
            sub = Domain([attr])
            if isinstance(spec, tuple) and len(spec) == 2:
                name, params = spec
                if not isinstance(params, Mapping):
                    params = {"theta": params}
                unknown = [k for k in params if k not in ("theta", "blocks", "attributes")]
                if unknown:
                    raise InvalidParameterError(
                        f"the policy for column {attr.name!r} has an unknown parameter {unknown[0]!r}; "
                        f"parameters are theta, blocks and attributes, got {spec!r}"
                    )
                check_policy_params(name, **params)
                parts[attr.name] = resolve_policy(name, sub, **params)
            else:
                parts[attr.name] = resolve_policy(spec, sub)
        return parts[domain.names[0]] if len(parts) == 1 else policies.compose(domain, parts)
    if not isinstance(policy, str) or policy not in POLICIES:
        raise PolicyError(f"policy must be one of {POLICIES}, a dict column -> policy, or a Policy; got {policy!r}")
    if policy == "dp":
        return policies.dp(domain)
    if policy == "bounded":
        return policies.bounded(domain)
    if policy == "line":
        return policies.line(domain)
    if policy == "threshold":
        if theta is None:
            raise InvalidParameterError("policy='threshold' needs theta=<bins>, got theta=None")
        return policies.threshold(domain, check_theta(theta))
    if policy == "grid":
        return policies.grid(domain, check_theta(1 if theta is None else theta))
    if policy == "partition":
        if blocks is None:
            raise InvalidParameterError("policy='partition' needs blocks=[[bin, ...], ...], got blocks=None")
        return policies.partition(domain, blocks)
    if policy == "attribute":
        return policies.attribute(domain)
    if attributes is None:
        raise InvalidParameterError("policy='sensitive_attributes' needs attributes=[column, ...], got None")
    unknown = [a for a in ([attributes] if isinstance(attributes, str) else attributes) if a not in domain.names]
    if unknown:
        raise PolicyError(f"attributes names an unknown column {unknown[0]!r}; columns: {list(domain.names)}")
    return policies.sensitive_attributes(domain, attributes)


def domain_for(df: pd.DataFrame, columns, bins=None, width=None, bounds=None, *, lazy: bool = False) -> Domain:
    """The Domain a release over ``df[columns]`` uses (public bounds from ``df.attrs``).

    ``lazy``: ``df`` is only the schema of data read elsewhere (Dask), so
    nothing may be inferred from its values: bounds and categories must be given.
    """
    if not lazy:
        _check_frame(df)
    cols = _columns(df, columns, None)
    if isinstance(bins, Domain):
        if list(bins.names) != cols:
            raise DomainError(f"the Domain given as bins covers {list(bins.names)}, not the columns {cols}")
        if width is not None or bounds is not None:
            raise InvalidParameterError(
                f"a Domain given as bins fixes the bins already; width={width!r} and bounds={bounds!r} would be "
                "ignored, so they are refused"
            )
        domain = bins
    elif len(cols) == 1:
        spec = bins.get(cols[0]) if isinstance(bins, Mapping) else bins
        b = bounds.get(cols[0]) if isinstance(bounds, Mapping) else bounds
        if lazy:
            _public_only(df, cols[0], spec, b)
        if isinstance(spec, str):
            if width is not None:
                raise InvalidParameterError(f"give bins or width, not both (got bins={spec!r}, width={width!r})")
            domain = Domain.from_frame(df, {cols[0]: spec}, bounds={cols[0]: b} if b is not None else None)
        elif is_categorical_spec(spec):
            if width is not None or b is not None:
                raise InvalidParameterError(
                    f"column {cols[0]!r} is binned by the categories {spec!r}; width={width!r} and bounds={b!r} are "
                    "for numeric bins"
                )
            domain = Domain.from_frame(df, {cols[0]: spec})
        else:
            edges_given = spec is not None and not isinstance(spec, str) and np.ndim(spec) >= 1
            if b is None and not edges_given:
                b = df.attrs.get("public_bounds", {}).get(cols[0])
            domain = Domain.from_column(df[cols[0]], spec, width=width, bounds=b, name=cols[0])
    else:
        if not isinstance(bins, Mapping) or set(bins) != set(cols):
            raise InvalidParameterError(f"bins must be a dict with one entry per column {cols}, got {bins!r}")
        if bounds is not None and not isinstance(bounds, Mapping):
            raise InvalidParameterError(f"bounds must be a dict column -> (lo, hi) for several columns, got {bounds!r}")
        if width is not None:
            raise InvalidParameterError("width= is for one column; give per-column bins (edges) instead")
        if lazy:
            for c in cols:
                _public_only(df, c, bins[c], (bounds or {}).get(c))
        domain = Domain.from_frame(df, {c: bins[c] for c in cols}, bounds=bounds)
    if domain.size > CELL_LIMIT:
        raise DomainError(
            f"the domain over {cols} has {domain.size:,} cells (shape {domain.shape}); at most {CELL_LIMIT:,} can be "
            "materialised: use coarser bins, fewer columns, or a marginal over fewer columns"
        )
    return domain


def _public_only(schema, column, spec, bounds) -> None:
    """On data that cannot be read here (Dask), refuse binnings that would be inferred from the values."""
    if isinstance(spec, str) and spec == "categorical":
        if not isinstance(schema[column].dtype, pd.CategoricalDtype):
            raise DomainError(f"column {column!r}: give its categories as a list (they are not inferred from Dask data)")
        return
    if isinstance(spec, (list, tuple)) and spec and all(isinstance(v, str) for v in spec):
        return
    edges_given = spec is not None and not isinstance(spec, (int, np.integer)) and np.ndim(spec) == 1
    if bounds is None and not edges_given and not schema.attrs.get("public_bounds", {}).get(column):
        raise DomainError(
            f"column {column!r}: give public bounds=(lo, hi) or explicit bin edges; they are not inferred from Dask data"
        )


def _schema(df) -> tuple[pd.DataFrame, bool]:
    """(a pandas frame to read columns and dtypes from, whether the rows live elsewhere)."""
    if isinstance(df, pd.DataFrame):
        _check_frame(df)
        return df, False
    meta = getattr(df, "_meta", None)
    if isinstance(meta, pd.DataFrame) and hasattr(df, "map_partitions"):
        return meta, True
    raise DomainError(f"data must be a pandas or Dask DataFrame, got {type(df).__name__}")


def _check_frame(df) -> None:
    if not isinstance(df, pd.DataFrame):
        raise DomainError(f"data must be a pandas DataFrame, got {type(df).__name__}")
    if len(df) == 0:
        raise DomainError("the data frame is empty: there is nothing to release")


def _columns(df, columns, column) -> list[str]:
    if columns is not None and column is not None:
        raise InvalidParameterError(f"give columns= or its alias column=, not both (got {columns!r} and {column!r})")
    given = columns if columns is not None else column
    if given is None:
        raise InvalidParameterError("columns= is required: the column (or list of columns) to bin")
    cols = [given] if isinstance(given, str) else list(given) if isinstance(given, (list, tuple)) else None
    if not cols or not all(isinstance(c, str) for c in cols):
        raise InvalidParameterError(
            f"columns must be a column name (a string) or a list of names, got {given!r}; integer column labels "
            "are not supported: rename them (df.columns = df.columns.astype(str))"
        )
    if len(set(cols)) != len(cols):
        raise InvalidParameterError(f"columns must be distinct, got {cols!r}")
    for c in cols:
        if c not in df.columns:
            raise DomainError(f"column {c!r} is not in the data; available columns: {list(df.columns)!r}")
        if (df.columns == c).sum() > 1:
            raise DomainError(f"column {c!r} appears more than once in the data; give the columns distinct names")
    return cols


@pd.api.extensions.register_dataframe_accessor("blowfish")
class BlowfishAccessor:
    """``df.blowfish.release(...)`` and ``df.blowfish.session(...)``."""

    def __init__(self, df: pd.DataFrame):
        self._df = df

    def release(self, query="histogram", columns=None, **kwargs) -> Release:
        """Release ``query`` over columns of this frame; see :func:`blowfish_nb.accessor.release`."""
        return release(self._df, query, columns, **kwargs)

    def kmeans(self, columns, k: int, **kwargs):
        """Blowfish-private k-means over columns of this frame; see :func:`blowfish_nb.kmeans.kmeans`."""
        from .kmeans import kmeans

        return kmeans(self._df, columns, k, **kwargs)

    def session(self, budget: float, **kwargs):
        """A budgeted session over this frame; see :class:`blowfish_nb.accounting.Session`."""
        from .accounting import Session

        return Session(self._df, budget, **kwargs)
