"""``df.blowfish``: one-call private releases from a pandas DataFrame.

The accessor keeps no state (pandas 3 makes a new accessor object on every
attribute access); every call goes through :func:`release`.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
import pandas as pd

from . import policy as policies
from ._validation import as_generator, check_epsilon
from .analysis import choose_mechanism
from .domain import Domain
from .exceptions import DomainError, InvalidParameterError, PolicyError
from .mechanisms import Laplace, MatrixMechanism, Ordered
from .policy import Policy
from .release import Release
from .workload import Workload, identity, prefix

__all__ = ["BlowfishAccessor", "release", "release_counts", "domain_for", "resolve_policy", "query_workload", "QUERIES", "POLICIES"]

QUERIES = ("histogram", "cumulative")
POLICIES = ("dp", "line", "threshold")
MECHANISMS = {"laplace": Laplace(), "ordered": Ordered(), "ordered-consistent": Ordered(consistent=True)}


def release(
    df: pd.DataFrame,
    query: str = "histogram",
    *,
    column: str,
    bins: int | list[float] | Domain | None = None,
    width: float | None = None,
    bounds: tuple[float, float] | None = None,
    policy: str | Policy = "dp",
    theta: int | None = None,
    epsilon: float,
    mechanism: str | MatrixMechanism = "auto",
    rng: None | int | np.random.Generator = None,
) -> Release:
    """Release a histogram or cumulative histogram of one column under a Blowfish policy.

    Parameters
    ----------
    df : pandas.DataFrame
        Row-level data.
    query : {"histogram", "cumulative"}
        The query template.
    column : str
        The column to bin.
    bins, width, bounds
        Binning, as in :meth:`Domain.from_column`; ``bins`` may also be a
        ready :class:`Domain`. Public bounds stored in
        ``df.attrs["public_bounds"][column]`` are used when ``bounds`` is not given.
    policy : {"dp", "line", "threshold"} or Policy
        Which values must stay indistinguishable; ``"threshold"`` needs ``theta`` (in bins).
    epsilon : float
        Privacy budget, > 0.
    mechanism : "auto", "laplace", "ordered", "ordered-consistent" or a mechanism
        ``"auto"`` picks the lowest analytic expected error.
    rng : None, int or numpy.random.Generator
        Source of randomness; an int seed is recorded in the provenance.

    Returns
    -------
    Release

    Examples
    --------
    >>> from blowfish_nb import datasets
    >>> df = datasets.salaries(n=1000, seed=1)
    >>> r = df.blowfish.release("cumulative", column="age", bins=62, policy="line", epsilon=1.0, rng=0)
    >>> r.mechanism, round(r.expected_error, 4)  # noisy prefix sums; n is public under G^1 (no ⊥)
    ('Transformed+Laplace', 1.9677)
    """
    _check_query(query)
    epsilon = check_epsilon(epsilon)
    as_generator(rng)  # validate before the pass over the rows; the seed itself goes on
    domain = domain_for(df, column, bins, width, bounds)
    pol = resolve_policy(policy, domain, theta)
    return release_counts(domain.histogram(df), domain, query, pol, epsilon, mechanism, rng)


def release_counts(
    x: np.ndarray,
    domain: Domain,
    query: str,
    policy: Policy,
    epsilon: float,
    mechanism: str | MatrixMechanism = "auto",
    rng: None | int | np.random.Generator = None,
) -> Release:
    """Release ``query`` from a histogram ``x`` already counted over ``domain``.

    This is everything :func:`release` does after its one pass over the rows;
    interactive views call it to re-release without re-binning.

    Examples
    --------
    >>> d = Domain.from_column(pd.Series([1.0], name="v"), bins=4, bounds=(0, 4))
    >>> r = release_counts(np.array([5, 0, 2, 1]), d, "histogram", policies.dp(d), 1.0, rng=0)
    >>> r.mechanism, r.expected_error, len(r.answers)
    ('Laplace', 2.0, 4)
    """
    _check_query(query)
    epsilon = check_epsilon(epsilon)
    generator = as_generator(rng)
    W = query_workload(query, domain.size)
    mech, table = _mechanism(mechanism, W, policy, epsilon)
    answers = mech.release(x, W, policy, epsilon, rng=generator)
    return Release(
        answers=pd.Series(answers, index=domain.labels, name=f"noisy {query}"),
        query=query,
        epsilon=epsilon,
        policy=policy,
        mechanism=mech.name,
        expected_error=mech.expected_error(W, policy, epsilon),
        provenance={
            "seed": int(rng) if isinstance(rng, Integral) else None,
            "mechanism": repr(mech),
            "sensitivity": mech.sensitivity(policy),
            "noise_scale": mech.noise_scale(policy, epsilon),
            "candidates": table,
        },
    )


def _check_query(query) -> None:
    if query not in QUERIES:
        raise InvalidParameterError(f"query must be one of {QUERIES}, got {query!r}")


def resolve_policy(policy: str | Policy, domain: Domain, theta: int | None = None) -> Policy:
    """A Policy from a shorthand name (``"dp"``, ``"line"``, ``"threshold"`` + θ) or a Policy.

    Examples
    --------
    >>> d = Domain.from_column(pd.Series([1.0], name="v"), bins=10, bounds=(0, 10))
    >>> resolve_policy("threshold", d, theta=3).summary()
    'threshold θ=3 on v (10 cells)'
    """
    if isinstance(policy, Policy):
        if policy.domain.size != domain.size:
            raise PolicyError(
                f"policy is over {policy.domain.size} cells but the query's domain has {domain.size}"
            )
        return policy
    if policy == "dp":
        return policies.dp(domain)
    if policy == "line":
        return policies.line(domain)
    if policy == "threshold":
        if theta is None:
            raise InvalidParameterError("policy='threshold' needs theta=<bins>, got theta=None")
        return policies.threshold(domain, theta)
    raise PolicyError(f"policy must be one of {POLICIES} or a Policy, got {policy!r}")


def query_workload(query: str, k: int) -> Workload:
    """The workload operator of a query template over k cells."""
    _check_query(query)
    return identity(k) if query == "histogram" else prefix(k)


def domain_for(df: pd.DataFrame, column: str, bins=None, width=None, bounds=None) -> Domain:
    """The one-column Domain a release over ``df[column]`` uses (public bounds from ``df.attrs``)."""
    if not isinstance(df, pd.DataFrame):
        raise DomainError(f"data must be a pandas DataFrame, got {type(df).__name__}")
    if column not in df.columns:
        raise DomainError(f"column {column!r} is not in the data; available columns: {list(df.columns)!r}")
    if isinstance(bins, Domain):
        return bins
    edges_given = bins is not None and np.ndim(bins) == 1
    if bounds is None and not edges_given:
        bounds = df.attrs.get("public_bounds", {}).get(column)
    return Domain.from_column(df[column], bins, width=width, bounds=bounds, name=column)


def _mechanism(mechanism, W, pol, epsilon):
    if isinstance(mechanism, MatrixMechanism):
        return mechanism, None
    if mechanism == "auto":
        return choose_mechanism(W, pol, epsilon)
    if isinstance(mechanism, str) and mechanism.lower() in MECHANISMS:
        return MECHANISMS[mechanism.lower()], None
    raise InvalidParameterError(
        f"mechanism must be 'auto', one of {sorted(MECHANISMS)} or a mechanism object, got {mechanism!r}"
    )


@pd.api.extensions.register_dataframe_accessor("blowfish")
class BlowfishAccessor:
    """``df.blowfish.release(...)``: see :func:`blowfish_nb.accessor.release`."""

    def __init__(self, df: pd.DataFrame):
        self._df = df

    def release(self, query: str = "histogram", **kwargs) -> Release:
        """Release ``query`` over a column of this frame; see :func:`blowfish_nb.accessor.release`."""
        return release(self._df, query, **kwargs)
