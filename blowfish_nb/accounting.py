"""Budgeted sessions: a total ε over one data set, a ledger, and composition across releases.

What a session is — and is not
------------------------------
An in-process :class:`Session` is **budget accounting for an honest
analyst, not a security boundary.** In one Python process whoever holds the
session can read ``session._data``, rewrite ``session._entries``, call the
mechanisms on the raw counts, or patch this module. The session keeps an
analyst who follows the rules from overspending by mistake (including from
several threads at once) and makes a saved ledger tamper-evident; it cannot
stop an analyst who runs code next to the data. Isolation — the data and the
ledger in another process, reached over a narrow API — is the job of the
analyst service (:mod:`blowfish_nb.service`).

Semantics (what a session promises)
-----------------------------------
* The curator fixes once the columns that may be queried, their bins (the
  domain) and one policy per column. The session's policy G is the attribute
  composition of the per-column policies (BlowfishDB Def. 3.2): two records
  are neighbours when they differ in one column, along an edge of that
  column's graph (or by ⊥ edges for added/removed records). A column policy
  with no edge at all protects nothing and is refused.
* A release names some of these columns; it runs under the composition of
  their policies — the projection of G onto them — and charges its ε.
* After releases with ε₁, …, ε_n the data are (Σ εᵢ, G)-Blowfish private
  (sequential composition, He et al. 2014 Thm 4.1; for per-attribute
  projected policies BlowfishDB Thm 1). The budget caps Σ εᵢ.
* Check, release and charge are one step: a release first *reserves* its ε
  under a lock (refused with :class:`BudgetExceededError`, before anything is
  computed, when the budget minus what is spent and reserved cannot pay for
  it), computes outside the lock — so releases of one session may run
  concurrently — and then turns the reservation into a ledger entry. A
  release that fails for any reason drops its reservation and charges nothing.
* Unless the curator opens the session with ``reproducible=True``, noise is
  drawn from OS entropy only: caller seeds and generators (anyone holding the
  seed can subtract the noise) and caller-made mechanism objects (which can
  return exact answers under a vetted name) are refused. The flag is recorded
  in every ledger entry and in the saved file.
* Domains above :data:`blowfish_nb.accessor.CELL_LIMIT` cells are refused
  before anything is built. Errors raised after the rows are read never carry
  numbers derived from the data.
* ``save``/``load`` keep the ledger across kernel restarts. The file carries an
  HMAC-SHA256 per section (budget, domain, policies, fingerprint, reproducible
  flag, each ledger entry and the entry count) under a key the curator holds
  (``key=``, ``$BLOWFISH_SESSION_KEY`` or a file named by
  ``$BLOWFISH_SESSION_KEY_FILE``); ``load`` refuses any edit, naming what
  changed, validates every value even when the codes verify, and refuses a
  frame whose fingerprint differs from the one the session was opened on.
* ``load`` is bound to one session: the caller names it (``session=s.id``,
  noted when the session was opened), and a genuine file saved by *another*
  session under the same key is refused.
* **Rollback limit.** A MAC cannot tell the newest save of a session from an
  *older genuine save* of the same session. Each save signs a counter
  (``s.counter``: 1, 2, ...) into the file; ``load`` refuses a file older than
  the newest save this Python process has seen of that session, and, given
  ``counter=`` (the value the curator noted after the last save), a file
  older than that. A rollback across processes by someone who can replace the
  file is caught only through ``counter=``; only a ledger held outside the
  analyst's reach (the service) closes it completely.
* The data are checked against the bins when the session opens (and when it
  is loaded), as the analyst service does: a value outside the bins is
  refused once, there, instead of as an uncharged per-release refusal that
  could be repeated as a one-bit question about the data. The signed file format itself is
  :mod:`blowfish_nb.session_file`.
"""

from __future__ import annotations

import hmac
import itertools
import math
import secrets
import threading
from collections.abc import Mapping
from datetime import datetime, timezone
from numbers import Integral

import numpy as np
import pandas as pd

from . import session_file
from ._validation import as_generator, check_epsilon
from .domain import Domain
from .exceptions import BlowfishError, BudgetExceededError, DomainError, InvalidParameterError, SessionError
from .policy import Policy
from .release import Release
from .session_file import (  # noqa: F401  (re-exported: the file format's names, where they were before)
    FORMAT, KEY_ENV, KEY_FILE_ENV, LEDGER_COLUMNS, TOLERANCE, _fingerprint, _integrity, _keyed_fingerprint, _same,
    _validated, session_key,
)

