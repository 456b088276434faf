"""The ledger's file: its tables, its format and identity (``meta``), and how one event is appended.

``events`` holds the truth (append-only: two triggers refuse UPDATE and
DELETE); ``accounts``, ``analysts`` and ``tokens`` are derived from it for
readers of the file, and checked, never trusted
(:mod:`blowfish_nb.service.audit`); ``meta`` names the format, the ledger's
random id and a check value of its key (:mod:`blowfish_nb.service.chain`).
"""

from __future__ import annotations

import hmac
import os
import secrets
from datetime import datetime, timezone

from ..exceptions import SessionError
from .audit import TRIGGERS, event_fields
from .chain import LedgerIntegrityError, canonical, witnesses_of

__all__ = ["FORMAT", "SCHEMA", "COLUMNS", "open_schema", "refuse_missing", "append_event"]

#: the file format this version writes (``meta.format``); format 1 (unkeyed) is converted by ``upgrade``
FORMAT = "blowfish_nb ledger 2"
SCHEMA = (
    "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE events (seq INTEGER PRIMARY KEY, time TEXT NOT NULL, kind TEXT NOT NULL, analyst TEXT, "
    "account TEXT, epsilon REAL, request_id TEXT, body TEXT NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL)",
    "CREATE UNIQUE INDEX events_request ON events (analyst, request_id) WHERE request_id IS NOT NULL",
    "CREATE INDEX events_account ON events (account, seq)",
    *TRIGGERS.values(),
    "CREATE TABLE accounts (name TEXT PRIMARY KEY, budget REAL NOT NULL, spent TEXT NOT NULL)",
    "CREATE TABLE analysts (name TEXT PRIMARY KEY, account TEXT NOT NULL REFERENCES accounts (name), "
    "revoked INTEGER NOT NULL, last_seen TEXT)",
    "CREATE TABLE tokens (hash TEXT PRIMARY KEY, analyst TEXT NOT NULL REFERENCES analysts (name), "
    "revoked INTEGER NOT NULL)",
)
#: the columns of ``events``, in the order rows are read and written
COLUMNS = "seq, time, kind, analyst, account, epsilon, request_id, body, prev, hash"


def refuse_missing(key, path: str, create: bool) -> None:
    """No database at ``path``: refused unless ``create``, and refused anyway when a witness head remembers it."""
    known = [h for h in witnesses_of(key, path) if h.count > 0]
    if known:
        raise LedgerIntegrityError(
            f"no ledger at path {path!r}, but the witness head in the key's folder records "
            f"{max(h.count for h in known)} events of a ledger there: it was deleted or moved. Restore it (with "
            "its .head file) from a backup; a new ledger would forget every account's spending")
    if not create:
        raise SessionError(f"no ledger at path {path!r}: a new ledger is made only on purpose "
                           "(blowfish-nb init, or create=True); if it was deleted, restore it from a backup")


def open_schema(conn, key, *, new: bool, path: str) -> str:
    """Create the tables of a new ledger (``new``), or check an existing one's format and key; return its id.

    The caller holds the writers' lock. A dropped table is never re-created: only a file that did not exist
    gets a schema.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "events" not in tables and new:
            ledger_id = secrets.token_hex(16)
            for statement in SCHEMA:
                conn.execute(statement)
            conn.executemany("INSERT INTO meta (name, value) VALUES (?, ?)",
                             [("format", FORMAT), ("ledger", ledger_id), ("key_check", key.check_value(ledger_id))])
            tables.add("meta")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    if "events" in tables and "meta" not in tables:
        raise SessionError(f"ledger {path!r} is of format 1 (an unkeyed chain, before blowfish_nb's keyed "
                           "ledger): it is not opened. Convert it once with blowfish-nb upgrade --config FILE "
                           "[--key KEYFILE] (or blowfish_nb.service.migrate.upgrade), which checks its chain "
                           "and head file first")
    if "meta" not in tables and os.path.exists(path + ".head"):
        raise LedgerIntegrityError(f"ledger {path!r} holds no events but its head file is there: its "
                                   "events were removed (or the database was copied without its -wal file)")
    if "meta" not in tables:
        raise SessionError(f"path {path!r} is not a ledger database (it has no events)")
    meta = dict(conn.execute("SELECT name, value FROM meta"))
    if meta.get("format") != FORMAT:
        raise SessionError(f"ledger {path!r} is of format {meta.get('format')!r}; this version reads {FORMAT!r}")
    ledger_id = meta.get("ledger")
    if not (isinstance(ledger_id, str) and len(ledger_id) == 32) or not hmac.compare_digest(
            str(meta.get("key_check")), key.check_value(ledger_id)):
        raise LedgerIntegrityError(f"ledger {path!r} was not made with this key ({key.source}): the wrong key "
                                   "file or $BLOWFISH_LEDGER_KEY, or its meta table was edited")
    return ledger_id


def append_event(conn, key, seq: int, prev: str, kind: str, *, analyst=None, account=None, epsilon=None,
                 request_id=None, body: dict) -> tuple:
    """Append event ``seq`` chained on ``prev``, hashed with ``key``; return its row (in :data:`COLUMNS` order)."""
    time = datetime.now(timezone.utc).isoformat(timespec="microseconds")
    text = canonical(body, "body")
    digest = key.event_hash(prev, event_fields(seq, time, kind, analyst, account, epsilon, request_id, text))
    row = (seq, time, kind, analyst, account, epsilon, request_id, text, prev, digest)
    conn.execute(f"INSERT INTO events ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
    return row
