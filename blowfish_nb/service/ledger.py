"""The analyst service's budget ledger: append-only, hash-chained events in one SQLite file.

Every change to the service's accounts, analysts and spending is one row of
the table ``events`` (kinds: ``account``, ``budget``, ``analyst``, ``revoke``,
``charge``, ``failed``). Row ``seq`` carries ``hash = sha256(prev ||
canonical JSON of its other fields, seq included)``, where ``prev`` is the
hash of row ``seq − 1`` (64 zeros for row 1). The tables ``accounts``,
``analysts`` and ``tokens`` are derived from the events for speed; the events
are the truth.

Semantics
---------
* A release is charged with the check in **one** ``BEGIN IMMEDIATE``
  transaction: the account's remaining budget (its budget minus the exact sum
  of its charges, 1e-12 tolerance) is read and the charge appended under
  SQLite's write lock, so threads and processes sharing the file never
  overspend. A refused charge writes nothing.
* A charge is keyed by (analyst, request id). Retrying a committed request —
  a client that lost the answer, or a server killed after the commit —
  returns the stored answer and charges nothing. A server killed before the
  commit has charged nothing. SQLite (WAL, ``synchronous=FULL``) makes a commit
  all or nothing, also under SIGKILL or power loss.
* Tokens are ``secrets.token_urlsafe(32)``, shown once; the file holds only
  their SHA-256. :meth:`Ledger.authenticate` compares digests with
  :func:`hmac.compare_digest` against every stored token.

What is detected at start-up (and by :meth:`Ledger.verify`)
-----------------------------------------------------------
* An edited event (any field: ε, analyst, token hash, body, time): its hash no
  longer matches — "event 17 (charge by alice) was altered".
* A deleted event in the middle: a gap in ``seq``, or a ``prev`` that is not
  the previous hash when the rows were renumbered.
* A forged event whose hash was recomputed but whose ``prev`` is not its
  predecessor's hash; a forged event that breaks the ledger's own rules (over
  budget, by a revoked or unknown analyst, a reused request id, ...).
* Derived tables that disagree with the events (an edited ``spent``, budget,
  revocation or token hash), and dropped or rewritten append-only triggers.
* With ``anchor=True`` (the default) the head (event count and last hash) is
  written to ``<path>.head`` after each commit; a database with fewer events
  than the head file, a different hash at that count, or a missing head file
  is refused: this catches removed *last* events and a deleted database.

What is not detected: the chain is unkeyed, so whoever can write both the
database and the head file can rewrite the whole history consistently
(recompute every hash and the head), or append a well-formed event within
budget. The head file is a lower bound (a process killed between its commit
and the head write leaves it one behind), so events appended after the head
are accepted. For evidence against an attacker with write access to the
service's disk, copy :meth:`Ledger.head` somewhere they cannot write.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import re
import secrets
import sqlite3
import threading
from contextlib import contextmanager, suppress
from datetime import datetime, timezone
from fractions import Fraction
from typing import Any, Callable

from .._validation import check_epsilon
from ..exceptions import BlowfishError, BudgetExceededError, InvalidParameterError, SessionError

try:
    import fcntl
except ImportError:  # not POSIX: writers of other processes queue on SQLite's busy timeout only
    fcntl = None

__all__ = ["Ledger", "LedgerIntegrityError", "AuthError", "KINDS", "TOLERANCE", "GENESIS"]

#: spending within this of the budget counts as exact (sums of floats)
TOLERANCE = 1e-12
#: the kinds of event, in the order a ledger usually meets them
KINDS = ("account", "budget", "analyst", "revoke", "charge", "failed")
#: the ``prev`` of event 1
GENESIS = "0" * 64
#: seconds a connection waits for another writer (SQLite busy timeout)
BUSY_TIMEOUT = 30.0


class LedgerIntegrityError(SessionError):
    """The ledger's database disagrees with its hash chain, its own rules or its head file: it was edited."""


class AuthError(BlowfishError):
    """A token that opens nothing: ``status`` 401 (unknown or missing) or 403 (revoked).

    Examples
    --------
    >>> AuthError("analyst 'bob' was revoked", status=403).status
    403
    """

    def __init__(self, message: str, status: int = 401):
        super().__init__(message)
        self.status = status

    def __reduce__(self):
        return type(self), (str(self), self.status)


