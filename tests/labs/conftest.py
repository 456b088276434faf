"""Fixtures shared by the lab tests."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def pinned_entropy(monkeypatch):
    """``np.random.SeedSequence()`` with no entropy draws a fixed one (3): a hidden test's generators, whose seeds the
    autograder draws at grading time, are the same at every run of the project's tests. A right answer is refused
    by the grader's statistical tests about once in 10⁴ gradings (``tests/labs/noise_rates.py``); a test of the
    suite must not be (CI stop 36: the continuous Laplace difference refused once, "law")."""
    real = np.random.SeedSequence
    monkeypatch.setattr(np.random, "SeedSequence", lambda entropy=None, **kw: real(
        3 if entropy is None else entropy, **kw))
