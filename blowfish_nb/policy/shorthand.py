"""Policy shorthands: a family's name and its parameters → the Policy over a domain.

One registry serves every front end (the accessor, sessions, the analyst
service, the widgets): adding a policy family is its module plus one entry
in :data:`SHORTHANDS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._validation import check_theta
from ..domain import Domain
from ..exceptions import InvalidParameterError, PolicyError
from .attribute import attribute, sensitive_attributes
from .base import Policy
from .bounded import bounded
from .partition import partition
from .threshold import grid, line, threshold
from .unbounded import dp

__all__ = ["Shorthand", "SHORTHANDS", "from_spec", "parameters_of", "unknown_policy_message", "MEANINGS"]


@dataclass(frozen=True)
class Shorthand:
    """One named policy family: its builder, the parameters it takes, and their defaults."""

    build: Callable[..., Policy]
    params: tuple[str, ...] = ()
    defaults: dict[str, Any] = field(default_factory=dict)
    #: how each required parameter is written, for the error that asks for it
    hints: dict[str, str] = field(default_factory=dict)
    #: parameters of which exactly one is given (the others stay None), e.g. θ in bins or in the column's units
    one_of: tuple[str, ...] = ()


def _threshold(domain: Domain, theta=None, within=None) -> Policy:
    if within is not None:
        theta = theta_for(domain, within)
    return threshold(domain, _within_span(domain, check_theta(theta)))


def theta_for(domain: Domain, within) -> int:
    """θ in bins for "values within ``within`` of each other" in the column's units, when that is whole bins.

    Exact: ``within`` must be a whole number of the column's (equal) bin
    widths, up to float rounding of the edges; anything else is refused with
    the nearest whole-bin distances, never rounded silently.

    Examples
    --------
    >>> import pandas as pd
    >>> d = Domain.from_column(pd.Series([1.0], name="salary"), bins=50, bounds=(0, 250_000))
    >>> theta_for(d, 10_000)
    2
    >>> theta_for(d, 12_000)
    Traceback (most recent call last):
    ...
    blowfish_nb.exceptions.InvalidParameterError: within=12,000 is 2.4 bins of salary (bins 5,000 wide): a threshold counts whole bins; use within=10,000 (θ=2) or within=15,000 (θ=3), or bins whose width divides 12,000
    """
    from ..domain import OrderedAttribute
    from ..units import format_edge

    if isinstance(within, bool) or not isinstance(within, (int, float)) or not within > 0:
        raise InvalidParameterError(f"within must be a positive distance in the column's units, got {within!r}")
    if len(domain.attributes) != 1 or not isinstance(domain.attributes[0], OrderedAttribute):
        raise InvalidParameterError(
            f"within= states θ in one numeric column's units; the domain has {list(domain.names)}: give within per "
            "column, e.g. policy={column: ('threshold', {'within': ...})}")
    attr = domain.attributes[0]
    width = attr._width
    if width is None:
        raise InvalidParameterError(
            f"within={within!r}: the bins of {attr.name!r} are not of equal width, so a distance in its units is no "
            "fixed number of bins; give theta= in bins")
    bins = within / width
    theta = round(bins)
    if theta >= 1 and abs(bins - theta) <= 1e-9 * max(bins, 1.0):
        return int(theta)
    fmt = lambda v: format_edge(attr, v)  # noqa: E731
    lower, upper = max(math.floor(bins), 1), max(math.floor(bins), 1) + (1 if math.floor(bins) >= 1 else 0)
    options = " or ".join(f"within={fmt(t * width)} (θ={t})" for t in dict.fromkeys((lower, upper)))
    raise InvalidParameterError(
        f"within={fmt(within)} is {bins:.3g} bins of {attr.name} (bins {fmt(width)} wide): a threshold counts whole "
        f"bins; use {options}, or bins whose width divides {fmt(within)}")


def _grid(domain: Domain, theta) -> Policy:
    return grid(domain, _within_span(domain, check_theta(theta)))


def _within_span(domain: Domain, theta: int) -> int:
    """θ no larger than the farthest two cells are apart (L1, in bins): beyond it θ means nothing more."""
    span = sum(n - 1 for n in domain.shape)
    if theta > span:
        raise InvalidParameterError(
            f"theta={theta} is larger than the domain: theta counts bins, and the farthest two cells of "
            f"{' × '.join(domain.names)} ({' × '.join(str(n) for n in domain.shape)} bins) are {span} apart; "
            f"theta={span} already protects every pair (policy='bounded'); give theta ≤ {span}, or more bins")
    return theta


def _sensitive(domain: Domain, attributes) -> Policy:
    names = [attributes] if isinstance(attributes, str) else list(attributes)
    unknown = [a for a in names if a not in domain.names]
    if unknown:
        raise PolicyError(f"attributes names an unknown column {unknown[0]!r}; columns: {list(domain.names)}")
    return sensitive_attributes(domain, attributes)


SHORTHANDS: dict[str, Shorthand] = {
    "dp": Shorthand(dp),
    "bounded": Shorthand(bounded),
    "line": Shorthand(line),
    "threshold": Shorthand(_threshold, ("theta", "within"),
                           hints={"theta": "theta=<bins>", "within": "within=<distance in the column's units>"},
                           one_of=("theta", "within")),
    "grid": Shorthand(_grid, ("theta",), defaults={"theta": 1}),
    "partition": Shorthand(partition, ("blocks",), hints={"blocks": "blocks=[[bin, ...], ...]"}),
    "attribute": Shorthand(attribute),
    "sensitive_attributes": Shorthand(_sensitive, ("attributes",), hints={"attributes": "attributes=[column, ...]"}),
}


#: one line per shorthand, for the message that refuses an unknown name
MEANINGS = {
    "dp": "whether any one record is present at all is hidden (standard, unbounded DP)",
    "bounded": "any record's value is hidden among all values (bounded DP)",
    "line": "neighbouring bins are protected",
    "threshold": "bins within theta of each other are protected (theta counts bins; or within=<distance> in "
                 "the column's units)",
    "grid": "threshold over several columns (cells within theta, L1)",
    "partition": "values inside each block of bins are protected",
    "attribute": "several columns: records differing in one column (any values of it) are protected",
    "sensitive_attributes": "as attribute, for the named columns only (attributes=[...])",
}


def unknown_policy_message(name) -> str:
    """The refusal of an unknown policy name: the closest known name first, then each one with its meaning.

    Examples
    --------
    >>> unknown_policy_message("treshold").splitlines()[0]
    "unknown policy 'treshold': did you mean 'threshold'?"
    """
    import difflib

    close = difflib.get_close_matches(name, SHORTHANDS, n=1, cutoff=0.6) if isinstance(name, str) else []
    head = f"unknown policy {name!r}" + (f": did you mean {close[0]!r}?" if close else "")
    known = "\n".join(f"  {n!r}: {MEANINGS.get(n, '')}" for n in SHORTHANDS)
    return (f"{head}\npolicy must be one of these names, a (name, params) pair, a dict column -> policy, or a Policy:"
            f"\n{known}")


def parameters_of(name: str) -> tuple[str, ...]:
    """The parameters the family ``name`` takes (empty for an unknown name)."""
    entry = SHORTHANDS.get(name)
    return entry.params if entry else ()


def from_spec(name: str, domain: Domain, **params) -> Policy:
    """The policy ``name`` over ``domain`` with its parameters (absent ones take their defaults).

    Parameters the family does not take are not looked at (front ends pass
    their controls' values along); :func:`blowfish_nb.spec.check_policy_params`
    refuses them where the user typed them.

    Raises
    ------
    PolicyError
        An unknown name.
    InvalidParameterError
        A required parameter missing, or a bad value (naming it).

    Examples
    --------
    >>> d = Domain.from_column(__import__("pandas").Series([1.0], name="v"), bins=10, bounds=(0, 10))
    >>> from_spec("threshold", d, theta=3).summary()
    'threshold θ=3 on v (10 cells)'
    >>> from_spec("threshold", d)
    Traceback (most recent call last):
    ...
    blowfish_nb.exceptions.InvalidParameterError: policy='threshold' needs theta=<bins> or within=<distance in the column's units>, got theta=None
    """
    entry = SHORTHANDS.get(name) if isinstance(name, str) else None
    if entry is None:
        raise PolicyError(unknown_policy_message(name))
    args = {}
    if entry.one_of:
        given = [p for p in entry.one_of if params.get(p) is not None]
        if len(given) != 1:
            ask = " or ".join(entry.hints.get(p, p + "=...") for p in entry.one_of)
            raise InvalidParameterError(
                f"policy={name!r} needs {ask}" + (f", not both (got {', '.join(f'{p}={params[p]!r}' for p in given)})"
                                                  if given else f", got {entry.one_of[0]}=None"))
        return entry.build(domain, **{given[0]: params[given[0]]})
    for p in entry.params:
        value = params.get(p)
        if value is None:
            value = entry.defaults.get(p)
        if value is None:
            raise InvalidParameterError(f"policy={name!r} needs {entry.hints.get(p, p + '=...')}, got {p}=None")
        args[p] = value
    return entry.build(domain, **args)
