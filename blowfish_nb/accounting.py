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
  could be repeated as a one-bit question about the data.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import math
import os
import secrets
import threading
import warnings
from collections.abc import Mapping
from datetime import datetime, timezone
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._validation import as_generator, check_epsilon
from .domain import Domain
from .exceptions import (
    BlowfishError, BudgetExceededError, DomainError, InvalidParameterError, PolicyError, PrivacyLeakWarning,
    SessionError,
)
from .policy import Policy
from .release import Release

__all__ = ["Session", "KEY_ENV", "KEY_FILE_ENV", "FORMAT"]

#: spending within this of the budget counts as exact (sums of floats)
TOLERANCE = 1e-12
#: environment variable holding the curator's session key
KEY_ENV = "BLOWFISH_SESSION_KEY"
#: environment variable naming a file that holds the curator's session key
KEY_FILE_ENV = "BLOWFISH_SESSION_KEY_FILE"
#: format tag of saved sessions (version 2: signed; version 3: a signed save counter)
FORMAT = "blowfish_nb.session/3"
#: shortest key accepted, in bytes
MIN_KEY_BYTES = 16
#: the columns of the ledger, in order (one saved entry holds exactly these fields)
LEDGER_COLUMNS = ("time", "query", "columns", "epsilon", "policy", "mechanism", "expected_error", "accuracy",
                  "reproducible")
_SECTIONS = ("session", "counter", "budget", "domain", "policies", "fingerprint", "reproducible")
_EDITED = {"session": "the session id was edited", "counter": "the save counter was edited",
           "budget": "the budget was edited",
           "domain": "the domain (bins) was edited", "policies": "the policies were edited",
           "fingerprint": "the data fingerprint was edited", "reproducible": "the reproducible flag was edited"}
_FIELDS = {"format", *_SECTIONS, "ledger", "integrity"}
_NO_KEY = (
    "no session key: saved sessions are signed (HMAC-SHA256) so that an edited budget or ledger is detected. "
    f"Pass key=..., set ${KEY_ENV} to a secret of at least {MIN_KEY_BYTES} bytes, or set ${KEY_FILE_ENV} to a "
    "file holding one (e.g. python -c 'import secrets; print(secrets.token_hex(32))' > session.key; "
    "chmod 600 session.key). The curator keeps the key; the analyst must not hold it"
)


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
    def quote(self, query="histogram", columns=None, *, ranges=None, keep=None, epsilon=None, accuracy=None,
              mechanism="auto", projection: bool = True):
        """What :meth:`release` would spend, without reading the data or charging anything.

        Returns the budgeted plan: ``.epsilon`` (from ``epsilon`` or derived
        from ``accuracy``) and ``.mechanism``. The analyst panel shows it
        before Run.

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
        self._check_mechanism(mechanism)
        return self._catalog.quote(query, columns, ranges=ranges, keep=keep, epsilon=epsilon, accuracy=accuracy,
                                   mechanism=mechanism, projection=projection)

    def release(self, query="histogram", columns=None, *, ranges=None, keep=None, epsilon=None, accuracy=None,
                mechanism="auto", projection: bool = True, rng=None) -> Release:
        """A release charged to this session (same query arguments as ``df.blowfish.release``).

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
        from .planning import execute, histogram

        self._check_rng(rng)
        budgeted = self.quote(query, columns, ranges=ranges, keep=keep, epsilon=epsilon, accuracy=accuracy,
                              mechanism=mechanism, projection=projection)
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
        state = {
            "format": FORMAT,
            "session": self._id,
            "counter": counter,
            "budget": self.budget,
            **self._catalog.to_dict(),
            "fingerprint": _keyed_fingerprint(k, self._fingerprint),
            "reproducible": self._reproducible,
            "ledger": ledger,
        }
        state = json.loads(_canonical(state))  # exactly what load will read back
        state["integrity"] = _integrity(state, k)
        target = Path(path)
        partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
        try:
            partial.write_text(json.dumps(state, indent=1))
            os.replace(partial, target)  # a crash mid-write leaves the previous file, never half of one
        finally:
            partial.unlink(missing_ok=True)

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
        try:
            state = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise SessionError(f"cannot read a session from {where!r}: {exc}") from None
        if not isinstance(state, dict) or not str(state.get("format", "")).startswith("blowfish_nb.session/"):
            raise SessionError(f"{where!r} is not a saved blowfish_nb session")
        if state["format"] != FORMAT:
            raise SessionError(
                f"{where!r} is a {state['format']!r} file, saved without an integrity code (or by another version): "
                f"its budget and ledger cannot be verified, so it is refused; this version reads {FORMAT!r}"
            )
        _verify(state, k, where)
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