class Ledger:
    """The persistent budget ledger of the analyst service (one SQLite file, safe across threads and processes).

    Parameters
    ----------
    path : str or os.PathLike
        The SQLite file. Created with its schema when new (if ``create``).
    create : bool, default True
        Create the file when it does not exist; otherwise a missing file is refused.
    anchor : bool, default True
        Check the head file ``<path>.head`` at start-up and rewrite it after each commit (see the module notes).

    Raises
    ------
    LedgerIntegrityError
        The chain, the derived tables, the triggers or the head file show an edit (the first bad event is named).
    SessionError
        The file is missing (``create=False``) or is not a SQLite database.

    Examples
    --------
    >>> import os, shutil, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> ledger = Ledger.open(os.path.join(folder, "ledger.db"))
    >>> ledger.add_account("course", 1.0)
    >>> token = ledger.add_analyst("alice", "course")
    >>> ledger.authenticate(token)
    'alice'
    >>> ledger.charge("alice", "req-1", 0.25, {"query": "histogram"}, '{"answers": [3, 4]}')
    ('{"answers": [3, 4]}', True)
    >>> ledger.charge("alice", "req-1", 0.25, {"query": "histogram"}, "a retry")  # nothing charged
    ('{"answers": [3, 4]}', False)
    >>> ledger.remaining("alice"), ledger.head()[0]
    (0.75, 3)
    >>> ledger.close(); shutil.rmtree(folder)
    """

    def __init__(self, path, *, create: bool = True, anchor: bool = True):
        self._path = os.fspath(path)
        self._anchor = bool(anchor)
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._lock_fd: int | None = None
        self._lock_pid = os.getpid()
        self._pid = os.getpid()
        self._closed = False
        if not create and not os.path.exists(self._path):
            raise SessionError(f"no ledger at path {self._path!r} (pass create=True to start a new one)")
        try:
            try:
                self._create_schema()
            except sqlite3.DatabaseError as error:
                raise SessionError(f"path {self._path!r} is not a ledger database: {error}") from None
            count, last = self.verify()
        except BaseException:
            self.close()
            raise
        if self._anchor:
            with self._exclusive():
                self._write_head(count, last)

    @classmethod
    def open(cls, path, *, create: bool = True, anchor: bool = True) -> "Ledger":
        """Open (or create) the ledger at ``path`` and verify it: the same as ``Ledger(path, ...)``."""
        return cls(path, create=create, anchor=anchor)

    @property
    def path(self) -> str:
        """The SQLite file."""
        return self._path

    # -- curator actions ------------------------------------------------------------------
    def add_account(self, name: str, budget: float) -> None:
        """Create an account with a total ε ``budget``; analysts added to it share that budget."""
        name = _check_name(name, "account")
        budget = check_epsilon(budget, "budget")

        def work(conn, append):
            if _account_row(conn, name) is not None:
                raise InvalidParameterError(f"account {name!r} exists already")
            append("account", account=name, body={"budget": budget})
            conn.execute("INSERT INTO accounts (name, budget, spent) VALUES (?, ?, '0')", (name, budget))

        self._write(work)

    def set_budget(self, name: str, budget: float) -> None:
        """Change an account's total budget; never below what it has spent."""
        name = _check_name(name, "account")
        budget = check_epsilon(budget, "budget")

        def work(conn, append):
            row = _account_row(conn, name)
            if row is None:
                raise InvalidParameterError(f"account must name an existing account, got {name!r}")
            spent = Fraction(row[1])
            if Fraction(budget) < spent - Fraction(TOLERANCE):
                raise InvalidParameterError(f"budget of account {name!r} cannot go below what it has spent "
                                            f"({float(spent):.6g}), got {budget!r}")
            append("budget", account=name, body={"budget": budget})
            conn.execute("UPDATE accounts SET budget = ? WHERE name = ?", (budget, name))

        self._write(work)

    def add_analyst(self, name: str, account: str) -> str:
        """Create an analyst on ``account`` and return their token (shown once; the file keeps its SHA-256)."""
        name = _check_name(name, "analyst")
        account = _check_name(account, "account")
        token = secrets.token_urlsafe(32)
        digest = _digest(token)

        def work(conn, append):
            if _account_row(conn, account) is None:
                raise InvalidParameterError(f"account must name an existing account, got {account!r}")
            if _analyst_row(conn, name) is not None:
                raise InvalidParameterError(f"analyst {name!r} exists already")
            append("analyst", analyst=name, account=account, body={"token_sha256": digest})
            conn.execute("INSERT INTO analysts (name, account, revoked) VALUES (?, ?, 0)", (name, account))
            conn.execute("INSERT INTO tokens (hash, analyst, revoked) VALUES (?, ?, 0)", (digest, name))

        self._write(work)
        return token

    def revoke(self, name: str) -> None:
        """Revoke an analyst: their token now gets 403 and they cannot be charged (a no-op when revoked already)."""
        name = _check_name(name, "analyst")

        def work(conn, append):
            row = _analyst_row(conn, name)
            if row is None:
                raise InvalidParameterError(f"analyst must name an existing analyst, got {name!r}")
            if row[1]:
                return
            append("revoke", analyst=name, account=row[0], body={})
            conn.execute("UPDATE analysts SET revoked = 1 WHERE name = ?", (name,))
            conn.execute("UPDATE tokens SET revoked = 1 WHERE analyst = ?", (name,))

        self._write(work)

    def rotate(self, name: str) -> str:
        """Give an analyst a new token and return it; every older token is revoked (a revoked analyst is reinstated)."""
        name = _check_name(name, "analyst")
        token = secrets.token_urlsafe(32)
        digest = _digest(token)

        def work(conn, append):
            row = _analyst_row(conn, name)
            if row is None:
                raise InvalidParameterError(f"analyst must name an existing analyst, got {name!r}")
            append("analyst", analyst=name, account=row[0], body={"token_sha256": digest})
            conn.execute("UPDATE tokens SET revoked = 1 WHERE analyst = ?", (name,))
            conn.execute("INSERT INTO tokens (hash, analyst, revoked) VALUES (?, ?, 0)", (digest, name))
            conn.execute("UPDATE analysts SET revoked = 0 WHERE name = ?", (name,))

        self._write(work)
        return token

    def accounts(self) -> list[dict]:
        """Every account, in creation order: ``{account, budget, spent, remaining, analysts}``."""
        conn = self._connect()
        members: dict[str, list[str]] = {}
        for name, account in conn.execute("SELECT name, account FROM analysts ORDER BY rowid"):
            members.setdefault(account, []).append(name)
        return [{"account": name, "budget": budget, "spent": float(Fraction(spent)),
                 "remaining": _remaining(budget, Fraction(spent)), "analysts": members.get(name, [])}
                for name, budget, spent in conn.execute("SELECT name, budget, spent FROM accounts ORDER BY rowid")]

    def analysts(self) -> list[dict]:
        """Every analyst, in creation order: ``{analyst, account, revoked, last_seen}`` (last release time or None)."""
        rows = self._connect().execute("SELECT name, account, revoked, last_seen FROM analysts ORDER BY rowid")
        return [{"analyst": n, "account": a, "revoked": bool(r), "last_seen": t} for n, a, r, t in rows]

    # -- analyst actions ------------------------------------------------------------------
    def authenticate(self, token: str | None) -> str:
        """The analyst a token belongs to; :class:`AuthError` 401 (unknown, missing) or 403 (revoked).

        Every stored digest is compared with :func:`hmac.compare_digest` (no early exit); messages never show the
        token.
        """
        if not isinstance(token, str) or not token:
            raise AuthError("no token: send the token the curator gave you", status=401)
        try:
            digest = _digest(token).encode("ascii")
        except UnicodeEncodeError:
            raise AuthError("unknown token", status=401) from None
        found = None
        for stored, name, revoked in self._connect().execute("SELECT hash, analyst, revoked FROM tokens"):
            if hmac.compare_digest(stored.encode("ascii", "replace"), digest):
                found = (name, revoked)
        if found is None:
            raise AuthError("unknown token: it opens no analyst's account", status=401)
        if found[1]:
            raise AuthError(f"the token of analyst {found[0]!r} was revoked", status=403)
        return found[0]

    def charge(self, analyst: str, request_id: str, epsilon: float, entry: dict, response: str) -> tuple[str, bool]:
        """Check and charge one release, and store the answer the analyst receives — in one transaction.

        Parameters
        ----------
        analyst : str
            Who releases (as :meth:`authenticate` returned); their account pays.
        request_id : str
            The client's id of this request (1–64 of ``A–Z a–z 0–9 _ -``); a retry sends the same id.
        epsilon : float
            The release's ε (finite, > 0).
        entry : dict
            The ledger entry (plain JSON values), as :meth:`entries` returns it.
        response : str
            The JSON the analyst receives.

        Returns
        -------
        (str, bool)
            ``(response, True)`` when charged now; ``(stored response, False)`` when this request id was charged
            before (nothing is charged again, even when the budget is spent by now).

        Raises
        ------
        BudgetExceededError
            ``epsilon`` exceeds what the account has left; nothing is written.
        AuthError
            The analyst is unknown (401) or revoked (403).
        """
        return self._release("charge", analyst, request_id, epsilon, entry, _check_text(response, "response"))

    def charge_failed(self, analyst: str, request_id: str, epsilon: float, entry: dict,
                      message: str) -> tuple[str, bool]:
        """Charge a release that failed after the data were read, storing the error ``message`` it returned.

        The same as :meth:`charge` (same idempotency, same refusals), with the message in place of the response.
        """
        return self._release("failed", analyst, request_id, epsilon, entry, _check_text(message, "message"))

    def stored(self, analyst: str, request_id: str) -> str | None:
        """The response (or failure message) stored for ``(analyst, request_id)``, or None when never charged."""
        found = self.outcome(analyst, request_id)
        return None if found is None else found["response"]

    def outcome(self, analyst: str, request_id: str) -> dict | None:
        """What ``(analyst, request_id)`` was charged: ``{kind, time, epsilon, entry, response}`` or None.

        ``kind`` is ``"charge"`` (``response`` is what the analyst received) or ``"failed"`` (``response`` is the
        error message returned).
        """
        analyst = _check_name(analyst, "analyst")
        request_id = _check_request_id(request_id)
        row = self._connect().execute("SELECT kind, time, epsilon, body FROM events WHERE analyst = ? AND "
                                      "request_id = ?", (analyst, request_id)).fetchone()
        if row is None:
            return None
        body = json.loads(row[3])
        return {"kind": row[0], "time": row[1], "epsilon": row[2], "entry": body["entry"],
                "response": _stored_text(row[0], body)}

    def balance(self, analyst: str) -> dict:
        """``{budget, spent, remaining}`` of the analyst's account, from one read."""
        budget, spent = self._budget_of(analyst)
        return {"budget": budget, "spent": float(spent), "remaining": _remaining(budget, spent)}

    def remaining(self, analyst: str) -> float:
        """ε the analyst's account has left (never below 0)."""
        budget, spent = self._budget_of(analyst)
        return _remaining(budget, spent)

    def spent(self, analyst: str) -> float:
        """ε the analyst's account has spent (every analyst on it)."""
        return float(self._budget_of(analyst)[1])

    def budget(self, analyst: str) -> float:
        """The total ε budget of the analyst's account."""
        return self._budget_of(analyst)[0]

    def entries(self, analyst: str) -> list[dict]:
        """The ledger entries of the analyst's account, in order: each stored entry plus ``analyst`` and ``time``."""
        conn = self._connect()
        account = self._account_of(conn, analyst)
        rows = conn.execute("SELECT analyst, time, body FROM events WHERE account = ? AND kind IN "
                            "('charge', 'failed') ORDER BY seq", (account,))
        return [{**json.loads(body)["entry"], "analyst": who, "time": time} for who, time, body in rows]

    # -- integrity --------------------------------------------------------------------------
    def head(self) -> tuple[int, str]:
        """``(count, hash)`` of the last event (``(0, GENESIS)`` when empty): keep a copy to compare later."""
        row = self._connect().execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        return (0, GENESIS) if row is None else (row[0], row[1])

    def verify(self) -> tuple[int, str]:
        """Recompute the whole chain and check the rules, derived tables, triggers and head file; return head().

        Raises
        ------
        LedgerIntegrityError
            Naming the first bad event and what is wrong ("event 17 (charge by alice) was altered: ..."), and any
            further finding (derived tables, triggers, head file).
        """
        anchored = self._read_head() if self._anchor else None  # before the snapshot: it may only lag the events
        conn = self._connect()
        problems: list[str] = []
        conn.execute("BEGIN")
        try:
            count, last, state, chain_ok = _replay(conn, problems)
            if chain_ok:
                _compare_derived(conn, state, problems)
            _check_triggers(conn, problems)
            if chain_ok and anchored is not None:
                _check_anchor(conn, anchored, count, problems, self._head_path)
        except sqlite3.DatabaseError as error:
            problems.append(f"the database cannot be read as a ledger: {error}")
            count, last = 0, GENESIS
        finally:
            with suppress(sqlite3.Error):
                conn.execute("COMMIT")
        if anchored is None and self._anchor and count > 0 and not os.path.exists(self._head_path):
            problems.append(f"the head file {self._head_path!r} is missing but the ledger holds {count} events "
                            "(it was deleted, or the database was copied without it): open with anchor=False, "
                            "compare head() with a trusted record, then call write_head()")
        if problems:
            raise LedgerIntegrityError(f"ledger {self._path!r}: " + "; also ".join(problems))
        return count, last

    def write_head(self) -> tuple[int, str]:
        """Write the head file from the database as it is now (after checking :meth:`head` against a trusted copy)."""
        with self._exclusive():
            count, last = self.head()
            self._write_head(count, last, force=True)
        return count, last

    def close(self) -> None:
        """Close every connection this object opened (in any thread)."""
        self._closed = True
        if self._lock_fd is not None and self._lock_pid == os.getpid():
            with suppress(OSError):
                os.close(self._lock_fd)
        self._lock_fd = None
        with self._conns_lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            with suppress(sqlite3.Error):
                conn.close()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Ledger({self._path!r})"

    # -- helpers ----------------------------------------------------------------------------
    def _release(self, kind: str, analyst, request_id, epsilon, entry, text: str) -> tuple[str, bool]:
        analyst = _check_name(analyst, "analyst")
        request_id = _check_request_id(request_id)
        epsilon = check_epsilon(epsilon)
        if not isinstance(entry, dict):
            raise InvalidParameterError(f"entry must be a dict of plain JSON values, got {type(entry).__name__}")
        body = {"entry": entry, "response" if kind == "charge" else "message": text}
        _canonical(body, "entry")

        def work(conn, append):
            account = _active_account(conn, analyst)
            row = conn.execute("SELECT kind, body FROM events WHERE analyst = ? AND request_id = ?",
                               (analyst, request_id)).fetchone()
            if row is not None:
                return _stored_text(row[0], json.loads(row[1])), False
            budget, spent = _account_row(conn, account)
            spent = Fraction(spent)
            if not _fits(budget, spent, epsilon):
                raise BudgetExceededError(
                    f"this release needs epsilon={epsilon:.6g} but account {account!r} has "
                    f"{_remaining(budget, spent):.6g} of its budget {budget:.6g} left; nothing was charged")
            time = append(kind, analyst=analyst, account=account, epsilon=epsilon, request_id=request_id, body=body)
            conn.execute("UPDATE accounts SET spent = ? WHERE name = ?", (str(spent + Fraction(epsilon)), account))
            conn.execute("UPDATE analysts SET last_seen = ? WHERE name = ?", (time, analyst))
            return text, True

        return self._write(work)

    def _budget_of(self, analyst) -> tuple[float, Fraction]:
        conn = self._connect()
        budget, spent = _account_row(conn, self._account_of(conn, analyst))
        return budget, Fraction(spent)

    def _account_of(self, conn, analyst) -> str:
        analyst = _check_name(analyst, "analyst")
        row = _analyst_row(conn, analyst)
        if row is None:
            raise InvalidParameterError(f"analyst must name an existing analyst, got {analyst!r}")
        return row[0]

    def _connect(self) -> sqlite3.Connection:
        """This thread's connection (one per thread; new ones after a fork)."""
        if self._pid != os.getpid():  # a forked child must not use its parent's connections
            self._pid, self._local, self._conns = os.getpid(), threading.local(), []
        if self._closed:
            raise SessionError(f"ledger {self._path!r} is closed")
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        conn = sqlite3.connect(self._path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT * 1000)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise SessionError(f"ledger {self._path!r} cannot use write-ahead logging (journal_mode={mode})")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
        except BaseException:
            conn.close()
            raise
        self._local.conn = conn
        with self._conns_lock:
            self._conns.append(conn)
        return conn

    def _write(self, work: Callable) -> Any:
        """Run ``work(conn, append)`` in one BEGIN IMMEDIATE transaction; anchor the new head after the commit."""
        conn = self._connect()
        heads: list[tuple[int, str]] = []

        def append(kind, **fields) -> str:
            seq, digest, time = _append(conn, kind, **fields)
            heads.append((seq, digest))
            return time

        with self._exclusive():
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = work(conn, append)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            if heads and self._anchor:
                self._write_head(*heads[-1])
        return result

    @contextmanager
    def _exclusive(self):
        """The writers' queue: this process's threads on a lock, processes on ``flock(<path>.lock)``.

        SQLite alone makes a waiting writer sleep and retry, so a busy process can starve another one for the
        whole busy timeout; a blocked ``flock`` is woken as soon as the lock is free. BEGIN IMMEDIATE inside it
        still guards against writers that do not take the lock.
        """
        with self._write_lock:
            if fcntl is None:
                yield
                return
            if self._lock_fd is None or self._lock_pid != os.getpid():
                self._lock_fd, self._lock_pid = os.open(self._path + ".lock", os.O_RDWR | os.O_CREAT, 0o600), os.getpid()
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _create_schema(self) -> None:
        conn = self._connect()
        with self._exclusive():
            conn.execute("BEGIN IMMEDIATE")
            try:
                exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'").fetchone()
                if not exists:  # never re-create a dropped trigger or table silently: verify reports those
                    for statement in _SCHEMA:
                        conn.execute(statement)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    @property
    def _head_path(self) -> str:
        return self._path + ".head"

    def _read_head(self) -> tuple[int, str] | None:
        with self._exclusive():  # no writer is between its commit and its head write
            try:
                with open(self._head_path, "rb") as file:
                    data = file.read(4096)
            except FileNotFoundError:
                return None
        parsed = _parse_head(data)
        if parsed is None:
            raise LedgerIntegrityError(f"ledger {self._path!r}: the head file {self._head_path!r} is unreadable "
                                       f"(it was edited): {data[:200]!r}")
        return parsed

    def _write_head(self, count: int, last: str, force: bool = False) -> None:
        """Write the head in place (fixed length, one write) unless the file holds a later one; under _exclusive."""
        fd = os.open(self._head_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            current = _parse_head(os.read(fd, 4096))
            if not force and current is not None and current[0] >= count:
                return
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, _HEAD.format(count, last).encode("ascii"))
            if current is None:  # a new file: make sure it is never found empty after a power loss
                os.fsync(fd)
        finally:
            os.close(fd)