__all__ = ["Session", "KEY_ENV", "KEY_FILE_ENV", "FORMAT"]


class Session:
    """A privacy budget over one DataFrame, spent release by release (see the module notes).

    An in-process session is budget accounting for an honest analyst, not a
    security boundary: code in the same Python process can read
    ``session._data`` or rewrite the ledger. Put the data behind the isolated
    analyst service (:mod:`blowfish_nb.service`) when the analyst is
    not trusted.

    Parameters
    ----------
    data : pandas.DataFrame (or dask.dataframe.DataFrame)
        The rows; read once per release to count the histogram.
    budget : float
        Total ε the session may spend.
    bins : dict
        Column → binning (count, edges, ``"categorical"``, category list):
        the queryable columns and their domain.
    policy : str, tuple or dict
        One policy for every column (``"dp"``, ``"line"``, ``("threshold", θ)``,
        ``"bounded"``, ...) or a dict column → such a spec or a one-column Policy.
        A column policy without any edge (it would protect nothing) is refused.
    bounds : dict, optional
        Column → public (lo, hi) for columns binned by a count.
    reproducible : bool
        ``False`` (default): every release draws its noise from OS entropy;
        ``rng`` seeds/generators and caller-made mechanism objects are refused.
        ``True``: the curator allows them (for tests and teaching) and every
        ledger entry records that the session was reproducible — anyone with a
        seed can remove the noise of the releases made with it.

    Raises
    ------
    InvalidParameterError, DomainError, PolicyError
        A bad budget, bins, bounds or policy (naming the parameter), a column
        above the cell limit, or a policy that protects no pair of values.

    Examples
    --------
    >>> from blowfish_nb import datasets
    >>> df = datasets.salaries(n=500, seed=2)
    >>> s = df.blowfish.session(1.0, bins={"age": 62}, policy="line")
    >>> r = s.release("histogram", "age", epsilon=0.25)
    >>> s.spent, s.remaining, len(s.ledger)
    (0.25, 0.75, 1)
    >>> s.release("histogram", "age", epsilon=0.25, rng=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    blowfish_nb.exceptions.InvalidParameterError: rng: this session draws noise from OS entropy only...
    """

    def __init__(self, data, budget: float, *, bins: Mapping, policy="dp", bounds: Mapping | None = None,
                 reproducible: bool = False):
        from .planning import Catalog

        self.budget = check_epsilon(budget, "budget")
        if not isinstance(reproducible, (bool, np.bool_)):
            raise InvalidParameterError(f"reproducible must be True or False, got {reproducible!r}")
        self._catalog = Catalog.from_data(data, bins, policy, bounds)
        self._data = data
        self._reproducible = bool(reproducible)
        self._id = secrets.token_hex(16)
        self._counter = 0
        self._entries: list[dict] = []
        _check_fit(data, self._catalog)
        self._fingerprint = _fingerprint(data, self._catalog.columns)
        self._init_budget_state()

    # -- budget --------------------------------------------------------------------------
    @property
    def id(self) -> str:
        """This session's id: note it with the key; :meth:`load` needs it (``session=``) to refuse other files."""
        return self._id

    @property
    def counter(self) -> int:
        """How many times this session was saved (0 before the first save): the counter signed into its newest
        file. Note it after a save and pass it to :meth:`load` (``counter=``) to refuse older files."""
        return self._counter

    @property
    def spent(self) -> float:
        """ε spent so far (releases recorded in the ledger)."""
        with self._lock:
            return self._spent()

    @property
    def reserved(self) -> float:
        """ε held by releases that are running now (charged when they finish, dropped if they fail)."""
        with self._lock:
            return math.fsum(self._reservations.values())

    @property
    def remaining(self) -> float:
        """ε a new release can still use: the budget minus what is spent and reserved."""
        with self._lock:
            return max(0.0, self._available())

    @property
    def reproducible(self) -> bool:
        """Whether the curator allowed caller seeds and mechanism objects (recorded in the ledger)."""
        return self._reproducible

    @property
    def columns(self) -> list[str]:
        """The columns releases may use."""
        return self._catalog.columns

    def attribute(self, column: str):
        """The binned attribute (domain) of ``column``."""
        return self._catalog.attribute(column)

    def column_policy(self, column: str) -> Policy:
        """The curator's policy for ``column`` alone."""
        return self._catalog.column_policy(column)

    @property
    def policy(self) -> Policy:
        """G: the composition of every column's policy."""
        return self._catalog.policy_for(self.columns)

    @property
    def ledger(self) -> pd.DataFrame:
        """One row per release: time, query, columns, ε, policy summary, mechanism, expected error, accuracy,
        and whether the session allowed seeds and mechanism objects (``reproducible``)."""
        with self._lock:
            entries = list(self._entries)
        return pd.DataFrame(entries, columns=list(LEDGER_COLUMNS))

    # -- releasing -------------------------------------------------------------------------
    def quote(self, query="histogram", columns=None, **fields):
        """What :meth:`release` would spend, without reading the data or charging anything.

        Returns the budgeted plan: ``.epsilon`` (from ``epsilon`` or derived
        from ``accuracy``) and ``.mechanism``. The analyst panel shows it
        before Run. ``query`` is a :class:`~blowfish_nb.planning.Request`, or
        its query with ``columns`` and the other fields by name (``ranges``,
        ``keep``, ``epsilon``, ``accuracy``, ``mechanism``, ``projection``, ``k``,
        ``iterations``).

        Raises
        ------
        DomainError
            When the chosen columns span more than
            :data:`blowfish_nb.accessor.CELL_LIMIT` cells (checked from the
            bins, before the query is built).
        InvalidParameterError
            A bad argument, or a mechanism object in a session that is not
            reproducible.

        Examples
        --------
        >>> from blowfish_nb import datasets
        >>> s = datasets.salaries(n=500, seed=2).blowfish.session(1.0, bins={"age": 62})
        >>> q = s.quote("histogram", "age", accuracy=(20, 0.05))
        >>> q.mechanism.name, round(q.epsilon, 2), s.spent
        ('Laplace', 0.35, 0.0)
        """
        from .planning import Request

        request = Request.of(query, columns, **fields)
        self._check_mechanism(request.mechanism)
        return self._catalog.quote(request)

    def release(self, query="histogram", columns=None, *, rng=None, **fields) -> Release:
        """A release charged to this session (a :class:`~blowfish_nb.planning.Request`, or its fields as in
        :meth:`quote`).

        The ε is reserved under the session's lock before the rows are read,
        so concurrent releases can never spend more than the budget together.

        Parameters
        ----------
        mechanism : "auto" or a name of :data:`blowfish_nb.accessor.MECHANISMS`
            A Mechanism object only in a session opened with ``reproducible=True``.
        rng : None
            Noise comes from OS entropy. An int seed or a
            ``numpy.random.Generator`` only in a session opened with
            ``reproducible=True``.

        Raises
        ------
        BudgetExceededError
            When ε (given, or derived from ``accuracy``) exceeds :attr:`remaining`;
            nothing is computed and nothing is charged.
        InvalidParameterError
            A seed, generator or mechanism object in a session that is not reproducible.
        DomainError
            The data do not fit the curator's bins (the message names the
            column, never a value or a count from the data); nothing is charged.
        """
        from .planning import Request, execute, histogram

        self._check_rng(rng)
        request = Request.of(query, columns, **fields)
        mechanism = request.mechanism
        budgeted = self.quote(request)
        cols, domain = budgeted.plan.columns, budgeted.plan.domain
        token = self._reserve(budgeted.epsilon)
        try:
            try:
                x = histogram(self._data, domain)
            except BlowfishError:
                raise DomainError(
                    f"the data do not fit the session's bins on {cols} (a value is missing, not numeric or outside "
                    "the curator's bins); the curator must fix the bins or the data. Nothing was released or "
                    "charged"
                ) from None
            try:
                result = execute(x, budgeted, rng=rng)
            except Exception as exc:
                # Whether a release fails once the rows are read may depend on the data: a free retry would be a
                # free query. The reservation is charged and the ledger says so.
                failed = _failed_entry(budgeted, cols, mechanism, self._reproducible)
                with self._lock:
                    del self._reservations[token]
                    self._entries.append(failed)
                token = None
                message = (
                    f"the release on {cols} failed after the rows were read ({type(exc).__name__}); its details "
                    f"are withheld because they may depend on the data, and its ε = {budgeted.epsilon:.4g} was "
                    "charged (whether it fails may itself depend on the data). Nothing was released")
                try:
                    withheld = type(exc)(message)
                except Exception:  # an exception class with another constructor
                    withheld = BlowfishError(message)
                raise withheld from None
            entry = _entry(result, cols, mechanism, self._reproducible)
        except BaseException:
            if token is not None:
                with self._lock:
                    del self._reservations[token]
            raise
        with self._lock:  # one step: the reservation becomes the charge
            del self._reservations[token]
            self._entries.append(entry)
        return result

    def kmeans(self, columns, k: int, *, epsilon: float, iterations: int = 10, rng=None) -> Release:
        """SuLQ k-means over ordered columns, charged like any release: the whole ε of its ``iterations`` steps.

        The answers are the centres, indexed by (cluster, column):
        ``release.answers.unstack()`` is the k × d table. A k-means that the
        budget cannot pay is refused before the rows are read, and nothing is
        charged (see :mod:`blowfish_nb.mechanisms.sulq` for its privacy).

        Examples
        --------
        >>> from blowfish_nb import datasets
        >>> s = datasets.salaries(n=500, seed=2).blowfish.session(1.0, bins={"age": 31})
        >>> r = s.kmeans("age", 2, epsilon=0.5)
        >>> r.answers.shape, r.mechanism, s.spent
        ((2,), 'SuLQ k-means', 0.5)
        """
        return self.release("kmeans", columns, k=k, iterations=iterations, epsilon=epsilon, rng=rng)

    # -- persistence -----------------------------------------------------------------------
    def save(self, path, key: bytes | str | None = None) -> None:
        """Write the budget, domain, policies and ledger as JSON, signed with the curator's key.

        Parameters
        ----------
        path : str or path-like
            The file written.
        key : bytes or str, optional
            The curator's secret (at least 16 bytes); else ``$BLOWFISH_SESSION_KEY``,
            else the file named by ``$BLOWFISH_SESSION_KEY_FILE``.

        Raises
        ------
        SessionError
            No key anywhere (an unsigned file is never written), or an unreadable key file.

        Notes
        -----
        Each save signs the next value of :attr:`counter` into the file; :meth:`load`
        refuses files older than a counter it knows (see its rollback limit).

        Examples
        --------
        >>> import os, tempfile
        >>> from blowfish_nb import Session, datasets
        >>> df = datasets.salaries(n=500, seed=2)
        >>> s = df.blowfish.session(1.0, bins={"age": 31}, policy="line")
        >>> _ = s.release("histogram", "age", epsilon=0.4)
        >>> path = os.path.join(tempfile.mkdtemp(), "s.json")
        >>> s.save(path, key="the curator's secret key")
        >>> Session.load(path, df, key="the curator's secret key", session=s.id, counter=s.counter).remaining
        0.6
        """
        k = session_key(key)
        with self._lock, _SEEN_LOCK:
            ledger = list(self._entries)
            self._counter = max(self._counter, _SEEN.get(self._id, 0)) + 1
            counter = _SEEN[self._id] = self._counter
        session_file.write(path, {
            "format": FORMAT,
            "session": self._id,
            "counter": counter,
            "budget": self.budget,
            **self._catalog.to_dict(),
            "fingerprint": _keyed_fingerprint(k, self._fingerprint),
            "reproducible": self._reproducible,
            "ledger": ledger,
        }, k)

    @classmethod
    def load(cls, path, data, key: bytes | str | None = None, *, session: str | None = None,
             counter: int | None = None) -> "Session":
        """Reopen a saved session on the same data; refuses edited files, other sessions' files and other data.

        Parameters
        ----------
        path : str or path-like
            A file written by :meth:`save`.
        data : pandas.DataFrame (or dask.dataframe.DataFrame)
            The frame the session was opened on.
        key : bytes or str, optional
            The key the file was signed with (else from the environment, as in :meth:`save`).
        session : str
            The id of the session meant (:attr:`id`, noted when it was opened).
            Required: a genuine file of another session signed with the same
            key is refused.
        counter : int, optional
            The :attr:`counter` noted after the last save; a file saved
            before it (an older genuine save: a rollback) is refused.

        Raises
        ------
        SessionError
            Unreadable or unsigned file, no key, no or another session id, a
            save older than ``counter`` or than a save this process has seen,
            any edit (naming what changed: a section, ``entry i of n`` of the
            ledger, removed or added entries), a value out of range even under
            a valid code, a frame that is not the one the session was opened
            on, or data outside the session's bins.

        Notes
        -----
        Rollback limit: without ``counter=``, a file replaced by an older
        genuine save of the same session in another process is accepted (it
        verifies like the newest); within one process the newest save seen is
        remembered. Keep the counter with the session id, or serve the data
        (:mod:`blowfish_nb.service`) when the analyst can write the file.
        """
        from .planning import Catalog
        from .spec import frame_schema

        k = session_key(key)
        where = str(path)
        if not (isinstance(session, str) and session):
            raise SessionError(
                f"load needs session=<the id of the session saved in {where!r}> (its .id, noted when it was "
                f"opened), got {session!r}: another session's file signed with the same key would otherwise be "
                "accepted")
        if counter is not None and (isinstance(counter, bool) or not isinstance(counter, Integral) or counter < 0):
            raise InvalidParameterError(f"counter must be the session's save counter (an integer ≥ 0), got "
                                        f"{counter!r}")
        state = session_file.read(path, k)
        s = cls.__new__(cls)
        s._id, s.budget, s._reproducible, attributes, pols, s._entries = _validated(state, where)
        s._counter = _checked_counter(state, where, session, counter)
        s._catalog = Catalog(attributes, pols)
        columns = s._catalog.columns
        try:
            frame, _ = frame_schema(data)
        except DomainError as exc:
            raise SessionError(str(exc)) from None
        found = _fingerprint(data, columns) if all(c in frame.columns for c in columns) else ""
        if not _same(state["fingerprint"], _keyed_fingerprint(k, found)):
            raise SessionError(
                f"the data do not match the session saved in {where!r} (columns {columns}); "
                "open it on the same frame it was opened on"
            )
        try:
            _check_fit(data, s._catalog)
        except DomainError as exc:
            raise SessionError(str(exc)) from None
        s._data = data
        s._fingerprint = found
        s._init_budget_state()
        with _SEEN_LOCK:
            _SEEN[s._id] = max(_SEEN.get(s._id, 0), s._counter)
        return s

    def __repr__(self) -> str:
        flag = " · reproducible (seeds allowed)" if self._reproducible else ""
        return (f"<Session ε spent {self.spent:.4g} of {self.budget:g} · {len(self._entries)} releases{flag} · "
                f"{self.policy.summary()}>")

    def __reduce_ex__(self, protocol):
        raise SessionError(
            "a Session cannot be copied or pickled: a copy would spend the same budget twice; "
            "use save(path, key=...) and Session.load(path, data, key=...)"
        )

    # -- helpers ---------------------------------------------------------------------------
    def _init_budget_state(self) -> None:
        self._lock = threading.Lock()
        self._reservations: dict[int, float] = {}
        self._tokens = itertools.count()

    def _spent(self) -> float:
        return float(math.fsum(e["epsilon"] for e in self._entries))

    def _available(self) -> float:
        return math.fsum([self.budget, *(-e["epsilon"] for e in self._entries),
                          *(-r for r in self._reservations.values())])

    def _reserve(self, epsilon: float) -> int:
        """Hold ``epsilon`` for one release, or raise BudgetExceededError (the check and the hold are one step)."""
        with self._lock:
            available = self._available()
            if epsilon > available + TOLERANCE:
                held = math.fsum(self._reservations.values())
                busy = f" ({held:.4g} is reserved by releases still running)" if held > 0 else ""
                raise BudgetExceededError(
                    f"this release needs ε = {epsilon:.4g} but the session has {max(0.0, available):.4g} of "
                    f"{self.budget:g} left{busy}; nothing was computed or charged"
                )
            token = next(self._tokens)
            self._reservations[token] = epsilon
            return token

    def _check_rng(self, rng) -> None:
        if rng is None:
            return
        if not self._reproducible:
            if isinstance(rng, np.random.Generator):
                what = "a numpy Generator"
            elif isinstance(rng, Integral) and not isinstance(rng, bool):
                what = "an int seed"
            else:
                what = f"a {type(rng).__name__}"
            raise InvalidParameterError(
                f"rng: this session draws noise from OS entropy only, got {what}. Anyone holding a seed or a "
                "generator's state can subtract the noise and read the exact counts; leave rng=None, or have the "
                "curator open the session with reproducible=True (tests and teaching; recorded in the ledger)"
            )
        as_generator(rng)  # a bad rng is refused before the pass over the rows

    def _check_mechanism(self, mechanism) -> None:
        if isinstance(mechanism, str) or self._reproducible:
            return
        raise InvalidParameterError(
            f"mechanism must be 'auto' or the name of a vetted mechanism in this session, got an object of type "
            f"{type(mechanism).__name__}: a caller-made mechanism can return exact answers under a vetted "
            "name. Pass its name (see blowfish_nb.accessor.MECHANISMS), or have the curator open the session with "
            "reproducible=True (recorded in the ledger)"
        )


