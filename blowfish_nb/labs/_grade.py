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

__all__ = ["expect_number", "expect_choice", "expect_bool", "expect_pair", "expect_mean", "expect_laplace_noise",
           "expect_range_noise", "range_noise_verdict", "show_answer", "first_attempt_record", "expect_first_attempt",
           "laplace_noise_verdict", "expect_ledger_edited"]

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


def laplace_noise_verdict(draw: Callable, x: Sequence[float], scale: float, *, runs: int = 20_000,
                          seed: int | None = None, ses: float = 5.0, alpha: float = 1e-4) -> str | None:
    """Why ``draw(x, size, rng)`` is not ``x`` plus independent Laplace noise of scale ``scale``; ``None`` when it is.

    The noise law is tested, not only its variance, and the generator is the grader's, not the student's:

    * ``draw`` is called with four generators whose seeds are drawn at grading time (``seed=None``; an int only for
      the project's own tests), ``runs/4`` releases each: a mechanism that ignores ``rng``, or recognises one
      fixed generator, returns the same releases for all four (``"ignores rng"``); two size-2 calls must give two
      different rows (``"repeats"``);
    * small calls are releases too: 300 calls of 1–4 releases each (sizes drawn at grading time, a generator each)
      join the sample every later test reads, so a mechanism that adds its noise only to large batches (exact counts
      when ``size == 1``) fails them (``"exact release"``, ``"law"``, …);
    * the noise must not depend on the data: with one generator seed (drawn at grading time), a histogram x′ of
      whole counts drawn at grading time must move every release by exactly x′ − x (``"depends on the data"``): a
      mechanism that behaves only on the graded histogram, or hides the counts in the digits of its noise, does not;
    * bins and consecutive releases must be independent: every correlation of the deviations and of their absolute
      values, between bins and between consecutive rows, within ``ses`` standard errors (1/√n) of 0
      (``"correlated"``: one noise value shared by every bin releases the bins' differences exactly);
    * stored noise: continuous draws never repeat a value, and whole-number rows repeat about C(n,2)·(Σ_z p(z)²)^bins
      times (within ``ses`` standard errors): a table of stored draws, sliced or resampled with ``rng``, repeats
      (``"repeats"``); a table of genuine draws large enough never to repeat is not told from fresh noise;
    * continuous noise (any non-whole deviation) never equals 0: a release of the true count is a point mass that
      Laplace noise does not have (``"exact release"``); whole-number noise is the library's discrete Laplace, so
      each bin's P(deviation = 0) = (1 − q)/(1 + q), q = e^(−1/scale), and the count of all-zero releases must be
      within ``ses`` binomial standard errors (``"exact release"``);
    * the mean within ``ses`` standard errors of 0 (``"mean"``), each bin's law by Kolmogorov–Smirnov (continuous) or χ² (discrete) at
      level ``alpha``/bins (``"law"``), and the mean absolute deviation within ``ses`` standard errors of its
      Laplace value — ``scale``, or Σ|z|·P(z) for the discrete law — (``"too little"`` / ``"too much"``: scales
      1.95 and 2.05 for 2 are ~8 SE away at 20,000 releases of 6 bins).

    A wrong answer that hides behind a statistical test (a true release with probability 10⁻⁴, a mechanism that
    recognises the grader's call stack) is for the teacher's scan (:mod:`blowfish_nb.labs.scan`), not for this test.
    """
    from scipy import stats

    x = np.asarray(x, dtype=float)
    seeds = np.random.SeedSequence(seed).spawn(10)  # the first six as before stop 34 (spawn keys 0–5)
    part = max(runs // 4, 50)
    outs = []
    for s in seeds[:4]:
        out = _releases(draw, x, part, np.random.default_rng(s))
        if isinstance(out, str):
            return out
        outs.append(out)
    if any(np.array_equal(outs[0], o) for o in outs[1:]):
        return "ignores rng"
    small = _small_calls(draw, x, seeds[8], seeds[9])  # how an analyst calls it: one release, or a few
    if isinstance(small, str):
        return small
    outs.append(small)
    if not _moves_with_the_data(draw, x, seeds[6], seeds[7]):
        return "depends on the data"
    for s in seeds[4:6]:
        pair = np.asarray(draw(x.copy(), 2, np.random.default_rng(s)), dtype=float)
        if pair.shape != (2, x.size) or np.array_equal(pair[0], pair[1]):
            return "repeats"
    dev = np.concatenate(outs) - x[None, :]
    n = dev.shape[0]
    if not np.all(np.isfinite(dev)):
        return "not finite"
    whole = bool(np.all(dev == np.round(dev)))
    q = math.exp(-1.0 / scale)
    if whole:
        z = np.arange(-60 * int(math.ceil(scale)) - 5, 60 * int(math.ceil(scale)) + 6)
        pmf = (1 - q) / (1 + q) * q ** np.abs(z)
        mad, sd_abs = float(pmf @ np.abs(z)), math.sqrt(float(pmf @ z**2) - float(pmf @ np.abs(z)) ** 2)
        sd = math.sqrt(float(pmf @ z**2))
        p_row = ((1 - q) / (1 + q)) ** x.size
        zero_rows = int(np.count_nonzero(np.all(dev == 0, axis=1)))
        if abs(zero_rows - n * p_row) > ses * math.sqrt(n * p_row * (1 - p_row)) + 1:
            return "exact release"
        # pairs of equal rows: C(n,2)·P2 expected, P2 = (Σ_z p(z)²)^bins; a table of stored rows repeats far more
        c0 = (1 - q) / (1 + q)
        p2 = (c0 * c0 * (1 + q * q) / (1 - q * q)) ** x.size
        p3 = (c0 ** 3 * (1 + q ** 3) / (1 - q ** 3)) ** x.size
        _, counts = np.unique(dev, axis=0, return_counts=True)
        pairs = float((counts * (counts - 1)).sum() / 2)
        mean = n * (n - 1) / 2 * p2
        var = n * (n - 1) / 2 * (p2 - p2 * p2) + n * (n - 1) * (n - 2) * max(p3 - p2 * p2, 0.0)
        if pairs > mean + ses * math.sqrt(var) + 1:
            return "repeats"
    else:
        if np.any(dev == 0):
            return "exact release"
        if any(np.unique(dev[:, j]).size < n for j in range(x.size)):  # continuous draws never repeat a value
            return "repeats"
        mad, sd_abs, sd = scale, scale, math.sqrt(2) * scale
    for a in (dev, np.abs(dev)):
        c = np.corrcoef(a, rowvar=False)
        lag = [np.corrcoef(a[:-1, j], a[1:, j])[0, 1] for j in range(x.size)]
        if (np.any(~np.isfinite(c)) or np.max(np.abs(c - np.eye(x.size))) > ses / math.sqrt(n)
                or not np.all(np.abs(lag) <= ses / math.sqrt(n))):
            return "correlated"
    if abs(float(dev.mean())) > ses * sd / math.sqrt(dev.size):
        return "mean"
    level = alpha / x.size
    for j in range(x.size):
        d = dev[:, j]
        if whole:
            support = np.arange(-12 * int(math.ceil(scale)) - 5, 12 * int(math.ceil(scale)) + 6)
            pmf = (1 - q) / (1 + q) * q ** np.abs(support)
            counts = np.array([np.count_nonzero(d == s) for s in support], dtype=float)
            # the tail category holds every value of small expected count, those beyond the support included (at
            # scale 2 a draw beyond ±29 has probability e^-15, about once in 20 checks of 1.2·10⁵ draws: a genuine
            # tail value, not "too much"; too much noise shows in the tail's count and in the mean |deviation|)
            keep = pmf * d.size >= 5
            observed = np.append(counts[keep], d.size - counts[keep].sum())
            expected = np.append(pmf[keep], 1.0 - pmf[keep].sum()) * d.size
            p = stats.chisquare(observed, expected).pvalue
        else:
            p = stats.kstest(d, stats.laplace(scale=scale).cdf).pvalue
        if not p >= level:
            return "law"
    m = float(np.abs(dev).mean())
    if m < mad - ses * sd_abs / math.sqrt(dev.size):
        return "too little"
    if m > mad + ses * sd_abs / math.sqrt(dev.size):
        return "too much"
    return None


def _small_calls(draw: Callable, x: np.ndarray, sizes_seed, seed, calls: int = 300) -> np.ndarray | str:
    """The rows of ``calls`` calls ``draw(x, size, rng)`` with sizes 1–4 drawn from ``sizes_seed`` and a fresh generator
    each (children of ``seed``), stacked; a verdict string when a call returns no numbers of the right shape."""
    sizes = np.random.default_rng(sizes_seed).integers(1, 5, size=calls)
    rows = []
    for size, child in zip(sizes, np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key).spawn(calls)):
        out = _releases(draw, x, int(size), np.random.default_rng(child))
        if isinstance(out, str):
            return out
        rows.append(out)
    return np.concatenate(rows)


