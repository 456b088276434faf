"""The Release: noisy answers with everything needed to read them honestly."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .policy import Policy

__all__ = ["Release"]


@dataclass(frozen=True)
class Release:
    """The result of one private release.

    It holds only what may be shown to an analyst: the noisy answers, the
    privacy statement and the error figures — never the true answers.

    Attributes
    ----------
    answers : pandas.Series
        Noisy answers indexed by bin labels.
    query : str
        The query template (``"histogram"``, ``"cumulative"``).
    epsilon : float
        Privacy budget spent.
    policy : Policy
        The policy graph the release protects.
    mechanism : str
        Name of the mechanism used.
    expected_error : float
        Expected squared error per answer (analytic; an upper bound for
        consistent post-processing).
    provenance : dict
        Seed (when one was given), sensitivity, noise scale, candidate table.
    """

    answers: pd.Series
    query: str
    epsilon: float
    policy: Policy
    mechanism: str
    expected_error: float
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def stderr(self) -> float:
        """Root of the expected squared error per answer."""
        return math.sqrt(self.expected_error)

    def privacy_statement(self) -> str:
        """The guarantee in words."""
        p = self.policy
        if p.has_bottom and p.family == "dp":
            what = "adding or removing any one person's record"
        elif p.family == "line":
            what = "moving one person's value to an adjacent bin"
        elif p.family == "threshold":
            what = f"moving one person's value by up to {p.params['theta']} bins"
        else:
            what = "moving one person's value along one edge of the policy graph"
        public_n = (
            "" if p.has_bottom else
            " Under this policy records never appear or vanish, so the number of records is treated as public."
        )
        return (
            f"({self.epsilon:g}, G)-Blowfish private, G = {p.summary()}: {what} changes the "
            f"probability of any output by a factor of at most e^{self.epsilon:g} ≈ {math.exp(self.epsilon):.3g}; "
            f"values d edges apart are protected at e^({self.epsilon:g}·d).{public_n}"
        )

    def _repr_html_(self) -> str:
        head = html.escape(
            f"{self.query} release · {self.mechanism} · ε = {self.epsilon:g} · "
            f"expected squared error per answer {self.expected_error:.4g} (± {self.stderr:.3g})"
        )
        table = self.answers.to_frame("noisy answer").to_html(float_format=lambda v: f"{v:.2f}", max_rows=20)
        return (
            f'<div class="blowfish-release"><b>{head}</b>'
            f"<p>{html.escape(self.privacy_statement())}</p>{table}</div>"
        )

    def __repr__(self) -> str:
        return (
            f"<Release {self.query} · {self.mechanism} · ε={self.epsilon:g} · {self.policy.summary()} · "
            f"{len(self.answers)} answers, expected error {self.expected_error:.4g}>"
        )