# -- schema ----------------------------------------------------------------------------------
_SCHEMA = (
    "CREATE TABLE events (seq INTEGER PRIMARY KEY, time TEXT NOT NULL, kind TEXT NOT NULL, analyst TEXT, "
    "account TEXT, epsilon REAL, request_id TEXT, body TEXT NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL)",
    "CREATE UNIQUE INDEX events_request ON events (analyst, request_id) WHERE request_id IS NOT NULL",
    "CREATE INDEX events_account ON events (account, seq)",
    "CREATE TRIGGER events_no_update BEFORE UPDATE ON events "
    "BEGIN SELECT RAISE(ABORT, 'ledger events are append-only: UPDATE refused'); END",
    "CREATE TRIGGER events_no_delete BEFORE DELETE ON events "
    "BEGIN SELECT RAISE(ABORT, 'ledger events are append-only: DELETE refused'); END",
    "CREATE TABLE accounts (name TEXT PRIMARY KEY, budget REAL NOT NULL, spent TEXT NOT NULL)",
    "CREATE TABLE analysts (name TEXT PRIMARY KEY, account TEXT NOT NULL REFERENCES accounts (name), "
    "revoked INTEGER NOT NULL, last_seen TEXT)",
    "CREATE TABLE tokens (hash TEXT PRIMARY KEY, analyst TEXT NOT NULL REFERENCES analysts (name), "
    "revoked INTEGER NOT NULL)",
)
_TRIGGERS = {s.split()[2]: s for s in _SCHEMA if s.startswith("CREATE TRIGGER")}
_COLUMNS = "seq, time, kind, analyst, account, epsilon, request_id, body, prev, hash"
_WHO = "SELECT kind, analyst, account FROM events WHERE seq = ?"
_HEAD = "blowfish_nb ledger head\ncount {:020d}\nhash {}\n"
_HEAD_RE = re.compile(rb"blowfish_nb ledger head\ncount (\d{20})\nhash ([0-9a-f]{64})\n")
_NAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
_REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_HEX64 = re.compile(r"[0-9a-f]{64}")


