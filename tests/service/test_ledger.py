"""The analyst service's ledger: no overspending under concurrency, every edit of the file found, tokens kept hashed.

Issue 14: the ledger is a SQLite file of hash-chained, append-only events;
issue 27 keys the chain. The tampering tests edit the file the way an
attacker with write access would (sqlite3 on the file, triggers dropped
first) and recompute hashes with the documented keyed formula, written out
again here, not imported — with the tests' key: an insider who holds it, so
that the chain's structure and rules are what is tested. Attackers without
the key are in ``test_chain.py``; edits made while a ledger is open here too.
"""

import hashlib
import hmac
import json
import math
import os
import sqlite3
import threading
from collections import Counter
from fractions import Fraction

import pytest

from blowfish_nb.exceptions import BudgetExceededError, InvalidParameterError, SessionError
from blowfish_nb.service.ledger import AuthError, Ledger, LedgerIntegrityError

RESPONSE = '{"answers": [1, 2, 3]}'


@pytest.fixture
def path(tmp_path):
    return tmp_path / "ledger.db"


def _entry(i, epsilon):
    return {"query": "histogram", "columns": "age", "epsilon": epsilon, "i": i}


def _populated(path):
    """Accounts course (1.0, alice + bob) and lab (2.0, carol); four charges (events 6-9)."""
    with Ledger(path, create=True) as ledger:
        ledger.add_account("course", 1.0)
        ledger.add_account("lab", 2.0)
        tokens = {name: ledger.add_analyst(name, account)
                  for name, account in [("alice", "course"), ("bob", "course"), ("carol", "lab")]}
        for analyst, rid, eps in [("alice", "r1", 0.1), ("bob", "r2", 0.2), ("carol", "r3", 0.5), ("alice", "r4", 0.05)]:
            ledger.charge(analyst, rid, eps, _entry(rid, eps), f'{{"answer": "{rid}"}}')
        return tokens


def _rows(path):
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT seq, time, kind, analyst, account, epsilon, request_id, body, prev, hash "
                            "FROM events ORDER BY seq").fetchall()


def _key() -> bytes:
    return os.environ["BLOWFISH_LEDGER_KEY"].strip().encode()


def _mac(*parts: bytes) -> str:
    return hmac.new(_key(), b"\x00".join(parts), hashlib.sha256).hexdigest()


def _hash(prev, seq, time, kind, analyst, account, epsilon, request_id, body):
    """The documented formula: HMAC-SHA256(key, "event" 0 prev 0 canonical JSON of every other field)."""
    fields = {"seq": seq, "time": time, "kind": kind, "analyst": analyst, "account": account, "epsilon": epsilon,
              "request_id": request_id, "body": body}
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return _mac(b"event", prev.encode(), canonical.encode())


def _genesis(path):
    """The prev of event 1: HMAC-SHA256(key, "genesis" 0 ledger id)."""
    with sqlite3.connect(path) as conn:
        ledger_id = conn.execute("SELECT value FROM meta WHERE name = 'ledger'").fetchone()[0]
    return _mac(b"genesis", ledger_id.encode())


def _tamper(path, *statements):
    """Edit the file as an attacker would: drop the append-only triggers, then run the statements."""
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER IF EXISTS events_no_update")
    conn.execute("DROP TRIGGER IF EXISTS events_no_delete")
    for sql, *args in statements:
        conn.execute(sql, *args)
    conn.commit()
    conn.close()


def _refused(path, *fragments, anchor=True):
    """Opening must raise LedgerIntegrityError whose message holds every fragment; return the message."""
    with pytest.raises(LedgerIntegrityError) as caught:
        Ledger(path, anchor=anchor)
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


