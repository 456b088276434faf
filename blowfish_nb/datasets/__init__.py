"""Embedded, generated default data (no download needed), and the reference data when present."""

from .reference import adult, reference_data_dir
from .salaries import salaries

__all__ = ["salaries", "adult", "reference_data_dir"]