def _releases(draw: Callable, x: np.ndarray, size: int, rng) -> np.ndarray | str:
    """``draw(x, size, rng)`` as a float array of ``size`` rows, or why it is not one ("none", "not numbers",
    "shape")."""
    out = draw(x.copy(), size, rng)
    if out is None:
        return "none"
    if type(out) is not np.ndarray:
        try:
            out = np.asarray(out, dtype=float)
        except (TypeError, ValueError):
            return "not numbers"
    if out.dtype.kind not in "iuf":
        return "not numbers"
    if out.shape != (size, x.size):
        return "shape"
    return out.astype(float)


def _moves_with_the_data(draw: Callable, x: np.ndarray, pick, seed, size: int = 8) -> bool:
    """Whether ``draw(x′, size, rng) − draw(x, size, rng) == x′ − x`` for generators of one ``seed`` and a histogram
    x′ of whole counts drawn from ``pick``: additive noise drawn from ``rng`` alone (continuous or whole-number, any
    sampler whose use of ``rng`` does not depend on the counts) passes exactly, up to float rounding."""
    other = np.random.default_rng(pick).integers(0, 50, size=x.size).astype(float)
    try:
        a = np.asarray(draw(x.copy(), size, np.random.default_rng(seed)), dtype=float)
        b = np.asarray(draw(other.copy(), size, np.random.default_rng(seed)), dtype=float)
    except (TypeError, ValueError):
        return False
    if a.shape != (size, x.size) or b.shape != a.shape or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return False
    # 16 units in the last place of the largest value: honest float arithmetic (x + z, sums of noisy prefixes) rounds
    # by a few; a code hidden in the digits must fit below that (at most ~4 bits a value, see teaching.md)
    tol = 16 * float(np.spacing(1.0 + max(float(np.abs(a).max()), float(np.abs(b).max()))))
    return bool(np.all(np.abs((b - a) - (other - x)[None, :]) <= tol))


