"""Analysis: expected error, lower bounds, mechanism selection, privacy audit and violation hunter."""

from .audit import AuditResult, audit, log_ratio_lower_bound
from .hunt import HuntResult, Probe, answer_probe, hunt, l1_partition_probe, partition_probe
from .lower_bound import lower_bound
from .selection import choose_mechanism, default_candidates, expected_error

__all__ = ["choose_mechanism", "default_candidates", "expected_error", "lower_bound", "audit", "AuditResult",
           "log_ratio_lower_bound", "hunt", "HuntResult", "Probe", "answer_probe", "partition_probe",
           "l1_partition_probe"]