# -- concurrency --------------------------------------------------------------------------------
def test_twenty_threads_spend_exactly_what_a_sequential_run_allows(path):
    # (budget, ε) per account: 0.3 / 0.1 is the float case the 1e-12 tolerance is for (0.1+0.1+0.1 > 0.3)
    plan = {"a": (1.0, 0.125), "b": (0.3, 0.1), "c": (2.5, 0.1), "d": (1.7, 0.05)}
    expected = {acct: math.floor(budget / eps + 1e-9) for acct, (budget, eps) in plan.items()}
    assert expected == {"a": 8, "b": 3, "c": 25, "d": 34}
    members = {f"an{i}": "abcd"[i % 4] for i in range(20)}  # five analysts share each account
    ledger = Ledger(path, create=True)
    for acct, (budget, _) in plan.items():
        ledger.add_account(acct, budget)
    for name, acct in members.items():
        ledger.add_analyst(name, acct)
    setup = ledger.head()[0]
    charged, refused, errors = Counter(), Counter(), []
    start, tally = threading.Barrier(20), threading.Lock()

    def burst(name):
        acct = members[name]
        start.wait()
        for i in range(50):
            try:
                _, new = ledger.charge(name, f"q{i}", plan[acct][1], _entry(i, plan[acct][1]), RESPONSE)
                assert new
                with tally:
                    charged[acct] += 1
            except BudgetExceededError:
                with tally:
                    refused[acct] += 1
            except Exception as error:  # noqa: BLE001 (reported below, with its thread)
                errors.append(error)

    threads = [threading.Thread(target=burst, args=(name,)) for name in members]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert dict(charged) == expected
    assert {a: charged[a] + refused[a] for a in plan} == {a: 250 for a in plan}
    for acct, (budget, eps) in plan.items():
        analyst = next(n for n, a in members.items() if a == acct)
        assert ledger.spent(analyst) == math.fsum([eps] * expected[acct]) <= budget + 1e-12
        assert len(ledger.entries(analyst)) == expected[acct]
    # every refusal wrote nothing: the events are the set-up plus exactly one per charge
    assert ledger.head()[0] == setup + sum(expected.values())
    assert ledger.verify() == ledger.head()
    ledger.close()

    # a sequential run on a fresh file allows the same counts
    sequential = Ledger(path.with_name("sequential.db"), create=True)
    for acct, (budget, eps) in plan.items():
        sequential.add_account(acct, budget)
        sequential.add_analyst(f"s{acct}", acct)
        count = 0
        for i in range(60):
            try:
                sequential.charge(f"s{acct}", f"q{i}", eps, {}, RESPONSE)
                count += 1
            except BudgetExceededError:
                pass
        assert count == expected[acct]
    sequential.close()


