"""The ledger's key and signed heads (issue 27, item 3): history rewritten without the key, rollback, deletion.

The attacker here can write the ledger's folder but holds neither the key nor
the key's folder. What they can compute they compute with our own code and a
key of their own (``GUESS``): re-chained histories, forged events, re-signed
heads. Each attack was accepted by the unkeyed ledger of format 1.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest

from blowfish_nb.exceptions import InvalidParameterError, SessionError
from blowfish_nb.service.audit import TRIGGERS, event_fields
from blowfish_nb.service.chain import KEY_ENV, LedgerKey, load_key, new_key_file, write_head
from blowfish_nb.service.ledger import Ledger, LedgerIntegrityError

GUESS = LedgerKey(b"the attacker's own key, long enough to be accepted", "a guess", None)
RESPONSE = '{"answers": [1]}'


@pytest.fixture
def where(tmp_path):
    """(ledger path, key file path): the ledger in ``data/``, the key in ``keys/`` (the key not written yet)."""
    (tmp_path / "data").mkdir()
    (tmp_path / "keys").mkdir(mode=0o700)
    return tmp_path / "data" / "ledger.db", tmp_path / "keys" / "ledger.key"


def _populate(path, key, *, create=True) -> dict:
    """Account course (1.0) with alice and bob, bob revoked; alice charged 0.25 twice (events 1-6)."""
    with Ledger(path, key_file=key, create=create) as ledger:
        ledger.add_account("course", 1.0)
        tokens = {n: ledger.add_analyst(n, "course") for n in ("alice", "bob")}
        ledger.revoke("bob")
        for rid in ("r1", "r2"):
            ledger.charge("alice", rid, 0.25, {"rid": rid}, RESPONSE)
    return tokens


def _copy(path: Path, to: Path) -> None:
    """Copy the ledger's files (database, head) to the folder ``to`` (a backup, or an attacker's copy)."""
    to.mkdir(exist_ok=True)
    for name in (path.name, path.name + ".head"):
        shutil.copy(path.parent / name, to / name)


def _restore(backup: Path, path: Path) -> None:
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    for name in (path.name, path.name + ".head"):
        shutil.copy(backup / name, path.parent / name)


def _rows(path):
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT seq, time, kind, analyst, account, epsilon, request_id, body, prev, hash "
                            "FROM events ORDER BY seq").fetchall()


def _ledger_id(path) -> str:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT value FROM meta WHERE name = 'ledger'").fetchone()[0]


def _rechain(path, edit) -> None:
    """Rewrite the whole history with ``edit(row) -> row`` and re-chain it and its head with the attacker's key."""
    rows = [list(r) for r in _rows(path)]
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for name in TRIGGERS:
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("DELETE FROM events")
        prev = GUESS.genesis(_ledger_id(path))
        for row in rows:
            row = edit(row)
            row[8], row[9] = prev, GUESS.event_hash(prev, event_fields(*row[:8]))
            conn.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
            prev = row[9]
        conn.execute("UPDATE meta SET value = ? WHERE name = 'key_check'", (GUESS.check_value(_ledger_id(path)),))
        for sql in TRIGGERS.values():
            conn.execute(sql)
    finally:
        conn.close()
    write_head(str(path) + ".head", GUESS, _ledger_id(path), len(rows), prev, str(path), force=True)


def _append_forged(path, kind, **fields) -> None:
    """Append one event chained on the real last hash, hashed and signed with the attacker's key."""
    seq, prev = _rows(path)[-1][0] + 1, _rows(path)[-1][9]
    time = "2030-01-01T00:00:00.000000+00:00"
    body = json.dumps(fields.pop("body"), sort_keys=True, separators=(",", ":"))
    row = [seq, time, kind, fields.get("analyst"), fields.get("account"), None, None, body]
    digest = GUESS.event_hash(prev, event_fields(*row))
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (*row, prev, digest))
        if kind == "analyst":  # the derived rows too, so that only the chain can tell
            conn.execute("INSERT OR IGNORE INTO analysts (name, account, revoked) VALUES (?, ?, 0)",
                         (fields["analyst"], fields["account"]))
            conn.execute("UPDATE analysts SET revoked = 0 WHERE name = ?", (fields["analyst"],))
            conn.execute("UPDATE tokens SET revoked = 1 WHERE analyst = ?", (fields["analyst"],))
            conn.execute("INSERT INTO tokens VALUES (?, ?, 0)", (json.loads(body)["token_sha256"], fields["analyst"]))
        elif kind == "budget":
            conn.execute("UPDATE accounts SET budget = ? WHERE name = ?", (json.loads(body)["budget"], fields["account"]))
    finally:
        conn.close()
    write_head(str(path) + ".head", GUESS, _ledger_id(path), seq, digest, str(path), force=True)


