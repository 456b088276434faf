"""Checks for lab 9, "A class under one budget": a curator serves, analysts connect, one shared account, what the
ledger promises, and private k-means as a release.

Each ``qN(answer)`` is a hint check: it knows hints, not answers. :func:`classroom` is the lab's curator (an analyst
service on this machine only, in a temporary folder that :meth:`Classroom.stop` removes); :func:`kmeans_ratio` and
:func:`cluster_counts` are the instruments of the k-means part.

Examples
--------
>>> from blowfish_nb.labs import lab09
>>> lab09.ANALYSTS, lab09.ACCOUNT
(('ana', 'ben', 'cleo'), 'class')
"""

from __future__ import annotations

import atexit
import os
import sqlite3
from fractions import Fraction
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ..datasets import salaries
from ..exceptions import InvalidParameterError
from ._check import LabCheckFailed, make_check, unanswered

__all__ = ["EXTRAS", "data", "classroom", "Classroom", "BUDGET", "ACCOUNT", "ANALYSTS", "BINS", "BOUNDS", "POLICY",
           "FIRST", "REFUSED", "SECOND", "AT_ONCE", "K", "ITERATIONS", "KMEANS_EPSILON", "METHODS", "SEEDS",
           "kmeans_ratio", "cluster_counts", "q1", "q2", "q3", "q4", "q5", "q5b", "q6", "q7", "unanswered",
           "LabCheckFailed"]

#: the package's extras this lab needs (the autograder installs them: the notebook starts an analyst service)
EXTRAS = "widgets,service"
#: the class's shared account and its total ε
ACCOUNT = "class"
BUDGET = 1.0
#: the analysts on the shared account (each with a token of their own)
ANALYSTS = ("ana", "ben", "cleo")
#: the served column: age in 31 bins of 2 years between the public bounds, under the line policy
BINS = {"age": 31}
BOUNDS = {"age": (18, 80)}
POLICY = "line"
#: question 1: ana's release, then ben's (ε)
FIRST = (0.3, 0.25)
#: question 2: ben's release the account cannot pay for, then the smaller one he asks for instead (ε)
REFUSED = 0.5
SECOND = 0.15
#: question 3: the ε each of the three analysts asks for at the same moment
AT_ONCE = 0.125
#: the k-means part: clusters, SuLQ iterations, the ε of a k-means release, the two routes, seeds measured
K = 3
ITERATIONS = 10
KMEANS_EPSILON = 0.4
METHODS = ("sulq", "histogram")
SEEDS = 10

#: classrooms serving now: held until stopped, so that one whose cell was re-run (its name rebound) is still stopped,
#: and its folder removed, when the kernel ends
_RUNNING: "set[Classroom]" = set()


def data(n: int = 2_000, seed: int = 0) -> pd.DataFrame:
    """The curator's data: the embedded salaries table (only the curator's kernel reads it).

    Examples
    --------
    >>> len(data())
    2000
    """
    return salaries(n=n, seed=seed)