#: the newest save counter this process has seen, per session id (save and load); guarded by _SEEN_LOCK
_SEEN: dict[str, int] = {}
_SEEN_LOCK = threading.Lock()


def _checked_counter(state: dict, where: str, session: str, counter: int | None) -> int:
    """The file's save counter, once the file is known to be ``session``'s and not older than a known save."""
    if not hmac.compare_digest(state["session"].encode("utf-8"), session.encode("utf-8")):
        raise SessionError(f"{where!r} was saved by another session than {session!r} (with the same key); it is "
                           "refused. Load the file of the session you opened")
    found = state.get("counter")
    if isinstance(found, bool) or not isinstance(found, int) or found < 1:
        raise SessionError(f"{where!r}: the save counter must be an integer ≥ 1, got {found!r}; the file is refused")
    with _SEEN_LOCK:
        seen = _SEEN.get(session, 0)
    newest = max(seen, counter or 0)
    if found < newest:
        told = f"you passed counter={counter}" if (counter or 0) >= seen else f"this process has seen save {seen}"
        raise SessionError(f"{where!r} is save {found} of session {session!r}, older than its save {newest} "
                           f"({told}): an older save would undo the charges made since. It is refused")
    return found


def _check_fit(data, catalog) -> None:
    """Count every column once: data outside the bins are refused here, not per release (a repeatable free bit)."""
    from .planning import histogram

    for c in catalog.columns:
        try:
            histogram(data, Domain([catalog.attribute(c)]))
        except BlowfishError:
            raise DomainError(
                f"the data do not fit the bins of column {c!r} (a value is missing, not numeric or outside the "
                "curator's bins): fix the bins or the data before opening the session") from None