def expect_laplace_noise(draw: Callable, x: Sequence[float], scale: float, *, runs: int = 20_000,
                         seed: int | None = None, alpha: float = 1e-4) -> None:
    """Pass when ``draw(x, size, rng)`` returns ``x`` plus independent Laplace noise of scale ``scale``: continuous
    or whole-number (the library's discrete Laplace, p = 1 − e^(−1/scale)); see :func:`laplace_noise_verdict`.

    The generators' seeds are drawn when the test runs (``seed=None``): a mechanism tuned to one generator fails.
    Uniform, Gaussian or any other noise, even of the right variance, fails; so do noise of another scale, one noise
    value shared by every bin, and noise that ignores ``rng``.
    """
    why = laplace_noise_verdict(draw, x, scale, runs=runs, seed=seed, alpha=alpha)
    if why is not None:
        raise AssertionError(f"not independent Laplace noise of the right scale ({why})")


def expect_ledger_edited(room: Any) -> None:
    """Pass when the ledger of ``room``'s analyst service (lab 9's classroom) holds an edit made behind the
    service's back: the state the student's edit leaves, not what the student says about it.

    The classroom's own ledger object is asked (``room.server.service.ledger``, an exact
    :class:`blowfish_nb.service.ledger.Ledger`): its :meth:`~blowfish_nb.service.ledger.Ledger.verify` recomputes
    the keyed chain and compares the tables derived from it, and reports a difference as
    :class:`~blowfish_nb.service.chain.LedgerIntegrityError`; the object keeps what it found after the classroom is
    stopped. A ledger nobody edited verifies (while serving) or is closed (once stopped): both fail, as does
    anything that is not the lab's classroom. Any edit of the file the chain exposes passes, the lab's
    ``UPDATE accounts SET spent = '0'`` among them.
    """
    try:
        from blowfish_nb.service.chain import LedgerIntegrityError
        from blowfish_nb.service.ledger import Ledger
    except ImportError as e:  # the autograder installs the service extra (lab 9's EXTRAS)
        raise AssertionError(f"the analyst service is not installed ({e})") from None
    ledger = getattr(getattr(getattr(room, "server", None), "service", None), "ledger", None)
    if type(ledger) is not Ledger:
        raise AssertionError("not the lab's classroom")
    try:
        ledger.verify()
    except LedgerIntegrityError:
        return
    except Exception:  # closed (the classroom stopped) with no edit found, or no file to read
        raise AssertionError("no edit of the ledger was found") from None
    raise AssertionError("no edit of the ledger was found")