class Classroom:
    """A curator serving the class: an analyst service on 127.0.0.1 (a free port), its ledger and key in a temporary
    folder of their own. :meth:`stop` stops the server and removes the folder; so does leaving a ``with`` block,
    and the end of the Python process.

    Made by :func:`classroom`. ``url`` and ``tokens`` are what the curator hands out; ``ledger_file`` is the
    curator's SQLite ledger (only the curator's machine holds it).
    """

    def __init__(self, frame: pd.DataFrame, *, budget: float = BUDGET):
        from .. import serve

        self._tmp = tempfile.TemporaryDirectory(prefix="blowfish-lab09-")
        root = Path(self._tmp.name)
        (root / "ledger").mkdir()
        (root / "key").mkdir()  # the key in a folder of its own (the service refuses it beside the ledger)
        self.ledger_file = root / "ledger" / "class.db"
        try:
            self.server = serve(frame, bins=BINS, bounds=BOUNDS, policy=POLICY, ledger=self.ledger_file,
                                key_file=root / "key" / "ledger.key", create=True, accounts={ACCOUNT: budget},
                                analysts={name: ACCOUNT for name in ANALYSTS}, host="127.0.0.1", port=0)
        except BaseException:
            self._tmp.cleanup()
            raise
        self.folder = root
        _RUNNING.add(self)

    @property
    def url(self) -> str:
        """Where the analysts connect: ``bf.connect(room.url, room.tokens[name])``."""
        return self.server.url

    @property
    def tokens(self) -> dict[str, str]:
        """Each analyst's token (the ledger keeps only their hashes)."""
        return self.server.tokens

    @property
    def running(self) -> bool:
        """Whether the service is serving."""
        return self.server.running

    def stop(self) -> None:
        """Stop the service (its port is closed) and delete its folder: ledger, key and heads. Safe to call twice."""
        if self._tmp is None:
            return
        try:
            self.server.stop()
        finally:
            self._tmp.cleanup()
            self._tmp = None
            _RUNNING.discard(self)

    def __enter__(self) -> "Classroom":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "serving" if self._tmp is not None and self.running else "stopped"
        return (f"<lab 9 classroom: analyst service {state} at {self.url} · account {ACCOUNT!r} (ε budget shared by "
                f"{', '.join(ANALYSTS)}) · column age, {POLICY} policy>")


def classroom(frame: pd.DataFrame, *, budget: float = BUDGET) -> Classroom:
    """Serve ``frame`` to the class: one account of ``budget`` shared by the analysts :data:`ANALYSTS`.

    Parameters
    ----------
    frame : pandas.DataFrame
        The curator's data (:func:`data`).
    budget : float
        The shared account's total ε.

    Returns
    -------
    Classroom
        ``.url``, ``.tokens``, ``.stop()``.

    Examples
    --------
    >>> import blowfish_nb as bf
    >>> with classroom(data(n=300)) as room:
    ...     ana = bf.connect(room.url, room.tokens["ana"])
    ...     ana.budget, ana.columns
    (1.0, ['age'])
    >>> room.running, room.folder.exists()
    (False, False)
    """
    if not isinstance(frame, pd.DataFrame):
        raise InvalidParameterError(f"frame must be a pandas DataFrame (the lab's data()), got {type(frame).__name__}")
    return Classroom(frame, budget=budget)


@atexit.register
def _stop_all() -> None:  # a kernel shut down with the service running leaves no folder behind
    for room in list(_RUNNING):
        room.stop()


def kmeans_ratio(method: str, *, epsilon: float = KMEANS_EPSILON, seeds: int = SEEDS) -> tuple[float, float]:
    """How much worse a private k-means of age is than the non-private one: the mean over ``seeds`` seeds of
    objective(private) / objective(non-private), and its standard error.

    Measured in this kernel on :func:`data` (k = :data:`K`, :data:`ITERATIONS` iterations, the line policy,
    seeds 0, 1, …): the analyst service draws its noise from OS entropy and takes no seed.

    Examples
    --------
    >>> mean, se = kmeans_ratio("histogram", seeds=2)
    >>> bool(mean > 0.9 and se >= 0)
    True
    """
    from ..clustering import kmeans

    if method not in METHODS:
        raise InvalidParameterError(f"method must be one of {METHODS}, got {method!r}")
    df = data()
    common = dict(policy=POLICY, bins=BINS["age"], bounds=BOUNDS["age"], iterations=ITERATIONS)
    best = kmeans(df, "age", K, epsilon=1e9, method="histogram", rng=0, **common).objective(df)
    r = np.array([kmeans(df, "age", K, epsilon=epsilon, method=method, rng=s, **common).objective(df) / best
                  for s in range(seeds)])
    return float(r.mean()), float(r.std(ddof=1) / np.sqrt(seeds)) if seeds > 1 else float("nan")