def session_key(key: bytes | str | None = None) -> bytes:
    """The curator's signing key: ``key``, else ``$BLOWFISH_SESSION_KEY``, else the file ``$BLOWFISH_SESSION_KEY_FILE``.

    Raises
    ------
    SessionError
        No key anywhere, an unreadable key file, or a key from the environment shorter than 16 bytes.
    InvalidParameterError
        ``key`` is not bytes/str or is shorter than 16 bytes (the key itself is never printed).

    Examples
    --------
    >>> len(session_key("0123456789abcdef"))
    16
    """
    if key is not None:
        if isinstance(key, str):
            raw = key.encode("utf-8")
        elif isinstance(key, (bytes, bytearray, memoryview)):
            raw = bytes(key)
        else:
            raise InvalidParameterError(f"key must be bytes or str, got a {type(key).__name__}")
        if len(raw) < MIN_KEY_BYTES:
            raise InvalidParameterError(f"key must be at least {MIN_KEY_BYTES} bytes long, got {len(raw)} bytes")
        return raw
    if os.environ.get(KEY_ENV):
        raw, source = os.environ[KEY_ENV].encode("utf-8"), f"${KEY_ENV}"
    elif os.environ.get(KEY_FILE_ENV):
        name = os.environ[KEY_FILE_ENV]
        try:
            raw = Path(name).read_bytes().strip()
        except OSError as exc:
            raise SessionError(f"cannot read the session key file {name!r} named by ${KEY_FILE_ENV}: "
                               f"{exc.strerror or exc}") from None
        source = f"the key file {name!r}"
    else:
        raise SessionError(_NO_KEY)
    if len(raw) < MIN_KEY_BYTES:
        raise SessionError(f"the session key in {source} must be at least {MIN_KEY_BYTES} bytes long, "
                           f"got {len(raw)} bytes")
    return raw


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


# -- integrity ----------------------------------------------------------------------------
def _canonical(value: Any) -> bytes:
    """Canonical JSON (sorted keys, fixed separators, ASCII): the bytes that are MACed."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _mac(key: bytes, session: str, section: str, value: Any) -> str:
    """HMAC-SHA256 of one section, bound to the format, the session id and the section's name."""
    message = _canonical({"format": FORMAT, "session": session, "section": section, "value": value})
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _keyed_fingerprint(key: bytes, fingerprint: str) -> str:
    """The data fingerprint as saved: keyed, so the file does not show the row count."""
    return "hmac-sha256:" + hmac.new(key, b"blowfish_nb fingerprint\0" + fingerprint.encode("utf-8"),
                                     hashlib.sha256).hexdigest()


def _integrity(state: dict, key: bytes) -> dict:
    sid, ledger = state["session"], state["ledger"]
    return {
        "algorithm": "HMAC-SHA256",
        "sections": {s: _mac(key, sid, s, state[s]) for s in _SECTIONS},
        "entries": len(ledger),
        "count": _mac(key, sid, "ledger count", len(ledger)),
        "ledger": [_mac(key, sid, f"ledger entry {i}", e) for i, e in enumerate(ledger)],
    }


def _same(stored: Any, computed: str) -> bool:
    return isinstance(stored, str) and hmac.compare_digest(stored.encode("ascii", "replace"), computed.encode("ascii"))


