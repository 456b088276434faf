"""Lab 3 — why ranges get orders of magnitude better: the Ordered mechanism, its error, the trade-off.

Every check computes the right answer with the library (the mechanisms' ``sensitivity`` and
``expected_error``), then :func:`~blowfish_nb.labs._check.judge` compares it with the student's and explains
a recognised mistake without giving the value away.

The lab's setting is public and fixed here so that the notebook and its checks agree: a histogram of
``K`` = 4096 ordered cells, ε = ``EPSILON``, and the range query ``RANGE`` (inclusive cell indices).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from ..datasets import reference_data_dir, salaries
from ..domain import Domain
from ..mechanisms import Laplace, Ordered
from ..policy import Policy, dp, line, threshold
from ..ranges import Ranges
from ._check import LabCheckFailed, Mistake, judge, unanswered

__all__ = ["K", "EPSILON", "RANGE", "THETA", "load_histogram", "range_query", "q1", "q2", "q3", "q4", "q5",
           "unanswered"]

#: cells of the histogram (DPBench's 1-D data sets have 4096)
K = 4096
#: the privacy budget of the lab's releases
EPSILON = 0.1
#: the range query [lo, hi] the lab asks about (cells, inclusive)
RANGE = (1024, 3071)
#: the larger θ of the trade-off question
THETA = 4
#: the DPBench histogram the lab uses when the reference data are present
DPBENCH = "INCOME.n4096"


def load_histogram(data_dir: str | os.PathLike | None = None) -> tuple[np.ndarray, str]:
    """The lab's histogram: DPBench INCOME (4096 cells) when the reference data are here, else salaries.

    Parameters
    ----------
    data_dir : path, optional
        The reference data folder (default: :func:`blowfish_nb.datasets.reference_data_dir`'s search).

    Returns
    -------
    (x, description) : the 4096 counts (int64) and one line saying where they came from.

    Examples
    --------
    >>> x, where = load_histogram()
    >>> x.shape, x.dtype.kind
    ((4096,), 'i')
    """
    try:
        folder = Path(data_dir) if data_dir is not None else reference_data_dir()
        x = np.load(folder / "dpbench" / f"{DPBENCH}.npy")
        if x.shape != (K,):
            raise ValueError(f"{DPBENCH} has shape {x.shape}")
        return x.astype(np.int64), f"DPBench {DPBENCH}: personal income, American Community Survey ({x.sum():,} people)"
    except (FileNotFoundError, ValueError):
        df = salaries(n=50_000, seed=3)
        domain = Domain.from_column(df["salary"], bins=K, bounds=(0.0, 250_000.0))
        x = domain.histogram(df[["salary"]])
        return x, (f"the reference data are not installed: using the embedded salaries ({len(df):,} people, "
                   f"salary in {K} bins)")


def range_query(k: int = K, span: tuple[int, int] = RANGE) -> Ranges:
    """The lab's range query as a workload of one row.

    Examples
    --------
    >>> range_query().shape
    (1, 4096)
    """
    return Ranges(k, [span[0]], [span[1]])


def _line() -> Policy:
    return line(Domain.grid(K))


def _dp() -> Policy:
    return dp(Domain.grid(K))


def _ordered_error(policy: Policy, epsilon: float = EPSILON) -> float:
    return Ordered().expected_error(range_query(), policy, epsilon)


def q1(answer) -> None:
    """Δ of the Ordered mechanism's strategy (the prefix sums) under the line policy.

    Examples
    --------
    >>> q1(Ordered().sensitivity(line(Domain.grid(K))))
    """
    expected = Ordered().sensitivity(_line())
    judge(answer, expected, question="q1 (Δ of the prefix sums under the line policy)", mistakes=[
        Mistake(Laplace().sensitivity(_line()),
                "that is the histogram's Δ (one count down, one up). A move to the next cell changes which "
                "prefix sums? Count only the prefixes that contain one end of the move but not the other."),
        Mistake(Ordered().sensitivity(_dp()),
                "that is Δ under differential privacy, where a record may appear or vanish anywhere. Under the "
                "line policy a record only moves to a neighbouring cell."),
    ], otherwise="write the prefix sums of a histogram before and after one record moves from a cell to the next one, "
                 "and add up how much they changed.")


def q2(answer) -> None:
    """The expected squared error of the Ordered mechanism for the range ``RANGE`` under the line policy at ε.

    Accepted within 1 % (the library's noise is the whole-number Laplace law, whose variance is 2b² − 1/6).

    Examples
    --------
    >>> q2(4 / EPSILON**2)
    """
    expected = _ordered_error(_line())
    b = Ordered().noise_scale(_line(), EPSILON)
    judge(answer, expected, question="q2 (expected squared error of the Ordered mechanism for the range)",
          rtol=0.01, mistakes=[
              Mistake(2 * b**2, "that is the error of one noisy prefix sum. A range that does not start at cell 0 "
                                "is the difference of two prefix sums, each with its own noise."),
              Mistake(math.sqrt(expected), "that is a standard deviation (a typical error), not a squared error."),
              Mistake(2 * b**2 * (RANGE[1] - RANGE[0] + 1),
                      "that is what the Laplace mechanism pays, one noisy count per cell. The Ordered mechanism "
                      "answers a range from its two ends."),
          ], otherwise="the range [lo, hi] = P[hi] − P[lo − 1]; every noisy prefix sum carries Laplace noise of "
                       "scale b = Δ/ε, whose variance is 2b².")


def q3(squared_errors) -> None:
    """Monte Carlo: the student's squared errors of many releases agree with the expected error.

    The mean of the student's squared errors must lie within 4 standard errors (their own spread / √runs) of
    the library's expected error; at least 200 runs.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x, _ = load_histogram()
    >>> R = range_query()
    >>> runs = Ordered().sample(x, R, line(Domain.grid(K)), EPSILON, 500, rng=rng)
    >>> q3(((runs - R @ x) ** 2).ravel())
    """
    question = "q3 (Monte Carlo estimate of the squared error)"
    if unanswered(squared_errors):
        judge(squared_errors, 0, question=question, otherwise="")
    try:
        e = np.asarray(squared_errors, dtype=float).ravel()
    except (TypeError, ValueError):
        raise LabCheckFailed(f"{question}: not yet. Hint: store a list or array of numbers, one squared error "
                             "per release.") from None
    if e.size < 200 or not np.all(np.isfinite(e)):
        raise LabCheckFailed(f"{question}: not yet. Hint: store one finite squared error per release, and run at "
                             "least 200 releases so that the average settles.")
    expected = _ordered_error(_line())
    mean, se = float(e.mean()), float(e.std(ddof=1) / math.sqrt(e.size))
    if abs(mean - expected) <= 4 * se:
        return
    if np.ptp(e) == 0:
        raise LabCheckFailed(f"{question}: not yet. Hint: all your errors are equal: create the generator once, "
                             "outside the loop, so that every release draws new noise.")
    if np.any(e < 0) or abs(mean) < 4 * se:
        hint = ("square each error: (noisy answer − true answer)². Negative or cancelling errors average to "
                "about zero.")
    elif mean < expected:
        hint = ("your errors are too small: did you take the absolute error instead of its square, or compare "
                "with the noisy answer itself?")
    else:
        hint = ("your errors are too large: run the Ordered mechanism under the line policy at the lab's ε, on the "
                "lab's range, and compare with the true range count.")
    raise LabCheckFailed(f"{question}: not yet. Hint: {hint}")


def q4(answer) -> None:
    """How many times larger the Laplace mechanism's expected error is under DP, for the same range and ε.

    Examples
    --------
    >>> q4(Laplace().expected_error(range_query(), dp(Domain.grid(K)), EPSILON)
    ...    / Ordered().expected_error(range_query(), line(Domain.grid(K)), EPSILON))
    """
    laplace_dp = Laplace().expected_error(range_query(), _dp(), EPSILON)
    ordered_line = _ordered_error(_line())
    expected = laplace_dp / ordered_line
    judge(answer, expected, question="q4 (Laplace under DP against Ordered under the line policy)", rtol=0.02,
          mistakes=[
              Mistake(math.sqrt(expected), "that is the ratio of standard deviations; compare squared errors."),
              Mistake(1 / expected, "the ratio is upside down: Laplace's error divided by Ordered's."),
              Mistake(4 * expected, "under unbounded DP a record appears or vanishes: it changes one count, not "
                                    "two."),
              Mistake(2 * expected, "the Ordered mechanism answers this range from two noisy prefix sums."),
          ], otherwise="the Laplace mechanism adds one noisy count per cell of the range, each of variance "
                       "2(Δ/ε)² with Δ = 1 under DP; divide by your answer to q2.")


def q5(answer) -> None:
    """The ε at which the Ordered mechanism under G^THETA matches its error under the line policy at EPSILON.

    Examples
    --------
    >>> q5(EPSILON * THETA)
    """
    g = threshold(Domain.grid(K), THETA)
    ratio = Ordered().sensitivity(g) / Ordered().sensitivity(_line())
    expected = EPSILON * ratio  # Δ/ε fixes the noise: the same scale needs ε × (Δ_θ / Δ_1)
    judge(answer, expected, question=f"q5 (ε for G^{THETA} matching G^1 at ε = {EPSILON})", rtol=0.01, mistakes=[
        Mistake(EPSILON / ratio, "a larger θ means more noise at the same ε; to get the error back you need more "
                                 "budget, not less."),
        Mistake(EPSILON * math.sqrt(ratio), "the noise scale is Δ/ε; keep Δ/ε the same (the square in the error "
                                            "cancels)."),
        Mistake(EPSILON, "Δ of the prefix sums grows with θ (part 1 of the lab): the same ε gives more noise."),
    ], otherwise="the error depends on ε and θ only through the noise scale Δ/ε: find the ε that keeps it.")