# -- history rewritten without the key ---------------------------------------------------------------------------
def test_a_history_rechained_with_a_charge_lowered_is_refused(where):
    path, key = where
    _populate(path, key)

    def cheaper(row):
        if row[2] == "charge":
            row[5] = 0.001
        return row

    _rechain(path, cheaper)
    for anchor in (True, False):  # the chain alone refuses it, heads or not
        with pytest.raises(LedgerIntegrityError, match="not made with this key"):
            Ledger(path, key_file=key, anchor=anchor)


def test_a_history_rechained_keeping_the_key_check_is_refused_at_event_1(where):
    path, key = where
    _populate(path, key)
    check = sqlite3.connect(path).execute("SELECT value FROM meta WHERE name = 'key_check'").fetchone()[0]
    _rechain(path, lambda row: row)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE meta SET value = ? WHERE name = 'key_check'", (check,))
    conn.close()
    with pytest.raises(LedgerIntegrityError, match=r"event 1 \(account course\) does not follow event 0"):
        Ledger(path, key_file=key)


@pytest.mark.parametrize("kind, fields", [
    ("analyst", {"analyst": "mallory", "account": "course", "body": {"token_sha256": "ab" * 32}}),
    ("analyst", {"analyst": "alice", "account": "course", "body": {"token_sha256": "cd" * 32}}),  # a new token
    ("analyst", {"analyst": "bob", "account": "course", "body": {"token_sha256": "ef" * 32}}),  # bob reinstated
    ("budget", {"account": "course", "body": {"budget": 100.0}}),
], ids=["new-analyst", "new-token", "reinstated", "budget"])
def test_forged_events_are_refused_at_start_up_and_by_verify(where, kind, fields):
    path, key = where
    _populate(path, key)
    _append_forged(path, kind, **fields)
    with pytest.raises(LedgerIntegrityError, match=r"event 7 \(.*\) was altered or forged"):
        Ledger(path, key_file=key)
    with pytest.raises(LedgerIntegrityError, match=r"event 7 \(.*\) was altered or forged"):
        Ledger(path, key_file=key, anchor=False)


def test_a_forged_event_appended_while_open_is_refused_at_once(where):
    path, key = where
    _populate(path, key)
    ledger = Ledger(path, key_file=key)
    try:
        _append_forged(path, "budget", account="course", body={"budget": 100.0})
        with pytest.raises(LedgerIntegrityError, match="event 7 .* was altered or forged"):
            ledger.charge("alice", "r3", 0.75, {}, RESPONSE)
        with pytest.raises(LedgerIntegrityError, match="edited while open"):  # and everything after it
            ledger.balance("alice")
        with pytest.raises(LedgerIntegrityError):
            ledger.verify()
    finally:
        ledger.close()


def test_a_cut_tail_with_a_head_signed_by_another_key_is_refused(where):
    path, key = where
    _populate(path, key)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TRIGGER events_no_delete")
    conn.execute("DELETE FROM events WHERE seq = 6")
    conn.execute("UPDATE accounts SET spent = '0.25'")
    conn.execute(TRIGGERS["events_no_delete"])
    conn.close()
    seq, last = _rows(path)[-1][0], _rows(path)[-1][9]
    write_head(str(path) + ".head", GUESS, _ledger_id(path), seq, last, str(path), force=True)
    with pytest.raises(LedgerIntegrityError, match="is not signed with the ledger's key"):
        Ledger(path, key_file=key)


# -- rollback and deletion: the witness head in the key's folder ---------------------------------------------------
def test_an_older_genuine_copy_put_back_is_refused_by_the_witness(where, tmp_path):
    path, key = where
    _populate(path, key)
    _copy(path, tmp_path / "backup")  # the attacker's copy, spent 0.5
    with Ledger(path, key_file=key) as ledger:
        ledger.charge("alice", "r3", 0.5, {}, RESPONSE)  # now spent 1.0
    _restore(tmp_path / "backup", path)
    with pytest.raises(LedgerIntegrityError, match="witness head .* records 7 events but the database holds 6"):
        Ledger(path, key_file=key)


def test_a_cut_tail_with_an_older_genuine_head_is_refused_by_the_witness(where, tmp_path):
    path, key = where
    _populate(path, key)
    old_head = Path(str(path) + ".head").read_bytes()
    with Ledger(path, key_file=key) as ledger:
        ledger.charge("alice", "r3", 0.5, {}, RESPONSE)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TRIGGER events_no_delete")
    conn.execute("DELETE FROM events WHERE seq = 7")
    conn.execute("UPDATE accounts SET spent = '0.5'")
    conn.execute("UPDATE analysts SET last_seen = (SELECT time FROM events WHERE seq = 6) WHERE name = 'alice'")
    conn.execute(TRIGGERS["events_no_delete"])
    conn.close()
    Path(str(path) + ".head").write_bytes(old_head)  # genuine, signed, one release behind
    with pytest.raises(LedgerIntegrityError, match="witness head"):
        Ledger(path, key_file=key)