def _verify(state: dict, key: bytes, where: str) -> None:
    """Refuse any edit of a saved session, naming what changed (sections, entries, their count)."""
    integrity = state.get("integrity")
    if not isinstance(integrity, dict) or integrity.get("algorithm") != "HMAC-SHA256":
        raise SessionError(f"{where!r} carries no integrity code: it was not signed by save(), or the code was "
                           "removed; it is refused")
    unknown = sorted(set(state) - _FIELDS)
    if unknown:
        raise SessionError(f"{where!r} has fields a saved session does not have: {unknown}; it was edited")
    sid = state.get("session")
    if not isinstance(sid, str):
        sid = ""
    stored = integrity.get("sections") if isinstance(integrity.get("sections"), dict) else {}
    ok = {s: s in state and _same(stored.get(s), _mac(key, sid, s, state[s])) for s in _SECTIONS}
    ledger = state.get("ledger")
    macs = integrity.get("ledger") if isinstance(integrity.get("ledger"), list) else []
    count = integrity.get("entries")
    count_ok = (isinstance(count, int) and not isinstance(count, bool) and count >= 0
                and _same(integrity.get("count"), _mac(key, sid, "ledger count", count)))
    problems = [_EDITED[s] for s in _SECTIONS if not ok[s]]
    if not isinstance(ledger, list):
        problems.append("the ledger was replaced by something that is not a list of entries")
        ledger = []
    # which saved entry (by its index, bound into its code) each entry found is
    stored_macs = {m for m in macs if isinstance(m, str)}
    span = count if count_ok else max(len(macs), len(ledger))
    matched: list[int | None] = []
    for i, e in enumerate(ledger):
        order = [i, *(j for j in range(span) if j != i)]
        matched.append(next((j for j in order if _mac(key, sid, f"ledger entry {j}", e) in stored_macs), None))
    if not any(ok.values()) and not count_ok and not any(j is not None for j in matched):
        raise SessionError(
            f"the integrity code of {where!r} does not verify under this key: it was signed with another key, or "
            "rewritten as a whole; nothing in it can be trusted"
        )
    n = len(ledger)
    edited = [i for i, j in enumerate(matched) if j is None]
    for i in edited:
        problems.append(f"the ledger was edited (entry {i + 1} of {n})")
    intact = [j for j in matched if j is not None]
    if not count_ok:
        problems.append("the ledger's entry count was edited")
    else:
        # a saved entry is missing when no entry found is it, and no edited entry stands in its place
        missing = [j for j in range(count) if j not in intact and not (j in edited and n <= count)]
        if missing:
            which = ", ".join(str(j + 1) for j in missing)
            problems.append(f"entries were removed from the ledger ({len(missing)} of {count} saved entries "
                            f"missing: entry {which})")
        if n > count and not edited and len(set(intact)) == len(intact):
            problems.append(f"entries were added to the ledger ({n} found, {count} saved)")
    repeated = sorted({j for j in intact if intact.count(j) > 1})
    if repeated:
        problems.append("entries were added to the ledger (saved entry "
                        + ", ".join(str(j + 1) for j in repeated) + " appears twice)")
    if any(b <= a for a, b in zip(intact, intact[1:])) and not repeated:
        problems.append("the ledger was reordered")
    if problems:
        raise SessionError(f"{where!r} was edited after it was saved: " + "; ".join(dict.fromkeys(problems))
                           + ". It is refused")


# -- validation of loaded values (even under a valid code) --------------------------------
def _validated(state: dict, where: str):
    """(session id, budget, reproducible, attributes, policies, entries), every value checked."""
    from .planning import CELL_LIMIT, too_many_cells

    def bad(what: str) -> SessionError:
        return SessionError(f"{where!r}: {what}; the file is refused")

    sid = state.get("session")
    if not isinstance(sid, str) or not sid:
        raise bad("the session id must be a non-empty string")
    budget = state.get("budget")
    if not _finite_positive(budget):
        raise bad(f"the budget must be a positive finite number, got {budget!r}")
    budget = float(budget)
    reproducible = state.get("reproducible")
    if not isinstance(reproducible, bool):
        raise bad(f"the reproducible flag must be true or false, got {reproducible!r}")
    try:
        domain = Domain.from_dict(state.get("domain"))
    except (BlowfishError, TypeError, ValueError, KeyError, AttributeError):
        raise bad("the domain is not a valid domain description") from None
    attributes = {a.name: a for a in domain.attributes}
    if len(attributes) != len(domain.attributes):
        raise bad("the domain names a column twice")
    for c, a in attributes.items():
        if a.size > CELL_LIMIT:
            raise bad(too_many_cells([c], a.size))
    raw = state.get("policies")
    if not isinstance(raw, dict) or set(raw) != set(attributes):
        raise bad(f"the policies must give one policy per column {list(attributes)}")
    pols = {}
    for c in attributes:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyLeakWarning)
                p = Policy.from_dict(raw[c])
        except PolicyError as exc:
            raise bad(f"the policy of column {c!r} is not a known policy ({exc})") from None
        except (BlowfishError, TypeError, ValueError, KeyError, AttributeError):
            raise bad(f"the policy of column {c!r} is not a valid policy description") from None
        if p.domain != Domain([attributes[c]]):
            raise bad(f"the policy of column {c!r} is over other bins than the column's")
        if p.edge_count() == 0:
            raise bad(f"the policy of column {c!r} ({p.summary()}) has no edge: it protects no pair of values")
        pols[c] = p
    if not isinstance(state.get("fingerprint"), str):
        raise bad("the data fingerprint must be a string")
    ledger = state.get("ledger")
    if not isinstance(ledger, list):
        raise bad("the ledger must be a list of entries")
    entries = [_validated_entry(e, i, len(ledger), attributes, reproducible, bad) for i, e in enumerate(ledger)]
    spent = math.fsum(e["epsilon"] for e in entries)
    if spent > budget + TOLERANCE:
        raise bad(f"the ledger spends ε = {spent:.4g}, more than the budget {budget:g}")
    return sid, budget, reproducible, attributes, pols, entries


