"""Lab 3 — why ranges get orders of magnitude better: the Ordered mechanism, its error, the trade-off.

Each ``qN(answer)`` is a hint check: it knows hints, not answers (question 3's checks the shape of the student's
function ``range_noise``; its hidden test runs it and tests the law of the noise).

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

__all__ = ["K", "EPSILON", "RANGE", "THETA", "NOISE_READS", "load_histogram", "range_query", "q1", "q2", "q3", "q4", "q5",
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
#: the handout's names a noise answer may read (question 3's ``range_noise(rng)``), besides ``rng``, ``np``/``math``
#: and this module's UPPER constants: what the lab's solution reads (``ordered.release(np.zeros(k), R, line, eps,
#: rng=rng)``) and the range's ends. Never the data (``x``): the noise must not depend on it, and the grader runs the
#: answer on these names' values as the handout binds them (:func:`blowfish_nb.labs.scan.pure_answer`)
NOISE_READS = {"range_noise": ("ordered", "R", "line", "eps", "k", "lo", "hi")}


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


def q3(range_noise) -> None:
    """Question 3's check: the *shape* of your function ``range_noise(rng)``, never its noise scale.

    Calls it 200 times (generators seeded afresh at each check) and tests what needs no answer: one number per call,
    drawn from the generator it is given (two generators of one seed agree, and the noise varies), and noise that
    averages to about zero (the noise, not the release: the lab adds it to the true count). The law and the scale of
    the noise are the hidden test's business (:func:`blowfish_nb.labs._grade.range_noise_verdict` runs your function
    a few thousand times, each call with a generator of its own): a check that judged the scale would give it away.
    """
    question = "q3 (the noise of one release of the range)"
    if unanswered(range_noise):
        raise LabCheckFailed(f"{question}: replace the `...` with your answer, then run this check again.")
    if not callable(range_noise):
        raise LabCheckFailed(f"{question}: not yet. Hint: store a function range_noise(rng) (write it with def).")
    seeds = np.random.SeedSequence(_Q3_SEED).spawn(2)
    try:
        first = [_one(range_noise(np.random.default_rng(seeds[0]))) for _ in range(2)]
        rng = np.random.default_rng(seeds[1])
        # 200 calls: cheap (the hidden test runs thousands)
        dev = np.array([_one(range_noise(rng)) for _ in range(200)])
    except _NotOne as e:
        raise LabCheckFailed(f"{question}: not yet. Hint: {e}") from None
    except Exception as e:  # the student's own code: say what broke, whatever it was
        raise LabCheckFailed(f"{question}: not yet. Hint: calling range_noise(rng) failed with "
                             f"{type(e).__name__}: {e}") from None
    if first[0] != first[1]:
        hint = "draw the noise from the generator `rng` you are given (pass rng=rng to the release), nothing else."
    elif np.ptp(dev) == 0:
        hint = "every call must draw new noise from `rng`: all your noise values came out equal."
    elif abs(float(dev.mean())) > 5 * float(dev.std(ddof=1)) / math.sqrt(dev.size):
        hint = "return the noise alone (the noisy answer minus the true count), not the noisy answer: it should " \
               "average to about zero."
    else:
        return None
    raise LabCheckFailed(f"{question}: not yet. Hint: {hint}")


#: the seed of question 3's check: ``None`` (fresh at each check); an int only in the project's tests
_Q3_SEED: int | None = None


class _NotOne(Exception):
    pass


def _one(out) -> float:
    if out is None or out is Ellipsis:
        raise _NotOne("replace the `...` in the function with your code (it must return the noise), then run "
                      "this check again.")
    try:
        a = np.asarray(out, dtype=float)
    except (TypeError, ValueError):
        raise _NotOne("range_noise must return a number, the noise of one release.") from None
    if a.size != 1:
        raise _NotOne("range_noise must return one number, the noise of one release of the range (a release is an "
                      "array of one: take its element).")
    if not math.isfinite(float(a.reshape(()))):
        raise _NotOne("the noise must be a finite number.")
    return float(a.reshape(()))


q1 = make_check("lab03", "q1")
q2 = make_check("lab03", "q2")
q4 = make_check("lab03", "q4")
q5 = make_check("lab03", "q5")