def test_an_old_copy_elsewhere_is_refused_by_the_witness(where, tmp_path):
    """The configuration pointed at an older copy in another folder: the witness follows the ledger's id."""
    path, key = where
    _populate(path, key)
    _copy(path, tmp_path / "elsewhere")
    with Ledger(path, key_file=key) as ledger:
        ledger.charge("alice", "r3", 0.5, {}, RESPONSE)
    with pytest.raises(LedgerIntegrityError, match="records 7 events but the database holds 6"):
        Ledger(tmp_path / "elsewhere" / "ledger.db", key_file=key)


def test_a_deleted_ledger_is_refused_even_with_create(where):
    path, key = where
    _populate(path, key)
    for suffix in ("", ".head", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    with pytest.raises(SessionError, match="no ledger at path"):
        Ledger(path, key_file=key)
    with pytest.raises(LedgerIntegrityError, match="witness head in the key's folder records 6 events"):
        Ledger(path, key_file=key, create=True)


def test_the_witness_is_written_in_the_keys_folder_and_signed(where):
    path, key = where
    _populate(path, key)
    witness = Path(f"{key}.{_ledger_id(path)}.head")
    text = witness.read_text()
    assert "count 00000000000000000006" in text and json.dumps(os.path.realpath(path)) in text
    assert stat.S_IMODE(witness.stat().st_mode) == 0o600
    assert text.splitlines()[:4] == Path(str(path) + ".head").read_text().splitlines()[:4]


# -- the key ------------------------------------------------------------------------------------------------------
def test_a_new_ledger_writes_a_private_key_file_outside_its_folder(where):
    path, key = where
    with Ledger(path, key_file=key, create=True) as ledger:
        assert ledger.key_created
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_text().strip()) == 64
    assert key.read_text().strip() not in b"".join(p.read_bytes() for p in path.parent.iterdir()).decode("latin-1")
    with Ledger(path, key_file=key) as ledger:
        assert not ledger.key_created
    with pytest.raises(InvalidParameterError, match="exists already"):
        new_key_file(key)


def test_a_key_file_inside_the_ledgers_folder_is_refused(where):
    path, _ = where
    inside = path.parent / "ledger.key"
    new_key_file(inside)
    with pytest.raises(InvalidParameterError, match="inside the ledger's folder"):
        Ledger(path, key_file=inside, create=True)
    (path.parent / "sub").mkdir()
    with pytest.raises(InvalidParameterError, match="inside the ledger's folder"):
        Ledger(path, key_file=path.parent / "sub" / "k", create=True)
    assert not path.exists() and not (path.parent / "sub" / "k").exists()


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o666])
def test_a_key_file_with_loose_permissions_is_refused(where, mode):
    path, key = where
    _populate(path, key)
    os.chmod(key, mode)
    with pytest.raises(InvalidParameterError, match=f"loose permissions {mode:#o}.*chmod 600"):
        Ledger(path, key_file=key)


@pytest.mark.parametrize("text, fragment", [("short", "at least 32"), ("x" * 40 + " y" * 5, "without spaces"),
                                             ("", "at least 32")])
def test_a_weak_key_is_refused(where, monkeypatch, text, fragment):
    path, key = where
    key.write_text(text)
    os.chmod(key, 0o600)
    with pytest.raises(InvalidParameterError, match=fragment):
        Ledger(path, key_file=key, create=True)
    monkeypatch.setenv(KEY_ENV, text)
    with pytest.raises(InvalidParameterError, match=fragment):
        Ledger(path, create=True)


def test_no_key_at_all_is_refused_before_anything_is_written(where, monkeypatch):
    path, _ = where
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(SessionError, match=r"no ledger key.*BLOWFISH_LEDGER_KEY"):
        Ledger(path, create=True)
    assert not path.exists()


def test_the_wrong_key_is_refused(where, tmp_path):
    path, key = where
    _populate(path, key)
    other = new_key_file(tmp_path / "keys" / "other.key")
    with pytest.raises(LedgerIntegrityError, match="not made with this key"):
        Ledger(path, key_file=other)
    with pytest.raises(LedgerIntegrityError, match="not made with this key"):
        Ledger(path)  # the tests' $BLOWFISH_LEDGER_KEY


def test_the_key_is_never_shown(where):
    path, key = where
    loaded = load_key(new_key_file(key), ledger=path)
    secret = key.read_text().strip()
    assert secret not in repr(loaded) and secret not in str(vars(loaded).get("source"))
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(loaded)


def test_the_stated_limit_a_rollback_with_the_key_in_the_environment_is_accepted(tmp_path):
    """README, 'What the ledger cannot see': with $BLOWFISH_LEDGER_KEY there is no witness, so an older genuine
    copy of the database and its head put back together opens. This test pins the limit the README states."""
    path = tmp_path / "ledger.db"
    _populate(path, None)
    _copy(path, tmp_path / "backup")
    with Ledger(path) as ledger:
        ledger.charge("alice", "r3", 0.5, {}, RESPONSE)
    _restore(tmp_path / "backup", path)
    with Ledger(path) as ledger:
        assert ledger.spent("alice") == 0.5  # the release of r3 is forgotten
