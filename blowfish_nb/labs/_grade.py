"""The autograder side of a lab: compare a student's answer with a literal expected value, trusting nothing of theirs.

The hidden tests that ``blowfish_nb.labs.build`` writes into each autograder zip import this module and pass it the
student's answer (taken by name from the executed notebook) and the expected value as a literal of the test file.
Nothing is looked up in the student's namespace: a notebook that redefines ``check``, ``grader`` or any name of the
lab modules grades the same. An answer must be a plain value of an exact built-in or NumPy type: an object whose
``__eq__`` or ``__float__`` claims to be anything is refused.

Examples
--------
>>> expect_number(2, 2.0)
>>> expect_choice(" Line", "line")
>>> try:
...     expect_number(type("Any", (float,), {"__eq__": lambda s, o: True})(0.0), 2.0)
... except AssertionError as e:
...     print(e)
the answer is not a plain number
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["expect_number", "expect_choice", "expect_bool", "expect_pair", "expect_mean", "expect_laplace_noise"]

_INTS = (int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
_FLOATS = (float, np.float16, np.float32, np.float64)


def _plain_number(answer: Any) -> float:
    if type(answer) in _INTS or type(answer) in _FLOATS:
        return float(answer)
    if type(answer) is np.ndarray and answer.shape == () and answer.dtype.kind in "iuf":
        return float(answer.item())
    raise AssertionError("the answer is not a plain number")


def expect_number(answer: Any, expected: float, *, rtol: float = 1e-6, atol: float = 1e-9) -> None:
    """Pass when ``answer`` is a plain number within ``rtol``/``atol`` of ``expected`` (∞ equals ∞ only).

    Examples
    --------
    >>> expect_number(4.4817, 4.481689070338065, rtol=1e-3)
    """
    x = _plain_number(answer)
    if math.isinf(expected) or math.isinf(x):
        if x != expected:
            raise AssertionError("wrong")
        return
    if math.isnan(x) or abs(x - expected) > atol + rtol * abs(expected):
        raise AssertionError("wrong")


def expect_choice(answer: Any, expected: str) -> None:
    """Pass when ``answer`` is a ``str`` naming ``expected`` (case and surrounding spaces do not count)."""
    if type(answer) is not str or str.lower(str.strip(answer)) != expected:
        raise AssertionError("wrong")


def expect_bool(answer: Any, expected: bool) -> None:
    """Pass when ``answer`` is the bool ``expected`` (``True``/``False``, not 1 or 0)."""
    if type(answer) not in (bool, np.bool_) or bool(answer) is not expected:
        raise AssertionError("wrong")


def expect_pair(answer: Any, accepted: Sequence[tuple[int, int]]) -> None:
    """Pass when ``answer`` is a pair of plain integers equal to one of ``accepted`` in either order."""
    if type(answer) not in (tuple, list) or len(answer) != 2:
        raise AssertionError("not a pair")
    u, v = (int(_plain_number(a)) for a in answer)
    if (u, v) not in {tuple(p) for p in accepted} | {tuple(p)[::-1] for p in accepted}:
        raise AssertionError("wrong")


def expect_mean(values: Any, expected: float, *, ses: float = 4.0, min_size: int = 200,
                min_cv: float | None = None) -> None:
    """Pass when the mean of at least ``min_size`` plain finite numbers lies within ``ses`` standard errors (their own
    spread) of ``expected``: a Monte Carlo estimate of ``expected``.

    ``min_cv``: the values must also spread like independent draws, their standard deviation at least ``min_cv``
    times their mean. A list made from the expected value itself (a constant plus a little made-up noise) fails:
    its mean is right and its standard error is whatever the maker chose. Squared errors of zero-mean noise have a
    coefficient of variation of √2 (Gaussian) to about 1.9 (a difference of two Laplace draws).

    Examples
    --------
    >>> expect_mean([0.0, 2.0] * 500, 1.0, min_cv=0.75)  # mean 1, standard deviation 1
    >>> try:
    ...     expect_mean([0.99, 1.01] * 500, 1.0, min_cv=0.75)  # the right mean, next to no spread
    ... except AssertionError as e:
    ...     print(e)
    too little spread
    """
    if type(values) not in (list, tuple, np.ndarray):
        raise AssertionError("not a list of numbers")
    e = np.array([_plain_number(v) for v in (values.ravel().tolist() if type(values) is np.ndarray else values)])
    if e.size < min_size or not np.all(np.isfinite(e)):
        raise AssertionError("too few values")
    se = float(e.std(ddof=1) / math.sqrt(e.size))
    if not abs(float(e.mean()) - expected) <= ses * se:
        raise AssertionError("wrong")
    if min_cv is not None and not float(e.std(ddof=1)) >= min_cv * abs(float(e.mean())):
        raise AssertionError("too little spread")


def expect_laplace_noise(draw: Callable, x: Sequence[float], scale: float, *, runs: int = 20_000, seed: int = 5,
                         alpha: float = 1e-4) -> None:
    """Pass when ``draw(x, runs, rng)`` returns ``x`` plus independent Laplace noise of scale ``scale``: continuous
    (Kolmogorov–Smirnov against Laplace(0, scale)) or whole-number (χ² against the two-sided geometric law with
    p = 1 − e^(−1/scale), the library's discrete Laplace).

    Uniform, Gaussian or any other noise, even of the right variance, fails; so does noise of another scale.
    """
    from scipy import stats

    x = np.asarray(x, dtype=float)
    out = draw(x.copy(), runs, np.random.default_rng(seed))
    if type(out) is not np.ndarray:
        out = np.asarray(out)
    if type(out) is not np.ndarray or out.dtype.kind not in "iuf" or out.shape != (runs, x.size):
        raise AssertionError("not an array of releases")
    dev = (out.astype(float) - x[None, :]).ravel()
    if not np.all(np.isfinite(dev)):
        raise AssertionError("not finite")
    if np.all(dev == np.round(dev)):
        q = math.exp(-1.0 / scale)
        support = np.arange(-12 * int(math.ceil(scale)) - 5, 12 * int(math.ceil(scale)) + 6)
        pmf = (1 - q) / (1 + q) * q ** np.abs(support)
        counts = np.array([np.count_nonzero(dev == s) for s in support], dtype=float)
        if counts.sum() < dev.size:  # values far out in the tails: a scale much too large
            raise AssertionError("wrong scale")
        keep = pmf * dev.size >= 5
        observed = np.append(counts[keep], counts[~keep].sum())
        expected = np.append(pmf[keep], pmf[~keep].sum()) * dev.size
        expected *= observed.sum() / expected.sum()
        p = stats.chisquare(observed, expected).pvalue
    else:
        p = stats.kstest(dev, stats.laplace(scale=scale).cdf).pvalue
    if not p >= alpha:
        raise AssertionError("not Laplace noise of the right scale")
