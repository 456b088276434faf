"""Lab 3 — why ranges get orders of magnitude better: the Ordered mechanism, its error, the trade-off.

Each ``qN(answer)`` is a hint check: it knows hints, not answers (question 3's Monte Carlo check asks the library
for the reference error and never shows it).

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
from ..ranges import Ranges
from ._check import LabCheckFailed, make_check, unanswered

__all__ = ["K", "EPSILON", "RANGE", "THETA", "load_histogram", "range_query", "q1", "q2", "q3", "q4", "q5",
           "unanswered", "LabCheckFailed"]

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
#: question 3: the squared errors' standard deviation must be at least this times their mean, as independent
#: releases' are (about 1.8 for this lab's range: a difference of two Laplace draws, squared; the least of 20,000
#: samples of 200 was 1.24). A made-up list around the right mean, with a little noise of one's own, has far less.
MIN_CV = 0.75


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


def q3(squared_errors) -> None:
    """Question 3's check: the shape of your squared errors of many releases (a hint, never a value or a verdict).

    Answer-free: it never compares with the expected error (that is question 2's answer, and a check that said
    "too small" or "too large" would let a search find it). It asks for at least 200 finite, non-negative errors
    that spread as independent releases' do (standard deviation at least ``MIN_CV`` times the mean) and do not
    average to about zero; whether the mean is right the hidden tests grade.
    """
    question = "q3 (Monte Carlo estimate of the squared error)"
    if unanswered(squared_errors):
        raise LabCheckFailed(f"{question}: replace the `...` with your answer, then run this check again.")
    try:
        e = np.asarray(squared_errors, dtype=float).ravel()
    except (TypeError, ValueError):
        raise LabCheckFailed(f"{question}: not yet. Hint: store a list or array of numbers, one squared error "
                             "per release.") from None
    if e.size < 200 or not np.all(np.isfinite(e)):
        raise LabCheckFailed(f"{question}: not yet. Hint: store one finite squared error per release, and run at "
                             "least 200 releases so that the average settles.")
    mean, se = float(e.mean()), float(e.std(ddof=1) / math.sqrt(e.size))
    if np.ptp(e) == 0:
        hint = "all your errors are equal: create the generator once, outside the loop, so that every release draws " \
               "new noise."
    elif np.any(e < 0) or abs(mean) < 4 * se:
        hint = "square each error: (noisy answer − true answer)². Negative or cancelling errors average to about zero."
    elif float(e.std(ddof=1)) < MIN_CV * abs(mean):
        hint = "your errors vary far less than the squared errors of independent releases do: store each " \
               "release's own squared error, (noisy answer − true answer)², one per run of the mechanism."
    else:
        return None
    raise LabCheckFailed(f"{question}: not yet. Hint: {hint}")


q1 = make_check("lab03", "q1")
q2 = make_check("lab03", "q2")
q4 = make_check("lab03", "q4")
q5 = make_check("lab03", "q5")
