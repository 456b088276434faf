"""Auditing a ledger: replaying its keyed chain into the state the events add up to, and checking the rest.

:class:`State` is the replay of the events — accounts, analysts, tokens and
request ids — and the only thing a :class:`~blowfish_nb.service.ledger.Ledger`
decides from: :func:`extend` applies events after the last one it holds,
recomputing each event's HMAC and checking the ledger's rules (no overspend,
no charge by a revoked or unknown analyst, no reused request id, ...).

The tables ``accounts``, ``analysts`` and ``tokens`` are derived from the
events for people reading the file with SQL; :func:`check_derived` compares
them with the state (the whole tables at start-up and in :meth:`verify`, the
rows a transaction touches while the ledger serves), so an edit of a derived
table is reported, never obeyed.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from contextlib import suppress
from fractions import Fraction

from ..exceptions import InvalidParameterError
from .chain import canonical

__all__ = ["State", "extend", "replay_all", "check_derived", "check_triggers", "check_head", "describe", "event_fields",
           "KINDS", "TOLERANCE", "NAME", "REQUEST_ID", "TRIGGERS"]

#: spending within this of the budget counts as exact (sums of floats)
TOLERANCE = 1e-12
#: the kinds of event, in the order a ledger usually meets them
KINDS = ("account", "budget", "analyst", "revoke", "charge", "failed")
NAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
#: the append-only triggers on events (name → SQL), as the schema creates them
TRIGGERS = {
    "events_no_update": "CREATE TRIGGER events_no_update BEFORE UPDATE ON events "
                        "BEGIN SELECT RAISE(ABORT, 'ledger events are append-only: UPDATE refused'); END",
    "events_no_delete": "CREATE TRIGGER events_no_delete BEFORE DELETE ON events "
                        "BEGIN SELECT RAISE(ABORT, 'ledger events are append-only: DELETE refused'); END",
}


class _Broken(Exception):
    """An event that breaks the ledger's rules (raised by State.apply, reported by extend)."""


class State:
    """The accounts, analysts, tokens and request ids the events add up to, through event ``count`` (hash ``last``).

    ``accounts``: name → [budget, spent (exact), seq that last set it, releases charged];
    ``analysts``: name → [account, revoked, last_seen, seq]; ``tokens``: SHA-256 → [analyst, revoked, seq];
    ``requests``: (analyst, request id) → seq of its charge.
    """

    def __init__(self, genesis: str):
        self.count, self.last = 0, genesis
        self.accounts: dict[str, list] = {}
        self.analysts: dict[str, list] = {}
        self.tokens: dict[str, list] = {}
        self.requests: dict[tuple[str, str], int] = {}

    def apply(self, seq, time, kind, analyst, account, epsilon, request_id, body) -> None:
        """Apply one event (its hash already checked); :class:`_Broken` when it breaks the ledger's rules."""
        try:
            body = json.loads(body)
        except (TypeError, ValueError):
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
            if not (isinstance(account, str) and NAME.fullmatch(account)) or account in self.accounts:
                raise _Broken(f"account {_short(account)} is not a new account name")
            self.accounts[account] = [float(budget), Fraction(0), seq, 0]
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
            if not (isinstance(analyst, str) and NAME.fullmatch(analyst)):
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
        if not (isinstance(request_id, str) and REQUEST_ID.fullmatch(request_id)):
            raise _Broken(f"its request id {_short(request_id)} is not valid")
        if (analyst, request_id) in self.requests:
            raise _Broken(f"request id {request_id} was charged before")
        text = body.get("response" if kind == "charge" else "message")
        if not isinstance(body.get("entry"), dict) or not isinstance(text, str):
            raise _Broken("its body is not an entry with a stored answer")
        budget, spent = self.accounts[account][:2]
        if not fits(budget, spent, epsilon):
            raise _Broken(f"it spends more than account {account} had left")
        self.requests[(analyst, request_id)] = seq
        self.accounts[account][1:] = [spent + Fraction(epsilon), seq, self.accounts[account][3] + 1]
        known[2], known[3] = time, seq

    def _revoke_tokens(self, analyst: str, seq: int) -> None:
        for token in self.tokens.values():
            if token[0] == analyst and not token[1]:
                token[1], token[2] = True, seq


