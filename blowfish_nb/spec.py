"""Parsing what a user typed: columns, bins and policy specs → a Domain and a Policy.

Every front end (``df.blowfish``, :class:`~blowfish_nb.accounting.Session`,
the analyst service, k-means, the widgets) reads its arguments here, so one
spelling means one thing everywhere: a policy is a shorthand name, a
``(name, params)`` pair such as ``("threshold", {"theta": 3})`` (or
``("threshold", 3)``), a Policy, or a dict column → any of these.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd

from . import policy as policies
from .domain import CELL_LIMIT, Domain, is_categorical_spec
from .exceptions import DomainError, InvalidParameterError, PolicyError
from .policy import Policy
from .policy.shorthand import SHORTHANDS, from_spec, parameters_of

__all__ = ["POLICIES", "POLICY_PARAMS", "CELL_LIMIT", "check_policy_params", "resolve_policy", "column_policy",
           "domain_for", "frame_schema", "check_frame", "columns_of"]

#: the policy shorthands (the registry of :mod:`blowfish_nb.policy.shorthand`)
POLICIES = tuple(SHORTHANDS)
#: the parameters each policy name takes; any other one given with it is refused, never ignored
POLICY_PARAMS = {name: s.params for name, s in SHORTHANDS.items() if s.params}
_PARAM_NAMES = ("theta", "within", "blocks", "attributes")


def check_policy_params(policy, *, theta=None, blocks=None, attributes=None, within=None) -> None:
    """Refuse a policy parameter that ``policy`` does not take: given, it is never silently ignored.

    ``theta`` goes with ``"threshold"`` and ``"grid"``, ``blocks`` with
    ``"partition"``, ``attributes`` with ``"sensitive_attributes"``; a Policy
    object, a ``(name, params)`` pair or a dict of per-column policies takes
    none of them (an unknown name is left to :func:`resolve_policy`, which names it).

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
    takes = parameters_of(policy) if isinstance(policy, str) else ()
    for name, value in (("theta", theta), ("within", within), ("blocks", blocks), ("attributes", attributes)):
        if value is not None and name not in takes:
            users = " and ".join(p for p, params in POLICY_PARAMS.items() if name in params)
            what = (f"policy={policy!r}" if isinstance(policy, str)
                    else "a dict of per-column policies (give it per column, as (name, {...}))"
                    if isinstance(policy, Mapping)
                    else f"policy={policy!r} (give it inside the pair)" if isinstance(policy, tuple)
                    else "a Policy object (its parameters are already fixed)")
            raise InvalidParameterError(
                f"{name}={value!r} is not a parameter of {what} (only {users} take{'s' if ' and ' not in users else ''} "
                f"{name}); drop it or choose a policy that uses it")


def _pair(spec: tuple, where: str) -> tuple[str, dict]:
    """``(name, params)`` with params a dict (a bare value is θ), unknown parameter names refused."""
    name, params = spec
    if not isinstance(params, Mapping):
        params = {"theta": params}
    unknown = [k for k in params if k not in _PARAM_NAMES]
    if unknown:
        raise InvalidParameterError(
            f"the policy {where}has an unknown parameter {unknown[0]!r}; parameters are theta (or within, θ in the "
            f"column's units), blocks and attributes, got {spec!r}")
    check_policy_params(name, **params)
    return name, dict(params)


def resolve_policy(policy, domain: Domain, *, theta=None, blocks=None, attributes=None) -> Policy:
    """A Policy from a shorthand name, a ``(name, params)`` pair, a dict column → policy, or a Policy.

    Parameters the named family does not take are not looked at here (front
    ends pass their controls' values along); :func:`check_policy_params`
    refuses them where the user typed them. A policy that protects no pair of
    values warns with :class:`PrivacyLeakWarning` when built.

    Examples
    --------
    >>> d = Domain.from_column(pd.Series([1.0], name="v"), bins=10, bounds=(0, 10))
    >>> resolve_policy("threshold", d, theta=3).summary()
    'threshold θ=3 on v (10 cells)'
    >>> resolve_policy(("threshold", {"theta": 3}), d).summary()
    'threshold θ=3 on v (10 cells)'
    """
    if isinstance(policy, Policy):
        if policy.domain.shape != domain.shape:
            raise PolicyError(
                f"policy is over {policy.domain.size} cells {policy.domain.shape} but the query's domain has "
                f"{domain.size} {domain.shape}"
            )
        return policy
    if isinstance(policy, tuple) and len(policy) == 2 and isinstance(policy[0], str):
        name, params = _pair(policy, "")
        return from_spec(name, domain, **params)
    if isinstance(policy, Mapping):
        if set(policy) != set(domain.names):
            raise PolicyError(f"a policy dict needs one entry per column {list(domain.names)}, got {list(policy)}")
        parts = {a.name: _one_column(policy[a.name], Domain([a]), a.name) for a in domain.attributes}
        return parts[domain.names[0]] if len(parts) == 1 else policies.compose(domain, parts)
    if not isinstance(policy, str):
        raise PolicyError(f"policy must be one of {POLICIES}, a dict column -> policy, or a Policy; got {policy!r}")
    return from_spec(policy, domain, theta=theta, blocks=blocks, attributes=attributes)


