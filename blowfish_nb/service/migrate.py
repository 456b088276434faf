"""Converting a ledger of format 1 (an unkeyed SHA-256 chain) to the keyed format 2, on the curator's command.

A format-1 ledger is never opened as it is (:class:`~blowfish_nb.service.ledger.Ledger`
refuses it and names ``blowfish-nb upgrade``). :func:`upgrade` first checks it
the way format 1 could — its SHA-256 chain, its rules, its derived tables,
its triggers and its head file — and only then re-chains every event under
the key and signs the heads. What format 1 could not detect (a history
re-chained by someone who could write both files) it still cannot: compare
the ``old head`` it prints with a copy kept elsewhere, if there is one.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import sqlite3
from contextlib import suppress

from ..exceptions import SessionError
from .audit import TRIGGERS, State, check_derived, check_triggers, event_fields, extend
from .chain import LedgerIntegrityError, load_key, witness_path, write_head
from .schema import COLUMNS as _COLUMNS
from .schema import FORMAT, SCHEMA

__all__ = ["upgrade"]

_OLD_HEAD = re.compile(rb"blowfish_nb ledger head\ncount (\d{20})\nhash ([0-9a-f]{64})\n")


def upgrade(path, *, key_file=None) -> tuple[int, str, str]:
    """Check the format-1 ledger at ``path`` and re-chain it under the key; return ``(events, old head, new head)``.

    Stop every service using the ledger first. ``key_file`` is written when it does not exist (default: the
    key in ``$BLOWFISH_LEDGER_KEY``).

    Raises
    ------
    LedgerIntegrityError
        The format-1 chain, rules, derived tables, triggers or head file show an edit (nothing is changed).
    SessionError
        No file, or not a format-1 ledger (a format-2 ledger needs no upgrade).

    Examples
    --------
    >>> import os, shutil, tempfile
    >>> from blowfish_nb.service.ledger import Ledger
    >>> folder, keys = tempfile.mkdtemp(), tempfile.mkdtemp()
    >>> path, key = os.path.join(folder, "ledger.db"), os.path.join(keys, "ledger.key")
    >>> Ledger(path, key_file=key, create=True).close()
    >>> upgrade(path, key_file=key)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    blowfish_nb.exceptions.SessionError: ledger '...ledger.db' is not of format 1 (already keyed): nothing to upgrade
    >>> shutil.rmtree(folder); shutil.rmtree(keys)
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise SessionError(f"no ledger at path {path!r}")
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "events" not in tables or "meta" in tables:
            raise SessionError(f"ledger {path!r} is not of format 1 ({'already keyed' if 'meta' in tables else 'no events'}"
                               "): nothing to upgrade")
        key = load_key(key_file, ledger=path, create=True)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        old = _check_format_1(conn, path)
        ledger_id = secrets.token_hex(16)
        conn.execute("BEGIN IMMEDIATE")
        try:
            for name in ("events_no_update", "events_no_delete"):
                conn.execute(f"DROP TRIGGER {name}")
            conn.execute(SCHEMA[0])  # the meta table
            conn.executemany("INSERT INTO meta (name, value) VALUES (?, ?)",
                             [("format", FORMAT), ("ledger", ledger_id),
                              ("key_check", key.check_value(ledger_id))])
            prev = key.genesis(ledger_id)
            for row in conn.execute(f"SELECT {_COLUMNS} FROM events ORDER BY seq").fetchall():
                digest = key.event_hash(prev, event_fields(*row[:8]))
                conn.execute("UPDATE events SET prev = ?, hash = ? WHERE seq = ?", (prev, digest, row[0]))
                prev = digest
            for sql in TRIGGERS.values():
                conn.execute(sql)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        count = conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    finally:
        with suppress(sqlite3.Error):
            conn.close()
    for where in (path + ".head", witness_path(key, ledger_id)):
        if where is not None:
            write_head(where, key, ledger_id, count, prev, path, force=True)
    return count, old, prev


def _check_format_1(conn, path: str) -> str:
    """Everything format 1 could check; returns its last hash."""
    problems: list[str] = []
    state = State("0" * 64)
    conn.execute("BEGIN")
    try:
        ok = extend(state, conn.execute(f"SELECT {_COLUMNS} FROM events ORDER BY seq"), _Sha256(), problems)
        if ok:
            check_derived(conn, state, problems)
        check_triggers(conn, problems)
        try:
            with open(path + ".head", "rb") as file:
                match = _OLD_HEAD.fullmatch(file.read(4096))
        except FileNotFoundError:
            match = None
            problems.append(f"its head file {path + '.head'!r} is missing")
        if ok and match is None and not problems:
            problems.append(f"its head file {path + '.head'!r} is unreadable")
        if ok and match is not None:
            count, last = int(match.group(1)), match.group(2).decode("ascii")
            row = conn.execute("SELECT hash FROM events WHERE seq = ?", (count,)).fetchone() if count else ("0" * 64,)
            if row is None or row[0] != last:
                problems.append(f"it does not extend its head file (event {count}): events were removed or rewritten")
    finally:
        conn.execute("COMMIT")
    if problems:
        raise LedgerIntegrityError(f"ledger {path!r} (format 1) is not upgraded: " + "; also ".join(problems))
    return state.last


class _Sha256:
    """Format 1's chain: sha256(prev || canonical fields), no key."""

    source = "the unkeyed SHA-256 chain of format 1"

    def event_hash(self, prev: str, fields: str) -> str:
        return hashlib.sha256(str(prev).encode("utf-8", "replace") + fields.encode("ascii")).hexdigest()