def extend(state: State, rows, key, problems: list[str]) -> bool:
    """Check and apply ``rows`` (events after ``state.count``, in order); stop at the first bad one.

    Each row must be the next seq, chain on ``state.last``, carry the HMAC of its content and keep the rules.
    Returns False (with the finding in ``problems``) at the first that does not; ``state`` then holds the
    events before it.
    """
    for seq, time, kind, analyst, account, epsilon, request_id, body, stored_prev, stored in rows:
        expected = state.count + 1
        what = f"event {seq} ({describe(kind, analyst, account)})"
        if seq != expected:
            problems.append(f"event {expected} is missing: the events go from seq {expected - 1} to {seq} "
                            "(rows were deleted)" if isinstance(seq, int) and seq > expected else
                            f"{what} is numbered out of order: seq {expected} was due")
            return False
        if stored_prev != state.last:
            problems.append(f"{what} does not follow event {seq - 1}: its prev is not that event's hash "
                            "(an event was removed, replaced or forged)")
            return False
        try:
            computed = key.event_hash(state.last, event_fields(seq, time, kind, analyst, account, epsilon,
                                                              request_id, body))
        except InvalidParameterError:  # a field no writer stores (a BLOB, a NaN)
            computed = None
        if computed != stored:
            problems.append(f"{what} was altered or forged: its hash is not the keyed hash of its content "
                            f"under the ledger's key ({key.source})")
            return False
        try:
            state.apply(seq, time, kind, analyst, account, epsilon, request_id, body)
        except _Broken as why:
            problems.append(f"{what} breaks the ledger's rules: {why} (a forged event)")
            return False
        state.count, state.last = seq, stored
    return True


def replay_all(conn, key, ledger_id: str, heads, problems: list[str]) -> State:
    """Replay every event from genesis in one read transaction and check the rest: derived tables, triggers, heads.

    ``heads``: ``(what, where, Head or None)`` to check the database against. Findings go to ``problems``; the
    returned state holds the events before the first bad one.
    """
    state = State(key.genesis(ledger_id))
    conn.execute("BEGIN")
    try:
        ok = extend(state, conn.execute(f"SELECT {_COLUMNS} FROM events ORDER BY seq"), key, problems)
        if ok:
            check_derived(conn, state, problems)
        check_triggers(conn, problems)
        for what, where, head in heads:
            if ok and head is not None:
                check_head(conn, head, key, ledger_id, state.count, problems, what, where)
    except sqlite3.DatabaseError as error:
        problems.append(f"the database cannot be read as a ledger: {error}")
    finally:
        with suppress(sqlite3.Error):
            conn.execute("COMMIT")
    return state


def event_fields(seq, time, kind, analyst, account, epsilon, request_id, body) -> str:
    """The canonical JSON an event's hash covers (every field but prev and hash; ``body`` as stored text)."""
    return canonical({"seq": seq, "time": time, "kind": kind, "analyst": analyst, "account": account,
                      "epsilon": epsilon, "request_id": request_id, "body": body}, "event")