# -- writing ---------------------------------------------------------------------------------
def _append(conn, kind: str, *, analyst=None, account=None, epsilon=None, request_id=None,
            body: dict) -> tuple[int, str, str]:
    """Append one event after the last one; return its seq, hash and time."""
    row = conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    seq, prev = (1, GENESIS) if row is None else (row[0] + 1, row[1])
    time = datetime.now(timezone.utc).isoformat(timespec="microseconds")
    text = _canonical(body, "body")
    digest = _event_hash(prev, seq, time, kind, analyst, account, epsilon, request_id, text)
    conn.execute(f"INSERT INTO events ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 (seq, time, kind, analyst, account, epsilon, request_id, text, prev, digest))
    return seq, digest, time


def _event_hash(prev, seq, time, kind, analyst, account, epsilon, request_id, body) -> str:
    """sha256(prev || canonical JSON of the event's other fields, seq included)."""
    fields = {"seq": seq, "time": time, "kind": kind, "analyst": analyst, "account": account,
              "epsilon": epsilon, "request_id": request_id, "body": body}
    return hashlib.sha256(str(prev).encode("utf-8", "replace") + _canonical(fields, "event").encode("ascii")).hexdigest()


def _canonical(value, name: str) -> str:
    """Canonical JSON (sorted keys, fixed separators, ASCII, no NaN)."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidParameterError(f"{name} must hold plain JSON values (str, finite numbers, bool, None, lists, "
                                    f"dicts with str keys): {error}") from None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _fits(budget: float, spent: Fraction, epsilon: float) -> bool:
    """Whether ε fits in budget − spent (exact arithmetic: the correctly rounded fsum, 1e-12 tolerance)."""
    return Fraction(epsilon) <= Fraction(budget) - spent + Fraction(TOLERANCE)


def _remaining(budget: float, spent: Fraction) -> float:
    return max(0.0, float(Fraction(budget) - spent))


def _stored_text(kind: str, body: dict) -> str:
    return body["response"] if kind == "charge" else body["message"]


def _account_row(conn, name):
    return conn.execute("SELECT budget, spent FROM accounts WHERE name = ?", (name,)).fetchone()


def _analyst_row(conn, name):
    return conn.execute("SELECT account, revoked FROM analysts WHERE name = ?", (name,)).fetchone()


def _active_account(conn, analyst: str) -> str:
    row = _analyst_row(conn, analyst)
    if row is None:
        raise AuthError(f"unknown analyst {analyst!r}", status=401)
    if row[1]:
        raise AuthError(f"analyst {analyst!r} was revoked: nothing is charged or released", status=403)
    return row[0]


def _check_name(value, name: str) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise InvalidParameterError(f"{name} must be 1 to 64 characters among A-Z a-z 0-9 _ . @ -, "
                                    f"got {_short(value)}")
    return value


def _check_request_id(value) -> str:
    if not isinstance(value, str) or not _REQUEST_ID.fullmatch(value):
        raise InvalidParameterError(f"request_id must be 1 to 64 characters among A-Z a-z 0-9 _ -, "
                                    f"got {_short(value)}")
    return value


def _check_text(value, name: str) -> str:
    if not isinstance(value, str):
        raise InvalidParameterError(f"{name} must be a str, got {type(value).__name__}")
    return value


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _parse_head(data: bytes) -> tuple[int, str] | None:
    match = _HEAD_RE.fullmatch(data)
    return None if match is None else (int(match.group(1)), match.group(2).decode("ascii"))


# -- verifying -------------------------------------------------------------------------------
class _Broken(Exception):
    """An event that breaks the ledger's rules (raised by _State.apply, reported by _replay)."""


class _State:
    """The accounts, analysts, tokens and request ids the events add up to (the replay of the ledger)."""

    def __init__(self):
        self.accounts: dict[str, list] = {}  # name -> [budget, spent (exact), seq that last set it]
        self.analysts: dict[str, list] = {}  # name -> [account, revoked, last_seen, seq]
        self.tokens: dict[str, list] = {}  # sha256 -> [analyst, revoked, seq]
        self.requests: set[tuple[str, str]] = set()

    def apply(self, seq, time, kind, analyst, account, epsilon, request_id, body) -> None:
        try:
            body = json.loads(body)
        except ValueError:
            raise _Broken("its body is not JSON") from None
        if not isinstance(body, dict):
            raise _Broken("its body is not a JSON object")
        if kind not in KINDS:
            raise _Broken(f"its kind {_short(kind)} is none of {', '.join(KINDS)}")
        if kind in ("account", "budget"):
            self._budget(seq, kind, analyst, account, epsilon, request_id, body)
        elif kind in ("analyst", "revoke"):
            self._analyst(seq, kind, analyst, account, epsilon, request_id, body)
        else:
            self._charge(seq, time, kind, analyst, account, epsilon, request_id, body)

    def _budget(self, seq, kind, analyst, account, epsilon, request_id, body) -> None:
        if analyst is not None or epsilon is not None or request_id is not None:
            raise _Broken(f"a {kind} event names no analyst, epsilon or request id")
        budget = body.get("budget")
        if not _positive(budget):
            raise _Broken(f"its budget {_short(budget)} is not a positive finite number")
        if kind == "account":
            if not (isinstance(account, str) and _NAME.fullmatch(account)) or account in self.accounts:
                raise _Broken(f"account {_short(account)} is not a new account name")
            self.accounts[account] = [float(budget), Fraction(0), seq]
            return
        if account not in self.accounts:
            raise _Broken(f"account {_short(account)} does not exist")
        if Fraction(budget) < self.accounts[account][1] - Fraction(TOLERANCE):
            raise _Broken("the budget is set below what the account has spent")
        self.accounts[account][0], self.accounts[account][2] = float(budget), seq

    def _analyst(self, seq, kind, analyst, account, epsilon, request_id, body) -> None:
        if epsilon is not None or request_id is not None:
            raise _Broken(f"an {kind} event names no epsilon or request id")
        if account not in self.accounts:
            raise _Broken(f"account {_short(account)} does not exist")
        known = self.analysts.get(analyst)
        if known is not None and known[0] != account:
            raise _Broken(f"analyst {analyst} belongs to account {known[0]}, not {_short(account)}")
        if kind == "revoke":
            if known is None or known[1]:
                raise _Broken(f"analyst {_short(analyst)} is not an active analyst")
            known[1], known[3] = True, seq
            self._revoke_tokens(analyst, seq)
            return
        digest = body.get("token_sha256")
        if not (isinstance(digest, str) and _HEX64.fullmatch(digest)) or digest in self.tokens:
            raise _Broken("its token_sha256 is not a new SHA-256 hex digest")
        if known is None:
            if not (isinstance(analyst, str) and _NAME.fullmatch(analyst)):
                raise _Broken(f"analyst {_short(analyst)} is not a valid name")
            self.analysts[analyst] = [account, False, None, seq]
        else:  # a rotation: older tokens are revoked, the analyst is active
            known[1], known[3] = False, seq
            self._revoke_tokens(analyst, seq)
        self.tokens[digest] = [analyst, False, seq]

    def _charge(self, seq, time, kind, analyst, account, epsilon, request_id, body) -> None:
        known = self.analysts.get(analyst)
        if known is None or known[1]:
            raise _Broken(f"analyst {_short(analyst)} is not an active analyst")
        if account != known[0]:
            raise _Broken(f"analyst {analyst} belongs to account {known[0]}, not {_short(account)}")
        if not _positive(epsilon):
            raise _Broken(f"its epsilon {_short(epsilon)} is not a positive finite number")
        if not (isinstance(request_id, str) and _REQUEST_ID.fullmatch(request_id)):
            raise _Broken(f"its request id {_short(request_id)} is not valid")
        if (analyst, request_id) in self.requests:
            raise _Broken(f"request id {request_id} was charged before")
        text = body.get("response" if kind == "charge" else "message")
        if not isinstance(body.get("entry"), dict) or not isinstance(text, str):
            raise _Broken("its body is not an entry with a stored answer")
        budget, spent, _ = self.accounts[account]
        if not _fits(budget, spent, epsilon):
            raise _Broken(f"it spends more than account {account} had left")
        self.requests.add((analyst, request_id))
        self.accounts[account][1] = spent + Fraction(epsilon)
        self.accounts[account][2] = seq
        known[2], known[3] = time, seq

    def _revoke_tokens(self, analyst: str, seq: int) -> None:
        for token in self.tokens.values():
            if token[0] == analyst and not token[1]:
                token[1], token[2] = True, seq


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _describe(kind, analyst, account) -> str:
    """How an event is named in messages ("charge by alice")."""
    who, where = _label(analyst), _label(account)
    return {"charge": f"charge by {who}", "failed": f"failed release by {who}", "analyst": f"analyst {who}",
            "revoke": f"revoke of {who}", "account": f"account {where}",
            "budget": f"budget of {where}"}.get(kind, f"kind {_short(kind)}")


def _label(value) -> str:
    return value if isinstance(value, str) and _NAME.fullmatch(value) else _short(value)


def _replay(conn, problems: list[str]) -> tuple[int, str, _State, bool]:
    """Recompute every hash and apply every event in order; stop at the first bad one."""
    state, prev, expected = _State(), GENESIS, 1
    for seq, time, kind, analyst, account, epsilon, request_id, body, stored_prev, stored in conn.execute(
            f"SELECT {_COLUMNS} FROM events ORDER BY seq"):
        what = f"event {seq} ({_describe(kind, analyst, account)})"
        if seq != expected:
            problems.append(f"event {expected} is missing: the events go from seq {expected - 1} to {seq} "
                            "(rows were deleted)" if isinstance(seq, int) and seq > expected else
                            f"{what} is numbered out of order: seq {expected} was due")
            return expected - 1, prev, state, False
        if stored_prev != prev:
            problems.append(f"{what} does not follow event {seq - 1}: its prev is not that event's hash "
                            "(an event was removed, replaced or forged)")
            return seq - 1, prev, state, False
        try:
            computed = _event_hash(prev, seq, time, kind, analyst, account, epsilon, request_id, body)
        except InvalidParameterError:  # a field no writer stores (a BLOB, a NaN)
            computed = None
        if computed != stored:
            problems.append(f"{what} was altered: its hash does not match its content")
            return seq - 1, prev, state, False
        try:
            state.apply(seq, time, kind, analyst, account, epsilon, request_id, body)
        except _Broken as why:
            problems.append(f"{what} breaks the ledger's rules: {why} (a forged event)")
            return seq - 1, prev, state, False
        prev, expected = stored, expected + 1
    return expected - 1, prev, state, True


def _compare_derived(conn, state: _State, problems: list[str]) -> None:
    """The derived tables must hold exactly what the events add up to."""
    def spent(text):
        try:
            return Fraction(text)
        except (TypeError, ValueError):
            return text

    tables = {
        "accounts": ({n: (b, spent(s)) for n, b, s in conn.execute("SELECT name, budget, spent FROM accounts")},
                     {n: ((a[0], a[1]), a[2]) for n, a in state.accounts.items()}, "account", ("budget", "spent")),
        "analysts": ({n: (a, bool(r), t) for n, a, r, t in
                      conn.execute("SELECT name, account, revoked, last_seen FROM analysts")},
                     {n: ((a[0], a[1], a[2]), a[3]) for n, a in state.analysts.items()}, "analyst",
                     ("account", "revoked", "last_seen")),
        "tokens": ({h: (a, bool(r)) for h, a, r in conn.execute("SELECT hash, analyst, revoked FROM tokens")},
                   {h: ((t[0], t[1]), t[2]) for h, t in state.tokens.items()}, "token sha256", ("analyst", "revoked")),
    }
    for table, (found, due, key_name, fields) in tables.items():
        for key in sorted(due, key=lambda k: due[k][1]):  # in the events' order: the first event wronged is named
            value, seq = due[key]
            made_by = f"event {seq} ({_describe(*conn.execute(_WHO, (seq,)).fetchone())})"
            if key not in found:
                problems.append(f"the {table} table lacks the {key_name} {_short(key)} that {made_by} made")
                return
            for field, have, want in zip(fields, found[key], value):
                if have != want:
                    problems.append(f"the {table} table disagrees with {made_by}: {key_name} {_short(key)} has "
                                    f"{field} {_shown(have)} in the table, {_shown(want)} by the events")
                    return
        extra = sorted(set(found) - set(due), key=str)
        if extra:
            problems.append(f"the {table} table has a row no event made ({key_name} {_short(extra[0])})")
            return


def _shown(value) -> str:
    return repr(float(value) if isinstance(value, Fraction) else value)


def _check_triggers(conn, problems: list[str]) -> None:
    found = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'"))
    for name, sql in _TRIGGERS.items():
        if found.get(name) != sql:
            problems.append(f"the append-only trigger {name} on events was {'rewritten' if name in found else 'dropped'}")


def _check_anchor(conn, anchored: tuple[int, str], count: int, problems: list[str], where: str) -> None:
    """The database must extend the head the head file recorded (it may be ahead: the file is written after)."""
    want_count, want_hash = anchored
    if want_count == 0:
        return
    row = conn.execute("SELECT hash FROM events WHERE seq = ?", (want_count,)).fetchone()
    if row is None or count < want_count:
        problems.append(f"the head file {where!r} records {want_count} events but the database holds "
                        f"{count}: the last events were removed")
    elif row[0] != want_hash:
        problems.append(f"event {want_count} is not the one the head file {where!r} recorded (its hash differs): "
                        "the history was rewritten")
