"""Analysis: expected error, mechanism selection."""

from .selection import choose_mechanism

__all__ = ["choose_mechanism"]
