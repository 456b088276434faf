"""The Release: noisy answers with everything needed to read them honestly."""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .exceptions import InvalidParameterError
from .policy import Policy

__all__ = ["Release", "COUNT_QUERIES"]

#: the query templates whose true answers are counts (never negative): their intervals are clipped at 0
COUNT_QUERIES = frozenset({"histogram", "cumulative", "range", "marginal"})


@dataclass(frozen=True)
class Release:
    """The result of one private release.

    It holds only what may be shown to an analyst: the noisy answers, the
    privacy statement and the error figures — never the true answers.

    Attributes
    ----------
    answers : pandas.Series
        Noisy answers indexed by bin labels (a MultiIndex on several columns) or range labels.
    query : str
        The query template (``"histogram"``, ``"cumulative"``, ``"range"``, ``"marginal"``, ``"workload"``).
    epsilon : float
        Privacy budget spent.
    policy : Policy
        The policy graph the release protects.
    mechanism : str
        Name of the mechanism used.
    expected_error : float or None
        Expected squared error per answer (analytic; for consistent
        post-processing the figure without it; None for data-dependent mechanisms).
    columns : tuple of str
        The columns the domain bins.
    accuracy : (alpha, beta) or None
        The accuracy the ε was chosen for, when it was.
    provenance : dict
        Seed (when one was given), sensitivity, projected size, candidate table.
    """

    answers: pd.Series
    query: str
    epsilon: float
    policy: Policy
    mechanism: str
    expected_error: float | None
    columns: tuple[str, ...] = ()
    accuracy: tuple[float, float] | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    error_sampler: Callable[..., np.ndarray] | None = field(default=None, repr=False, compare=False)

    @property
    def stderr(self) -> float | None:
        """Root of the expected squared error per answer."""
        return None if self.expected_error is None else math.sqrt(self.expected_error)

    @property
    def policy_summary(self) -> str:
        """The policy in one line."""
        return self.policy.summary()

    def confidence_interval(self, level: float = 0.95, draws: int = 4000) -> pd.DataFrame:
        """Per-answer intervals that hold the true answer with probability ``level`` (each answer alone).

        The error of a linear release is public noise pushed through the
        mechanism's map; its per-answer quantiles come from ``draws``
        simulated releases of that noise (no data involved). For counts
        (every query template but ``"workload"``) the interval is clipped at
        0: a true count is never negative, so an interval that held it still
        does after the clip (coverage is kept), and the clip reads only the
        released answers (post-processing, no budget).

        Raises
        ------
        InvalidParameterError
            For a bad level, or a data-dependent release (no public error law).

        Examples
        --------
        >>> import pandas as pd
        >>> from blowfish_nb import datasets
        >>> r = datasets.salaries(200, seed=1).blowfish.release("histogram", "age", bins=31, bounds=(18, 80),
        ...                                                     epsilon=0.1, rng=0)
        >>> ci = r.confidence_interval()
        >>> bool((ci["lower"] >= 0).all() and (ci["lower"] <= ci["upper"]).all())
        True
        """
        if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
            raise InvalidParameterError(f"level must lie strictly between 0 and 1, got {level!r}")
        if self.error_sampler is None:
            raise InvalidParameterError(
                f"{self.mechanism} adapts to the data: its error has no public distribution to build intervals from"
            )
        half = np.quantile(np.abs(self.error_sampler(draws)), level, axis=0)
        a = self.answers.to_numpy()
        lower, upper = a - half, a + half
        if self.query in COUNT_QUERIES:  # true counts are ≥ 0 (see above)
            lower, upper = np.maximum(lower, 0.0), np.maximum(upper, 0.0)
        return pd.DataFrame({"answer": a, "lower": lower, "upper": upper}, index=self.answers.index)

    def to_frame(self, level: float = 0.95) -> pd.DataFrame:
        """Answers with their intervals (when the mechanism has a public error law)."""
        if self.error_sampler is None:
            return self.answers.to_frame("answer")
        return self.confidence_interval(level)

    def plot(self, level: float = 0.95):
        """A bqplot bar chart of the noisy answers with their intervals (bqplot is imported here, not before)."""
        import bqplot
        import ipywidgets as w

        labels = [str(i) for i in self.answers.index]
        xs, ys = bqplot.OrdinalScale(), bqplot.LinearScale()
        marks = [bqplot.Bars(x=labels, y=self.answers.to_numpy(), scales={"x": xs, "y": ys}, colors=["#3b6ea5"])]
        if self.error_sampler is not None:
            ci = self.confidence_interval(level)
            marks.append(bqplot.Lines(x=labels, y=np.vstack([ci["lower"], ci["upper"]]), scales={"x": xs, "y": ys},
                                      colors=["#c0504d", "#c0504d"], line_style="dashed"))
        return bqplot.Figure(
            marks=marks, title=f"{self.query} · {self.mechanism} · ε = {self.epsilon:.3g}",
            axes=[bqplot.Axis(scale=xs, tick_rotate=-45, num_ticks=min(len(labels), 16)),
                  bqplot.Axis(scale=ys, orientation="vertical", tick_format=".3s")],
            layout=w.Layout(width="100%", height="320px"),
        )

    def range_answer(self, lo: int, hi: int) -> float:
        """The noisy count of bins ``lo`` … ``hi`` (inclusive bin numbers), derived from this release.

        A histogram release gives the sum of its answers over the range, a
        cumulative one the difference of two prefix answers, C[hi] − C[lo − 1]
        (C[hi] alone when ``lo`` is 0). Both are post-processing of the
        released answers: no extra budget, the same (ε, G) guarantee.
        :func:`blowfish_nb.units.range_label` names the range in data units.

        Parameters
        ----------
        lo, hi : int
            First and last bin of the range, 0 ≤ lo ≤ hi < number of bins.

        Returns
        -------
        float

        Raises
        ------
        InvalidParameterError
            For a release the range is not derivable from (queries other than
            the histogram and the cumulative histogram, or several columns), or
            bins outside the domain.

        Examples
        --------
        >>> from blowfish_nb import Domain, policy
        >>> line = policy.line(Domain.grid(4))
        >>> Release(pd.Series([1.0, 2.0, 4.0, 8.0]), "histogram", 1.0, line, "Laplace", 2.0).range_answer(1, 2)
        6.0
        >>> Release(pd.Series([1.0, 3.0, 7.0, 15.0]), "cumulative", 1.0, line, "Ordered", 2.0).range_answer(1, 2)
        6.0
        """
        domain = self.policy.domain
        if self.query not in ("histogram", "cumulative") or len(domain.attributes) != 1:
            raise InvalidParameterError(
                f"range_answer needs a histogram or cumulative release over one column; this release answers "
                f"query={self.query!r} over {len(domain.attributes)} column(s), from which a range's count is not "
                "determined")
        k = len(self.answers)
        for name, value in (("lo", lo), ("hi", hi)):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not 0 <= value < k:
                raise InvalidParameterError(f"{name} must be a bin number from 0 to {k - 1}, got {value!r}")
        if lo > hi:
            raise InvalidParameterError(f"lo must not exceed hi, got lo={lo!r}, hi={hi!r}")
        a = self.answers.to_numpy(dtype=float)
        if self.query == "histogram":
            return float(a[lo : hi + 1].sum())
        return float(a[hi] - (a[lo - 1] if lo > 0 else 0.0))

    def privacy_statement(self) -> str:
        """The guarantee in words — or, for a policy with no edge, that there is none.

        Examples
        --------
        >>> import warnings
        >>> from blowfish_nb import Domain, policy
        >>> answers = pd.Series([3.0, 1.0])
        >>> Release(answers, "histogram", 0.5, policy.line(Domain.grid(2)), "Laplace", 8.0).privacy_statement()[:44]
        '(0.5, G)-Blowfish private, G = line on x0 (2'
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     empty = policy.partition(Domain.grid(2), [])
        >>> Release(answers, "histogram", 0.5, empty, "Laplace", 0.0).privacy_statement()[:38]
        'No privacy protection: G = partition b'
        """
        p = self.policy
        if p.protects_nothing:
            return (
                f"No privacy protection: G = {p.summary()} has no edge, so no pair of values is kept "
                f"indistinguishable and the answers may be exact; the ε = {self.epsilon:g} spent guarantees nothing."
            )
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
        public_n += _unprotected_text(p)
        source = str(self.provenance.get("noise", ""))
        replayable = (
            f" Caution: {source}; the guarantee holds only against whoever does not hold it."
            if source and source != "OS entropy" else ""
        )
        return (
            f"({self.epsilon:g}, G)-Blowfish private, G = {p.summary()}: {what} changes the "
            f"probability of any output by a factor of at most e^{self.epsilon:g} ≈ {math.exp(self.epsilon):.3g}; "
            f"values d edges apart are protected at e^({self.epsilon:g}·d).{public_n}{replayable}"
        )

    def _error_text(self) -> str:
        if self.expected_error is None:
            return "data-dependent error"
        return f"expected squared error per answer {self.expected_error:.4g} (± {self.stderr:.3g})"

    def _repr_html_(self) -> str:
        acc = "" if self.accuracy is None else (
            f" · chosen so that all answers are within {self.accuracy[0]:g} of the truth "
            f"with probability ≥ {1 - self.accuracy[1]:g}")
        head = html.escape(f"{self.query} release · {self.mechanism} · ε = {self.epsilon:.4g} · {self._error_text()}{acc}")
        table = self.answers.to_frame("noisy answer").to_html(float_format=lambda v: f"{v:.2f}", max_rows=20)
        return (
            f'<div class="blowfish-release"><b>{head}</b>'
            f"<p>{html.escape(self.privacy_statement())}</p>{table}</div>"
        )

    def __repr__(self) -> str:
        unprotected = " (protects nothing)" if self.policy.protects_nothing else ""
        return (
            f"<Release {self.query} · {self.mechanism} · ε={self.epsilon:g} · {self.policy.summary()}{unprotected} · "
            f"{len(self.answers)} answers, {self._error_text()}>"
        )


def _unprotected_text(p) -> str:
    """What a disconnected graph leaves unprotected (partition and drawn graphs, where it happens)."""
    if p.family not in ("partition", "custom"):
        return ""
    alone = p.isolated_cells()
    parts = int(np.unique(p.component_labels()).size)  # components among the cells (⊥ joins those it touches)
    text = ""
    if parts - alone.size > 1:
        text += (" Values in different blocks (connected components of G) are not protected from each other:"
                 " which block a record is in may be learned.")
    if alone.size:
        text += (f" {alone.size} of {p.domain.size} cells are joined to no other value (cells in no block):"
                 " their counts may be released exactly.")
    return text
