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


def laplace_noise_verdict(noise: Callable, cells: int, scale: float, *, runs: int = 20_000,
                          seed: int | None = None, ses: float = 5.0, alpha: float = 1e-4) -> str | None:
    """Why ``noise(rng)`` is not the noise of one release of a ``cells``-cell histogram by the Laplace mechanism,
    ``cells`` independent Laplace draws of scale ``scale``; ``None`` when it is.

    The student writes the noise, never the release: the lab's code adds ``noise(rng)`` to the true counts, and this
    test calls ``noise`` with nothing but a generator, so a mechanism cannot recognise the graded input (gamer34b's
    ``size == 1`` and 2-bits-per-count releases have nothing to be written with). The data are no argument, and under
    the grading plugin they are out of reach too: the source rule (:func:`blowfish_nb.labs.scan.pure_answer`) lets
    the function read only ``rng``, ``np``/``math``, the lab's constants and the handout names its lab allows
    (``NOISE_READS``: never the data; gamer37's noise read ``x`` and was exact on every other histogram), and the
    function graded is compiled from the answer's source in a namespace of those names alone, with the values the
    handout's cells gave them (arrays read-only: gamer37's counter in a view of ``x`` raises). What this verdict
    grades is therefore the answer's code under the handout's bindings at answer time; what a later cell of the
    student's does to their own kernel (rebinding ``eps`` there) releases nothing and is not graded. Called on a plain
    function (the lab's own check, the project's tests) it tests that function as it is. What is tested is the law
    of what ``noise`` returns:

    * the ``runs`` calls come in **runs on one generator object**, as people use a generator: a single call, 2 to
      :data:`LONGEST_RUN` calls, or (a fifth of the calls) long runs of up to a fifth of the calls, in random
      order; about 65 % of the calls are a run's later calls (:func:`noise_plan`). A run's generator is made as
      ``np.random.default_rng()`` makes one (a 128-bit seed drawn at grading time, ``seed=None``; an int only for
      the project's own tests) or as people make one (below), a quarter fresh, the others advanced as if already
      used. A call is one release, exactly as the lab (and an analyst) calls it; the grading proxy keeps a
      generator's identity in its child, and the kernel's sample makes the same runs (:func:`_kernel_sample`);
    * ``"ignores rng"``: a tenth of the calls, whole runs in another order, are made again on generators made anew
      with the same seeds: the noise must be the same (noise from a generator, a table or a call counter of the
      student's own is not), and it must vary;
    * ``"none"`` / ``"not numbers"`` / ``"shape"`` / ``"not finite"``: each call returns ``cells`` finite numbers;
    * a share of the generators made as people make them (``default_rng(s)`` for small ``s`` and the lab's own
      seeds, ``SeedSequence(s).spawn`` children, ``Generator(PCG64(s))``; see :func:`_noise_sample`): noise that
      tells them from the grader's fails;
    * then the whole sample, the fresh generators' first calls on their own (how an analyst releases once), the
      later calls of runs on their own, the calls after a long run's :data:`LONGEST_RUN`-th on their own, and each
      kind of generator on its own, the level split evenly among these samples:

      - bins and consecutive calls independent: every correlation of the values and of their absolute values, between
        bins and between consecutive calls, within ``ses`` standard errors (1/√n) of 0 (``"correlated"``: one noise
        value shared by every bin releases the bins' differences exactly);
      - stored noise: continuous draws never repeat a value, and whole-number rows repeat about C(n,2)·(Σ_z p(z)²)^bins
        times (within ``ses`` standard errors; ``"repeats"``);
      - continuous noise (any non-whole value) never equals 0 (``"exact release"``: a point mass on the true count);
        whole-number noise is the library's discrete Laplace, each bin's P(0) = (1 − q)/(1 + q), q = e^(−1/scale),
        and the count of all-zero rows within ``ses`` binomial standard errors (``"exact release"``);
      - the mean within ``ses`` standard errors of 0 (``"mean"``), each bin's law by Kolmogorov–Smirnov (continuous)
        or χ² (discrete) at level ``alpha``/(2·bins) (``"law"``), and the mean absolute value within ``ses`` standard
        errors of its Laplace value — ``scale``, or Σ|z|·P(z) for the discrete law — (``"too little"`` /
        ``"too much"``: scales 1.95 and 2.05 for 2 are ~8 SE away at 20,000 calls of 6 bins).

    **State kept between calls** (gamer36b: ``fixed_noise(rng, _seen=[])``, Laplace on a generator object it has
    not seen, zero on one it has: the lab's cells, one ``rng`` for every release, then release the exact counts).
    Whatever the mechanism — a mutable default, a global counter, a function attribute, a closure, a module's
    variable, ``is``/``id`` against kept generators, a comparison with a ``bit_generator.state`` seen before, the
    generator's seed sequence's spawn count — the function's output on a call is a function of the generator's
    state and of what the function saw in earlier calls; whether the generator "was used before" is a property of
    the sequence of calls, not of a mechanism. The sample holds every situation a person's calls create — a fresh
    generator's first call, an advanced generator's first call, the 2nd to 10th call on one object, calls deep in a
    long run, interleaved with other generators — and the law is tested on each of these samples alone as well as
    on the whole. So noise that is Laplace on some calls and not on others fails unless its other calls are too
    few, or too little off, to move a test at level ``alpha`` split among the samples (``ses`` = 5 standard errors
    for the moment tests). Concretely, at lab 5's 20,000 calls (about 13,000 later calls, 3,900 deep in long runs):
    a single exact zero in continuous noise fails ("exact release"); for whole-number noise the all-zero rows are
    counted (P = ((1 − q)/(1 + q))⁶ ≈ 2.2·10⁻⁴ a row at scale 2, about 4.3 ± 2.1 rows in 20,000), so more than
    about 12 calls of exact release fail; a scale of 1 instead of 2 on later calls moves the mean |noise| of their
    sample by over 100 standard errors ("too little"). What runs cannot find: a function that changes only after more
    calls on one generator than the longest run of the sample (its length varies with the grading's seed, up to a
    fifth of the calls), or only after more calls in one process than a grading makes (the kernel's sample comes
    after the notebook's own cells have called the function), or on too few calls to move a test. The teacher's
    scan flags the means of keeping state (mutable defaults, ``global``, ``is`` on a parameter, a generator's state
    or seed sequence: :mod:`blowfish_nb.labs.scan`), which no noise function needs.

    A wrong answer that hides behind a statistical test (a zero noise with probability 10⁻⁴, a function that reads
    its caller's frame or recognises the grader's call stack) is not for this test: under the grading plugin the
    source rule lets a draw enter the noise only linearly, so no share of the calls can be decided by a draw
    (:mod:`blowfish_nb.labs.linear_noise`), and the child refuses a call whose value is not the affine sum of its
    draws the code states (floating-point absorption, gamer38); the teacher's scan (:mod:`blowfish_nb.labs.scan`)
    flags the rest.
    """
    cells = int(cells)
    read = lambda out: _noise_vector(out, cells)  # noqa: E731
    got = _noise_sample(noise, runs, seed, read, replays=max(runs // 10, 20))
    return _first_failure(got, _laplace_law, scale, ses, alpha, _kernel_sample(noise, read, got))


def _laplace_law(dev: np.ndarray, scale: float, ses: float, alpha: float) -> str | None:
    """Why the rows of ``dev`` (one call each) are not independent Laplace noise of scale ``scale``, continuous or the
    library's whole-number law; ``None`` when they are (see :func:`laplace_noise_verdict`)."""
    from scipy import stats

    n, bins = dev.shape
    whole = bool(np.all(dev == np.round(dev)))
    q = math.exp(-1.0 / scale)
    if whole:
        z = np.arange(-60 * int(math.ceil(scale)) - 5, 60 * int(math.ceil(scale)) + 6)
        pmf = (1 - q) / (1 + q) * q ** np.abs(z)
        mad, sd_abs = float(pmf @ np.abs(z)), math.sqrt(float(pmf @ z**2) - float(pmf @ np.abs(z)) ** 2)
        sd = math.sqrt(float(pmf @ z**2))
        p_row = ((1 - q) / (1 + q)) ** bins
        zero_rows = int(np.count_nonzero(np.all(dev == 0, axis=1)))
        if abs(zero_rows - n * p_row) > ses * math.sqrt(n * p_row * (1 - p_row)) + 1:
            return "exact release"
        # pairs of equal rows: C(n,2)·P2 expected, P2 = (Σ_z p(z)²)^bins; a table of stored rows repeats far more
        c0 = (1 - q) / (1 + q)
        p2 = (c0 * c0 * (1 + q * q) / (1 - q * q)) ** bins
        p3 = (c0 ** 3 * (1 + q ** 3) / (1 - q ** 3)) ** bins
        _, counts = np.unique(dev, axis=0, return_counts=True)
        pairs = float((counts * (counts - 1)).sum() / 2)
        mean = n * (n - 1) / 2 * p2
        var = n * (n - 1) / 2 * (p2 - p2 * p2) + n * (n - 1) * (n - 2) * max(p3 - p2 * p2, 0.0)
        if pairs > mean + ses * math.sqrt(var) + 1:
            return "repeats"
    else:
        if np.any(dev == 0):
            return "exact release"
        if any(np.unique(dev[:, j]).size < n for j in range(bins)):  # continuous draws never repeat a value
            return "repeats"
        mad, sd_abs, sd = scale, scale, math.sqrt(2) * scale
    for a in (dev, np.abs(dev)):
        c = np.corrcoef(a, rowvar=False) if bins > 1 else np.ones((1, 1))
        lag = [np.corrcoef(a[:-1, j], a[1:, j])[0, 1] for j in range(bins)]
        if (np.any(~np.isfinite(c)) or np.max(np.abs(c - np.eye(bins))) > ses / math.sqrt(n)
                or not np.all(np.abs(lag) <= ses / math.sqrt(n))):
            return "correlated"
    if abs(float(dev.mean())) > ses * sd / math.sqrt(dev.size):
        return "mean"
    level = alpha / bins
    for j in range(bins):
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


#: Seeds the lab notebooks themselves write (``default_rng(2026)`` in lab 3, ``rng=0``/``rng=1`` in labs 3 and 5):
#: a noise function that recognises them is tested on them.
LAB_SEEDS = (0, 1, 2026)
#: How the generators of :func:`_noise_sample` are made, in this order (the ``kinds`` it returns index it).
GENERATOR_KINDS = ("default_rng()", "default_rng(s)", "SeedSequence(s).spawn", "Generator(PCG64(s))")


def _noise_sample(noise: Callable, runs: int, seed: int | None, read: Callable, *, replays: int,
                  fresh: float = 0.25, people: float = 0.5) -> tuple[np.ndarray, ...] | str:
    """``runs`` calls ``noise(rng)``, each with a generator of its own, read by ``read`` (a value, or why not one):
    (the values stacked, which calls had a fresh generator, each call's kind of generator), or a verdict string.

    A share ``1 − people`` of the generators are what ``np.random.default_rng()`` gives, a
    :class:`~numpy.random.PCG64` on a SeedSequence of a 128-bit entropy (drawn here from ``seed``'s stream). The
    others are made as people make them, a third each (:data:`GENERATOR_KINDS`): ``np.random.default_rng(s)`` for a
    small int ``s`` (0–9999 drawn at grading time, the lab's own seeds :data:`LAB_SEEDS` first),
    ``np.random.default_rng(np.random.SeedSequence(s).spawn(k + 1)[k])`` (children as the library and ``hunt``
    spawn them), and ``np.random.Generator(np.random.PCG64(s))``. A noise function that tells the grader's
    generators from a person's (gamer35's ``seed_seq.entropy > 2**64`` factor: Laplace on 128-bit seeds, zero on
    ``default_rng(2026)``) is then tested on both. The small seeds are distinct and ``default_rng(s)`` and
    ``PCG64(s)`` (the same stream) never share one, so the calls stay independent. A share ``fresh`` of the
    generators are used as made; the others are advanced by 1 to 10⁶ steps first, as a generator that has drawn
    before. Then ``replays`` of the calls, picked at random and in random order, are made again with generators made
    the same way: a function of ``rng`` alone returns the same noise (``"ignores rng"`` otherwise, and when every
    call returned the same). The calls come in runs on one generator object (:func:`_run_positions`): a run's later
    calls get the same object, advanced by the earlier calls; the replays remake whole runs.

    Returns (values, which calls are a fresh generator's first call, each call's kind of generator, each call's
    position in its run)."""
    if not callable(noise):
        return "not a function"
    master = np.random.default_rng(np.random.SeedSequence(seed))
    plan = _plan(master, runs, fresh, people)
    out = _call_plan(noise, plan, read)
    if isinstance(out, str):
        return out
    # replays: whole runs, picked at random and in random order, each on its generator made anew
    starts = np.flatnonzero(np.array(plan["pos"]) == 0)
    ends = np.append(starts[1:], runs)
    done = 0
    for r in master.permutation(starts.size):
        if done >= min(replays, runs):
            break
        rng = plan_generator(plan, int(starts[r]))
        for i in range(int(starts[r]), int(ends[r])):
            v = read(noise(rng))
            if isinstance(v, str):
                return v
            if not np.array_equal(np.asarray(v, dtype=float), out[i]):
                return "ignores rng"
            done += 1
    if np.all(out == out[0]):
        return "ignores rng"
    return (out, _first_calls_fresh(plan), np.array(plan["kind"], dtype=np.int64),
            np.array(plan["pos"], dtype=np.int64))


def _call_plan(noise: Callable, plan: dict, read: Callable) -> np.ndarray | str:
    """``noise`` called on every generator of ``plan`` in order (a run's calls on one object), read by ``read``."""
    values = []
    for rng in plan_generators(plan):
        v = read(noise(rng))
        if isinstance(v, str):
            return v
        values.append(v)
    return np.array(values, dtype=float)


def _first_calls_fresh(plan: dict) -> np.ndarray:
    """Which calls are a fresh generator's first call (how an analyst releases once)."""
    return np.array(plan["fresh"], dtype=bool) & (np.array(plan["pos"]) == 0)


def noise_plan(runs: int, seed: int | None = None, *, fresh: float = 0.25, people: float = 0.5) -> dict:
    """The generators of ``runs`` noise calls as plain data (JSON-able ints), drawn from ``seed`` (``None``: fresh
    entropy, as the grading plugin draws it for the kernel's sample); :func:`plan_generator` makes call ``i``'s.

    The same mix as :func:`_noise_sample`'s (see there): ``default_rng()`` on 128-bit entropy, ``default_rng(s)`` for
    small ``s`` (the lab's own :data:`LAB_SEEDS` first), ``SeedSequence(s).spawn`` children and ``PCG64(s)``, a share
    fresh and the others advanced.

    Examples
    --------
    >>> plan = noise_plan(8, seed=3)
    >>> plan_generator(plan, 0).random() == plan_generator(plan, 0).random()
    True
    """
    return _plan(np.random.default_rng(np.random.SeedSequence(seed)), int(runs), fresh, people)


#: the calls of a plan come in runs on one generator object, in random order: a share :data:`LONG_SHARE` of the
#: calls in long runs (lengths log-uniform from ``LONGEST_RUN + 1`` to that share of the calls: the labs' Monte Carlo
#: cells make 1,000 releases on one ``rng``), the others single calls (probability :data:`SINGLE_CALL`) or runs of 2
#: to :data:`LONGEST_RUN` calls (as ``hunt`` and ``fixed_draw`` use one); about 62 % of the calls are then a run's
#: later calls
SINGLE_CALL = 0.75
LONGEST_RUN = 10
LONG_SHARE = 0.2


def _run_positions(master: np.random.Generator, runs: int) -> np.ndarray:
    """Each call's position in its run (0: the run's first call, on a generator made anew)."""
    budget = int(round(LONG_SHARE * runs)) if runs > 5 * (LONGEST_RUN + 1) else 0
    lengths = []
    while budget > 0:
        n = int(math.exp(master.uniform(math.log(LONGEST_RUN + 1), math.log(max(budget, LONGEST_RUN + 1) + 1))))
        lengths.append(min(n, budget))
        budget -= lengths[-1]
    left = runs - sum(lengths)
    while left > 0:
        n = 1 if master.random() < SINGLE_CALL else int(master.integers(2, LONGEST_RUN, endpoint=True))
        lengths.append(min(n, left))
        left -= lengths[-1]
    return np.concatenate([np.arange(lengths[r]) for r in master.permutation(len(lengths))]).astype(np.int64)


def _plan(master: np.random.Generator, runs: int, fresh: float, people: float) -> dict:
    entropy = master.bytes(16 * runs)
    steps = master.integers(1, 10**6, size=runs, endpoint=True)
    is_fresh = np.zeros(runs, dtype=bool)
    is_fresh[master.choice(runs, int(round(fresh * runs)), replace=False)] = True
    steps[is_fresh] = 0
    kind = np.zeros(runs, dtype=np.int64)
    order = master.permutation(runs)
    n_people = int(round(people * runs))
    for k in (1, 2, 3):
        kind[order[(k - 1) * n_people // 3:k * n_people // 3]] = k
    # small seeds: distinct across default_rng(s) and PCG64(s) (one stream for both); the lab's own seeds first
    need = int(np.count_nonzero(kind == 1) + np.count_nonzero(kind == 3))
    pool = np.arange(max(10_000, need + len(LAB_SEEDS)))
    pool = np.concatenate([np.array(LAB_SEEDS), master.permutation(np.setdiff1d(pool, LAB_SEEDS))])
    small = np.zeros(runs, dtype=np.int64)
    pos = _run_positions(master, runs)  # a run's first call first: the lab's seeds go to generators made anew
    at = {k: np.concatenate([np.flatnonzero((kind == k) & (pos == 0)), np.flatnonzero((kind == k) & (pos > 0))])
          for k in (1, 2, 3)}
    small[at[1]] = pool[:at[1].size]
    small[at[3]] = pool[at[1].size:at[1].size + at[3].size]
    # spawned children: roots from the lab's seeds and small ints, 10 children each, (root, child) distinct
    spawned = at[2]
    roots = np.concatenate([np.array(LAB_SEEDS), master.choice(10_000, max(spawned.size // 10 + 1, 1) + 3,
                                                                  replace=False)])
    roots = np.array(list(dict.fromkeys(roots.tolist())), dtype=np.int64)
    child = np.zeros(runs, dtype=np.int64)
    for j, i in enumerate(spawned):
        small[i], child[i] = roots[j // 10], j % 10
    # runs: a run's later calls reuse its first call's generator object (their kind is the first call's)
    first = np.arange(runs) - pos
    return {"entropy": [int.from_bytes(entropy[16 * i:16 * i + 16], "little") for i in range(runs)],
            "steps": steps.tolist(), "fresh": is_fresh[first].tolist(), "kind": kind[first].tolist(),
            "small": small.tolist(), "child": child.tolist(), "pos": pos.tolist()}


def plan_generators(plan: dict) -> list[np.random.Generator]:
    """The generators of a :func:`noise_plan`'s calls, in order: the calls of one run get the **same object** (made
    anew for its first call), so calling a function on them in order is using one generator for the run's calls.

    Examples
    --------
    >>> gens = plan_generators(noise_plan(50, seed=3))
    >>> len(gens), len({id(g) for g in gens}) < 50
    (50, True)
    """
    pos = plan.get("pos", [0] * len(plan["kind"]))
    out: list[np.random.Generator] = []
    for i, p in enumerate(pos):
        out.append(plan_generator(plan, i) if int(p) == 0 else out[-1])
    return out


def plan_generator(plan: dict, i: int) -> np.random.Generator:
    """The generator of the run holding call ``i`` of a :func:`noise_plan`, made anew (its state before the run's
    first call; the same state each time)."""
    i -= int(plan.get("pos", [0] * (i + 1))[i])
    kind, small, child, steps = (int(plan[k][i]) for k in ("kind", "small", "child", "steps"))
    if kind == 0:
        rng = np.random.default_rng(int(plan["entropy"][i]))
    elif kind == 1:
        rng = np.random.default_rng(small)
    elif kind == 2:
        rng = np.random.default_rng(np.random.SeedSequence(small).spawn(child + 1)[child])
    else:
        rng = np.random.Generator(np.random.PCG64(small))
    if steps:
        rng.bit_generator.advance(steps)
    return rng


def _first_failure(got, law, scale: float, ses: float, alpha: float, kernel=None) -> str | None:
    """The first reason ``law`` gives on any of :func:`_groups`'s samples of ``got`` (a :func:`_noise_sample` result:
    its refusal as it is) and of ``kernel`` (:func:`_kernel_sample`'s: the same function's draws in the student's
    kernel; ``None`` when there is none), at ``alpha`` split evenly among all the samples; ``None`` when every
    sample passes."""
    if isinstance(got, str):
        return got
    if isinstance(kernel, str):
        return kernel
    samples = [(got, "")] + ([(kernel, "in the kernel: ")] if kernel is not None else [])
    groups = [(values[g], said) for (values, fresh, kind, pos), said in samples
              for g in _groups(fresh, kind, pos)]
    for values, said in groups:
        why = law(values, scale, ses, alpha / len(groups))
        if why is not None:
            return said + why
    return None


#: a noise function's draws in the student's kernel agree with its child's when within this relative tolerance
KERNEL_RTOL = 1e-9


def _kernel_sample(noise: Callable, read: Callable, got) -> tuple[np.ndarray, ...] | str | None:
    """The draws the student's function made in the student's **kernel** (the grading plugin's dump cell), checked
    against the same function run here: (values, fresh, kind) for the law tests, a refusal, or ``None`` when
    ``noise`` carries no kernel sample (a plain function: the project's tests, a lab's own check).

    Under the grading plugin (:mod:`blowfish_nb.labs._plugin`) ``noise`` is a proxy of the answer run in a child
    interpreter, and ``noise.kernel_sample`` is ``{"runs", "seed", "values"}``: ``seed`` was drawn in otter's
    process at grading time (never in the notebook or the zip), the kernel made the generators of
    ``noise_plan(runs, seed)`` after the answer cell and its check cell had run, and ``values`` are what the
    function returned there, as plain data (or why there are none). The verdict then requires that

    * each kernel draw is what the child's function returns on the same generator, run by run: the kernel called
      the function on :func:`plan_generators`' objects (a run's calls on one object) and so does this check, in the
      same order (``"kernel and grader differ"``):
      a function that tells the grader's child from a kernel (gamer35b's ``display.__name__ == "<lambda>"``, or
      ``In``, ``get_ipython``, ``sys.argv``, the modules loaded, the environment...) returns different noise in the
      two places, and is found on the first generator where it does;
    * the kernel's draws pass the same law tests as the child's (prefixed ``"in the kernel: "``).

    A function of ``rng`` alone cannot tell the kernel's generators from the child's or from a person's: they are
    drawn from the same mix (``default_rng()`` entropy, small seeds with the lab's own first, spawned children,
    ``PCG64(s)``, fresh or advanced; :func:`noise_plan`) with a seed the kernel sees only when the dump cell runs,
    after the function was defined. What this cannot find is a function that recognises the call itself (reads its
    caller's frame, ``In[-1]``, or a patched sampler): the kernel reports its own draws, and a kernel that lies about
    them is the teacher's scan's business (:mod:`blowfish_nb.labs.scan`).
    """
    kernel = getattr(noise, "kernel_sample", None)
    if kernel is None or isinstance(got, str):
        return None
    try:
        runs, draws = int(kernel["runs"]), kernel["values"]
        plan = noise_plan(runs, int(kernel["seed"]))
    except (KeyError, TypeError, ValueError):
        return "in the kernel: no draws"
    if isinstance(draws, str) or not isinstance(draws, (list, tuple)) or len(draws) != runs or runs < 1:
        return f"in the kernel: {draws if isinstance(draws, str) else 'no draws'}"
    values = []
    gens = plan_generators(plan)  # the same runs on one generator object as the kernel's calls
    for i, draw in enumerate(draws):
        v = read(draw)
        if isinstance(v, str):
            return f"in the kernel: {v}"
        w = read(noise(gens[i]))
        if isinstance(w, str):
            return w
        a, b = np.asarray(v, dtype=float), np.asarray(w, dtype=float)
        if not (np.array_equal(a, b) or np.allclose(a, b, rtol=KERNEL_RTOL, atol=0.0)):
            return "kernel and grader differ"
        values.append(v)
    return (np.array(values, dtype=float), _first_calls_fresh(plan), np.array(plan["kind"], dtype=np.int64),
            np.array(plan["pos"], dtype=np.int64))


def _groups(fresh: np.ndarray, kind: np.ndarray, pos: np.ndarray, least: int = 250) -> list[np.ndarray]:
    """The samples a noise law is tested on: every call, the fresh generators' first calls alone, the later calls of
    runs (a generator used before, in this run) alone, the calls after the :data:`LONGEST_RUN`-th of a long run
    alone, and each kind of generator alone (a sample with fewer than ``least`` calls only within the whole sample:
    the whole-number χ² of :func:`_difference_law` refuses right noise at 162 calls, 40 of 40 samples, and passes it
    at 250, 40 of 40; since the runs a fresh generator's first calls are about 8 % of the calls)."""
    return [np.ones(fresh.size, dtype=bool)] + [g for g in [fresh, pos > 0, pos >= LONGEST_RUN] + [
        kind == k for k in range(len(GENERATOR_KINDS))] if np.count_nonzero(g) >= least]


def _noise_vector(out: Any, cells: int) -> np.ndarray | str:
    """One release's noise as ``cells`` finite floats, or why it is not ("none", "not numbers", "shape", "not
    finite")."""
    if out is None or out is Ellipsis:
        return "none"
    if type(out) is not np.ndarray:
        try:
            out = np.asarray(out, dtype=float)
        except (TypeError, ValueError):
            return "not numbers"
    if out.dtype.kind not in "iuf":
        return "not numbers"
    if out.size != cells or out.ndim > 2:
        return "shape"
    out = out.astype(float).reshape(cells)
    if not np.all(np.isfinite(out)):
        return "not finite"
    return out


def expect_laplace_noise(noise: Callable, cells: int, scale: float, *, runs: int = 20_000,
                         seed: int | None = None, alpha: float = 1e-4) -> None:
    """Pass when ``noise(rng)`` returns ``cells`` independent Laplace draws of scale ``scale``, from ``rng``: continuous
    or whole-number (the library's discrete Laplace, p = 1 − e^(−1/scale)); see :func:`laplace_noise_verdict`.

    The function is given a generator and nothing else (the lab adds its noise to the counts). The generators' seeds
    are drawn when the test runs (``seed=None``): a mechanism tuned to one generator fails. Uniform, Gaussian or any
    other noise, even of the right variance, fails; so do noise of another scale, one noise value shared by every
    bin, and noise that ignores ``rng``.

    Examples
    --------
    >>> expect_laplace_noise(lambda rng: rng.laplace(0.0, 2.0, size=6), 6, 2.0, runs=1000, seed=1)
    >>> uniform = lambda rng: rng.uniform(-2.0 * 6**0.5, 2.0 * 6**0.5, size=6)  # the right variance, not Laplace
    >>> try:
    ...     expect_laplace_noise(uniform, 6, 2.0, runs=1000, seed=1)
    ... except AssertionError as e:
    ...     print(e)
    not independent Laplace noise of the right scale (law)
    """
    why = laplace_noise_verdict(noise, cells, scale, runs=runs, seed=seed, alpha=alpha)
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


def range_noise_verdict(noise: Callable, scale: float, *, runs: int = 3000, seed: int | None = None,
                        ses: float = 5.0, alpha: float = 1e-4) -> str | None:
    """Why ``noise(rng)`` is not the noise of one answer to a range by the Ordered mechanism — the difference of two
    prefix sums' independent Laplace draws of scale ``scale``, continuous or the library's whole-number law; ``None``
    when it is.

    The student writes the noise, never the release: the lab's code adds ``noise(rng)`` to the true count, and this
    test calls ``noise`` with nothing but a generator. No histogram is passed, and under the grading plugin the
    function cannot read one either (gamer34b's release hid 2 bits of a count below the old data-independence check's
    16 units in the last place; gamer37's read the global ``x``): it is graded as its source compiled with the handout's
    allowed names alone (``ordered``, ``R``, ``line``, ``eps``, ``k``, ``lo``, ``hi``, not ``x``; see
    :func:`laplace_noise_verdict` and :func:`blowfish_nb.labs.scan.pure_answer`), the answer's code under the
    handout's bindings at answer time. ``runs`` calls, in runs on one generator object (single calls, 2–10 calls, long runs:
    noise that is exact on a reused generator fails; see :func:`laplace_noise_verdict`), each run's generator made
    as ``np.random.default_rng()`` makes one (seeds drawn at grading time, ``seed=None``; an int only for the
    project's own tests), a quarter fresh and the others advanced as if used. The law of Z = noise(rng) (density
    (1 + |z|/b) e^(−|z|/b) / 4b for continuous noise, the convolution of two discrete Laplace laws for whole-number
    noise) is tested, not only its variance, on the whole sample, on the fresh calls alone and on each kind of
    generator alone (a share made as people make them, ``default_rng(s)``, spawned children, ``PCG64(s)``: see
    :func:`_noise_sample`), the level split evenly among these samples:

    * ``"none"`` / ``"not a number"`` / ``"not finite"``: each call must return one finite real number (a float, or an
      array of one);
    * ``"ignores rng"``: a quarter of the calls, made again in another order with generators of the same seeds, must
      return the same noise (noise from a generator, a table or a counter of the student's own does not), and the
      noise must vary;
    * ``"mean"``: the noise has mean zero within ``ses`` standard errors — a function that returns the release (the
      true count plus noise) instead of the noise is off by the count;
    * ``"exact release"`` / ``"repeats"``: continuous noise never equals 0 and never repeats a value (a resampled table
      of draws does);
    * ``"correlated"``: consecutive calls are independent (lag-1 correlation of Z and |Z| within ``ses``/√n);
    * ``"law"``: Kolmogorov–Smirnov (continuous) or χ² (whole numbers) against the exact law, at level ``alpha``/6;
    * ``"shape"``: the mean log-likelihood ratio of the exact law against the Gaussian of the sample's own variance,
      and against the Laplace law of the sample's own mean |Z|, lies within ``ses`` standard errors of its value
      under the exact law (per release about 0.024 ± 0.27 and 0.010 ± 0.14; a Gaussian of the right variance
      scores about −0.06): the omnibus test alone misses a Gaussian of the right variance three times in four at
      2,000 releases;
    * ``"too little"`` / ``"too much"``: the mean |Z| within ``ses`` standard errors of its value (1.5 b continuous).

    False rejects of right code: ``alpha`` for the law tests plus about 3·10⁻⁷ for each ``ses``-standard-error test
    (normal tail), so at most about 10⁻⁴ per grading (tests/labs/noise_rates.py counts them over seeds).
    """
    got = _noise_sample(noise, runs, seed, _one_number, replays=max(runs // 4, 20))
    return _first_failure(got, _difference_law, scale, ses, alpha, _kernel_sample(noise, _one_number, got))


def _difference_law(dev: np.ndarray, scale: float, ses: float, alpha: float) -> str | None:
    """Why ``dev`` (one value a call) is not the difference of two independent Laplace draws of scale ``scale``; see
    :func:`range_noise_verdict`."""
    from scipy import stats

    n = dev.size
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
    for a in (dev, np.abs(dev)):
        r = np.corrcoef(a[:-1], a[1:])[0, 1]
        if not abs(r) <= ses / math.sqrt(n - 1):
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


def expect_range_noise(noise: Callable, scale: float, *, runs: int = 3000, seed: int | None = None) -> None:
    """Pass when ``noise(rng)`` is the noise of the Ordered mechanism's answer to a range: the difference of two
    independent Laplace draws of scale ``scale`` (continuous or whole-number), drawn from ``rng``; see
    :func:`range_noise_verdict`. The function is given a generator and nothing else (the lab adds its noise to the
    true count).

    Uniform or Gaussian noise of the right variance fails, so do a single Laplace draw of any scale, a function that
    ignores ``rng``, one that returns the release instead of its noise, and one that returns stored values.

    Examples
    --------
    >>> expect_range_noise(lambda rng: rng.laplace(0.0, 10.0) - rng.laplace(0.0, 10.0), 10.0, seed=1)
    """
    why = range_noise_verdict(noise, scale, runs=runs, seed=seed)
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
    v = float(a.reshape(()))
    return v if math.isfinite(v) else "not finite"


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
