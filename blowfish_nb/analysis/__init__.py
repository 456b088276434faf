"""Analysis: expected error, lower bounds, mechanism selection, privacy audit."""

from .audit import AuditResult, audit
from .lower_bound import lower_bound
from .selection import choose_mechanism, default_candidates, expected_error

__all__ = ["choose_mechanism", "default_candidates", "expected_error", "lower_bound", "audit", "AuditResult"]
