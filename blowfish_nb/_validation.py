"""Checks done once, at the public boundary (style: inner code trusts its inputs)."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from .exceptions import InvalidParameterError

__all__ = ["check_epsilon", "check_theta", "check_number", "is_number", "as_generator"]


def check_epsilon(epsilon: object, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float, or raise if it is not a positive finite number.

    Fractions and Decimals are accepted and rounded to the nearest float; a
    number too large for a float is refused, named by its size.

    Examples
    --------
    >>> from decimal import Decimal
    >>> from fractions import Fraction
    >>> check_epsilon(Fraction(1, 2)), check_epsilon(Decimal("0.25"))
    (0.5, 0.25)
    """
    value = as_float(epsilon)
    if value is None or not (math.isfinite(value) and value > 0):
        raise InvalidParameterError(f"{name} must be a positive finite number, got {short_repr(epsilon)}")
    return value


def as_float(value: object) -> float | None:
    """``value`` as the nearest float (inf when it is too large for one); None unless it is a real number.

    Bools and text are not numbers here; Decimals are (NaN and infinite Decimals give NaN and inf).
    """
    from decimal import Decimal

    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Real, Decimal)):
        return None
    if isinstance(value, Decimal) and not value.is_finite():
        return math.nan if value.is_nan() else float(value)
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def short_repr(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters (a number of 5,000 digits is named by its length)."""
    if isinstance(value, Integral) and not isinstance(value, bool) and abs(int(value)).bit_length() > 190:
        return f"an integer of {math.floor(math.log10(abs(int(value)))) + 1:,} digits"
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def is_number(value: object) -> bool:
    """Whether ``value`` is a real number that is not a bool (``True`` is an int to Python, never a number here).

    Examples
    --------
    >>> is_number(3), is_number(2.5), is_number(np.float32(1)), is_number(True), is_number(np.True_), is_number("1")
    (True, True, True, False, False, False)
    """
    return isinstance(value, Real) and not isinstance(value, (bool, np.bool_))


def check_number(value: object, name: str) -> float:
    """Return ``value`` as a float, or raise unless it is a finite real number (not a bool, not text).

    Examples
    --------
    >>> check_number(3, "lo")
    3.0
    >>> check_number(True, "lo")
    Traceback (most recent call last):
    ...
    blowfish_nb.exceptions.InvalidParameterError: lo must be a finite number (not a bool or text), got True
    """
    if not is_number(value) or not math.isfinite(float(value)):
        raise InvalidParameterError(f"{name} must be a finite number (not a bool or text), got {value!r}")
    return float(value)


def check_theta(theta: object, name: str = "theta") -> int:
    """Return ``theta`` as an int, or raise unless it is a whole number ≥ 1."""
    if isinstance(theta, bool):
        raise InvalidParameterError(f"{name} must be a whole number >= 1, got {theta!r}")
    if isinstance(theta, Integral):
        value = int(theta)
    elif isinstance(theta, Real) and math.isfinite(float(theta)) and float(theta).is_integer():
        value = int(theta)
    else:
        raise InvalidParameterError(f"{name} must be a whole number >= 1, got {theta!r}")
    if value < 1:
        raise InvalidParameterError(f"{name} must be a whole number >= 1, got {theta!r}")
    return value


def as_generator(rng: None | int | np.random.Generator, name: str = "rng") -> np.random.Generator:
    """Normalise ``rng`` (None, a seed, or a Generator) to a ``numpy.random.Generator``.

    The global NumPy random state is never used.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, Integral) and not isinstance(rng, bool) and int(rng) >= 0:
        return np.random.default_rng(int(rng))
    raise InvalidParameterError(
        f"{name} must be None, a non-negative integer seed or a numpy.random.Generator, got {rng!r}"
    )