def _entry(result: Release, cols: list[str], mechanism, reproducible: bool) -> dict:
    """The ledger entry of a release, in plain JSON types (what save writes is what load reads)."""
    name = str(result.mechanism)
    if not isinstance(mechanism, str):
        name = f"{name} (caller-made {type(mechanism).__qualname__} object)"
    expected = result.expected_error
    return {
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "query": str(result.query),
        "columns": ", ".join(cols),
        "epsilon": float(result.epsilon),
        "policy": result.policy.summary(),
        "mechanism": name,
        "expected_error": None if expected is None else float(expected),
        "accuracy": None if result.accuracy is None else [float(v) for v in result.accuracy],
        "reproducible": bool(reproducible),
    }


def _failed_entry(budgeted, cols: list[str], mechanism, reproducible: bool) -> dict:
    """The ledger entry of a release that failed after the rows were read (charged, nothing released)."""
    name = getattr(budgeted.mechanism, "name", str(budgeted.mechanism))
    if not isinstance(mechanism, str):
        name = f"{name} (caller-made {type(mechanism).__qualname__} object)"
    return {
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "query": str(budgeted.plan.query.name),
        "columns": ", ".join(cols),
        "epsilon": float(budgeted.epsilon),
        "policy": budgeted.plan.policy.summary(),
        "mechanism": f"{name} — failed after reading the rows; charged, nothing released",
        "expected_error": None,
        "accuracy": None if budgeted.accuracy is None else [float(v) for v in budgeted.accuracy],
        "reproducible": bool(reproducible),
    }