def _one_column(spec, sub: Domain, column: str) -> Policy:
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        name, params = _pair(spec, f"for column {column!r} ")
        return from_spec(name, sub, **params)
    if isinstance(spec, Mapping):
        raise PolicyError(f"the policy for column {column!r} must be a name, (name, params) or a Policy, got {spec!r}")
    return resolve_policy(spec, sub)


def column_policy(spec, attribute, *, refuse_edgeless: bool = True) -> Policy:
    """The policy of one column from a spec (or a dict column → spec), as a curator declares it.

    A column policy with no edge protects no pair of values (releases under
    it would be exact) and is refused.

    Examples
    --------
    >>> d = Domain.from_column(pd.Series([1.0], name="v"), bins=10, bounds=(0, 10))
    >>> column_policy({"v": ("threshold", 2)}, d.attributes[0]).summary()
    'threshold θ=2 on v (10 cells)'
    """
    name = attribute.name
    if isinstance(spec, Mapping):
        if name not in spec:
            raise PolicyError(f"policy has no entry for column {name!r}; give one per column of bins")
        spec = spec[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pol = _one_column(spec, Domain([attribute]), name)
    if refuse_edgeless and pol.edge_count() == 0:
        raise PolicyError(
            f"policy for column {name!r} ({pol.summary()}) has no edge: it protects no pair of values and "
            "releases under it would be exact; give blocks of two or more bins, or another policy"
        )
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return pol


def domain_for(df: pd.DataFrame, columns, bins=None, width=None, bounds=None, *, lazy: bool = False) -> Domain:
    """The Domain a release over ``df[columns]`` uses (public bounds from ``df.attrs``).

    ``lazy``: ``df`` is only the schema of data read elsewhere (Dask), so
    nothing may be inferred from its values: bounds and categories must be given.

    Examples
    --------
    >>> domain_for(pd.DataFrame({"v": [1.0, 2.0]}), "v", bins=4, bounds=(0, 4)).shape
    (4,)
    """
    if not lazy:
        check_frame(df)
    cols = columns_of(df, columns, None)
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


def frame_schema(data) -> tuple[pd.DataFrame, bool]:
    """(a pandas frame to read columns and dtypes from, whether the rows live elsewhere: Dask).

    Examples
    --------
    >>> frame_schema(pd.DataFrame({"v": [1]}))[1]
    False
    """
    if isinstance(data, pd.DataFrame):
        check_frame(data)
        return data, False
    meta = getattr(data, "_meta", None)
    if isinstance(meta, pd.DataFrame) and hasattr(data, "map_partitions"):
        return meta, True
    raise DomainError(f"data must be a pandas or Dask DataFrame, got {type(data).__name__}")


def check_frame(df) -> None:
    """Refuse anything but a non-empty pandas DataFrame."""
    if not isinstance(df, pd.DataFrame):
        raise DomainError(f"data must be a pandas DataFrame, got {type(df).__name__}")
    if len(df) == 0:
        raise DomainError("the data frame is empty: there is nothing to release")


def columns_of(df, columns, column=None) -> list[str]:
    """The distinct column names asked for (``columns`` or its alias ``column``), each present once in ``df``."""
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
        if not df.columns.is_unique and (df.columns == c).sum() > 1:  # is_unique is cached by pandas
            raise DomainError(f"column {c!r} appears more than once in the data; give the columns distinct names")
    return cols
