"""The analyst service's budget ledger: append-only events under a keyed hash chain, in one SQLite file.

Every change to the service's accounts, analysts and spending is one row of
the table ``events`` (kinds: ``account``, ``budget``, ``analyst``, ``revoke``,
``charge``, ``failed``), chained by an HMAC under a key kept outside the
ledger's folder (:mod:`blowfish_nb.service.chain`). The events are the only
truth: a :class:`Ledger` decides every check — budget, spend, token,
revocation, request id — from its replay of them
(:class:`~blowfish_nb.service.audit.State`), never from a table it derived.

Semantics
---------
* A ledger is made only on purpose: ``Ledger(path, create=True)``
  (``blowfish-nb init``, ``serve(..., create=True)``). A missing file is
  refused otherwise, and refused even then when a signed head says the
  ledger existed (it was deleted).
* A release is charged with the check in **one** ``BEGIN IMMEDIATE``
  transaction: the events committed since the last look are read, their
  HMACs checked and applied, and the account's spend in that replay (exact
  sum of its charges, 1e-12 tolerance) decides, under SQLite's write lock —
  threads and processes sharing the file never overspend. A refused charge
  writes nothing.
* A charge is keyed by (analyst, request id). Retrying a committed request
  returns the stored answer and charges nothing. SQLite (WAL,
  ``synchronous=FULL``) makes a commit all or nothing, also under SIGKILL.
* Tokens are ``secrets.token_urlsafe(32)``, shown once; the file holds only
  their SHA-256. :meth:`Ledger.authenticate` compares digests with
  :func:`hmac.compare_digest` against every token the events created.

What is detected
----------------
At start-up and by :meth:`Ledger.verify`: any edited, inserted, removed or
reordered event (its keyed hash or its ``prev`` fails: without the key no
event can be forged or re-chained); an event that breaks the ledger's rules;
derived tables that disagree with the events; dropped append-only triggers;
removed last events or an older copy of the database, against the signed
head beside it and the witness head in the key's folder (see
:mod:`~blowfish_nb.service.chain`). While open: every read and write first
checks that the last event it knows is still there, unchanged, and compares
the derived rows it touches (all tokens when authenticating) with the
replay; any difference raises :class:`LedgerIntegrityError` and the ledger
refuses every later call until it is opened again.

What is not detected: whoever holds the key can write anything. With the key
in ``$BLOWFISH_LEDGER_KEY`` there is no witness, so putting back an older
genuine copy of the database *and* its head file (a rollback) is accepted.
A head is written just after its commit, so a process killed in between
leaves the heads one commit behind: that last commit can be removed
undetected.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import threading
from contextlib import contextmanager, suppress
from fractions import Fraction
from typing import Any, Callable

from .._validation import check_epsilon
from ..exceptions import BlowfishError, BudgetExceededError, InvalidParameterError, SessionError
from .audit import KINDS, NAME, REQUEST_ID, TOLERANCE, State, check_derived, event_fields, extend, fits, replay_all
from .chain import LedgerIntegrityError, load_key, read_head, witness_path, write_head
from .chain import canonical as _canonical
from .schema import COLUMNS, FORMAT, append_event, open_schema, refuse_missing

try:
    import fcntl
except ImportError:  # not POSIX: writers of other processes queue on SQLite's busy timeout only
    fcntl = None

__all__ = ["Ledger", "LedgerIntegrityError", "AuthError", "KINDS", "TOLERANCE", "FORMAT"]

#: seconds a connection waits for another writer (SQLite busy timeout)
BUSY_TIMEOUT = 30.0


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
        The SQLite file.
    key_file : str or os.PathLike, optional
        The file holding the chain's key (mode 0600, outside the ledger's folder); its folder also keeps the
        witness head. Default: the key in ``$BLOWFISH_LEDGER_KEY`` (no witness).
    create : bool, default False
        Make a new ledger (and a new key file, when ``key_file`` names none) if ``path`` does not exist.
    anchor : bool, default True
        Check the signed heads at start-up and rewrite them after each commit (see the module notes).

    Raises
    ------
    LedgerIntegrityError
        The chain, the derived tables, the triggers or a signed head show an edit (the first bad event is named);
        or the key is not this ledger's key.
    SessionError
        The file is missing (without ``create``), is not a ledger, is of the unkeyed format 1 (``blowfish-nb
        upgrade`` converts it), or there is no key.

    Examples
    --------
    >>> import os, shutil, tempfile
    >>> folder, keys = tempfile.mkdtemp(), tempfile.mkdtemp()
    >>> ledger = Ledger(os.path.join(folder, "ledger.db"), key_file=os.path.join(keys, "ledger.key"), create=True)
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
    >>> ledger.close(); shutil.rmtree(folder); shutil.rmtree(keys)
    """

    def __init__(self, path, *, key_file=None, create: bool = False, anchor: bool = True):
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidParameterError(f"ledger must be a path, got {type(path).__name__}")
        self._path = os.fspath(path)
        self._anchor = bool(anchor)
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._lock_fd: int | None = None
        self._lock_pid = self._pid = os.getpid()
        self._closed = False
        self._broken: str | None = None
        exists = os.path.exists(self._path)
        if not exists and os.path.exists(self._head_path):
            raise LedgerIntegrityError(f"no ledger at path {self._path!r}, but its head file is there: the database "
                                       "was deleted or moved. Restore it from a backup; a new ledger would forget "
                                       "every account's spending")
        self._key = load_key(key_file, ledger=self._path, create=bool(create) and not exists)
        if not exists:
            refuse_missing(self._key, self._path, create)
        try:
            try:
                self._id = self._open_schema(new=not exists)
            except sqlite3.DatabaseError as error:
                raise SessionError(f"path {self._path!r} is not a ledger database: {error}") from None
            self._state = self._audit()
        except BaseException:
            self.close()
            raise
        if self._anchor:
            try:
                with self._exclusive():
                    self._write_heads(self._state.count, self._state.last)
            except OSError as error:  # found now, not after the first commit
                self.close()
                raise SessionError(f"cannot write the ledger's heads ({error.strerror or error}: "
                                   f"{error.filename!r}); the ledger's folder and the key's folder must be writable "
                                   "by the service") from None

    @classmethod
    def open(cls, path, *, key_file=None, create: bool = False, anchor: bool = True) -> "Ledger":
        """Open (or, with ``create``, make) the ledger at ``path`` and verify it: the same as ``Ledger(path, ...)``."""
        return cls(path, key_file=key_file, create=create, anchor=anchor)

    @property
    def path(self) -> str:
        """The SQLite file."""
        return self._path

    @property
    def key_created(self) -> bool:
        """Whether opening this ledger wrote a new key file (``create=True`` with a ``key_file`` that did not exist)."""
        return self._key.created

    # -- curator actions ------------------------------------------------------------------
    def add_account(self, name: str, budget: float) -> None:
        """Create an account with a total ε ``budget``; analysts added to it share that budget."""
        name = _check_name(name, "account")
        budget = check_epsilon(budget, "budget")

        def work(conn, state, append):
            self._check_rows(conn, state, accounts=[name])
            if name in state.accounts:
                raise InvalidParameterError(f"account {name!r} exists already")
            append("account", account=name, body={"budget": budget})
            conn.execute("INSERT INTO accounts (name, budget, spent) VALUES (?, ?, '0')", (name, budget))

        self._write(work)

    def set_budget(self, name: str, budget: float) -> None:
        """Change an account's total budget; never below what it has spent."""
        name = _check_name(name, "account")
        budget = check_epsilon(budget, "budget")

        def work(conn, state, append):
            self._check_rows(conn, state, accounts=[name])
            if name not in state.accounts:
                raise InvalidParameterError(f"account must name an existing account, got {name!r}")
            spent = state.accounts[name][1]
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

        def work(conn, state, append):
            self._check_rows(conn, state, accounts=[account], analysts=[name])
            if account not in state.accounts:
                raise InvalidParameterError(f"account must name an existing account, got {account!r}")
            if name in state.analysts:
                raise InvalidParameterError(f"analyst {name!r} exists already")
            append("analyst", analyst=name, account=account, body={"token_sha256": digest})
            conn.execute("INSERT INTO analysts (name, account, revoked) VALUES (?, ?, 0)", (name, account))
            conn.execute("INSERT INTO tokens (hash, analyst, revoked) VALUES (?, ?, 0)", (digest, name))

        self._write(work)
        return token

    def revoke(self, name: str) -> None:
        """Revoke an analyst: their token now gets 403 and they cannot be charged (a no-op when revoked already)."""
        name = _check_name(name, "analyst")

        def work(conn, state, append):
            self._check_rows(conn, state, analysts=[name])
            known = state.analysts.get(name)
            if known is None:
                raise InvalidParameterError(f"analyst must name an existing analyst, got {name!r}")
            if known[1]:
                return
            append("revoke", analyst=name, account=known[0], body={})
            conn.execute("UPDATE analysts SET revoked = 1 WHERE name = ?", (name,))
            conn.execute("UPDATE tokens SET revoked = 1 WHERE analyst = ?", (name,))

        self._write(work)

    def rotate(self, name: str) -> str:
        """Give an analyst a new token and return it; every older token is revoked (a revoked analyst is reinstated)."""
        name = _check_name(name, "analyst")
        token = secrets.token_urlsafe(32)
        digest = _digest(token)

        def work(conn, state, append):
            self._check_rows(conn, state, analysts=[name])
            known = state.analysts.get(name)
            if known is None:
                raise InvalidParameterError(f"analyst must name an existing analyst, got {name!r}")
            append("analyst", analyst=name, account=known[0], body={"token_sha256": digest})
            conn.execute("UPDATE tokens SET revoked = 1 WHERE analyst = ?", (name,))
            conn.execute("INSERT INTO tokens (hash, analyst, revoked) VALUES (?, ?, 0)", (digest, name))
            conn.execute("UPDATE analysts SET revoked = 0 WHERE name = ?", (name,))

        self._write(work)
        return token

    def accounts(self) -> list[dict]:
        """Every account, in creation order: ``{account, budget, spent, remaining, analysts}``."""
        with self._reading() as (_, state):
            members: dict[str, list[str]] = {}
            for name, known in state.analysts.items():
                members.setdefault(known[0], []).append(name)
            return [{"account": name, "budget": a[0], "spent": float(a[1]), "remaining": _remaining(a[0], a[1]),
                     "analysts": members.get(name, [])} for name, a in state.accounts.items()]

    def analysts(self) -> list[dict]:
        """Every analyst, in creation order: ``{analyst, account, revoked, last_seen}`` (last release time or None)."""
        with self._reading() as (_, state):
            return [{"analyst": n, "account": a[0], "revoked": a[1], "last_seen": a[2]}
                    for n, a in state.analysts.items()]

    # -- analyst actions ------------------------------------------------------------------
    def authenticate(self, token: str | None) -> str:
        """The analyst a token belongs to; :class:`AuthError` 401 (unknown, missing) or 403 (revoked).

        Every digest the events created is compared with :func:`hmac.compare_digest` (no early exit); the
        ``tokens`` table must agree with them. Messages never show the token.
        """
        if not isinstance(token, str) or not token:
            raise AuthError("no token: send the token the curator gave you", status=401)
        try:
            digest = _digest(token).encode("ascii")
        except UnicodeEncodeError:
            raise AuthError("unknown token", status=401) from None
        with self._reading() as (conn, state):
            found = None
            for stored, (name, revoked, _) in state.tokens.items():
                if hmac.compare_digest(stored.encode("ascii"), digest):
                    found = (name, revoked)
            self._check_rows(conn, state, analysts=[] if found is None else [found[0]], tokens=True)
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
            ``epsilon`` exceeds what the account has left by its events; nothing is written.
        AuthError
            The analyst is unknown (401) or revoked (403).
        LedgerIntegrityError
            The file was edited since the ledger was opened (nothing is written).
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
        with self._reading() as (conn, state):
            seq = state.requests.get((analyst, request_id))
            row = None if seq is None else self._event(conn, seq)
        if row is None:
            return None
        body = json.loads(row[7])
        return {"kind": row[2], "time": row[1], "epsilon": row[5], "entry": body["entry"],
                "response": _stored_text(row[2], body)}

    def balance(self, analyst: str) -> dict:
        """``{budget, spent, remaining}`` of the analyst's account, from one read of the events."""
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
        with self._reading() as (conn, state):
            account = _account_of(state, analyst)
            rows = conn.execute(f"SELECT {COLUMNS} FROM events WHERE account = ? AND kind IN ('charge', 'failed') "
                                "AND seq <= ? ORDER BY seq", (account, state.count)).fetchall()
            bad = [r[0] for r in rows if not self._genuine(r)]
            if bad or len(rows) != state.accounts[account][3]:
                self._fail([f"the releases of account {account!r} in the file are not the ones its events hold "
                            f"({len(rows)} found, {state.accounts[account][3]} charged; first altered: "
                            f"{bad[0] if bad else None})"])
        return [{**json.loads(r[7])["entry"], "analyst": r[3], "time": r[1]} for r in rows]

    # -- integrity --------------------------------------------------------------------------
    def head(self) -> tuple[int, str]:
        """``(count, hash)`` of the last event (the ledger's genesis value when empty): keep a copy to compare later."""
        with self._reading() as (_, state):
            return state.count, state.last

    def verify(self) -> tuple[int, str]:
        """Recompute the whole keyed chain and check the rules, derived tables, triggers and heads; return head().

        Raises
        ------
        LedgerIntegrityError
            Naming the first bad event and what is wrong ("event 17 (charge by alice) was altered or forged: ..."),
            and any further finding (derived tables, triggers, heads).
        """
        self._usable()
        try:
            state = self._audit()
        except LedgerIntegrityError as error:
            self._broken = str(error)
            raise
        with self._state_lock:
            if state.count >= self._state.count:
                self._state = state
        return state.count, state.last

    def write_head(self) -> tuple[int, str]:
        """Sign and write both heads from the database as it is now (after checking :meth:`head` against a trusted copy)."""
        with self._exclusive():
            count, last = self.head()
            self._write_heads(count, last, force=True)
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

        def work(conn, state, append):
            account = _active_account(state, analyst)
            self._check_rows(conn, state, accounts=[account], analysts=[analyst])
            seq = state.requests.get((analyst, request_id))
            if seq is not None:
                row = self._event(conn, seq)
                return _stored_text(row[2], json.loads(row[7])), False
            budget, spent = state.accounts[account][:2]
            if not fits(budget, spent, epsilon):
                raise BudgetExceededError(
                    f"this release needs epsilon={epsilon:.6g} but account {account!r} has "
                    f"{_remaining(budget, spent):.6g} of its budget {budget:.6g} left; nothing was charged")
            time = append(kind, analyst=analyst, account=account, epsilon=epsilon, request_id=request_id, body=body)
            conn.execute("UPDATE accounts SET spent = ? WHERE name = ?", (str(spent + Fraction(epsilon)), account))
            conn.execute("UPDATE analysts SET last_seen = ? WHERE name = ?", (time, analyst))
            return text, True

        return self._write(work)

    def _budget_of(self, analyst) -> tuple[float, Fraction]:
        with self._reading() as (conn, state):
            account = _account_of(state, analyst)
            self._check_rows(conn, state, accounts=[account])
            budget, spent = state.accounts[account][:2]
        return budget, spent

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

    def _usable(self) -> None:
        if self._broken is not None:
            raise LedgerIntegrityError(self._broken)

    def _fail(self, problems: list[str]) -> None:
        """Record an edit found while open (every later call is refused) and raise it."""
        self._broken = (f"ledger {self._path!r} was edited while open: " + "; also ".join(problems)
                        + "; nothing more is read or written until it is opened (and verified) again")
        raise LedgerIntegrityError(self._broken)

    def _sync(self, conn) -> None:
        """Apply the events committed since the last look (inside a transaction, state lock held).

        The last event known must still be there unchanged; each new one must chain, carry its keyed hash and
        keep the rules.
        """
        self._usable()
        state = self._state
        if state.count:
            row = conn.execute("SELECT hash FROM events WHERE seq = ?", (state.count,)).fetchone()
            if row is None or row[0] != state.last:
                self._fail([f"event {state.count} was {'removed' if row is None else 'replaced'}"])
        problems: list[str] = []
        rows = conn.execute(f"SELECT {COLUMNS} FROM events WHERE seq > ? ORDER BY seq", (state.count,))
        if not extend(state, rows, self._key, problems):
            self._fail(problems)

    @contextmanager
    def _reading(self):
        """``(connection, state)`` in one read transaction, the state brought up to the database first."""
        conn = self._connect()
        with self._state_lock:
            conn.execute("BEGIN")
            try:
                self._sync(conn)
                yield conn, self._state
            finally:
                with suppress(sqlite3.Error):
                    conn.execute("COMMIT")

    def _check_rows(self, conn, state, *, accounts=(), analysts=(), tokens: bool = False) -> None:
        """The derived rows a call relies on must be what the events say."""
        problems: list[str] = []
        check_derived(conn, state, problems, accounts=list(accounts), analysts=list(analysts), tokens=tokens)
        if problems:
            self._fail(problems)

    def _genuine(self, row) -> bool:
        seq, time, kind, analyst, account, epsilon, request_id, body, prev, stored = row
        try:
            fields = event_fields(seq, time, kind, analyst, account, epsilon, request_id, body)
        except InvalidParameterError:
            return False
        return hmac.compare_digest(self._key.event_hash(prev, fields), str(stored))

    def _event(self, conn, seq: int) -> tuple:
        """Event ``seq``, its keyed hash checked."""
        row = conn.execute(f"SELECT {COLUMNS} FROM events WHERE seq = ?", (seq,)).fetchone()
        if row is None or not self._genuine(row):
            self._fail([f"event {seq} was {'removed' if row is None else 'altered'}"])
        return row

    def _write(self, work: Callable) -> Any:
        """Run ``work(conn, state, append)`` in one BEGIN IMMEDIATE transaction on the synced state; sign the heads."""
        conn = self._connect()
        with self._exclusive():
            conn.execute("BEGIN IMMEDIATE")
            try:
                with self._state_lock:
                    self._sync(conn)
                    state, rows = self._state, []

                    def append(kind, **fields) -> str:
                        count, last = (state.count, state.last) if not rows else (rows[-1][0], rows[-1][9])
                        rows.append(append_event(conn, self._key, count + 1, last, kind, **fields))
                        return rows[-1][1]

                    result = work(conn, state, append)
                    conn.execute("COMMIT")
                    problems: list[str] = []
                    if not extend(state, rows, self._key, problems):  # never: the rules were checked by work
                        self._fail(problems)
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            if rows and self._anchor:
                self._write_heads(state.count, state.last)
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

    def _open_schema(self, new: bool) -> str:
        """Create the schema of a new ledger, or check the format and key of an existing one; return its id."""
        conn = self._connect()
        with self._exclusive():
            return open_schema(conn, self._key, new=new, path=self._path)

    def _audit(self) -> State:
        """Replay the whole chain from genesis and check everything else (the heads included); the verified state."""
        heads = []
        if self._anchor:
            with self._exclusive():  # no writer is between its commit and its head writes
                heads.append(("head file", self._head_path, read_head(self._head_path, "head file")))
                witness = witness_path(self._key, self._id)
                if witness is not None:
                    heads.append(("witness head", witness, read_head(witness, "witness head")))
        problems: list[str] = []
        state = replay_all(self._connect(), self._key, self._id, heads, problems)
        if self._anchor and heads[0][2] is None and state.count > 0:
            problems.append(f"the head file {self._head_path!r} is missing but the ledger holds {state.count} events "
                            "(it was deleted, or the database was copied without it): open with anchor=False, "
                            "compare head() with a trusted record, then call write_head()")
        if problems:
            raise LedgerIntegrityError(f"ledger {self._path!r}: " + "; also ".join(problems))
        return state

    @property
    def _head_path(self) -> str:
        return self._path + ".head"

    def _write_heads(self, count: int, last: str, force: bool = False) -> None:
        """Sign and write the head beside the database and the witness in the key's folder (under _exclusive)."""
        for where in (self._head_path, witness_path(self._key, self._id)):
            if where is not None:
                write_head(where, self._key, self._id, count, last, self._path, force=force)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _remaining(budget: float, spent: Fraction) -> float:
    return max(0.0, float(Fraction(budget) - spent))


def _stored_text(kind: str, body: dict) -> str:
    return body["response"] if kind == "charge" else body["message"]


def _active_account(state: State, analyst: str) -> str:
    known = state.analysts.get(analyst)
    if known is None:
        raise AuthError(f"unknown analyst {analyst!r}", status=401)
    if known[1]:
        raise AuthError(f"analyst {analyst!r} was revoked: nothing is charged or released", status=403)
    return known[0]


def _account_of(state: State, analyst) -> str:
    analyst = _check_name(analyst, "analyst")
    known = state.analysts.get(analyst)
    if known is None:
        raise InvalidParameterError(f"analyst must name an existing analyst, got {analyst!r}")
    return known[0]


def _check_name(value, name: str) -> str:
    if not isinstance(value, str) or not NAME.fullmatch(value):
        raise InvalidParameterError(f"{name} must be 1 to 64 characters among A-Z a-z 0-9 _ . @ -, "
                                    f"got {_short(value)}")
    return value


def _check_request_id(value) -> str:
    if not isinstance(value, str) or not REQUEST_ID.fullmatch(value):
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
