"""Exceptions and warnings of blowfish_nb.

Every error names the parameter (or column) at fault and the value that was
refused, so a notebook user can fix the call without reading our source.
"""

__all__ = [
    "BlowfishError",
    "InvalidParameterError",
    "DomainError",
    "PolicyError",
    "BudgetExceededError",
    "SessionError",
    "PrivacyLeakWarning",
    "DataDerivedBinsWarning",
]


class BlowfishError(Exception):
    """Base class of every error blowfish_nb raises on purpose."""


class InvalidParameterError(BlowfishError, ValueError):
    """A parameter has a value outside what it accepts (ε ≤ 0, θ < 1, ...)."""


class DomainError(BlowfishError, ValueError):
    """Data do not fit the domain: NaN, out-of-range values, wrong dtype, unknown column."""


class PolicyError(BlowfishError, ValueError):
    """A policy is unknown, malformed, or does not fit the domain it is used with."""


class BudgetExceededError(BlowfishError):
    """A release would spend more ε than the session has left (raised before any computation)."""


class SessionError(BlowfishError, ValueError):
    """A saved session does not fit the data or the file it is loaded from."""


class PrivacyLeakWarning(UserWarning):
    """Something public was derived from the private data (e.g. bins from its min/max)."""


class DataDerivedBinsWarning(PrivacyLeakWarning):
    """Bins or categories were read from the data (its min/max, the values present): public facts must not be."""