def _validated_entry(e, i: int, n: int, attributes: Mapping, reproducible: bool, bad) -> dict:
    at = f"ledger entry {i + 1} of {n}"
    if not isinstance(e, dict) or set(e) != set(LEDGER_COLUMNS):
        raise bad(f"{at} must have exactly the fields {list(LEDGER_COLUMNS)}")
    if not _finite_positive(e["epsilon"]):
        raise bad(f"{at}: epsilon must be a positive finite number, got {e['epsilon']!r}")
    for field in ("time", "query", "columns", "policy", "mechanism"):
        if not isinstance(e[field], str):
            raise bad(f"{at}: {field} must be a string")
    if any(c not in attributes for c in e["columns"].split(", ")):
        raise bad(f"{at}: columns {e['columns']!r} are not all columns of the session")
    x = e["expected_error"]
    if x is not None and not (_finite_positive(x) or (_number(x) and float(x) == 0.0)):
        raise bad(f"{at}: expected_error must be empty or a finite number ≥ 0, got {x!r}")
    acc = e["accuracy"]
    if acc is not None and not (isinstance(acc, list) and len(acc) == 2 and all(_finite_positive(v) for v in acc)):
        raise bad(f"{at}: accuracy must be empty or [alpha, beta], got {acc!r}")
    if e["reproducible"] is not reproducible:
        raise bad(f"{at}: reproducible must be {str(reproducible).lower()}, as the session's flag")
    return dict(e, epsilon=float(e["epsilon"]))


def _number(v) -> bool:
    return isinstance(v, Real) and not isinstance(v, (bool, np.bool_))


def _finite_positive(v) -> bool:
    return _number(v) and math.isfinite(float(v)) and float(v) > 0


def _fingerprint(data, columns: list[str]) -> str:
    """Row count and a hash of the session's columns; the same for a pandas frame and a Dask frame of it."""
    if isinstance(data, pd.DataFrame):
        parts = [_hash_parts(data[columns])]
    else:
        per = data[columns].map_partitions(lambda p: pd.DataFrame([_hash_parts(p)], columns=["hi", "lo", "n"]),
                                           meta={"hi": "int64", "lo": "int64", "n": "int64"})
        parts = [tuple(int(v) for v in row) for row in per.compute().itertuples(index=False)]
    hi, lo, n = (sum(p[i] for p in parts) for i in range(3))
    h = ((hi << 32) + lo) % (1 << 64)
    return f"{n}:{','.join(columns)}:{h:016x}"


def _hash_parts(frame: pd.DataFrame) -> tuple[int, int, int]:
    """Sums of the high and low 32-bit halves of the row hashes (no overflow below 2^31 rows), and the row count."""
    h = pd.util.hash_pandas_object(frame, index=False).to_numpy(dtype=np.uint64)
    return int((h >> np.uint64(32)).sum()), int((h & np.uint64(0xFFFFFFFF)).sum()), len(frame)