def range_noise_verdict(release: Callable, k: int, span: tuple[int, int], scale: float, *, runs: int = 3000,
                        seed: int | None = None, ses: float = 5.0, alpha: float = 1e-4) -> str | None:
    """Why ``release(x, rng)`` is not one noisy answer to the range ``span`` (inclusive cells) of a ``k``-cell histogram
    ``x`` by the Ordered mechanism — the difference of two prefix sums, each with independent Laplace noise of scale
    ``scale``, continuous or the library's whole-number law; ``None`` when it is.

    The student's *code* is graded, on inputs it has never seen: ``runs`` calls on four histograms of whole counts
    drawn at grading time (``seed=None``; an int only for the project's own tests), each block with a generator of its
    own. The law of the noise Z = release − true count of that histogram (density (1 + |z|/b) e^(−|z|/b) / 4b for
    continuous noise, the convolution of two discrete Laplace laws for whole-number noise) is tested, not only its
    variance:

    * ``"none"`` / ``"not a number"``: each call must return one real number (a float, or an array of one);
    * ``"ignores rng"``: two calls with generators of one seed must agree (the noise comes from ``rng``, not from a
      generator or a table of the student's own), the releases of a block must vary and the blocks' noises differ;
    * ``"depends on the data"``: with one generator seed, a second histogram drawn at grading time moves the release
      by exactly the change of the true count (noise drawn from ``rng`` alone does; noise that encodes the counts
      does not);
    * ``"mean"``: the noise has mean zero within ``ses`` standard errors — a function that releases the notebook's
      histogram, or returns stored values, is off by the difference of the true counts;
    * ``"exact release"`` / ``"repeats"``: continuous noise never equals 0 and never repeats a value (a resampled table
      of draws does);
    * ``"correlated"``: consecutive releases are independent (lag-1 correlation of Z and |Z| within ``ses``/√n);
    * ``"law"``: Kolmogorov–Smirnov (continuous) or χ² (whole numbers) against the exact law, at level ``alpha``;
    * ``"shape"``: the mean log-likelihood ratio of the exact law against the Gaussian of the sample's own variance,
      and against the Laplace law of the sample's own mean |Z|, lies within ``ses`` standard errors of its value
      under the exact law (per release about 0.024 ± 0.27 and 0.010 ± 0.14; a Gaussian of the right variance
      scores about −0.06): the omnibus test alone misses a Gaussian of the right variance three times in four at
      2,000 releases;
    * ``"too little"`` / ``"too much"``: the mean |Z| within ``ses`` standard errors of its value (1.5 b continuous).

    False rejects of right code: ``alpha`` for the law test plus about 3·10⁻⁷ for each ``ses``-standard-error test
    (normal tail), so at most about 10⁻⁴ per grading (0 of 2,000 seeded runs of each law in the project's tests).
    """
    from scipy import stats

    lo, hi = int(span[0]), int(span[1])
    seeds = np.random.SeedSequence(seed).spawn(11)  # the first ten as before stop 34
    part = max(runs // 4, 50)
    devs = []
    for i in range(4):
        x = np.random.default_rng(seeds[i]).integers(0, 100, size=k).astype(np.int64)
        truth = float(x[lo:hi + 1].sum())
        rng = np.random.default_rng(seeds[4 + i])
        block = np.empty(part)
        for j in range(part):
            v = _one_number(release(x.copy(), rng))
            if isinstance(v, str):
                return v
            block[j] = v - truth
        devs.append(block)
    x = np.random.default_rng(seeds[8]).integers(0, 100, size=k).astype(np.int64)
    same = [_one_number(release(x.copy(), np.random.default_rng(seeds[9]))) for _ in range(2)]
    if any(isinstance(v, str) for v in same):
        return next(v for v in same if isinstance(v, str))
    if same[0] != same[1] or any(np.array_equal(devs[0], d) for d in devs[1:]) or any(np.ptp(d) == 0 for d in devs):
        return "ignores rng"
    # the noise must not depend on the data: one generator seed, another histogram x′ drawn here, and the release
    # moves by exactly the change of the true count (a release that hides the counts in its digits does not)
    other = np.random.default_rng(seeds[10]).integers(0, 100, size=k).astype(np.int64)
    moved = _one_number(release(other.copy(), np.random.default_rng(seeds[9])))
    if isinstance(moved, str):
        return moved
    change = float(other[lo:hi + 1].sum()) - float(x[lo:hi + 1].sum())
    if abs((moved - same[0]) - change) > 16 * float(np.spacing(1.0 + max(abs(moved), abs(same[0])))):
        return "depends on the data"
    dev = np.concatenate(devs)
    n = dev.size
    if not np.all(np.isfinite(dev)):
        return "not finite"
    b = float(scale)
    whole = bool(np.all(dev == np.round(dev)))
    if whole:
        q = math.exp(-1.0 / b)
        half = np.arange(-60 * int(math.ceil(b)) - 5, 60 * int(math.ceil(b)) + 6)
        one = (1 - q) / (1 + q) * q ** np.abs(half)
        pmf = np.convolve(one, one)
        support = np.arange(2 * half[0], 2 * half[-1] + 1).astype(float)
        weights, grid = pmf / pmf.sum(), support
    else:
        if np.any(dev == 0):
            return "exact release"
        if np.unique(dev).size < n:
            return "repeats"
        grid = np.linspace(-60 * b, 60 * b, 240_001)
        weights = np.exp(_log_laplace_difference(grid, b))
        weights /= weights.sum()
    m1 = float(weights @ np.abs(grid))
    m2 = float(weights @ grid**2)
    sd_abs = math.sqrt(m2 - m1 * m1)
    for d in devs:
        for a in (d, np.abs(d)):
            r = np.corrcoef(a[:-1], a[1:])[0, 1]
            if not abs(r) <= ses / math.sqrt(d.size - 1):
                return "correlated"
    if abs(float(dev.mean())) > ses * math.sqrt(m2 / n):
        return "mean"
    if whole:
        counts = np.bincount((dev - support[0]).astype(np.int64).clip(0, support.size - 1), minlength=support.size)
        keep = pmf * n >= 5
        observed = np.append(counts[keep], n - counts[keep].sum())
        expected = np.append(pmf[keep], 1.0 - pmf[keep].sum()) * n
        p = stats.chisquare(observed, expected).pvalue
    else:
        p = stats.kstest(dev, lambda z: _laplace_difference_cdf(z, b)).pvalue
    if not p >= alpha:
        return "law"
    own_m2, own_m1 = float(np.mean(dev**2)), float(np.mean(np.abs(dev)))
    for llr in (lambda z, v2, v1: _log_laplace_difference(z, b) + 0.5 * z * z / v2 + 0.5 * math.log(2 * math.pi * v2),
                lambda z, v2, v1: _log_laplace_difference(z, b) + np.abs(z) / v1 + math.log(2 * v1)):
        h = llr(grid, m2, m1)
        mu, sd = float(weights @ h), math.sqrt(max(float(weights @ h**2) - float(weights @ h) ** 2, 0.0))
        if float(llr(dev, own_m2, own_m1).mean()) < mu - ses * sd / math.sqrt(n):
            return "shape"
    m = float(np.abs(dev).mean())
    if m < m1 - ses * sd_abs / math.sqrt(n):
        return "too little"
    if m > m1 + ses * sd_abs / math.sqrt(n):
        return "too much"
    return None


def expect_range_noise(release: Callable, k: int, span: tuple[int, int], scale: float, *, runs: int = 3000,
                       seed: int | None = None) -> None:
    """Pass when ``release(x, rng)`` answers the range ``span`` of any ``k``-cell histogram ``x`` as the Ordered
    mechanism does: the true count plus the difference of two independent Laplace draws of scale ``scale`` (continuous
    or whole-number), its noise drawn from ``rng``; see :func:`range_noise_verdict`.

    Uniform or Gaussian noise of the right variance fails, so do a single Laplace draw of any scale, a function that
    ignores ``x`` or ``rng``, and one that returns stored values.
    """
    why = range_noise_verdict(release, k, span, scale, runs=runs, seed=seed)
    if why is not None:
        raise AssertionError(f"not the Ordered mechanism's noise for the range ({why})")


def _one_number(out: Any) -> float | str:
    """A release's one real number, or why it is not one."""
    if out is None or out is Ellipsis:
        return "none"
    try:
        a = np.asarray(out, dtype=float)
    except (TypeError, ValueError):
        return "not a number"
    if a.size != 1:
        return "not a number"
    return float(a.reshape(()))


def _log_laplace_difference(z: Any, b: float) -> np.ndarray:
    """log density of the difference of two independent Laplace(0, b) draws: (1 + |z|/b) e^(−|z|/b) / 4b."""
    a = np.abs(np.asarray(z, dtype=float)) / b
    return np.log1p(a) - a - math.log(4 * b)


def _laplace_difference_cdf(z: Any, b: float) -> np.ndarray:
    """Its distribution function: 1 − (2 + z/b) e^(−z/b) / 4 for z ≥ 0, symmetric."""
    z = np.asarray(z, dtype=float)
    upper = 1.0 - 0.25 * (2.0 + np.abs(z) / b) * np.exp(-np.abs(z) / b)
    return np.where(z >= 0, upper, 1.0 - upper)


def show_answer(answer: Any) -> str:
    """An answer as the first-attempt record writes it (``repr``, shortened; a function by its name).

    Examples
    --------
    >>> show_answer(0.25), show_answer("dawa"), show_answer(list(range(20)))
    ('0.25', "'dawa'", 'list of 20 values')
    """
    if callable(answer):
        return f"function {getattr(answer, '__name__', '?')}"
    if isinstance(answer, (list, tuple, np.ndarray)) and np.size(answer) > 8:
        return f"{type(answer).__name__} of {np.size(answer)} values"
    text = repr(answer)
    return text if len(text) <= 80 else text[:77] + "..."


def first_attempt_record(question: str, folder: Any = ".") -> str | None:
    """The first attempt at ``question`` that the submitted notebook carries: the ``first_attempt`` its check cell's
    saved output holds in its metadata (``{"blowfish_nb": {"question": …, "first_attempt": …}}``, written by the
    student's ``Grader`` of the lab). ``None`` when ``folder`` (the grading folder, where otter and
    Gradescope put the one submitted ``.ipynb``) holds no such notebook or no such output.

    The record is the student's: their kernel wrote it into their file, and they can clear or edit it.
    """
    import json
    from pathlib import Path

    notebooks = sorted(Path(folder).glob("*.ipynb"))
    if len(notebooks) != 1:
        return None
    try:
        cells = json.loads(notebooks[0].read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return None
    for cell in cells if isinstance(cells, list) else []:
        for out in cell.get("outputs", []) if isinstance(cell, dict) else []:
            meta = out.get("metadata", {}).get("blowfish_nb") if isinstance(out, dict) else None
            if isinstance(meta, dict) and meta.get("question") == question and meta.get("first_attempt") is not None:
                return str(meta["first_attempt"])
    return None


def expect_first_attempt(question: str, answers: Sequence[Any], folder: Any = ".") -> None:
    """Pass when the submitted notebook's first-attempt record of a "predict" question is the answer graded; else
    fail with both, for the teacher (the build gives this test no points: it reports, it does not grade).

    Examples
    --------
    >>> import tempfile
    >>> try:
    ...     expect_first_attempt("q1", [0.25], tempfile.mkdtemp())
    ... except AssertionError as e:
    ...     print(e)
    no first attempt of q1 in the submitted notebook (check cell not run, or outputs cleared); graded: 0.25
    """
    graded = ", ".join(show_answer(a) for a in answers)
    record = first_attempt_record(question, folder)
    if record is None:
        raise AssertionError(f"no first attempt of {question} in the submitted notebook (check cell not run, or "
                             f"outputs cleared); graded: {graded}")
    if record != graded:
        raise AssertionError(f"first attempt of {question} (the student's own record): {record}; graded: {graded}")
