"""Policy shorthands: a family's name and its parameters → the Policy over a domain.

One registry serves every front end (the accessor, sessions, the analyst
service, the widgets): adding a policy family is its module plus one entry
in :data:`SHORTHANDS`.
"""

from __future__ import annotations

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


def _threshold(domain: Domain, theta) -> Policy:
    return threshold(domain, _within_span(domain, check_theta(theta)))


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
    "threshold": Shorthand(_threshold, ("theta",), hints={"theta": "theta=<bins>"}),
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
    "threshold": "bins within theta of each other are protected (theta counts bins)",
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
    blowfish_nb.exceptions.InvalidParameterError: policy='threshold' needs theta=<bins>, got theta=None
    """
    entry = SHORTHANDS.get(name) if isinstance(name, str) else None
    if entry is None:
        raise PolicyError(unknown_policy_message(name))
    args = {}
    for p in entry.params:
        value = params.get(p)
        if value is None:
            value = entry.defaults.get(p)
        if value is None:
            raise InvalidParameterError(f"policy={name!r} needs {entry.hints.get(p, p + '=...')}, got {p}=None")
        args[p] = value
    return entry.build(domain, **args)
