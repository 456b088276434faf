"""Embedded, generated default data (no download needed)."""

from .salaries import salaries

__all__ = ["salaries"]