def check_derived(conn, state: State, problems: list[str], *, accounts=None, analysts=None,
                  tokens: bool = True) -> None:
    """The derived tables must hold exactly what the events add up to.

    ``accounts`` / ``analysts``: the names to compare (None: the whole table, and no row may be extra);
    ``tokens``: compare the whole tokens table. The first disagreement found is appended to ``problems``.
    """
    def spent(text):
        try:
            return Fraction(text)
        except (TypeError, ValueError):
            return text

    def rows(table, select, names, key):
        if names is None:
            return {r[0]: r[1:] for r in conn.execute(select)}
        names = [n for n in names if n is not None]
        marks = ", ".join("?" * len(names))
        return {r[0]: r[1:] for r in conn.execute(f"{select} WHERE {key} IN ({marks})", names)} if names else {}

    checks = (
        ("accounts", accounts, "account", ("budget", "spent"),
         lambda: {n: (b, spent(s)) for n, (b, s) in rows("accounts", "SELECT name, budget, spent FROM accounts",
                                                          accounts, "name").items()},
         {n: ((a[0], a[1]), a[2]) for n, a in state.accounts.items() if accounts is None or n in accounts}),
        ("analysts", analysts, "analyst", ("account", "revoked", "last_seen"),
         lambda: {n: (a, bool(r), t) for n, (a, r, t) in
                  rows("analysts", "SELECT name, account, revoked, last_seen FROM analysts", analysts, "name").items()},
         {n: ((a[0], a[1], a[2]), a[3]) for n, a in state.analysts.items() if analysts is None or n in analysts}),
    )
    if tokens:
        checks += (("tokens", None, "token sha256", ("analyst", "revoked"),
                    lambda: {h: (a, bool(r)) for h, (a, r) in
                             rows("tokens", "SELECT hash, analyst, revoked FROM tokens", None, "hash").items()},
                    {h: ((t[0], t[1]), t[2]) for h, t in state.tokens.items()}),)
    for table, names, key_name, fields, read, due in checks:
        if names is not None and not names:
            continue
        found = read()
        if len(found) == len(due) and all(found.get(k) == v for k, (v, _) in due.items()):
            continue  # the common case, without the ordered search for the first row wronged
        for key in sorted(due, key=lambda k: due[k][1]):  # in the events' order: the first event wronged is named
            value, seq = due[key]
            if key not in found:
                problems.append(f"the {table} table lacks the {key_name} {_short(key)} that {_made_by(conn, seq)} "
                                "made")
                return
            for field, have, want in zip(fields, found[key], value):
                if have != want:
                    problems.append(f"the {table} table disagrees with {_made_by(conn, seq)}: {key_name} "
                                    f"{_short(key)} has {field} {_shown(have)} in the table, {_shown(want)} by "
                                    "the events")
                    return
        extra = sorted(set(found) - set(due), key=str)
        if extra:
            problems.append(f"the {table} table has a row no event made ({key_name} {_short(extra[0])})")
            return


def check_triggers(conn, problems: list[str]) -> None:
    """The append-only triggers must be exactly the schema's."""
    found = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'"))
    for name, sql in TRIGGERS.items():
        if found.get(name) != sql:
            problems.append(f"the append-only trigger {name} on events was {'rewritten' if name in found else 'dropped'}")


def check_head(conn, head, key, ledger_id: str, count: int, problems: list[str], what: str, where: str) -> None:
    """The database must extend a signed head (it may be ahead: heads are written after the commit)."""
    if head.ledger != ledger_id:
        problems.append(f"the {what} {where!r} belongs to another ledger (id {head.ledger}, this one is {ledger_id})")
        return
    if not head.signed_by(key):
        problems.append(f"the {what} {where!r} is not signed with the ledger's key ({key.source}): it was edited")
        return
    if head.count == 0:
        return
    row = conn.execute("SELECT hash FROM events WHERE seq = ?", (head.count,)).fetchone()
    if row is None or count < head.count:
        problems.append(f"the {what} {where!r} records {head.count} events but the database holds {count}: the "
                        "last events were removed, or an older copy of the ledger was put back")
    elif row[0] != head.hash:
        problems.append(f"event {head.count} is not the one the {what} {where!r} recorded (its hash differs): "
                        "the history was rewritten")


def describe(kind, analyst, account) -> str:
    """How an event is named in messages ("charge by alice")."""
    who, where = _label(analyst), _label(account)
    return {"charge": f"charge by {who}", "failed": f"failed release by {who}", "analyst": f"analyst {who}",
            "revoke": f"revoke of {who}", "account": f"account {where}",
            "budget": f"budget of {where}"}.get(kind, f"kind {_short(kind)}")


def fits(budget: float, spent: Fraction, epsilon: float) -> bool:
    """Whether ε fits in budget − spent (exact arithmetic, 1e-12 tolerance)."""
    return Fraction(epsilon) <= Fraction(budget) - spent + Fraction(TOLERANCE)


def _made_by(conn, seq) -> str:
    return f"event {seq} ({describe(*(conn.execute(_WHO, (seq,)).fetchone() or (None, None, None)))})"


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _label(value) -> str:
    return value if isinstance(value, str) and NAME.fullmatch(value) else _short(value)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _shown(value) -> str:
    return repr(float(value) if isinstance(value, Fraction) else value)


_WHO = "SELECT kind, analyst, account FROM events WHERE seq = ?"
_COLUMNS = "seq, time, kind, analyst, account, epsilon, request_id, body, prev, hash"
