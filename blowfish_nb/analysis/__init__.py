"""Analysis: expected error, mechanism selection, privacy audit."""

from .audit import AuditResult, audit
from .selection import choose_mechanism

__all__ = ["choose_mechanism", "audit", "AuditResult"]