def cluster_counts(release, k: int = K, *, seed: int = 0) -> list[float]:
    """k-means on a released age histogram: post-processing of its noisy counts (no data, no ε), the best of
    several k-means++ starts. Returns the k centres in years, sorted.

    Examples
    --------
    >>> s = data().blowfish.session(1.0, bins=BINS, bounds=BOUNDS, policy=POLICY, reproducible=True)
    >>> len(cluster_counts(s.release("histogram", "age", epsilon=0.5, rng=0)))
    3
    """
    from ..clustering import RESTARTS, best_of_kmeanspp

    counts = np.clip(np.asarray(release.answers, dtype=float), 0.0, None)
    lo, hi = BOUNDS["age"]
    edges = np.linspace(lo, hi, BINS["age"] + 1)
    if counts.size != edges.size - 1:
        raise InvalidParameterError(f"release must be a histogram of age ({edges.size - 1} bins), got {counts.size}")
    centres = ((edges[:-1] + edges[1:]) / 2)[:, None]
    C = best_of_kmeanspp(centres, counts, k, RESTARTS, ITERATIONS, np.random.default_rng(seed))
    return sorted(float(c) for c in np.asarray(C)[:, 0])


q1 = make_check("lab09", "q1")
q2 = make_check("lab09", "q2")
q3 = make_check("lab09", "q3")
q4 = make_check("lab09", "q4")
q5 = make_check("lab09", "q5")


def q5b(room) -> None:
    """Question 5b's check: whether *your* edit of the ledger file was made, never what the service does after it.

    Reads the classroom's ledger file on its own connection (read-only; the service is not asked, so the check
    itself finds nothing out): a hint while the ``accounts`` table still shows what the account's charges spent
    (the edit sets it to 0), or when ``room`` is not the running classroom. What the service makes of the edit is
    question 5's answer, for the hidden tests to grade.

    Examples
    --------
    >>> try:
    ...     q5b("room")
    ... except LabCheckFailed as e:
    ...     print(str(e).split("Hint: ")[1])
    the check reads the classroom `room` the curator started: keep that name for it.
    """
    title = "q5b (the edit, made on the file)"
    if unanswered(room):
        raise LabCheckFailed(f"{title}: replace the `...` with your answer, then run this check again.")
    if not isinstance(room, Classroom):
        raise LabCheckFailed(f"{title}: not yet. Hint: the check reads the classroom `room` the curator started: "
                             "keep that name for it.")
    if room._tmp is None or not Path(room.ledger_file).is_file():
        raise LabCheckFailed(f"{title}: not yet. Hint: the classroom was stopped (its folder is gone): run the "
                             "notebook again from the top.")
    try:
        db = sqlite3.connect(f"file:{room.ledger_file}?mode=ro", uri=True)
        try:
            spent = [Fraction(str(r[0]).strip()) for r in
                     db.execute("SELECT spent FROM accounts WHERE name = ?", (ACCOUNT,)).fetchall()]
            charged = db.execute("SELECT count(*) FROM events WHERE account = ? AND epsilon > 0",
                                 (ACCOUNT,)).fetchone()[0]
        finally:
            db.close()
    except (sqlite3.Error, ValueError, ZeroDivisionError) as e:
        raise LabCheckFailed(f"{title}: not yet. Hint: the ledger file could not be read ({type(e).__name__}): "
                             "leave its tables in place, change only the account's `spent`.") from None
    if not (charged and spent and all(x == 0 for x in spent)):
        raise LabCheckFailed(f"{title}: not yet. Hint: the file's `accounts` table still shows what the account "
                             "spent: open `room.ledger_file` with sqlite3, run the UPDATE above (it sets `spent` to "
                             "'0'), close the connection, then ask for ana's release.")
    return None


q6 = make_check("lab09", "q6")
q7 = make_check("lab09", "q7")