def test_concurrent_retries_of_one_request_charge_once(path):
    ledger = Ledger(path, create=True)
    ledger.add_account("course", 1.0)
    ledger.add_analyst("alice", "course")
    results, start = [], threading.Barrier(10)

    def retry(i):
        start.wait()
        results.append(ledger.charge("alice", "same", 0.3, _entry(i, 0.3), f"answer {i}"))

    threads = [threading.Thread(target=retry, args=(i,)) for i in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(new for _, new in results) == 1
    assert len({text for text, _ in results}) == 1  # every retry got the answer the first one stored
    assert ledger.spent("alice") == 0.3
    ledger.close()


# -- charging --------------------------------------------------------------------------------
def test_a_retry_returns_the_stored_answer_and_charges_once_even_after_a_restart(path):
    ledger = Ledger(path, create=True)
    ledger.add_account("course", 0.5)
    ledger.add_analyst("alice", "course")
    ledger.add_analyst("bob", "course")
    assert ledger.charge("alice", "r-1", 0.5, _entry(1, 0.5), RESPONSE) == (RESPONSE, True)
    head = ledger.head()
    # the budget is spent now, yet the retry of the committed request gets its answers back
    assert ledger.charge("alice", "r-1", 0.5, _entry(1, 0.5), "another answer") == (RESPONSE, False)
    assert ledger.head() == head and ledger.spent("alice") == 0.5
    with pytest.raises(BudgetExceededError):  # request ids are per analyst: bob's r-1 is a new request
        ledger.charge("bob", "r-1", 0.5, _entry(1, 0.5), RESPONSE)
    assert ledger.stored("alice", "r-1") == RESPONSE and ledger.stored("bob", "r-1") is None
    ledger.close()
    with Ledger(path) as again:
        assert again.charge("alice", "r-1", 0.5, _entry(1, 0.5), "after restart") == (RESPONSE, False)
        assert again.head() == head


def test_a_refused_charge_writes_nothing_and_says_what_was_asked(path):
    ledger = Ledger(path, create=True)
    ledger.add_account("course", 1.0)
    ledger.add_analyst("alice", "course")
    ledger.charge("alice", "r1", 0.8, {}, RESPONSE)
    head = ledger.head()
    with pytest.raises(BudgetExceededError) as caught:
        ledger.charge("alice", "r2", 0.3, {}, RESPONSE)
    message = str(caught.value)
    assert "epsilon=0.3" in message and "0.2" in message and "of its budget 1" in message
    assert "nothing was charged" in message
    assert ledger.head() == head and ledger.stored("alice", "r2") is None
    assert ledger.remaining("alice") == pytest.approx(0.2, abs=1e-15)
    ledger.close()


def test_a_failed_release_is_charged_and_its_message_replayed(path):
    ledger = Ledger(path, create=True)
    ledger.add_account("course", 1.0)
    ledger.add_analyst("alice", "course")
    failed = {"query": "histogram", "mechanism": "dawa — failed after reading the rows; charged, nothing released"}
    assert ledger.charge_failed("alice", "r1", 0.4, failed, "the release failed") == ("the release failed", True)
    assert ledger.charge("alice", "r1", 0.4, {}, RESPONSE) == ("the release failed", False)
    assert ledger.spent("alice") == 0.4
    outcome = ledger.outcome("alice", "r1")
    assert outcome["kind"] == "failed" and outcome["entry"] == failed and outcome["epsilon"] == 0.4
    ledger.close()


def test_entries_are_the_whole_accounts_in_order_with_analyst_and_time(path):
    _populated(path)
    with Ledger(path) as ledger:
        course = ledger.entries("bob")
        assert [(e["analyst"], e["i"]) for e in course] == [("alice", "r1"), ("bob", "r2"), ("alice", "r4")]
        assert course == ledger.entries("alice")
        assert [e["i"] for e in ledger.entries("carol")] == ["r3"]
        times = [e["time"] for e in course]
        assert times == sorted(times)
        assert ledger.spent("alice") == math.fsum([0.1, 0.2, 0.05]) and ledger.budget("alice") == 1.0


def test_budgets_change_but_never_below_what_is_spent(path):
    ledger = Ledger(path, create=True)
    ledger.add_account("course", 1.0)
    ledger.add_analyst("alice", "course")
    ledger.charge("alice", "r1", 0.6, {}, RESPONSE)
    with pytest.raises(InvalidParameterError, match=r"below what it has spent \(0.6\), got 0.5"):
        ledger.set_budget("course", 0.5)
    with pytest.raises(BudgetExceededError):
        ledger.charge("alice", "r2", 0.6, {}, RESPONSE)
    ledger.set_budget("course", 1.2)
    assert ledger.charge("alice", "r2", 0.6, {}, RESPONSE)[1]
    assert ledger.accounts() == [{"account": "course", "budget": 1.2, "spent": 1.2, "remaining": 0.0,
                                  "analysts": ["alice"]}]
    ledger.close()


@pytest.mark.parametrize("call, fragment", [
    (lambda l: l.charge("alice", "r", 0, {}, ""), "epsilon must be a positive finite number, got 0"),
    (lambda l: l.charge("alice", "r", -0.1, {}, ""), "got -0.1"),
    (lambda l: l.charge("alice", "r", float("nan"), {}, ""), "got nan"),
    (lambda l: l.charge("alice", "r", float("inf"), {}, ""), "got inf"),
    (lambda l: l.charge("alice", "r", True, {}, ""), "got True"),
    (lambda l: l.charge("alice", "r", "0.1", {}, ""), "got '0.1'"),
    (lambda l: l.charge("alice", "", 0.1, {}, ""), "request_id must be"),
    (lambda l: l.charge("alice", "a" * 65, 0.1, {}, ""), "request_id must be"),
    (lambda l: l.charge("alice", "r 1", 0.1, {}, ""), "got 'r 1'"),
    (lambda l: l.charge("alice", "r/../1", 0.1, {}, ""), "request_id must be"),
    (lambda l: l.charge("alice", 7, 0.1, {}, ""), "got 7"),
    (lambda l: l.charge("alice", "r", 0.1, [], ""), "entry must be a dict"),
    (lambda l: l.charge("alice", "r", 0.1, {"x": float("nan")}, ""), "entry must hold plain JSON"),
    (lambda l: l.charge("alice", "r", 0.1, {"x": object()}, ""), "entry must hold plain JSON"),
    (lambda l: l.charge("alice", "r", 0.1, {}, b"bytes"), "response must be a str"),
    (lambda l: l.add_account("", 1.0), "account must be 1 to 64"),
    (lambda l: l.add_account("a" * 65, 1.0), "account must be 1 to 64"),
    (lambda l: l.add_account("bad name", 1.0), "got 'bad name'"),
    (lambda l: l.add_account("new", 0), "budget must be a positive finite number, got 0"),
    (lambda l: l.add_account("course", 1.0), "account 'course' exists already"),
    (lambda l: l.add_analyst("alice", "course"), "analyst 'alice' exists already"),
    (lambda l: l.add_analyst("dan", "nowhere"), "account must name an existing account, got 'nowhere'"),
    (lambda l: l.set_budget("nowhere", 1.0), "got 'nowhere'"),
    (lambda l: l.revoke("nobody"), "analyst must name an existing analyst, got 'nobody'"),
    (lambda l: l.remaining("nobody"), "got 'nobody'"),
])
def test_bad_input_is_refused_by_name_and_writes_nothing(path, call, fragment):
    ledger = Ledger(path, create=True)
    ledger.add_account("course", 1.0)
    ledger.add_analyst("alice", "course")
    head = ledger.head()
    with pytest.raises(InvalidParameterError) as caught:
        call(ledger)
    assert fragment in str(caught.value)
    assert ledger.head() == head
    ledger.close()


# -- tokens -------------------------------------------------------------------------------------
def test_tokens_are_stored_hashed_only(path):
    tokens = _populated(path)
    with Ledger(path) as ledger:
        rotated = ledger.rotate("bob")
    files = sorted(path.parent.glob(path.name + "*"))
    assert {f.name for f in files} >= {"ledger.db", "ledger.db.head"}
    content = b"".join(f.read_bytes() for f in files)
    for token in [*tokens.values(), rotated]:
        assert len(token) >= 43
        assert token.encode() not in content
        assert hashlib.sha256(token.encode()).hexdigest().encode() in content  # what is kept instead


def test_wrong_missing_and_revoked_tokens_get_401_and_403(path):
    tokens = _populated(path)
    ledger = Ledger(path)
    assert {ledger.authenticate(t) for t in tokens.values()} == {"alice", "bob", "carol"}
    forged = tokens["alice"][:-1] + ("A" if tokens["alice"][-1] != "A" else "B")
    for token, status in [(forged, 401), ("", 401), (None, 401), (42, 401), ("\udcff", 401)]:
        with pytest.raises(AuthError) as caught:
            ledger.authenticate(token)
        assert caught.value.status == status
        assert forged not in str(caught.value)
    ledger.revoke("bob")
    ledger.revoke("bob")  # a no-op
    with pytest.raises(AuthError) as caught:
        ledger.authenticate(tokens["bob"])
    assert caught.value.status == 403 and tokens["bob"] not in str(caught.value)
    head = ledger.head()
    with pytest.raises(AuthError) as caught:
        ledger.charge("bob", "r9", 0.1, {}, RESPONSE)
    assert caught.value.status == 403 and ledger.head() == head
    with pytest.raises(AuthError) as caught:
        ledger.charge("nobody", "r9", 0.1, {}, RESPONSE)
    assert caught.value.status == 401
    assert [a["revoked"] for a in ledger.analysts()] == [False, True, False]
    ledger.close()


def test_rotate_revokes_the_old_token_and_reinstates(path):
    tokens = _populated(path)
    ledger = Ledger(path)
    new = ledger.rotate("alice")
    assert new != tokens["alice"] and ledger.authenticate(new) == "alice"
    with pytest.raises(AuthError) as caught:
        ledger.authenticate(tokens["alice"])
    assert caught.value.status == 403
    ledger.revoke("carol")
    again = ledger.rotate("carol")
    assert ledger.authenticate(again) == "carol"
    assert ledger.charge("carol", "r5", 0.1, {}, RESPONSE)[1]
    ledger.close()


def test_authentication_compares_every_digest_in_constant_time(path, monkeypatch):
    tokens = _populated(path)
    ledger = Ledger(path)
    calls = []
    real = hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    assert ledger.authenticate(tokens["alice"]) == "alice"
    digest = hashlib.sha256(tokens["alice"].encode()).hexdigest().encode()
    stored = {hashlib.sha256(t.encode()).hexdigest().encode() for t in tokens.values()}
    assert {a for a, _ in calls} == stored and {b for _, b in calls} == {digest}  # no early exit
    ledger.close()


# -- restart -----------------------------------------------------------------------------------
def test_a_restart_keeps_budgets_spending_and_revocations(path):
    tokens = _populated(path)
    with Ledger(path) as ledger:
        ledger.set_budget("lab", 3.0)
        ledger.revoke("bob")
        before = (ledger.accounts(), ledger.analysts(), ledger.entries("alice"), ledger.head())
    with Ledger(path, create=False) as ledger:
        assert (ledger.accounts(), ledger.analysts(), ledger.entries("alice"), ledger.head()) == before
        assert ledger.authenticate(tokens["alice"]) == "alice"
        with pytest.raises(AuthError) as caught:
            ledger.authenticate(tokens["bob"])
        assert caught.value.status == 403
        assert before[0][1] == {"account": "lab", "budget": 3.0, "spent": 0.5, "remaining": 2.5,
                                "analysts": ["carol"]}
        assert before[1][0]["last_seen"] == before[2][-1]["time"]


def test_missing_or_foreign_files_are_refused(tmp_path):
    with pytest.raises(SessionError, match="no ledger at path"):
        Ledger(tmp_path / "absent.db", create=False)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database" * 100)
    with pytest.raises(SessionError, match="not a ledger database"):
        Ledger(junk)


# -- tampering -------------------------------------------------------------------------------
def test_the_chain_is_the_documented_formula(path):
    _populated(path)
    rows = _rows(path)
    assert [r[0] for r in rows] == list(range(1, 10))
    prev = _genesis(path)
    for seq, time, kind, analyst, account, epsilon, request_id, body, stored_prev, stored in rows:
        assert stored_prev == prev
        assert stored == _hash(prev, seq, time, kind, analyst, account, epsilon, request_id, body)
        prev = stored
    with Ledger(path) as ledger:
        assert ledger.head() == ledger.verify() == (9, prev)


def test_triggers_refuse_update_and_delete(path):
    _populated(path)
    conn = sqlite3.connect(path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only: UPDATE refused"):
        conn.execute("UPDATE events SET epsilon = 0.001 WHERE seq = 6")
    with pytest.raises(sqlite3.DatabaseError, match="append-only: DELETE refused"):
        conn.execute("DELETE FROM events WHERE seq = 9")
    conn.close()
    assert len(_rows(path)) == 9


def _forged_charge(path, seq, prev, epsilon=0.01, analyst="alice", account="course", request_id="forged"):
    body = json.dumps({"entry": {}, "response": "forged"}, sort_keys=True, separators=(",", ":"))
    time = "2030-01-01T00:00:00.000000+00:00"
    digest = _hash(prev, seq, time, "charge", analyst, account, epsilon, request_id, body)
    return ("INSERT INTO events VALUES (?, ?, 'charge', ?, ?, ?, ?, ?, ?, ?)",
            (seq, time, analyst, account, epsilon, request_id, body, prev, digest))


@pytest.mark.parametrize("attack, fragments", [
    ("an epsilon lowered", ["event 6 (charge by alice) was altered"]),
    ("a middle event deleted", ["event 7 is missing"]),
    ("a middle event replaced with a recomputed hash", ["event 8 (charge by carol) does not follow event 7"]),
    ("a token hash swapped in its event", ["event 4 (analyst bob) was altered"]),
    ("a token hash swapped in the tokens table", ["tokens table", "event 4 (analyst bob)"]),
    ("spending erased in the accounts table", ["accounts table disagrees with event 9 (charge by alice)", "spent"]),
    ("a revocation erased in the analysts table", ["analysts table", "revoked"]),
    ("a forged event with a recomputed hash but the wrong prev", ["event 10 (charge by alice) does not follow"]),
    ("a forged event chained correctly but over budget", ["event 10 (charge by alice) breaks the ledger's rules",
                                                          "more than account course had left"]),
    ("the last event deleted", ["head file", "records 9 events but the database holds 8"]),
    ("the triggers dropped", ["trigger events_no_update on events was dropped"]),
    ("a trigger rewritten to do nothing", ["trigger events_no_delete on events was rewritten"]),
])
def test_tampering_is_found_at_start_up(path, attack, fragments):
    tokens = _populated(path)
    with Ledger(path) as ledger:
        if "revocation" in attack:
            ledger.revoke("bob")
    rows = {r[0]: r for r in _rows(path)}
    last = max(rows)
    attacker = hashlib.sha256(b"the attacker's token").hexdigest()
    statements = {
        "an epsilon lowered": [("UPDATE events SET epsilon = 0.001 WHERE seq = 6",)],
        "a middle event deleted": [("DELETE FROM events WHERE seq = 7",)],
        "a middle event replaced with a recomputed hash": [
            ("DELETE FROM events WHERE seq = 7",), _forged_charge(path, 7, rows[6][9], analyst="bob")],
        "a token hash swapped in its event": [
            ("UPDATE events SET body = ? WHERE seq = 4", (json.dumps({"token_sha256": attacker}),))],
        "a token hash swapped in the tokens table": [
            ("UPDATE tokens SET hash = ? WHERE analyst = 'bob'", (attacker,))],
        "spending erased in the accounts table": [("UPDATE accounts SET spent = '0' WHERE name = 'course'",)],
        "a revocation erased in the analysts table": [("UPDATE analysts SET revoked = 0 WHERE name = 'bob'",)],
        "a forged event with a recomputed hash but the wrong prev": [_forged_charge(path, last + 1, "ab" * 32)],
        "a forged event chained correctly but over budget": [_forged_charge(path, last + 1, rows[last][9], 5.0)],
        "the last event deleted": [(f"DELETE FROM events WHERE seq = {last}",)],
        "the triggers dropped": [],
        "a trigger rewritten to do nothing": [
            ("CREATE TRIGGER events_no_delete BEFORE DELETE ON events BEGIN SELECT 1; END",)],
    }[attack]
    _tamper(path, *statements)
    message = _refused(path, *fragments)
    assert all(t not in message for t in tokens.values())


def test_a_removed_last_event_is_caught_by_the_head_file_only(path):
    """With the derived tables mended too, only the head file sees a removed last event (documented limit)."""
    _populated(path)
    _tamper(path, ("DELETE FROM events WHERE seq = 9",),
            ("UPDATE accounts SET spent = ? WHERE name = 'course'", (str(Fraction(0.1) + Fraction(0.2)),)),
            ("UPDATE analysts SET last_seen = (SELECT time FROM events WHERE seq = 6) WHERE name = 'alice'",),
            ("CREATE TRIGGER events_no_update BEFORE UPDATE ON events "
             "BEGIN SELECT RAISE(ABORT, 'ledger events are append-only: UPDATE refused'); END",),
            ("CREATE TRIGGER events_no_delete BEFORE DELETE ON events "
             "BEGIN SELECT RAISE(ABORT, 'ledger events are append-only: DELETE refused'); END",))
    message = _refused(path, "records 9 events but the database holds 8")
    assert "table" not in message and "trigger" not in message
    with Ledger(path, anchor=False) as ledger:  # the chain alone cannot tell
        assert ledger.head()[0] == 8


def test_a_deleted_head_file_or_database_is_refused(path):
    _populated(path)
    head = path.with_name(path.name + ".head")
    saved = head.read_bytes()
    head.unlink()
    _refused(path, "head file", "is missing but the ledger holds 9 events")
    with Ledger(path, anchor=False) as ledger:
        assert ledger.write_head() == ledger.head()
    assert head.read_bytes() == saved
    Ledger(path).close()
    head.write_bytes(saved.replace(b"count 0", b"count x"))
    _refused(path, "head file", "unreadable")
    head.write_bytes(saved)
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    _refused(path, "no ledger at path", "its head file is there")
    with pytest.raises(LedgerIntegrityError, match="its head file is there"):
        Ledger(path, create=True)  # not even on purpose: the head file says there was one


def test_verify_finds_an_edit_made_while_the_ledger_is_open(path):
    _populated(path)
    ledger = Ledger(path)
    assert ledger.verify()[0] == 9
    _tamper(path, ("UPDATE events SET analyst = 'bob' WHERE seq = 9",))
    with pytest.raises(LedgerIntegrityError, match=r"event 9 \(charge by bob\) was altered"):
        ledger.verify()
    ledger.close()


# -- edits while the ledger is open (issue 27, item 2: each was obeyed at once before) --------------------------------
def _edit_open(path, sql, params=()):
    """An edit by another process while the ledger is open (no trigger guards the derived tables)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(sql, params)
    finally:
        conn.close()


@pytest.mark.parametrize("sql", ["UPDATE accounts SET budget = 100.0 WHERE name = 'course'",
                                 "UPDATE accounts SET spent = '0' WHERE name = 'course'"], ids=["budget", "spent"])
def test_an_account_edited_while_open_cannot_overspend(path, sql):
    ledger = Ledger(path, create=True)
    ledger.add_account("course", 0.5)
    ledger.add_analyst("alice", "course")
    assert ledger.charge("alice", "r0", 0.5, {}, RESPONSE)[1]
    head = ledger.head()
    _edit_open(path, sql)
    charged = 0
    for i in range(1, 11):  # before: 10 more releases of 0.5 on a budget of 0.5
        with pytest.raises(LedgerIntegrityError, match="accounts table disagrees with event"):
            charged += ledger.charge("alice", f"r{i}", 0.5, {}, RESPONSE)[1]
    assert charged == 0
    ledger.close()
    assert _rows(path)[-1][0] == head[0]  # nothing was written
    with pytest.raises(LedgerIntegrityError, match="accounts table disagrees"):  # and a restart refuses it too
        Ledger(path)


def test_a_token_row_inserted_while_open_opens_nothing(path):
    tokens = _populated(path)
    ledger = Ledger(path)
    assert ledger.authenticate(tokens["alice"]) == "alice"
    minted = "a token the attacker made up, 43 characters long"
    _edit_open(path, "INSERT INTO tokens (hash, analyst, revoked) VALUES (?, 'alice', 0)",
               (hashlib.sha256(minted.encode()).hexdigest(),))
    with pytest.raises(LedgerIntegrityError, match="tokens table has a row no event made"):
        ledger.authenticate(minted)
    with pytest.raises(LedgerIntegrityError):  # every later call, until a verified restart
        ledger.authenticate(tokens["alice"])
    ledger.close()


@pytest.mark.parametrize("sql, table", [("UPDATE tokens SET revoked = 0 WHERE analyst = 'bob'", "tokens"),
                                        ("UPDATE analysts SET revoked = 0 WHERE name = 'bob'", "analysts")],
                         ids=["tokens", "analysts"])
def test_a_revocation_undone_while_open_is_refused(path, sql, table):
    tokens = _populated(path)
    ledger = Ledger(path)
    ledger.revoke("bob")
    head = ledger.head()
    _edit_open(path, sql)
    with pytest.raises((LedgerIntegrityError, AuthError)) as caught:
        ledger.authenticate(tokens["bob"])
    assert isinstance(caught.value, LedgerIntegrityError) and f"{table} table" in str(caught.value)
    with pytest.raises((LedgerIntegrityError, AuthError)):
        ledger.charge("bob", "r9", 0.1, {}, RESPONSE)
    assert _rows(path)[-1][0] == head[0]
    ledger.close()


def test_the_last_event_removed_while_open_is_refused_at_once(path):
    _populated(path)
    ledger = Ledger(path)
    assert ledger.spent("alice") == pytest.approx(0.35)
    _tamper(path, ("DELETE FROM events WHERE seq = 9",))
    with pytest.raises(LedgerIntegrityError, match="event 9 was removed"):
        ledger.spent("alice")
    ledger.close()


def test_a_second_ledger_object_sees_the_firsts_writes(path):
    """Each object replays the events the other committed (two processes on one file work the same way)."""
    tokens = _populated(path)
    first, second = Ledger(path), Ledger(path)
    token = first.add_analyst("dan", "lab")
    first.revoke("alice")
    assert second.authenticate(token) == "dan"
    with pytest.raises(AuthError) as caught:
        second.authenticate(tokens["alice"])
    assert caught.value.status == 403
    second.charge("dan", "d1", 1.5, {}, RESPONSE)
    with pytest.raises(BudgetExceededError):
        first.charge("carol", "c9", 0.1, {}, RESPONSE)  # lab: 0.5 + 1.5 of 2.0 spent by the second object
    assert first.verify() == second.head()
    first.close()
    second.close()
